"""Statements and messages every SQL interface shares (db.sql, DB-API, `hibase query`):
SHOW TABLES and DESCRIBE as statements, TRUNCATE refused with what to write instead, DELETE
counted as deleted, subqueries where only literals go named as such (not "expected a
literal"), and no sqlglot fallback warning on the way."""

from __future__ import annotations

import logging

import pytest

import hibase
from hibase import dbapi, errors
from hibase.query.statements import Describe, ShowTables, parse_statement
from hibase.sql import describe_rows

from click.testing import CliRunner

from hibase.cli import cli


@pytest.fixture
def db(tmp_path):
    db = hibase.connect(str(tmp_path / "s"), cache=None)
    db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.a INTEGER, f.b VARCHAR)")
    db.sql("UPSERT INTO t VALUES ('x', 1, 'one'), ('y', 2, 'two')")
    db.create_table("raw", {"r": {}})
    yield db
    db.close()


def test_show_tables_and_describe_are_statements(db, caplog):
    with caplog.at_level(logging.WARNING):
        assert sorted(db.sql("SHOW TABLES")) == [("raw",), ("t",)]
        assert db.sql("show tables;") == db.sql("SHOW TABLES")
        want = [("k", "VARCHAR", "rowkey"), ("f.a", "INTEGER", ""), ("f.b", "VARCHAR", "")]
        assert db.sql("DESCRIBE t") == want
        assert db.sql("DESC TABLE t;") == want
        assert db.sql("DESCRIBE raw") == [("ROWKEY", "VARBINARY", "rowkey"),
                                          ("r.*", "VARBINARY", "undeclared")]
    assert not [r for r in caplog.records if "Falling back" in r.getMessage()]
    assert isinstance(parse_statement("SHOW TABLES"), ShowTables)
    assert parse_statement("-- what is there\nDESCRIBE t") == Describe("t")
    assert describe_rows(db.table("t").schema) == db.sql("DESCRIBE t")
    with pytest.raises(errors.TableNotFound, match="no table 'nosuch'"):
        db.sql("DESCRIBE nosuch")
    with pytest.raises(errors.QuerySyntaxError, match="expected TABLES"):
        db.sql("SHOW INDEXES")
    cur = dbapi.connect(db).cursor()
    cur.execute("DESCRIBE t")
    assert [d[0] for d in cur.description] == ["COLUMN_NAME", "TYPE_NAME", "NOTE"]
    assert cur.fetchall()[0] == ("k", "VARCHAR", "rowkey")


def test_truncate_is_refused_with_what_to_write(db):
    for sql in ("TRUNCATE TABLE t", "truncate t"):
        with pytest.raises(errors.QueryPlanError) as ei:
            db.sql(sql)
        message = str(ei.value)
        assert "TRUNCATE is not supported" in message and "DELETE FROM t" in message
        assert "only SELECT" not in message
    assert len(db.sql("SELECT * FROM t")) == 2  # nothing deleted


def test_delete_counts_rows_deleted(db):
    result = db.execute("DELETE FROM t WHERE f.a = 1")
    assert (result.kind, result.rowcount, result.verb) == ("dml", 1, "deleted")
    assert db.execute("UPSERT INTO t VALUES ('z', 3, 'three')").verb == "written"


def test_subqueries_where_literals_go_say_so(db):
    t = db.table("t")
    for cond in ("f.a = (SELECT MAX(f.a) FROM t)", "f.a IN (SELECT f.a FROM t)",
                 "EXISTS (SELECT 1 FROM t)"):
        with pytest.raises(errors.NeedsEngine) as ei:
            list(t.where(cond))
        assert "expected a literal" not in str(ei.value)
        assert "subqueries need the SQL engine" in str(ei.value)
    # the whole statement runs on the engine
    assert db.sql("SELECT k FROM t WHERE f.a = (SELECT MAX(f.a) FROM t)") == [("y",)]
    with pytest.raises(errors.QuerySyntaxError) as ei:
        db.sql("UPSERT INTO t VALUES ('z', (SELECT MAX(f.a) FROM t), 'q')")
    assert "subquery is not supported in VALUES" in str(ei.value)
    assert "UPSERT INTO t (cols) SELECT" in str(ei.value)


def test_hibase_query_show_describe_truncate_delete(db, tmp_path):
    db.close()
    store = str(tmp_path / "s")
    run = CliRunner().invoke
    r = run(cli, ["query", store, "SHOW TABLES"])
    assert r.exit_code == 0, r.output
    assert r.stdout.split() == ["TABLE_NAME", "----------", "raw", "t"]
    r = run(cli, ["query", store, "DESCRIBE t", "--csv"])
    assert r.stdout.splitlines() == ["COLUMN_NAME,TYPE_NAME,NOTE", "k,VARCHAR,rowkey",
                                     "f.a,INTEGER,", "f.b,VARCHAR,"]
    r = run(cli, ["query", store, "TRUNCATE TABLE t"])
    assert r.exit_code == 1 and "DELETE FROM t" in r.stderr
    assert "only SELECT" not in r.stderr and "Falling back" not in r.stderr
    r = run(cli, ["query", store, "DELETE FROM t WHERE k = 'x'"])
    assert r.exit_code == 0 and "1 row(s) deleted" in r.stderr, r.stderr
