"""Partial indexes (issue 43): `create_index(..., where=...)` and `CREATE INDEX ... WHERE`.

A row has an entry only while the predicate is TRUE on it; writes that move a row in or out of
the predicate add or remove its entries (client upkeep, and on [hbase] the coprocessor's);
a query uses the index only when its condition implies the predicate, and answers equal a
brute-force evaluation and the same query on an unindexed copy of the table."""

from __future__ import annotations

import itertools
import os

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from hibase import errors
from strategies import COMPARISONS, atoms
from strategies import conditions as conditions_of
from test_query_property import apply_ops, brute_force

COLUMNS = {"f:a": "int", "f:b": "string", "f:s": "string", "g:d": "long"}
PARTIALS = [  # name, columns, covering, predicate
    ("pa", ["f:a"], ["f:b"], "f.s = 'open'"),
    ("pb", ["f:b", "f:a"], [], "f.a > 0 AND f.s <> 'gone'"),
    ("pd", ["g:d"], ["f:a"], "f.s IN ('open', 'new') OR f.a IS NULL"),
]
VALUES = {
    b"f:a": st.integers(-3, 3).map(lambda v: str(v).encode()),
    b"f:b": st.sampled_from([b"", b"a", b"ab", b"b"]),
    b"f:s": st.sampled_from([b"open", b"new", b"gone", b"closed"]),
    b"g:d": st.integers(-2, 2).map(lambda v: str(v).encode()),
}
ROWS = [b"r%d" % i for i in range(8)]
WRITE_OPS = (
    st.tuples(st.just("put"), st.sampled_from(ROWS), st.fixed_dictionaries({}, optional=VALUES)),
    st.tuples(st.just("delete"), st.sampled_from(ROWS),
              st.one_of(st.none(), st.lists(st.sampled_from(
                  [b"f:a", b"f:s", b"g:d", b"g"]), min_size=1, max_size=2))),
    st.tuples(st.just("batch"), st.sampled_from(ROWS), st.fixed_dictionaries({}, optional=VALUES)),
)
LITERALS = {
    "f.a": st.integers(-4, 4).map(str),
    "f.b": st.sampled_from(["''", "'a'", "'ab'", "'b'"]),
    "f.s": st.sampled_from(["'open'", "'new'", "'gone'", "'x'"]),
    "g.d": st.integers(-3, 3).map(str),
}
conditions = conditions_of(atoms(
    LITERALS, kinds=["cmp", "eq", "between", "in", "null", "like"], comparisons=COMPARISONS,
    like={"f.b": ["", "a", "b"]}, not_like=False), max_leaves=3)
# conjoined with a random condition: some imply a predicate (the index may answer), some not
GUARDS = ["", "f.s = 'open' AND ", "f.a > 1 AND f.s = 'new' AND ", "f.a = 2 AND ",
          "f.s IN ('open') AND ", "f.a IS NULL AND ", "f.s = 'gone' AND "]


_tables = itertools.count()


@pytest.mark.hbase_examples(3)
@settings(max_examples=int(os.environ.get("HIBASE_PROPERTY_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(*WRITE_OPS), min_size=1, max_size=40),
       conds=st.lists(st.tuples(st.sampled_from(GUARDS), conditions), min_size=1, max_size=4),
       early=st.booleans())
def test_partial_indexes_answer_as_the_model(db, ops, conds, early):
    """Random writes (rows moving in and out of each predicate), then queries: each answer,
    row list and COUNT(*), equals the brute-force model's and the unindexed copy's, and
    every partial index verifies. `early`: indexes made before the writes (upkeep) or after
    (the batch build)."""
    n = next(_tables)
    name, plain = f"p{n}", f"q{n}"
    for t in (name, plain):
        db.create_table(t, {"f": {"max_versions": 2}, "g": {}}, columns=COLUMNS)
    try:
        table, copy = db.table(name), db.table(plain)
        if early:
            for iname, cols, cover, where in PARTIALS:
                db.create_index(name, iname, cols, covering=cover, where=where)
        apply_ops(table, ops)
        apply_ops(copy, ops)
        if not early:
            for iname, cols, cover, where in PARTIALS:
                db.create_index(name, iname, cols, covering=cover, where=where)
        types = table.schema.columns
        for guard, cond in conds:
            q = guard + f"({cond})"
            expected = brute_force(copy, q, types)
            got = sorted(row for row, _ in table.where(q))
            assert got == expected, (q, table.explain(q))
            assert sorted(row for row, _ in copy.where(q)) == expected, q
            got_cov = sorted(r for r, _ in table.where(q, columns=[b"f:b"]))
            assert got_cov == expected, (q, table.explain(q, columns=[b"f:b"]))
            count = db.sql(f"SELECT COUNT(*) FROM {name} WHERE {q}")[0][0]
            assert count == len(expected), (q, db.explain(f"SELECT COUNT(*) FROM {name} "
                                                          f"WHERE {q}"))
        for iname, *_ in PARTIALS:
            assert db.verify_index(name, iname)["ok"], iname
    finally:
        db.delete_table(name, disable=True)
        db.delete_table(plain, disable=True)


@pytest.fixture
def tasks(db):
    db.create_table("tasks", {"f": {}}, columns={"f:status": "string", "f:owner": "string",
                                                 "f:prio": "int"})
    t = db.table("tasks")
    for i in range(12):
        t.put(b"t%02d" % i, {b"f:status": [b"open", b"done", b"new"][i % 3],
                             b"f:owner": b"ann" if i % 2 else b"bob",
                             b"f:prio": str(i % 4).encode()})
    db.create_index("tasks", "open_owner", ["f:owner"], covering=["f:prio"],
                    where="f.status = 'open'")
    return db


def test_explain_names_the_partial_index_only_when_implied(tasks):
    db = tasks
    plan = db.explain("SELECT ROWKEY FROM tasks WHERE f.status = 'open' AND f.owner = 'ann'")
    assert "INDEX open_owner (f:owner) PARTIAL WHERE f.status = 'open' POINT LOOKUP" in plan
    assert "COVERED" in plan  # the predicate's own atom is answered by every entry
    implied = db.explain("SELECT ROWKEY FROM tasks WHERE f.status IN ('open') "
                         "AND f.owner = 'bob'")
    assert "PARTIAL WHERE" in implied
    for not_implied in ("f.owner = 'ann'", "f.status = 'done' AND f.owner = 'ann'",
                        "(f.status = 'open' OR f.status = 'new') AND f.owner = 'ann'",
                        "f.status <> 'done' AND f.owner = 'ann'"):
        plan = db.explain(f"SELECT ROWKEY FROM tasks WHERE {not_implied}")
        assert "open_owner" not in plan and "FULL TABLE SCAN" in plan, not_implied
    # counts from the value table only for a condition that implies the predicate
    agg = db.explain("SELECT COUNT(*) FROM tasks WHERE f.status = 'open' AND f.owner = 'ann'")
    assert "VALUE TABLE of index open_owner" in agg
    assert db.sql("SELECT COUNT(*) FROM tasks WHERE f.status = 'open' AND f.owner = 'ann'") \
        == [(2,)]
    assert "open_owner" not in db.explain("SELECT COUNT(*) FROM tasks WHERE f.owner = 'ann'")
    assert db.sql("SELECT COUNT(*) FROM tasks WHERE f.owner = 'ann'") == [(6,)]
    assert "open_owner" not in db.explain("SELECT MIN(f.owner) FROM tasks")
    assert db.sql("SELECT MAX(f.owner), MIN(f.owner) FROM tasks") == [("bob", "ann")]


def test_writes_move_rows_in_and_out(tasks):
    db, t = tasks, tasks.table("tasks")
    q = "f.status = 'open' AND f.owner = 'ann'"
    assert sorted(r for r, _ in t.where(q)) == [b"t03", b"t09"]
    t.put(b"t03", {b"f:status": b"done"})      # out
    t.put(b"t01", {b"f:status": b"open"})      # in
    t.put(b"t05", {b"f:owner": b"ann", b"f:status": b"open"})
    t.delete(b"t09", [b"f:status"])            # out: NULL is not TRUE
    assert sorted(r for r, _ in t.where(q)) == [b"t01", b"t05"]
    assert db.sql("SELECT COUNT(*) FROM tasks WHERE f.status = 'open' AND f.owner = 'ann'") \
        == [(2,)]
    assert db.verify_index("tasks", "open_owner")["ok"]
    assert db.build_index("tasks", "open_owner")
    assert db.verify_index("tasks", "open_owner")["entries"] == 4  # t01, t05, t00?, ...


def test_sql_ddl_and_describe(db):
    db.sql("CREATE TABLE orders (id VARCHAR PRIMARY KEY, f.state VARCHAR, f.total BIGINT)")
    db.sql("UPSERT INTO orders VALUES ('o1', 'open', 10)")
    db.sql("UPSERT INTO orders VALUES ('o2', 'paid', 20)")
    db.sql("UPSERT INTO orders VALUES ('o3', 'open', 30)")
    db.sql("CREATE INDEX big_open ON orders (f.total) WHERE state = 'open' AND total > 15;")
    (spec,) = db.indexes("orders")
    assert spec["where"] == "state = 'open' AND total > 15" and not spec["null_list"]
    plan = db.explain("SELECT id FROM orders WHERE f.state = 'open' AND f.total >= 20")
    assert "PARTIAL WHERE state = 'open' AND total > 15" in plan
    assert db.sql("SELECT id FROM orders WHERE f.state = 'open' AND f.total >= 20") \
        == [("o3", {})] or [r[0] for r in db.sql(
            "SELECT id FROM orders WHERE f.state = 'open' AND f.total >= 20")] == ["o3"]
    # f.total > 10 does not imply total > 15: not used, still answered
    plan = db.explain("SELECT id FROM orders WHERE f.state = 'open' AND f.total > 10")
    assert "big_open" not in plan
    assert db.verify_index("orders", "big_open")["entries"] == 1


@pytest.mark.parametrize("where, words", [
    ("UPPER(f.owner) = 'ANN'", "not supported"),
    ("ROWKEY = 't01'", "ROWKEY"),
    ("f.prio = ?", "parameter"),
    ("f.nope = 1", "f.nope is not a declared column"),
    ("f.status", "compare"),
    ("f.status = ", "cannot index"),
])
def test_refused_predicates_say_why(embedded_db, where, words):
    db = embedded_db
    db.create_table("tasks", {"f": {}}, columns={"f:status": "string", "f:owner": "string",
                                                 "f:prio": "int"})
    with pytest.raises(errors.SchemaError) as e:
        db.create_index("tasks", "bad", ["f:owner"], where=where)
    assert words in str(e.value) and "Traceback" not in str(e.value)
    assert db.indexes("tasks") == []
    with pytest.raises(errors.SchemaError):
        db.create_index("tasks", "loc", ["f:owner"], local=True, where="f.prio = 1")


def test_other_programs_writes_move_rows_in_and_out_on_hbase(request):
    """[hbase] with hibase's coprocessor: plain happybase puts and deletes (another program)
    add and remove a row's partial-index entry, as the region server evaluates the predicate
    (IndexWhere.java) the way the clients do (index/partial.py)."""
    import happybase

    import hibase
    from servers import cluster_url, coprocessor_cluster

    cluster = coprocessor_cluster(request)
    prefix = f"pi{os.getpid()}x{next(_tables)}"
    db = hibase.connect(cluster_url(cluster, prefix))
    conn = happybase.Connection("127.0.0.1", cluster.thrift_port, timeout=60000)
    try:
        db.create_table("tasks", {"f": {}}, columns={"f:status": "string", "f:owner": "string",
                                                     "f:prio": "int"})
        db.create_index("tasks", "open_owner", ["f:owner"], covering=["f:prio"],
                        where="f.status = 'open' AND f.prio >= 2")
        assert all(s.server for s in db.indexer.specs("tasks"))
        raw = conn.table(f"{prefix}_tasks")
        q = "f.status = 'open' AND f.prio >= 2 AND f.owner = 'ann'"
        t = db.table("tasks")

        def found() -> list:
            assert "open_owner" in t.explain(q)
            return sorted(r for r, _ in t.where(q))

        raw.put(b"a", {b"f:status": b"open", b"f:owner": b"ann", b"f:prio": b"3"})   # in
        raw.put(b"b", {b"f:status": b"open", b"f:owner": b"ann", b"f:prio": b"1"})   # out
        raw.put(b"c", {b"f:status": b"done", b"f:owner": b"ann", b"f:prio": b"5"})   # out
        assert found() == [b"a"]
        raw.put(b"b", {b"f:prio": b"2"})        # moves in
        raw.put(b"a", {b"f:status": b"done"})   # moves out
        raw.put(b"c", {b"f:status": b"open"})   # moves in
        assert found() == [b"b", b"c"]
        raw.delete(b"c", columns=[b"f:prio"])   # NULL: out
        raw.put(b"b", {b"f:prio": b"x"})        # a cell that does not parse: NULL, out
        assert found() == []
        raw.put(b"b", {b"f:prio": b"9"})
        assert found() == [b"b"]
        assert db.sql("SELECT COUNT(*) FROM tasks WHERE " + q) == [(1,)]
        assert db.verify_index("tasks", "open_owner")["ok"]
    finally:
        conn.close()
        db.close()


def test_cli_index_create_where(tmp_path):
    """`hibase index create ... --where COND` makes a partial index; a refused condition is
    one error line."""
    from click.testing import CliRunner

    import hibase
    from hibase.cli import cli

    path = str(tmp_path / "s")
    db = hibase.connect(path)
    db.create_table("tasks", {"f": {}}, columns={"f:status": "string", "f:owner": "string"})
    db.table("tasks").put(b"t1", {b"f:status": b"open", b"f:owner": b"ann"})
    db.table("tasks").put(b"t2", {b"f:status": b"done", b"f:owner": b"ann"})
    db.close()
    got = CliRunner().invoke(cli, ["index", "create", path, "tasks", "open_owner", "-c",
                                   "f:owner", "--where", "f.status = 'open'", "--no-progress"])
    assert got.exit_code == 0, got.output
    assert "(f:owner; where f.status = 'open')" in got.stderr
    bad = CliRunner().invoke(cli, ["index", "create", path, "tasks", "bad", "-c", "f:owner",
                                   "--where", "LOWER(f.status) = 'open'", "--no-progress"])
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    assert bad.stderr.strip().count("\n") == 0 and "cannot index WHERE" in bad.stderr
    db = hibase.connect(path)
    try:
        assert [r for r, _ in db.table("tasks").where("f.status = 'open' AND f.owner = 'ann'")] \
            == [b"t1"]
        assert db.verify_index("tasks", "open_owner")["entries"] == 1
    finally:
        db.close()


def test_a_statement_shape_never_carries_a_partial_index_to_other_values(tasks):
    """The plan caches by statement shape (hints, point templates) keep no partial index for
    values that do not imply its predicate: one `?` statement, run with 'open' then 'done'."""
    db = tasks
    stmt = "SELECT ROWKEY FROM tasks WHERE f.status = ? AND f.owner = ?"
    t = db.table("tasks")
    for _ in range(4):  # past the point template's tries
        for status in ("open", "done", "new"):
            got = sorted(row for row, _ in db.sql(stmt, (status, "ann")))
            want = sorted(r for r, _ in t.where(f"f.status = '{status}' AND f.owner = 'ann'",
                                                full_scan=True))
            assert got == want, status
            rows = sorted(r for r, _ in t.where("f.status = ? AND f.owner = ?",
                                                params=[status, "ann"]))
            assert rows == want, status
    assert "PARTIAL" in db.explain(stmt, ("open", "ann"))
    assert "PARTIAL" not in db.explain(stmt, ("done", "ann"))


# the same predicates (as compiled) and rows as the coprocessor's JUnit test
# src/hibase/coprocessor/test/io/hibase/IndexWhereTest.java, whose answers must be these
JAVA_ROWS = [{}, {b"f:s": b"open", b"f:n": b"3"}, {b"f:s": b"open", b"f:n": b"2"},
             {b"f:s": b"open", b"f:n": b"x"}, {b"f:s": b"a", b"f:d": b"nan"},
             {b"f:s": b"abc", b"f:d": b"1.5"}, {b"f:n": b"9", b"f:d": b"-0.0"}, {b"f:s": b"b"}]
JAVA_VECTORS = [
    ("f.s = 'open' AND f.n > 2",
     '{"sql": "f.s = \'open\' AND f.n > 2", "cols": [["663a73", "string"], ["663a6e", "long"]], '
     '"where": ["and", [["cmp", "=", 0, "6f70656e0000"], ["cmp", ">", 1, '
     '"8000000000000002"]]]}',
     [False, True, False, False, False, False, False, False]),
    ("f.s IN ('a', 'b') OR f.d IS NULL",
     '{"sql": "f.s IN (\'a\', \'b\') OR f.d IS NULL", "cols": [["663a73", "string"], '
     '["663a64", "double"]], "where": ["or", [["in", 0, ["610000", "620000"]], '
     '["isnull", 1]]]}',
     [True, True, True, True, True, False, False, True]),
    ("NOT (f.s LIKE 'ab%')",
     '{"sql": "NOT (f.s LIKE \'ab%\')", "cols": [["663a73", "string"]], "where": '
     '["not", ["like", 0, "6162"]]}',
     [False, True, True, True, True, False, False, True]),
    ("f.d BETWEEN -1 AND 2",
     '{"sql": "f.d BETWEEN -1 AND 2", "cols": [["663a64", "double"]], "where": ["and", '
     '[["cmp", ">=", 0, "400fffffffffffff"], ["cmp", "<=", 0, "c000000000000000"]]]}',
     [False, False, False, False, False, True, True, False]),
]


def test_predicate_vectors_shared_with_java(embedded_db):
    """What create_index compiles and what index/partial.py answers on each row are the
    vectors IndexWhereTest.java checks the region server's evaluation against."""
    import json

    from hibase.index import partial

    embedded_db.create_table("t", {"f": {}}, columns={"f:s": "string", "f:n": "long",
                                                      "f:d": "double"})
    for sql, compiled, answers in JAVA_VECTORS:
        where = embedded_db._index_where("t", sql)
        assert where == json.loads(compiled), sql
        assert [partial.holds(where, row) for row in JAVA_ROWS] == answers, sql
