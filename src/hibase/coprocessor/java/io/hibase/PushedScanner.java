// The region scanner hibase's ScanObserver wraps around a region's own when a scan carries
// pushed work (PushedScan): rows filtered and projected, aggregated or cut to the top k here.
package io.hibase;

import static io.hibase.PushedScan.*;

import io.hibase.PushedScan.Row;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellBuilderFactory;
import org.apache.hadoop.hbase.CellBuilderType;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.regionserver.RegionScanner;
import org.apache.hadoop.hbase.regionserver.ScannerContext;
import org.apache.hbase.thirdparty.com.google.gson.JsonArray;
import org.apache.hbase.thirdparty.com.google.gson.JsonNull;
import org.apache.hbase.thirdparty.com.google.gson.JsonObject;
import org.apache.hbase.thirdparty.com.google.gson.JsonPrimitive;

/** The wrapped region scanner of one pushed scan (the work: PushedScan). */
final class PushedScanner implements RegionScanner {
  private final RegionScanner inner;
  private final PushedScan w;
  private boolean finished;
  private List<List<Cell>> pending;  // top: the region's best rows, in rowkey order
  private int next;

  PushedScanner(RegionScanner inner, PushedScan w) {
    this.inner = inner;
    this.w = w;
  }

  @Override public RegionInfo getRegionInfo() { return inner.getRegionInfo(); }
  @Override public boolean isFilterDone() throws IOException {
    return w.mode.equals("rows") ? inner.isFilterDone() : finished;
  }
  @Override public boolean reseek(byte[] row) throws IOException { return inner.reseek(row); }
  @Override public long getMaxResultSize() { return inner.getMaxResultSize(); }
  @Override public long getMvccReadPoint() { return inner.getMvccReadPoint(); }
  @Override public int getBatch() { return inner.getBatch(); }
  @Override public void close() throws IOException { inner.close(); }

  @Override public boolean next(List<Cell> out, ScannerContext ctx) throws IOException {
    return nextRaw(out);
  }

  @Override public boolean nextRaw(List<Cell> out, ScannerContext ctx) throws IOException {
    return nextRaw(out);
  }

  @Override public boolean nextRaw(List<Cell> out) throws IOException {
    switch (w.mode) {
      case "rows": return rows(out);
      case "agg": return agg(out);
      default: return top(out);
    }
  }

  private boolean rows(List<Cell> out) throws IOException {
    List<Cell> buf = new ArrayList<>();
    while (true) {
      buf.clear();
      boolean more = inner.nextRaw(buf);
      if (!buf.isEmpty()) {
        Row r = w.new Row(buf);
        if (w.where == null || w.where.eval(r) == 1) {
          project(buf, r.rowkey, out);
          return more;
        }
      }
      if (!more) return false;
    }
  }

  private void project(List<Cell> cells, byte[] rowkey, List<Cell> out) {
    int before = out.size();
    for (Cell c : cells) {
      if (w.out == null || wanted(c)) out.add(c);
    }
    if (out.size() == before) out.add(cell(rowkey, ROW_QUALIFIER, new byte[0]));
  }

  private boolean wanted(Cell c) {
    for (int i = 0; i < w.fams.length; i++) {
      if (w.out[i] && CellUtil.matchingColumn(c, w.fams[i], w.quals[i])) return true;
    }
    return false;
  }

  private Cell cell(byte[] row, byte[] qualifier, byte[] value) {
    return CellBuilderFactory.create(CellBuilderType.DEEP_COPY).setRow(row)
        .setFamily(w.family).setQualifier(qualifier).setTimestamp(0L)
        .setType(Cell.Type.Put).setValue(value).build();
  }

  /** The group of a row by several columns: each key length-prefixed, NULL a 0 byte. */
  private byte[] groupId(Row r, byte[][] gk) {
    java.io.ByteArrayOutputStream id = new java.io.ByteArrayOutputStream();
    for (int i = 0; i < gk.length; i++) {
      gk[i] = r.key(w.group[i]);
      if (gk[i] == null) {
        id.write(0);
      } else {
        id.write(1);
        byte[] len = {(byte) (gk[i].length >> 24), (byte) (gk[i].length >> 16),
                      (byte) (gk[i].length >> 8), (byte) gk[i].length};
        id.write(len, 0, 4);
        id.write(gk[i], 0, gk[i].length);
      }
    }
    return id.toByteArray();
  }

  /** One row carrying the region's partial states (JSON), keyed by the last row read so a
   *  client scanner reopened after it reads nothing of this region twice. */
  private boolean agg(List<Cell> out) throws IOException {
    if (finished) return false;
    Map<ByteKey, Object[]> groups = new LinkedHashMap<>();
    List<Cell> buf = new ArrayList<>();
    byte[] last = null;
    long scanned = 0;
    boolean more = true;
    while (more) {
      buf.clear();
      more = inner.nextRaw(buf);
      if (buf.isEmpty()) continue;
      scanned++;
      Row r = w.new Row(buf);
      last = r.rowkey;
      if (w.where != null && w.where.eval(r) != 1) continue;
      byte[][] gk = new byte[w.group.length][];
      ByteKey key;
      if (gk.length == 1) {  // a key is never empty: the empty array stands for NULL
        gk[0] = r.key(w.group[0]);
        key = new ByteKey(gk[0] == null ? new byte[0] : gk[0]);
      } else {
        key = new ByteKey(groupId(r, gk));
      }
      Object[] g = groups.get(key);
      if (g == null) {
        State[] states = new State[w.aggFunc.length];
        for (int i = 0; i < states.length; i++) states[i] = new State();
        g = new Object[] {gk, states};
        groups.put(key, g);
      }
      State[] states = (State[]) g[1];
      for (int i = 0; i < states.length; i++) w.add(states[i], i, r);
    }
    finished = true;
    JsonObject o = new JsonObject();
    o.addProperty("v", VERSION);
    o.addProperty("rows", scanned);
    JsonArray gs = new JsonArray();
    for (Object[] g : groups.values()) {
      JsonArray keys = new JsonArray();
      for (byte[] k : (byte[][]) g[0]) {
        keys.add(k == null ? JsonNull.INSTANCE : new JsonPrimitive(HibaseCodec.hex(k)));
      }
      JsonArray states = new JsonArray();
      State[] st = (State[]) g[1];
      for (int i = 0; i < st.length; i++) states.add(st[i].json(w.aggFunc[i]));
      JsonArray one = new JsonArray();
      one.add(keys);
      one.add(states);
      gs.add(one);
    }
    o.add("groups", gs);
    byte[] row = last != null ? last : inner.getRegionInfo().getStartKey();
    if (row.length == 0) row = new byte[] {0};
    out.add(cell(row, AGG_QUALIFIER, o.toString().getBytes(StandardCharsets.UTF_8)));
    return false;
  }

  /** The region's k best rows by the ORDER BY (ties by rowkey), then returned in rowkey
   *  order; the client keeps the k best of every region's. */
  private boolean top(List<Cell> out) throws IOException {
    if (pending == null) {
      Comparator<Object[]> best = (a, b) -> w.compare(
          (byte[][]) a[0], (byte[]) a[1], (byte[][]) b[0], (byte[]) b[1]);
      PriorityQueue<Object[]> heap = new PriorityQueue<>(best.reversed());
      List<Cell> buf = new ArrayList<>();
      boolean more = true;
      while (more) {
        buf = new ArrayList<>();
        more = inner.nextRaw(buf);
        if (buf.isEmpty()) continue;
        Row r = w.new Row(buf);
        if (w.where != null && w.where.eval(r) != 1) continue;
        byte[][] keys = new byte[w.orderCol.length][];
        for (int i = 0; i < keys.length; i++) keys[i] = r.key(w.orderCol[i]);
        Object[] e = {keys, r.rowkey, buf};
        if (heap.size() < w.k) {
          heap.add(e);
        } else if (best.compare(e, heap.peek()) < 0) {
          heap.poll();
          heap.add(e);
        }
      }
      List<Object[]> kept = new ArrayList<>(heap);
      kept.sort((a, b) -> Arrays.compareUnsigned((byte[]) a[1], (byte[]) b[1]));
      pending = new ArrayList<>();
      for (Object[] e : kept) {
        @SuppressWarnings("unchecked") List<Cell> cells = (List<Cell>) e[2];
        List<Cell> projected = new ArrayList<>();
        project(cells, (byte[]) e[1], projected);
        pending.add(projected);
      }
    }
    if (next >= pending.size()) {
      finished = true;
      return false;
    }
    out.addAll(pending.get(next++));
    finished = next >= pending.size();
    return !finished;
  }
}
