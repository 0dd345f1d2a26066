"""DML the way SQLite / DuckDB users write it (issue 38): INSERT (an existing rowkey is refused,
nothing written), INSERT ... SELECT, UPDATE ... SET ... WHERE (rows found by the query path,
indexes used and kept), UPSERT ... SELECT; answers compared with sqlite3 on the same data."""

from __future__ import annotations

import sqlite3

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import hibase.dbapi as dbapi
from hibase.errors import AlreadyExists, InvalidArgument, QuerySyntaxError, RowExists

DDL = "CREATE TABLE t (k VARCHAR PRIMARY KEY, f.a INTEGER, f.b VARCHAR, f.c DOUBLE)"
ROWS = [("x", 1, "one", 0.5), ("y", 2, "two", None), ("z", 3, None, 1.5)]


@pytest.fixture
def t(db):
    db.sql(DDL)
    db.sql("CREATE INDEX ia ON t (f.a) INCLUDE (f.b)")
    db.execute_many("UPSERT INTO t VALUES (?, ?, ?, ?)", ROWS)
    return db


def rows(db, where=""):
    return db.execute(f"SELECT k, f.a, f.b, f.c FROM t {where}").rows


def index_agrees(db):
    """Every row found through index ia is found by a full scan with the same values."""
    for (k, a, b, _) in rows(db):
        if a is not None:
            got = db.execute("SELECT k, f.b FROM t WHERE f.a = ?", (a,)).rows
            assert (k, b) in got
            assert got == db.execute("SELECT k, f.b FROM t WHERE f.a = ?", (a,),
                                     full_scan=True).rows


# -- INSERT ------------------------------------------------------------------------------------

def test_insert_values_adds_rows_and_refuses_existing_keys(t):
    assert t.sql("INSERT INTO t (k, f.a, f.b) VALUES ('w', 4, 'four'), ('v', 5, NULL)") == 2
    assert rows(t, "WHERE k < 'x'") == [("v", 5, None, None), ("w", 4, "four", None)]
    before = rows(t)
    with pytest.raises(RowExists, match="k = 'x' exists already"):
        t.sql("INSERT INTO t (k, f.a) VALUES ('u', 9), ('x', 9)")
    with pytest.raises(RowExists, match="twice"):
        t.sql("INSERT INTO t (k, f.a) VALUES ('u', 9), ('u', 8)")
    assert rows(t) == before  # nothing written, not even 'u'
    with pytest.raises(AlreadyExists):  # RowExists is an AlreadyExists, as TableExists is
        t.execute_many("INSERT INTO t (k, f.a) VALUES (?, ?)", [("u", 1), ("y", 2)])
    assert rows(t) == before
    index_agrees(t)


def test_insert_select_on_both_paths(t):
    t.sql("CREATE TABLE s (k VARCHAR PRIMARY KEY, f.a INTEGER, f.b VARCHAR, f.c DOUBLE)")
    assert t.sql("INSERT INTO s SELECT * FROM t WHERE f.a >= 2") == 2  # the lean path
    assert t.sql("INSERT INTO s (k, f.a, f.b) SELECT k || '2', f.a * 10, UPPER(f.b) FROM t "
                 "WHERE f.a < 3") == 2  # on the engine
    assert t.execute("SELECT * FROM s").rows == [
        ("x2", 10, "ONE", None), ("y", 2, "two", None), ("y2", 20, "TWO", None),
        ("z", 3, None, 1.5)]
    with pytest.raises(RowExists):
        t.sql("INSERT INTO s SELECT * FROM t")  # y and z are there
    with pytest.raises(RowExists):
        t.sql("INSERT INTO s (k, f.a) SELECT k, f.a + 0 FROM t")
    assert len(t.execute("SELECT * FROM s").rows) == 4
    text = t.explain("INSERT INTO s SELECT * FROM t WHERE f.a = 2")
    assert text.startswith("INSERT INTO s SELECT") and "INDEX ia" in text


def test_upsert_select_overwrites(t):
    assert t.sql("UPSERT INTO t (k, f.b) SELECT k, UPPER(f.b) FROM t WHERE f.b IS NOT NULL") == 2
    assert rows(t) == [("x", 1, "ONE", 0.5), ("y", 2, "TWO", None), ("z", 3, None, 1.5)]
    index_agrees(t)


def test_insert_into_a_table_without_primary_key_adds_each_time(db):
    db.sql("CREATE TABLE n (name VARCHAR(20), drink VARCHAR(30))")
    db.sql("INSERT INTO n VALUES ('a', NULL)")
    db.sql("INSERT INTO n VALUES ('a', NULL)")
    db.sql("INSERT INTO n (drink, name) SELECT drink, name FROM n")
    assert db.execute("SELECT * FROM n").rows == [("a", None)] * 4
    assert db.sql("UPDATE n SET drink = 'tea' WHERE name = 'a'") == 4
    assert db.execute("SELECT drink FROM n").rows == [("tea",)] * 4


def test_integrity_error_through_dbapi(t):
    cur = dbapi.connect(t).cursor()
    with pytest.raises(dbapi.IntegrityError) as e:
        cur.execute("INSERT INTO t (k, f.a) VALUES (?, ?)", ("x", 7))
    assert isinstance(e.value, RowExists)
    with pytest.raises(dbapi.IntegrityError):
        cur.executemany("INSERT INTO t (k, f.a) VALUES (?, ?)", [("q", 1), ("q", 2)])
    cur.execute("INSERT INTO t (k, f.a) VALUES (?, ?)", ("q", 7))
    assert cur.rowcount == 1
    with pytest.raises(dbapi.Error):
        cur.fetchall()  # an INSERT gives no rows


# -- UPDATE ------------------------------------------------------------------------------------

def test_update_literals_through_the_index(t):
    text = t.explain("UPDATE t SET f.b = 'deux' WHERE f.a = 2")
    assert text.startswith("UPDATE t") and "INDEX ia" in text and "ENGINE" not in text
    assert t.sql("UPDATE t SET f.b = 'deux' WHERE f.a = 2") == 1
    assert t.sql("UPDATE t SET f.a = 20, f.c = NULL WHERE k = 'y'") == 1
    assert rows(t) == [("x", 1, "one", 0.5), ("y", 20, "deux", None), ("z", 3, None, 1.5)]
    assert t.execute("SELECT k FROM t WHERE f.a = 2").rows == []  # the old index entry is gone
    assert t.sql("UPDATE t SET f.b = 'none' WHERE f.a = 99") == 0
    index_agrees(t)


def test_update_expressions_on_the_engine(t):
    text = t.explain("UPDATE t SET f.a = f.a * 10 + 1 WHERE f.a >= 2")
    assert "ENGINE duckdb" in text and "INDEX ia" in text  # the condition pushed down
    assert t.sql("UPDATE t SET f.a = f.a * 10 + 1, f.b = COALESCE(f.b, 'none') || '!' "
                 "WHERE f.a >= 2") == 2
    assert rows(t) == [("x", 1, "one", 0.5), ("y", 21, "two!", None), ("z", 31, "none!", 1.5)]
    assert t.sql("UPDATE t SET f.c = f.a / 2") == 3  # Phoenix's integer division
    assert [r[3] for r in rows(t)] == [0.0, 10.0, 15.0]
    assert t.sql("UPDATE t SET f.b = f.b WHERE UPPER(f.b) = 'ONE'") == 1  # WHERE on the engine
    index_agrees(t)


def test_update_parameters(t):
    assert t.sql("UPDATE t SET f.b = ?, f.a = ? WHERE k = ?", ("p", 5, "x")) == 1
    assert t.sql("UPDATE t SET f.b = :b WHERE f.a = :a", {"a": 2, "b": "q"}) == 1
    assert t.sql("UPDATE t SET f.a = f.a + ? WHERE k = ?", (100, "z")) == 1
    assert t.sql("UPDATE t SET f.c = :c WHERE f.a = :c", {"c": 5}) == 1
    assert rows(t) == [("x", 5, "p", 5.0), ("y", 2, "q", None), ("z", 103, None, 1.5)]
    with pytest.raises(InvalidArgument, match="unknown parameter"):
        t.sql("UPDATE t SET f.b = :b WHERE k = 'x'", {"b": "r", "other": 1})
    with pytest.raises(InvalidArgument):
        t.sql("UPDATE t SET f.b = ? WHERE k = ?", ("r",))
    index_agrees(t)


def test_update_refusals(t):
    with pytest.raises(QuerySyntaxError):
        t.sql("UPDATE t SET ROWKEY = 'a'")
    with pytest.raises(InvalidArgument, match="rowkey"):
        t.sql("UPDATE t SET k = 'a' WHERE f.a = 1")
    with pytest.raises(QuerySyntaxError, match="twice"):
        t.sql("UPDATE t SET f.a = 1, f.a = 2")
    with pytest.raises(QuerySyntaxError):
        t.sql("UPDATE t SET f.a = WHERE k = 'x'")
    with pytest.raises(dbapi.DataError):
        dbapi.connect(t).cursor().execute("UPDATE t SET f.a = 'not a number'")
    assert rows(t) == [r[:3] + (r[3],) for r in ROWS]


# -- the same answers as sqlite3 ---------------------------------------------------------------

LITE = "CREATE TABLE t (k TEXT PRIMARY KEY, a INTEGER, b TEXT, c REAL)"
KEYS = ["k0", "k1", "k2", "k3", "k4"]
# f.a is never NULL: a row whose columns are all NULL has no cells, and HBase's rows exist
# only through their cells (see test_a_row_of_nulls_is_not_stored)
ROW = st.tuples(st.sampled_from(KEYS), st.integers(-3, 3),
                st.one_of(st.none(), st.sampled_from(["", "a", "b"])),
                st.one_of(st.none(), st.sampled_from([-1.5, 0.5, 2.0])))
INT, KEY, TEXT = st.integers(-3, 3), st.sampled_from(KEYS), st.sampled_from(["", "a", "b"])
STATEMENTS = [
    ("UPDATE t SET f.a = f.a + 1 WHERE f.a >= ?", "UPDATE t SET a = a + 1 WHERE a >= ?", (INT,)),
    ("UPDATE t SET f.b = ? WHERE k = ?", "UPDATE t SET b = ? WHERE k = ?", (TEXT, KEY)),
    ("UPDATE t SET f.c = f.c * 2, f.b = NULL WHERE f.b = ?",
     "UPDATE t SET c = c * 2, b = NULL WHERE b = ?", (TEXT,)),
    ("UPDATE t SET f.a = ? WHERE f.b IS NULL", "UPDATE t SET a = ? WHERE b IS NULL", (INT,)),
    ("UPDATE t SET f.b = k || f.b, f.a = -f.a WHERE f.a < ? AND f.c IS NOT NULL",
     "UPDATE t SET b = k || b, a = -a WHERE a < ? AND c IS NOT NULL", (INT,)),
    ("INSERT INTO t (k, f.a) VALUES (?, ?)", "INSERT INTO t (k, a) VALUES (?, ?)", (KEY, INT)),
    ("INSERT INTO t (k, f.a, f.b) SELECT k || 'x', f.a, f.b FROM t WHERE f.a = ?",
     "INSERT INTO t (k, a, b) SELECT k || 'x', a, b FROM t WHERE a = ?", (INT,)),
    ("UPSERT INTO t (k, f.a) SELECT k, f.a * 2 FROM t WHERE f.b = ?",
     "INSERT OR REPLACE INTO t (k, a, b, c) SELECT k, a * 2, b, c FROM t WHERE b = ?", (TEXT,)),
    ("DELETE FROM t WHERE f.a < ?", "DELETE FROM t WHERE a < ?", (INT,)),
]


@st.composite
def step(draw):
    ours, theirs, kinds = draw(st.sampled_from(STATEMENTS))
    return ours, theirs, tuple(draw(k) for k in kinds)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.lists(ROW, max_size=5, unique_by=lambda r: r[0]),
       steps=st.lists(step(), max_size=4))
def test_dml_matches_sqlite(backend, seed, steps):
    db = backend.connect()
    try:
        db.sql("DROP TABLE IF EXISTS t")
        db.sql(DDL)
        db.sql("CREATE INDEX ia ON t (f.a)")
        lite = sqlite3.connect(":memory:")
        lite.execute(LITE)
        if seed:
            db.execute_many("INSERT INTO t VALUES (?, ?, ?, ?)", seed)
            lite.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", seed)
            lite.commit()
        for ours, theirs, params in steps:
            try:
                lite.execute(theirs, params)
            except sqlite3.IntegrityError:
                lite.rollback()
                before = rows(db)
                with pytest.raises(RowExists):
                    db.sql(ours, params)
                assert rows(db) == before
                continue
            lite.commit()
            db.sql(ours, params)
            assert rows(db) == lite.execute("SELECT k, a, b, c FROM t ORDER BY k").fetchall()
        index_agrees(db)
    finally:
        db.close()


def test_a_row_of_nulls_is_not_stored(t):
    """A row whose non-key values are all NULL has no cells, and an HBase row exists only
    through its cells (Phoenix writes an empty marker cell; hibase does not): it is not
    found, and a later INSERT of its rowkey is not refused."""
    assert t.sql("INSERT INTO t (k, f.a) VALUES ('n', NULL)") == 1
    assert rows(t, "WHERE k = 'n'") == []
    assert t.sql("INSERT INTO t (k, f.a) VALUES ('n', 1)") == 1
