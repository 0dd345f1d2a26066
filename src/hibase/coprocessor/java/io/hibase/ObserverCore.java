// The observer's region state and its reads: the catalog of index definitions (cached per
// region), the rows' stored states, stripe locks, index-cell timestamps and index writes.
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
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.filter.MultiRowRangeFilter;
import org.apache.hadoop.hbase.regionserver.Region;
import org.apache.hadoop.hbase.regionserver.RegionScanner;
import org.apache.hadoop.hbase.regionserver.OperationStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

abstract class ObserverCore {

  static final Logger LOG = LoggerFactory.getLogger(IndexObserver.class);

  /** What the marker row copro/<table> in hibase_meta holds: the protocol this jar speaks. */
  public static final int VERSION = 1;

  /** A mutation carrying this attribute is not applied: the row's entries of the index whose
   *  alias (hex) is the value are (re)written from the row as stored, under the row lock
   *  (server-side builds: hibase's build sends one per existing row). */
  public static final String REINDEX = "hibase.reindex";

  public static final String PROBE = "hibase.probe";

  /** A get carrying this attribute makes its region run recover() now, as after a dead
   *  server's WAL replay (for leftovers of a crash that left no edits to replay). */
  public static final String RECOVER = "hibase.recover";

  /** A get carrying this attribute returns once every mini-batch that began in this region
   *  before it has finished (postBatchMutateIndispensably), and every later one reads the
   *  index definitions afresh: a rebuild drains the table's regions after making the index
   *  stale (before it clears it) and after making it building (before it reads rows). */
  public static final String DRAIN = "hibase.drain";

  /** How long a drain waits for the batches in flight. */
  static final long DRAIN_MS = 30_000;

  static final byte[] M = b("m"), V = b("v"), C = b("c"), CLOSED = b("closed");

  static final byte VERIFIED = 0x01, UNVERIFIED = 0x00;

  /** Counts this region remembers for its own cell before it starts a new one. */
  static final int REMEMBERED = 100_000;

  RegionCoprocessorEnvironment env;

  long leaseMs;

  final ReentrantLock[] stripes = new ReentrantLock[1024];


  /** Mini-batches of this region in flight (from preBatchMutate to
   *  postBatchMutateIndispensably), counted per drain epoch: a drain starts a new epoch and
   *  waits for the old one to empty. Every batch of a hibase table counts, also those that
   *  keep no index (the index stale): their data lands after preBatchMutate. */
  static final class Flight { int n; }

  final Object flights = new Object();

  Flight flight = new Flight();

  final Map<Object, Flight> flying =
      Collections.synchronizedMap(new IdentityHashMap<>());

  volatile Catalog catalog;

  volatile boolean notHibase;

  long lastMiss;  // when the last lookup found no catalog (0: never)
  long lastStamp;  // index cells: strictly increasing timestamps (see stamp())

  // value counts: this region's own count cell (a count is the sum of its row's cells, one
  // per writer), named <encoded region name><incarnation><generation> (newCell), so a
  // later incarnation of the region knows the cells an earlier one left (recover())
  byte[] regionTag;

  final byte[] incarnation = new byte[8];

  int generation;

  /** Set when the region replays edits a dead server's WAL held (preReplayWALs): an earlier
   *  incarnation died, maybe between a batch's phases, and postOpen recovers what it left. */
  volatile boolean replayed;

  /** Set when the incarnation that had the region before this one did not close cleanly
   *  (its inc/<region> row has no closed mark of its own): recover as after a replay. */
  volatile boolean uncleanBefore;

  /** Set when this incarnation left unverified entries or pending counts it will not finish
   *  (a write after the data failed): it closes without its closed mark, so the next one
   *  recovers them. */
  volatile boolean leftovers;

  /** The hibase catalog this region's table belongs to, found on first use: the table named
   *  X is hibase's table X of hibase_meta, or with a store prefix P (URL prefix=P) the table
   *  P_X of P_hibase_meta. Null for other tables (asked again at most every 2 s). */
  Catalog catalog(boolean force) throws IOException {
    Catalog cat = catalog;
    if (cat != null || notHibase) return cat;
    synchronized (this) {
      if (catalog != null) return catalog;
      long now = System.currentTimeMillis();
      if (!force && now - lastMiss < 2000) return null;
      TableName tn = env.getRegionInfo().getTable();
      String name = tn.getQualifierAsString();
      if (!tn.getNamespaceAsString().equals("default") || name.contains("hibase_meta")
          || name.contains("hibase_kv")) {
        notHibase = true;
        return null;
      }
      List<String[]> candidates = new ArrayList<>();
      candidates.add(new String[] {"", name});
      for (int i = name.indexOf('_'); i > 0; i = name.indexOf('_', i + 1)) {
        candidates.add(new String[] {name.substring(0, i + 1), name.substring(i + 1)});
      }
      for (String[] c : candidates) {
        TableName meta = TableName.valueOf(c[0] + "hibase_meta");
        try (Table t = env.getConnection().getTable(meta)) {
          Result schema = t.get(new Get(b("table/" + c[1])).addColumn(M, V));
          if (schema.isEmpty()) continue;
          Catalog found = new Catalog(meta, c[1], c[0]);
          found.saltBuckets = saltBuckets(schema.getValue(M, V));
          // tell clients this table's indexes may be kept here (hibase reads the marker
          // when it creates an index: store/hbase/store.py server_upkeep)
          t.put(new Put(b("copro/" + c[1])).addColumn(M, V, b("{\"version\": " + VERSION
              + ", \"region\": \"" + env.getRegionInfo().getEncodedName() + "\"}")));
          // this incarnation of the region is alive: another region's recovery takes the
          // pending count cells of earlier ones as dead (settle); the one before closed
          // cleanly when it left its closed mark (postClose)
          byte[] inc = b("inc/" + env.getRegionInfo().getEncodedName());
          Result before = t.get(new Get(inc).addColumn(M, V).addColumn(M, CLOSED));
          byte[] was = before.getValue(M, V);
          uncleanBefore = was != null && !Arrays.equals(was, before.getValue(M, CLOSED));
          t.put(new Put(inc).addColumn(M, V, incarnation));
          LOG.info("hibase: region {} is hibase table {} of {}",
              env.getRegionInfo().getEncodedName(), c[1], meta);
          catalog = found;
          return found;
        } catch (TableNotFoundException e) {
          // no such catalog
        }
      }
      lastMiss = now;
      return null;
    }
  }

  /** The catalog's server-kept indexes, re-read when the catalog's generation (row gen,
   *  rewritten by every change of an index definition) moved; checked at most once per
   *  hibase.index.catalog.lease.ms (0, the default: on every mini-batch, one local get). */
  List<Spec> specs(Catalog cat) throws IOException {
    long now = System.currentTimeMillis();
    synchronized (cat) {
      if (leaseMs > 0 && now - cat.checkedAt < leaseMs) return cat.specs;
      cat.checkedAt = now;
      try (Table t = env.getConnection().getTable(cat.meta)) {
        byte[] gen = t.get(new Get(b("gen")).addColumn(M, V)).getValue(M, V);
        if (gen == null) gen = new byte[0];
        if (Arrays.equals(gen, cat.gen)) return cat.specs;
        List<Spec> specs = new ArrayList<>();
        String from = "meta/index/" + cat.table + "/";
        Scan scan = new Scan().withStartRow(b(from)).withStopRow(b("meta/index/" + cat.table + "0"))
            .addColumn(M, V);
        boolean anyLocal = false;
        try (ResultScanner rs = t.getScanner(scan)) {
          for (Result r : rs) {
            Spec s = parse(r.getValue(M, V));
            if (s != null) {
              specs.add(s);
              anyLocal |= s.local;
            }
          }
        }
        byte[][] layout = null;
        if (anyLocal) {
          byte[] raw = t.get(new Get(b("meta/regions/" + cat.table)).addColumn(M, V))
              .getValue(M, V);
          if (raw != null) {
            List<?> pairs = (List<?>) HibaseCodec.unpack(raw);
            layout = new byte[pairs.size()][];
            for (int i = 0; i < layout.length; i++) {
              layout[i] = (byte[]) ((List<?>) pairs.get(i)).get(0);
            }
          }
        }
        if (specs.size() != cat.specs.size()) {
          LOG.info("hibase: region {} keeps {} index(es) of {}",
              env.getRegionInfo().getEncodedName(), specs.size(), cat.table);
        }
        cat.specs = specs;
        cat.layout = layout;
        cat.gen = gen;
        // an index may have been dropped (its HBase table with it) and made again: what this
        // region's count cell held is unknown now (as a Python writer's, kv.py)
        newCell();
        return specs;
      }
    }
  }

  State read(byte[] row, List<Spec> specs, boolean allVersions) throws IOException {
    return readMany(Collections.singletonList(row), specs, allVersions)
        .get(ByteBuffer.wrap(row));
  }

  /** The stored state of `rows` (the columns the indexes read; the whole row when one keeps a
   *  NULL list): one get per row for a few rows, else one scan of the region seeking from row
   *  to row (MultiRowRangeFilter), as a load's batch of new rows costs next to nothing. */
  Map<ByteBuffer, State> readMany(List<byte[]> rows, List<Spec> specs, boolean allVersions)
      throws IOException {
    List<byte[][]> cols = columnsRead(specs);
    Map<ByteBuffer, State> out = new HashMap<>();
    for (byte[] r : rows) out.put(ByteBuffer.wrap(r), new State());
    if (rows.size() <= 8) {
      for (byte[] row : rows) {
        Get g = new Get(row);
        for (byte[][] c : cols) g.addColumn(c[0], c[1]);
        if (allVersions) g.readAllVersions();
        Result r = env.getRegion().get(g);
        if (r.rawCells() != null) addCells(out.get(ByteBuffer.wrap(row)), Arrays.asList(r.rawCells()));
      }
      return out;
    }
    List<byte[]> sorted = new ArrayList<>(rows);
    sorted.sort(Arrays::compareUnsigned);
    List<MultiRowRangeFilter.RowRange> ranges = new ArrayList<>(sorted.size());
    for (byte[] r : sorted) ranges.add(new MultiRowRangeFilter.RowRange(r, true, r, true));
    Scan scan = new Scan().withStartRow(sorted.get(0))
        .withStopRow(sorted.get(sorted.size() - 1), true)
        .setFilter(new MultiRowRangeFilter(ranges));
    for (byte[][] c : cols) scan.addColumn(c[0], c[1]);
    if (allVersions) scan.readAllVersions();
    try (RegionScanner rs = env.getRegion().getScanner(scan)) {
      List<Cell> cells = new ArrayList<>();
      boolean more;
      do {
        cells.clear();
        more = rs.next(cells);
        if (!cells.isEmpty()) {
          State st = out.get(ByteBuffer.wrap(CellUtil.cloneRow(cells.get(0))));
          if (st != null) addCells(st, cells);
        }
      } while (more);
    }
    return out;
  }

  /** The value key of the row's entry in one index (null: none), from its newest values. */
  byte[] valueKey(Spec s, State st, byte[] row) {
    if (s.where != null && !s.where.holds(st)) return null;  // a partial index: not this row
    byte[][] cells = new byte[s.columns.length][];
    for (int i = 0; i < cells.length; i++) cells[i] = st.latest(s.columns[i]);
    try {
      return HibaseCodec.valueKey(s.alias, s.nullAlias, s.types, cells, st.exists());
    } catch (HibaseCodec.Malformed e) {
      // a value hibase would have refused (another client wrote it): that cell is NULL, as
      // hibase's queries and verify take it; the row's other columns keep their values
      LOG.warn("hibase index {}: row {}: a cell indexed as NULL: {}", s.name,
          HibaseCodec.hex(row), e.getMessage());
      return HibaseCodec.valueKeyLenient(s.alias, s.nullAlias, s.types, cells, st.exists());
    }
  }

  /** Local indexes: the escaped start key of the recorded layout's region holding row (the
   *  layout hibase records in meta regions/<table>; this region's own start when none). */
  byte[] localPrefix(Catalog cat, byte[] row) {
    byte[] start = env.getRegionInfo().getStartKey();
    if (cat.layout != null) {
      for (byte[] s : cat.layout) {
        if (Arrays.compareUnsigned(s, row) <= 0) start = s; else break;
      }
    }
    return HibaseCodec.escape(start);
  }

  /** Strictly increasing timestamps for index cells, `n` of them (the first returned): an
   *  entry key belongs to one data row, written only under that row's lock here, so a delete
   *  of an entry never hides a later put of the same entry in the same millisecond (HBase's
   *  delete markers hide every put at or below their timestamp, later ones too). Taken a few
   *  per mini-batch (never per cell), so they stay within a millisecond or two of the clock:
   *  a client's delete (clear, repair: server time) hides what was written before it. One
   *  millisecond ahead of the clock, so a client's delete in the same millisecond as a later
   *  write here does not hide it. */
  synchronized long stamp(int n) {
    long now = System.currentTimeMillis() + 1;
    long first = Math.max(now, lastStamp + 1);
    lastStamp = first + n - 1;
    return first;
  }

  List<ReentrantLock> lock(Iterable<byte[]> rows) throws IOException {
    TreeSet<Integer> ids = new TreeSet<>();
    for (byte[] r : rows) ids.add((Arrays.hashCode(r) & 0x7fffffff) % stripes.length);
    List<ReentrantLock> held = new ArrayList<>();
    try {
      for (int i : ids) {
        ReentrantLock l = stripes[i];
        if (!l.tryLock(60, TimeUnit.SECONDS)) throw new IOException("hibase index row lock timeout");
        held.add(l);
      }
    } catch (InterruptedException e) {
      unlock(held);
      throw new InterruptedIOException("interrupted waiting for a hibase index row lock");
    } catch (IOException e) {
      unlock(held);
      throw e;
    }
    return held;
  }

  static void unlock(List<ReentrantLock> held) {
    for (int i = held.size() - 1; i >= 0; i--) held.get(i).unlock();
  }

  static void add(Map<TableName, List<Row>> out, TableName t, Row r) {
    out.computeIfAbsent(t, k -> new ArrayList<>()).add(r);
  }

  /** Write index rows: straight into the index table's regions this region server hosts
   *  (Region.batchMutate: no client, no protobuf, no RPC handler), the rest through the
   *  region server's connection (also when a local region refuses: closing, too busy). */
  void send(Map<TableName, List<Row>> writes) throws IOException {
    for (Map.Entry<TableName, List<Row>> e : writes.entrySet()) {
      List<Row> remote = new ArrayList<>();
      List<? extends Region> local = env.getOnlineRegions().getRegions(e.getKey());
      Map<Region, List<Mutation>> byRegion = new LinkedHashMap<>();
      for (Row r : e.getValue()) {
        Region home = null;
        for (Region region : local) {
          if (region.getRegionInfo().containsRow(r.getRow())) {
            home = region;
            break;
          }
        }
        if (home == null) remote.add(r); else byRegion.computeIfAbsent(home, k -> new ArrayList<>()).add((Mutation) r);
      }
      for (Map.Entry<Region, List<Mutation>> g : byRegion.entrySet()) {
        try {
          OperationStatus[] st = g.getKey().batchMutate(g.getValue().toArray(new Mutation[0]));
          for (int i = 0; i < st.length; i++) {
            if (st[i].getOperationStatusCode() != HConstants.OperationStatusCode.SUCCESS) {
              throw new IOException("index row write failed: " + st[i].getExceptionMsg());
            }
          }
        } catch (IOException ex) {
          remote.addAll(g.getValue());  // idempotent: timestamps are fixed
        }
      }
      if (remote.isEmpty()) continue;
      try (Table t = env.getConnection().getTable(e.getKey())) {
        Object[] results = new Object[remote.size()];
        t.batch(remote, results);
      } catch (InterruptedException ie) {
        throw new InterruptedIOException("interrupted writing hibase index rows");
      }
    }
  }

  /** A salted table's buckets from its schema record (TableSchema.to_json), 0: unsalted. */
  static int saltBuckets(byte[] schema) {
    if (schema == null) return 0;
    org.apache.hbase.thirdparty.com.google.gson.JsonElement n =
        org.apache.hbase.thirdparty.com.google.gson.JsonParser.parseString(
            new String(schema, java.nio.charset.StandardCharsets.UTF_8))
        .getAsJsonObject().get("salt_buckets");
    return n == null || n.isJsonNull() ? 0 : n.getAsInt();
  }

  /** A new count cell (CountCells). */
  abstract void newCell();
}
