// The work a hibase client pushes into a region scan (ScanObserver; the Python side is
// src/hibase/query/pushdown.py, the format is documented in docs/architecture.md, "Work no
// index answers runs in the region servers"). Cells are read as codec.py reads them: each
// column's value is its order-preserving key (HibaseCodec.cellKey), a missing, malformed or NaN
// cell is NULL, and comparisons of keys are comparisons of the typed values.
package io.hibase;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hbase.thirdparty.com.google.gson.JsonArray;
import org.apache.hbase.thirdparty.com.google.gson.JsonElement;
import org.apache.hbase.thirdparty.com.google.gson.JsonNull;
import org.apache.hbase.thirdparty.com.google.gson.JsonObject;
import org.apache.hbase.thirdparty.com.google.gson.JsonParser;
import org.apache.hbase.thirdparty.com.google.gson.JsonPrimitive;

final class PushedScan {
  static final int VERSION = 1;
  /** Qualifier of the cell carrying a region's partial aggregate, and of the cell standing
   *  for a matched row none of whose cells was asked for (SELECT ROWKEY ...). */
  static final byte[] AGG_QUALIFIER = "\u0000hibase.agg".getBytes(StandardCharsets.UTF_8);
  static final byte[] ROW_QUALIFIER = "\u0000hibase.row".getBytes(StandardCharsets.UTF_8);

  final String mode;  // rows | agg | top
  final byte[] family;  // of the cells made here
  final byte[][] fams, quals;
  final HibaseCodec.Type[] types;
  final int[] scales;  // a DECIMAL(p, s) column's s, else -1
  final Expr where;  // null: every row
  final boolean[] out;  // null: every cell of the row
  final int[] group;
  final String[] aggFunc;
  final int[] aggCol;
  final int[] orderCol;
  final boolean[] desc, nullsLast;
  final int k;

  private PushedScan(JsonObject o) {
    int v = o.get("v").getAsInt();
    if (v != VERSION) throw new IllegalArgumentException("work version " + v + ", this "
        + "coprocessor reads " + VERSION);
    mode = o.get("mode").getAsString();
    if (!mode.equals("rows") && !mode.equals("agg") && !mode.equals("top"))
      throw new IllegalArgumentException("unknown mode " + mode);
    family = HibaseCodec.unhex(o.get("fam").getAsString());
    JsonArray cols = o.getAsJsonArray("cols");
    int n = cols.size();
    fams = new byte[n][];
    quals = new byte[n][];
    types = new HibaseCodec.Type[n];
    scales = new int[n];
    for (int i = 0; i < n; i++) {
      JsonArray c = cols.get(i).getAsJsonArray();
      byte[] name = HibaseCodec.unhex(c.get(0).getAsString());
      int colon = indexOf(name, (byte) ':');
      fams[i] = Arrays.copyOfRange(name, 0, colon);
      quals[i] = Arrays.copyOfRange(name, colon + 1, name.length);
      types[i] = HibaseCodec.Type.parse(c.get(1).getAsString());
      scales[i] = types[i].name.equals("decimal") ? types[i].scale : -1;
    }
    JsonElement w = o.get("where");
    where = w == null || w.isJsonNull() ? null : expr(w.getAsJsonArray(), n);
    JsonElement outs = o.get("out");
    if (outs == null || outs.isJsonNull()) {
      out = null;
    } else {
      out = new boolean[n];
      for (JsonElement e : outs.getAsJsonArray()) out[col(e, n)] = true;
    }
    group = ints(o.getAsJsonArray("group"), n);
    JsonArray aggs = o.has("aggs") ? o.getAsJsonArray("aggs") : new JsonArray();
    aggFunc = new String[aggs.size()];
    aggCol = new int[aggs.size()];
    for (int i = 0; i < aggs.size(); i++) {
      JsonArray a = aggs.get(i).getAsJsonArray();
      aggFunc[i] = a.get(0).getAsString();
      aggCol[i] = a.size() > 1 ? col(a.get(1), n) : -1;
      if (!Arrays.asList("count", "sum", "min", "max").contains(aggFunc[i]))
        throw new IllegalArgumentException("unknown aggregate " + aggFunc[i]);
      if (aggFunc[i].equals("sum") && intWidth(types[aggCol[i]]) == 0
          && !(types[aggCol[i]].name.equals("decimal") && types[aggCol[i]].scale >= 0))
        throw new IllegalArgumentException("SUM is pushed down for integer and DECIMAL(p, s) "
            + "columns only");
    }
    JsonArray order = o.has("order") ? o.getAsJsonArray("order") : new JsonArray();
    orderCol = new int[order.size()];
    desc = new boolean[order.size()];
    nullsLast = new boolean[order.size()];
    for (int i = 0; i < order.size(); i++) {
      JsonArray a = order.get(i).getAsJsonArray();
      orderCol[i] = col(a.get(0), n);
      desc[i] = a.get(1).getAsBoolean();
      nullsLast[i] = a.get(2).getAsBoolean();
    }
    k = o.has("k") ? o.get("k").getAsInt() : 0;
    if (mode.equals("top") && k <= 0) throw new IllegalArgumentException("top needs k > 0");
  }

  static PushedScan parse(byte[] json) {
    return new PushedScan(JsonParser.parseString(new String(json, StandardCharsets.UTF_8))
        .getAsJsonObject());
  }

  private static int indexOf(byte[] b, byte x) {
    for (int i = 0; i < b.length; i++) if (b[i] == x) return i;
    throw new IllegalArgumentException("column name without ':'");
  }

  private static int col(JsonElement e, int n) {
    int i = e.getAsInt();
    if (i < 0 || i >= n) throw new IllegalArgumentException("column index " + i);
    return i;
  }

  private static int[] ints(JsonArray a, int n) {
    if (a == null) return new int[0];
    int[] out = new int[a.size()];
    for (int i = 0; i < out.length; i++) out[i] = col(a.get(i), n);
    return out;
  }

  /** Bytes of an integer type's key (the value plus a bias, big-endian); 0 for the others. */
  static int intWidth(HibaseCodec.Type t) {
    switch (t.name) {
      case "byte": return 1;
      case "short": return 2;
      case "int": return 4;
      case "long": return 8;
      default: return 0;
    }
  }

  static long intOfKey(byte[] key) {
    long v = (byte) (key[0] ^ 0x80);  // sign-extended
    for (int i = 1; i < key.length; i++) v = (v << 8) | (key[i] & 0xff);
    return v;
  }

  // -- one row's values ----------------------------------------------------------------------

  /** A row's cells of the described columns; each value's key computed on first use. */
  final class Row {
    final byte[] rowkey;
    final byte[][] raw = new byte[fams.length][];
    private final byte[][] keys = new byte[fams.length][];
    private final boolean[] done = new boolean[fams.length];

    Row(List<Cell> cells) {
      rowkey = CellUtil.cloneRow(cells.get(0));
      for (Cell c : cells) {
        for (int i = 0; i < fams.length; i++) {
          if (raw[i] == null && CellUtil.matchingColumn(c, fams[i], quals[i])) {
            raw[i] = CellUtil.cloneValue(c);
          }
        }
      }
    }

    /** A row of the described columns' cells (null: none), as IndexWhere hands them. */
    Row(byte[][] cells) {
      rowkey = new byte[0];
      System.arraycopy(cells, 0, raw, 0, raw.length);
    }

    /** The value's key, null for NULL (no cell, not of the column's type, NaN). */
    byte[] key(int i) {
      if (!done[i]) {
        done[i] = true;
        if (raw[i] != null) {
          keys[i] = fastKey(types[i], raw[i]);
          if (keys[i] == null) {
            try {
              keys[i] = HibaseCodec.cellKey(types[i], raw[i]);
            } catch (HibaseCodec.Malformed e) {
              keys[i] = null;
            }
          }
        }
      }
      return keys[i];
    }
  }

  /** HibaseCodec.cellKey's answer for the common cells, without its BigInteger and UTF-8
   *  decoder: a text integer of at most 18 digits, an ASCII string; null when the cell is not
   *  one of those (cellKey then answers, also for what is malformed). */
  static byte[] fastKey(HibaseCodec.Type t, byte[] raw) {
    if (t.binary) return null;
    int w = intWidth(t);
    if (w > 0) {
      int start = raw.length > 0 && (raw[0] == '-' || raw[0] == '+') ? 1 : 0;
      int digits = raw.length - start;
      if (digits < 1 || digits > 18) return null;
      long v = 0;
      for (int i = start; i < raw.length; i++) {
        int d = raw[i] - '0';
        if (d < 0 || d > 9) return null;
        v = v * 10 + d;
      }
      if (raw[0] == '-') v = -v;
      long hi = 1L << (8 * w - 1);
      if (w < 8 && (v < -hi || v >= hi)) return null;
      return HibaseCodec.intKey(w, v);
    }
    if (t.name.equals("string")) {
      for (byte b : raw) if (b < 0) return null;  // not ASCII: cellKey checks the UTF-8
      return HibaseCodec.escape(raw);
    }
    return null;
  }

  // -- the condition, in SQL's three-valued logic (1 TRUE, 0 FALSE, -1 UNKNOWN) ---------------

  /** The condition on one row's cells of the described columns (IndexWhere: a partial
   *  index's predicate): 1 TRUE, 0 FALSE, -1 UNKNOWN; 1 without a condition. */
  int test(byte[][] cells) {
    return where == null ? 1 : where.eval(new Row(cells));
  }

  interface Expr { int eval(Row r); }

  private static byte[] hex(JsonElement e) { return HibaseCodec.unhex(e.getAsString()); }

  private static Expr expr(JsonArray a, int n) {
    String op = a.get(0).getAsString();
    switch (op) {
      case "true": return r -> 1;
      case "false": return r -> 0;
      case "unknown": return r -> -1;
      case "and": case "or": {
        JsonArray items = a.get(1).getAsJsonArray();
        Expr[] es = new Expr[items.size()];
        for (int i = 0; i < es.length; i++) es[i] = expr(items.get(i).getAsJsonArray(), n);
        boolean and = op.equals("and");
        return r -> {
          int result = and ? 1 : 0;
          for (Expr e : es) {
            int t = e.eval(r);
            if (t == (and ? 0 : 1)) return t;
            if (t < 0) result = -1;
          }
          return result;
        };
      }
      case "not": {
        Expr e = expr(a.get(1).getAsJsonArray(), n);
        return r -> { int t = e.eval(r); return t < 0 ? -1 : 1 - t; };
      }
      case "isnull": case "notnull": {
        int c = col(a.get(1), n);
        boolean isNull = op.equals("isnull");
        return r -> (r.key(c) == null) == isNull ? 1 : 0;
      }
      case "cmp": {
        String cmp = a.get(1).getAsString();
        int c = col(a.get(2), n);
        byte[] lit = hex(a.get(3));
        return r -> {
          byte[] k = r.key(c);
          if (k == null) return -1;
          int d = Arrays.compareUnsigned(k, lit);
          boolean t;
          switch (cmp) {
            case "=": t = d == 0; break;
            case "<>": t = d != 0; break;
            case "<": t = d < 0; break;
            case "<=": t = d <= 0; break;
            case ">": t = d > 0; break;
            case ">=": t = d >= 0; break;
            default: throw new IllegalArgumentException("unknown comparison " + cmp);
          }
          return t ? 1 : 0;
        };
      }
      case "in": {
        int c = col(a.get(1), n);
        JsonArray vs = a.get(2).getAsJsonArray();
        List<ByteKey> set = new ArrayList<>();
        for (JsonElement e : vs) set.add(new ByteKey(hex(e)));
        java.util.Set<ByteKey> lits = new java.util.HashSet<>(set);
        return r -> {
          byte[] k = r.key(c);
          if (k == null) return -1;
          return lits.contains(new ByteKey(k)) ? 1 : 0;
        };
      }
      case "like": case "notlike": {
        int c = col(a.get(1), n);
        byte[] prefix = hex(a.get(2));
        boolean like = op.equals("like");
        return r -> {
          if (r.key(c) == null) return -1;  // the key checks the cell is valid UTF-8
          byte[] v = r.raw[c];
          boolean hit = v.length >= prefix.length
              && Arrays.equals(v, 0, prefix.length, prefix, 0, prefix.length);
          return hit == like ? 1 : 0;
        };
      }
      default:
        throw new IllegalArgumentException("unknown condition " + op);
    }
  }

  /** byte[] with value equality, for sets and group maps. */
  static final class ByteKey {
    final byte[] b;
    ByteKey(byte[] b) { this.b = b; }
    @Override public boolean equals(Object o) {
      return o instanceof ByteKey && Arrays.equals(b, ((ByteKey) o).b);
    }
    @Override public int hashCode() { return Arrays.hashCode(b); }
  }

  // -- partial aggregates ----------------------------------------------------------------------

  /** One aggregate's state in one group: COUNT's n, SUM's total (exact: a long, past its
   *  range a BigInteger; a DECIMAL(p, s)'s the BigInteger of its unscaled values at scale s)
   *  and n, MIN / MAX's best key. */
  static final class State {
    long n, sum;
    BigInteger big;
    byte[] best;

    JsonElement json(String f) {
      switch (f) {
        case "count": return new JsonPrimitive(n);
        case "sum": {
          JsonArray a = new JsonArray();
          a.add(big == null ? new JsonPrimitive(sum) : new JsonPrimitive(big.toString()));
          a.add(n);
          return a;
        }
        default: return best == null ? JsonNull.INSTANCE : new JsonPrimitive(HibaseCodec.hex(best));
      }
    }
  }

  void add(State s, int i, Row r) {
    String f = aggFunc[i];
    int c = aggCol[i];
    if (c < 0) { s.n++; return; }
    byte[] k = r.key(c);
    if (k == null) return;
    s.n++;
    switch (f) {
      case "sum": {
        if (scales[c] >= 0) {  // DECIMAL(p, s): the exact unscaled total at scale s
          BigInteger u = DecimalCodec.unscaledOfKey(k, scales[c]);
          s.big = s.big == null ? u : s.big.add(u);
          break;
        }
        long v = intOfKey(k);
        if (s.big != null) {
          s.big = s.big.add(BigInteger.valueOf(v));
        } else {
          long t = s.sum + v;
          if (((s.sum ^ t) & (v ^ t)) < 0) {  // overflow: go on exactly
            s.big = BigInteger.valueOf(s.sum).add(BigInteger.valueOf(v));
          } else {
            s.sum = t;
          }
        }
        break;
      }
      case "min":
        if (s.best == null || Arrays.compareUnsigned(k, s.best) < 0) s.best = k;
        break;
      case "max":
        if (s.best == null || Arrays.compareUnsigned(k, s.best) > 0) s.best = k;
        break;
      default:
        break;
    }
  }

  /** Top-k order: the ORDER BY keys (NULLs first unless NULLS LAST, in both directions),
   *  then the rowkey, as the client's stable sort of rows streamed in key order. */
  int compare(byte[][] a, byte[] rowA, byte[][] b, byte[] rowB) {
    for (int i = 0; i < orderCol.length; i++) {
      byte[] x = a[i], y = b[i];
      if (x == null || y == null) {
        if (x == null && y == null) continue;
        boolean xFirst = (x == null) != nullsLast[i];
        return xFirst ? -1 : 1;
      }
      int d = Arrays.compareUnsigned(x, y);
      if (d != 0) return desc[i] ? -d : d;
    }
    return Arrays.compareUnsigned(rowA, rowB);
  }
}
