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
import org.apache.hadoop.hbase.filter.MultiRowRangeFilter;
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

  static final byte[] M = b("m"), V = b("v"), C = b("c");
  static final byte VERIFIED = 0x01, UNVERIFIED = 0x00;
  /** Counts this region remembers for its own cell before it starts a new one. */
  static final int REMEMBERED = 100_000;

  private RegionCoprocessorEnvironment env;
  private long leaseMs;
  private final ReentrantLock[] stripes = new ReentrantLock[1024];
  private final Map<Object, Pending> pending =
      Collections.synchronizedMap(new IdentityHashMap<>());
  private volatile Catalog catalog;
  private volatile boolean notHibase;
  private long lastMiss;  // when the last lookup found no catalog (0: never)
  private long lastStamp;  // index cells: strictly increasing timestamps (see stamp())
  // value counts: this region's own count cell (c: + 8 random bytes, as each Python writer
  // has; a count is the sum of its row's cells) and the totals it wrote there
  private byte[] countQual;
  // (count, pending): pending is the changes begun and not finished (as kv.py's cells)
  private final Map<TableName, Map<ByteBuffer, long[]>> held = new HashMap<>();

  static byte[] b(String s) { return s.getBytes(StandardCharsets.ISO_8859_1); }

  @Override
  public void start(CoprocessorEnvironment e) throws IOException {
    env = (RegionCoprocessorEnvironment) e;
    leaseMs = env.getConfiguration().getLong("hibase.index.catalog.lease.ms", 0);
    for (int i = 0; i < stripes.length; i++) stripes[i] = new ReentrantLock();
    newCell();
  }

  /** A new count cell: what the old one holds stays in the sums, never written again. On
   *  start (a region opened: what an earlier incarnation wrote is not known here), when the
   *  catalog changed, after a batch failed (its deltas are in the totals but its data did not
   *  land) and when too many totals are remembered. */
  private void newCell() {
    byte[] q = new byte[8];
    new java.security.SecureRandom().nextBytes(q);
    synchronized (held) {
      countQual = q;
      held.clear();
    }
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
      s.types[i] = HibaseCodec.Type.parse(types.get(i).getAsString());
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
    boolean whole = false;
    for (Spec s : specs) whole |= s.nullAlias != null;  // a NULL list: does any cell exist?
    List<byte[][]> cols = new ArrayList<>();
    if (!whole) {
      for (Spec s : specs) {
        for (byte[][] cs : new byte[][][] {s.columns, s.covering}) {
          for (byte[] col : cs) {
            int i = indexOf(col, (byte) ':');
            cols.add(new byte[][] {Arrays.copyOfRange(col, 0, i),
                                   Arrays.copyOfRange(col, i + 1, col.length)});
          }
        }
      }
    }
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
      // a value hibase would have refused (another client wrote it): indexed as absent
      LOG.warn("hibase index {}: row {} not indexed: {}", s.name, HibaseCodec.hex(row), e.getMessage());
      byte[][] none = new byte[cells.length][];
      try {
        return HibaseCodec.valueKey(s.alias, s.nullAlias, s.types, none, st.exists());
      } catch (HibaseCodec.Malformed never) {
        return null;
      }
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
    if (get.getAttribute(PROBE) != null) {
      try {
        catalog(true);
      } catch (RuntimeException e) {
        throw new DoNotRetryIOException("hibase probe failed: " + e, e);
      }
    }
  }

  // -- the write protocol ---------------------------------------------------------------------

  /** What preBatchMutate computed, for postBatchMutateIndispensably: phase 3 and the locks. */
  static final class Pending {
    final Map<TableName, List<Row>> phase3 = new LinkedHashMap<>();
    final List<ReentrantLock> locks = new ArrayList<>();
    Catalog cat;
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
    try {
      Catalog cat = catalog(false);
      if (cat == null) return;
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
      Pending p = new Pending();
      p.cat = cat;
      Map<TableName, List<Row>> phase1 = new LinkedHashMap<>();
      long now = System.currentTimeMillis();
      Map<TableName, Map<ByteBuffer, long[]>> deltas = new LinkedHashMap<>();
      boolean allVersions = false;
      List<byte[]> written = new ArrayList<>();
      for (Map.Entry<ByteBuffer, List<Mutation>> e : byRow.entrySet()) {
        allVersions |= pointDeletes(e.getValue());
        written.add(e.getKey().array());
      }
      Map<ByteBuffer, State> states = byRow.isEmpty() ? Collections.emptyMap()
          : readMany(written, specs, allVersions);
      long ts = stamp(2);  // phase 1 writes at ts, phase 3 at ts + 1
      for (Map.Entry<ByteBuffer, List<Mutation>> e : byRow.entrySet()) {
        byte[] row = e.getKey().array();
        State before = states.get(e.getKey());
        State after = apply(before, e.getValue(), now);
        for (Spec s : specs) change(cat, s, row, before, after, ts, phase1, p.phase3, deltas);
      }
      counts(deltas, phase1, p.phase3, true);
      if (!reindex.isEmpty()) {  // written now: nothing of these rows changes
        Map<TableName, List<Row>> direct = new LinkedHashMap<>();
        Map<TableName, Map<ByteBuffer, long[]>> built = new LinkedHashMap<>();
        long rts = stamp(1);
        for (Map.Entry<ByteBuffer, List<Spec>> e : reindex.entrySet()) {
          byte[] row = e.getKey().array();
          State st = read(row, e.getValue(), false);
          for (Spec s : e.getValue()) reindex(cat, s, row, st, rts, direct, built);
        }
        counts(built, direct, direct, false);
        send(direct);
      }
      send(phase1);
      if (!byRow.isEmpty()) {  // postBatchMutateIndispensably finishes and unlocks
        p.locks.addAll(held);
        pending.put(mb, p);
        held = null;
      }
    } catch (IOException e) {
      newCell();  // what the cell holds is unknown now
      throw e;
    } catch (RuntimeException e) {  // never abort the region server: fail the batch
      newCell();
      LOG.error("hibase index upkeep failed", e);
      throw new DoNotRetryIOException("hibase index upkeep failed: " + e, e);
    } finally {
      if (held != null) unlock(held);
    }
  }

  /** The writes one row's change in one index makes: phase 1 (before the data) writes every
   *  touched entry unverified (0x00 + msgpack([rowkey])) and adds the counts that grow;
   *  phase 3 (after) writes the new entry verified (0x01 + msgpack(covered values)), deletes
   *  the old one and takes the counts that shrink. While the index is building, entries of
   *  rows the build has not reached yet do not exist: the old entry is looked up before its
   *  count is taken. */
  private void change(Catalog cat, Spec s, byte[] row, State before, State after, long ts,
                      Map<TableName, List<Row>> phase1, Map<TableName, List<Row>> phase3,
                      Map<TableName, Map<ByteBuffer, long[]>> deltas) throws IOException {
    byte[] oldKey = valueKey(s, before, row);
    byte[] newKey = valueKey(s, after, row);
    List<byte[]> newCov = newKey == null ? null : covered(s, after);
    boolean same = oldKey == null ? newKey == null : Arrays.equals(oldKey, newKey);
    if (same && (newKey == null || sameCovered(newCov, covered(s, before)))) return;
    byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
    TableName idx = cat.kv(s.local ? "__lidx__" : "__idx__");
    byte[] unverified = cat(new byte[] {UNVERIFIED},
        HibaseCodec.packList(Collections.singletonList(row)));
    boolean oldExists = oldKey != null;
    if (s.building && oldKey != null) {
      try (Table t = env.getConnection().getTable(idx)) {
        oldExists = t.exists(new Get(cat(prefix, oldKey, row)).addColumn(V, V));
      }
    }
    if (oldKey != null && !same) {
      byte[] k = cat(prefix, oldKey, row);
      add(phase1, idx, new Put(k).addColumn(V, V, ts, unverified));
      add(phase3, idx, new Delete(k).addColumns(V, V, ts + 1));
    }
    if (newKey != null) {
      byte[] k = cat(prefix, newKey, row);
      add(phase1, idx, new Put(k).addColumn(V, V, ts, unverified));
      add(phase3, idx, new Put(k).addColumn(V, V, ts + 1,
          cat(new byte[] {VERIFIED}, HibaseCodec.packList(newCov))));
    }
    // value counts: family c of the index table, row = (region prefix +) value key; a count
    // is the number of entries that exist with that value
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

  /** The writes of the counts a mini-batch changes (each its net delta). `phased` (a write's
   *  upkeep): a count grows before the data (phase 1) and shrinks after (phase 3), so it is
   *  never below the rows, and is marked pending from phase 1 to phase 3, so readers take no
   *  answer from it while the batch is in flight or after this server died between the
   *  phases (hibase.store.base.count_settled); else (a build) one settled write. Each is a
   *  blind put of this region's own cell: the totals it holds plus the delta, with a
   *  timestamp above every earlier one of this region (stamp()), so whichever of two
   *  batches' puts lands last, the later total wins; no count is read (HBase's Increment
   *  reads, and runs increments of one row in one batch as separate mini-batches, each with
   *  its WAL sync). */
  private void counts(Map<TableName, Map<ByteBuffer, long[]>> deltas,
                      Map<TableName, List<Row>> phase1, Map<TableName, List<Row>> phase3,
                      boolean phased) {
    synchronized (held) {
      // taken with the totals: a later total has a later timestamp; phase 3's above phase 1's
      long ts = stamp(phased ? 2 : 1);
      for (Map.Entry<TableName, Map<ByteBuffer, long[]>> t : deltas.entrySet()) {
        Map<ByteBuffer, long[]> mine = held.computeIfAbsent(t.getKey(), k -> new HashMap<>());
        for (Map.Entry<ByteBuffer, long[]> e : t.getValue().entrySet()) {
          long d = e.getValue()[0];
          if (d == 0) continue;
          long[] was = mine.getOrDefault(e.getKey(), new long[2]);
          long n = was[0] + d;
          mine.put(e.getKey(), new long[] {n, was[1]});
          byte[] row = e.getKey().array();
          if (phased) {
            add(phase1, t.getKey(), new Put(row).addColumn(C, countQual, ts,
                countValue(was[0] + Math.max(d, 0), was[1] + 1)));
            add(phase3, t.getKey(), new Put(row).addColumn(C, countQual, ts + 1,
                countValue(n, was[1])));
          } else {
            add(phase1, t.getKey(), new Put(row).addColumn(C, countQual, ts,
                countValue(n, was[1])));
          }
        }
        if (mine.size() > REMEMBERED) {
          newCell();
          return;
        }
      }
    }
  }

  /** A build's request for one row (REINDEX): the row as stored gets its entry, verified,
   *  and its count, unless the entry exists (written by a write since the index was made). */
  private void reindex(Catalog cat, Spec s, byte[] row, State st, long ts,
                       Map<TableName, List<Row>> out,
                       Map<TableName, Map<ByteBuffer, long[]>> deltas) throws IOException {
    byte[] key = valueKey(s, st, row);
    if (key == null) return;
    byte[] prefix = s.local ? localPrefix(cat, row) : new byte[0];
    TableName idx = cat.kv(s.local ? "__lidx__" : "__idx__");
    byte[] k = cat(prefix, key, row);
    try (Table t = env.getConnection().getTable(idx)) {
      if (t.exists(new Get(k).addColumn(V, V))) return;
    }
    add(out, idx, new Put(k).addColumn(V, V, ts,
        cat(new byte[] {VERIFIED}, HibaseCodec.packList(covered(s, st)))));
    count(deltas, idx, cat(prefix, key), 1);
  }

  @Override
  public void postBatchMutateIndispensably(ObserverContext<RegionCoprocessorEnvironment> c,
                                           MiniBatchOperationInProgress<Mutation> mb,
                                           boolean success) throws IOException {
    Pending p = pending.remove(mb);
    if (p == null) return;
    try {
      if (!success) newCell();  // the batch's deltas are in the totals, its data is not
      if (success && !p.phase3.isEmpty()) {
        // the table's index sets changed: clients' hot caches compare this row once per
        // catalog lease and drop the table's sets when it moved
        byte[] version = new byte[8];
        java.util.concurrent.ThreadLocalRandom.current().nextBytes(version);
        add(p.phase3, p.cat.meta, new Put(b("ver/" + p.cat.table)).addColumn(M, V, version));
        send(p.phase3);
      }
      // else: the data did not land; the unverified entries stay, and readers (which resolve
      // an unverified entry against the data row) skip them; verify --repair removes them
    } catch (IOException | RuntimeException e) {
      // the data is written: its entries stay unverified (readers resolve them against the
      // row, so answers stay exact) until verify --repair or the row's next write
      LOG.error("hibase index upkeep: verifying entries after the data failed", e);
    } finally {
      unlock(p.locks);
    }
  }
}
