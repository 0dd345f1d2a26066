// JUnit tests of a partial index's predicate in the region server (IndexWhere over PushedScan's
// condition code): the same predicates, as IndexSpec.to_json writes them, and the same rows as
// tests/test_partial_index.py's test_predicate_vectors_shared_with_java, with the answers
// index/partial.py gives (TRUE: the row has an entry). Change both together.
package io.hibase;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.TreeMap;

import org.apache.hbase.thirdparty.com.google.gson.JsonParser;
import org.junit.jupiter.api.Test;

class IndexWhereTest {
  static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

  /** The rows: pairs of column, value (a cell each). */
  static final String[][] ROWS = {
    {},
    {"f:s", "open", "f:n", "3"},
    {"f:s", "open", "f:n", "2"},
    {"f:s", "open", "f:n", "x"},       // a cell that does not parse: NULL
    {"f:s", "a", "f:d", "nan"},        // NaN: NULL
    {"f:s", "abc", "f:d", "1.5"},
    {"f:n", "9", "f:d", "-0.0"},
    {"f:s", "b"},
  };

  static final String[] WHERE = {
    "{\"sql\": \"f.s = 'open' AND f.n > 2\", \"cols\": [[\"663a73\", \"string\"], [\"663a6e\", "
        + "\"long\"]], \"where\": [\"and\", [[\"cmp\", \"=\", 0, \"6f70656e0000\"], [\"cmp\", "
        + "\">\", 1, \"8000000000000002\"]]]}",
    "{\"sql\": \"f.s IN ('a', 'b') OR f.d IS NULL\", \"cols\": [[\"663a73\", \"string\"], "
        + "[\"663a64\", \"double\"]], \"where\": [\"or\", [[\"in\", 0, [\"610000\", \"620000\"]], "
        + "[\"isnull\", 1]]]}",
    "{\"sql\": \"NOT (f.s LIKE 'ab%')\", \"cols\": [[\"663a73\", \"string\"]], \"where\": "
        + "[\"not\", [\"like\", 0, \"6162\"]]}",
    "{\"sql\": \"f.d BETWEEN -1 AND 2\", \"cols\": [[\"663a64\", \"double\"]], \"where\": "
        + "[\"and\", [[\"cmp\", \">=\", 0, \"400fffffffffffff\"], [\"cmp\", \"<=\", 0, "
        + "\"c000000000000000\"]]]}",
  };

  static final boolean[][] HOLDS = {
    {false, true, false, false, false, false, false, false},
    {true, true, true, true, true, false, false, true},
    {false, true, true, true, true, false, false, true},
    {false, false, false, false, false, true, true, false},
  };

  static RowState.State state(String[] cells) {
    RowState.State st = new RowState.State();
    for (int i = 0; i < cells.length; i += 2) {
      TreeMap<Long, byte[]> versions = new TreeMap<>();
      versions.put(1L, b(cells[i + 1]));
      st.cells.put(ByteBuffer.wrap(b(cells[i])), versions);
    }
    return st;
  }

  @Test
  void predicatesGiveThePythonAnswers() {
    for (int p = 0; p < WHERE.length; p++) {
      IndexWhere w = IndexWhere.parse(JsonParser.parseString(WHERE[p]).getAsJsonObject());
      for (int r = 0; r < ROWS.length; r++) {
        assertEquals(HOLDS[p][r], w.holds(state(ROWS[r])), "predicate " + p + ", row " + r);
      }
    }
  }

  @Test
  void columnsRead() {
    IndexWhere w = IndexWhere.parse(JsonParser.parseString(WHERE[1]).getAsJsonObject());
    assertArrayEquals(new byte[][] {b("f:s"), b("f:d")}, w.columns);
  }

  @Test
  void specWithWhereIsParsed() {
    String raw = "{\"name\": \"p\", \"table\": \"t\", \"columns\": [\"f:s\"], \"types\": "
        + "[\"string\"], \"covering\": [], \"alias\": \"0001\", \"local\": false, \"state\": "
        + "\"ready\", \"null_alias\": null, \"upkeep\": \"server\", \"where\": " + WHERE[0] + "}";
    Specs.Spec s = Specs.parse(b(raw));
    assertEquals(true, s.where.holds(state(ROWS[1])));
    assertEquals(false, s.where.holds(state(ROWS[2])));
  }
}
