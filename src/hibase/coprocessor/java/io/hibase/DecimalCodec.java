// DECIMAL and DECIMAL(p, s) cells and keys as hibase's codec.py has them (its _dec_* functions),
// for HibaseCodec.cellKey: byte for byte, checked by tests/golden/codec_vectors.txt.
//
// Python computes keys and binary cells in a decimal context of 76 digits (rounded half even)
// and exponents -999999..999999 (codec._DEC_CTX, Overflow and Underflow trapped); inContext
// is that context's rounding here, so a value Python refuses (a bad cell: NULL in indexes) is
// refused here too.
package io.hibase;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

final class DecimalCodec {
  private DecimalCodec() {}

  /** codec.MAX_PRECISION: the most digits a DECIMAL(p, s) declares. */
  static final int MAX_PRECISION = 38;
  private static final int PREC = 2 * MAX_PRECISION;
  private static final long EMAX = 999_999, EMIN = -999_999, ETINY = EMIN - PREC + 1;
  /** decimal's scaleb refuses to move an exponent further than 2 * (Emax + prec). */
  private static final long MAX_SCALEB = 2 * (EMAX + PREC);
  private static final MathContext CONTEXT = new MathContext(PREC, RoundingMode.HALF_EVEN);
  // codec._DEC_TEXT; group 1 the exponent
  private static final Pattern TEXT = Pattern.compile(
      "[+-]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE]([+-]?[0-9]+))?");

  /** codec.cell_key of a DECIMAL cell: the value (at the column's scale, within its
   *  precision) as _dec_enc_key encodes it. */
  static byte[] cellKey(HibaseCodec.Type t, byte[] raw) throws HibaseCodec.Malformed {
    BigDecimal d = t.binary ? binary(t, raw) : text(t, raw);
    if (t.scale >= 0) d = scaled(t, raw, d);
    return key(t, raw, d);
  }

  /** _dec_dec_text before the scale: the exact value of the text. */
  private static BigDecimal text(HibaseCodec.Type t, byte[] raw) throws HibaseCodec.Malformed {
    String s = new String(raw, StandardCharsets.ISO_8859_1);
    Matcher m = TEXT.matcher(s);
    if (!m.matches()) throw HibaseCodec.bad(t, raw, "not a number");
    String exp = m.group(1);
    if (exp != null && exp.replaceFirst("^[+-]?0*", "").length() > 9) {
      throw HibaseCodec.bad(t, raw, "exponent out of range");
    }
    try {
      return new BigDecimal(s);
    } catch (NumberFormatException e) {  // a scale past an int: only with a billion digits
      throw HibaseCodec.bad(t, raw, "out of range");
    }
  }

  /** _dec_dec_bin before the scale: Bytes.toBytes(BigDecimal), a 4-byte scale and the
   *  unscaled value's two's complement, read as decimal's scaleb does in the context. */
  private static BigDecimal binary(HibaseCodec.Type t, byte[] raw)
      throws HibaseCodec.Malformed {
    if (raw.length < 5) throw HibaseCodec.bad(t, raw, "expected at least 5 bytes");
    int scale = ByteBuffer.wrap(raw).getInt();
    if (scale > MAX_SCALEB || scale < -MAX_SCALEB) throw HibaseCodec.bad(t, raw, "out of range");
    BigInteger unscaled = new BigInteger(Arrays.copyOfRange(raw, 4, raw.length));
    return inContext(t, raw, new BigDecimal(unscaled, scale));
  }

  /** The value as Python's context leaves it: a zero as it is; below the smallest normal
   *  exponent exact or refused (Underflow); else rounded half even to 76 digits, refused past
   *  the largest exponent (Overflow). */
  private static BigDecimal inContext(HibaseCodec.Type t, byte[] raw, BigDecimal d)
      throws HibaseCodec.Malformed {
    if (d.signum() == 0) return d;
    if (adjusted(d) < EMIN) {
      BigDecimal exact = d.stripTrailingZeros();
      if (-(long) exact.scale() < ETINY) throw HibaseCodec.bad(t, raw, "out of range");
      return exact;
    }
    if (d.precision() > PREC) d = d.round(CONTEXT);
    if (adjusted(d) > EMAX) throw HibaseCodec.bad(t, raw, "out of range");
    return d;
  }

  /** The exponent of the value's first digit: 10^adjusted <= |d| < 10^(adjusted + 1). */
  private static long adjusted(BigDecimal d) {
    return (long) d.precision() - d.scale() - 1;
  }

  /** _dec_checked with a scale: rounded half up to s fractional digits, at most p digits. */
  private static BigDecimal scaled(HibaseCodec.Type t, byte[] raw, BigDecimal d)
      throws HibaseCodec.Malformed {
    if (d.signum() == 0) return BigDecimal.ZERO;
    long adj = adjusted(d);
    if (adj > t.precision) {  // |d| >= 10^(p+1): more than p digits (and no huge setScale)
      throw HibaseCodec.bad(t, raw, "more than " + t.precision + " digits");
    }
    if (adj < -(long) t.scale - 2) return BigDecimal.ZERO;  // |d| < 10^-(s+1): rounds to 0
    BigDecimal r = d.setScale(t.scale, RoundingMode.HALF_UP);
    if (r.signum() != 0 && r.precision() > t.precision) {
      throw HibaseCodec.bad(t, raw, "more than " + t.precision + " digits");
    }
    return r;
  }

  /** _dec_enc_key: zero 0x80; else the normalized value 0.d1..dn x 10^e: positive 0x81,
   *  e + 2^31 (4 bytes), digit + 1 each, 0x00; negative 0x7F, the exponent bytes inverted,
   *  11 - digit each, 0xFF. */
  private static byte[] key(HibaseCodec.Type t, byte[] raw, BigDecimal d)
      throws HibaseCodec.Malformed {
    if (d.signum() == 0) return new byte[] {(byte) 0x80};
    BigDecimal n = inContext(t, raw, d).stripTrailingZeros();
    String digits = n.unscaledValue().abs().toString();
    long e = (long) digits.length() - n.scale() + (1L << 31);
    if (e < 0 || e >= 1L << 32) throw HibaseCodec.bad(t, raw, "out of range");
    boolean neg = n.signum() < 0;
    byte[] out = new byte[6 + digits.length()];
    out[0] = (byte) (neg ? 0x7f : 0x81);
    int ex = neg ? ~(int) e : (int) e;
    for (int i = 0; i < 4; i++) out[1 + i] = (byte) (ex >>> (24 - 8 * i));
    for (int i = 0; i < digits.length(); i++) {
      int x = digits.charAt(i) - '0';
      out[5 + i] = (byte) (neg ? 11 - x : x + 1);
    }
    out[out.length - 1] = (byte) (neg ? 0xff : 0x00);
    return out;
  }

  /** The value of a DECIMAL key (_dec_enc_key's: 0x80 zero; 0x81, exponent + 2^31, digit + 1
   *  each, 0x00; negative 0x7F, the exponent inverted, 11 - digit each, 0xFF) as an unscaled
   *  integer at `scale`: the value times 10^scale, exact for a value of at most `scale`
   *  fraction digits (a DECIMAL(p, s) cell's key at s); pushed-down SUM adds these. */
  static BigInteger unscaledOfKey(byte[] key, int scale) {
    if (key.length == 1 && key[0] == (byte) 0x80) return BigInteger.ZERO;
    boolean neg = key[0] == (byte) 0x7f;
    long e = ByteBuffer.wrap(key, 1, 4).getInt() & 0xffffffffL;
    if (neg) e ^= 0xffffffffL;
    StringBuilder digits = new StringBuilder();
    for (int i = 5; i < key.length - 1; i++) {
      digits.append((char) ('0' + (neg ? 11 - (key[i] & 0xff) : (key[i] & 0xff) - 1)));
    }
    // value = 0.d1..dn x 10^(e - 2^31) = D x 10^(e - 2^31 - n)
    long shift = e - (1L << 31) - digits.length() + scale;
    if (shift < 0) throw new IllegalArgumentException("a DECIMAL key with more than "
        + scale + " fraction digits");
    BigInteger v = new BigInteger(digits.toString()).multiply(BigInteger.TEN.pow((int) shift));
    return neg ? v.negate() : v;
  }
}
