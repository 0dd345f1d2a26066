// The Java side of the codec's cross-language check: tests/test_coprocessor.py writes
// vectors (cells, types, value keys, packed lists) with Python's codec and runs
// `java -cp <jar> io.hibase.CodecVectors FILE`, which checks HibaseCodec gives the same bytes.
package io.hibase;

import static io.hibase.HibaseCodec.*;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Checks HibaseCodec against a vector file Python wrote (main). */
final class CodecVectors {
  private CodecVectors() {}

  private static byte[] opt(String s) {
    if (s.equals("~")) return null;
    int star = s.indexOf('*');
    if (star < 0) return unhex(s);
    byte[] out = new byte[Integer.parseInt(s.substring(0, star))];
    Arrays.fill(out, unhex(s.substring(star + 1))[0]);
    return out;
  }

  private static String digest(byte[] packed) throws Exception {
    if (packed.length <= 1024) return hex(packed);
    return "sha256:" + hex(java.security.MessageDigest.getInstance("SHA-256").digest(packed));
  }

  /** Check a vector file written by tests/test_coprocessor.py (one case a line):
   *    cell TYPE BINARY(0|1) RAWHEX EXPECT          EXPECT: key hex, "null" (NaN), "error"
   *    type SPEC EXPECT                              Type.parse(SPEC).toString(), or "error"
   *    key ALIAS NULLALIAS|~ TYPE,TYPE.. CELL,CELL.. EXISTS(0|1) EXPECT   CELL: hex or ~
   *                                                  (valueKeyLenient: a bad cell is NULL)
   *    pack ITEM,ITEM.. EXPECT                       ITEM: hex, ~ (None), N*HEX (a byte N
   *                                                  times); "." empty; NxITEM N items;
   *                                                  EXPECT: hex, or sha256:HEX past 1 KB
   *    tokens TYPE RAWHEX EXPECT                     a text index's entries of a cell (alias
   *                                                  0001): sorted value keys, hex, comma
   *                                                  separated; "." none (Tokens.keys)
   *    salt ROWHEX N EXPECT                          EXPECT: the stored rowkey (Salt.stored)
   *  Types are written with '_' for the space ("long_binary"). Prints the failures and
   *  "checked N, failed M"; exit code 1 on a failure. */
  public static void main(String[] args) throws Exception {
    int n = 0, failed = 0;
    try (BufferedReader in = new BufferedReader(new InputStreamReader(
        new FileInputStream(args[0]), StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isEmpty() || line.startsWith("#")) continue;
        String[] a = line.split(" ");
        String got;
        String want;
        try {
          if (a[0].equals("cell")) {
            want = a[4];
            byte[] raw = unhex(a[3]);
            Type t = Type.parse(a[1] + (a[2].equals("1") ? " binary" : ""));
            try {
              byte[] k = cellKey(t, raw);
              got = k == null ? "null" : hex(k);
            } catch (Malformed e) {
              got = "error";
            }
          } else if (a[0].equals("type")) {
            want = a[2];
            try {
              got = Type.parse(a[1].replace('_', ' ')).toString().replace(' ', '_');
            } catch (IllegalArgumentException e) {
              got = "error";
            }
          } else if (a[0].equals("key")) {
            want = a[6];
            String[] ts = a[3].split(",");
            String[] cs = a[4].split(",", -1);
            Type[] types = new Type[ts.length];
            byte[][] cells = new byte[ts.length][];
            for (int i = 0; i < ts.length; i++) {
              types[i] = Type.parse(ts[i].replace('_', ' '));
              cells[i] = opt(cs[i]);
            }
            // as the coprocessor indexes a row: a cell that does not parse is NULL
            byte[] k = valueKeyLenient(unhex(a[1]), opt(a[2]), types, cells, a[5].equals("1"));
            got = k == null ? "null" : hex(k);
          } else if (a[0].equals("pack")) {
            want = a[2];
            List<byte[]> items = new ArrayList<>();
            int x = a[1].indexOf('x');
            if (x > 0 && a[1].substring(0, x).chars().allMatch(Character::isDigit)) {
              byte[] one = opt(a[1].substring(x + 1));  // NxITEM: N times the same item
              for (int i = Integer.parseInt(a[1].substring(0, x)); i > 0; i--) items.add(one);
            } else if (!a[1].equals(".")) {
              for (String s : a[1].split(",", -1)) items.add(opt(s));
            }
            got = digest(packList(items));
          } else if (a[0].equals("tokens")) {
            want = a[3];
            java.util.TreeSet<String> keys = new java.util.TreeSet<>();
            for (java.nio.ByteBuffer k : Tokens.keys(new byte[] {0, 1},
                Type.parse(a[1].replace('_', ' ')), opt(a[2]))) keys.add(hex(k.array()));
            got = keys.isEmpty() ? "." : String.join(",", keys);
          } else if (a[0].equals("salt")) {
            want = a[3];
            byte[] row = a[1].equals("-") ? new byte[0] : unhex(a[1]);
            got = hex(Salt.stored(row, Integer.parseInt(a[2])));
          } else {
            throw new IllegalArgumentException("unknown case " + a[0]);
          }
        } catch (RuntimeException e) {
          got = "exception " + e;
          want = "?";
        }
        n++;
        if (!got.equals(want)) {
          failed++;
          if (failed <= 50) System.out.println("FAIL " + line + " -> got " + got);
        }
      }
    }
    System.out.println("checked " + n + ", failed " + failed);
    System.exit(failed == 0 ? 0 : 1);
  }

  static boolean same(byte[] a, byte[] b) { return Arrays.equals(a, b); }
}
