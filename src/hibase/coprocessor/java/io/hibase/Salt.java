// Salted tables (hibase's store/salted.py): a row of user rowkey k is stored under
// bucket(k, n) + k. The region server sees stored rowkeys; index entries carry user rowkeys,
// so every entry written from a row strips the byte (user) and every row read from an entry
// adds it back (stored).
package io.hibase;

import java.util.Arrays;

final class Salt {
  private Salt() {}

  /** The bucket of user rowkey `row` among `n`: |mix(Arrays.hashCode(row)) % n| (h = 1, then
   *  h = 31*h + b over the bytes as signed values; mix: murmur3's 32-bit finalizer, without
   *  which keys whose bytes grow together cancel mod a power of two), as salt_byte in
   *  Python. */
  static int bucket(byte[] row, int n) {
    return Math.abs(mix(Arrays.hashCode(row)) % n);
  }

  /** murmur3's fmix32. */
  static int mix(int h) {
    h ^= h >>> 16;
    h *= 0x85ebca6b;
    h ^= h >>> 13;
    h *= 0xc2b2ae35;
    h ^= h >>> 16;
    return h;
  }

  /** The stored rowkey of user rowkey `row` (n = 0: unsalted, the row itself). */
  static byte[] stored(byte[] row, int n) {
    if (n == 0) return row;
    byte[] out = new byte[row.length + 1];
    out[0] = (byte) bucket(row, n);
    System.arraycopy(row, 0, out, 1, row.length);
    return out;
  }

  /** The user rowkey of stored rowkey `row` (n = 0: unsalted, the row itself). */
  static byte[] user(byte[] row, int n) {
    return n == 0 || row.length == 0 ? row : Arrays.copyOfRange(row, 1, row.length);
  }
}
