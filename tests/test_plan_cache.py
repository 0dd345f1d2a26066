"""The plan cache (issue 40): a statement is planned by its shape (query/prepare.py shape_of),
made once and used again for any values while the table's schema and index definitions are
the ones it was made under. Every answer here is checked against the full scan of the same
statement, and EXPLAIN against what the catalog holds at that moment: a DDL, a new or
dropped index, an index build finishing or an index leaving READY must never leave a stale
plan behind."""

from __future__ import annotations

import pytest

import hibase
from hibase.query import engine

ROWS = [(f"r{i:03d}", i % 7, f"b{i % 3}" if i % 5 else None, i * 10) for i in range(60)]


@pytest.fixture
def db(tmp_path):
    db = hibase.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.a INTEGER, f.b VARCHAR, f.c BIGINT)")
    db.execute_many("UPSERT INTO t (k, f.a, f.b, f.c) VALUES (?, ?, ?, ?)", ROWS)
    yield db
    db.close()


def same_as_scan(db, sql: str, params=None) -> list:
    got = db.sql(sql, params)
    want = db.sql(sql, params, full_scan=True)
    assert sorted(got) == sorted(want)
    return got


def shape(db, sql: str):
    return engine.shape_of(engine.parse_select(sql), db.store, db.indexer)


def test_a_repeated_shape_is_made_once_for_any_values(db):
    db.sql("CREATE INDEX by_a ON t (f.a)")
    q = "SELECT * FROM t WHERE f.a = ?"
    first = shape(db, q)
    for v in range(9):
        rows = same_as_scan(db, q, (v,))
        assert len(rows) == sum(1 for r in ROWS if r[1] == v)
        # the literal form is lifted to the same shape (connection.py), and Table.where too
        assert db.sql(f"SELECT * FROM t WHERE f.a = {v}") == rows
        assert sorted(k.decode() for k, _ in db.table("t").where(f"f.a = {v}")) == \
            sorted(k for k, _ in rows)  # bytes from the happybase API, str from SQL (VARCHAR)
    assert shape(db, q) is first
    assert first.hints  # the lone index remembered for the shape's constraints


def test_create_and_drop_index_replan(db):
    q = "SELECT * FROM t WHERE f.a = ?"
    assert "FULL TABLE SCAN" in db.explain(q, (3,))
    before = shape(db, q)
    same_as_scan(db, q, (3,))
    db.sql("CREATE INDEX by_a ON t (f.a)")
    assert shape(db, q) is not before
    assert "INDEX by_a" in db.explain(q, (3,))
    same_as_scan(db, q, (3,))
    db.sql("DROP INDEX by_a ON t")
    assert "FULL TABLE SCAN" in db.explain(q, (4,))
    assert len(same_as_scan(db, q, (4,))) == sum(1 for r in ROWS if r[1] == 4)


def test_an_index_is_used_once_its_build_finishes(db):
    q = "SELECT f.c FROM t WHERE f.a = ?"
    db.sql("CREATE INDEX by_a ON t (f.a) INCLUDE (f.c) ASYNC")
    assert "FULL TABLE SCAN" in db.explain(q, (2,))
    same_as_scan(db, q, (2,))
    db.build_index("t", "by_a")
    plan = db.explain(q, (2,))
    assert "INDEX by_a" in plan and "COVERED" in plan
    same_as_scan(db, q, (2,))


def test_an_index_leaving_ready_is_not_used(db):
    """What a catalog refresh does when another client starts a rebuild: the same spec
    object, its state changed (index/catalog.py refresh)."""
    q = "SELECT * FROM t WHERE f.a = ?"
    db.sql("CREATE INDEX by_a ON t (f.a)")
    assert "INDEX by_a" in db.explain(q, (1,))
    spec = db.indexer.catalog.get("t", "by_a")
    db.indexer.catalog.set_state(spec, "building")
    assert "FULL TABLE SCAN" in db.explain(q, (1,))
    same_as_scan(db, q, (1,))
    db.indexer.catalog.set_state(spec, "ready")
    assert "INDEX by_a" in db.explain(q, (1,))


def test_a_column_declared_later_is_read_by_its_type(db):
    q = "SELECT * FROM t WHERE f.a = ?"
    db.table("t").put(b"r000", {b"f:d": b"41"})
    assert db.sql(q, (0,))[0][1][b"f:d"] == b"41"  # undeclared: the stored bytes
    db.declare_columns("t", {"f:d": "long"})
    assert db.sql(q, (0,))[0][1][b"f:d"] == 41


@pytest.mark.parametrize("values", [
    [3, 2**40, -2**40, 0, 6],  # out of INTEGER's range: an empty answer, not the lookup's
])
def test_values_that_change_the_constraints_plan_afresh(db, values):
    """One shape, values whose constraints differ in structure (an out-of-range equal value
    is empty; a bound below the type's range bounds nothing): each answer is the scan's."""
    db.sql("CREATE INDEX by_a ON t (f.a)")
    db.sql("CREATE INDEX by_a_b ON t (f.a, f.b)")
    for q in ("SELECT * FROM t WHERE f.a = ?", "SELECT * FROM t WHERE f.a > ?",
              "SELECT * FROM t WHERE f.a = ? AND f.b = 'b1'",
              "SELECT * FROM t WHERE f.a > ? AND f.b = 'b1'"):
        for v in values:
            same_as_scan(db, q, (v,))
    assert "INDEX by_a_b" in db.explain("SELECT * FROM t WHERE f.a = ? AND f.b = 'b1'", (3,))


def test_covered_answer_picks_selected_values(db):
    db.sql("CREATE INDEX by_a_b ON t (f.a, f.b) INCLUDE (f.c)")
    for q in ("SELECT f.c FROM t WHERE f.a = ? AND f.b = 'b1'",
              "SELECT f.c, f.c FROM t WHERE f.a = ? AND f.b = 'b1'",
              "SELECT ROWKEY, f.c FROM t WHERE f.a = ? AND f.b = 'b1'"):
        assert "COVERED" in db.explain(q, (1,))
        for v in range(7):
            rows = same_as_scan(db, q, (v,))
            assert sorted(cells.get(b"f:c") for _, cells in rows) == sorted(
                r[3] for r in ROWS if r[1] == v and r[2] == "b1")
    # a covered column NULL in some rows: absent from those rows, as the scan has it
    db.sql("UPSERT INTO t (k, f.a, f.b, f.c) VALUES ('z1', 1, 'b1', NULL)")
    rows = same_as_scan(db, "SELECT f.c FROM t WHERE f.a = ? AND f.b = 'b1'", (1,))
    assert dict(rows)["z1"] == {}


def test_a_remembered_index_is_only_reused_for_the_same_constraints(db):
    """A shape's remembered index (plan.py _choose's hints) stands for constraints of one
    signature: a bound below INTEGER's range leaves f.b's index alone; a real bound on f.a
    brings by_a back into the choice, and its 9 rows beat f.b's 16 (EXPLAIN as if fresh)."""
    db.sql("CREATE INDEX by_a ON t (f.a)")
    db.sql("CREATE INDEX by_b ON t (f.b)")
    q = "SELECT * FROM t WHERE f.a > ? AND f.b = ?"
    assert "INDEX by_b" in db.explain(q, (-2**40, "b1"))
    same_as_scan(db, q, (-2**40, "b1"))
    assert "INDEX by_a" in db.explain(q, (5, "b1")).splitlines()[2]
    same_as_scan(db, q, (5, "b1"))


def test_values_equal_in_python_but_not_in_sql_typing_do_not_share_a_cached_condition(tmp_path):
    """1 == 1.0 == True in Python, so the typed-condition cache keyed by the bound tree gave
    `f.n = TRUE` on an INTEGER column the answer cached for `f.n = 1`, and `f.ok = 1` on a
    BOOLEAN column the one cached for TRUE, where on a fresh process each is refused: an
    answer must not depend on what ran before."""
    db = hibase.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.n INTEGER, f.ok BOOLEAN)")
    db.sql("UPSERT INTO t VALUES ('a', 1, TRUE)")
    assert db.execute("SELECT k FROM t WHERE f.n = ?", (1,)).rows == [("a",)]
    with pytest.raises(hibase.errors.ValueTypeError, match="INTEGER value TRUE"):
        db.sql("SELECT k FROM t WHERE f.n = ?", (True,))
    with pytest.raises(hibase.errors.ValueTypeError, match="INTEGER value TRUE"):
        db.sql("SELECT k FROM t WHERE f.n = TRUE")  # lifted into a parameter: the same
    assert db.execute("SELECT k FROM t WHERE f.ok = ?", (True,)).rows == [("a",)]
    with pytest.raises(hibase.errors.ValueTypeError, match="BOOLEAN value 1"):
        db.sql("SELECT k FROM t WHERE f.ok = ?", (1,))
    db.close()


# -- point templates (query/point.py): a lone point lookup planned once per shape ---------------

def _planned(monkeypatch) -> list:
    """A list that grows by one each time a statement is planned in full (plan_query)."""
    from hibase.query import prepare
    calls: list = []
    real = prepare.plan_query

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)
    monkeypatch.setattr(prepare, "plan_query", counting)
    return calls


def test_a_point_lookup_is_planned_once_for_any_values(db, monkeypatch):
    db.sql("CREATE INDEX by_a ON t (f.a)")
    db.sql("CREATE INDEX by_b_a ON t (f.b, f.a) INCLUDE (f.c)")
    planned = _planned(monkeypatch)
    q = "SELECT * FROM t WHERE f.a = ?"
    cov = "SELECT f.c FROM t WHERE f.b = 'b1' AND f.a = ?"
    for v in range(9):
        same_as_scan(db, q, (v,))
        # the literal form lifts to the same shape: the same template
        assert sorted(db.sql(f"SELECT * FROM t WHERE f.a = {v}")) == sorted(db.sql(q, (v,)))
        got = same_as_scan(db, cov, (v,))
        assert got == [(k, {b"f:c": c}) for k, a, b, c in ROWS if a == v and b == "b1"]
    # the first run of q and of cov only (full_scan=True never reaches plan_query)
    assert len(planned) == 2
    assert shape(db, q).point is not None and shape(db, cov).point is not None


def test_point_values_outside_the_proved_kind_plan_in_full(db, monkeypatch):
    db.sql("CREATE INDEX by_a ON t (f.a)")
    q = "SELECT * FROM t WHERE f.a = ?"
    db.sql(q, (1,))
    planned = _planned(monkeypatch)
    # a float equal to an int, a float that matches nothing, out of INTEGER's range
    for v, want in ((3.0, 3), (2.5, None), (2**40, None)):
        got = same_as_scan(db, q, (v,))
        assert sorted(k for k, _ in got) == sorted(k for k, a, _, _ in ROWS if a == want)
    assert len(planned) == 3  # each planned in full
    with pytest.raises(hibase.errors.ValueTypeError):  # refused, as by the full plan
        db.sql(q, (True,))
    with pytest.raises(hibase.errors.InvalidArgument):
        db.sql(q, (1, 2))
    with pytest.raises(hibase.errors.InvalidArgument):
        db.sql(q)


def test_a_point_template_follows_writes_and_index_changes(db):
    db.sql("CREATE INDEX by_a ON t (f.a)")
    q = "SELECT * FROM t WHERE f.a = ?"
    db.sql(q, (2,))
    db.sql("UPSERT INTO t (k, f.a) VALUES ('z1', 2)")
    assert "z1" in {k for k, _ in same_as_scan(db, q, (2,))}
    db.sql("DROP INDEX by_a ON t")
    assert "FULL TABLE SCAN" in db.explain(q, (2,))
    assert "z1" in {k for k, _ in same_as_scan(db, q, (2,))}
    db.sql("CREATE INDEX by_a2 ON t (f.a)")
    assert "by_a2" in db.explain(q, (5,))
    same_as_scan(db, q, (5,))


def test_a_covered_point_lookup_reads_no_data_row(db, monkeypatch):
    db.sql("CREATE INDEX by_b_a ON t (f.b, f.a) INCLUDE (f.c)")
    cov = "SELECT f.c FROM t WHERE f.b = 'b1' AND f.a = ?"
    db.sql(cov, (1,))
    store = db.store
    reads: list = []
    for name in ("read_latest_many", "read_latest", "scan_latest", "scan"):
        real = getattr(store, name)

        def counting(*a, _real=real, _name=name, **k):
            reads.append(_name)
            return _real(*a, **k)
        monkeypatch.setattr(store, name, counting)
    for v in range(7):
        got = db.sql(cov, (v,))
        assert got == [(k, {b"f:c": c}) for k, a, b, c in ROWS if a == v and b == "b1"]
    assert reads == []
    db.sql("SELECT * FROM t WHERE f.b = 'b1' AND f.a = ?", (1,))  # the counter counts
    assert reads == ["read_latest_many"]


def test_statements_made_per_call_do_not_evict_shapes(db):
    """Table.where builds its statement object per call: known by identity only for a while,
    they never push the shapes themselves (their templates) out of the cache."""
    db.sql("CREATE INDEX by_a ON t (f.a)")
    q = "SELECT * FROM t WHERE f.a = ?"
    db.sql(q, (1,))
    first = shape(db, q)
    t = db.table("t")
    for i in range(2100):
        list(t.where("f.a = ?", params=(i % 7,)))
    assert shape(db, q) is first and first.point is not None
