"""Typed column values: cell layouts (shell-style text or HBase ``Bytes.toBytes`` binary) and the
order-preserving, self-delimiting key encodings that index row keys are built from."""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import functools
import math
import numbers
import operator
import re
import struct
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

from .errors import InvalidArgument, SchemaError, ValueTypeError

__all__ = [
    "TYPE_NAMES", "ColumnType", "parse_type", "type_from_name", "SQL_TYPE_ALIASES", "SQL_TYPE_NAMES",
    "sql_literal", "sql_type_name", "column_text",
    "decode_cell", "cell_decoder", "fast_decoder", "encode_cell", "validate_cell",
    "encode_key", "decode_key", "encode_composite", "decode_composite",
    "escape_bytes", "escape_prefix", "unescape_bytes", "prefix_successor",
    "value_from_literal",
    "cell_key", "BadCells", "MAX_PRECISION", "iso_text", "parse_date", "parse_time", "parse_timestamp",
]

TYPE_NAMES: tuple[str, ...] = (
    "char", "byte", "short", "int", "long", "float", "double", "string", "bytes",
    "date", "time", "timestamp", "decimal", "boolean")
_INT_WIDTHS = {"byte": 1, "short": 2, "int": 4, "long": 8}


@dataclass(frozen=True)
class ColumnType:
    """A declared column type; ``binary`` selects HBase ``Bytes.toBytes`` cells over UTF-8 text.

    ``length`` (string only) is SQL's declared length: VARCHAR(n) (``"string(n)"``) takes at
    most n characters; with ``fixed`` it is CHAR(n) (``"char(n)"``), a fixed-length string
    whose trailing spaces are padding: a value is written without them (Phoenix pads in
    storage and strips the padding when it reads; what SQL sees is the same), at most n
    characters remain, and a literal compared with it loses its trailing spaces too (SQL's
    PAD SPACE comparison: ``c = 'EN '`` is ``c = 'EN'``). Cells read as plain strings. Plain
    ``"char"`` stays hibase's one Java char.

    ``precision`` and ``scale`` (decimal only) are DECIMAL(p, s)'s: values are rounded half up
    to s fractional digits and refused past p digits; without them (plain DECIMAL) any finite
    decimal.Decimal is kept as it is."""

    name: str
    binary: bool = False
    length: int | None = None
    fixed: bool = False
    precision: int | None = None
    scale: int | None = None

    def __post_init__(self) -> None:
        c = _CODECS.get(self.name) if isinstance(self.name, str) else None
        if c is None:
            raise SchemaError(f"unknown column type {self.name!r}; {_VALID}")
        if not isinstance(self.binary, bool):
            raise SchemaError(f"ColumnType.binary must be a bool, not {self.binary!r}")
        if self.length is not None and (
                type(self.length) is not int or not 1 <= self.length <= MAX_LENGTH
                or self.name != "string"):
            raise SchemaError(f"a length is declared for strings (VARCHAR(n), CHAR(n)), as an "
                              f"integer 1..{MAX_LENGTH}; not {self.length!r} for {self.name}")
        if not isinstance(self.fixed, bool) or (self.fixed and self.length is None):
            raise SchemaError("a fixed-length string (CHAR(n)) needs its length")
        if (self.precision, self.scale) != (None, None) and (
                self.name != "decimal" or type(self.precision) is not int
                or type(self.scale) is not int
                or not 0 <= self.scale <= self.precision <= MAX_PRECISION
                or self.precision < 1):
            raise SchemaError(f"DECIMAL(p, s) takes 1 <= p <= {MAX_PRECISION} and 0 <= s <= p; "
                              f"not ({self.precision!r}, {self.scale!r}) for {self.name}")
        # The codec functions are bound per instance: one attribute load per call on hot paths.
        set_ = object.__setattr__
        set_(self, "_dec", c.dec_bin if self.binary else c.dec_text)
        set_(self, "_enc", c.enc_bin if self.binary else c.enc_text)
        set_(self, "_kenc", c.enc_key)
        set_(self, "_kdec", c.dec_key)
        set_(self, "_ckey", _CELL_KEYS.get(self.name)
             or _TEXT_CELL_KEYS.get(self._dec, _cell_key_generic))  # type: ignore[attr-defined]
        if self.length is not None:
            set_(self, "_enc", _limited_enc)
            if self.fixed:
                set_(self, "_kenc", _fixed_enc_key)

    def __reduce__(self) -> tuple[Any, tuple]:
        if self.precision is not None:
            return ColumnType, (self.name, self.binary, None, False, self.precision, self.scale)
        if self.length is None:
            return ColumnType, (self.name, self.binary)
        return ColumnType, (self.name, self.binary, self.length, self.fixed)

    def __str__(self) -> str:
        base = self.name if self.length is None else (
            f"char({self.length})" if self.fixed else f"{self.name}({self.length})")
        if self.precision is not None:
            base = f"decimal({self.precision},{self.scale})"
        return f"{base} binary" if self.binary else base


MAX_LENGTH = 2 ** 31 - 1
"""The largest declared VARCHAR(n) / CHAR(n) length (Java's Integer.MAX_VALUE)."""

_VALID = ("valid types: " + ", ".join(TYPE_NAMES) + ", string(n), char(n), decimal(p,s) "
          "(optionally followed by ' binary')")


_SIZED = re.compile(r"^(char|string)\(\s*(\d+)\s*\)$")
_DECIMAL = re.compile(r"^(?:decimal|numeric)\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$")


def parse_type(spec: str | ColumnType) -> ColumnType:
    """Parse a column type spec such as ``"double"``, ``"Long  Binary"``, ``"string(50)"``
    (VARCHAR(50)) or ``"char(3)"`` (CHAR(3), a fixed-length string; plain ``"char"`` is one
    Java char)."""
    if isinstance(spec, ColumnType):
        return spec
    if not isinstance(spec, str):
        raise SchemaError(f"column type must be a string, not {type(spec).__name__}; {_VALID}")
    parts = spec.lower().split()
    if len(parts) > 1 and parts[0].startswith(("decimal(", "numeric(")) and "," in parts[0] \
            and parts[0].endswith(","):  # "decimal(10, 2)": the space split it
        parts[0:2] = [parts[0] + parts[1]]
    dec = _DECIMAL.match(parts[0]) if parts else None
    if dec is not None and parts[1:] in ([], ["binary"]):
        p, sc = int(dec.group(1)), int(dec.group(2) or 0)
        if not (1 <= p <= MAX_PRECISION and 0 <= sc <= p):
            raise SchemaError(f"invalid column type {spec!r}: DECIMAL(p, s) takes "
                              f"1 <= p <= {MAX_PRECISION} and 0 <= s <= p")
        return ColumnType("decimal", len(parts) == 2, precision=p, scale=sc)
    sized = _SIZED.match(parts[0]) if parts else None
    if sized is not None and parts[1:] in ([], ["binary"]):
        n = int(sized.group(2))
        if not 1 <= n <= MAX_LENGTH:
            raise SchemaError(f"invalid column type {spec!r}: the length must be 1..{MAX_LENGTH}")
        return ColumnType("string", len(parts) == 2, n, sized.group(1) == "char")
    if parts and parts[0] == "numeric":
        parts[0] = "decimal"
    if not parts or len(parts) > 2 or parts[0] not in _CODECS or parts[1:] not in ([], ["binary"]):
        raise SchemaError(f"invalid column type {spec!r}; {_VALID}")
    return ColumnType(parts[0], len(parts) == 2)


SQL_TYPE_ALIASES: dict[str, str] = {
    "tinyint": "byte", "smallint": "short", "integer": "int", "bigint": "long",
    "varchar": "string", "varbinary": "bytes", "binary": "bytes", "numeric": "decimal",
    "datetime": "timestamp", "bool": "boolean"}
"""Phoenix's SQL type names (lower case) and the hibase type each stands for; FLOAT, DOUBLE,
CHAR and INT are hibase names already (hibase's char is one character; Phoenix's CHAR(n) is
the fixed-length string ``char(n)``)."""

SQL_TYPE_NAMES: dict[str, str] = {
    "byte": "TINYINT", "short": "SMALLINT", "int": "INTEGER", "long": "BIGINT", "float": "FLOAT",
    "double": "DOUBLE", "string": "VARCHAR", "char": "CHAR", "bytes": "VARBINARY",
    "date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP", "decimal": "DECIMAL",
    "boolean": "BOOLEAN"}
"""Each hibase type as Phoenix spells it in SQL (CAST, messages)."""


def type_from_name(spec: str | ColumnType) -> ColumnType:
    """parse_type that also takes Phoenix's names, case-insensitively: ``"BIGINT"`` -> long,
    ``"INTEGER binary"`` -> ``int binary``. For the command line, where users write either,
    to declare how existing cells read: a VARCHAR(20)'s length is ignored (it limits writes,
    not how a cell reads), a CHAR(3)'s is kept (``char(3)``: without it CHAR is one character).
    SQL's CREATE TABLE keeps both lengths."""
    if isinstance(spec, ColumnType) or not isinstance(spec, str):
        return parse_type(spec)
    parts = spec.lower().split()
    if parts:
        head = parts[0]
        base, paren, rest = head.partition("(")
        if paren and rest.rstrip(")").strip().isdigit() and rest.endswith(")"):
            head = f"char({rest.rstrip(')').strip()})" if base == "char" else (
                f"decimal({rest}" if base in ("decimal", "numeric") else base)
        if head == "binary" and len(parts) == 1:  # Phoenix BINARY, not the ' binary' suffix
            return ColumnType("bytes")
        parts[0] = SQL_TYPE_ALIASES.get(head, head)
    try:
        return parse_type(" ".join(parts))
    except SchemaError:
        raise SchemaError(f"invalid column type {spec!r}; {_VALID}, or a Phoenix name "
                          "(TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, VARCHAR, "
                          "VARBINARY, DATE, TIME, TIMESTAMP, DECIMAL(p,s), BOOLEAN)") from None


# -- errors ------------------------------------------------------------------------------------

def sql_literal(value: Any, limit: int = 40) -> str:
    """A value as an SQL literal for messages: 'text' (quotes doubled), X'00FF' for bytes that
    are not printable UTF-8, numbers as numbers, NULL; cut to about `limit` characters ("...")."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or not text.isprintable():
            r = "X'" + raw.hex().upper() + "'"
            return r if len(r) <= limit else r[:limit - 4] + "...'"
        value = text
    if isinstance(value, str):
        r = "'" + value.replace("'", "''") + "'"
        return r if len(r) <= limit else r[:limit - 4] + "...'"
    if isinstance(value, _dt.datetime):
        return f"TIMESTAMP '{value.isoformat(' ')}'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, _dt.time):
        return f"TIME '{value.isoformat()}'"
    if isinstance(value, _decimal.Decimal):
        if value.is_finite() and -limit < value.adjusted() < limit:
            return format(value, "f")[:limit]
        return str(value)[:limit]  # '1E+9999999', not its ten million digits
    r = repr(value)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def sql_type_name(t: ColumnType) -> str:
    """A declared type as SQL names it (BIGINT, VARCHAR, VARCHAR(50), CHAR(3), ... with
    ' binary' for Bytes.toBytes cells)."""
    if t.length is not None:
        name = f"{'CHAR' if t.fixed else 'VARCHAR'}({t.length})"
    elif t.precision is not None:
        name = f"DECIMAL({t.precision},{t.scale})"
    else:
        name = SQL_TYPE_NAMES.get(t.name, t.name.upper())
    return name + (" binary" if t.binary else "")


def _kind(value: Any) -> str:
    """What SQL calls a Python value's type, for messages."""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a DOUBLE"
    if isinstance(value, str):
        return "a VARCHAR"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "a VARBINARY"
    if isinstance(value, _dt.datetime):
        return "a TIMESTAMP"
    if isinstance(value, _dt.date):
        return "a DATE"
    if isinstance(value, _dt.time):
        return "a TIME"
    if isinstance(value, _decimal.Decimal):
        return "a DECIMAL"
    return "NULL" if value is None else type(value).__name__


def _fail(t: ColumnType, value: Any, why: str) -> ValueTypeError:
    return ValueTypeError(f"invalid {sql_type_name(t)} value {sql_literal(value)}: {why}")


def _as_bytes(t: ColumnType, raw: Any) -> bytes:
    if isinstance(raw, (bytearray, memoryview)):
        return bytes(raw)
    raise _fail(t, raw, f"expected bytes, got {_kind(raw)}")


def _as_int(t: ColumnType, v: Any) -> int:
    if type(v) is int:
        return v
    if not isinstance(v, bool) and hasattr(type(v), "__index__"):  # e.g. numpy integers
        return operator.index(v)
    raise _fail(t, v, f"expected an integer, got {_kind(v)}")


def _as_float(t: ColumnType, v: Any) -> float:
    if type(v) is float:
        return v
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        try:
            return float(v)
        except OverflowError:
            raise _fail(t, v, "out of range") from None
    raise _fail(t, v, f"expected a number, got {_kind(v)}")


def _as_str(t: ColumnType, v: Any) -> str:
    if isinstance(v, str):
        return v
    raise _fail(t, v, f"expected a VARCHAR, got {_kind(v)}")


# -- escaped byte strings (string / bytes keys, also used for rowkeys) --------------------------

def escape_bytes(b: bytes) -> bytes:
    """Escape 0x00 as 0x00 0xFF and append the terminator 0x00 0x00 (order-preserving)."""
    return b.replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def escape_prefix(b: bytes) -> bytes:
    """Escape without the terminator: every escape_bytes(b + x) starts with this (for LIKE 'p%')."""
    return b.replace(b"\x00", b"\x00\xff")


def unescape_bytes(buf: bytes, pos: int = 0) -> tuple[bytes, int]:
    """Inverse of escape_bytes: the raw bytes at ``buf[pos:]`` and the position after them."""
    # Inside a valid escaped run every 0x00 is followed by 0xFF, so the first 0x00 0x00 is the end.
    end = buf.find(b"\x00\x00", pos)
    if end < 0:
        raise ValueTypeError(f"unterminated escaped string in key {sql_literal(bytes(buf[pos:]))}")
    seg = buf[pos:end]
    if b"\x00" in seg:
        if seg.count(b"\x00") != seg.count(b"\x00\xff"):
            raise ValueTypeError(f"bad escape in key {sql_literal(bytes(seg))}")
        seg = seg.replace(b"\x00\xff", b"\x00")
    return bytes(seg), end + 2


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string above every string that starts with ``prefix``; None if none."""
    p = prefix.rstrip(b"\xff")
    if not p:
        return None
    return p[:-1] + bytes((p[-1] + 1,))


# -- per-type codecs ------------------------------------------------------------------------------

class _Codec(NamedTuple):
    dec_text: Callable[[ColumnType, bytes], Any]
    dec_bin: Callable[[ColumnType, bytes], Any]
    enc_text: Callable[[ColumnType, Any], bytes]
    enc_bin: Callable[[ColumnType, Any], bytes]
    enc_key: Callable[[ColumnType, Any], bytes]
    dec_key: Callable[[ColumnType, bytes, int], tuple[Any, int]]


# Every byte of a float literal is one of these; float() checks the grammar, and the set leaves
# out the whitespace and underscores that float() would also accept.
_FLOAT_CHARS = b"0123456789.+-eEinfatyINFATY"


# {a type's text decoder: fn(t) -> a one-argument decoder of t's cells doing the same}, for the
# decoders whose common case is one C call (fast_decoder)
_FAST: dict[Callable, Callable[[Any], Callable[[bytes], Any]]] = {}
# {an integer type's text decoder: its cell_key}: a stored decimal's key without the value built
_TEXT_CELL_KEYS: dict[Callable, Callable[[Any, bytes], bytes | None]] = {}


def _make_int(width: int) -> _Codec:
    bits = 8 * width
    lo, hi, bias = -(1 << (bits - 1)), (1 << (bits - 1)) - 1, 1 << (bits - 1)
    signed = struct.Struct(">" + {1: "b", 2: "h", 4: "i", 8: "q"}[width])
    unsigned = struct.Struct(">" + {1: "B", 2: "H", 4: "I", 8: "Q"}[width])

    def dec_text(t: ColumnType, raw: bytes) -> int:
        if not raw.isdigit() and not (raw[1:].isdigit() and raw[:1] in (b"-", b"+")):
            raise _fail(t, raw, "not a decimal integer")
        try:
            v = int(raw)
        except ValueError:  # more digits than int() accepts
            raise _fail(t, raw, "out of range") from None
        if not lo <= v <= hi:
            raise _fail(t, raw, f"out of range {lo}..{hi}")
        return v

    def dec_bin(t: ColumnType, raw: bytes) -> int:
        if len(raw) != width:
            raise _fail(t, raw, f"expected {width} bytes, got {len(raw)}")
        return signed.unpack(raw)[0]

    def checked(t: ColumnType, v: Any) -> int:
        v = _as_int(t, v)
        if not lo <= v <= hi:
            raise _fail(t, v, f"out of range {lo}..{hi}")
        return v

    def enc_text(t: ColumnType, v: Any) -> bytes:
        if type(v) is not int or not lo <= v <= hi:
            v = checked(t, v)
        return b"%d" % v

    def enc_bin(t: ColumnType, v: Any) -> bytes:
        if type(v) is not int or not lo <= v <= hi:
            v = checked(t, v)
        return signed.pack(v)

    def enc_key(t: ColumnType, v: Any) -> bytes:
        if type(v) is not int or not lo <= v <= hi:
            v = checked(t, v)
        return unsigned.pack(v + bias)

    def dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[int, int]:
        try:
            return unsigned.unpack_from(buf, pos)[0] - bias, pos + width
        except struct.error:
            raise _fail(t, bytes(buf[pos:]), "truncated key") from None

    safe = len(str(hi)) - 1  # this many decimal digits are always in range

    def fast_text(t: ColumnType) -> Callable[[bytes], int]:
        return lambda raw: int(raw) if raw.isdigit() and len(raw) <= safe else dec_text(t, raw)

    def cell_key_text(t: ColumnType, raw: bytes) -> bytes | None:
        if raw.isdigit() and len(raw) <= safe:  # enc_key of the value, not decoded twice
            return unsigned.pack(int(raw) + bias)
        return _cell_key_generic(t, raw)

    _FAST[dec_text] = fast_text
    _TEXT_CELL_KEYS[dec_text] = cell_key_text
    return _Codec(dec_text, dec_bin, enc_text, enc_bin, enc_key, dec_key)


_F32 = struct.Struct(">f")
_INVERT = bytes(range(255, -1, -1))
_FLIP_SIGN = [bytes((i ^ 0x80,)) for i in range(256)]


def _round_f32(v: float) -> float:
    """Round to the nearest float32 (raises OverflowError past the float32 range)."""
    return _F32.unpack(_F32.pack(v))[0]


def _make_float(width: int) -> _Codec:
    is32 = width == 4
    fmt = struct.Struct(">f" if is32 else ">d")

    def narrow(t: ColumnType, v: float, shown: Any) -> float:
        if is32:
            try:
                return _round_f32(v)
            except OverflowError:
                raise _fail(t, shown, "out of float32 range") from None
        return v

    def dec_text(t: ColumnType, raw: bytes) -> float:
        try:
            if raw.translate(None, _FLOAT_CHARS):
                raise ValueError
            v = float(raw)
        except ValueError:
            raise _fail(t, raw, "not a number") from None
        # A finite literal that overflowed to inf (e.g. 1e400) is out of range, not infinity.
        if v - v != 0.0 and v == v and raw.lstrip(b"+-")[:1] not in (b"i", b"I"):
            raise _fail(t, raw, "out of range")
        if is32:
            try:
                return _F32.unpack(_F32.pack(v))[0]
            except OverflowError:
                raise _fail(t, raw, "out of float32 range") from None
        return v

    def dec_bin(t: ColumnType, raw: bytes) -> float:
        if len(raw) != width:
            raise _fail(t, raw, f"expected {width} bytes, got {len(raw)}")
        return fmt.unpack(raw)[0]

    def enc_text(t: ColumnType, v: Any) -> bytes:
        v = narrow(t, _as_float(t, v), v)
        if is32 and math.isfinite(v):
            # Shortest decimal that reads back as the same float32 (Float.toString-like).
            for p in (6, 7, 8, 9):
                s = "%.*g" % (p, v)
                if _round_f32(float(s)) == v:
                    return repr(float(s)).encode("ascii")
        return repr(v).encode("ascii")

    def enc_bin(t: ColumnType, v: Any) -> bytes:
        try:
            return fmt.pack(_as_float(t, v))
        except OverflowError:
            raise _fail(t, v, "out of float32 range") from None

    def enc_key(t: ColumnType, v: Any) -> bytes:
        f = v if type(v) is float else _as_float(t, v)
        if f != f:
            raise _fail(t, v, "NaN cannot be indexed")
        try:
            b = fmt.pack(f + 0.0)  # + 0.0 turns -0.0 into 0.0
        except OverflowError:
            raise _fail(t, v, "out of float32 range") from None
        # Negative: invert every bit; positive: set the sign bit.
        return b.translate(_INVERT) if b[0] & 0x80 else _FLIP_SIGN[b[0]] + b[1:]

    def dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[float, int]:
        end = pos + width
        b = buf[pos:end]
        if len(b) != width:
            raise _fail(t, bytes(b), "truncated key")
        b = _FLIP_SIGN[b[0]] + b[1:] if b[0] & 0x80 else b.translate(_INVERT)
        return fmt.unpack(b)[0], end

    return _Codec(dec_text, dec_bin, enc_text, enc_bin, enc_key, dec_key)


# char: a Java char, i.e. one UTF-16 code unit; as text one BMP character in UTF-8.
def _char_dec_text(t: ColumnType, raw: bytes) -> str:
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(t, raw, "not valid UTF-8") from None
    if len(s) != 1 or ord(s) > 0xFFFF:
        raise _fail(t, raw, "expected exactly one character U+0000..U+FFFF")
    return s


def _char_dec_bin(t: ColumnType, raw: bytes) -> str:
    if len(raw) != 2:
        raise _fail(t, raw, f"expected 2 bytes, got {len(raw)}")
    return chr(int.from_bytes(raw, "big"))


def _char_checked(t: ColumnType, v: Any) -> str:
    s = _as_str(t, v)
    if len(s) != 1 or ord(s) > 0xFFFF:
        raise _fail(t, v, "expected exactly one character U+0000..U+FFFF")
    return s


def _char_enc_text(t: ColumnType, v: Any) -> bytes:
    try:
        return _char_checked(t, v).encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(t, v, "a lone surrogate has no UTF-8 text form") from None


def _char_enc_bin(t: ColumnType, v: Any) -> bytes:
    return ord(_char_checked(t, v)).to_bytes(2, "big")


def _char_dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[str, int]:
    if len(buf) - pos < 2:
        raise _fail(t, bytes(buf[pos:]), "truncated key")
    return chr(int.from_bytes(buf[pos:pos + 2], "big")), pos + 2


def _str_dec(t: ColumnType, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(t, raw, "not valid UTF-8") from None


def _str_enc(t: ColumnType, v: Any) -> bytes:
    try:
        return _as_str(t, v).encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(t, v, "not encodable as UTF-8") from None


def _str_enc_key(t: ColumnType, v: Any) -> bytes:
    return _str_enc(t, v).replace(b"\x00", b"\x00\xff") + b"\x00\x00"


_FAST[_str_dec] = lambda t: bytes.decode  # UTF-8, strict: raises on what _str_dec refuses


def _str_dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[str, int]:
    raw, pos = unescape_bytes(buf, pos)
    return _str_dec(t, raw), pos


def _limited(t: ColumnType, v: Any) -> str:
    """A VARCHAR(n) / CHAR(n) value checked against its length (a CHAR's trailing spaces are
    padding: dropped, not counted)."""
    s = _as_str(t, v)
    if t.fixed:
        s = s.rstrip(" ")
    if len(s) > t.length:  # type: ignore[operator]
        raise _fail(t, v, f"{len(s)} characters, longer than {t.length}")
    return s


def _limited_enc(t: ColumnType, v: Any) -> bytes:
    return _str_enc(t, _limited(t, v))


def _fixed_enc_key(t: ColumnType, v: Any) -> bytes:
    return _str_enc_key(t, _as_str(t, v).rstrip(" "))


def _check_limited(t: ColumnType, raw: bytes) -> None:
    """A stored VARCHAR(n) / CHAR(n) cell: at most n characters; a CHAR's without trailing
    spaces (its values are stored without their padding, so equal values have equal cells)."""
    s = t._dec(t, raw)  # type: ignore[attr-defined]
    if len(s) > t.length:  # type: ignore[operator]
        raise _fail(t, raw, f"{len(s)} characters, longer than {t.length}")
    if t.fixed and s.endswith(" "):
        raise _fail(t, raw, "trailing spaces: CHAR values are stored without their padding")


def _bytes_dec(t: ColumnType, raw: bytes) -> bytes:
    return raw


def _bytes_enc(t: ColumnType, v: Any) -> bytes:
    if type(v) is bytes:
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return _str_enc(t, v)
    raise _fail(t, v, f"expected bytes, got {_kind(v)}")


def _bytes_enc_key(t: ColumnType, v: Any) -> bytes:
    return _bytes_enc(t, v).replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def _bytes_dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[bytes, int]:
    return unescape_bytes(buf, pos)


# -- DATE, TIME, TIMESTAMP, DECIMAL, BOOLEAN (Phoenix's types) ----------------------------------
#
# Text cells hold ISO 8601 as the HBase shell shows it ('2024-01-02', '13:45:00',
# '2024-01-02 13:45:00.123'), a DECIMAL's plain digits ('12.50'), 'true' / 'false'. Binary cells
# are HBase's Bytes.toBytes of what Java holds: DATE and TIMESTAMP the long milliseconds since
# 1970-01-01 UTC (Phoenix's UNSIGNED_DATE / UNSIGNED_TIMESTAMP; a TIMESTAMP with a fraction finer
# than a millisecond takes 12 bytes, the int nanoseconds within the millisecond appended, as
# Phoenix's TIMESTAMP), TIME the milliseconds of the day, BOOLEAN one byte (0x00 false, 0xFF
# true as Bytes.toBytes(boolean); any non-zero byte reads as true, as Bytes.toBoolean), DECIMAL
# Bytes.toBytes(BigDecimal): a 4-byte scale and the unscaled value's two's complement bytes.
# Times are naive and UTC: an aware datetime is converted to UTC when written.

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_DAY = _EPOCH.date().toordinal()
_DAY_US = 86_400_000_000
_Q = struct.Struct(">q")
_QB = struct.Struct(">Q")
_I = struct.Struct(">i")
_IB = struct.Struct(">I")
_BIAS64 = 1 << 63
_BIAS32 = 1 << 31


def _text(t: ColumnType, raw: bytes) -> str:
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        raise _fail(t, raw, "not ASCII text") from None


_DATE_TEXT = re.compile(r"\d{4}-\d\d-\d\d\Z")
_TIME_TEXT = re.compile(r"\d\d:\d\d(:\d\d(\.\d{1,9})?)?\Z")
_TS_TEXT = re.compile(r"(\d{4}-\d\d-\d\d)(?:[ T](\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?))?"
                      r"(Z|[+-]\d\d:?\d\d)?\Z")


def parse_date(s: str) -> _dt.date:
    """'2024-01-02' as a date (ValueError otherwise)."""
    if not _DATE_TEXT.match(s):
        raise ValueError(f"not a date (YYYY-MM-DD): {s!r}")
    try:
        return _dt.date.fromisoformat(s)
    except ValueError as e:
        raise ValueError(f"not a date: {s!r} ({e})") from None


def parse_time(s: str) -> _dt.time:
    """'13:45', '13:45:00' or '13:45:00.123456' as a time (digits past microseconds dropped)."""
    if not _TIME_TEXT.match(s):
        raise ValueError(f"not a time (HH:MM:SS[.fff]): {s!r}")
    head, _, frac = s.partition(".")
    t = _dt.time.fromisoformat(head)
    return t.replace(microsecond=int((frac + "000000")[:6])) if frac else t


def parse_timestamp(s: str) -> _dt.datetime:
    """'2024-01-02', '2024-01-02 13:45:00[.fff]' ('T' also; a 'Z' or +hh:mm offset is
    converted to UTC) as a naive UTC datetime."""
    m = _TS_TEXT.match(s)
    if m is None:
        raise ValueError(f"not a timestamp (YYYY-MM-DD HH:MM:SS[.fff]): {s!r}")
    d = _dt.datetime.combine(_dt.date.fromisoformat(m.group(1)),
                             parse_time(m.group(2)) if m.group(2) else _dt.time())
    zone = m.group(3)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        hh, mm = int(zone[1:3]), int(zone[-2:])
        try:
            d -= sign * _dt.timedelta(hours=hh, minutes=mm)
        except OverflowError:  # '0001-01-01T00:00+01:00': before year 1 in UTC
            raise ValueError(f"not a timestamp: {s!r} (out of range in UTC)") from None
    return d


def iso_text(v: _dt.date | _dt.time) -> str:
    """A date, time or datetime as a text cell of its type holds it ('2024-01-02 13:45:00')."""
    kind = "timestamp" if isinstance(v, _dt.datetime) else (
        "date" if isinstance(v, _dt.date) else "time")
    return _CODECS[kind].enc_text(ColumnType(kind), v).decode("ascii")


_TEXT_FORMS: dict[str, tuple[Callable[[str], Any], str]] = {
    "date": (parse_date, "not a date (YYYY-MM-DD)"),
    "time": (parse_time, "not a time (HH:MM:SS[.fff])"),
    "timestamp": (parse_timestamp, "not a timestamp (YYYY-MM-DD HH:MM:SS[.fff])"),
}


def _parse_text(t: ColumnType, text: str, shown: Any) -> Any:
    """A DATE, TIME or TIMESTAMP written as text (a value or a cell's), or a ValueTypeError
    naming `shown` and the form its type takes."""
    parse, form = _TEXT_FORMS[t.name]
    try:
        return parse(text)
    except ValueError:
        raise _fail(t, shown, form) from None


def _naive_utc(v: _dt.datetime) -> _dt.datetime:
    """An aware datetime as the naive UTC one cells hold; a naive one as it is."""
    return v if v.tzinfo is None else v.astimezone(_dt.timezone.utc).replace(tzinfo=None)


def _as_date(t: ColumnType, v: Any) -> _dt.date:
    if isinstance(v, _dt.datetime):
        v = _naive_utc(v)
        if v.time() != _dt.time():
            raise _fail(t, v, "a DATE has no time of day (CAST it, or use TIMESTAMP)")
        return v.date()
    if isinstance(v, _dt.date):
        return v
    if isinstance(v, str):
        return _parse_text(t, v, v)
    raise _fail(t, v, f"expected a date, got {_kind(v)}")


def _as_time(t: ColumnType, v: Any) -> _dt.time:
    if isinstance(v, _dt.time):
        if v.tzinfo is not None:
            raise _fail(t, v, "a TIME has no time zone")
        return v
    if isinstance(v, str):
        return _parse_text(t, v, v)
    raise _fail(t, v, f"expected a time, got {_kind(v)}")


def _as_timestamp(t: ColumnType, v: Any) -> _dt.datetime:
    if isinstance(v, _dt.datetime):
        v = _naive_utc(v)
        if type(v) is not _dt.datetime:  # pandas.Timestamp: its nanoseconds are dropped
            v = _dt.datetime(v.year, v.month, v.day, v.hour, v.minute, v.second,
                             v.microsecond)
        return v
    if isinstance(v, _dt.date):
        return _dt.datetime(v.year, v.month, v.day)
    if isinstance(v, str):
        return _parse_text(t, v, v)
    raise _fail(t, v, f"expected a datetime, got {_kind(v)}")


def _micros(d: _dt.datetime) -> int:
    """Microseconds since 1970-01-01 (negative before)."""
    return (d.toordinal() - _EPOCH_DAY) * _DAY_US + (
        (d.hour * 60 + d.minute) * 60 + d.second) * 1_000_000 + d.microsecond


def _from_micros(t: ColumnType, us: int, shown: Any) -> _dt.datetime:
    try:
        return _EPOCH + _dt.timedelta(microseconds=us)
    except OverflowError:
        raise _fail(t, shown, "out of range (years 1..9999)") from None


def _time_us(v: _dt.time) -> int:
    return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond


def _time_from_us(us: int) -> _dt.time:
    s, us = divmod(us, 1_000_000)
    m, s = divmod(s, 60)
    return _dt.time(m // 60, m % 60, s, us)


def _date_dec_text(t: ColumnType, raw: bytes) -> _dt.date:
    return _parse_text(t, _text(t, raw), raw)


def _date_dec_bin(t: ColumnType, raw: bytes) -> _dt.date:
    if len(raw) != 8:
        raise _fail(t, raw, f"expected 8 bytes, got {len(raw)}")
    days = _Q.unpack(raw)[0] // 86_400_000  # a time of day in the millis is dropped
    try:
        return _dt.date.fromordinal(days + _EPOCH_DAY)
    except (ValueError, OverflowError):
        raise _fail(t, raw, "out of range (years 1..9999)") from None


def _date_enc_text(t: ColumnType, v: Any) -> bytes:
    return _as_date(t, v).isoformat().encode("ascii")


def _date_enc_bin(t: ColumnType, v: Any) -> bytes:
    return _Q.pack((_as_date(t, v).toordinal() - _EPOCH_DAY) * 86_400_000)


def _date_enc_key(t: ColumnType, v: Any) -> bytes:
    return _IB.pack(_as_date(t, v).toordinal() - _EPOCH_DAY + _BIAS32)


def _date_dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[_dt.date, int]:
    if len(buf) - pos < 4:
        raise _fail(t, bytes(buf[pos:]), "truncated key")
    days = _IB.unpack_from(buf, pos)[0] - _BIAS32
    try:
        return _dt.date.fromordinal(days + _EPOCH_DAY), pos + 4
    except (ValueError, OverflowError):
        raise _fail(t, bytes(buf[pos:pos + 4]), "out of range") from None


def _time_dec_text(t: ColumnType, raw: bytes) -> _dt.time:
    return _parse_text(t, _text(t, raw), raw)


def _time_dec_bin(t: ColumnType, raw: bytes) -> _dt.time:
    if len(raw) != 8:
        raise _fail(t, raw, f"expected 8 bytes, got {len(raw)}")
    ms = _Q.unpack(raw)[0] % 86_400_000  # the time of day of Phoenix's millis
    return _time_from_us(ms * 1000)


def _time_enc_text(t: ColumnType, v: Any) -> bytes:
    v = _as_time(t, v)
    return v.isoformat(_iso_spec(v.microsecond)).encode("ascii")


def _time_enc_bin(t: ColumnType, v: Any) -> bytes:
    us = _time_us(_as_time(t, v))
    if us % 1000:
        raise _fail(t, v, "a binary TIME holds milliseconds")
    return _Q.pack(us // 1000)


def _time_enc_key(t: ColumnType, v: Any) -> bytes:
    return _QB.pack(_time_us(_as_time(t, v)))


def _time_dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[_dt.time, int]:
    if len(buf) - pos < 8:
        raise _fail(t, bytes(buf[pos:]), "truncated key")
    us = _QB.unpack_from(buf, pos)[0]
    if us >= _DAY_US:
        raise _fail(t, bytes(buf[pos:pos + 8]), "out of range")
    return _time_from_us(us), pos + 8


def _ts_dec_text(t: ColumnType, raw: bytes) -> _dt.datetime:
    return _parse_text(t, _text(t, raw), raw)


def _ts_dec_bin(t: ColumnType, raw: bytes) -> _dt.datetime:
    if len(raw) == 8:
        return _from_micros(t, _Q.unpack(raw)[0] * 1000, raw)
    if len(raw) == 12:
        nanos = _I.unpack_from(raw, 8)[0]
        if not 0 <= nanos < 1_000_000:
            raise _fail(t, raw, "nanoseconds within the millisecond out of range")
        return _from_micros(t, _Q.unpack_from(raw)[0] * 1000 + nanos // 1000, raw)
    raise _fail(t, raw, f"expected 8 or 12 bytes, got {len(raw)}")


def _iso_spec(us: int) -> str:
    """Milliseconds when they are the whole fraction (Phoenix's '.123'), else as it is."""
    return "milliseconds" if us and not us % 1000 else "auto"


def _ts_enc_text(t: ColumnType, v: Any) -> bytes:
    d = _as_timestamp(t, v)
    return d.isoformat(" ", _iso_spec(d.microsecond)).encode("ascii")


def _ts_enc_bin(t: ColumnType, v: Any) -> bytes:
    ms, us = divmod(_micros(_as_timestamp(t, v)), 1000)
    return _Q.pack(ms) + _I.pack(us * 1000) if us else _Q.pack(ms)


def _ts_enc_key(t: ColumnType, v: Any) -> bytes:
    return _QB.pack(_micros(_as_timestamp(t, v)) + _BIAS64)


def _ts_dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[_dt.datetime, int]:
    if len(buf) - pos < 8:
        raise _fail(t, bytes(buf[pos:]), "truncated key")
    return _from_micros(t, _QB.unpack_from(buf, pos)[0] - _BIAS64, buf[pos:pos + 8]), pos + 8


def _bool_dec_text(t: ColumnType, raw: bytes) -> bool:
    low = raw.lower()
    if low == b"true":
        return True
    if low == b"false":
        return False
    raise _fail(t, raw, "not a boolean (true or false)")


def _bool_dec_bin(t: ColumnType, raw: bytes) -> bool:
    if len(raw) != 1:
        raise _fail(t, raw, f"expected 1 byte, got {len(raw)}")
    return raw != b"\x00"


def _as_bool(t: ColumnType, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if type(v).__name__ == "bool_":  # numpy.bool_
        return bool(v)
    if isinstance(v, str):
        return _bool_dec_text(t, v.encode("utf-8", "replace"))
    raise _fail(t, v, f"expected a boolean, got {_kind(v)}")


def _bool_enc_text(t: ColumnType, v: Any) -> bytes:
    return b"true" if _as_bool(t, v) else b"false"


def _bool_enc_bin(t: ColumnType, v: Any) -> bytes:
    return b"\xff" if _as_bool(t, v) else b"\x00"


def _bool_enc_key(t: ColumnType, v: Any) -> bytes:
    return b"\x01" if _as_bool(t, v) else b"\x00"


def _bool_dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[bool, int]:
    b = buf[pos:pos + 1]
    if b not in (b"\x00", b"\x01"):
        raise _fail(t, bytes(buf[pos:]), "truncated or bad key")
    return b == b"\x01", pos + 1


MAX_PRECISION = 38
"""The most digits a DECIMAL(p, s) declares (Phoenix's and Java's BigDecimal-backed limit)."""

_DEC_TEXT = re.compile(rb"[+-]?(\d+(\.\d*)?|\.\d+)([eE]([+-]?\d+))?\Z")
# Keys and binary cells are computed in this context: past its exponents a value is out of
# range (Overflow; Underflow: a value so small it would be rounded is refused, not keyed
# as a neighbour). The coprocessor (coprocessor/java/io/hibase/DecimalCodec.java) does the same.
_DEC_CTX = _decimal.Context(prec=MAX_PRECISION * 2, Emin=-999999, Emax=999999,
                            traps=[_decimal.InvalidOperation, _decimal.DivisionByZero,
                                   _decimal.Overflow, _decimal.Underflow])
# A DECIMAL's text writes an exponent of at most 9 digits ('1E+999999999'; Java's BigDecimal
# reads no more).


def _dec_from_text(t: ColumnType, raw: bytes, shown: Any) -> _decimal.Decimal:
    m = _DEC_TEXT.match(raw)
    if not m:
        raise _fail(t, shown, "not a number")
    if m.group(4) is not None and len(m.group(4).lstrip(b"+-").lstrip(b"0")) > 9:
        raise _fail(t, shown, "exponent out of range")
    return _decimal.Decimal(raw.decode("ascii"))


def _dec_checked(t: ColumnType, d: _decimal.Decimal, shown: Any) -> _decimal.Decimal:
    """``d`` at the column's scale (rounded half up, as Phoenix does) within its precision."""
    if not d.is_finite():
        raise _fail(t, shown, "a DECIMAL is a finite number")
    if t.scale is not None:
        try:
            d = d.quantize(_decimal.Decimal(1).scaleb(-t.scale), _decimal.ROUND_HALF_UP,
                           _DEC_CTX)
        except _decimal.InvalidOperation:
            raise _fail(t, shown, "out of range") from None
        if len(d.as_tuple().digits) > t.precision and d:  # type: ignore[operator]
            raise _fail(t, shown, f"more than {t.precision} digits "
                                  f"(DECIMAL({t.precision},{t.scale}))")
    return d


def _as_decimal(t: ColumnType, v: Any) -> _decimal.Decimal:
    if isinstance(v, _decimal.Decimal):
        d = v
    elif isinstance(v, bool):
        raise _fail(t, v, "expected a number, got BOOLEAN")
    elif isinstance(v, int) or (hasattr(type(v), "__index__") and not isinstance(v, float)):
        d = _decimal.Decimal(operator.index(v))
    elif isinstance(v, numbers.Real):
        f = float(v)
        if f != f or f - f != 0.0:
            raise _fail(t, v, "a DECIMAL is a finite number")
        d = _decimal.Decimal(repr(f))  # the float's shortest text, as SQL reads 0.1
    elif isinstance(v, str):
        d = _dec_from_text(t, v.encode("ascii", "replace"), v)
    else:
        raise _fail(t, v, f"expected a number, got {_kind(v)}")
    return _dec_checked(t, d, v)


def _dec_dec_text(t: ColumnType, raw: bytes) -> _decimal.Decimal:
    return _dec_checked(t, _dec_from_text(t, raw, raw), raw)


def _dec_dec_bin(t: ColumnType, raw: bytes) -> _decimal.Decimal:
    if len(raw) < 5:
        raise _fail(t, raw, f"expected at least 5 bytes, got {len(raw)}")
    scale = _I.unpack_from(raw)[0]
    unscaled = int.from_bytes(raw[4:], "big", signed=True)
    try:  # rounded to _DEC_CTX's 76 digits; a scale past its exponents is out of range
        d = _decimal.Decimal(unscaled).scaleb(-scale, _DEC_CTX)
    except _decimal.DecimalException:
        raise _fail(t, raw, "out of range") from None
    return _dec_checked(t, d, raw)


def _dec_enc_text(t: ColumnType, v: Any) -> bytes:
    return format(_as_decimal(t, v), "f").encode("ascii")


def _dec_enc_bin(t: ColumnType, v: Any) -> bytes:
    d = _as_decimal(t, v)
    sign, digits, exp = d.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    scale = -int(exp)
    if scale < -_BIAS32 or scale >= _BIAS32:
        raise _fail(t, v, "scale out of range")
    # BigInteger.toByteArray: the shortest two's complement, at least one byte
    n = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return _I.pack(scale) + unscaled.to_bytes(n, "big", signed=True)


def _as_exact_decimal(t: ColumnType, v: Any) -> _decimal.Decimal:
    """A number as a finite Decimal, not rounded to the column's scale."""
    return _as_decimal(ColumnType("decimal"), v) if t.scale is not None else _as_decimal(t, v)


def _dec_enc_key(t: ColumnType, v: Any) -> bytes:
    """Zero is 0x80. Otherwise, with the value written 0.d1d2...dn x 10^e (d1 and dn non-zero):
    positive 0x81, e + 2^31 (4 bytes), each digit + 1, 0x00; negative 0x7F, the inverted
    exponent bytes, 10 - digit + 1 for each digit, 0xFF (so larger magnitudes sort lower).
    The value is encoded exactly (a literal beyond the column's scale keeps its place)."""
    d = _as_exact_decimal(t, v)
    if not d:
        return b"\x80"
    try:
        sign, digits, exp = d.normalize(_DEC_CTX).as_tuple()
    except _decimal.DecimalException:  # exponent past +-999999 (Overflow, Underflow)
        raise _fail(t, v, "out of range") from None
    e = int(exp) + len(digits) + _BIAS32
    if not 0 <= e < 1 << 32:
        raise _fail(t, v, "out of range")
    if sign:
        return (b"\x7f" + _IB.pack(e ^ 0xFFFFFFFF) + bytes(11 - x for x in digits)
                + b"\xff")
    return b"\x81" + _IB.pack(e) + bytes(x + 1 for x in digits) + b"\x00"


def _dec_dec_key(t: ColumnType, buf: bytes, pos: int) -> tuple[_decimal.Decimal, int]:
    head = buf[pos:pos + 1]
    if head == b"\x80":
        return _dec_checked(t, _decimal.Decimal(0), b"\x80"), pos + 1
    if head not in (b"\x81", b"\x7f") or len(buf) - pos < 6:
        raise _fail(t, bytes(buf[pos:]), "truncated or bad key")
    neg = head == b"\x7f"
    e = _IB.unpack_from(buf, pos + 1)[0]
    end = buf.find(b"\xff" if neg else b"\x00", pos + 5)
    if end < 0:
        raise _fail(t, bytes(buf[pos:]), "unterminated key")
    raw = buf[pos + 5:end]
    digits = tuple(11 - x for x in raw) if neg else tuple(x - 1 for x in raw)
    if neg:
        e ^= 0xFFFFFFFF
    if not digits or any(not 0 <= x <= 9 for x in digits):
        raise _fail(t, bytes(buf[pos:end + 1]), "bad key")
    d = _decimal.Decimal((int(neg), digits, e - _BIAS32 - len(digits)))
    return _dec_checked(t, d, bytes(buf[pos:end + 1])), end + 1


_CODECS: dict[str, _Codec] = {
    "char": _Codec(_char_dec_text, _char_dec_bin, _char_enc_text, _char_enc_bin,
                   _char_enc_bin, _char_dec_key),
    **{name: _make_int(w) for name, w in _INT_WIDTHS.items()},
    "float": _make_float(4),
    "double": _make_float(8),
    "string": _Codec(_str_dec, _str_dec, _str_enc, _str_enc, _str_enc_key, _str_dec_key),
    "bytes": _Codec(_bytes_dec, _bytes_dec, _bytes_enc, _bytes_enc, _bytes_enc_key,
                    _bytes_dec_key),
    "date": _Codec(_date_dec_text, _date_dec_bin, _date_enc_text, _date_enc_bin, _date_enc_key,
                   _date_dec_key),
    "time": _Codec(_time_dec_text, _time_dec_bin, _time_enc_text, _time_enc_bin, _time_enc_key,
                   _time_dec_key),
    "timestamp": _Codec(_ts_dec_text, _ts_dec_bin, _ts_enc_text, _ts_enc_bin, _ts_enc_key,
                        _ts_dec_key),
    "decimal": _Codec(_dec_dec_text, _dec_dec_bin, _dec_enc_text, _dec_enc_bin, _dec_enc_key,
                      _dec_dec_key),
    "boolean": _Codec(_bool_dec_text, _bool_dec_bin, _bool_enc_text, _bool_enc_bin,
                      _bool_enc_key, _bool_dec_key),
}


# -- cells -------------------------------------------------------------------------------------

def decode_cell(t: ColumnType, raw: bytes) -> Any:
    """The value (int / float / str / bytes) of a stored cell; ValueTypeError if malformed."""
    if type(raw) is not bytes:
        raw = _as_bytes(t, raw)
    return t._dec(t, raw)  # type: ignore[attr-defined]


class BadCells:
    """Cells met that do not parse as their column's declared type (another writer skipped
    hibase's checks): every reader shows them as NULL, as queries and indexes treat them, and
    collects them here so the user is told (how many, and the first few by row and column)."""

    KEEP = 5  # examples kept

    __slots__ = ("count", "examples")

    def __init__(self) -> None:
        self.count = 0
        self.examples: list[tuple[bytes, bytes]] = []

    def add(self, row: bytes, column: bytes) -> None:
        self.count += 1
        if len(self.examples) < self.KEEP:
            self.examples.append((row, column))

    def decode(self, t: ColumnType, raw: bytes, row: bytes, column: bytes) -> Any:
        """decode_cell, or None (counted here) for a cell that does not parse."""
        try:
            return decode_cell(t, raw)
        except ValueTypeError:
            self.add(row, column)
            return None

    def __bool__(self) -> bool:
        return self.count > 0

    def message(self, shown: int = 3) -> str:
        """'1 cell did not parse as its declared type (row r1, e.amount)', for the user."""
        show = lambda b: b.decode("utf-8", "backslashreplace")  # noqa: E731
        where = "; ".join(f"row {show(r)}, {column_text(c)}" for r, c in self.examples[:shown])
        if self.count > shown:
            where += "; ..."
        if self.count == 1:
            return f"1 cell did not parse as its declared type ({where}): read as NULL"
        return (f"{self.count} cells did not parse as their declared types ({where}): "
                "read as NULL")

    def as_json(self) -> dict[str, Any]:
        """{"count": n, "examples": [{"row": bytes, "column": bytes}, ...]}."""
        return {"count": self.count,
                "examples": [{"row": r, "column": c} for r, c in self.examples]}


def column_text(col: bytes) -> str:
    """A column's HBase name b"family:qualifier" as messages spell it: family.qualifier."""
    return col.decode("utf-8", "backslashreplace").replace(":", ".", 1)


def cell_key(t: ColumnType, raw: bytes) -> bytes | None:
    """encode_key of a stored cell's value without building the value where the encodings
    allow (string, bytes); None for a NaN (unordered: indexes treat it as NULL)."""
    return t._ckey(t, raw)  # type: ignore[attr-defined]


def _cell_key_generic(t: ColumnType, raw: bytes) -> bytes | None:
    v = t._dec(t, raw)  # type: ignore[attr-defined]
    return None if v != v else t._kenc(t, v)  # type: ignore[attr-defined]


def _str_cell_key(t: ColumnType, raw: bytes) -> bytes:
    _str_dec(t, raw)  # validates the UTF-8 the key's order relies on
    return escape_bytes(raw)


def _bytes_cell_key(t: ColumnType, raw: bytes) -> bytes:
    return escape_bytes(raw)


_CELL_KEYS = {"string": _str_cell_key, "bytes": _bytes_cell_key}


def cell_decoder(t: ColumnType) -> Callable[[ColumnType, bytes], Any]:
    """decode_cell's inner function for `t`, called as fn(t, raw) on bytes: for compiled loops
    that bind it once (no type check of `raw`, which must be bytes)."""
    return t._dec  # type: ignore[attr-defined]


def fast_decoder(t: ColumnType) -> Callable[[bytes], Any]:
    """decode(raw) of `t`'s cells for loops decoding many (a result's rows): the common case
    (a decimal integer that fits, UTF-8 text) without the general decoder's call; a cell it
    does not take raises (ValueTypeError, or UnicodeDecodeError for text), as cell_decoder's."""
    fast = _FAST.get(t._dec)  # type: ignore[attr-defined]
    if fast is not None:
        return fast(t)
    return functools.partial(t._dec, t)  # type: ignore[attr-defined]


def encode_cell(t: ColumnType, value: Any) -> bytes:
    """The cell bytes for a Python value; bytes-like input is validated and passed through.

    Text columns write ints in decimal and floats in the shortest form that reads back exactly
    (``repr``; for float32 the shortest digits that round-trip through float32)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if t.length is not None:  # VARCHAR(n) / CHAR(n): checked (a CHAR's padding dropped)
            return t._enc(t, decode_cell(t, raw))  # type: ignore[attr-defined]
        decode_cell(t, raw)
        return raw
    return t._enc(t, value)  # type: ignore[attr-defined]


def validate_cell(t: ColumnType, raw: bytes) -> None:
    """Raise ValueTypeError unless ``raw`` is a well-formed cell of type ``t`` (for VARCHAR(n)
    and CHAR(n) also within the length, a CHAR without trailing spaces)."""
    if type(raw) is not bytes:
        raw = _as_bytes(t, raw)
    if t.length is not None:
        _check_limited(t, raw)
        return
    t._dec(t, raw)  # type: ignore[attr-defined]


# -- keys --------------------------------------------------------------------------------------

def encode_key(t: ColumnType, value: Any) -> bytes:
    """Order-preserving, self-delimiting encoding of ``value`` (independent of ``t.binary``).

    Ints must be ints in the type's range; float/double accept int or float (float is rounded to
    float32, -0.0 encodes as 0.0, NaN is rejected); char/string take str (a CHAR(n) value without
    its trailing spaces), bytes take bytes (or str, as UTF-8). No encoding is a prefix of another
    of the same type."""
    return t._kenc(t, value)  # type: ignore[attr-defined]


def decode_key(t: ColumnType, buf: bytes, pos: int = 0) -> tuple[Any, int]:
    """Decode one value at ``buf[pos:]``; returns it and the position just after it."""
    return t._kdec(t, buf, pos)  # type: ignore[attr-defined]


def encode_composite(types: Sequence[ColumnType], values: Sequence[Any]) -> bytes:
    """Concatenated key encodings; sorts like the tuple of values."""
    if len(types) != len(values):
        raise InvalidArgument(f"{len(values)} values for {len(types)} key columns")
    return b"".join([t._kenc(t, v) for t, v in zip(types, values)])  # type: ignore[attr-defined]


def decode_composite(types: Sequence[ColumnType], buf: bytes, pos: int = 0) -> tuple[list, int]:
    """Decode ``len(types)`` consecutive key values; returns them and the end position."""
    out = []
    for t in types:
        v, pos = t._kdec(t, buf, pos)  # type: ignore[attr-defined]
        out.append(v)
    return out, pos


# -- query literals ----------------------------------------------------------------------------

_INT_NAMES = frozenset(_INT_WIDTHS)
_TEMPORAL: dict[str, tuple[type, ...]] = {
    "date": (_dt.date,), "time": (_dt.time,), "timestamp": (_dt.datetime, _dt.date)}
_TEMPORAL_AS: dict[str, Callable[[ColumnType, Any], Any]] = {
    "date": _as_date, "time": _as_time, "timestamp": _as_timestamp}


def value_from_literal(t: ColumnType, literal: Any) -> Any:
    """Convert a query literal to the column's value type so it compares like decoded cells.

    The literal is read the way a cell holding its text would be: an int for a double column
    becomes a float (3 -> 3.0), a number for a float column is rounded to float32, a str for a
    bytes column becomes its UTF-8 bytes, a str for a CHAR(n) column loses its trailing spaces
    (SQL compares CHARs as if padded: ``c = 'EN '`` is ``c = 'EN'``). When the literal lies
    outside the column's domain it is returned unchanged so the comparison keeps its meaning: a
    float for an int column (``x > 2.5`` stays 2.5), an int beyond the type's range, a number
    beyond float32/double range, a str of other than one character for a char column, a str
    longer than a VARCHAR(n)'s n. Such values are not valid for encode_key; a range
    planner must clamp or round them itself (e.g. ``x > 2.5`` on an int index starts at 3).
    A literal of the wrong kind (str for a number column, number for a string column, bool, None)
    raises ValueTypeError.

    The new types: a DATE, TIME or TIMESTAMP column takes its own value or its ISO text
    ('2024-01-02'; a TIMESTAMP also a date, as its midnight); a DECIMAL any number, as an exact
    decimal.Decimal (not rounded to the column's scale, so ``x > 2.555`` keeps its meaning); a
    BOOLEAN a bool. A decimal.Decimal literal for another number column is read as an int
    (when whole, for integer columns) or a float."""
    name = t.name
    if name == "boolean" and isinstance(literal, bool):
        return literal
    if isinstance(literal, bool) or literal is None:
        raise _fail(t, literal, "not a comparable literal for this column")
    if name in _TEMPORAL:
        if isinstance(literal, str) or type(literal) in _TEMPORAL[name]:
            return _TEMPORAL_AS[name](t, literal)
        if name == "date" and type(literal) is _dt.datetime and literal.time() == _dt.time():
            return literal.date()
        raise _fail(t, literal, f"{_kind(literal)} literal cannot be compared with it")
    if name == "decimal":
        if isinstance(literal, (int, float, _decimal.Decimal)):
            return _as_exact_decimal(t, literal)
        raise _fail(t, literal, f"{_kind(literal)} literal cannot be compared with it")
    if isinstance(literal, _decimal.Decimal) and name in _INT_NAMES | {"double", "float"}:
        literal = int(literal) if name in _INT_NAMES and literal == literal.to_integral_value() \
            else float(literal)
    if name in _INT_NAMES:
        if isinstance(literal, (int, float)):
            return literal
    elif name == "double" or name == "float":
        if isinstance(literal, (int, float)):
            try:
                v = float(literal)
            except OverflowError:
                return literal
            if name == "float":
                try:
                    return _round_f32(v)
                except OverflowError:
                    return v
            return v
    elif name == "bytes":
        if isinstance(literal, (bytes, bytearray, memoryview, str)):
            return _bytes_enc(t, literal)
    elif isinstance(literal, str):  # char, string
        return literal.rstrip(" ") if t.fixed else literal
    elif isinstance(literal, (_dt.date, _dt.time)) and name == "string":  # as sqlite3 keeps it
        return iso_text(literal)
    raise _fail(t, literal, f"{_kind(literal)} literal cannot be compared with it")
