"""The correctness bar: every query returns exactly what a brute-force evaluation over a full
scan returns, on tables with and without indexes, after random puts, deletes and batches;
on both backends, with the same number of examples."""

from __future__ import annotations

import itertools
import os

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from hibase.query.evaluate import matches
from hibase.query.normalize import typed
from hibase.query.parse import parse_condition
from strategies import COMPARISONS, atoms
from strategies import conditions as conditions_of

COLUMNS = {"f:a": "int", "f:b": "string", "f:c": "double", "g:d": "long"}
VALUES = {
    b"f:a": st.integers(-5, 5).map(lambda v: str(v).encode()),
    b"f:b": st.sampled_from(["", "a", "ab", "abc", "b", "ba", "z\u00e9", "a\x00"]).map(
        lambda v: v.encode()),
    b"f:c": st.sampled_from(["-1.5", "-0.0", "0", "0.5", "2", "1e3", "-inf", "inf"]).map(
        str.encode),
    b"g:d": st.integers(-3, 3).map(lambda v: str(v).encode()),
}
ROWS = [b"r%d" % i for i in range(12)] + [b"r\x00", b"r\xff"]

# literals per column, including ones of a neighbouring numeric type
LITERALS = {
    "f.a": st.one_of(st.integers(-6, 6).map(str), st.sampled_from(["2.5", "-0.5", "1e9"])),
    "f.b": st.sampled_from(["''", "'a'", "'ab'", "'b'", "'zz'"]),
    "f.c": st.sampled_from(["-1.5", "0", "0.5", "2", "1000", "-2", "3"]),
    "g.d": st.integers(-4, 4).map(str),
    "ROWKEY": st.sampled_from(["'r1'", "'r10'", "'r5'", "'s'"]),
}


conditions = conditions_of(atoms(
    LITERALS, kinds=["cmp", "between", "in", "null", "like"], comparisons=COMPARISONS,
    like={c: ["", "a", "ab", "r1", "b"] for c in ("f.b", "ROWKEY")}, not_like=False),
    max_leaves=5)

WRITE_OPS = (
    st.tuples(st.just("put"), st.sampled_from(ROWS),
              st.fixed_dictionaries({}, optional=VALUES)),
    st.tuples(st.just("delete"), st.sampled_from(ROWS),
              st.one_of(st.none(), st.lists(st.sampled_from(
                  [b"f:a", b"f:b", b"f:c", b"g:d", b"g"]), min_size=1, max_size=2))),
    st.tuples(st.just("batch"), st.sampled_from(ROWS),
              st.fixed_dictionaries({}, optional=VALUES)),
)
ops = st.lists(st.one_of(*WRITE_OPS), min_size=1, max_size=40)


def apply_ops(table, ops_list) -> None:
    for kind, row, arg in ops_list:
        if kind == "put":
            if arg:
                table.put(row, arg)
        elif kind == "delete":
            table.delete(row, arg)
        else:
            with table.batch() as b:
                if arg:
                    b.put(row, arg)
                b.delete(row, [b"g:d"])
                if arg:
                    b.put(row, {k: v for k, v in arg.items() if k.startswith(b"g")})


def brute_force(table, condition: str, types) -> list:
    node = typed(parse_condition(condition), types)
    return sorted(row for row, cells in table.scan() if matches(node, row, cells, types))


_tables = itertools.count()


@settings(max_examples=int(os.environ.get("HIBASE_PROPERTY_EXAMPLES", "80")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=ops, conds=st.lists(conditions, min_size=1, max_size=4),
       indexed=st.booleans(), method=st.sampled_from(["auto", "scan", "walk"]))
def test_queries_equal_brute_force(db, ops, conds, indexed, method):
    """One store (and on thrift one gateway) for all examples: a fresh table per example,
    dropped after it, so no example sees another's rows, indexes or cached sets."""
    name = f"t{next(_tables)}"
    db.create_table(name, {"f": {"max_versions": 2}, "g": {}}, columns=COLUMNS)
    try:
        table = db.table(name)
        if indexed:
            db.create_index(name, "ia", ["f:a"], covering=["f:b"])
            db.create_index(name, "ibc", ["f:b", "f:c"])
            db.create_index(name, "id", ["g:d"], covering=["f:a", "f:c"])
        apply_ops(table, ops)
        types = table.schema.columns
        for cond in conds:
            expected = brute_force(table, cond, types)
            got = [row for row, _ in table.where(cond, range_method=method)]
            assert sorted(got) == expected, (cond, table.explain(cond))
            assert len(got) == len(set(got)), cond
            # covered projections return the same rows as fetched ones
            got_cov = sorted(r for r, _ in table.where(cond, columns=[b"f:b"],
                                                        range_method=method))
            assert got_cov == expected, (cond, table.explain(cond, columns=[b"f:b"]))
        if indexed:
            for index in ("ia", "ibc", "id"):
                assert db.verify_index(name, index)["ok"]
    finally:
        db.delete_table(name, disable=True)


def test_limit_and_projection(db):
    db.create_table("t", {"f": {}}, columns={"f:a": "int"})
    t = db.table("t")
    for i in range(50):
        t.put(b"k%02d" % i, {b"f:a": str(i % 5).encode(), b"f:x": b"x%d" % i})
    db.create_index("t", "ia", ["f:a"], covering=["f:x"])
    rows = db.sql("SELECT f.x FROM t WHERE f.a = 3 LIMIT 4")
    assert len(rows) == 4
    assert all(set(data) == {b"f:x"} for _, data in rows)
    assert all(t.row(k)[b"f:a"] == b"3" for k, _ in rows)
    plan = db.explain("SELECT f.x FROM t WHERE f.a = 3")
    assert "INDEX ia" in plan and "COVERED" in plan
    assert "FULL TABLE SCAN" in db.explain("SELECT * FROM t WHERE f.x = 'x1'")
