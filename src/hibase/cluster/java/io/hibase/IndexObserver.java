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
package io.hibase;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CoprocessorEnvironment;
import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessor;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.RegionObserver;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.filter.BinaryPrefixComparator;
import org.apache.hadoop.hbase.filter.ColumnPrefixFilter;
import org.apache.hadoop.hbase.filter.MultiRowRangeFilter;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;
import org.apache.hadoop.hbase.regionserver.MiniBatchOperationInProgress;
import org.apache.hadoop.hbase.regionserver.Region;
import org.apache.hadoop.hbase.regionserver.RegionScanner;
import org.apache.hadoop.hbase.regionserver.OperationStatus;
import org.apache.hbase.thirdparty.com.google.gson.JsonArray;
import org.apache.hbase.thirdparty.com.google.gson.JsonElement;
import org.apache.hbase.thirdparty.com.google.gson.JsonObject;
import org.apache.hbase.thirdparty.com.google.gson.JsonParser;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class IndexObserver implements RegionCoprocessor, RegionObserver {
  private static final Logger LOG = LoggerFactory.getLogger(IndexObserver.class);
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

  private RegionCoprocessorEnvironment env;
  private long leaseMs;
  private final ReentrantLock[] stripes = new ReentrantLock[1024];
  private final Map<Object, Pending> pending =
      Collections.synchronizedMap(new IdentityHashMap<>());
  /** Mini-batches of this region in flight (from preBatchMutate to
   *  postBatchMutateIndispensably), counted per drain epoch: a drain starts a new epoch and
   *  waits for the old one to empty. Every batch of a hibase table counts, also those that
   *  keep no index (the index stale): their data lands after preBatchMutate. */
  static final class Flight { int n; }
  private final Object flights = new Object();
  private Flight flight = new Flight();
  private final Map<Object, Flight> flying =
      Collections.synchronizedMap(new IdentityHashMap<>());
  private volatile Catalog catalog;
  private volatile boolean notHibase;
  private long lastMiss;  // when the last lookup found no catalog (0: never)
  private long lastStamp;  // index cells: strictly increasing timestamps (see stamp())
  // value counts: this region's own count cell (a count is the sum of its row's cells, one
  // per writer), named <encoded region name><incarnation><generation> (newCell), so a
  // later incarnation of the region knows the cells an earlier one left (recover())
  private byte[] regionTag;
  private final byte[] incarnation = new byte[8];
  private int generation;
  private volatile CountCell cell;
  /** Set when the region replays edits a dead server's WAL held (preReplayWALs): an earlier
   *  incarnation died, maybe between a batch's phases, and postOpen recovers what it left. */
  private volatile boolean replayed;
  /** Set when the incarnation that had the region before this one did not close cleanly
   *  (its inc/<region> row has no closed mark of its own): recover as after a replay. */
  private volatile boolean uncleanBefore;
  /** Set when this incarnation left unverified entries or pending counts it will not finish
   *  (a write after the data failed): it closes without its closed mark, so the next one
   *  recovers them. */
  private volatile boolean leftovers;

  static byte[] b(String s) { return s.getBytes(StandardCharsets.ISO_8859_1); }

  @Override
  public void start(CoprocessorEnvironment e) throws IOException {
    env = (RegionCoprocessorEnvironment) e;
    leaseMs = env.getConfiguration().getLong("hibase.index.catalog.lease.ms", 0);
    for (int i = 0; i < stripes.length; i++) stripes[i] = new ReentrantLock();
    regionTag = b(env.getRegionInfo().getEncodedName());
    new java.security.SecureRandom().nextBytes(incarnation);
    newCell();
  }

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
  private void newCell() {
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

  @Override
  public Optional<RegionObserver> getRegionObserver() { return Optional.of(this); }

  // -- the catalog: index definitions from hibase_meta ----------------------------------------

  static final class Spec {
    String name;
    byte[] alias, nullAlias;
    byte[][] columns, covering;
    HibaseCodec.Type[] types;
    boolean local, building;
  }

  static final class Catalog {
    final TableName meta;
    final String table;   // hibase's name of the table
    final String prefix;  // the HBase name of hibase table X is prefix + X
    byte[] gen = new byte[0];
    long checkedAt;  // when gen was last read (0: never)
    List<Spec> specs = new ArrayList<>();
    byte[][] layout;  // local indexes: the recorded region starts (sorted)

    Catalog(TableName meta, String table, String prefix) {
      this.meta = meta;
      this.table = table;
      this.prefix = prefix;
    }

    TableName kv(String name) { return TableName.valueOf(prefix + "hibase_kv" + name + table); }
  }

  /** The hibase catalog this region's table belongs to, found on first use: the table named
   *  X is hibase's table X of hibase_meta, or with a store prefix P (URL prefix=P) the table
   *  P_X of P_hibase_meta. Null for other tables (asked again at most every 2 s). */
  private Catalog catalog(boolean force) throws IOException {
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
          if (!t.exists(new Get(b("table/" + c[1])))) continue;
          Catalog found = new Catalog(meta, c[1], c[0]);
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
  private List<Spec> specs(Catalog cat) throws IOException {
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

  /** IndexSpec.to_json's fields; null unless the index is kept here (upkeep server) and not
   *  stale (a bulk load suspended it). */
  static Spec parse(byte[] raw) {
    JsonObject o = JsonParser.parseString(new String(raw, StandardCharsets.UTF_8))
        .getAsJsonObject();
    JsonElement up = o.get("upkeep");
    if (up == null || up.isJsonNull() || !up.getAsString().equals("server")) return null;
    String state = o.get("state").getAsString();
    if (state.equals("stale")) return null;
    Spec s = new Spec();
    s.name = o.get("name").getAsString();
    s.alias = HibaseCodec.unhex(o.get("alias").getAsString());
    JsonElement na = o.get("null_alias");
    s.nullAlias = na == null || na.isJsonNull() ? null : HibaseCodec.unhex(na.getAsString());
    s.columns = strings(o.getAsJsonArray("columns"));
    s.covering = strings(o.getAsJsonArray("covering"));
    JsonArray types = o.getAsJsonArray("types");
    s.types = new HibaseCodec.Type[types.size()];
    for (int i = 0; i < s.types.length; i++) {
      try {
        s.types[i] = HibaseCodec.Type.parse(types.get(i).getAsString());
      } catch (IllegalArgumentException e) {
        // a type this jar cannot key (a newer hibase made the index): keeping the index with
        // wrong or missing entries would give wrong answers, skipping it would leave it stale
        // unnoticed; so the table's writes fail (preBatchMutate: DoNotRetryIOException) until
        // the jar is updated or the index dropped
        LOG.error("hibase index {}: {}; writes refused", s.name, e.getMessage());
        throw new IllegalStateException("hibase index " + s.name + ": " + e.getMessage()
            + "; update the coprocessor jar (hibase cluster coprocessor)", e);
      }
    }
    s.local = o.get("local").getAsBoolean();
    s.building = state.equals("building");
    return s;
  }

  static byte[][] strings(JsonArray a) {
    byte[][] out = new byte[a.size()][];
    for (int i = 0; i < out.length; i++) out[i] = a.get(i).getAsString().getBytes(StandardCharsets.UTF_8);
    return out;
  }

  // -- row state ------------------------------------------------------------------------------

  /** A row's cells: column (b"f:q") -> versions (timestamp -> value, newest first). */
  static final class State {
    final Map<ByteBuffer, TreeMap<Long, byte[]>> cells = new HashMap<>();

    State copy() {
      State s = new State();
      for (Map.Entry<ByteBuffer, TreeMap<Long, byte[]>> e : cells.entrySet()) {
        s.cells.put(e.getKey(), new TreeMap<>(e.getValue()));
      }
      return s;
    }

    byte[] latest(byte[] col) {
      TreeMap<Long, byte[]> v = cells.get(ByteBuffer.wrap(col));
      return v == null || v.isEmpty() ? null : v.lastEntry().getValue();
    }

    boolean exists() {
      for (TreeMap<Long, byte[]> v : cells.values()) if (!v.isEmpty()) return true;
      return false;
    }
  }

  static byte[] column(byte[] fam, byte[] qual) {
    byte[] out = new byte[fam.length + 1 + qual.length];
    System.arraycopy(fam, 0, out, 0, fam.length);
    out[fam.length] = ':';
    System.arraycopy(qual, 0, out, fam.length + 1, qual.length);
    return out;
  }

  static boolean inFamily(ByteBuffer col, byte[] fam) {
    if (col.remaining() <= fam.length || col.get(fam.length) != ':') return false;
    for (int i = 0; i < fam.length; i++) if (col.get(i) != fam[i]) return false;
    return true;
  }

  /** Apply one row's mutations of this mini-batch to its stored state as HBase does with
   *  its default delete-marker behaviour: a marker hides every version at or below its
   *  timestamp, written before or after it (so puts first, then markers). */
  static State apply(State before, List<Mutation> ms, long now) {
    State s = before.copy();
    for (Mutation m : ms) {
      if (m instanceof Increment || m instanceof Append) {
        // HBase computes the new cell from the newest stored one under the same row lock
        // (8-byte big-endian sum; concatenation): the same here, from the state read
        for (List<Cell> cells : m.getFamilyCellMap().values()) {
          for (Cell c : cells) {
            byte[] col = column(CellUtil.cloneFamily(c), CellUtil.cloneQualifier(c));
            byte[] old = s.latest(col);
            byte[] delta = CellUtil.cloneValue(c);
            byte[] value;
            if (m instanceof Increment) {
              long base = old == null || old.length != 8 ? 0 : ByteBuffer.wrap(old).getLong();
              value = ByteBuffer.allocate(8).putLong(base + ByteBuffer.wrap(delta).getLong())
                  .array();
            } else {
              value = old == null ? delta : cat(old, delta);
            }
            TreeMap<Long, byte[]> versions =
                s.cells.computeIfAbsent(ByteBuffer.wrap(col), k -> new TreeMap<>());
            long ts = versions.isEmpty() ? now : Math.max(now, versions.lastKey() + 1);
            versions.put(ts, value);
          }
        }
        continue;
      }
      if (!(m instanceof Put)) continue;
      for (List<Cell> cells : m.getFamilyCellMap().values()) {
        for (Cell c : cells) {
          long ts = c.getTimestamp() == HConstants.LATEST_TIMESTAMP ? now : c.getTimestamp();
          s.cells.computeIfAbsent(ByteBuffer.wrap(column(CellUtil.cloneFamily(c),
              CellUtil.cloneQualifier(c))), k -> new TreeMap<>()).put(ts, CellUtil.cloneValue(c));
        }
      }
    }
    for (Mutation m : ms) {
      if (!(m instanceof Delete)) continue;
      NavigableMap<byte[], List<Cell>> fams = m.getFamilyCellMap();
      if (fams.isEmpty()) {  // a whole-row delete HBase has not expanded into families
        long upto = m.getTimestamp() == HConstants.LATEST_TIMESTAMP ? Long.MAX_VALUE : m.getTimestamp();
        for (TreeMap<Long, byte[]> v : s.cells.values()) v.headMap(upto, true).clear();
        continue;
      }
      for (List<Cell> cells : fams.values()) {
        for (Cell c : cells) {
          long ts = c.getTimestamp();
          byte[] fam = CellUtil.cloneFamily(c);
          switch (c.getType()) {
            case DeleteFamily:
              for (Map.Entry<ByteBuffer, TreeMap<Long, byte[]>> e : s.cells.entrySet()) {
                if (inFamily(e.getKey(), fam)) e.getValue().headMap(ts, true).clear();
              }
              break;
            case DeleteFamilyVersion:
              for (Map.Entry<ByteBuffer, TreeMap<Long, byte[]>> e : s.cells.entrySet()) {
                if (inFamily(e.getKey(), fam)) e.getValue().remove(ts);
              }
              break;
            case DeleteColumn: {
              TreeMap<Long, byte[]> v = s.cells.get(ByteBuffer.wrap(column(fam, CellUtil.cloneQualifier(c))));
              if (v != null) v.headMap(ts, true).clear();
              break;
            }
            case Delete: {
              TreeMap<Long, byte[]> v = s.cells.get(ByteBuffer.wrap(column(fam, CellUtil.cloneQualifier(c))));
              if (v != null && !v.isEmpty()) {
                if (ts == HConstants.LATEST_TIMESTAMP) v.remove(v.lastKey()); else v.remove(ts);
              }
              break;
            }
            default:
              break;
          }
        }
      }
    }
    return s;
  }

  /** Whether a point delete (one version) may uncover an older version: then every version is
   *  read, else the newest only. */
  static boolean pointDeletes(List<Mutation> ms) {
    for (Mutation m : ms) {
      if (!(m instanceof Delete)) continue;
      for (List<Cell> cells : m.getFamilyCellMap().values()) {
        for (Cell c : cells) {
          if (c.getType() == Cell.Type.Delete || c.getType() == Cell.Type.DeleteFamilyVersion) return true;
        }
      }
    }
    return false;
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

  /** The (family, qualifier) pairs the indexes read; none (the whole row) when one keeps a
   *  NULL list: does any cell exist? */
  static List<byte[][]> columnsRead(List<Spec> specs) {
    List<byte[][]> cols = new ArrayList<>();
    for (Spec s : specs) if (s.nullAlias != null) return cols;
    for (Spec s : specs) {
      for (byte[][] cs : new byte[][][] {s.columns, s.covering}) {
        for (byte[] col : cs) {
          int i = indexOf(col, (byte) ':');
          cols.add(new byte[][] {Arrays.copyOfRange(col, 0, i),
                                 Arrays.copyOfRange(col, i + 1, col.length)});
        }
      }
    }
    return cols;
  }

  static void addCells(State s, List<Cell> cells) {
    for (Cell c : cells) {
      s.cells.computeIfAbsent(ByteBuffer.wrap(column(CellUtil.cloneFamily(c),
          CellUtil.cloneQualifier(c))), k -> new TreeMap<>()).put(c.getTimestamp(),
          CellUtil.cloneValue(c));
    }
  }

  static int indexOf(byte[] a, byte x) {
    for (int i = 0; i < a.length; i++) if (a[i] == x) return i;
    return -1;
  }

  /** The value key of the row's entry in one index (null: none), from its newest values. */
  byte[] valueKey(Spec s, State st, byte[] row) {
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

  static List<byte[]> covered(Spec s, State st) {
    List<byte[]> out = new ArrayList<>(s.covering.length);
    for (byte[] c : s.covering) out.add(st.latest(c));
    return out;
  }

  static boolean sameCovered(List<byte[]> a, List<byte[]> b) {
    for (int i = 0; i < a.size(); i++) if (!Arrays.equals(a.get(i), b.get(i))) return false;
    return true;
  }

  static byte[] cat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) n += p.length;
    byte[] out = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
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

  /** Strictly increasing timestamps for index cells, `n` of them (the first returned): an
   *  entry key belongs to one data row, written only under that row's lock here, so a delete
   *  of an entry never hides a later put of the same entry in the same millisecond (HBase's
   *  delete markers hide every put at or below their timestamp, later ones too). Taken a few
   *  per mini-batch (never per cell), so they stay within a millisecond or two of the clock:
   *  a client's delete (clear, repair: server time) hides what was written before it. One
   *  millisecond ahead of the clock, so a client's delete in the same millisecond as a later
   *  write here does not hide it. */
  private synchronized long stamp(int n) {
    long now = System.currentTimeMillis() + 1;
    long first = Math.max(now, lastStamp + 1);
    lastStamp = first + n - 1;
    return first;
  }

  private List<ReentrantLock> lock(Iterable<byte[]> rows) throws IOException {
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

  private static void unlock(List<ReentrantLock> held) {
    for (int i = held.size() - 1; i >= 0; i--) held.get(i).unlock();
  }

  static void add(Map<TableName, List<Row>> out, TableName t, Row r) {
    out.computeIfAbsent(t, k -> new ArrayList<>()).add(r);
  }

  /** Write index rows: straight into the index table's regions this region server hosts
   *  (Region.batchMutate: no client, no protobuf, no RPC handler), the rest through the
   *  region server's connection (also when a local region refuses: closing, too busy). */
  private void send(Map<TableName, List<Row>> writes) throws IOException {
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
      Map<ByteBuffer, State> states = byRow.isEmpty() ? Collections.emptyMap()
          : readMany(written, specs, allVersions);
      long ts = stamp(2);  // phase 1 writes at ts, phase 3 at ts + 1
      p.ts = ts;
      p.specs = specs;
      for (Map.Entry<ByteBuffer, List<Mutation>> e : byRow.entrySet()) {
        byte[] row = e.getKey().array();
        State before = states.get(e.getKey());
        State after = apply(before, e.getValue(), now);
        for (Spec s : specs) change(cat, s, row, before, after, ts, phase1, p.plans, p.deltas);
      }
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
      pending.remove(mb);
      land(mb);
      throw e;
    } catch (RuntimeException e) {  // never abort the region server: fail the batch
      abandon(p);
      pending.remove(mb);
      land(mb);
      LOG.error("hibase index upkeep failed", e);
      throw new DoNotRetryIOException("hibase index upkeep failed: " + e, e);
    } finally {
      if (held != null) unlock(held);
    }
  }

  /** preBatchMutate failed: the batch will not land, so the counts it began are taken back
   *  (pending no more; if that fails too, the cell is left to recovery). */
  private void abandon(Pending p) {
    if (p == null || !p.begun) return;
    takeBack(p.cell, p.deltas, Collections.emptyMap());
  }

  /** Counts begun whose writes did not land, taken back, but for `kept` (of writes known to
   *  have landed), settled; if that fails too, the cell is left to recovery. */
  private void takeBack(CountCell into, Map<TableName, Map<ByteBuffer, long[]>> deltas,
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
  private void leaveToRecovery() {
    leftovers = true;
    newCell();
  }

  /** The writes one row's change in one index makes before the data (phase 1): every
   *  touched entry written unverified (0x00 + msgpack([rowkey])), the counts that grow
   *  added (begun); the plan for phase 3 (finish(): the new entry verified, the old one
   *  deleted, the counts that shrink taken, all from the row as HBase reads it after the
   *  write). While the index is building, entries of rows the build has not reached yet do
   *  not exist: the old entry is looked up before it is marked and its count taken. A plan
   *  is kept also when the prediction is "no change": HBase may still read the row
   *  otherwise (a put hidden by a delete marker: the prediction is only the mutations). */
  private void change(Catalog cat, Spec s, byte[] row, State before, State after, long ts,
                      Map<TableName, List<Row>> phase1, List<Plan> plans,
                      Map<TableName, Map<ByteBuffer, long[]>> deltas) throws IOException {
    byte[] oldKey = valueKey(s, before, row);
    byte[] newKey = valueKey(s, after, row);
    List<byte[]> newCov = newKey == null ? null : covered(s, after);
    boolean same = oldKey == null ? newKey == null : Arrays.equals(oldKey, newKey);
    byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
    TableName idx = cat.kv(s.local ? "__lidx__" : "__idx__");
    if (same && (newKey == null || sameCovered(newCov, covered(s, before)))) {
      // predicted unchanged: nothing before the data; phase 3 checks the row as read
      plans.add(new Plan(row, s, idx, prefix, oldKey, oldKey != null, oldKey,
          oldKey == null ? null : covered(s, before), false));
      return;
    }
    byte[] unverified = cat(new byte[] {UNVERIFIED},
        HibaseCodec.packList(Collections.singletonList(row)));
    boolean oldExists = oldKey != null;
    if (s.building && oldKey != null) {
      try (Table t = env.getConnection().getTable(idx)) {
        oldExists = t.exists(new Get(cat(prefix, oldKey, row)).addColumn(V, V));
      }
    }
    // while building, an old entry the build has not written yet is not marked: an
    // unverified entry the build finds is then always one whose count was taken
    if (oldExists && !same) add(phase1, idx, new Put(cat(prefix, oldKey, row))
        .addColumn(V, V, ts, unverified));
    if (newKey != null) add(phase1, idx, new Put(cat(prefix, newKey, row))
        .addColumn(V, V, ts, unverified));
    plans.add(new Plan(row, s, idx, prefix, oldKey, oldExists, newKey, newCov, true));
    deltas(deltas, idx, prefix, oldKey, oldExists, newKey);
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

  /** Phase 3 (after the data, the rows' stripe locks still held, so no other write of these
   *  rows lands meanwhile): each row is read as HBase's Get reads it now, and each index
   *  shows that, whatever the mutations said: a put hidden by an older delete marker at or
   *  above its timestamp (a delete and a put in the same millisecond), a put with an old
   *  explicit timestamp, an increment or append. Where the row shows the prediction, the
   *  predicted entry is written verified and the old one deleted; where it does not, the
   *  entry the row shows is written verified, the old and the predicted ones deleted, and the
   *  counts land with the row's true change instead of the predicted one. Adds the entry
   *  writes to `out`; returns the counts' landed deltas. */
  private Map<TableName, Map<ByteBuffer, long[]>> finish(Pending p, Map<TableName, List<Row>> out)
      throws IOException {
    Map<TableName, Map<ByteBuffer, long[]>> landed = new LinkedHashMap<>();
    if (p.plans.isEmpty()) return landed;
    List<byte[]> rows = new ArrayList<>();
    java.util.Set<ByteBuffer> seen = new java.util.HashSet<>();
    for (Plan pl : p.plans) if (seen.add(ByteBuffer.wrap(pl.row))) rows.add(pl.row);
    Map<ByteBuffer, State> now = readMany(rows, p.specs, false);
    long ts = p.ts + 1;
    for (Plan pl : p.plans) {
      State st = now.get(ByteBuffer.wrap(pl.row));
      byte[] key = valueKey(pl.spec, st, pl.row);
      List<byte[]> cov = key == null ? null : covered(pl.spec, st);
      boolean asPredicted = key == null ? pl.newKey == null
          : Arrays.equals(key, pl.newKey) && sameCovered(cov, pl.newCov);
      boolean predictedSame = Arrays.equals(pl.oldKey, pl.newKey);
      if (asPredicted) {
        if (!pl.changed) continue;  // unchanged, as predicted: nothing was marked
        if (pl.newKey != null) add(out, pl.idx, new Put(cat(pl.prefix, pl.newKey, pl.row))
            .addColumn(V, V, ts, cat(new byte[] {VERIFIED}, HibaseCodec.packList(pl.newCov))));
        if (pl.oldExists && !predictedSame) add(out, pl.idx,
            new Delete(cat(pl.prefix, pl.oldKey, pl.row)).addColumns(V, V, ts));
        deltas(landed, pl.idx, pl.prefix, pl.oldKey, pl.oldExists, pl.newKey);
        continue;
      }
      // the row reads otherwise than the mutations said: show what it reads
      boolean oldExists = pl.oldExists;
      if (!pl.changed && pl.spec.building && pl.oldKey != null) {
        // not looked up before (no change predicted): the build may not have written it
        try (Table t = env.getConnection().getTable(pl.idx)) {
          oldExists = t.exists(new Get(cat(pl.prefix, pl.oldKey, pl.row)).addColumn(V, V));
        }
      }
      if (key != null) add(out, pl.idx, new Put(cat(pl.prefix, key, pl.row))
          .addColumn(V, V, ts, cat(new byte[] {VERIFIED}, HibaseCodec.packList(cov))));
      if (oldExists && !Arrays.equals(pl.oldKey, key)) add(out, pl.idx,
          new Delete(cat(pl.prefix, pl.oldKey, pl.row)).addColumns(V, V, ts));
      if (pl.changed && pl.newKey != null && !Arrays.equals(pl.newKey, key)
          && !(oldExists && Arrays.equals(pl.newKey, pl.oldKey))) {
        add(out, pl.idx, new Delete(cat(pl.prefix, pl.newKey, pl.row)).addColumns(V, V, ts));
      }
      deltas(landed, pl.idx, pl.prefix, pl.oldKey, oldExists, key);
    }
    return landed;
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
  private void counts(CountCell into, Map<TableName, Map<ByteBuffer, long[]>> deltas,
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
  private void land(CountCell into, Map<TableName, Map<ByteBuffer, long[]>> begun,
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
  private void rebuild(Catalog cat, Map<ByteBuffer, List<Spec>> requests) throws IOException {
    long ts = stamp(1);
    List<Wanted> wanted = new ArrayList<>();
    for (Map.Entry<ByteBuffer, List<Spec>> e : requests.entrySet()) {
      byte[] row = e.getKey().array();
      State st = read(row, e.getValue(), false);
      for (Spec s : e.getValue()) {
        byte[] key = valueKey(s, st, row);
        if (key == null) continue;
        byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
        byte[] k = cat(prefix, key, row);
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
  private byte[][] stored(List<Wanted> entries) throws IOException {
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
        entries = !out.isEmpty();
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
        unlock(p.locks);
        land(mb);
      }
    }
  }

  /** The table's index sets changed: rewrite the catalog row ver/<table> with new random
   *  bytes, after every index write of the batch has landed and before the batch is
   *  acknowledged. Clients' hot caches store a set under the version they read before
   *  loading it and answer from it only while the row still holds that version
   *  (hibase/cache/backend.py, tags), so no reader, in any process, is answered from a set
   *  loaded before an acknowledged write. A failure here fails the batch's acknowledgement
   *  (the data landed; a retried put is idempotent): a cached set must not outlive it. */
  private void bumpVersion(Catalog cat) throws IOException {
    byte[] version = new byte[8];
    java.util.concurrent.ThreadLocalRandom.current().nextBytes(version);
    Map<TableName, List<Row>> ver = new LinkedHashMap<>();
    add(ver, cat.meta, new Put(b("ver/" + cat.table)).addColumn(M, V, version));
    send(ver);
  }

  /** A mini-batch left flight (finished, or failed in preBatchMutate). */
  private void land(Object mb) {
    Flight f = flying.remove(mb);
    if (f == null) return;
    synchronized (flights) {
      if (--f.n == 0) flights.notifyAll();
    }
  }

  /** Every mini-batch that began before this call has finished when it returns, and every
   *  later one reads the index definitions afresh (the catalog's gen row): so a batch that
   *  read an index as kept (ready, building) writes nothing of it after a rebuild's clear,
   *  and one that read it stale has landed its data before the build reads rows. Without
   *  it a batch in flight across the clear (the client waits a catalog lease, 0 in the
   *  tests, and the coprocessor reads the definitions once per batch, at its start) put its
   *  count cell's remembered totals back after the clear had offset them (issue 37 item 5:
   *  bad_counts after a build racing plain writes). */
  private void drain(Catalog cat) throws IOException {
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

  /** Until when closing regions of this server skip their closed mark, per catalog (its
   *  hibase_meta did not answer: dropped, or its server shutting down). */
  private static final Map<TableName, Long> metaAwayUntil =
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
  private int resolveEntries(Catalog cat, TableName idx, List<Spec> specs) throws IOException {
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
          byte[] row = (byte[]) items.get(0);
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
            byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
            byte[] vk = valueKey(s, st, row);
            if (vk != null && Arrays.equals(cat(prefix, vk, row), key)) {
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

  static boolean startsWith(byte[] a, byte[] prefix) {
    return a.length >= prefix.length
        && Arrays.equals(a, 0, prefix.length, prefix, 0, prefix.length);
  }

  /** Value keys whose count cells include one of an earlier incarnation of this region left
   *  pending. */
  private List<byte[]> pendingKeys(TableName idx) throws IOException {
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
  private boolean settle(Catalog cat, TableName idx, List<Spec> specs, byte[] key,
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
  private boolean isDead(Catalog cat, byte[] qual, Map<String, byte[]> alive) throws IOException {
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

  static boolean same(Result a, Result b) {
    Cell[] x = a.rawCells() == null ? new Cell[0] : a.rawCells();
    Cell[] y = b.rawCells() == null ? new Cell[0] : b.rawCells();
    if (x.length != y.length) return false;
    for (int i = 0; i < x.length; i++) {
      // equals: row, family, qualifier, timestamp and type
      if (!CellUtil.equals(x[i], y[i]) || !CellUtil.matchingValue(x[i], y[i])) return false;
    }
    return true;
  }

  /** The entries value key `key` has: verified ones, and unverified ones whose row (read
   *  from whichever region holds it) has that value key. */
  private long entries(Catalog cat, Table idx, List<Spec> specs, byte[] key) throws IOException {
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
        byte[] row = Arrays.copyOfRange(entry, key.length, entry.length);
        State st = readAnywhere(data, row, specs);
        for (Spec s : specs) {
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
  private State readAnywhere(Table data, byte[] row, List<Spec> specs) throws IOException {
    if (env.getRegionInfo().containsRow(row)) return read(row, specs, false);
    Get g = new Get(row);
    for (byte[][] c : columnsRead(specs)) g.addColumn(c[0], c[1]);
    State st = new State();
    Result r = data.get(g);
    if (r.rawCells() != null) addCells(st, Arrays.asList(r.rawCells()));
    return st;
  }

  /** The first key above every key that starts with `prefix`. */
  static byte[] successor(byte[] prefix) {
    byte[] out = prefix.clone();
    for (int i = out.length - 1; i >= 0; i--) {
      if (out[i] != (byte) 0xff) {
        out[i]++;
        return Arrays.copyOf(out, i + 1);
      }
    }
    return HConstants.EMPTY_END_ROW;
  }
}
