"""Tests for hibase.query.hbase_filter: HBase filter-language parsing and row evaluation."""

from __future__ import annotations

import struct

import pytest

from hibase.errors import FilterError, FilterSyntaxError, UnsupportedFilter
from hibase.query.hbase_filter import RowFilter, compile_filter

CELLS = {b"cf:a": b"apple", b"cf:b": b"Banana", b"cf:bb": b"x", b"cg:b": b"10"}


def run(text: str | bytes, rows: dict[bytes, dict[bytes, bytes]]) -> dict[bytes, dict[bytes, bytes]]:
    """Apply a freshly compiled filter to rows in key order, like a scan would."""
    f = compile_filter(text)
    out = {}
    for key in sorted(rows):
        res = f.apply(key, rows[key])
        if res is not None:
            out[key] = res
    return out


def passes(text: str | bytes, cells: dict[bytes, bytes] = CELLS, row: bytes = b"row1") -> bool:
    return compile_filter(text).apply(row, cells) is not None


# ----------------------------------------------------------------------------- single filters

def test_prefix_filter():
    f = compile_filter("PrefixFilter('ro')")
    assert isinstance(f, RowFilter)
    assert f.apply(b"row1", CELLS) == CELLS
    assert f.apply(b"xrow", CELLS) is None
    assert f.prefix == b"ro" and f.limit is None


def test_key_only_filter():
    out = compile_filter("KeyOnlyFilter()").apply(b"r", CELLS)
    assert out == dict.fromkeys(CELLS, b"")
    assert list(out) == sorted(CELLS)


def test_key_only_filter_len_as_value():
    out = compile_filter("KeyOnlyFilter(true)").apply(b"r", {b"cf:a": b"abc"})
    assert out == {b"cf:a": struct.pack(">i", 3)}
    assert compile_filter("KeyOnlyFilter(FALSE)").apply(b"r", {b"cf:a": b"abc"}) == {b"cf:a": b""}


def test_first_key_only_filter():
    cells = {b"cf:z": b"1", b"cf:b": b"2", b"cg:a": b"3"}
    assert compile_filter("FirstKeyOnlyFilter()").apply(b"r", cells) == {b"cf:b": b"2"}


def test_first_key_only_uses_family_then_qualifier_order():
    cells = {b"a-:x": b"1", b"a:y": b"2"}   # family "a" sorts before family "a-"
    assert compile_filter("FirstKeyOnlyFilter()").apply(b"r", cells) == {b"a:y": b"2"}


def test_column_prefix_filter_matches_qualifier_only():
    f = compile_filter("ColumnPrefixFilter('b')")
    out = f.apply(b"r", CELLS)
    assert out == {b"cf:b": b"Banana", b"cf:bb": b"x", b"cg:b": b"10"}
    assert list(out) == [b"cf:b", b"cf:bb", b"cg:b"]
    assert compile_filter("ColumnPrefixFilter('c')").apply(b"r", CELLS) is None  # not the family
    assert compile_filter("ColumnPrefixFilter('bb')").apply(b"r", CELLS) == {b"cf:bb": b"x"}


def test_page_filter():
    rows = {b"r%d" % i: {b"cf:a": b"v"} for i in range(5)}
    f = compile_filter("PageFilter(2)")
    assert f.limit == 2 and f.prefix is None
    assert list(run("PageFilter(2)", rows)) == [b"r0", b"r1"]
    assert run("PageFilter(0)", rows) == {}
    assert list(run("PageFilter(10)", rows)) == sorted(rows)


def test_page_filter_counts_rows_passing_the_rest_of_the_chain():
    rows = {k: {b"cf:a": b"v"} for k in (b"a1", b"b1", b"a2", b"b2", b"a3")}
    assert list(run("PageFilter(2) AND PrefixFilter('a')", rows)) == [b"a1", b"a2"]
    assert list(run("(PageFilter(2) AND ColumnPrefixFilter('a')) AND PrefixFilter('a')",
                    rows)) == [b"a1", b"a2"]


def test_input_not_mutated_and_empty_rows_dropped():
    cells = dict(CELLS)
    for text in ("KeyOnlyFilter()", "FirstKeyOnlyFilter()", "ColumnPrefixFilter('b')",
                 "KeyOnlyFilter() OR ColumnPrefixFilter('a')"):
        out = compile_filter(text).apply(b"r", cells)
        assert out is not cells
        assert cells == CELLS
    assert compile_filter("PrefixFilter('r')").apply(b"r", {}) is None


# ----------------------------------------------------------------------------- SingleColumnValueFilter

@pytest.mark.parametrize("op,expected", [
    ("=", [b"m"]), ("!=", [b"a", b"z"]), ("<", [b"a"]), ("<=", [b"a", b"m"]),
    (">", [b"z"]), (">=", [b"m", b"z"]),
])
def test_binary_comparator_ops(op, expected):
    rows = {v: {b"cf:q": v} for v in (b"a", b"m", b"z")}
    assert list(run(f"SingleColumnValueFilter('cf', 'q', {op}, 'binary:m')", rows)) == expected


def test_binary_comparison_is_bytewise():
    rows = {b"1": {b"cf:q": b"10"}, b"2": {b"cf:q": b"9"}, b"3": {b"cf:q": b"1"}}
    assert list(run("SingleColumnValueFilter('cf','q',<,'binary:10')", rows)) == [b"3"]
    assert list(run("SingleColumnValueFilter('cf','q',>,'binary:10')", rows)) == [b"2"]


@pytest.mark.parametrize("op,expected", [
    ("=", [b"1", b"2"]), ("!=", [b"3", b"4", b"5"]), ("<", [b"4", b"5"]),
    ("<=", [b"1", b"2", b"4", b"5"]), (">", [b"3"]), (">=", [b"1", b"2", b"3"]),
])
def test_binaryprefix_comparator_ops(op, expected):
    rows = {b"1": {b"cf:q": b"abc"}, b"2": {b"cf:q": b"abzz"}, b"3": {b"cf:q": b"ac"},
            b"4": {b"cf:q": b"aa"}, b"5": {b"cf:q": b"a"}}
    assert list(run(f"SingleColumnValueFilter('cf','q',{op},'binaryprefix:ab')", rows)) == expected


def test_substring_comparator_is_case_insensitive():
    rows = {b"1": {b"cf:q": b"Hello World"}, b"2": {b"cf:q": b"goodbye"},
            b"3": {b"cf:q": "ÄRGER".encode()}}
    assert list(run("SingleColumnValueFilter('cf','q',=,'substring:WORLD')", rows)) == [b"1"]
    assert list(run("SingleColumnValueFilter('cf','q',!=,'substring:world')", rows)) == [b"2", b"3"]
    assert list(run("SingleColumnValueFilter('cf','q',=,'substring:ärg')", rows)) == [b"3"]


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_substring_rejects_ordering_ops(op):
    with pytest.raises(FilterSyntaxError):
        compile_filter(f"SingleColumnValueFilter('cf','q',{op},'substring:x')")


def test_missing_column_behaviour():
    rows = {b"has": {b"cf:q": b"v", b"cf:o": b"1"}, b"hasnot": {b"cf:o": b"1"},
            b"other": {b"cf:q": b"w"}}
    base = "SingleColumnValueFilter('cf','q',=,'binary:v'"
    assert list(run(base + ")", rows)) == [b"has", b"hasnot"]
    assert list(run(base + ", false, true)", rows)) == [b"has", b"hasnot"]
    assert list(run(base + ", true, true)", rows)) == [b"has"]
    assert list(run(base + ", TRUE, False)", rows)) == [b"has"]


def test_scvf_emits_all_cells_of_passing_row():
    assert compile_filter("SingleColumnValueFilter('cg','b',=,'binary:10')").apply(
        b"r", CELLS) == CELLS


def test_scvf_sees_original_cells_even_after_a_transform():
    text = "ColumnPrefixFilter('a') AND SingleColumnValueFilter('cf','b',=,'binary:Banana')"
    assert compile_filter(text).apply(b"r", CELLS) == {b"cf:a": b"apple"}
    text = "KeyOnlyFilter() AND SingleColumnValueFilter('cf','a',=,'binary:apple')"
    assert compile_filter(text).apply(b"r", CELLS) == dict.fromkeys(CELLS, b"")


def test_comparator_empty_operand():
    assert passes("SingleColumnValueFilter('cf','a',>,'binary:')")
    assert not passes("SingleColumnValueFilter('cf','a',=,'binary:')")


# ----------------------------------------------------------------------------- combinations

def test_and_composes_transformations():
    f = compile_filter("PrefixFilter('a') AND KeyOnlyFilter()")
    assert f.apply(b"abc", {b"cf:x": b"1"}) == {b"cf:x": b""}
    assert f.apply(b"bcd", {b"cf:x": b"1"}) is None
    f = compile_filter("ColumnPrefixFilter('b') AND FirstKeyOnlyFilter() AND KeyOnlyFilter()")
    assert f.apply(b"r", CELLS) == {b"cf:b": b""}


def test_or_union_of_passing_branches():
    f = compile_filter("PrefixFilter('a') OR PrefixFilter('b')")
    assert f.apply(b"a1", CELLS) == CELLS and f.apply(b"b1", CELLS) == CELLS
    assert f.apply(b"c1", CELLS) is None
    out = compile_filter("ColumnPrefixFilter('a') OR ColumnPrefixFilter('bb')").apply(b"r", CELLS)
    assert out == {b"cf:a": b"apple", b"cf:bb": b"x"}
    assert list(out) == [b"cf:a", b"cf:bb"]


def test_or_with_transform_branch_transformed_value_wins():
    out = compile_filter("PrefixFilter('r') OR KeyOnlyFilter()").apply(b"r", {b"cf:a": b"v"})
    assert out == {b"cf:a": b""}
    out = compile_filter("PrefixFilter('x') OR KeyOnlyFilter()").apply(b"r", {b"cf:a": b"v"})
    assert out == {b"cf:a": b""}


def test_and_binds_tighter_than_or():
    # a OR (b AND c): row "a..." passes even though it fails c
    text = "PrefixFilter('a') OR PrefixFilter('b') AND ColumnPrefixFilter('zz')"
    assert passes(text, row=b"a1")
    assert not passes(text, row=b"b1")
    text = "PrefixFilter('b') AND ColumnPrefixFilter('zz') OR PrefixFilter('a')"
    assert passes(text, row=b"a1") and not passes(text, row=b"b1")


def test_parentheses_override_precedence():
    text = "(PrefixFilter('a') OR PrefixFilter('b')) AND ColumnPrefixFilter('zz')"
    assert not passes(text, row=b"a1")
    text = "((PrefixFilter('a') OR PrefixFilter('b'))) AND ColumnPrefixFilter('a')"
    assert compile_filter(text).apply(b"b1", CELLS) == {b"cf:a": b"apple"}


def test_keywords_without_spaces_and_tabs():
    assert passes("(PrefixFilter('r'))AND(KeyOnlyFilter())")
    assert passes("PrefixFilter ( 'r' )\tAND\nKeyOnlyFilter ( )")


def test_prefix_hint():
    assert compile_filter("PrefixFilter('ab') AND KeyOnlyFilter()").prefix == b"ab"
    assert compile_filter("KeyOnlyFilter() AND (PrefixFilter('a') AND PrefixFilter('abc'))"
                          ).prefix == b"abc"
    assert compile_filter("PrefixFilter('abc') OR PrefixFilter('abd')").prefix == b"ab"
    assert compile_filter("PrefixFilter('abc') OR KeyOnlyFilter()").prefix is None
    assert compile_filter("PrefixFilter('a') OR PrefixFilter('b')").prefix is None
    assert compile_filter("PrefixFilter('')").prefix is None
    assert compile_filter("KeyOnlyFilter()").prefix is None


def test_limit_hint():
    assert compile_filter("PageFilter(5) AND PrefixFilter('a') AND PageFilter(3)").limit == 3
    assert compile_filter("KeyOnlyFilter() AND (PageFilter(4) AND PrefixFilter('a'))").limit == 4
    assert compile_filter("PageFilter(5) OR PrefixFilter('a')").limit is None
    assert compile_filter("PrefixFilter('a') AND (PageFilter(5) OR KeyOnlyFilter())").limit is None
    assert compile_filter("PrefixFilter('a')").limit is None


# ----------------------------------------------------------------------------- lexical rules

def test_doubled_quote_escapes_a_quote():
    f = compile_filter("PrefixFilter('it''s')")
    assert f.prefix == b"it's"
    assert compile_filter("PrefixFilter('''')").prefix == b"'"
    assert compile_filter("SingleColumnValueFilter('cf','q',=,'binary:a''b,c)')").apply(
        b"r", {b"cf:q": b"a'b,c)"}) is not None


def test_strings_are_bytes_str_and_bytes_input():
    assert compile_filter("PrefixFilter('é')").prefix == "é".encode()
    assert compile_filter(b"PrefixFilter('\xff\x00')").prefix == b"\xff\x00"
    assert compile_filter(bytearray(b"PrefixFilter('x')")).prefix == b"x"


def test_bytes_input_positions_are_byte_offsets():
    with pytest.raises(FilterSyntaxError) as ei:
        compile_filter("PrefixFilter('é') junk".encode())
    assert ei.value.position == 19
    with pytest.raises(FilterSyntaxError) as ei:
        compile_filter("PrefixFilter('é') junk")
    assert ei.value.position == 18


def test_booleans_case_insensitive_and_integers():
    assert passes("SingleColumnValueFilter('cf','zz',=,'binary:x',False,TRUE)")
    assert not passes("SingleColumnValueFilter('cf','zz',=,'binary:x',tRuE,false)")
    assert compile_filter("PageFilter(007)").limit == 7


def test_non_string_input_rejected():
    with pytest.raises(FilterError):
        compile_filter(42)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("text,position", [
    ("PrefixFilter('abc)", 13),                      # unterminated string
    ("PrefixFilter('abc'", 18),                      # missing ')'
    ("(PrefixFilter('abc')", 20),                    # missing ')' of a group
    ("PrefixFilter('a'))", 17),                      # stray ')'
    ("PrefixFilter('a') garbage", 18),               # trailing garbage
    ("PrefixFilter('a') and KeyOnlyFilter()", 18),   # operators are case-sensitive
    ("PrefixFilter('a') AND", 21),                   # missing operand
    ("PrefixFilter('a') KeyOnlyFilter()", 18),       # missing operator
    ("PrefixFilter", 12),                            # missing '('
    ("PrefixFilter('a',)", 17),                      # empty argument
    ("PrefixFilter('a' 'b')", 17),                   # missing ','
    ("", 0),                                         # empty
    ("   ", 0),
    ("()", 1),
    ("AND PrefixFilter('a')", 0),
    ("'x'", 0),
    ("PrefixFilter()", 0),                           # wrong arg count
    ("PrefixFilter('a', 'b')", 0),
    ("KeyOnlyFilter(true, true)", 0),
    ("FirstKeyOnlyFilter('x')", 0),
    ("PageFilter()", 0),
    ("SingleColumnValueFilter('cf','q',=)", 0),
    ("SingleColumnValueFilter('cf','q',=,'binary:x',true)", 0),
    ("PrefixFilter(abc)", 13),                       # wrong arg types
    ("ColumnPrefixFilter(1)", 19),
    ("PageFilter('3')", 11),
    ("PageFilter(x)", 11),
    ("PageFilter(-1)", 11),
    ("KeyOnlyFilter(yes)", 14),
    ("SingleColumnValueFilter(cf,'q',=,'binary:x')", 24),
    ("SingleColumnValueFilter('cf','q',==,'binary:x')", 33),
    ("SingleColumnValueFilter('cf','q','=','binary:x')", 33),
    ("SingleColumnValueFilter('cf','q',=,binary:x)", 35),
    ("SingleColumnValueFilter('cf','q',=,'nope:x')", 35),
    ("SingleColumnValueFilter('cf','q',=,'binary')", 35),
    ("SingleColumnValueFilter('cf','q',=,'binary:x',1,true)", 46),
])
def test_syntax_errors(text, position):
    with pytest.raises(FilterSyntaxError) as ei:
        compile_filter(text)
    assert ei.value.position == position
    assert f"position {position}" in str(ei.value)


@pytest.mark.parametrize("text,name", [
    ("ValueFilter(=, 'binary:x')", "ValueFilter"),
    ("RowFilter(=, 'binary:x')", "RowFilter"),
    ("prefixfilter('a')", "prefixfilter"),          # names are case-sensitive
    ("PrefixFilter('a') AND QualifierFilter(=,'binary:a')", "QualifierFilter"),
    ("SKIP ValueFilter(=,'binary:0')", "SKIP"),
    ("WHILE PrefixFilter('a')", "WHILE"),
    ("PrefixFilter('a') OR SKIP (KeyOnlyFilter())", "SKIP"),
    ("SingleColumnValueFilter('cf','q',=,'regexstring:a.*')", "regexstring"),
])
def test_unsupported_filters(text, name):
    with pytest.raises(UnsupportedFilter) as ei:
        compile_filter(text)
    assert ei.value.name == name
    assert name in str(ei.value)


def test_syntax_error_wins_over_unsupported_name():
    with pytest.raises(FilterSyntaxError):
        compile_filter("ValueFilter(=, 'binary:x'")
    with pytest.raises(FilterSyntaxError):
        compile_filter("SKIP")


def test_error_hierarchy():
    assert issubclass(FilterSyntaxError, FilterError)
    assert issubclass(UnsupportedFilter, FilterError)
    with pytest.raises(ValueError):
        compile_filter("nonsense")
