// JUnit tests of salted tables' rowkey mapping (Salt): the bucket hash is Arrays.hashCode's mixed,
// stored keys add one byte, user keys drop it (the golden vectors shared with Python are
// tests/golden/codec_vectors.txt's "salt" lines).
package io.hibase;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

class SaltTest {
  static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

  @Test
  void bucketIsTheMixedHashModN() {
    // Python's salt_byte gives the same (tests/test_salted.py; the golden vectors)
    assertEquals(1, Salt.bucket(b("a"), 7));
    assertEquals(3, Salt.bucket(new byte[] {(byte) 0xff}, 8));
    assertEquals(0, Salt.bucket(b("anything"), 1));
    for (int n = 1; n <= 256; n++) {
      int got = Salt.bucket(new byte[] {(byte) 0xff, 0x10, 0x7f}, n);
      assertTrue(got >= 0 && got < n, "bucket " + got + " of " + n);
    }
  }

  @Test
  void timeOrderedKeysSpread() {
    int[] counts = new int[8];
    for (int i = 0; i < 8000; i++) {
      counts[Salt.bucket(b(String.format("%013d#%06d", 1_764_000_000_000L + i, i)), 8)]++;
    }
    for (int c : counts) assertTrue(c > 800, java.util.Arrays.toString(counts));
  }

  @Test
  void negativeHashesTakeTheAbsoluteRemainder() {
    byte[] neg = {(byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80};
    int h = Salt.mix(java.util.Arrays.hashCode(neg));
    assertEquals(Math.abs(h % 13), Salt.bucket(neg, 13));
    assertEquals(0, Salt.mix(0), "the finalizer keeps 0 at 0");
  }

  @Test
  void storedAndUserRoundTrip() {
    byte[] row = b("2026-11-28T10:11:52Z#42");
    byte[] stored = Salt.stored(row, 8);
    assertEquals(row.length + 1, stored.length);
    assertEquals(Salt.bucket(row, 8), stored[0] & 0xff);
    assertArrayEquals(row, Salt.user(stored, 8));
    assertSame(row, Salt.stored(row, 0));
    assertSame(row, Salt.user(row, 0));
    assertEquals(255, Salt.stored(new byte[] {0x00, (byte) 0xad}, 256)[0] & 0xff,
        "bucket 255 of 256 fits the byte");
  }
}
