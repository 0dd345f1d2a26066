"""Tests for hibase.codec: type specs, cell layouts, order-preserving keys, literals."""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import pytest
from hypothesis import given, settings, strategies as st

from hibase import codec, errors
from hibase.codec import ColumnType, parse_type

settings.register_profile("codec", max_examples=150, deadline=None)
settings.load_profile("codec")

T = {name: ColumnType(name) for name in codec.TYPE_NAMES}
TB = {name: ColumnType(name, True) for name in codec.TYPE_NAMES}


def f32(x: float) -> float:
    return struct.unpack(">f", struct.pack(">f", x))[0]


INT_RANGES = {"byte": 8, "short": 16, "int": 32, "long": 64}
float32s = st.floats(width=32, allow_nan=False)
STRATEGIES = {
    **{n: st.integers(-(1 << (b - 1)), (1 << (b - 1)) - 1) for n, b in INT_RANGES.items()},
    "float": float32s | st.sampled_from([0.0, -0.0, math.inf, -math.inf, f32(0.1)]),
    "double": st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, math.inf, -math.inf]),
    "char": st.characters(max_codepoint=0xFFFF),
    "string": st.text(alphabet=st.sampled_from("\x00\x01a\x7f\xff\u0100\uffff\U0001f600"))
    | st.text(),
    "bytes": st.binary() | st.lists(st.sampled_from([b"\x00", b"\xff", b"a"])).map(b"".join),
    "date": st.dates(),
    "time": st.times(),
    "timestamp": st.datetimes(),
    "decimal": st.decimals(-10 ** 30, 10 ** 30, allow_nan=False, allow_infinity=False)
    | st.sampled_from([Decimal(0), Decimal("-0.00"), Decimal("1E+5"), Decimal("0.001")]),
    "boolean": st.booleans(),
}


# -- type specs ----------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,expected", [
    ("double", ColumnType("double")),
    ("  Long   BINARY ", ColumnType("long", True)),
    ("STRING", ColumnType("string")),
    ("char binary", ColumnType("char", True)),
])
def test_parse_type(spec, expected):
    assert parse_type(spec) == expected
    assert parse_type(str(expected)) == expected


def test_str_is_canonical():
    assert str(ColumnType("double")) == "double"
    assert str(ColumnType("long", True)) == "long binary"
    assert [str(parse_type(n)) for n in codec.TYPE_NAMES] == list(codec.TYPE_NAMES)


@pytest.mark.parametrize("spec", ["", "integer", "long bin", "long binary binary", "binary",
                                  "long, binary", None, 3])
def test_parse_type_rejects(spec):
    with pytest.raises(errors.SchemaError, match="valid types: char, byte"):
        parse_type(spec)


def test_column_type_validates():
    with pytest.raises(errors.SchemaError):
        ColumnType("Double")
    with pytest.raises(errors.SchemaError):
        ColumnType("long", "yes")  # type: ignore[arg-type]


# -- keys: order and round trip ----------------------------------------------------------------

def _cmp(a, b) -> int:
    return (a > b) - (a < b)


@pytest.mark.parametrize("name", codec.TYPE_NAMES)
def test_key_order_and_roundtrip(name):
    t = T[name]

    @given(st.lists(STRATEGIES[name], max_size=20), st.binary(max_size=3))
    def check(values, suffix):
        encs = [codec.encode_key(t, v) for v in values]
        assert sorted(values) == sorted(values, key=lambda v: codec.encode_key(t, v))
        for v, e in zip(values, encs):
            got, end = codec.decode_key(t, e + suffix)
            assert got == v and end == len(e)
            if isinstance(v, float):
                assert math.copysign(1, got) == 1 or v != 0  # -0.0 comes back as 0.0
        for a, ea in zip(values, encs):
            for b, eb in zip(values[:5], encs[:5]):
                assert _cmp(a, b) == _cmp(ea, eb)

    check()


def test_fixed_widths_and_known_keys():
    widths = {"char": 2, "byte": 1, "short": 2, "int": 4, "long": 8, "float": 4, "double": 8}
    for name, w in widths.items():
        v = "x" if name == "char" else 1
        assert len(codec.encode_key(T[name], v)) == w
    assert codec.encode_key(T["int"], 0) == b"\x80\x00\x00\x00"
    assert codec.encode_key(T["int"], -1) == b"\x7f\xff\xff\xff"
    assert codec.encode_key(T["byte"], -128) == b"\x00"
    assert codec.encode_key(T["double"], -0.0) == codec.encode_key(T["double"], 0.0)
    assert codec.encode_key(T["float"], -0.0) == codec.encode_key(T["float"], 0.0)
    assert codec.encode_key(T["double"], 3) == codec.encode_key(T["double"], 3.0)
    assert codec.encode_key(T["double"], -math.inf) == b"\x00\x0f" + b"\xff" * 6
    assert codec.encode_key(T["double"], math.inf) == b"\xff\xf0" + b"\x00" * 6
    assert codec.encode_key(T["string"], "") == b"\x00\x00"
    assert codec.encode_key(T["string"], "a\x00") == b"a\x00\xff\x00\x00"
    assert codec.encode_key(T["char"], "\ud800") == b"\xd8\x00"  # a Java char may be a surrogate
    assert codec.decode_key(T["char"], b"\xd8\x00") == ("\ud800", 2)


def test_string_prefix_order():
    enc = [codec.encode_key(T["string"], s) for s in ["", "a", "a\x00", "a\x00\x00", "a\x01", "ab",
                                                       "b", "\xff", "\u0100", "\U0001f600"]]
    assert enc == sorted(enc)


@given(st.lists(st.floats(min_value=-3.4e38, max_value=3.4e38) | st.sampled_from([1e-46, -1e-46]),
                min_size=2, max_size=10))
def test_float32_rounding_is_monotone(values):
    t = T["float"]
    for a in values:
        ea = codec.encode_key(t, a)
        assert codec.decode_key(t, ea)[0] == f32(a)
        for b in values:
            if a <= b:
                assert ea <= codec.encode_key(t, b)


COMPOSITE = [T["string"], T["int"]]


@given(st.lists(st.tuples(st.text(alphabet="a\x00\x01b", max_size=4),
                          st.integers(-(1 << 31), (1 << 31) - 1)), max_size=20))
def test_composite_order_and_roundtrip(rows):
    encs = {r: codec.encode_composite(COMPOSITE, r) for r in rows}
    assert sorted(rows) == sorted(rows, key=encs.__getitem__)
    for r, e in encs.items():
        vals, end = codec.decode_composite(COMPOSITE, e + b"rowkey")
        assert tuple(vals) == r and end == len(e)


def test_composite_prefix_cases():
    rows = [("a", 5), ("a\x00", 1), ("ab", -7), ("", 9), ("a", -1)]
    encs = [codec.encode_composite(COMPOSITE, r) for r in rows]
    assert [r for _, r in sorted(zip(encs, rows))] == sorted(rows)
    types = [T["double"], T["bytes"], T["char"], T["long"]]
    vals = [-2.5, b"\x00\xff", "\u00e9", -(1 << 63)]
    assert codec.decode_composite(types, codec.encode_composite(types, vals), 0) == (vals, 23)


# -- escaped bytes and prefix successor ----------------------------------------------------------

@given(st.binary(), st.binary(max_size=4))
def test_escape_roundtrip(b, tail):
    e = codec.escape_bytes(b)
    assert codec.unescape_bytes(b"xy" + e + tail, 2) == (b, 2 + len(e))
    assert e.startswith(codec.escape_prefix(b))


@given(st.binary(max_size=6), st.binary(max_size=6))
def test_escape_prefix_matches_exactly_the_extensions(p, b):
    assert codec.escape_bytes(b).startswith(codec.escape_prefix(p)) == b.startswith(p)


@pytest.mark.parametrize("buf", [b"", b"abc", b"a\x00", b"a\x00\x01\x00\x00", b"\x00\xff"])
def test_unescape_rejects(buf):
    with pytest.raises(errors.ValueTypeError):
        codec.unescape_bytes(buf)


@pytest.mark.parametrize("prefix,succ", [
    (b"", None), (b"\xff", None), (b"\xff\xff", None), (b"a", b"b"), (b"a\xff", b"b"),
    (b"a\x00", b"a\x01"), (b"\x01\xff\xff", b"\x02"), (b"ab\xfe", b"ab\xff"),
])
def test_prefix_successor(prefix, succ):
    assert codec.prefix_successor(prefix) == succ


@given(st.binary(max_size=4).map(lambda b: b + b"\xff" * (len(b) % 2)), st.binary(max_size=6))
def test_prefix_successor_bounds_exactly_the_extensions(p, x):
    s = codec.prefix_successor(p)
    if s is None:
        assert all(c == 0xFF for c in p)
    elif x.startswith(p):
        assert x < s
    elif x > p:
        assert x >= s


# -- cells ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("t,value,raw", [
    (TB["long"], 1, b"\x00" * 7 + b"\x01"),
    (TB["long"], -2, b"\xff" * 7 + b"\xfe"),
    (TB["int"], -1, b"\xff\xff\xff\xff"),
    (TB["int"], 1 << 24, b"\x01\x00\x00\x00"),
    (TB["short"], 256, b"\x01\x00"),
    (TB["byte"], -1, b"\xff"),
    (TB["double"], 1.0, b"?\xf0\x00\x00\x00\x00\x00\x00"),
    (TB["double"], -2.0, b"\xc0\x00\x00\x00\x00\x00\x00\x00"),
    (TB["float"], 1.0, b"?\x80\x00\x00"),
    (TB["char"], "A", b"\x00A"),
    (TB["char"], "\u20ac", b"\x20\xac"),
    (TB["string"], "\u00e9", b"\xc3\xa9"),
    (TB["bytes"], b"\x00\xff", b"\x00\xff"),
    (T["long"], -42, b"-42"),
    (T["byte"], 127, b"127"),
    (T["double"], 1.5, b"1.5"),
    (T["double"], 1e16, b"1e+16"),
    (T["double"], -math.inf, b"-inf"),
    (T["float"], f32(0.1), b"0.1"),
    (T["float"], 1.0, b"1.0"),
    (T["char"], "\u00e9", b"\xc3\xa9"),
    (T["string"], "", b""),
])
def test_known_cells(t, value, raw):
    assert codec.encode_cell(t, value) == raw
    assert codec.decode_cell(t, raw) == value
    codec.validate_cell(t, raw)


@pytest.mark.parametrize("t,raw,value", [
    (T["long"], b"+7", 7), (T["long"], b"007", 7), (T["int"], b"-2147483648", -(1 << 31)),
    (T["double"], b"3", 3.0), (T["double"], b".5", 0.5), (T["double"], b"1E-3", 0.001),
    (T["double"], b"Infinity", math.inf), (T["float"], b"-inf", -math.inf),
    (T["float"], b"3.4028235e38", 3.4028234663852886e38), (T["float"], b"1e-50", 0.0),
    (TB["float"], b"\x7f\x80\x00\x00", math.inf),
])
def test_lenient_text_cells(t, raw, value):
    assert codec.decode_cell(t, raw) == value


def test_nan_cells_are_accepted():
    nan_cells = [(T["double"], b"NaN"), (T["float"], b"nan"),
                 (TB["double"], b"\x7f\xf8" + bytes(6))]
    for t, raw in nan_cells:
        assert math.isnan(codec.decode_cell(t, raw))
    assert codec.encode_cell(T["double"], math.nan) == b"nan"


@pytest.mark.parametrize("name", codec.TYPE_NAMES)
@pytest.mark.parametrize("binary", [False, True])
def test_cell_roundtrip(name, binary):
    t = ColumnType(name, binary)
    strategy = STRATEGIES[name]
    if name == "char" and not binary:
        strategy = st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",))
    if name == "time" and binary:  # a binary TIME holds milliseconds (Java's)
        strategy = strategy.map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))

    @given(strategy)
    def check(v):
        raw = codec.encode_cell(t, v)
        got = codec.decode_cell(t, raw)
        assert got == v and type(got) is type(v)
        assert codec.encode_cell(t, raw) == raw  # bytes pass through after validation
        assert codec.encode_cell(t, bytearray(raw)) == raw

    check()


@pytest.mark.parametrize("t,raw", [
    (T["long"], b""), (T["long"], b"abc"), (T["long"], b"1.5"), (T["long"], b" 1"),
    (T["long"], b"1_000"), (T["long"], b"9223372036854775808"), (T["long"], b"9" * 5000),
    (T["byte"], b"128"), (T["byte"], b"-129"), (T["short"], b"32768"), (T["int"], b"2147483648"),
    (T["double"], b""), (T["double"], b"abc"), (T["double"], b"1e400"), (T["double"], b"1_0.5"),
    (T["double"], b" 1.0"), (T["double"], b"0x10"), (T["float"], b"1e39"),
    (T["float"], b"-3.5e38"), (T["char"], b""), (T["char"], b"ab"),
    (T["char"], b"\xf0\x9f\x98\x80"),
    (T["char"], b"\xff"), (T["string"], b"\xff\xfe"), (T["string"], b"\xed\xa0\x80"),
    (TB["long"], b"\x00" * 7), (TB["int"], b"\x00" * 5), (TB["short"], b"\x01"),
    (TB["byte"], b""), (TB["double"], b"?\xf0"), (TB["float"], b"?\x80\x00"),
    (TB["char"], b"A"), (TB["string"], b"\x80"),
    (T["long"], "12"), (T["string"], None),
])
def test_bad_cells(t, raw):
    with pytest.raises(errors.ValueTypeError, match=f"invalid {codec.sql_type_name(t)} value"):
        codec.decode_cell(t, raw)
    with pytest.raises(errors.ValueTypeError):
        codec.validate_cell(t, raw)


def test_error_message_shows_truncated_value():
    with pytest.raises(errors.ValueTypeError) as exc:
        codec.decode_cell(T["int"], b"x" * 100)
    msg = str(exc.value)
    assert "invalid INTEGER value 'xxxx" in msg and "...'" in msg and len(msg) < 100
    assert isinstance(exc.value, errors.InvalidArgument) and isinstance(exc.value, ValueError)


@pytest.mark.parametrize("t,value", [
    (T["long"], "12"), (T["long"], 1.0), (T["long"], True), (T["long"], 1 << 63),
    (TB["byte"], 128), (TB["short"], -32769), (T["int"], None),
    (T["double"], "1.0"), (T["double"], True), (TB["double"], 10 ** 400),
    (T["float"], 1e39), (TB["float"], 1e39),
    (T["char"], "ab"), (T["char"], ""), (T["char"], "\U0001f600"), (T["char"], 65),
    (T["char"], "\ud800"), (T["string"], b"\xff"), (T["string"], 5), (T["string"], "\ud800"),
    (T["bytes"], 5), (TB["long"], b"\x00"), (T["double"], b"x"),
])
def test_bad_encode_cell(t, value):
    with pytest.raises(errors.ValueTypeError):
        codec.encode_cell(t, value)


@pytest.mark.parametrize("t,value", [
    (T["int"], 2.5), (T["int"], 1 << 31), (T["byte"], -129), (T["long"], True), (T["long"], "1"),
    (T["double"], math.nan), (T["float"], math.nan), (T["float"], 1e39), (T["double"], "x"),
    (T["double"], 10 ** 400), (T["char"], "ab"), (T["char"], "\U0001f600"), (T["string"], b"a"),
    (T["string"], "\udc00"), (T["bytes"], 1), (T["bytes"], None),
])
def test_bad_encode_key(t, value):
    with pytest.raises(errors.ValueTypeError):
        codec.encode_key(t, value)


@pytest.mark.parametrize("t,buf", [
    (T["long"], b"\x80" * 7), (T["byte"], b""), (T["char"], b"\x00"), (T["double"], b"\x00" * 7),
    (T["float"], b"abc"), (T["string"], b"abc"), (T["string"], b"\xff\x00\x00"),
    (T["bytes"], b"a\x00b\x00\x00"),
])
def test_bad_decode_key(t, buf):
    with pytest.raises(errors.ValueTypeError):
        codec.decode_key(t, buf)


def test_decode_key_at_offset():
    buf = b"alias" + codec.encode_key(T["short"], -5) + b"row"
    assert codec.decode_key(T["short"], buf, 5) == (-5, 7)
    with pytest.raises(errors.ValueTypeError):
        codec.decode_key(T["long"], buf, 5)


def test_composite_length_mismatch():
    with pytest.raises(errors.InvalidArgument):
        codec.encode_composite(COMPOSITE, ["a"])


# -- literals ----------------------------------------------------------------------------------

@pytest.mark.parametrize("t,literal,expected", [
    (T["double"], 3, 3.0), (T["double"], 2.5, 2.5), (TB["double"], -1, -1.0),
    (T["long"], 3, 3), (T["long"], 2.5, 2.5), (T["byte"], 300, 300),
    (T["float"], 0.1, f32(0.1)), (T["float"], 16777217, 16777216.0), (T["float"], 1e39, 1e39),
    (T["double"], 10 ** 400, 10 ** 400),
    (T["string"], "IAH", "IAH"), (T["char"], "a", "a"), (T["char"], "ab", "ab"),
    (T["bytes"], "\u00e9", b"\xc3\xa9"), (T["bytes"], b"\x00", b"\x00"),
])
def test_value_from_literal(t, literal, expected):
    got = codec.value_from_literal(t, literal)
    assert got == expected and type(got) is type(expected)


def test_literal_compares_like_decoded_cell():
    t = T["float"]
    assert codec.value_from_literal(t, 0.1) == codec.decode_cell(t, b"0.1")


@pytest.mark.parametrize("t,literal", [
    (T["long"], "3"), (T["long"], True), (T["double"], "1.5"), (T["double"], False),
    (T["string"], 3), (T["string"], b"a"), (T["char"], 65), (T["bytes"], 1), (T["int"], None),
    (T["bytes"], "\ud800"),
])
def test_value_from_literal_rejects(t, literal):
    with pytest.raises(errors.ValueTypeError):
        codec.value_from_literal(t, literal)


def test_column_type_pickles_and_hashes():
    import copy
    import pickle
    t = ColumnType("long", True)
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), parse_type("long binary")):
        assert u == t and hash(u) == hash(t)
        assert codec.decode_cell(u, b"\x00" * 7 + b"\x05") == 5
    assert {t: 1}[ColumnType("long", True)] == 1 and t != ColumnType("long")


@pytest.mark.parametrize("name", codec.TYPE_NAMES)
@pytest.mark.parametrize("binary", [False, True])
def test_cell_key_equals_the_key_of_the_cells_value(name, binary):
    """Index upkeep keys cells with cell_key, queries key values with encode_key: one key."""
    t = ColumnType(name, binary)

    @given(STRATEGIES[name])
    def check(v):
        try:
            raw = codec.encode_cell(t, v)
        except errors.ValueTypeError:
            return  # no cell of this value (a lone surrogate in a text char)
        assert codec.cell_key(t, raw) == codec.encode_key(t, codec.decode_cell(t, raw))

    check()


def test_cell_key_of_nan_is_none_and_bad_text_is_refused():
    assert codec.cell_key(T["double"], b"NaN") is None
    assert codec.cell_key(TB["double"], b"\x7f\xf8" + bytes(6)) is None
    assert codec.cell_key(T["string"], b"a\x00b") == b"a\x00\xffb\x00\x00"
    with pytest.raises(errors.ValueTypeError):
        codec.cell_key(T["string"], b"\xff\xfe")
