// JUnit tests of the spec parser (Specs.parse): which index definitions hibase_meta holds the
// coprocessor keeps, and the fields it reads from them (IndexSpec.to_json's spelling).
package io.hibase;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

class SpecsTest {
  /** A definition as IndexSpec.to_json writes it (state and upkeep varied). */
  static byte[] json(String state, String upkeep, String types, String nullAlias) {
    String up = upkeep == null ? "" : ", \"upkeep\": \"" + upkeep + "\"";
    return ("{\"name\": \"by_city\", \"table\": \"people\", \"columns\": [\"d:city\", \"d:age\"],"
        + " \"types\": " + types + ", \"covering\": [\"d:name\"], \"alias\": \"0a0b\","
        + " \"local\": false, \"state\": \"" + state + "\", \"null_alias\": " + nullAlias + up
        + "}").getBytes(StandardCharsets.UTF_8);
  }

  static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

  @Test
  void serverIndexParsed() {
    Specs.Spec s = Specs.parse(json("ready", "server", "[\"string\", \"int binary\"]", "null"));
    assertEquals("by_city", s.name);
    assertArrayEquals(new byte[] {0x0a, 0x0b}, s.alias);
    assertNull(s.nullAlias);
    assertArrayEquals(new byte[][] {b("d:city"), b("d:age")}, s.columns);
    assertArrayEquals(new byte[][] {b("d:name")}, s.covering);
    assertEquals(2, s.types.length);
    assertEquals(HibaseCodec.Type.parse("int binary").toString(), s.types[1].toString());
    assertFalse(s.local);
    assertFalse(s.building);
  }

  @Test
  void buildingAndNullAlias() {
    Specs.Spec s = Specs.parse(json("building", "server", "[\"string\", \"long\"]", "\"ff\""));
    assertTrue(s.building);
    assertArrayEquals(new byte[] {(byte) 0xff}, s.nullAlias);
  }

  @Test
  void uncoveredRead() {
    assertFalse(Specs.parse(json("ready", "server", "[\"string\", \"long\"]", "null"))
        .uncovered);
    String raw = new String(json("ready", "server", "[\"string\", \"long\"]", "null"),
        StandardCharsets.UTF_8);
    raw = raw.substring(0, raw.length() - 1) + ", \"uncovered\": true}";
    assertTrue(Specs.parse(b(raw)).uncovered);
  }

  @Test
  void clientKeptAndStaleIndexesAreNotKept() {
    assertNull(Specs.parse(json("ready", null, "[\"string\", \"int\"]", "null")));
    assertNull(Specs.parse(json("ready", "client", "[\"string\", \"int\"]", "null")));
    assertNull(Specs.parse(json("stale", "server", "[\"string\", \"int\"]", "null")));
  }

  @Test
  void unknownTypeRefusesWritesNamingTheFix() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> Specs.parse(json("ready", "server", "[\"string\", \"uuid\"]", "null")));
    assertTrue(e.getMessage().contains("by_city"), e.getMessage());
    assertTrue(e.getMessage().contains("update the coprocessor jar"), e.getMessage());
  }
}
