// JUnit tests of the pure row-state math (RowState): a row's state after a batch's puts,
// deletes, increments and appends as HBase applies them, and what the indexes read of it.
package io.hibase;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.junit.jupiter.api.Test;

class RowStateTest {
  static final byte[] ROW = b("r1"), D = b("d"), X = b("x");
  static final long NOW = 1_000_000L;

  static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

  /** A stored state: column "f:q" -> value at timestamp ts, in pairs. */
  static RowState.State stored(long ts, String... colValues) {
    RowState.State s = new RowState.State();
    for (int i = 0; i < colValues.length; i += 2) {
      s.cells.computeIfAbsent(ByteBuffer.wrap(b(colValues[i])), k -> new java.util.TreeMap<>())
          .put(ts, b(colValues[i + 1]));
    }
    return s;
  }

  static RowState.State apply(RowState.State before, Mutation... ms) {
    return RowState.apply(before, Arrays.asList(ms), NOW);
  }

  @Test
  void putOnANewRow() {
    RowState.State before = new RowState.State();
    RowState.State after = apply(before, new Put(ROW).addColumn(D, b("city"), b("Oslo")));
    assertArrayEquals(b("Oslo"), after.latest(b("d:city")));
    assertTrue(after.exists());
    assertFalse(before.exists(), "apply works on a copy");
  }

  @Test
  void deleteColumnHidesEveryVersionPointDeleteOnlyTheNewest() {
    RowState.State before = stored(10, "d:city", "Oslo");
    before.cells.get(ByteBuffer.wrap(b("d:city"))).put(20L, b("Bergen"));
    Delete point = new Delete(ROW).addColumn(D, b("city"));
    assertTrue(RowState.pointDeletes(Collections.singletonList(point)));
    assertArrayEquals(b("Oslo"), apply(before, point).latest(b("d:city")),
        "a point delete uncovers the older version");
    Delete all = new Delete(ROW).addColumns(D, b("city"));
    assertFalse(RowState.pointDeletes(Collections.singletonList(all)));
    assertNull(apply(before, all).latest(b("d:city")));
  }

  @Test
  void markersHidePutsAtOrBelowTheirTimestampWhateverTheOrder() {
    RowState.State after = apply(new RowState.State(),
        new Put(ROW).addColumn(D, b("city"), 5, b("Oslo")),
        new Delete(ROW).addColumns(D, b("city"), 5));
    assertNull(after.latest(b("d:city")));
    assertFalse(after.exists());
  }

  @Test
  void wholeRowAndFamilyDeletes() {
    RowState.State before = stored(10, "d:city", "Oslo", "x:note", "n");
    assertFalse(apply(before, new Delete(ROW)).exists());
    RowState.State fam = apply(before, new Delete(ROW).addFamily(D));
    assertNull(fam.latest(b("d:city")));
    assertArrayEquals(b("n"), fam.latest(b("x:note")), "the other family stays");
  }

  @Test
  void incrementSumsAndAppendConcatenates() {
    RowState.State before = stored(10, "d:n", "", "d:s", "ab");
    before.cells.get(ByteBuffer.wrap(b("d:n"))).put(10L, ByteBuffer.allocate(8).putLong(40).array());
    RowState.State after = apply(before, new Increment(ROW).addColumn(D, b("n"), 2),
        new Append(ROW).addColumn(D, b("s"), b("cd")));
    assertEquals(42L, ByteBuffer.wrap(after.latest(b("d:n"))).getLong());
    assertArrayEquals(b("abcd"), after.latest(b("d:s")));
    assertArrayEquals(b("7"), apply(new RowState.State(),
        new Append(ROW).addColumn(X, b("a"), b("7"))).latest(b("x:a")));
  }

  static Specs.Spec spec(String nullAlias, String... columns) {
    Specs.Spec s = new Specs.Spec();
    s.name = "i";
    s.alias = new byte[] {1};
    s.nullAlias = nullAlias == null ? null : HibaseCodec.unhex(nullAlias);
    s.columns = new byte[columns.length][];
    for (int i = 0; i < columns.length; i++) s.columns[i] = b(columns[i]);
    s.covering = new byte[][] {b("d:name")};
    return s;
  }

  @Test
  void columnsTheIndexesRead() {
    List<byte[][]> cols = RowState.columnsRead(Collections.singletonList(spec(null, "d:city")));
    assertEquals(2, cols.size());
    assertArrayEquals(D, cols.get(0)[0]);
    assertArrayEquals(b("city"), cols.get(0)[1]);
    assertArrayEquals(b("name"), cols.get(1)[1]);
    assertTrue(RowState.columnsRead(Arrays.asList(spec(null, "d:a"), spec("ff", "d:b")))
        .isEmpty(), "an index keeping a NULL list reads the whole row");
  }

  @Test
  void coveredValuesAreTheNewest() {
    RowState.State st = stored(10, "d:name", "Ann");
    st.cells.get(ByteBuffer.wrap(b("d:name"))).put(11L, b("Anna"));
    List<byte[]> cov = RowState.covered(spec(null, "d:city"), st);
    assertArrayEquals(b("Anna"), cov.get(0));
    assertTrue(RowState.sameCovered(cov, RowState.covered(spec(null, "d:city"), st)));
    assertFalse(RowState.sameCovered(cov, RowState.covered(spec(null, "d:city"),
        new RowState.State())));
  }
}
