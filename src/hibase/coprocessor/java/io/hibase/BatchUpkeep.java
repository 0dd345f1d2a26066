// A write batch's index upkeep: phase 1 (entries marked unverified, counts begun, before
// the data) and phase 3 (entries verified or deleted from the row as stored, after it). An
// uncovered index's new entries are written once, final, in phase 1.
package io.hibase;

import static io.hibase.RowState.*;
import static io.hibase.Specs.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Table;

abstract class BatchUpkeep extends CountCells {
  final Map<Object, Pending> pending =
      Collections.synchronizedMap(new IdentityHashMap<>());


  // -- the write protocol ---------------------------------------------------------------------

  /** What preBatchMutate computed, for postBatchMutateIndispensably: phase 3's entries,
   *  the counts begun (and the cell they began in) and the locks. */
  static final class Pending {
    final List<Plan> plans = new ArrayList<>();
    final List<ReentrantLock> locks = new ArrayList<>();
    final Map<TableName, Map<ByteBuffer, long[]>> deltas = new LinkedHashMap<>();
    CountCell cell;
    boolean begun;  // counts begun (phase 1)
    Catalog cat;
    List<Spec> specs;
    long ts;  // phase 1 wrote at ts, phase 3 writes at ts + 1
    boolean recording;  // it records changes for eventual indexes (ChangeConsumer)
  }

  /** One row's change in one index as phase 1 predicted it from the mutations (apply()):
   *  the old entry (and whether it exists: while building, the build may not have written
   *  it yet) and the predicted new one. Phase 3 compares the prediction with the row as
   *  HBase reads it after the write and writes what that shows (see finish()). */
  static final class Plan {
    final byte[] row, prefix, oldKey, newKey;
    final Spec spec;
    final TableName idx;
    final boolean oldExists, changed;  // changed: phase 1 marked entries, counts begun
    final List<byte[]> newCov;
    byte[] textKey;  // a text index's plan: the one token entry it is about (Tokens)

    Plan(byte[] row, Spec spec, TableName idx, byte[] prefix, byte[] oldKey, boolean oldExists,
         byte[] newKey, List<byte[]> newCov, boolean changed) {
      this.changed = changed;
      this.row = row;
      this.spec = spec;
      this.idx = idx;
      this.prefix = prefix;
      this.oldKey = oldKey;
      this.oldExists = oldExists;
      this.newKey = newKey;
      this.newCov = newCov;
    }
  }

  /** preBatchMutate failed: the batch will not land, so the counts it began are taken back
   *  (pending no more; if that fails too, the cell is left to recovery). */
  void abandon(Pending p) {
    if (p == null || !p.begun) return;
    takeBack(p.cell, p.deltas, Collections.emptyMap());
  }

  /** The writes one row's change in one index makes before the data (phase 1): every
   *  touched entry written unverified (0x00 + msgpack([rowkey])), the counts that grow
   *  added (begun); the plan for phase 3 (finish(): the new entry verified, the old one
   *  deleted, the counts that shrink taken, all from the row as HBase reads it after the
   *  write). While the index is building, entries of rows the build has not reached yet do
   *  not exist: the old entry is looked up before it is marked and its count taken. A plan
   *  is kept also when the prediction is "no change": HBase may still read the row
   *  otherwise (a put hidden by a delete marker: the prediction is only the mutations). */
  void change(Catalog cat, Spec s, byte[] row, State before, State after, long ts,
                      Map<TableName, List<Row>> phase1, List<Plan> plans,
                      Map<TableName, Map<ByteBuffer, long[]>> deltas) throws IOException {
    if (s.text) {
      TextUpkeep.change(this, cat, s, row, before, after, ts, phase1, plans, deltas);
      return;
    }
    byte[] oldKey = valueKey(s, before, row);
    byte[] newKey = valueKey(s, after, row);
    entry(cat, s, row, before, after, oldKey, newKey, ts, phase1, plans, deltas);
  }

  /** change() for one entry: its value key before (oldKey) and after (newKey) the write. */
  Plan entry(Catalog cat, Spec s, byte[] row, State before, State after, byte[] oldKey,
             byte[] newKey, long ts, Map<TableName, List<Row>> phase1, List<Plan> plans,
             Map<TableName, Map<ByteBuffer, long[]>> deltas) throws IOException {
    List<byte[]> newCov = newKey == null ? null : covered(s, after);
    boolean same = oldKey == null ? newKey == null : Arrays.equals(oldKey, newKey);
    byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
    TableName idx = cat.kv(s.local ? "__lidx__" : "__idx__");
    if (same && (newKey == null || sameCovered(newCov, covered(s, before)))) {
      // predicted unchanged: nothing before the data; phase 3 checks the row as read
      Plan pl = new Plan(row, s, idx, prefix, oldKey, oldKey != null, oldKey,
          oldKey == null ? null : covered(s, before), false);
      plans.add(pl);
      return pl;
    }
    byte[] user = cat.user(row);  // entries carry user rowkeys (Salt)
    byte[] unverified = cat(new byte[] {UNVERIFIED},
        HibaseCodec.packList(Collections.singletonList(user)));
    boolean oldExists = oldKey != null;
    if (s.building && oldKey != null) {
      try (Table t = env.getConnection().getTable(idx)) {
        oldExists = t.exists(new Get(cat(prefix, oldKey, user)).addColumn(V, V));
      }
    }
    if (s.uncovered) {
      // an uncovered index's entry is written once, in its final form; readers check every
      // entry of it against its row (index/verified.py), so the old one needs no mark
      if (newKey != null) add(phase1, idx, new Put(cat(prefix, newKey, user))
          .addColumn(V, V, ts, cat(new byte[] {VERIFIED}, HibaseCodec.packList(newCov))));
    } else {
      // while building, an old entry the build has not written yet is not marked: an
      // unverified entry the build finds is then always one whose count was taken
      if (oldExists && !same) add(phase1, idx, new Put(cat(prefix, oldKey, user))
          .addColumn(V, V, ts, unverified));
      if (newKey != null) add(phase1, idx, new Put(cat(prefix, newKey, user))
          .addColumn(V, V, ts, unverified));
    }
    Plan pl = new Plan(row, s, idx, prefix, oldKey, oldExists, newKey, newCov, true);
    plans.add(pl);
    deltas(deltas, idx, prefix, oldKey, oldExists, newKey);
    return pl;
  }

  /** Phase 3 (after the data, the rows' stripe locks still held, so no other write of these
   *  rows lands meanwhile): each row is read as HBase's Get reads it now, and each index
   *  shows that, whatever the mutations said: a put hidden by an older delete marker at or
   *  above its timestamp (a delete and a put in the same millisecond), a put with an old
   *  explicit timestamp, an increment or append. Where the row shows the prediction, the
   *  predicted entry is written verified and the old one deleted; where it does not, the
   *  entry the row shows is written verified, the old and the predicted ones deleted, and the
   *  counts land with the row's true change instead of the predicted one. Adds the entry
   *  writes to `out`; returns the counts' landed deltas. */
  Map<TableName, Map<ByteBuffer, long[]>> finish(Pending p, Map<TableName, List<Row>> out)
      throws IOException {
    Map<TableName, Map<ByteBuffer, long[]>> landed = new LinkedHashMap<>();
    if (p.plans.isEmpty()) return landed;
    List<byte[]> rows = new ArrayList<>();
    java.util.Set<ByteBuffer> seen = new java.util.HashSet<>();
    for (Plan pl : p.plans) if (seen.add(ByteBuffer.wrap(pl.row))) rows.add(pl.row);
    Map<ByteBuffer, State> now = readMany(rows, p.specs, false);
    long ts = p.ts + 1;
    TextUpkeep.Now text = new TextUpkeep.Now(p.cat);
    for (Plan pl : p.plans) {
      State st = now.get(ByteBuffer.wrap(pl.row));
      byte[] key = pl.textKey != null ? text.key(pl, st) : valueKey(pl.spec, st, pl.row);
      byte[] user = p.cat.user(pl.row);  // entries carry user rowkeys (Salt)
      List<byte[]> cov = key == null ? null : covered(pl.spec, st);
      boolean asPredicted = key == null ? pl.newKey == null
          : Arrays.equals(key, pl.newKey) && sameCovered(cov, pl.newCov);
      boolean predictedSame = Arrays.equals(pl.oldKey, pl.newKey);
      if (asPredicted) {
        if (!pl.changed) continue;  // unchanged, as predicted: nothing was marked
        // (an uncovered index's entry was written in its final form by phase 1)
        if (pl.newKey != null && !pl.spec.uncovered) add(out, pl.idx,
            new Put(cat(pl.prefix, pl.newKey, user))
            .addColumn(V, V, ts, cat(new byte[] {VERIFIED}, HibaseCodec.packList(pl.newCov))));
        if (pl.oldExists && !predictedSame) add(out, pl.idx,
            new Delete(cat(pl.prefix, pl.oldKey, user)).addColumns(V, V, ts));
        deltas(landed, pl.idx, pl.prefix, pl.oldKey, pl.oldExists, pl.newKey);
        continue;
      }
      // the row reads otherwise than the mutations said: show what it reads
      boolean oldExists = pl.oldExists;
      if (!pl.changed && pl.spec.building && pl.oldKey != null) {
        // not looked up before (no change predicted): the build may not have written it
        try (Table t = env.getConnection().getTable(pl.idx)) {
          oldExists = t.exists(new Get(cat(pl.prefix, pl.oldKey, user)).addColumn(V, V));
        }
      }
      if (key != null) add(out, pl.idx, new Put(cat(pl.prefix, key, user))
          .addColumn(V, V, ts, cat(new byte[] {VERIFIED}, HibaseCodec.packList(cov))));
      if (oldExists && !Arrays.equals(pl.oldKey, key)) add(out, pl.idx,
          new Delete(cat(pl.prefix, pl.oldKey, user)).addColumns(V, V, ts));
      if (pl.changed && pl.newKey != null && !Arrays.equals(pl.newKey, key)
          && !(oldExists && Arrays.equals(pl.newKey, pl.oldKey))) {
        add(out, pl.idx, new Delete(cat(pl.prefix, pl.newKey, user)).addColumns(V, V, ts));
      }
      deltas(landed, pl.idx, pl.prefix, pl.oldKey, oldExists, key);
    }
    text.unplanned(ts, out, landed);
    return landed;
  }

  /** Whether phase 1 wrote entries for any row of the batch. */
  static boolean changedAny(Pending p) {
    for (Plan pl : p.plans) if (pl.changed) return true;
    return false;
  }

  /** A mini-batch left flight (finished, or failed in preBatchMutate). */
  void land(Object mb) {
    Flight f = flying.remove(mb);
    if (f == null) return;
    synchronized (flights) {
      if (--f.n == 0) flights.notifyAll();
    }
  }
}
