// Value counts: this region's own count cell per incarnation, the deltas a batch begins,
// lands or takes back (kv.py's (count, pending) cells).
package io.hibase;

import static io.hibase.RowState.*;
import static io.hibase.Specs.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Row;

abstract class CountCells extends ObserverCore {
  volatile CountCell cell;  // this region's own count cell (newCell)


  /** A count cell and the totals this region wrote there. */
  static final class CountCell {
    final byte[] qual;
    // (index table, value key) -> {settled, batches in flight, their growth}: the cell holds
    // (settled + growth, in flight), as kv.py's (count, pending) cells
    final Map<TableName, Map<ByteBuffer, long[]>> held = new HashMap<>();
    int size;

    CountCell(byte[] qual) { this.qual = qual; }
  }

  /** A new count cell: what the old one holds stays in the sums; batches in flight finish
   *  in the cell they began in. On start (what an earlier incarnation wrote is not known
   *  here), when the catalog changed and when too many totals are remembered. */
  void newCell() {
    synchronized (incarnation) {
      generation++;
      cell = new CountCell(cat(regionTag, incarnation,
          ByteBuffer.allocate(4).putInt(generation).array()));
    }
  }

  /** The encoded name of the region whose count cell this qualifier names (its incarnation
   *  follows, bytes 32-40); null for a cell of no region, e.g. a Python writer's 8 random
   *  bytes. */
  static String cellRegion(byte[] qual) {
    return qual.length == 44 ? new String(qual, 0, 32, StandardCharsets.ISO_8859_1) : null;
  }

  /** Counts begun whose writes did not land, taken back, but for `kept` (of writes known to
   *  have landed), settled; if that fails too, the cell is left to recovery. */
  void takeBack(CountCell into, Map<TableName, Map<ByteBuffer, long[]>> deltas,
                        Map<TableName, Map<ByteBuffer, long[]>> kept) {
    try {
      Map<TableName, List<Row>> back = new LinkedHashMap<>();
      counts(into, deltas, Step.FAILED, back);
      counts(into, kept, Step.AT_ONCE, back);
      send(back);
    } catch (IOException | RuntimeException e) {
      LOG.warn("hibase index upkeep: taking back a failed batch's counts failed", e);
      leaveToRecovery();
    }
  }

  /** This incarnation's count cell may stay pending: a new cell from now on, and no closed
   *  mark at close, so the next incarnation's recovery settles the old one. */
  void leaveToRecovery() {
    leftovers = true;
    newCell();
  }

  /** The count changes of one row's entry moving from oldKey (existing or not) to newKey:
   *  value counts are family c of the index table, row = (region prefix +) value key; a
   *  count is the number of entries that exist with that value. */
  static void deltas(Map<TableName, Map<ByteBuffer, long[]>> deltas, TableName idx,
                     byte[] prefix, byte[] oldKey, boolean oldExists, byte[] newKey) {
    boolean same = oldKey == null ? newKey == null : Arrays.equals(oldKey, newKey);
    if (newKey != null && (!same || !oldExists)) count(deltas, idx, cat(prefix, newKey), 1);
    if (oldExists && !same) count(deltas, idx, cat(prefix, oldKey), -1);
  }

  static void count(Map<TableName, Map<ByteBuffer, long[]>> deltas, TableName t, byte[] key,
                    long d) {
    deltas.computeIfAbsent(t, k -> new LinkedHashMap<>())
        .computeIfAbsent(ByteBuffer.wrap(key), k -> new long[1])[0] += d;
  }

  /** One count cell value: 8 bytes, or 16 (count, pending) while pending is not 0
   *  (hibase.store.base.encode_count). */
  static byte[] countValue(long n, long pending) {
    return pending == 0 ? ByteBuffer.allocate(8).putLong(n).array()
        : ByteBuffer.allocate(16).putLong(n).putLong(pending).array();
  }

  /** Steps of a count change: a write's (or a build batch's) upkeep begins before its
   *  writes and then lands or fails; AT_ONCE settles counts of entries known to exist (a
   *  failed build batch's that landed). */
  enum Step { BEGIN, LANDED, FAILED, AT_ONCE }

  /** The writes of the counts a mini-batch changes (each its net delta) at one step. A
   *  write's count grows before the data (BEGIN) and shrinks after (LANDED), so it is never
   *  below the rows, and is pending from the one to the other (or FAILED: the data did not
   *  land), so readers take no answer from it while the batch is in flight or after this
   *  server died between the steps (hibase.store.base.count_settled). Each write is a blind
   *  put of the cell's whole state for that value, taken with a timestamp under the cell's
   *  lock, so whichever put lands last is the newest state; no count is read (HBase's
   *  Increment reads, and runs increments of one row in one batch as separate mini-batches,
   *  each with its WAL sync). */
  void counts(CountCell into, Map<TableName, Map<ByteBuffer, long[]>> deltas,
                      Step step, Map<TableName, List<Row>> out) {
    synchronized (into) {
      long ts = stamp(1);
      for (Map.Entry<TableName, Map<ByteBuffer, long[]>> t : deltas.entrySet()) {
        Map<ByteBuffer, long[]> mine = into.held.computeIfAbsent(t.getKey(), k -> new HashMap<>());
        for (Map.Entry<ByteBuffer, long[]> e : t.getValue().entrySet()) {
          long d = e.getValue()[0];
          if (d == 0) continue;
          long[] h = mine.get(e.getKey());
          if (h == null) {
            mine.put(e.getKey(), h = new long[3]);
            into.size++;
          }
          long grow = Math.max(d, 0);
          switch (step) {
            case BEGIN: h[1]++; h[2] += grow; break;
            case LANDED: h[1]--; h[2] -= grow; h[0] += d; break;
            case FAILED: h[1]--; h[2] -= grow; break;
            default: h[0] += d; break;
          }
          add(out, t.getKey(), new Put(e.getKey().array()).addColumn(C, into.qual, ts,
              countValue(h[0] + h[2], h[1])));
        }
      }
    }
    if (step != Step.BEGIN && into.size > REMEMBERED && into == cell) newCell();
  }

  /** The counts a mini-batch began (`begun`, phase 1) land with the deltas the rows show
   *  after the write (`landed`, finish()): each begun value is no longer in flight (its
   *  growth taken out of the pending part) and each landed delta is settled; one put of the
   *  cell's state per value. `landed` equals `begun` unless HBase reads a row otherwise than
   *  the mutations predicted (a hidden put). */
  void land(CountCell into, Map<TableName, Map<ByteBuffer, long[]>> begun,
                    Map<TableName, Map<ByteBuffer, long[]>> landed,
                    Map<TableName, List<Row>> out) {
    synchronized (into) {
      long ts = stamp(1);
      Map<TableName, java.util.Set<ByteBuffer>> keys = new LinkedHashMap<>();
      for (Map<TableName, Map<ByteBuffer, long[]>> m : java.util.List.of(begun, landed)) {
        for (Map.Entry<TableName, Map<ByteBuffer, long[]>> t : m.entrySet()) {
          keys.computeIfAbsent(t.getKey(), k -> new java.util.LinkedHashSet<>())
              .addAll(t.getValue().keySet());
        }
      }
      for (Map.Entry<TableName, java.util.Set<ByteBuffer>> t : keys.entrySet()) {
        Map<ByteBuffer, long[]> mine = into.held.computeIfAbsent(t.getKey(), k -> new HashMap<>());
        Map<ByteBuffer, long[]> b = begun.getOrDefault(t.getKey(), Collections.emptyMap());
        Map<ByteBuffer, long[]> l = landed.getOrDefault(t.getKey(), Collections.emptyMap());
        for (ByteBuffer key : t.getValue()) {
          long db = b.containsKey(key) ? b.get(key)[0] : 0;
          long dl = l.containsKey(key) ? l.get(key)[0] : 0;
          if (db == 0 && dl == 0) continue;
          long[] h = mine.get(key);
          if (h == null) {
            mine.put(key, h = new long[3]);
            into.size++;
          }
          if (db != 0) {  // begun at BEGIN (counts() skips a net 0)
            h[1]--;
            h[2] -= Math.max(db, 0);
          }
          h[0] += dl;
          add(out, t.getKey(), new Put(key.array()).addColumn(C, into.qual, ts,
              countValue(h[0] + h[2], h[1])));
        }
      }
    }
    if (into.size > REMEMBERED && into == cell) newCell();
  }
}
