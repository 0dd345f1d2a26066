// hibase's typed, order-preserving key codec (src/hibase/codec.py) and the msgpack subset its
// index rows use, ported to Java for the region-server index upkeep (IndexObserver). Byte for
// byte the Python encodings: tests/golden/codec_vectors.txt is written by Python and checked
// by main() (tests/test_coprocessor.py runs it). No dependency beyond the JDK.
package io.hibase;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class HibaseCodec {
  private HibaseCodec() {}

  /** A cell that is no valid value of its declared type (Python: ValueTypeError). */
  public static final class Malformed extends Exception {
    public Malformed(String msg) { super(msg); }
  }

  /** A declared column type: "long", "double binary", ... (codec.parse_type). */
  public static final class Type {
    public final String name;
    public final boolean binary;
    /** DECIMAL(p, s)'s; -1 for a plain DECIMAL and the other types. */
    public final int precision, scale;

    public Type(String name, boolean binary) { this(name, binary, -1, -1); }

    public Type(String name, boolean binary, int precision, int scale) {
      this.name = name;
      this.binary = binary;
      this.precision = precision;
      this.scale = scale;
    }

    /** codec.TYPE_NAMES: the types this codec keys. */
    static final List<String> NAMES = Arrays.asList("char", "byte", "short", "int", "long",
        "float", "double", "string", "bytes", "date", "time", "timestamp", "decimal", "boolean");
    private static final Pattern SPEC = Pattern.compile(
        "([a-z]+)(?:\\(\\s*([0-9]{1,10})\\s*(?:,\\s*([0-9]{1,10})\\s*)?\\))?(\\s+binary)?");

    /** "long", "long binary", "string(50)" (VARCHAR(50)) and "char(3)" (CHAR(3)): strings,
     *  their length checked by the writer, not here; "decimal(10,2)" ("numeric" too).
     *  IllegalArgumentException for a type this codec does not know: a key computed for it
     *  would not be Python's. */
    public static Type parse(String spec) {
      Matcher m = SPEC.matcher(spec.trim().toLowerCase(Locale.ROOT));
      if (!m.matches()) throw unknown(spec);
      String name = m.group(1).equals("numeric") ? "decimal" : m.group(1);
      boolean binary = m.group(4) != null;
      if (!NAMES.contains(name)) throw unknown(spec);
      if (m.group(2) == null) return new Type(name, binary);
      long n = Long.parseLong(m.group(2));
      if ((name.equals("string") || name.equals("char")) && m.group(3) == null
          && n >= 1 && n <= Integer.MAX_VALUE) {
        return new Type("string", binary);  // a declared length: checked on write, not here
      }
      long sc = m.group(3) == null ? 0 : Long.parseLong(m.group(3));
      if (name.equals("decimal") && n >= 1 && n <= DecimalCodec.MAX_PRECISION
          && sc >= 0 && sc <= n) {
        return new Type(name, binary, (int) n, (int) sc);
      }
      throw unknown(spec);
    }

    private static IllegalArgumentException unknown(String spec) {
      return new IllegalArgumentException("column type '" + spec + "' is unknown to this "
          + "hibase coprocessor (valid: " + String.join(", ", NAMES) + ", string(n), char(n), "
          + "decimal(p,s), optionally followed by ' binary')");
    }

    /** As codec.ColumnType's str(): "decimal(10,2) binary"; "string" for a VARCHAR(n). */
    @Override
    public String toString() {
      String base = precision >= 0 ? "decimal(" + precision + "," + scale + ")" : name;
      return binary ? base + " binary" : base;
    }
  }

  public static final byte NULL = 0x00, PRESENT = 0x01;

  // Python's float() grammar (codec._FLOAT_CHARS already excludes whitespace and '_')
  private static final Pattern FLOAT = Pattern.compile(
      "[+-]?(?:(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf(?:inity)?|nan))");

  private static int width(String name) {
    switch (name) {
      case "byte": return 1;
      case "short": return 2;
      case "int": return 4;
      case "long": return 8;
      default: return 0;
    }
  }

  /** codec.cell_key: the key encoding of a stored cell's value, or null for NaN. */
  public static byte[] cellKey(Type t, byte[] raw) throws Malformed {
    int w = width(t.name);
    if (w > 0) return intKey(w, t.binary ? binInt(t, w, raw) : textInt(t, w, raw));
    switch (t.name) {
      case "float":
      case "double": {
        boolean is32 = t.name.equals("float");
        double v;
        if (t.binary) {
          if (raw.length != (is32 ? 4 : 8)) throw bad(t, raw, "wrong width");
          v = is32 ? Float.intBitsToFloat(ByteBuffer.wrap(raw).getInt())
                   : Double.longBitsToDouble(ByteBuffer.wrap(raw).getLong());
        } else {
          v = textFloat(t, raw, is32);
        }
        if (Double.isNaN(v)) return null;
        return floatKey(is32, v);
      }
      case "char": {
        char ch;
        if (t.binary) {
          if (raw.length != 2) throw bad(t, raw, "expected 2 bytes");
          ch = (char) (((raw[0] & 0xff) << 8) | (raw[1] & 0xff));
        } else {
          String s = utf8(t, raw);
          if (s.length() != 1 || Character.isSurrogate(s.charAt(0)))
            throw bad(t, raw, "expected exactly one character U+0000..U+FFFF");
          ch = s.charAt(0);
        }
        return new byte[] {(byte) (ch >> 8), (byte) ch};
      }
      case "string":  // VARCHAR(n) and CHAR(n) too: a cell's key is its text, as codec.cell_key
        utf8(t, raw);  // the key's order relies on valid UTF-8
        return escape(raw);
      case "bytes":
        return escape(raw);
      case "boolean":
        return new byte[] {bool(t, raw) ? (byte) 1 : (byte) 0};
      case "date":
      case "time":
      case "timestamp":
        return TemporalCodec.cellKey(t, raw);
      case "decimal":
        return DecimalCodec.cellKey(t, raw);
      default:
        throw bad(t, raw, "unknown type " + t.name);
    }
  }

  static Malformed bad(Type t, byte[] raw, String why) {
    return new Malformed("invalid " + t + " value " + hex(raw) + ": " + why);
  }

  /** A BOOLEAN cell: 'true' / 'false' in any case (ASCII); binary one byte, any non-zero byte
   *  true (Bytes.toBoolean). */
  private static boolean bool(Type t, byte[] raw) throws Malformed {
    if (t.binary) {
      if (raw.length != 1) throw bad(t, raw, "expected 1 byte");
      return raw[0] != 0;
    }
    if (asciiIgnoreCase(raw, "true")) return true;
    if (asciiIgnoreCase(raw, "false")) return false;
    throw bad(t, raw, "not a boolean (true or false)");
  }

  /** raw equals the lower-case ASCII word w, ASCII letters in any case (Python's bytes.lower). */
  private static boolean asciiIgnoreCase(byte[] raw, String w) {
    if (raw.length != w.length()) return false;
    for (int i = 0; i < raw.length; i++) {
      int b = raw[i] & 0xff;
      if (b >= 'A' && b <= 'Z') b += 'a' - 'A';
      if (b != w.charAt(i)) return false;
    }
    return true;
  }

  private static String utf8(Type t, byte[] raw) throws Malformed {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(raw)).toString();
    } catch (CharacterCodingException e) {
      throw bad(t, raw, "not valid UTF-8");
    }
  }

  private static long binInt(Type t, int w, byte[] raw) throws Malformed {
    if (raw.length != w) throw bad(t, raw, "expected " + w + " bytes");
    long v = raw[0];  // sign-extended
    for (int i = 1; i < w; i++) v = (v << 8) | (raw[i] & 0xff);
    return v;
  }

  private static long textInt(Type t, int w, byte[] raw) throws Malformed {
    int start = raw.length > 0 && (raw[0] == '-' || raw[0] == '+') ? 1 : 0;
    if (raw.length == start) throw bad(t, raw, "not a decimal integer");
    for (int i = start; i < raw.length; i++) {
      if (raw[i] < '0' || raw[i] > '9') throw bad(t, raw, "not a decimal integer");
    }
    BigInteger v = new BigInteger(new String(raw, start, raw.length - start,
                                             StandardCharsets.US_ASCII));
    if (raw[0] == '-') v = v.negate();
    BigInteger hi = BigInteger.ONE.shiftLeft(8 * w - 1);
    if (v.compareTo(hi.negate()) < 0 || v.compareTo(hi) >= 0) throw bad(t, raw, "out of range");
    return v.longValue();
  }

  private static double textFloat(Type t, byte[] raw, boolean is32) throws Malformed {
    String s = new String(raw, StandardCharsets.ISO_8859_1);
    if (!FLOAT.matcher(s).matches()) throw bad(t, raw, "not a number");
    String body = s.startsWith("+") || s.startsWith("-") ? s.substring(1) : s;
    boolean neg = s.startsWith("-");
    double v;
    char c0 = Character.toLowerCase(body.charAt(0));
    if (c0 == 'i') {
      v = neg ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
    } else if (c0 == 'n') {
      v = Double.NaN;
    } else {
      v = Double.parseDouble(s);  // correctly rounded, as Python's float()
      if (Double.isInfinite(v)) throw bad(t, raw, "out of range");
    }
    if (is32) {
      float f = (float) v;  // Python: float() then rounded to float32 (struct.pack('>f'))
      if (Float.isInfinite(f) && !Double.isInfinite(v)) throw bad(t, raw, "out of float32 range");
      v = f;
    }
    return v;
  }

  /** Ints: the value plus the bias 2^(bits-1), unsigned big-endian. */
  static byte[] intKey(int w, long v) {
    byte[] out = new byte[w];
    for (int i = w - 1; i >= 0; i--) { out[i] = (byte) v; v >>= 8; }
    out[0] ^= (byte) 0x80;
    return out;
  }

  /** Floats: -0.0 as 0.0; negative: every bit inverted, positive: the sign bit set. */
  static byte[] floatKey(boolean is32, double v) {
    v = v + 0.0;
    byte[] b;
    if (is32) {
      b = ByteBuffer.allocate(4).putFloat((float) v).array();
    } else {
      b = ByteBuffer.allocate(8).putDouble(v).array();
    }
    if ((b[0] & 0x80) != 0) {
      for (int i = 0; i < b.length; i++) b[i] = (byte) ~b[i];
    } else {
      b[0] ^= (byte) 0x80;
    }
    return b;
  }

  /** codec.escape_bytes: 0x00 as 0x00 0xFF, then the terminator 0x00 0x00. */
  public static byte[] escape(byte[] raw) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(raw.length + 4);
    for (byte x : raw) {
      out.write(x);
      if (x == 0) out.write(0xff);
    }
    out.write(0);
    out.write(0);
    return out.toByteArray();
  }

  /** IndexSpec.cells_key with a malformed cell refused (Malformed; cells_key and
   *  valueKeyLenient take it as NULL): alias | first value's key | (0x00 | 0x01 + key) per
   *  later column; the null alias (or null: no entry) when the first column is absent or NaN.
   *  cells holds the row's raw newest values by column (null: absent); rowExists: the row has
   *  any cell. */
  public static byte[] valueKey(byte[] alias, byte[] nullAlias, Type[] types, byte[][] cells,
                                boolean rowExists) throws Malformed {
    ByteArrayOutputStream out = new ByteArrayOutputStream(32);
    out.write(alias, 0, alias.length);
    for (int i = 0; i < types.length; i++) {
      byte[] k = cells[i] == null ? null : cellKey(types[i], cells[i]);
      if (i == 0) {
        if (k == null) return nullAlias != null && rowExists ? nullAlias : null;
        out.write(k, 0, k.length);
      } else if (k == null) {
        out.write(NULL);
      } else {
        out.write(PRESENT);
        out.write(k, 0, k.length);
      }
    }
    return out.toByteArray();
  }

  /** valueKey with each cell that does not parse as its type taken as absent (NULL), as
   *  hibase's readers, queries and verify treat it (a client that skips hibase's checks wrote
   *  it): the other columns keep their values. */
  public static byte[] valueKeyLenient(byte[] alias, byte[] nullAlias, Type[] types,
                                       byte[][] cells, boolean rowExists) {
    byte[][] parsed = cells.clone();
    for (int i = 0; i < parsed.length; i++) {
      if (parsed[i] == null) continue;
      try {
        cellKey(types[i], parsed[i]);
      } catch (Malformed e) {
        parsed[i] = null;
      }
    }
    try {
      return valueKey(alias, nullAlias, types, parsed, rowExists);
    } catch (Malformed never) {
      return null;
    }
  }

  // -- msgpack (use_bin_type=True): lists of bytes / None, as store/cells.py's pack -----------

  /** msgpack of a list whose items are byte strings or null. */
  public static byte[] packList(List<byte[]> items) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(16);
    int n = items.size();
    if (n < 16) {
      out.write(0x90 | n);
    } else if (n < 65536) {
      out.write(0xdc);
      out.write(n >> 8);
      out.write(n);
    } else {
      out.write(0xdd);
      writeInt(out, n);
    }
    for (byte[] b : items) {
      if (b == null) {
        out.write(0xc0);
        continue;
      }
      int len = b.length;
      if (len < 256) {
        out.write(0xc4);
        out.write(len);
      } else if (len < 65536) {
        out.write(0xc5);
        out.write(len >> 8);
        out.write(len);
      } else {
        out.write(0xc6);
        writeInt(out, len);
      }
      out.write(b, 0, len);
    }
    return out.toByteArray();
  }

  private static void writeInt(ByteArrayOutputStream out, int n) {
    out.write(n >>> 24);
    out.write(n >>> 16);
    out.write(n >>> 8);
    out.write(n);
  }

  /** Decode the msgpack subset hibase's meta uses: arrays, bin/str, ints, nil, bools. */
  public static Object unpack(byte[] b) {
    return new Unpacker(b).next();
  }

  private static final class Unpacker {
    final ByteBuffer buf;

    Unpacker(byte[] b) { buf = ByteBuffer.wrap(b); }

    Object next() {
      int c = buf.get() & 0xff;
      if (c <= 0x7f) return (long) c;
      if (c >= 0xe0) return (long) (byte) c;
      if ((c & 0xf0) == 0x90) return array(c & 0x0f);
      if ((c & 0xe0) == 0xa0) return bytes(c & 0x1f);
      switch (c) {
        case 0xc0: return null;
        case 0xc2: return Boolean.FALSE;
        case 0xc3: return Boolean.TRUE;
        case 0xc4: case 0xd9: return bytes(buf.get() & 0xff);
        case 0xc5: case 0xda: return bytes(buf.getShort() & 0xffff);
        case 0xc6: case 0xdb: return bytes(buf.getInt());
        case 0xcc: return (long) (buf.get() & 0xff);
        case 0xcd: return (long) (buf.getShort() & 0xffff);
        case 0xce: return buf.getInt() & 0xffffffffL;
        case 0xcf: return buf.getLong();
        case 0xd0: return (long) buf.get();
        case 0xd1: return (long) buf.getShort();
        case 0xd2: return (long) buf.getInt();
        case 0xd3: return buf.getLong();
        case 0xdc: return array(buf.getShort() & 0xffff);
        case 0xdd: return array(buf.getInt());
        default: throw new IllegalArgumentException("msgpack type 0x" + Integer.toHexString(c));
      }
    }

    List<Object> array(int n) {
      List<Object> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) out.add(next());
      return out;
    }

    byte[] bytes(int n) {
      byte[] out = new byte[n];
      buf.get(out);
      return out;
    }
  }

  // -- hex, and the test-vector check -------------------------------------------------------

  public static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) sb.append(String.format("%02x", x));
    return sb.toString();
  }

  public static byte[] unhex(String s) {
    if (s.equals("-")) return new byte[0];
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return b;
  }

}
