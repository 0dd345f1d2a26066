"""The embedded store's filtered full scan (store/embedded/fastscan.py, query/scan.py): byte needles,
compiled atoms and parallel worker processes return exactly what brute force returns."""

from __future__ import annotations

import itertools
import os

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from hibase.query import scan
from hibase.query.evaluate import matches
from hibase.query.normalize import typed
from hibase.query.parse import parse_condition
from hibase.store.embedded import fastscan
from strategies import atoms
from strategies import conditions as conditions_of

# one family (the fast path's shape); text and binary integers, a string, a double, and a
# VARBINARY column compared as raw bytes (an undeclared column of a family that declares columns
# is ColumnNotFound in a condition; test_undeclared_columns_compare_raw_bytes has the bytes of
# a table that declares none)
COLUMNS = {"f:a": "int", "f:b": "string", "f:c": "double", "f:n": "long binary", "f:x": "bytes"}
VALUES = {
    # non-canonical decimal forms decode to the same ints: needles must not miss them
    b"f:a": st.sampled_from(["-5", "-0", "0", "3", "+3", "03", "13", "30", "-3", "2"]).map(
        str.encode),
    b"f:b": st.sampled_from(["", "a", "ab", "abc", "b", "ba", "z\u00e9", "a\x00", "3"]).map(
        str.encode),
    b"f:c": st.sampled_from(["-1.5", "-0.0", "0", "0.5", "2", "1e3", "nan", "inf", "3"]).map(
        str.encode),
    b"f:n": st.integers(-2, 2).map(lambda v: v.to_bytes(8, "big", signed=True)),
    b"f:x": st.sampled_from([b"", b"a", b"3", b"ab", b"\x00\x01"]),
}
ROWS = [b"r%d" % i for i in range(10)] + [b"r\x00", b"r\xff"]
LITERALS = {
    "f.a": st.sampled_from(["3", "-3", "0", "13", "2.5", "30"]),
    "f.b": st.sampled_from(["''", "'a'", "'ab'", "'b'", "'3'"]),
    "f.c": st.sampled_from(["-1.5", "0", "0.5", "2", "1000", "3"]),
    "f.n": st.integers(-3, 3).map(str),
    "f.x": st.sampled_from(["'a'", "'3'", "''", "'ab'"]),
    "ROWKEY": st.sampled_from(["'r1'", "'r5'", "'s'"]),
}


conditions = conditions_of(atoms(
    LITERALS, kinds=["cmp", "eq", "between", "in", "null", "like"],
    comparisons=["<>", "<", "<=", ">", ">="],
    like={c: ["", "a", "ab", "r1", "3"] for c in ("f.b", "f.x", "ROWKEY")}, not_like=True),
    max_leaves=4)
ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(ROWS), st.fixed_dictionaries({}, optional=VALUES)),
    st.tuples(st.just("delete"), st.sampled_from(ROWS), st.one_of(
        st.none(), st.lists(st.sampled_from(list(VALUES)), min_size=1, max_size=2))),
), min_size=1, max_size=30)
_tables = itertools.count()


def _apply(t, ops_list) -> None:
    for kind, row, arg in ops_list:  # several puts of a row leave several segments
        if kind == "put":
            if arg:
                t.put(row, arg)
        else:
            t.delete(row, arg)


def _brute(t, cond: str, columns=None) -> list:
    types = t.schema.columns
    node = typed(parse_condition(cond), types)
    out = []
    for row, cells in t.scan():
        if matches(node, row, cells, types):
            out.append((row, cells if columns is None else
                        {c: v for c, v in cells.items() if c in columns}))
    return out


@settings(max_examples=int(os.environ.get("HIBASE_PROPERTY_EXAMPLES", "80")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=ops, conds=st.lists(conditions, min_size=1, max_size=4))
def test_fast_scan_equals_brute_force(embedded_db, ops, conds):
    name = f"t{next(_tables)}"
    embedded_db.create_table(name, {"f": {"max_versions": 2}}, columns=COLUMNS)
    try:
        t = embedded_db.table(name)
        _apply(t, ops)
        assert fastscan.supports_fast_scan(embedded_db.store, name)
        for cond in conds:
            assert "FULL TABLE SCAN" in t.explain(cond, full_scan=True)
            assert list(t.where(cond, full_scan=True)) == _brute(t, cond), cond
            cols = [b"f:b", b"f:x"]
            assert list(t.where(cond, columns=cols, full_scan=True)) == _brute(t, cond, cols), \
                cond
    finally:
        embedded_db.delete_table(name, disable=True)


def test_needles_are_necessary_never_sufficient():
    """A needle only rules rows out: a row holding the bytes elsewhere still gets the exact
    test, and a row holding the value in a non-canonical form keeps its needle."""
    from hibase.codec import parse_type
    from hibase.query.ast import Column, Compare
    types = {b"f:a": parse_type("int"), b"f:c": parse_type("double")}
    needles, keep = scan.compile_conjuncts([(Compare(Column(b"f:a"), "=", -30),)], types)
    assert needles == [[[b"30"]]]
    assert keep(None, {b"f:a": b"-030"}) and not keep(None, {b"f:a": b"30", b"f:b": b"-30"})
    # doubles have many text forms: no needle, every row is tested
    needles, _ = scan.compile_conjuncts([(Compare(Column(b"f:c"), "=", 3.0),)], types)
    assert needles == [[]] and fastscan.prefilter(needles) is None


def test_parallel_scan_in_worker_processes(embedded_db, monkeypatch):
    """A table over PARALLEL_MIN_BYTES is scanned by worker processes, one share of the
    regions each, and comes back in key order, equal to the scan in one process."""
    db = embedded_db
    db.create_table("big", {"f": {}}, columns=COLUMNS)
    t = db.table("big")
    with t.batch() as b:
        for i in range(3000):
            b.put(b"k%05d" % i, {b"f:a": str(i % 7).encode(), b"f:b": b"v%d" % (i % 11),
                                  b"f:x": b"x" * (i % 3)})
    t.delete(b"k00010")
    t.put(b"k00011", {b"f:a": b"5"})               # a second segment for one row
    for at in (b"k01000", b"k02000"):
        db.split("big", at)
    cond = "f.a = 5 AND f.b <> 'v3' OR f.x LIKE 'xx%' AND f.a < 2"
    expected = _brute(t, cond, [b"f:b"])
    monkeypatch.setattr(scan, "PARALLEL_MIN_BYTES", 1 << 40)
    assert list(t.where(cond, columns=[b"f:b"])) == expected
    started = []
    real_popen = scan.subprocess.Popen
    monkeypatch.setattr(scan.subprocess, "Popen",
                        lambda *a, **k: started.append(a) or real_popen(*a, **k))
    monkeypatch.setattr(scan, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(scan.os, "cpu_count", lambda: 3)
    got = list(t.where(cond, columns=[b"f:b"]))
    assert len(started) == 2                       # three shares: this process and two workers
    assert got == expected and len(got) > 300
    # a LIMIT streams from this process alone
    started.clear()
    assert list(t.where(cond, columns=[b"f:b"], limit=5)) == expected[:5]
    assert started == []


def test_a_failing_worker_has_its_share_scanned_here(embedded_db, monkeypatch):
    import pytest
    db = embedded_db
    db.create_table("big", {"f": {}}, columns=COLUMNS)
    t = db.table("big")
    with t.batch() as b:
        for i in range(500):
            b.put(b"k%04d" % i, {b"f:a": str(i % 7).encode()})
    db.split("big", b"k0250")
    expected = _brute(t, "f.a = 3")
    monkeypatch.setattr(scan, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(scan.sys, "executable", "/bin/false")  # every worker exits 1
    with pytest.warns(RuntimeWarning, match="scan worker failed"):
        assert list(t.where("f.a = 3")) == expected


def test_undeclared_columns_compare_raw_bytes(embedded_db):
    """A table that declares no column: its cells compare as raw bytes on the fast path
    (needles from string literals), as Table.row would show them."""
    embedded_db.create_table("raw", {"f": {}})
    t = embedded_db.table("raw")
    for i, v in enumerate([b"", b"a", b"3", b"ab", b"\x00\x01", b"abc"]):
        t.put(b"r%d" % i, {b"f:x": v, b"f:y": b"%d" % i})
    assert fastscan.supports_fast_scan(embedded_db.store, "raw")
    for cond in ["f.x = 'a'", "f.x LIKE 'a%'", "f.x IN ('3', 'ab')", "f.x > 'a'",
                 "NOT (f.x = 'ab') AND f.y <> '0'"]:
        assert list(t.where(cond, full_scan=True)) == _brute(t, cond), cond
