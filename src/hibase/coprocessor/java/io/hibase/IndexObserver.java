// hibase's index upkeep inside HBase: a RegionObserver that keeps every index of a hibase
// table whose definition says "upkeep": "server" exact, whoever writes the row (hibase, the
// HBase shell, happybase, a Java or Spark client). It writes the same HBase tables, rows,
// families, qualifiers and values as hibase's Python upkeep (src/hibase/index/maintain.py,
// local.py, store/hbase/kv.py and writes.py); docs/architecture.md, "Index upkeep inside
// HBase", describes the protocol and its recovery.
//
// Load it on every region (hbase-site.xml: hbase.coprocessor.region.classes=
// io.hibase.IndexObserver, its jar on the region servers' classpath) or per table (table
// descriptor attribute). Regions of tables that are not hibase tables cost one lookup at their
// first write and nothing after.
//
// This class holds the hooks only; each role is a class of its own that it extends (one
// file each): ObserverCore (region state, catalog cache, reads, locks, index writes) <-
// CountCells <- BatchUpkeep <- Rebuild <- Recovery <- IndexObserver; pure code needing no
// region is static in Specs (definitions parsed) and RowState (row-state math).
package io.hibase;

import static io.hibase.RowState.*;
import static io.hibase.Specs.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CoprocessorEnvironment;
import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.regionserver.MiniBatchOperationInProgress;
import org.apache.hadoop.hbase.regionserver.OperationStatus;

public class IndexObserver extends ChangeConsumer implements RegionCoprocessor, RegionObserver {

  @Override
  public void start(CoprocessorEnvironment e) throws IOException {
    env = (RegionCoprocessorEnvironment) e;
    leaseMs = env.getConfiguration().getLong("hibase.index.catalog.lease.ms", 0);
    for (int i = 0; i < stripes.length; i++) stripes[i] = new ReentrantLock();
    regionTag = b(env.getRegionInfo().getEncodedName());
    new java.security.SecureRandom().nextBytes(incarnation);
    newCell();
  }

  @Override
  public Optional<RegionObserver> getRegionObserver() { return Optional.of(this); }

  /** hibase asks whether this coprocessor runs on the table (store.server_upkeep): a get
   *  carrying the attribute hibase.probe makes the region look for its catalog now, which
   *  writes the marker row copro/<table> the client then reads. */
  @Override
  public void preGetOp(ObserverContext<RegionCoprocessorEnvironment> c, Get get,
                       List<Cell> result) throws IOException {
    if (get.getAttribute(DRAIN) != null) {
      try {
        Catalog cat = catalog(true);
        if (cat != null) drain(cat);
      } catch (RuntimeException e) {
        throw new DoNotRetryIOException("hibase drain failed: " + e, e);
      }
      return;
    }
    if (get.getAttribute(PROBE) != null || get.getAttribute(RECOVER) != null) {
      try {
        Catalog cat = catalog(true);
        if (cat != null && get.getAttribute(RECOVER) != null) {
          recover(cat, System.currentTimeMillis() + 60_000);
        }
      } catch (RuntimeException e) {
        throw new DoNotRetryIOException("hibase probe failed: " + e, e);
      }
    }
  }

  @Override
  public void preBatchMutate(ObserverContext<RegionCoprocessorEnvironment> c,
                             MiniBatchOperationInProgress<Mutation> mb) throws IOException {
    List<ReentrantLock> held = null;
    Pending p = null;
    try {
      Catalog cat = catalog(false);
      if (cat == null) return;
      synchronized (flights) {
        Flight f = flight;
        f.n++;
        flying.put(mb, f);
      }
      List<Spec> specs = specs(cat);
      if (specs.isEmpty()) return;
      Map<ByteBuffer, List<Mutation>> byRow = new LinkedHashMap<>();
      Map<ByteBuffer, List<Spec>> reindex = new LinkedHashMap<>();
      for (int i = 0; i < mb.size(); i++) {
        if (mb.getOperationStatus(i).getOperationStatusCode()
            != HConstants.OperationStatusCode.NOT_RUN) continue;
        Mutation m = mb.getOperation(i);
        byte[] alias = m.getAttribute(REINDEX);
        if (alias != null) {  // a build's request: not applied (SUCCESS), entries rewritten
          mb.setOperationStatus(i, OperationStatus.SUCCESS);
          for (Spec s : specs) {
            if (Arrays.equals(s.alias, HibaseCodec.unhex(new String(alias, StandardCharsets.US_ASCII)))) {
              reindex.computeIfAbsent(ByteBuffer.wrap(m.getRow()), k -> new ArrayList<>()).add(s);
            }
          }
          continue;
        }
        if (!(m instanceof Put) && !(m instanceof Delete) && !(m instanceof Increment)
            && !(m instanceof Append)) {
          continue;
        }
        byRow.computeIfAbsent(ByteBuffer.wrap(m.getRow()), k -> new ArrayList<>()).add(m);
      }
      if (byRow.isEmpty() && reindex.isEmpty()) return;
      List<byte[]> rows = new ArrayList<>();
      for (ByteBuffer r : byRow.keySet()) rows.add(r.array());
      for (ByteBuffer r : reindex.keySet()) rows.add(r.array());
      held = lock(rows);
      p = new Pending();
      p.cat = cat;
      Map<TableName, List<Row>> phase1 = new LinkedHashMap<>();
      long now = System.currentTimeMillis();
      p.cell = cell;
      boolean allVersions = false;
      List<byte[]> written = new ArrayList<>();
      for (Map.Entry<ByteBuffer, List<Mutation>> e : byRow.entrySet()) {
        allVersions |= pointDeletes(e.getValue());
        written.add(e.getKey().array());
      }
      Map<ByteBuffer, RowState.State> states = byRow.isEmpty() ? Collections.emptyMap()
          : readMany(written, specs, allVersions);
      List<Spec> eventual = new ArrayList<>();
      for (Spec s : specs) if (s.eventual) eventual.add(s);
      // phase 1 writes at ts, phase 3 at ts + 1; a batch recording changes stays in flight
      // for the consumer until it has landed (ChangeConsumer.lowMark)
      p.recording = !eventual.isEmpty() && !byRow.isEmpty();
      long ts = p.recording ? stampRecording(2) : stamp(2);
      p.ts = ts;
      p.specs = specs;
      for (Map.Entry<ByteBuffer, List<Mutation>> e : byRow.entrySet()) {
        byte[] row = e.getKey().array();
        RowState.State before = states.get(e.getKey());
        if (!eventual.isEmpty()) record(cat, eventual, row, before, ts, phase1);
        if (eventual.size() == specs.size()) continue;
        RowState.State after = apply(before, e.getValue(), now);
        for (Spec s : specs) {
          if (!s.eventual) change(cat, s, row, before, after, ts, phase1, p.plans, p.deltas);
        }
      }
      if (!eventual.isEmpty()) wake();
      counts(p.cell, p.deltas, Step.BEGIN, phase1);
      p.begun = true;
      if (!reindex.isEmpty()) rebuild(cat, reindex);  // written now: nothing of these rows changes
      send(phase1);
      if (!byRow.isEmpty()) {  // postBatchMutateIndispensably finishes and unlocks
        p.locks.addAll(held);
        pending.put(mb, p);
        held = null;
      }
    } catch (IOException e) {
      abandon(p);
      recorded(p);
      pending.remove(mb);
      land(mb);
      throw e;
    } catch (RuntimeException e) {  // never abort the region server: fail the batch
      abandon(p);
      recorded(p);
      pending.remove(mb);
      land(mb);
      LOG.error("hibase index upkeep failed", e);
      throw new DoNotRetryIOException("hibase index upkeep failed: " + e, e);
    } finally {
      if (held != null) unlock(held);
    }
  }

  @Override
  public void postBatchMutateIndispensably(ObserverContext<RegionCoprocessorEnvironment> c,
                                           MiniBatchOperationInProgress<Mutation> mb,
                                           boolean success) throws IOException {
    Pending p = pending.remove(mb);
    if (p == null) {
      land(mb);
      return;
    }
    boolean entries = false;
    try {
      Map<TableName, List<Row>> out = new LinkedHashMap<>();
      if (success) {
        Map<TableName, Map<ByteBuffer, long[]>> landed = finish(p, out);
        // an uncovered index's entries were written in their final form by phase 1, so
        // phase 3 may write nothing while the sets moved
        entries = !out.isEmpty() || changedAny(p);
        land(p.cell, p.deltas, landed, out);
      } else {
        counts(p.cell, p.deltas, Step.FAILED, out);
      }
      // on failure the data did not land: the counts are taken back; the unverified entries
      // stay, readers (which resolve an unverified entry against the data row) skip them, and
      // the row's next write or verify --repair removes them
      send(out);
    } catch (IOException | RuntimeException e) {
      // the data is written: its entries stay unverified (readers resolve them against the
      // row, so answers stay exact) until the row's next write, the next incarnation's
      // recovery or verify --repair
      LOG.error("hibase index upkeep: verifying entries after the data failed", e);
      leftovers = true;
      entries = success;  // what landed of the entries is not known: the sets may have moved
    } finally {
      try {
        if (entries) bumpVersion(p.cat);
      } finally {
        recorded(p);
        unlock(p.locks);
        land(mb);
      }
    }
  }

  // -- recovery of what a dead incarnation left ----------------------------------------------

  @Override
  public void preReplayWALs(ObserverContext<? extends RegionCoprocessorEnvironment> c,
                            org.apache.hadoop.hbase.client.RegionInfo info,
                            org.apache.hadoop.fs.Path edits) {
    replayed = true;
  }

  /** A region opened: in the background (hibase_meta may not be online yet, and the open
   *  must not wait), publish this incarnation, and when the one before did not close cleanly
   *  (its server died: its edits were replayed, or it left no closed mark) recover what it
   *  left between a batch's phases. */
  @Override
  public void postOpen(ObserverContext<RegionCoprocessorEnvironment> c) {
    Thread t = new Thread(() -> {
      long deadline = System.currentTimeMillis() + RECOVERY_MS;
      for (long wait = 500; System.currentTimeMillis() < deadline; wait = Math.min(wait * 2, 10_000)) {
        try {
          Catalog cat = catalog(true);
          if (cat != null && (replayed || uncleanBefore)) recover(cat, deadline);
          if (cat != null) wake();  // changes an earlier home of the region left unapplied
          return;
        } catch (IOException | RuntimeException e) {
          LOG.warn("hibase: recovery of region {} will be tried again: {}",
              env.getRegionInfo().getEncodedName(), e.toString());
        }
        try {
          Thread.sleep(wait);
        } catch (InterruptedException e) {
          return;
        }
      }
      LOG.error("hibase: region {} could not recover its index upkeep in {} s; verify --repair "
          + "settles what is left", env.getRegionInfo().getEncodedName(), RECOVERY_MS / 1000);
    }, "hibase-recovery-" + env.getRegionInfo().getEncodedName());
    t.setDaemon(true);
    t.start();
  }

  /** A clean close (no abort): every batch has finished, so unless this incarnation left
   *  leftovers it marks itself closed and the next incarnation does not recover. One try,
   *  bounded to a couple of seconds, skipped for a while once the catalog's hibase_meta did
   *  not answer (dropped, or a whole server shutting down): an unmarked close only costs the
   *  next open a recovery. */
  @Override
  public void postClose(ObserverContext<RegionCoprocessorEnvironment> c, boolean abortRequested) {
    sleep();
    Catalog cat = catalog;
    if (abortRequested || leftovers || cat == null
        || System.currentTimeMillis() < metaAwayUntil.getOrDefault(cat.meta, 0L)) return;
    try (Table t = env.getConnection().getTableBuilder(cat.meta, null)
        .setOperationTimeout(2000).setRpcTimeout(1000).setWriteRpcTimeout(1000).build()) {
      t.put(new Put(b("inc/" + env.getRegionInfo().getEncodedName()))
          .addColumn(M, CLOSED, incarnation));
    } catch (IOException | RuntimeException e) {
      metaAwayUntil.put(cat.meta, System.currentTimeMillis() + 30_000);
      LOG.info("hibase: region {} closed without its closed mark (its next open recovers): {}",
          env.getRegionInfo().getEncodedName(), e.toString());
    }
  }
}
