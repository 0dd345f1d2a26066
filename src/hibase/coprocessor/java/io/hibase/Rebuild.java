// Server-side builds (REINDEX requests: entries rewritten from rows as stored, under their
// locks), the drain a rebuild waits on, and the version bump when index sets change.
package io.hibase;

import static io.hibase.RowState.*;
import static io.hibase.Specs.*;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Table;

abstract class Rebuild extends BatchUpkeep {

  /** An entry a build request wants: in index table idx, key = (prefix +) value key + row,
   *  written by put. */
  static final class Wanted {
    final TableName idx;
    final byte[] key, valueKey;
    final Put put;

    Wanted(TableName idx, byte[] key, byte[] valueKey, Put put) {
      this.idx = idx;
      this.key = key;
      this.valueKey = valueKey;
      this.put = put;
    }
  }

  /** A build's requests (REINDEX), under the rows' locks: each row as stored gets its entry,
   *  verified, and its count unless the entry exists (a write since the index was made wrote
   *  it and took its count; an unverified one is written verified). The counts begin before
   *  the entries and are settled after them, as a write's: a server that dies in between
   *  leaves them pending for the next incarnation's recovery, and a recovery settling a value
   *  never counts an entry whose count has not begun. */
  void rebuild(Catalog cat, Map<ByteBuffer, List<Spec>> requests) throws IOException {
    long ts = stamp(1);
    List<Wanted> wanted = new ArrayList<>();
    for (Map.Entry<ByteBuffer, List<Spec>> e : requests.entrySet()) {
      byte[] row = e.getKey().array();
      State st = read(row, e.getValue(), false);
      for (Spec s : e.getValue()) {
        if (s.text) {  // an entry per token
          for (ByteBuffer tk : Tokens.keys(s, st)) {
            byte[] k = cat(tk.array(), cat.user(row));  // user rowkeys (Salt)
            wanted.add(new Wanted(cat.kv("__idx__"), k, tk.array(), new Put(k)
                .addColumn(V, V, ts, cat(new byte[] {VERIFIED}, HibaseCodec.packList(
                    java.util.Collections.emptyList())))));
          }
          continue;
        }
        byte[] key = valueKey(s, st, row);
        if (key == null) continue;
        byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
        byte[] k = cat(prefix, key, cat.user(row));  // entries carry user rowkeys (Salt)
        wanted.add(new Wanted(cat.kv(s.local ? "__lidx__" : "__idx__"), k, cat(prefix, key),
            new Put(k).addColumn(V, V, ts,
                cat(new byte[] {VERIFIED}, HibaseCodec.packList(covered(s, st))))));
      }
    }
    Map<TableName, List<Row>> entries = new LinkedHashMap<>();
    Map<TableName, Map<ByteBuffer, long[]>> deltas = new LinkedHashMap<>();
    List<Wanted> added = new ArrayList<>();
    byte[][] have = stored(wanted);
    for (int i = 0; i < wanted.size(); i++) {
      Wanted w = wanted.get(i);
      if (have[i] != null && have[i].length > 0 && have[i][0] == VERIFIED) continue;
      add(entries, w.idx, w.put);
      if (have[i] == null) {
        count(deltas, w.idx, w.valueKey, 1);
        added.add(w);
      }
    }
    if (entries.isEmpty()) return;
    CountCell into = cell;
    Map<TableName, List<Row>> begin = new LinkedHashMap<>();
    counts(into, deltas, Step.BEGIN, begin);
    try {
      send(begin);
    } catch (IOException | RuntimeException e) {
      takeBack(into, deltas, Collections.emptyMap());
      throw e;
    }
    try {
      send(entries);
    } catch (IOException | RuntimeException e) {
      // which entries landed is not known: those that exist keep their counts
      Map<TableName, Map<ByteBuffer, long[]>> kept = new LinkedHashMap<>();
      try {
        byte[][] landed = stored(added);
        for (int i = 0; i < added.size(); i++) {
          if (landed[i] != null) count(kept, added.get(i).idx, added.get(i).valueKey, 1);
        }
      } catch (IOException | RuntimeException again) {
        LOG.warn("hibase index upkeep: which entries of a failed build batch landed is not "
            + "known", again);
        leaveToRecovery();
        throw e;
      }
      takeBack(into, deltas, kept);
      throw e;
    }
    Map<TableName, List<Row>> end = new LinkedHashMap<>();
    counts(into, deltas, Step.LANDED, end);
    try {
      send(end);
    } catch (IOException | RuntimeException e) {
      // the entries are written: the cell stays pending until its next write here settles it
      LOG.warn("hibase index upkeep: settling a build batch's counts failed", e);
      leftovers = true;
    }
  }

  /** The stored value of each wanted entry, null where none: one multi-get per index table. */
  byte[][] stored(List<Wanted> entries) throws IOException {
    byte[][] out = new byte[entries.size()][];
    Map<TableName, List<Integer>> byTable = new LinkedHashMap<>();
    for (int i = 0; i < entries.size(); i++) {
      byTable.computeIfAbsent(entries.get(i).idx, k -> new ArrayList<>()).add(i);
    }
    for (Map.Entry<TableName, List<Integer>> e : byTable.entrySet()) {
      List<Get> gets = new ArrayList<>();
      for (int i : e.getValue()) gets.add(new Get(entries.get(i).key).addColumn(V, V));
      try (Table t = env.getConnection().getTable(e.getKey())) {
        Result[] rs = t.get(gets);
        for (int j = 0; j < rs.length; j++) {
          out[e.getValue().get(j)] = rs[j].getValue(V, V);
        }
      }
    }
    return out;
  }

  /** The table's index sets changed: rewrite the catalog row ver/<table> with new random
   *  bytes, after every index write of the batch has landed and before the batch is
   *  acknowledged. Clients' hot caches store a set under the version they read before
   *  loading it and answer from it only while the row still holds that version
   *  (hibase/cache/backend.py, tags), so no reader, in any process, is answered from a set
   *  loaded before an acknowledged write. A failure here fails the batch's acknowledgement
   *  (the data landed; a retried put is idempotent): a cached set must not outlive it. */
  void bumpVersion(Catalog cat) throws IOException {
    byte[] version = new byte[8];
    java.util.concurrent.ThreadLocalRandom.current().nextBytes(version);
    Map<TableName, List<Row>> ver = new LinkedHashMap<>();
    add(ver, cat.meta, new Put(b("ver/" + cat.table)).addColumn(M, V, version));
    send(ver);
  }

  /** Every mini-batch that began before this call has finished when it returns, and every
   *  later one reads the index definitions afresh (the catalog's gen row): so a batch that
   *  read an index as kept (ready, building) writes nothing of it after a rebuild's clear,
   *  and one that read it stale has landed its data before the build reads rows. Without
   *  it a batch in flight across the clear (the client waits a catalog lease, 0 in the
   *  tests, and the coprocessor reads the definitions once per batch, at its start) put its
   *  count cell's remembered totals back after the clear had offset them (issue 37 item 5:
   *  bad_counts after a build racing plain writes). */
  void drain(Catalog cat) throws IOException {
    synchronized (cat) {
      cat.checkedAt = 0;  // a lease on the definitions ends here
      cat.gen = new byte[0];  // re-read them at the next batch even if gen did not move
    }
    Flight old;
    synchronized (flights) {
      old = flight;
      flight = new Flight();
    }
    long deadline = System.currentTimeMillis() + DRAIN_MS;
    synchronized (flights) {
      while (old.n > 0) {
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) {
          throw new DoNotRetryIOException("hibase: " + old.n + " write batch(es) of region "
              + env.getRegionInfo().getEncodedName() + " still in flight after "
              + DRAIN_MS / 1000 + " s");
        }
        try {
          flights.wait(left);
        } catch (InterruptedException e) {
          throw new InterruptedIOException("interrupted draining hibase writes");
        }
      }
    }
  }
}
