"""One voice across interfaces (issue 42): `hibase query` prints what `hibase sql` prints for a
statement in --table, --json and --csv (AS aliases, family.qualifier labels, the rowkey by its
PRIMARY KEY name, flat JSON objects, one bad-cell line); `scan` / `get` print flat JSON objects
and family.qualifier names; db.sql gives a VARCHAR rowkey as str, as DB-API does."""

from __future__ import annotations

import csv
import io
import json
import warnings

import pytest
from click.testing import CliRunner

import hibase
import hibase.dbapi as dbapi
from hibase.cli import cli

BAD = "1 cell did not parse as its declared type (row u3, e.age): read as NULL"


def _cli(*args, input=None, code=0):
    got = CliRunner().invoke(cli, [str(a) for a in args], input=input)
    assert got.exit_code == code, (got.exit_code, got.stdout, got.stderr, got.exception)
    return got


@pytest.fixture(scope="module")
def store(module_backend):
    """Table u (k VARCHAR PRIMARY KEY, e.amount, e.age BIGINT): u2 (5, 30) and u3 (7, 'abc'
    written by another client, plus an undeclared e.note); yields the store argument. One per
    module and backend: the tests that take it only read it."""
    db = module_backend.connect()
    db.sql("CREATE TABLE u (k VARCHAR PRIMARY KEY, e.amount BIGINT, e.age BIGINT)")
    db.sql("UPSERT INTO u VALUES ('u2', 5, 30), ('u3', 7, 40)")
    module_backend.foreign_put(db, "u", b"u3", {b"e:age": b"abc", b"e:note": b"hi"})
    db.close()
    return module_backend.url


def _query(store, statement, fmt):
    return _cli("query", store, statement, f"--{fmt}")


def _shell(store, statement, fmt):
    return _cli("sql", store, f"--{fmt}", "--no-timing", input=statement + ";\n")


STATEMENTS = [  # (statement, whether it reads u3's wrong-typed e.age)
    ("SELECT k AS who, e.age FROM u", True),  # AS on the rowkey
    ("SELECT k AS who, SUM(e.amount) AS total, COUNT(*) FROM u GROUP BY k", False),
    ("SELECT * FROM u", True),  # rowkey by its name, declared columns, the undeclared e.note
    ("SELECT e.age AS years, e.amount FROM u WHERE k = 'u3'", True),  # the bad cell alone
    ("SELECT UPPER(k) AS up, e.amount * 2 AS twice FROM u ORDER BY up", False),  # the engine
]


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
@pytest.mark.parametrize("statement, bad", STATEMENTS)
def test_query_prints_what_the_shell_prints(store, statement, bad, fmt):
    """Same stdout, byte for byte, and the same bad-cell line (once) on stderr."""
    q, s = _query(store, statement, fmt), _shell(store, statement, fmt)
    assert q.stdout == s.stdout
    assert q.stdout.strip()
    for got in (q, s):
        assert got.stderr.splitlines().count(BAD) == bad, got.stderr
        assert "CellTypeWarning" not in got.stderr and ("did not parse" in got.stderr) == bad


def test_query_json_labels_are_the_shells(store):
    """AS honoured, family.qualifier spelling, flat objects, the rowkey by its declared name."""
    def rows(statement):
        return [json.loads(line) for line in _query(store, statement, "json").stdout.splitlines()]

    assert rows("SELECT k AS who, e.age FROM u") == [{"who": "u2", "e.age": 30},
                                                      {"who": "u3", "e.age": None}]
    assert rows("SELECT k AS who, SUM(e.amount) FROM u GROUP BY k") == [
        {"who": "u2", "SUM(e.amount)": 5}, {"who": "u3", "SUM(e.amount)": 7}]
    assert rows("SELECT * FROM u") == [
        {"k": "u2", "e.amount": 5, "e.age": 30, "e.note": None},
        {"k": "u3", "e.amount": 7, "e.age": None, "e.note": "hi"}]


def test_query_table_and_csv_headers_are_the_labels(store):
    table = _query(store, "SELECT k AS who, e.age FROM u", "table").stdout.splitlines()
    assert table[0].split() == ["who", "e.age"]
    assert table[2].split() == ["u2", "30"]
    got = list(csv.reader(io.StringIO(_query(store, "SELECT k, e.age AS a FROM u",
                                             "csv").stdout)))
    assert got == [["k", "a"], ["u2", "30"], ["u3", ""]]


def test_query_names_a_bad_cell_once(store):
    got = _query(store, "SELECT e.age FROM u", "json")
    assert got.stderr.splitlines() == [got.stderr.splitlines()[0], BAD]
    assert got.stderr.splitlines()[0].startswith("2 row(s) in ")


def test_scan_and_get_json_are_flat(store):
    scan = [json.loads(line) for line in _cli("scan", store, "u", "--json").stdout.splitlines()]
    assert scan == [{"k": "u2", "e.age": 30, "e.amount": 5},
                    {"k": "u3", "e.age": None, "e.amount": 7, "e.note": "hi"}]
    got = _cli("get", store, "u", "u2", "--json")
    assert json.loads(got.stdout) == {"k": "u2", "e.age": 30, "e.amount": 5}
    versions = json.loads(_cli("get", store, "u", "u2", "-c", "e:age", "--versions", "2",
                               "--json").stdout)
    assert list(versions) == ["k", "e.age"] and versions["k"] == "u2"
    assert [v["value"] for v in versions["e.age"]] == [30]
    bad = _cli("get", store, "u", "u3", "--json")
    assert json.loads(bad.stdout)["e.age"] is None
    assert bad.stderr.splitlines() == [BAD]


def test_scan_and_get_text_use_the_labels(store):
    lines = _cli("get", store, "u", "u2").stdout.splitlines()
    assert lines[0].split() == ["k", "column", "value"]
    assert [line.split() for line in lines[2:]] == [["u2", "e.age", "30"],
                                                   ["u2", "e.amount", "5"]]
    got = list(csv.reader(io.StringIO(_cli("scan", store, "u", "--csv").stdout)))
    assert got[0] == ["k", "column", "value"] and ["u3", "e.note", "hi"] in got
    wide = list(csv.reader(io.StringIO(_cli("scan", store, "u", "--csv", "--wide").stdout)))
    assert wide == [["k", "e.age", "e.amount", "e.note"], ["u2", "30", "5", ""],
                    ["u3", "", "7", "hi"]]


def test_scan_json_of_a_table_without_a_rowkey_name_says_ROWKEY(backend):
    _cli("create-table", backend.url, "t", "-f", "f", "-c", "f:n=long")
    _cli("put", backend.url, "t", "r1", "f:n=4", "f:s=x")
    got = [json.loads(line) for line in _cli("scan", backend.url, "t", "--json").stdout
           .splitlines()]
    assert got == [{"ROWKEY": "r1", "f.n": 4, "f.s": "x"}]
    assert got == [json.loads(line) for line in _cli(
        "query", backend.url, "SELECT * FROM t", "--json").stdout.splitlines()]
    assert json.loads(_cli("get", backend.url, "t", "r1", "--json").stdout) == got[0]


def test_db_sql_gives_a_varchar_rowkey_as_str_as_dbapi(store):
    db = hibase.connect(store)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert db.sql("SELECT k, e.amount FROM u") == [("u2", {b"e:amount": 5}),
                                                            ("u3", {b"e:amount": 7})]
            assert db.sql("SELECT * FROM u WHERE k = 'u2'") == [
                ("u2", {b"e:amount": 5, b"e:age": 30})]
            assert db.sql("SELECT k, COUNT(*) FROM u GROUP BY k") == [("u2", 1), ("u3", 1)]
            assert db.sql("SELECT MIN(k), MAX(k) FROM u") == [("u2", "u3")]
            assert db.sql("SELECT k FROM u", raw=True) == [(b"u2", {}), (b"u3", {})]
            assert db.execute("SELECT k, COUNT(*) FROM u GROUP BY k").rows == [("u2", 1),
                                                                              ("u3", 1)]
    finally:
        db.close()
    con = dbapi.connect(store)
    try:
        cur = con.cursor()
        cur.execute("SELECT k FROM u")
        assert cur.fetchall() == [("u2",), ("u3",)]
        cur.execute("SELECT k, COUNT(*) FROM u GROUP BY k")
        assert cur.fetchall() == [("u2", 1), ("u3", 1)]
    finally:
        con.close()


def test_db_sql_keeps_a_varbinary_or_undeclared_rowkey_bytes(backend):
    db = backend.connect()
    try:
        db.sql("CREATE TABLE b (k VARBINARY PRIMARY KEY, f.n BIGINT)")
        db.sql("UPSERT INTO b VALUES ('x1', 1)")
        db.create_table("raw", {"f": {}}, columns={"f:n": "long"})
        db.table("raw").put(b"r\xff", {b"f:n": b"2"})
        assert db.sql("SELECT k, f.n FROM b") == [(b"x1", {b"f:n": 1})]
        assert db.sql("SELECT k, COUNT(*) FROM b GROUP BY k") == [(b"x1", 1)]
        assert db.sql("SELECT * FROM raw") == [(b"r\xff", {b"f:n": 2})]
    finally:
        db.close()


def test_create_table_refuses_a_number_rowkey(backend):
    """A BIGINT PRIMARY KEY is refused (the rowkey is stored as text or bytes), so VARCHAR is
    the one declared rowkey type results decode."""
    db = backend.connect()
    try:
        with pytest.raises(hibase.errors.QuerySyntaxError, match="VARCHAR or VARBINARY"):
            db.sql("CREATE TABLE n (k BIGINT PRIMARY KEY, f.a BIGINT)")
    finally:
        db.close()


# -- one spelling of a column: family.qualifier, in what the CLI prints and reads ------------

def test_cli_inputs_take_family_dot_qualifier_and_hbase_colon(tmp_path):
    """put, delete, create-table / alter-table -c, index create -c / --cover and scan -c read
    f.a (what every header prints) and HBase's f:a alike; a qualifier may hold a dot."""
    d = tmp_path / "s"
    _cli("create-table", d, "t", "-f", "f", "-c", "f.n=long", "-c", "f:dest=string")
    _cli("put", d, "t", "k1", "f.n=1", "f:dest=IAH", "f:a.b=x")
    _cli("put", d, "t", "k2", "f.n=2", "f.dest=SFO")
    _cli("alter-table", d, "t", "-c", "f.a.b=string")
    db = hibase.connect(str(d))
    try:
        assert db.table("t").schema.columns[b"f:a.b"].name == "string"
        assert db.table("t").row(b"k1") == {b"f:n": b"1", b"f:dest": b"IAH", b"f:a.b": b"x"}
    finally:
        db.close()
    _cli("index", "create", d, "t", "by_dest", "-c", "f.dest", "--cover", "f.n")
    got = _cli("query", d, "SELECT f.n FROM t WHERE f.dest = 'SFO'", "--json")
    assert [json.loads(x) for x in got.stdout.splitlines()] == [{"f.n": 2}]
    scan = _cli("scan", d, "t", "-c", "f.dest", "--json").stdout.splitlines()
    assert [json.loads(x) for x in scan] == [{"ROWKEY": "k1", "f.dest": "IAH"},
                                             {"ROWKEY": "k2", "f.dest": "SFO"}]
    _cli("delete", d, "t", "k1", "f.dest")
    got = [json.loads(x) for x in _cli("get", d, "t", "k1", "--json").stdout.splitlines()]
    assert "f.dest" not in got[0] and got[0]["f.n"] == 1


def test_cli_messages_spell_columns_with_a_dot(tmp_path):
    """A value that does not parse, the load's detected types and a wrong -c name all say
    family.qualifier."""
    d = tmp_path / "s"
    _cli("create-table", d, "t", "-f", "f", "-c", "f.n=long")
    bad = _cli("put", d, "t", "k1", "f:n=abc", code=1)
    assert "column 'f.n'" in bad.stderr and "f:n" not in bad.stderr
    src = tmp_path / "in.csv"
    src.write_text("id,alt,name\n1,10,a\n2,20,b\n")
    got = _cli("load", d, "air", src, "--rowkey", "{id}", "--family", "a", "--create")
    assert "Detected types: a.alt=long, a.id=long, a.name=string" in got.stderr
    wrong = _cli("index", "create", d, "t", "i", "-c", "n", code=2)
    assert "write family.qualifier" in wrong.stderr


def test_declare_columns_names_a_bad_stored_cell_with_a_dot(tmp_path):
    db = hibase.connect(str(tmp_path / "s"))
    try:
        db.create_table("t", {"f": {}})
        db.table("t").put(b"k1", {b"f:alt": b"abc"})
        with pytest.raises(hibase.errors.ValueTypeError, match=r"row 'k1': f\.alt = 'abc'"):
            db.declare_columns("t", {"f:alt": "long"})
    finally:
        db.close()
