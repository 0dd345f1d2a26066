"""Test vectors shared by codec.py and its Java port (coprocessor/java/io/hibase/HibaseCodec.java):
`python tests/codec_vectors.py > tests/golden/codec_vectors.txt` writes them from Python;
tests/test_coprocessor.py checks the file is what Python writes now and runs the Java check
(CodecVectors.main) over it. Line format: CodecVectors.main's comment."""

from __future__ import annotations

import datetime as dt
import math
import struct
import sys
from decimal import Decimal

from hibase import codec
from hibase.errors import SchemaError, ValueTypeError
from hibase.index.spec import IndexSpec
from hibase.store import cells as C


def _h(b: bytes | None) -> str:
    if b is None:
        return "~"
    return b.hex() or "-"


def _key(t: codec.ColumnType, raw: bytes) -> str:
    try:
        k = codec.cell_key(t, raw)
    except ValueTypeError:
        return "error"
    return "null" if k is None else (k.hex() or "-")


_INT_RANGE = {"byte": 8, "short": 16, "int": 32, "long": 64}
FLOATS = [0.0, -0.0, 1.5, -1.5, 0.1, -123.456, 1e-300, -1e-300, 5e-324, -5e-324,
          1.7976931348623157e308, -1.7976931348623157e308, 3.4028234663852886e38, 1e-45,
          1.401298464324817e-45, 2.0 ** -149, 1e100, -1e100, math.inf, -math.inf, math.nan,
          16777217.0, 0.30000000000000004, 1.0000000596046448, 123456789.0]
FLOAT_TEXT = [b"1.", b".5", b"+.5e-3", b"Infinity", b"-inf", b"+INF", b"nan", b"NaN", b"-nan",
              b"1e400", b"-1e400", b"1e-400", b"1.5f", b"0x10", b"1e", b"e5", b"--1", b"inF",
              b"infinit", b"3.4028235677973366e38", b"3.4028236e38", b"3.40282357e38",
              b"1.00000005960464477539062500001", b"1.000000059604644775390625",
              b"0.000000000000000000000000000000000000000000001", b"", b" 1", b"1 ", b"1_0",
              b"0e99999999999", b"123456789012345678901234567890", b"7.0E-46", b"-0",
              b"0.1e-0000000000000000001", b"\xd9\xa1"]
INT_TEXT = [b"+5", b"-0", b"007", b"", b"-", b"+", b"1.0", b"12a", b" 1",
            b"99999999999999999999999", b"\xd9\xa1", b"1e3", b"0x1"]
CHARS = ["a", "\x00", "é", "€", "\uffff", "\u07ff", "\u0800", "Z"]
CHAR_RAW = [b"", b"ab", b"\xed\xa0\x80", "😀".encode(), b"\xc0\x80", b"\xff", b"\xe2\x82"]
STRINGS = ["", "abc", "a\x00b", "\x00", "\x00\x00", "日本", "😀", "a\uffffb"]
STRING_RAW = [b"\xff", b"\xed\xa0\x80", b"\xc0\x80", b"\xf4\x90\x80\x80", b"a\xe2\x82",
              b"\xef\xbf\xbf"]
BYTES = [b"", b"\x00", b"\x00\xff", b"a\x00\x00b", b"\xff\xff", b"\x01\x00", bytes(range(256))]


D, T, TS = dt.date, dt.time, dt.datetime
DATES = [D(1970, 1, 1), D(1969, 12, 31), D(1, 1, 1), D(9999, 12, 31), D(2024, 2, 29),
         D(2000, 2, 29), D(1900, 3, 1), D(1582, 10, 4), D(1960, 6, 15), D(2038, 1, 19)]
DATE_TEXT = [b"2023-02-29", b"1900-02-29", b"0000-01-01", b"2024-1-2", b"20240102",
             b"2024-01-02 ", b" 2024-01-02", b"2024-01-02T00:00", b"", b"2024-13-01",
             b"2024-00-10", b"2024-01-32", b"2024-04-31", b"10000-01-01", b"2024/01/02",
             b"\xd9\xa1\xd9\xa2\xd9\xa3\xd9\xa4-01-02"]
TIMES = [T(0, 0), T(23, 59, 59, 999999), T(12, 0, 0, 1000), T(1, 2, 3, 4), T(23, 59, 59, 999000),
         T(0, 0, 0, 1), T(13, 45)]
TIME_TEXT = [b"13:45", b"13:45:00.1", b"13:45:00.123456789", b"13:45:00.1234567891",
             b"24:00", b"23:60", b"23:59:60", b"1:02:03", b"13:45:", b"13:45:00.", b"T13:45",
             b"00:00:00.000000", b"13:45 ", b"", b"13:45:00Z"]
TIMESTAMPS = [TS(1970, 1, 1), TS(1969, 12, 31, 23, 59, 59, 999999), TS(1, 1, 1),
              TS(9999, 12, 31, 23, 59, 59, 999999), TS(2024, 2, 29, 12, 30, 45, 123000),
              TS(2024, 2, 29, 12, 30, 45, 123456), TS(1900, 1, 1, 0, 0, 0, 1),
              TS(1969, 12, 31, 23, 59, 59, 999000), TS(2000, 1, 1, 0, 0, 0, 500)]
TS_TEXT = [b"2024-01-02", b"2024-01-02T13:45", b"2024-01-02 13:45:00Z",
           b"2024-01-02T13:45:00.123456789+05:30", b"2024-01-02T00:30+0100",
           b"2024-01-02-08:00", b"2024-01-02Z", b"0001-01-01T00:00+01:00",
           b"9999-12-31T23:30-01:00", b"0001-01-01T00:00-01:00", b"9999-12-31T23:59+00:59",
           b"2024-01-02 10:00+99:99", b"2024-01-02t13:45", b"2024-01-02  13:45",
           b"2024-01-02 13:45:00.", b"2024-01-02 13:45+5:30", b"2024-01-02 13:45z",
           b"2024-02-30 00:00", b"2024-01-02 24:00", b"2024-01-02 13:45:00.1234567891", b""]
_MS, _I4 = struct.Struct(">q"), struct.Struct(">i")
MAX_MS = 253402300799999
MIN_MS = -62135596800000
MILLIS = [b"".join([_MS.pack(v)]) for v in (
    -1, 1, -86400000, 86399999, 86400000, -86400001, MIN_MS, MAX_MS, MIN_MS - 1, MAX_MS + 1,
    2 ** 63 - 1, -2 ** 63, 1709209845123)] + [b"\x00" * 4, b"", b"\x00" * 9]
TS12 = [_MS.pack(ms) + _I4.pack(ns) for ms, ns in (
    (0, 999999), (0, 1000000), (0, -1), (0, 500), (-1, 999999), (-1, 1000),
    (MAX_MS, 999999), (MIN_MS, 0), (MIN_MS - 1, 999999), (1709209845123, 456789))]
DECIMALS = [Decimal(x) for x in (
    "0", "-0", "0.001", "1E+10", "-123456789012345678901234567890.123456789", "1.50", "-1.5",
    "12345678901234567890123456789012345678", "0.1", "-0.000001", "1e-30", "9" * 38,
    "-" + "9" * 38, "100", "-100.000", "5E+3", "0.00000000000000000000000000000000000001")]
DECIMAL_TEXT = [b"1.", b".5", b"+.5e-3", b"-0.000", b"1e", b"NaN", b"inf", b"1_0", b" 1",
                b"1 ", b"", b".", b"+", b"1e9999999", b"1e999999", b"1e1000000", b"9.5e999999",
                b"-1e-999999", b"1e-1000074", b"-1e-1000075", b"12e-1000076",
                b"1" + b"0" * 80 + b"1", b"1" + b"0" * 75 + b"5", b"1" + b"0" * 74 + b"15",
                b"-1" + b"0" * 74 + b"25", b"9" * 77, b"0e999999999", b"1e999999999",
                b"1e1000000000", b"-1e-999999999", b"1e+0000000001", b"1E-0000000000001",
                b"3.145", b"-3.145", b"2.5", b"-2.5", b"99999999.995", b"99999999.994",
                b"-0.005", b"-0.004", b"0.0049999999999", b"1E+10", b"1e37", b"1e38",
                b"-9999999999999999999999999999999999999.5", b"0x10", b"1e+", b"\xd9\xa1"]


def _dec_bin(unscaled: int, scale: int) -> bytes:
    n = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return _I4.pack(scale) + unscaled.to_bytes(n, "big", signed=True)


DECIMAL_BIN = [_dec_bin(*x) for x in (
    (1, 2000150), (1, 2000151), (0, 2000150), (0, 2000151), (0, -2000151), (1, -999999),
    (1, -1000000), (-95, -999999), (1, 1000074), (12, 1000075), (10 ** 80 + 1, 0),
    (int("2" + "4" + "9" * 75 + "5"), 77), (-3145, 3), (25, 1), (-25, 1), (-1, 0),
    (99999999995, 3), (2 ** 31 - 1, 0), (-2 ** 127, 20), (5, -3))] + [
    b"\x00\x00\x00\x00", b"", b"\x00\x00\x00\x00\xff", b"\x00\x00\x00\x02\x00\x00\x00\x00\x00"]
BOOL_RAW = [b"TRUE", b"True", b"tRuE", b"FALSE", b"False", b"yes", b"1", b"0", b"", b"true ",
            b"t", b"\xd4rue", b"\xf4rue", b"\x00", b"\xff", b"\x01", b"\x80", b"\x00\x00"]
DECIMAL_SPECS = ["decimal(10,2)", "decimal(5,0)", "decimal(38,38)", "decimal(38,0)",
                 "decimal(1,1)", "decimal(3,1)"]


def _encodable(t: codec.ColumnType, values: list) -> list[bytes]:
    out = []
    for v in values:
        try:
            out.append(codec.encode_cell(t, v))
        except ValueTypeError:
            pass
    return out


def cell_lines() -> list[str]:
    out = []
    for name in codec.TYPE_NAMES:
        for binary in (False, True):
            t = codec.ColumnType(name, binary)
            raws: list[bytes] = []
            if name == "date":
                raws += _encodable(t, DATES) + (MILLIS if binary else DATE_TEXT)
            elif name == "time":
                raws += _encodable(t, TIMES) + (MILLIS if binary else TIME_TEXT)
            elif name == "timestamp":
                raws += _encodable(t, TIMESTAMPS) + (MILLIS + TS12 if binary else TS_TEXT)
            elif name == "decimal":
                raws += _encodable(t, DECIMALS) + (DECIMAL_BIN if binary else DECIMAL_TEXT)
            elif name == "boolean":
                raws += _encodable(t, [True, False]) + BOOL_RAW
            elif name in _INT_RANGE:
                bits = _INT_RANGE[name]
                lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
                for v in (0, 1, -1, 42, -42, lo, hi, lo + 1, hi - 1, 255, -256, 1000):
                    if lo <= v <= hi:
                        raws.append(codec.encode_cell(t, v))
                if binary:
                    raws += [b"", b"\x00" * (bits // 8 + 1), b"\x80" * (bits // 8)]
                else:
                    raws += INT_TEXT + [b"%d" % (hi + 1), b"%d" % (lo - 1)]
            elif name in ("float", "double"):
                for v in FLOATS:
                    try:
                        raws.append(codec.encode_cell(t, v))
                    except ValueTypeError:
                        pass
                if binary:
                    w = 4 if name == "float" else 8
                    fmt = ">f" if w == 4 else ">d"
                    raws += [b"\x7f\xc0\x00\x00" if w == 4 else b"\x7f\xf8" + b"\x00" * 6,
                             b"\xff\xc0\x00\x01" if w == 4 else b"\xff\xf8" + b"\x00" * 5 + b"\x01",
                             struct.pack(fmt, -0.0), b"\x00" * (w + 1), b""]
                else:
                    raws += FLOAT_TEXT
            elif name == "char":
                raws += [codec.encode_cell(t, ch) for ch in CHARS]
                raws += [b"\xd8\x00", b"\x00"] if binary else CHAR_RAW
            elif name == "string":
                raws += [s.encode() for s in STRINGS] + STRING_RAW
            else:
                raws += BYTES
            for raw in dict.fromkeys(raws):
                out.append(f"cell {name} {int(binary)} {_h(raw)} {_key(t, raw)}")
    for spec in ("string(5)", "char(3)"):  # VARCHAR(n), CHAR(n): keyed as strings
        t = codec.parse_type(spec)
        for raw in [s.encode() for s in STRINGS] + [b"EN", b"EN ", b"toolong"] + STRING_RAW:
            out.append(f"cell {spec} 0 {_h(raw)} {_key(t, raw)}")
    for spec in DECIMAL_SPECS:  # DECIMAL(p,s): rounded half up to s digits, at most p digits
        for binary in (False, True):
            t = codec.parse_type(spec + " binary" * binary)
            plain = codec.ColumnType("decimal", binary)
            raws = _encodable(plain, DECIMALS) + (DECIMAL_BIN if binary else DECIMAL_TEXT)
            for raw in dict.fromkeys(raws):
                out.append(f"cell {spec} {int(binary)} {_h(raw)} {_key(t, raw)}")
    return out


TYPE_SPECS = ["date", "time binary", "timestamp", "decimal", "numeric", "decimal(10,2)",
              "decimal(10, 2)", "NUMERIC(5)", "Decimal(38,38) binary", "decimal(39,2)",
              "decimal(0)", "decimal(3,4)", "decimal(1,0)", "datetime", "interval", "string(50)",
              "char(3)", "char", "long binary", "boolean binary", "bool", "varchar", "long(5)",
              "string(0)", "date binary binary", "unsigned_date", "boolean", "bytes", "decimal()",
              "decimal(5,)", "string(2147483647)", "string(2147483648)", "decimal(10,2)binary"]


def type_lines() -> list[str]:
    """The column types the coprocessor keys, as Java's Type.parse reads them (a VARCHAR(n) or
    CHAR(n) keys as a string), or "error": a type it refuses, never keys wrongly."""
    out = []
    for spec in TYPE_SPECS:
        try:
            t = codec.parse_type(spec)
            want = "string" if t.length is not None else str(t)
        except SchemaError:
            want = "error"
        out.append(f"type {spec.replace(' ', '_')} {want.replace(' ', '_')}")
    return out


def _spec(types: list[str], null_alias: bytes | None) -> IndexSpec:
    cols = [b"f:c%d" % i for i in range(len(types))]
    return IndexSpec("i", "t", cols, [codec.parse_type(t) for t in types], [], b"\x00\x07",
                     False, "ready", null_alias)


def key_lines() -> list[str]:
    out = []
    composite = ["long", "string", "double binary", "char", "bytes"]
    long_, string, dbl = (codec.parse_type(t) for t in composite[:3])
    samples = [
        [codec.encode_cell(long_, -5), b"x\x00y", struct.pack(">d", -0.0), b"q", b"\x00"],
        [b"12", None, struct.pack(">d", 2.5), None, b""],
        [b"12", b"", None, None, None],
        [None, b"a", None, None, None],
        [b"nan", None, None, None, None],
        [b"1x", b"a", None, None, None],
        [b"7", b"\xff", None, None, None],
        [b"7", b"ok", struct.pack(">d", math.nan), b"\xc3\xa9", b"\xff"],
        [None, None, None, None, None],
    ]
    sql_types = ["date", "decimal", "boolean binary", "timestamp binary", "time"]
    sql_samples = [
        [b"2024-02-29", b"-1.50", b"\x01", _MS.pack(-1) + _I4.pack(999999), b"23:59:59.999999"],
        [b"1969-12-31", b"1e-1000075", b"\x00", None, b"00:00"],
        [b"2024-02-30", b"0.001", b"\x02", _MS.pack(0), None],
        [None, b"1E+10", b"", _MS.pack(0), b"24:00"],
        [b"0001-01-01", None, None, b"\x00" * 9, None],
    ]
    for null_alias in (b"\x00\x08", None):
        for types, rows in ((composite, samples), (["double"], samples),
                            (["string", "long binary"], samples), (sql_types, sql_samples),
                            (["decimal binary", "date binary"],
                             [[_dec_bin(-5, 1), _MS.pack(-86400001)], [_dec_bin(1, -1000000),
                              _MS.pack(0)]])):
            spec = _spec(types, null_alias)
            for sample in rows:
                vals = sample[:len(types)]
                for exists in (True, False):
                    cells = {col: raw for col, raw in zip(spec.columns, vals) if raw is not None}
                    if exists:
                        cells[b"g:other"] = b"1"
                    elif cells:
                        continue  # a row with cells exists
                    # a cell that does not parse is NULL (IndexObserver: valueKeyLenient)
                    k = spec.cells_key(cells)
                    want = "null" if k is None else k.hex()
                    out.append(f"key {spec.alias.hex()} {_h(null_alias)} "
                               f"{','.join(t.replace(' ', '_') for t in types)} "
                               f"{','.join(_h(v) for v in vals)} {int(exists)} {want}")
    return out


def pack_lines() -> list[str]:
    """Items as hex, or N*HEX for N repeats of a byte (big values stay short); a packing
    over 1 KB is written as sha256:<hex digest>."""
    import hashlib
    out = []
    big = {70000: b"x" * 70000}
    for items in ([], [None], [b""], [b"a" * 255], [b"a" * 256], [big[70000]], [b"r\x00w"],
                  [b"k%d" % i for i in range(15)], [b"k%d" % i for i in range(16)],
                  [None, b"v", None], [b"z"] * 70000):
        def item(v: bytes | None) -> str:
            if v is not None and len(v) > 64 and v == v[:1] * len(v):
                return f"{len(v)}*{v[:1].hex()}"
            return _h(v)
        if len(items) > 64 and all(v == items[0] for v in items):
            items_h = f"{len(items)}x{item(items[0])}"
        else:
            items_h = ",".join(item(v) for v in items) if items else "."
        packed = C.pack(items)
        want = packed.hex() if len(packed) <= 1024 else \
            "sha256:" + hashlib.sha256(packed).hexdigest()
        out.append(f"pack {items_h} {want}")
    return out


# text for the tokenizer (index/text.py, Tokens.java): scripts, case mappings with special
# rules (final sigma, dotted I, sharp s, titlecase digraphs), numbers that are not decimal
# digits (No / Nl: superscripts, fractions, Roman numerals, circled), combining marks
# (decomposed accents split a word), joiners, full-width forms, emoji, long runs
TEXTS = [
    "", "The quick brown Fox", "fox, FOX! fOx? foxes", "snake_case and kebab-case e-mail",
    "x2y 2024 3.14 1,000", "café CAFÉ Café", "cafe\u0301 (decomposed)", "Straße STRASSE",
    "İstanbul ıi IJ", "ΟΔΥΣΣΕΥΣ Σίσυφος ΣΑΣ σ", "Москва МОСКВА ёЁ", "日本語のテキスト 東京",
    "한국어 텍스트", "مرحبا ٣٤٥ بالعالم", "हिन्दी पाठ", "ภาษาไทย", "x²y ½ Ⅻ ① ⅷ ³⁄₄",
    "ǅungla ǆ Ǆ", "ʰello ˈstress", "ＡＢＣ１２３ ｆｕｌｌ", "a\u200db a\u00a0b a\tb\nc",
    "😀 emoji 👍🏽 ok", "ﬁne ﬂow", "𝐀𝐁𝐂 math", "٠١٢٣ ۴۵۶", "a" * 64, "b" * 65, "é" * 64,
    "İ" * 64, "Ⅰ Ⅱ ⅰ", "ꝩ Ꞵ ꞵ", "\u0130\u0307 i\u0307", "ΆΈΉ ΐ ΰ", "Ω ω Ω K k",
]
# random text over blocks assigned long before Java 17's Unicode 13 and Python's 14
_BLOCKS = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x531, 0x587),
           (0x5d0, 0x5ea), (0x621, 0x64a), (0x660, 0x669), (0x905, 0x96f), (0xe01, 0xe5b),
           (0x1e00, 0x1eff), (0x2070, 0x209c), (0x2150, 0x2188), (0x2460, 0x24ff),
           (0x3041, 0x3096), (0x4e00, 0x9fa5), (0xac00, 0xd7a3), (0xff10, 0xff5a)]


def token_lines() -> list[str]:
    """`tokens TYPE RAWHEX EXPECT`: a text index's value keys (alias 0001) of a cell."""
    import random

    from hibase.index.text import token_keys
    spec = IndexSpec("tx", "t", [b"f:body"], [codec.ColumnType("string")], alias=b"\x00\x01",
                     kind="text")
    rng = random.Random(43)
    texts = list(TEXTS)
    for _ in range(300):
        lo, hi = rng.choice(_BLOCKS)
        lo2, hi2 = rng.choice(_BLOCKS)
        texts.append("".join(chr(rng.randint(*rng.choice([(lo, hi), (lo2, hi2), (0x20, 0x40)])))
                             for _ in range(rng.randint(1, 24))))
    raws = [t.encode() for t in texts] + [b"\xff ok", b"ok \xed\xa0\x80", b"\xc0\x80"]
    out = []
    for raw in raws:
        keys = sorted(token_keys(spec, {b"f:body": raw}))
        out.append(f"tokens string {_h(raw)} {','.join(k.hex() for k in keys) or '.'}")
    return out


def salt_lines() -> list[str]:
    """Salted tables' stored rowkeys (store/salted.py; Salt.java): the hash over signed bytes,
    32-bit overflow, negative hashes, every bucket count's edge."""
    from hibase.store.salted import salted_key

    rows = [b"a", b"k000", b"\xff", b"\x80\x00", b"\xff" * 7, b"2026-11-28T10:11:52Z#42",
            bytes(range(256)), b"user:" + "\u00e9t\u00e9".encode(), b"\x00", b"z" * 100]
    return [f"salt {row.hex()} {n} {salted_key(row, n).hex()}"
            for row in rows for n in (1, 2, 3, 7, 8, 16, 100, 255, 256)]


def vectors() -> str:
    return "\n".join(["# written by tests/codec_vectors.py; checked by CodecVectors.main",
                      *cell_lines(), *type_lines(), *key_lines(), *pack_lines(),
                      *salt_lines(), *token_lines()]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(vectors())
