"""Test vectors shared by codec.py and its Java port (cluster/java/io/hibase/HibaseCodec.java):
`python tests/codec_vectors.py > tests/golden/codec_vectors.txt` writes them from Python;
tests/test_coprocessor.py checks the file is what Python writes now and runs the Java check
(HibaseCodec.main) over it. Line format: HibaseCodec.main's comment."""

from __future__ import annotations

import math
import struct
import sys

from hibase import codec
from hibase.errors import ValueTypeError
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


def cell_lines() -> list[str]:
    out = []
    for name in codec.TYPE_NAMES:
        for binary in (False, True):
            t = codec.ColumnType(name, binary)
            raws: list[bytes] = []
            if name in _INT_RANGE:
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
    for null_alias in (b"\x00\x08", None):
        for types in (composite, ["double"], ["string", "long binary"]):
            spec = _spec(types, null_alias)
            for sample in samples:
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


def vectors() -> str:
    return "\n".join(["# written by tests/codec_vectors.py; checked by HibaseCodec.main",
                      *cell_lines(), *key_lines(), *pack_lines()]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(vectors())
