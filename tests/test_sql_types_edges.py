"""SQL type edges that gave wrong answers or lost data silently (issue 36), each compared with
what sqlite3 / Phoenix do: a DOUBLE literal past the double range, a whole float for an
integer column, and the declared lengths of CHAR(n) and VARCHAR(n)."""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys

import pytest

from hibase import codec
from hibase.errors import HibaseError, QuerySyntaxError, SchemaError, ValueTypeError
from hibase.query.statements import parse_statement
from hibase.store.schema import TableSchema


def keys(rows) -> list:
    return sorted(r[0] for r in rows)


# -- DOUBLE / FLOAT out of range -----------------------------------------------------------------

def test_a_double_literal_past_the_double_range_is_refused_not_stored_as_inf(db):
    """1e400 has no DOUBLE value (Phoenix has no literal for infinity): refused with its
    position, nothing written, as FLOAT refuses 1e39; before, DOUBLE stored inf silently."""
    db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.d DOUBLE, f.r FLOAT)")
    for sql in ("UPSERT INTO t (k, f.d) VALUES ('x1', 1), ('x2', 1e400)",
                "UPSERT INTO t (k, f.d) VALUES ('x2', -1e400)",
                "UPSERT INTO t (k, f.r) VALUES ('x2', 1e400)"):
        with pytest.raises(QuerySyntaxError, match="out of DOUBLE range") as e:
            db.sql(sql)
        assert e.value.position == sql.index("1e400")
    with pytest.raises(ValueTypeError, match="out of float32 range"):
        db.sql("UPSERT INTO t (k, f.r) VALUES ('x3', 1e39)")
    assert db.sql("SELECT * FROM t") == []
    # the largest finite double is a value; an explicit infinity passed as a parameter is
    # kept, as an "Infinity" cell written by Java reads (DOUBLE and FLOAT alike)
    db.sql("UPSERT INTO t (k, f.d) VALUES ('max', 1.7976931348623157e308)")
    db.sql("UPSERT INTO t (k, f.d, f.r) VALUES (?, ?, ?)", ("inf", math.inf, -math.inf))
    got = dict(db.sql("SELECT k, f.d, f.r FROM t"))
    assert got["max"] == {b"f:d": 1.7976931348623157e308}
    assert got["inf"] == {b"f:d": math.inf, b"f:r": -math.inf}


# -- whole floats for integer columns --------------------------------------------------------------

def test_a_whole_float_parameter_fills_an_integer_column(db):
    """7.0 (pandas, JSON) is the integer 7 for an INTEGER column, as a parameter and as a
    literal; before, the parameter was refused while WHERE accepted it."""
    db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.n INTEGER, f.b BIGINT)")
    assert db.sql("UPSERT INTO t VALUES (?, ?, ?)", ("k7", 7.0, -3.0)) == 1
    assert db.sql("UPSERT INTO t VALUES ('k8', 8.0, 1e15)") == 1
    rows = dict(db.sql("SELECT k, f.n, f.b FROM t"))
    assert rows == {"k7": {b"f:n": 7, b"f:b": -3}, "k8": {b"f:n": 8, b"f:b": 10 ** 15}}
    assert all(type(v) is int for cells in rows.values() for v in cells.values())
    # WHERE reads the same parameter the same way, through the index too
    for _ in range(2):
        assert keys(db.sql("SELECT k FROM t WHERE f.n = ?", (7.0,))) == ["k7"]
        assert keys(db.sql("SELECT k FROM t WHERE f.n IN (?, 8)", (7.0,))) == ["k7", "k8"]
        db.sql("CREATE INDEX IF NOT EXISTS i ON t (f.n)")


def test_a_fractional_float_is_refused_for_an_integer_column_and_compares_false(db):
    """7.5 is not rounded into an INTEGER column (refused, nothing written, parameter and
    literal alike); in WHERE ``n = 7.5`` is simply false, as in sqlite3."""
    db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.n INTEGER)")
    db.sql("UPSERT INTO t VALUES ('k7', 7)")
    for sql, params in (("UPSERT INTO t VALUES ('a', 1), (?, ?)", ("b", 7.5)),
                        ("UPSERT INTO t VALUES ('a', 1), ('b', 7.5)", None)):
        with pytest.raises(ValueTypeError, match=r"f\.n: invalid INTEGER value 7\.5: not a whole"):
            db.sql(sql, params)
    with pytest.raises(ValueTypeError, match="INTEGER value 1e\\+30: out of range"):
        db.sql("UPSERT INTO t VALUES (?, ?)", ("c", 1e30))
    assert keys(db.sql("SELECT k FROM t")) == ["k7"]
    assert db.sql("SELECT k FROM t WHERE f.n = 7.5") == []
    assert db.sql("SELECT k FROM t WHERE f.n = ?", (7.5,)) == []
    assert keys(db.sql("SELECT k FROM t WHERE f.n < ?", (7.5,))) == ["k7"]


# -- CHAR(n) and VARCHAR(n) ------------------------------------------------------------------------

CHAR_DDL = "CREATE TABLE t (k VARCHAR PRIMARY KEY, f.lang CHAR(3), f.name VARCHAR(5))"


def test_char_n_holds_n_characters_in_writes_where_explain_and_delete(db):
    """CHAR(3) takes 'ENG' (before, it meant one character and refused it in UPSERT, WHERE,
    EXPLAIN and DELETE); a longer value is refused naming the column and the length."""
    db.sql(CHAR_DDL)
    assert db.sql("UPSERT INTO t VALUES ('a', 'ENG', 'Ann'), ('b', 'EN', 'Bo')") == 2
    with pytest.raises(ValueTypeError, match=r"f\.lang: invalid CHAR\(3\) value 'ENGL': 4 "
                                             "characters, longer than 3"):
        db.sql("UPSERT INTO t VALUES ('c', 'FR', 'Cy'), ('d', 'ENGL', 'Di')")
    assert keys(db.sql("SELECT k FROM t")) == ["a", "b"]
    assert keys(db.sql("SELECT k FROM t WHERE f.lang = 'ENG'")) == ["a"]
    plan = "\n".join(r[0] for r in db.sql("EXPLAIN DELETE FROM t WHERE f.lang = 'ENG'"))
    assert "f:lang = 'ENG'" in plan
    assert db.sql("DELETE FROM t WHERE f.lang = ?", ("ENG",)) == 1
    assert keys(db.sql("SELECT k FROM t")) == ["b"]


@pytest.mark.parametrize("indexed", [False, True], ids=["scan", "index"])
def test_char_n_compares_without_its_padding(db, indexed):
    """Trailing spaces of a CHAR are padding, as in Phoenix (which strips them on read) and
    SQL's PAD SPACE: 'EN ' is written and read as 'EN' and equals the literals 'EN' and
    'EN  ', by scan and by index alike. A VARCHAR keeps its spaces."""
    db.sql(CHAR_DDL)
    if indexed:
        db.sql("CREATE INDEX by_lang ON t (f.lang)")
    db.sql("UPSERT INTO t VALUES ('a', 'ENG', 'x'), ('b', 'EN ', 'y '), ('c', 'FR', 'z')")
    assert dict(db.sql("SELECT k, f.lang, f.name FROM t")) == {
        "a": {b"f:lang": "ENG", b"f:name": "x"}, "b": {b"f:lang": "EN", b"f:name": "y "},
        "c": {b"f:lang": "FR", b"f:name": "z"}}
    for where, params in (("f.lang = 'EN'", None), ("f.lang = 'EN  '", None),
                          ("f.lang = ?", ("EN ",)), ("f.lang BETWEEN 'EN ' AND 'EN'", None)):
        assert keys(db.sql(f"SELECT k FROM t WHERE {where}", params)) == ["b"], where
    assert keys(db.sql("SELECT k FROM t WHERE f.lang IN ('EN ', 'FR  ')")) == ["b", "c"]
    assert keys(db.sql("SELECT k FROM t WHERE f.lang > 'EN '")) == ["a", "c"]
    assert keys(db.sql("SELECT k FROM t WHERE f.name = 'y'")) == []


def test_varchar_n_refuses_longer_values_on_every_write_path(db):
    """VARCHAR(5) refuses a 6-character value (before, the length was ignored): UPSERT names
    the column and the limit and writes nothing of the statement; a raw put is refused too."""
    db.sql(CHAR_DDL)
    with pytest.raises(ValueTypeError, match=r"f\.name: invalid VARCHAR\(5\) value 'Annabe': "
                                             "6 characters, longer than 5"):
        db.sql("UPSERT INTO t VALUES ('a', 'ENG', 'Ann'), ('b', 'FR', 'Annabe')")
    with pytest.raises(ValueTypeError, match="longer than 5"):
        db.sql("UPSERT INTO t (k, f.name) VALUES (?, ?)", ("c", "é" * 6))
    assert db.sql("SELECT * FROM t") == []
    db.sql("UPSERT INTO t (k, f.name) VALUES (?, ?)", ("d", "é" * 5))  # characters, not bytes
    t = db.table("t")
    with pytest.raises(ValueTypeError, match="longer than 5"):
        t.put(b"e", {b"f:name": b"abcdef"})
    with pytest.raises(ValueTypeError, match="trailing spaces"):
        t.put(b"e", {b"f:lang": b"EN "})
    t.put(b"e", {b"f:lang": b"EN", b"f:name": b"abcde"})
    assert keys(db.sql("SELECT k FROM t")) == ["d", "e"]


def test_declared_lengths_persist_and_old_schemas_still_read(backend):
    """CHAR(3) / VARCHAR(50) survive a reopen (the catalog keeps ``char(3)``,
    ``string(50)``); a schema written before lengths existed reads as it did."""
    db = backend.connect()
    db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.lang CHAR(3), f.name VARCHAR(50), "
           "f.one CHAR, f.any VARCHAR)")
    db.close()
    db = backend.connect()
    cols = db.table("t").schema.columns
    assert {c: str(t) for c, t in cols.items()} == {
        b"f:lang": "char(3)", b"f:name": "string(50)", b"f:one": "char", b"f:any": "string"}
    assert [codec.sql_type_name(t) for t in cols.values()] == [
        "CHAR(3)", "VARCHAR(50)", "CHAR", "VARCHAR"]
    db.sql("UPSERT INTO t (k, f.lang) VALUES ('a', 'ENG')")
    assert db.sql("SELECT f.lang FROM t WHERE f.lang = 'ENG'")[0][1] == {b"f:lang": "ENG"}
    db.close()
    old = {"name": "o", "families": {"f": {}}, "split_size": 1024,
           "columns": {"f:c": "char", "f:s": "string", "f:b": "long binary"}}
    schema = TableSchema.from_json(old)
    assert schema.columns[b"f:c"] == codec.ColumnType("char")
    assert schema.columns[b"f:s"] == codec.ColumnType("string")
    assert json.loads(json.dumps(schema.to_json()))["columns"] == old["columns"]


def test_describe_shows_char_and_varchar_lengths(tmp_path):
    """`hibase sql`'s !describe shows a column's declared type as written: CHAR(3),
    VARCHAR(50) (before: CHAR and VARCHAR, the lengths lost)."""
    script = ("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.lang CHAR(3), f.name VARCHAR(50));\n"
              "!describe t\n")
    r = subprocess.run([sys.executable, "-m", "hibase", "sql", "--create", str(tmp_path / "s")],
                       input=script, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    assert ["f.lang", "CHAR(3)"] in rows and ["f.name", "VARCHAR(50)"] in rows


def test_type_specs_with_lengths_round_trip():
    """``char(n)`` / ``string(n)`` specs parse, print, pickle and compare as themselves; the
    command line's CHAR(3) keeps its length (plain CHAR stays one Java char) and bad lengths
    are refused."""
    for spec in ("char(3)", "string(50)", "char(1) binary"):
        t = codec.parse_type(spec)
        assert str(t) == spec and codec.parse_type(str(t)) == t
        assert pickle.loads(pickle.dumps(t)) == t
    assert codec.type_from_name("CHAR(3)") == codec.parse_type("char(3)")
    assert codec.type_from_name("CHAR") == codec.ColumnType("char")
    assert codec.parse_type("char(3)") != codec.parse_type("string(3)") != codec.parse_type(
        "string")
    for bad in ("string(0)", "char(x)", "long(3)", "bytes(4)"):
        with pytest.raises(SchemaError):
            codec.parse_type(bad)
    for sql in ("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.c CHAR(0))",
                "CREATE TABLE t (k VARCHAR PRIMARY KEY, f.c VARCHAR(x))"):
        with pytest.raises(HibaseError):
            parse_statement(sql)
