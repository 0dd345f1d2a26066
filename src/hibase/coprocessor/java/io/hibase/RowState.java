// Pure row-state math: a row's cells before and after a batch's mutations, and what an
// index entry of that state is (its columns, covered values). No HBase region needed.
package io.hibase;

import static io.hibase.Specs.*;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;

final class RowState {
  private RowState() {}

  static byte[] b(String s) { return s.getBytes(StandardCharsets.ISO_8859_1); }

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

  /** The (family, qualifier) pairs the indexes read; none (the whole row) when one keeps a
   *  NULL list: does any cell exist? */
  static List<byte[][]> columnsRead(List<Spec> specs) {
    List<byte[][]> cols = new ArrayList<>();
    for (Spec s : specs) if (s.nullAlias != null) return cols;
    for (Spec s : specs) {
      byte[][] where = s.where == null ? new byte[0][] : s.where.columns;
      for (byte[][] cs : new byte[][][] {s.columns, s.covering, where}) {
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

  static boolean startsWith(byte[] a, byte[] prefix) {
    return a.length >= prefix.length
        && Arrays.equals(a, 0, prefix.length, prefix, 0, prefix.length);
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
