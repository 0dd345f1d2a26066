// Recovery of what a dead incarnation of the region left between a batch's phases:
// unverified entries resolved from their rows, pending count cells settled.
package io.hibase;

import static io.hibase.RowState.*;
import static io.hibase.Specs.*;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.filter.BinaryPrefixComparator;
import org.apache.hadoop.hbase.filter.ColumnPrefixFilter;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;

abstract class Recovery extends Rebuild {

  /** Until when closing regions of this server skip their closed mark, per catalog (its
   *  hibase_meta did not answer: dropped, or its server shutting down). */
  static final Map<TableName, Long> metaAwayUntil =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** How long a region's recovery tries (other regions' servers may be down as long). */
  static final long RECOVERY_MS = 15 * 60_000L;

  /** A dead incarnation's leftovers: (1) unverified entries of this region's rows (a batch
   *  whose phase 3 never came; when the client's retry finds the row already replayed it
   *  changes nothing), each resolved against the row under the row's lock, as a live write
   *  would; (2) its count cells left pending, each settled to the count of the value's
   *  entries less the other cells. */
  void recover(Catalog cat, long deadline) throws IOException {
    List<Spec> specs = specs(cat);
    if (specs.isEmpty()) return;
    int resolved = 0, settled = 0, left = 0;
    for (boolean local : new boolean[] {false, true}) {
      List<Spec> these = new ArrayList<>();
      for (Spec s : specs) if (s.local == local) these.add(s);
      if (these.isEmpty()) continue;
      TableName idx = cat.kv(local ? "__lidx__" : "__idx__");
      resolved += resolveEntries(cat, idx, these);
      for (byte[] key : pendingKeys(idx)) {
        if (settle(cat, idx, these, key, deadline)) settled++; else left++;
      }
    }
    LOG.info("hibase: region {} recovered: {} unverified entries resolved, {} counts settled, "
        + "{} left pending", env.getRegionInfo().getEncodedName(), resolved, settled, left);
  }

  /** Resolve every unverified entry of this region's rows in index table idx: verified when
   *  the row has that entry, else deleted; entries of indexes not kept here are left alone. */
  int resolveEntries(Catalog cat, TableName idx, List<Spec> specs) throws IOException {
    SingleColumnValueFilter unverified = new SingleColumnValueFilter(V, V, CompareOperator.EQUAL,
        new BinaryPrefixComparator(new byte[] {UNVERIFIED}));
    unverified.setFilterIfMissing(true);
    List<byte[][]> found = new ArrayList<>();  // (entry key, row)
    int n = 0;
    try (Table t = env.getConnection().getTable(idx)) {
      try (ResultScanner rs = t.getScanner(new Scan().addColumn(V, V).setFilter(unverified))) {
        for (Result r : rs) {
          byte[] v = r.getValue(V, V);
          if (v == null || v.length < 2 || v[0] != UNVERIFIED) continue;
          List<?> items = (List<?>) HibaseCodec.unpack(Arrays.copyOfRange(v, 1, v.length));
          byte[] row = cat.stored((byte[]) items.get(0));  // entries carry user rowkeys
          if (env.getRegionInfo().containsRow(row)) found.add(new byte[][] {r.getRow(), row});
        }
      }
      for (byte[][] f : found) {
        byte[] key = f[0], row = f[1];
        List<ReentrantLock> held = lock(Collections.singletonList(row));
        try {
          byte[] v = t.get(new Get(key).addColumn(V, V)).getValue(V, V);
          if (v == null || v.length == 0 || v[0] != UNVERIFIED) continue;  // a write did it
          State st = read(row, specs, false);
          Mutation m = null;
          long ts = stamp(1);
          for (Spec s : specs) {
            if (s.text) {  // the row has the entry while its text has the token
              byte[] user = cat.user(row);  // entries carry user rowkeys (Salt)
              if (!startsWith(key, s.alias) || key.length < user.length) continue;
              byte[] vk = Arrays.copyOfRange(key, 0, key.length - user.length);
              if (Tokens.keys(s, st).contains(ByteBuffer.wrap(vk))) {
                m = new Put(key).addColumn(V, V, ts,
                    cat(new byte[] {VERIFIED}, HibaseCodec.packList(covered(s, st))));
                break;
              }
              m = new Delete(key).addColumns(V, V, ts);
              continue;
            }
            byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
            byte[] vk = valueKey(s, st, row);
            if (vk != null && Arrays.equals(cat(prefix, vk, cat.user(row)), key)) {
              m = new Put(key).addColumn(V, V, ts,
                  cat(new byte[] {VERIFIED}, HibaseCodec.packList(covered(s, st))));
              break;
            }
            if (startsWith(key, cat(prefix, s.alias))
                || (s.nullAlias != null && startsWith(key, cat(prefix, s.nullAlias)))) {
              m = new Delete(key).addColumns(V, V, ts);
            }
          }
          if (m == null) continue;
          Map<TableName, List<Row>> w = new LinkedHashMap<>();
          add(w, idx, m);
          send(w);
          n++;
        } finally {
          unlock(held);
        }
      }
    }
    return n;
  }

  /** Value keys whose count cells include one of an earlier incarnation of this region left
   *  pending. */
  List<byte[]> pendingKeys(TableName idx) throws IOException {
    List<byte[]> out = new ArrayList<>();
    try (Table t = env.getConnection().getTable(idx);
         ResultScanner rs = t.getScanner(new Scan().addFamily(C)
             .setFilter(new ColumnPrefixFilter(regionTag)))) {
      for (Result r : rs) {
        for (Cell c : r.rawCells()) {
          byte[] q = CellUtil.cloneQualifier(c);
          if (cellRegion(q) != null && c.getValueLength() > 8
              && !Arrays.equals(q, 32, 40, incarnation, 0, 8)) {
            out.add(r.getRow());
            break;
          }
        }
      }
    }
    return out;
  }

  /** Settle value key `key`'s count: the cells of dead incarnations (of any region) left
   *  pending are set so that all cells sum to the value's entries (verified ones, and
   *  unverified ones whose row has the value), when no live cell is pending and the other
   *  cells did not change while the entries were counted (so no live write came between:
   *  a live write changes its own cell with its entries). Retried until the deadline. */
  boolean settle(Catalog cat, TableName idx, List<Spec> specs, byte[] key,
                         long deadline) throws IOException {
    Map<String, byte[]> alive = new HashMap<>();  // region -> its live incarnation
    try (Table t = env.getConnection().getTable(idx)) {
      for (long wait = 200; ; wait = Math.min(wait * 2, 5_000)) {
        Result before = t.get(new Get(key).addFamily(C));
        long pending = 0, others = 0, newest = 0;
        List<byte[]> dead = new ArrayList<>();
        boolean live = false;
        for (Cell c : before.rawCells() == null ? new Cell[0] : before.rawCells()) {
          byte[] q = CellUtil.cloneQualifier(c);
          byte[] v = CellUtil.cloneValue(c);
          long p = v.length > 8 ? ByteBuffer.wrap(v, 8, 8).getLong() : 0;
          pending += p;
          newest = Math.max(newest, c.getTimestamp());
          if (p != 0 && isDead(cat, q, alive)) {
            dead.add(q);
          } else {
            live |= p != 0;
            others += ByteBuffer.wrap(v, 0, 8).getLong();
          }
        }
        if (pending == 0) return true;  // settled meanwhile (another recovery, a repair)
        if (!live && !dead.isEmpty()) {
          long n = entries(cat, t, specs, key);
          Result after = t.get(new Get(key).addFamily(C));
          if (same(before, after)) {
            dead.sort(Arrays::compareUnsigned);
            long ts = Math.max(stamp(1), newest + 1);
            Put put = new Put(key);
            for (int i = 0; i < dead.size(); i++) {
              put.addColumn(C, dead.get(i), ts, countValue(i == 0 ? n - others : 0, 0));
            }
            t.put(put);
            return true;
          }
        }
        if (System.currentTimeMillis() + wait > deadline) return false;
        alive.clear();  // a region may have opened again meanwhile
        try {
          Thread.sleep(wait);
        } catch (InterruptedException e) {
          throw new InterruptedIOException("interrupted settling hibase counts");
        }
      }
    }
  }

  /** Whether a count cell is a dead incarnation's: its region's live incarnation (published
   *  in hibase_meta inc/<region> when a region finds its catalog) is another one. */
  boolean isDead(Catalog cat, byte[] qual, Map<String, byte[]> alive) throws IOException {
    String region = cellRegion(qual);
    if (region == null) return false;  // a Python writer's: in flight, never known dead
    byte[] inc = alive.get(region);
    if (inc == null) {
      try (Table m = env.getConnection().getTable(cat.meta)) {
        inc = m.get(new Get(b("inc/" + region)).addColumn(M, V)).getValue(M, V);
      }
      if (inc == null) inc = new byte[0];
      alive.put(region, inc);
    }
    return !Arrays.equals(qual, 32, 40, inc, 0, inc.length);
  }

  /** The entries value key `key` has: verified ones, and unverified ones whose row (read
   *  from whichever region holds it) has that value key. */
  long entries(Catalog cat, Table idx, List<Spec> specs, byte[] key) throws IOException {
    long n = 0;
    Scan scan = new Scan().withStartRow(key).withStopRow(successor(key)).addColumn(V, V);
    try (ResultScanner rs = idx.getScanner(scan);
         Table data = env.getConnection().getTable(env.getRegionInfo().getTable())) {
      for (Result r : rs) {
        byte[] v = r.getValue(V, V);
        if (v == null || v.length == 0) continue;
        if (v[0] == VERIFIED) {
          n++;
          continue;
        }
        byte[] entry = r.getRow();
        byte[] row = cat.stored(Arrays.copyOfRange(entry, key.length, entry.length));
        State st = readAnywhere(data, row, specs);
        for (Spec s : specs) {
          if (s.text) {
            if (Tokens.keys(s, st).contains(ByteBuffer.wrap(key))) {
              n++;
              break;
            }
            continue;
          }
          byte[] vk = valueKey(s, st, row);
          byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
          if (vk != null && Arrays.equals(cat(prefix, vk), key)) {
            n++;
            break;
          }
        }
      }
    }
    return n;
  }

  /** A row's state as read(), from this region or through the cluster. */
  State readAnywhere(Table data, byte[] row, List<Spec> specs) throws IOException {
    if (env.getRegionInfo().containsRow(row)) return read(row, specs, false);
    Get g = new Get(row);
    for (byte[][] c : columnsRead(specs)) g.addColumn(c[0], c[1]);
    State st = new State();
    Result r = data.get(g);
    if (r.rawCells() != null) addCells(st, Arrays.asList(r.rawCells()));
    return st;
  }
}
