// Eventually consistent indexes (Phoenix 5.3's idea, hibase's rows): a write records each
// changed row once, whatever the number of such indexes, in the table's change table
// (hibase_kv__chg__<table>), and the consumer of the region holding the row applies the
// record to the entries shortly after, in the background, under the rows' stripe locks.
//
// A record's key is the writer's stamp (8 bytes, strictly increasing per region
// incarnation), its incarnation and the escaped rowkey, so records are in time order; its
// value is [rowkey, then per eventual index: alias, the row's entry key before the write (what
// the index may hold for it: the entry the consumer wrote for that state, if it did)].
// Applying a row deletes every such key its records name (but the row's key now) and writes
// the entry of the row as read now, verified; then its records go. Every step is idempotent, so
// a consumer that dies anywhere leaves records the next one (after a move, a crash, the next
// round) applies again. Each region applies the records of its own rows, whichever
// incarnation, parent region or server wrote them, reading the table from a cursor that only
// moves forward (deleted records behind it are never read again) and never past a stamp a
// batch of this region still in flight holds (lowMark): a record is written before its data,
// so a batch's record lands before the batch leaves flight, and no later record of this
// region's rows can sort before the cursor. A write in flight also holds its rows' stripe
// locks until its data has landed, and the consumer reads rows under the same locks, so it
// never reads a row older than a record it then deletes. Counts are not kept for these
// indexes (readers take no answer from them: IndexSpec.lags).
package io.hibase;

import static io.hibase.RowState.*;
import static io.hibase.Specs.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;

abstract class ChangeConsumer extends Recovery {

  /** Records applied per round (one scan of the change table, one lock of the rows). */
  static final int ROUND = 2000;

  /** How often a region with eventual indexes looks for records. */
  static final long PERIOD_MS = 200;

  /** The region server's consumer threads, shared by its regions. */
  static final ScheduledExecutorService POOL = Executors.newScheduledThreadPool(2, r -> {
    Thread t = new Thread(r, "hibase-change-consumer");
    t.setDaemon(true);
    return t;
  });

  private ScheduledFuture<?> task;

  private volatile boolean closing;

  /** Records one changed row for the table's eventual indexes: key stamp + incarnation +
   *  escaped row, value [row, then alias, entry key before the write (null: none) per
   *  index]. */
  void record(Catalog cat, List<Spec> eventual, byte[] row, State before, long ts,
              Map<TableName, List<Row>> out) {
    List<byte[]> was = new ArrayList<>(eventual.size() * 2 + 1);
    was.add(row);
    for (Spec s : eventual) {
      was.add(s.alias);
      was.add(valueKey(s, before, row));
    }
    byte[] key = cat(ByteBuffer.allocate(8).putLong(ts).array(), incarnation,
        HibaseCodec.escape(row));
    add(out, cat.kv("__chg__"), new Put(key).addColumn(V, V, ts, HibaseCodec.packList(was)));
  }

  /** Stamps of this region's batches in flight that record changes (stamp -> batches). */
  private final java.util.TreeMap<Long, Integer> recording = new java.util.TreeMap<>();

  /** Where this region's consumer has read the change table up to (exclusive). */
  private byte[] cursor = new byte[0];

  /** stamp(n) for a batch that records changes: in flight from the stamp on, atomically. */
  synchronized long stampRecording(int n) {
    long ts = stamp(n);
    recording.merge(ts, 1, Integer::sum);
    return ts;
  }

  /** A recording batch left flight (landed, failed or abandoned). */
  synchronized void recorded(Pending p) {
    if (p == null || !p.recording) return;
    p.recording = false;
    recording.computeIfPresent(p.ts, (k, v) -> v == 1 ? null : v - 1);
  }

  /** No record of this region's rows with a smaller stamp can land from now on: the oldest
   *  stamp in flight, or the least stamp this incarnation can hand out next (stamp()). */
  synchronized long lowMark() {
    return recording.isEmpty() ? Math.max(System.currentTimeMillis() + 1, lastStamp + 1)
        : recording.firstKey();
  }

  /** Set by wake(), cleared at each round's start: a round that found no eventual index
   *  does not stop the rounds when a write recorded a change meanwhile. */
  private volatile boolean woken;

  /** Makes sure this region's consumer runs (from its first write or its opening on). */
  synchronized void wake() {
    woken = true;
    if (task != null || closing) return;
    task = POOL.scheduleWithFixedDelay(this::rounds, PERIOD_MS, PERIOD_MS, TimeUnit.MILLISECONDS);
  }

  /** The table keeps no eventual index (any more): no more rounds until a write records a
   *  change again (wake). */
  private synchronized void rest() {
    if (woken) return;
    if (task != null) task.cancel(false);
    task = null;
  }

  /** The region is closing: no new round (one running finishes; what it leaves, the next
   *  home of the region applies). */
  synchronized void sleep() {
    closing = true;
    if (task != null) task.cancel(false);
  }

  private void rounds() {
    woken = false;
    try {
      int read;
      do {
        if (closing || env.getRegion().isClosing() || env.getRegion().isClosed()) return;
        read = consume();
      } while (read == ROUND);  // a full round: more are waiting
      if (read < 0) rest();
    } catch (IOException | RuntimeException e) {
      LOG.warn("hibase: region {}: applying recorded changes failed (tried again): {}",
          env.getRegionInfo().getEncodedName(), e.toString());
    }
  }

  /** One round: up to ROUND records of this region's rows applied (records of other
   *  regions' rows are passed over); how many records were read (-1: the table keeps no
   *  eventual index, so its records, if any, wait for one to be made again). */
  int consume() throws IOException {
    Catalog cat = catalog;
    if (cat == null) return -1;
    List<Spec> eventual = new ArrayList<>();
    for (Spec s : specs(cat)) if (s.eventual) eventual.add(s);
    if (eventual.isEmpty()) return -1;
    byte[] low = ByteBuffer.allocate(8).putLong(lowMark()).array();
    Scan scan = new Scan().addColumn(V, V).setCaching(ROUND).withStartRow(cursor)
        .withStopRow(low);
    List<byte[]> keys = new ArrayList<>();
    Map<ByteBuffer, List<List<?>>> byRow = new LinkedHashMap<>();
    TableName chg = cat.kv("__chg__");
    org.apache.hadoop.hbase.client.RegionInfo me = env.getRegionInfo();
    int read = 0;
    byte[] next = low;
    try (Table t = env.getConnection().getTable(chg); ResultScanner rs = t.getScanner(scan)) {
      for (Result r : rs) {
        if (read == ROUND) {
          next = r.getRow();
          break;
        }
        read++;
        List<?> rec = (List<?>) HibaseCodec.unpack(r.getValue(V, V));
        byte[] row = (byte[]) rec.get(0);
        if (!me.containsRow(row)) continue;  // another region's row: its consumer's
        keys.add(r.getRow());
        byRow.computeIfAbsent(ByteBuffer.wrap(row), k -> new ArrayList<>()).add(rec);
      }
    } catch (TableNotFoundException e) {
      return 0;  // the table (or its last eventual index) was dropped
    }
    if (keys.isEmpty()) {
      cursor = next;
      return read;
    }
    List<byte[]> rows = new ArrayList<>();
    for (ByteBuffer r : byRow.keySet()) rows.add(r.array());
    Object token = new Object();
    synchronized (flights) {  // a rebuild's drain waits for this round as for a write batch
      Flight f = flight;
      f.n++;
      flying.put(token, f);
    }
    List<ReentrantLock> held = lock(rows);
    try {
      Map<ByteBuffer, State> now = readMany(rows, eventual, false);
      long ts = stamp(1);
      Map<TableName, List<Row>> out = new LinkedHashMap<>();
      for (Map.Entry<ByteBuffer, List<List<?>>> e : byRow.entrySet()) {
        byte[] row = e.getKey().array();
        State st = now.get(e.getKey());
        for (Spec s : eventual) {
          byte[] key = valueKey(s, st, row);
          byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
          TableName idx = cat.kv(s.local ? "__lidx__" : "__idx__");
          for (List<?> was : e.getValue()) {
            for (int i = 1; i + 1 < was.size(); i += 2) {
              byte[] old = (byte[]) was.get(i + 1);
              if (old != null && Arrays.equals((byte[]) was.get(i), s.alias)
                  && !Arrays.equals(old, key)) {
                add(out, idx, new Delete(cat(prefix, old, cat.user(row))).addColumns(V, V, ts));
              }
            }
          }
          if (key != null) add(out, idx, new Put(cat(prefix, key, cat.user(row))).addColumn(V, V, ts,
              cat(new byte[] {VERIFIED}, HibaseCodec.packList(covered(s, st)))));
        }
      }
      send(out);
      bumpVersion(cat);  // cached sets of these indexes are older than the entries now
      Map<TableName, List<Row>> done = new LinkedHashMap<>();
      for (byte[] k : keys) add(done, chg, new Delete(k).addColumns(V, V, ts));
      send(done);
      cursor = next;
    } finally {
      unlock(held);
      land(token);
    }
    return read;
  }
}
