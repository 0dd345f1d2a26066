"""hibase.dbapi (PEP 249): module globals, cursors, typed rows in select-list order, type
codes, exceptions mapped from hibase's tree; cursors give the rows sqlite3's cursors give on
the same data and statements."""

from __future__ import annotations

import itertools
import os
import sqlite3

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import hibase.dbapi as dbapi
from hibase.errors import QuerySyntaxError

DDL = "CREATE TABLE {t} (k VARCHAR PRIMARY KEY, f.a INTEGER, f.b VARCHAR, g.c DOUBLE)"
LITE_DDL = "CREATE TABLE {t} (k TEXT PRIMARY KEY, a INTEGER, b TEXT, c REAL)"


@pytest.fixture
def conn(db):
    c = dbapi.connect(db)
    yield c
    if not c.closed:  # a second close() raises (PEP 249 compliance suite)
        c.close()


def test_module_globals():
    assert dbapi.apilevel == "2.0" and dbapi.threadsafety == 1 and dbapi.paramstyle == "qmark"
    for name in ("Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
                 "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
                 "NotSupportedError"):
        assert issubclass(getattr(dbapi, name), Exception)
    assert issubclass(dbapi.ProgrammingError, dbapi.DatabaseError)
    assert issubclass(dbapi.DatabaseError, dbapi.Error)
    assert "INTEGER" == dbapi.NUMBER and "VARCHAR" == dbapi.STRING
    assert "VARBINARY" == dbapi.BINARY and "ROWKEY" == dbapi.ROWID and "VARCHAR" != dbapi.NUMBER


def test_cursor_round_trip(conn):
    cur = conn.cursor()
    cur.execute(DDL.format(t="t"))
    assert cur.description is None and cur.rowcount == -1
    cur.executemany("UPSERT INTO t (k, f.a, f.b, g.c) VALUES (?, ?, ?, ?)",
                    [("x", 1, "one", 0.5), ("y", 2, None, None), ("z", 3, "three", 1.5)])
    assert cur.rowcount == 3
    conn.commit()
    conn.db.table("t").put(b"w", {b"f:raw": b"\x00bytes"})  # an undeclared column
    cur.execute("SELECT * FROM t")
    assert [d[0] for d in cur.description] == ["k", "f.a", "f.b", "g.c", "f.raw"]
    assert [d[1] for d in cur.description] == ["ROWKEY", "INTEGER", "VARCHAR", "DOUBLE",
                                                "VARBINARY"]
    assert len(cur.description[0]) == 7 and cur.rowcount == 4
    assert cur.fetchone() == ("w", None, None, None, b"\x00bytes")
    assert cur.fetchmany(2) == [("x", 1, "one", 0.5, None), ("y", 2, None, None, None)]
    assert list(cur) == [("z", 3, "three", 1.5, None)]
    assert cur.fetchone() is None and cur.fetchall() == []
    cur.execute("SELECT g.c, k FROM t WHERE f.a >= :lo", {"lo": 2})
    assert cur.fetchall() == [(None, "y"), (1.5, "z")]
    cur.execute("SELECT f.b, COUNT(*), SUM(f.a) FROM t WHERE f.a > 0 GROUP BY f.b")
    assert [d[1] for d in cur.description] == ["VARCHAR", "NUMBER", "NUMBER"]
    assert sorted(cur.fetchall(), key=repr) == sorted(
        [(None, 1, 2), ("one", 1, 1), ("three", 1, 3)], key=repr)
    cur.execute("DELETE FROM t WHERE f.a < ?", (3,))
    assert cur.rowcount == 2 and cur.description is None
    cur.execute("EXPLAIN SELECT * FROM t WHERE k = 'z'")
    assert cur.description[0][0] == "PLAN" and cur.fetchone()[0].startswith("PLAN")
    cur.arraysize = 5
    cur.execute("SELECT k FROM t")
    assert cur.fetchmany() == [("w",), ("z",)]
    cur.close()
    with pytest.raises(dbapi.ProgrammingError):
        cur.execute("SELECT k FROM t")


def test_exceptions_map_from_hibase(conn):
    cur = conn.cursor()
    cur.execute(DDL.format(t="t"))
    sql = "SELECT * FROM t WHERE f.a = = 1"
    with pytest.raises(dbapi.ProgrammingError) as e:
        cur.execute(sql)
    assert isinstance(e.value, QuerySyntaxError) and e.value.position == sql.index("= 1")
    with pytest.raises(dbapi.ProgrammingError):
        cur.execute("SELECT * FROM nosuch")
    with pytest.raises(dbapi.ProgrammingError):
        cur.execute("SELECT * FROM t WHERE f.a = ?", ())  # wrong number of parameters
    with pytest.raises(dbapi.DataError):
        cur.execute("UPSERT INTO t (k, f.a) VALUES ('x', 'not a number')")
    with pytest.raises(dbapi.IntegrityError):
        cur.execute(DDL.format(t="t"))
    with pytest.raises(dbapi.NotSupportedError):
        conn.rollback()
    with pytest.raises(dbapi.DatabaseError):
        cur.execute("DROP TABLE nosuch")


def test_connect_by_path(tmp_path):
    with dbapi.connect(str(tmp_path / "s")) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (k VARCHAR PRIMARY KEY, v BIGINT)")
        cur.execute("UPSERT INTO t VALUES ('a', 7)")
        cur.execute("SELECT * FROM t")
        assert cur.fetchall() == [("a", 7)]
    assert conn.closed
    with pytest.raises(dbapi.ProgrammingError):
        conn.cursor()
    with pytest.raises(dbapi.OperationalError):
        dbapi.connect("nosuch://x")


# -- the same answers as sqlite3 ------------------------------------------------------------------

ROW = st.tuples(st.sampled_from(["k0", "k1", "k2", "k3", "k4", "k5", "k6"]),
                st.one_of(st.none(), st.integers(-3, 3)),
                st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b"])),
                st.one_of(st.none(), st.sampled_from([-1.5, 0.0, 0.5, 2.0])))
QUERIES = [
    ("SELECT k, f.a, f.b, g.c FROM {t} WHERE f.a >= ?", "SELECT k, a, b, c FROM {t} WHERE a >= ?",
     st.tuples(st.integers(-3, 3))),
    ("SELECT g.c, k FROM {t} WHERE f.b = ? OR g.c < ?", "SELECT c, k FROM {t} WHERE b = ? OR c < ?",
     st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([0.0, 1.0]))),
    ("SELECT * FROM {t} WHERE k >= ?", "SELECT k, a, b, c FROM {t} WHERE k >= ?",
     st.tuples(st.sampled_from(["k0", "k3"]))),
    ("SELECT f.b, COUNT(*), SUM(f.a), MIN(g.c) FROM {t} GROUP BY f.b",
     "SELECT b, COUNT(*), SUM(a), MIN(c) FROM {t} GROUP BY b", st.just(())),
    ("SELECT COUNT(f.a), MAX(f.b) FROM {t} WHERE g.c IS NOT NULL",
     "SELECT COUNT(a), MAX(b) FROM {t} WHERE c IS NOT NULL", st.just(())),
]
_tables = itertools.count()


@settings(max_examples=int(os.environ.get("HIBASE_PROPERTY_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(ROW, max_size=12, unique_by=lambda r: r[0]), data=st.data(),
       indexed=st.booleans())
def test_cursor_rows_equal_sqlite(conn, rows, data, indexed):
    rows = [r for r in rows if r[1:] != (None, None, None)]  # HBase has no empty rows
    t = f"t{next(_tables)}"
    cur = conn.cursor()
    lite = sqlite3.connect(":memory:").cursor()
    cur.execute(DDL.format(t=t))
    lite.execute(LITE_DDL.format(t=t))
    if indexed:
        cur.execute(f"CREATE INDEX {t}_a ON {t} (f.a)")
        cur.execute(f"CREATE INDEX {t}_b ON {t} (f.b) INCLUDE (g.c)")
    try:
        if rows:
            cur.executemany(f"UPSERT INTO {t} (k, f.a, f.b, g.c) VALUES (?, ?, ?, ?)", rows)
            lite.executemany(f"INSERT INTO {t} VALUES (?, ?, ?, ?)", rows)
        for h, s, params in QUERIES:
            p = data.draw(params)
            cur.execute(h.format(t=t), p)
            lite.execute(s.format(t=t), p)
            got, want = cur.fetchall(), lite.fetchall()
            assert sorted(got, key=repr) == sorted(want, key=repr), (h, p)
            assert len(cur.description) == len(lite.description)
    finally:
        cur.execute(f"DROP TABLE {t}")


def test_pep249_rules_and_date_parameters(conn):
    """Fetching with no result set, a closed cursor, a second close() raise Error; PEP 249's
    date constructors are datetime values, written as ISO 8601 text (no date types yet)."""
    import datetime
    import time

    cur = conn.cursor()
    with pytest.raises(dbapi.ProgrammingError, match="execute a statement first"):
        cur.fetchone()
    cur.execute("CREATE TABLE d (k VARCHAR PRIMARY KEY, v VARCHAR)")
    with pytest.raises(dbapi.Error, match="no result set"):
        cur.fetchall()
    assert dbapi.Date(2002, 12, 25) == datetime.date(2002, 12, 25)
    ticks = time.mktime((2002, 12, 25, 13, 45, 30, 0, 0, -1))
    assert dbapi.TimestampFromTicks(ticks) == dbapi.Timestamp(2002, 12, 25, 13, 45, 30)
    assert dbapi.DateFromTicks(ticks) == dbapi.Date(2002, 12, 25)
    assert dbapi.TimeFromTicks(ticks) == dbapi.Time(13, 45, 30)
    cur.executemany("INSERT INTO d VALUES (?, ?)", [
        ("date", dbapi.Date(2002, 12, 25)), ("time", dbapi.Time(13, 45, 30)),
        ("ts", dbapi.Timestamp(2002, 12, 25, 13, 45, 30))])
    cur.execute("SELECT k FROM d WHERE v = :v", {"v": dbapi.Date(2002, 12, 25)})
    assert cur.fetchall() == [("date",)]
    cur.execute("SELECT * FROM d")
    assert cur.fetchall() == [("date", "2002-12-25"), ("time", "13:45:30"),
                              ("ts", "2002-12-25 13:45:30")]
    assert "DATE" == dbapi.DATETIME and "TIMESTAMP" == dbapi.DATETIME
    cur.close()
    with pytest.raises(dbapi.Error):
        cur.fetchall()
    conn.close()
    with pytest.raises(dbapi.Error):
        conn.close()
