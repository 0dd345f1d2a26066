// DATE, TIME and TIMESTAMP cells and keys as hibase's codec.py has them (_date_*, _time_*,
// _ts_*), for HibaseCodec.cellKey: byte for byte, checked by tests/golden/codec_vectors.txt.
//
// Text cells: ISO 8601 ('2024-01-02', '13:45[:00[.fff]]', '2024-01-02[( |T)13:45[:00[.fff]]]'
// with an optional 'Z' or +hh[:]mm offset, converted to UTC; digits past microseconds
// dropped). Binary cells: Bytes.toBytes(long) milliseconds since 1970 (DATE: the day it falls
// in; TIME: the time of day), a TIMESTAMP's 12-byte form adding the int nanoseconds within the
// millisecond. Values lie in years 1..9999 (Python's datetime). Keys: DATE the day number +
// 2^31 (4 bytes), TIME the microseconds of the day (8 bytes), TIMESTAMP the microseconds since
// 1970 + 2^63 (8 bytes), all big-endian.
package io.hibase;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

final class TemporalCodec {
  private TemporalCodec() {}

  private static final long DAY_MS = 86_400_000L, DAY_US = 86_400_000_000L;
  /** Days since 1970-01-01 of 0001-01-01 and 9999-12-31 (Python's date.min and max). */
  private static final long MIN_DAY = -719_162, MAX_DAY = 2_932_896;
  private static final long MIN_US = MIN_DAY * DAY_US, MAX_US = (MAX_DAY + 1) * DAY_US - 1;

  private static final String D = "([0-9]{4})-([0-9]{2})-([0-9]{2})";
  private static final String T = "([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\\.([0-9]{1,9}))?)?";
  private static final Pattern DATE = Pattern.compile(D);
  private static final Pattern TIME = Pattern.compile(T);
  // codec._TS_TEXT: groups 1-3 the date, 4-7 the time, 8 the offset
  private static final Pattern TIMESTAMP = Pattern.compile(
      D + "(?:[ T]" + T + ")?(Z|[+-][0-9]{2}:?[0-9]{2})?");

  static byte[] cellKey(HibaseCodec.Type t, byte[] raw) throws HibaseCodec.Malformed {
    switch (t.name) {
      case "date": {
        long day = t.binary ? Math.floorDiv(millis(t, raw), DAY_MS) : textDay(t, raw);
        if (day < MIN_DAY || day > MAX_DAY) throw HibaseCodec.bad(t, raw, "out of range");
        return ByteBuffer.allocate(4).putInt((int) day ^ Integer.MIN_VALUE).array();
      }
      case "time": {
        long us = t.binary ? Math.floorMod(millis(t, raw), DAY_MS) * 1000 : textTime(t, raw);
        return ByteBuffer.allocate(8).putLong(us).array();
      }
      case "timestamp": {
        long us = t.binary ? binaryTimestamp(t, raw) : textTimestamp(t, raw);
        if (us < MIN_US || us > MAX_US) throw HibaseCodec.bad(t, raw, "out of range");
        return ByteBuffer.allocate(8).putLong(us ^ Long.MIN_VALUE).array();
      }
      default:
        throw HibaseCodec.bad(t, raw, "not a temporal type");
    }
  }

  private static long millis(HibaseCodec.Type t, byte[] raw) throws HibaseCodec.Malformed {
    if (raw.length != 8) throw HibaseCodec.bad(t, raw, "expected 8 bytes");
    return ByteBuffer.wrap(raw).getLong();
  }

  /** 8 bytes: the millis; 12: the millis and the nanoseconds within it (0..999999), those
   *  below the microsecond dropped. */
  private static long binaryTimestamp(HibaseCodec.Type t, byte[] raw)
      throws HibaseCodec.Malformed {
    if (raw.length != 8 && raw.length != 12) throw HibaseCodec.bad(t, raw, "expected 8 or 12 bytes");
    ByteBuffer b = ByteBuffer.wrap(raw);
    long ms = b.getLong();
    int nanos = raw.length == 12 ? b.getInt() : 0;
    if (nanos < 0 || nanos >= 1_000_000) {
      throw HibaseCodec.bad(t, raw, "nanoseconds within the millisecond out of range");
    }
    if (ms < MIN_US / 1000 - 1 || ms > MAX_US / 1000 + 1) throw HibaseCodec.bad(t, raw, "out of range");
    return ms * 1000 + nanos / 1000;
  }

  private static String ascii(byte[] raw) {  // non-ASCII bytes match none of the patterns
    return new String(raw, StandardCharsets.ISO_8859_1);
  }

  private static long textDay(HibaseCodec.Type t, byte[] raw) throws HibaseCodec.Malformed {
    Matcher m = DATE.matcher(ascii(raw));
    if (!m.matches()) throw HibaseCodec.bad(t, raw, "not a date (YYYY-MM-DD)");
    return day(t, raw, m, 1);
  }

  /** The day number of the date in groups g..g+2 (a real Gregorian date in years 1..9999). */
  private static long day(HibaseCodec.Type t, byte[] raw, Matcher m, int g)
      throws HibaseCodec.Malformed {
    int y = Integer.parseInt(m.group(g));
    try {
      if (y < 1) throw new DateTimeException("year 0");
      return LocalDate.of(y, Integer.parseInt(m.group(g + 1)), Integer.parseInt(m.group(g + 2)))
          .toEpochDay();
    } catch (DateTimeException e) {
      throw HibaseCodec.bad(t, raw, "not a date");
    }
  }

  private static long textTime(HibaseCodec.Type t, byte[] raw) throws HibaseCodec.Malformed {
    Matcher m = TIME.matcher(ascii(raw));
    if (!m.matches()) throw HibaseCodec.bad(t, raw, "not a time (HH:MM:SS[.fff])");
    return timeOfDay(t, raw, m, 1);
  }

  /** The microseconds of the day of the time in groups g..g+3 (hour, minute, second,
   *  fraction; the last two optional). */
  private static long timeOfDay(HibaseCodec.Type t, byte[] raw, Matcher m, int g)
      throws HibaseCodec.Malformed {
    int h = Integer.parseInt(m.group(g)), mi = Integer.parseInt(m.group(g + 1));
    int s = m.group(g + 2) == null ? 0 : Integer.parseInt(m.group(g + 2));
    if (h > 23 || mi > 59 || s > 59) throw HibaseCodec.bad(t, raw, "not a time");
    String frac = m.group(g + 3) == null ? "" : m.group(g + 3);
    long us = frac.isEmpty() ? 0 : Long.parseLong((frac + "000000").substring(0, 6));
    return ((h * 60L + mi) * 60 + s) * 1_000_000 + us;
  }

  private static long textTimestamp(HibaseCodec.Type t, byte[] raw)
      throws HibaseCodec.Malformed {
    Matcher m = TIMESTAMP.matcher(ascii(raw));
    if (!m.matches()) {
      throw HibaseCodec.bad(t, raw, "not a timestamp (YYYY-MM-DD HH:MM:SS[.fff])");
    }
    long us = day(t, raw, m, 1) * DAY_US + (m.group(4) == null ? 0 : timeOfDay(t, raw, m, 4));
    String zone = m.group(8);
    if (zone != null && !zone.equals("Z")) {  // to UTC; Python checks neither hh nor mm
      long minutes = Integer.parseInt(zone.substring(1, 3)) * 60L
          + Integer.parseInt(zone.substring(zone.length() - 2));
      us -= (zone.charAt(0) == '-' ? -1 : 1) * minutes * 60_000_000L;
    }
    return us;
  }
}
