"""Column types for loaded data (issue 23): `load --create` detects them (hibase.load.detect_types,
cell_types), `--type` / `--no-detect` steer it, `alter-table` (Connection.declare_columns)
declares them on an existing table, `index create` on an undeclared column says how. Commands
on a store run on both backends (a folder, or a thrift:// URL of a gateway)."""

from __future__ import annotations

import csv
import json
import shlex

import pytest
from click.testing import CliRunner

import hibase
from hibase import errors
from hibase.cli import cli
from hibase.codec import ColumnType, type_from_name
from hibase.load import cell_types, detect_types

LONG, DOUBLE, STRING, BYTES = (ColumnType(n) for n in ("long", "double", "string", "bytes"))


def run(*args, input=None, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr,
                                      result.exception)
    return result


def error(*args, input=None) -> str:
    """A command that must fail as one `Error: ...` line with exit code 1, no traceback."""
    result = run(*args, input=input, code=1)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def usage_error(*args) -> str:
    result = run(*args, code=2)
    return " ".join(result.stderr.split())


def query(store, sql) -> list[dict]:
    out = run("query", store, sql, "--json").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def declared(store, table) -> dict:
    out = run("tables", store, "--json").stdout
    docs = {d["table"]: d for d in map(json.loads, out.splitlines())}
    return docs[table]["columns"]


@pytest.fixture
def store(backend):
    return backend.url


# -- detect_types, cell_types, type_from_name ------------------------------------------------

def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def test_detect_types_csv(tmp_path):
    path = write(tmp_path, "a.csv",
                 "id,int,float,text,mixed,empty,huge,edge,inf,zip,exp,sparse\n"
                 "a,1,1.5,x,1,,123456789012345678901234567890,9223372036854775807,inf,02134,1e3,\n"
                 "b,-20,2,y,2,,5,-9223372036854775808,1.5,10001,-2.5E-3,7\n"
                 "c,+3,-0.25,1,zz,,,0,nan,,4,\n"
                 "bad row with too few fields\n")
    got = detect_types(path)
    assert list(got) == ["id", "int", "float", "text", "mixed", "empty", "huge", "edge", "inf",
                         "zip", "exp", "sparse"]  # the header's order
    assert got == {"id": STRING, "int": LONG, "float": DOUBLE, "text": STRING, "mixed": STRING,
                   "empty": None, "huge": DOUBLE, "edge": LONG, "inf": STRING, "zip": STRING,
                   "exp": DOUBLE, "sparse": LONG}
    # one past signed 64-bit: a double (approximate), as a huge integer
    path = write(tmp_path, "b.csv", "n\n9223372036854775808\n1\n")
    assert detect_types(path) == {"n": DOUBLE}
    # a value double cannot hold (1e999), or with spaces, makes the column text
    assert detect_types(write(tmp_path, "c.csv", "n,m\n1e999,1\n2, 2\n")) == {
        "n": STRING, "m": STRING}
    # a value that is not UTF-8: bytes (string would refuse it at load)
    assert detect_types(write(tmp_path, "d.csv", b"n,m\n\xff\xfe,a\n", "wb")) == {
        "n": BYTES, "m": STRING}
    # another delimiter; 0 and -0 are numbers, 00 is not
    assert detect_types(write(tmp_path, "e.tsv", "a\tb\n0\t00\n-0\t1\n"), "csv",
                        delimiter="\t") == {"a": LONG, "b": STRING}


def test_detect_types_jsonl(tmp_path):
    lines = [{"id": "a", "n": 1, "d": 2.5, "s": "42", "b": True, "o": {"x": [1]}, "l": [1],
              "z": None, "big": 123456789012345678901234567890, "mix": 1, "one": 1.0},
             {"id": "b", "n": -2, "d": 3, "mix": "x", "one": 2},
             "not an object", {"id": "c", "n": 3, "z": None}]
    text = "\n".join(json.dumps(x) for x in lines) + "\nnot json\n\n"
    got = detect_types(write(tmp_path, "a.jsonl", text))
    assert got == {"id": STRING, "n": LONG, "d": DOUBLE, "s": STRING, "b": ColumnType("boolean"),
                   "o": STRING,
                   "l": STRING, "z": None, "big": DOUBLE, "mix": STRING, "one": DOUBLE}
    # NaN (Python's json reads it) is text here, as "nan" in CSV
    assert detect_types(write(tmp_path, "b.ndjson", '{"x": NaN}\n{"x": 1}\n')) == {"x": STRING}


def test_detect_types_needs_a_file():
    with pytest.raises(errors.InvalidArgument, match="stdin"):
        detect_types("-")


def test_cell_types_follow_the_loads_column_names():
    detected = {"id": STRING, "alt": LONG, "a:lat": DOUBLE, "city": STRING, "x": LONG,
                "a:x": DOUBLE, "none": None}
    assert cell_types(detected, {"a", "g"}, "a", {"city": "g:town"}, rowkey_column="id") == {
        "a:alt": LONG, "a:lat": DOUBLE, "g:town": STRING, "a:x": DOUBLE, "a:none": None}
    # a mapped rowkey column is a cell; without a default family unmapped columns have none
    assert cell_types({"id": STRING, "v": LONG}, {"g"}, None, {"id": "g:id"}, "id") == {
        "g:id": STRING}


@pytest.mark.parametrize("spec,expected", [
    ("long", "long"), ("BIGINT", "long"), ("integer", "int"), ("INT", "int"),
    ("SMALLINT", "short"), ("TINYINT", "byte"), ("VARCHAR", "string"), ("varchar(20)", "string"),
    ("DOUBLE", "double"), ("FLOAT", "float"), ("VARBINARY", "bytes"), ("BINARY", "bytes"),
    ("BIGINT binary", "long binary"), ("string", "string")])
def test_type_from_name(spec, expected):
    assert str(type_from_name(spec)) == expected


def test_type_from_name_refuses_unknown_names():
    with pytest.raises(errors.SchemaError, match="Phoenix"):
        type_from_name("MONEY")


# -- load --create --------------------------------------------------------------------------

AIRPORTS = [  # faa, name, alt, lat, tz, note: byte order and number order differ on alt
    ("JFK", "Kennedy", "13", "40.64", "-5", ""),
    ("DEN", "Denver", "5431", "39.86", "-7", ""),
    ("LAX", "Los Angeles", "125", "33.94", "-8", ""),
    ("ASE", "Aspen", "7820", "39.22", "-7", ""),
    ("BOS", "Boston", "19", "42.36", "-5", ""),
    ("SLC", "Salt Lake", "4227", "40.79", "-7", ""),
    ("ORD", "Chicago", "672", "41.98", "-6", ""),
    ("EGE", "Eagle", "6548", "39.64", "-7", ""),
    ("XNA", "Northwest Arkansas", "1287", "36.28", "-6", ""),
    ("HNL", "Honolulu", "13", "21.32", "-10", ""),
]


@pytest.fixture
def airports_csv(tmp_path):
    path = tmp_path / "airports.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["faa", "name", "alt", "lat", "tz", "note"])
        w.writerows(AIRPORTS)
    return path


def test_load_create_detects_types_and_sql_compares_numbers(store, airports_csv):
    result = run("load", store, "airports", airports_csv, "--rowkey-column", "faa", "-f", "a",
                 "--create", "--no-progress")
    lines = result.stderr.splitlines()
    assert lines[0] == ("Detected types: a.alt=long, a.lat=double, a.name=string, a.tz=long; "
                        "left undeclared (no values): a.note")
    assert "Rows loaded: 10, rejected: 0" in result.stderr
    assert declared(store, "airports") == {"a:name": "string", "a:alt": "long",
                                           "a:lat": "double", "a:tz": "long"}
    with hibase.connect(store, read_only=True) as db:
        assert db.table("airports").schema.columns[b"a:alt"] == LONG
    # numbers compare as numbers: as bytes '13' < '1000' < '125' < '19' < '5431'
    high = sum(int(a[2]) > 1000 for a in AIRPORTS)
    assert high == 5  # as bytes all 10 are > "1000"
    assert query(store, "SELECT COUNT(*) FROM airports WHERE a.alt > 1000") == [
        {"COUNT(*)": high}]
    top = query(store, "SELECT MAX(a.alt), MIN(a.lat), MIN(a.tz) FROM airports")[0]
    assert list(top.values()) == [7820, 21.32, -10]  # as bytes: '7820', '21.32', '-10'... '-8'
    rows = query(store, "SELECT ROWKEY, a.name FROM airports WHERE a.lat BETWEEN 39.5 AND 41 "
                        "AND a.tz = -7")
    assert sorted(r["ROWKEY"] for r in rows) == ["DEN", "EGE", "SLC"]
    # and an index on a detected column works straight away
    run("index", "create", store, "airports", "by_alt", "-c", "a:alt", "--no-progress")
    assert query(store, "SELECT COUNT(*) FROM airports WHERE a.alt > 1000") == [
        {"COUNT(*)": high}]


def test_load_create_type_overrides_and_no_detect(store, airports_csv):
    result = run("load", store, "t1", airports_csv, "--rowkey-column", "faa", "-f", "a",
                 "--create", "--no-progress", "--type", "alt=string", "--type", "a:tz=INTEGER",
                 "--type", "note=VARCHAR")
    assert result.stderr.splitlines()[0] == (
        "Detected types: a.alt=string (--type), a.lat=double, a.name=string, "
        "a.note=string (--type), a.tz=int (--type)")
    assert declared(store, "t1") == {"a:name": "string", "a:alt": "string", "a:lat": "double",
                                     "a:tz": "int", "a:note": "string"}

    result = run("load", store, "t2", airports_csv, "--rowkey-column", "faa", "-f", "a",
                 "--create", "--no-progress", "--no-detect")
    assert result.stderr.splitlines()[0] == (
        "No types declared (--no-detect): every column is undeclared")
    assert declared(store, "t2") == {}
    result = run("load", store, "t3", airports_csv, "--rowkey-column", "faa", "-f", "a",
                 "--create", "--no-progress", "--no-detect", "--type", "alt=BIGINT")
    assert result.stderr.splitlines()[0] == (
        "Declared types: a.alt=long (--type); every other column is undeclared (--no-detect)")
    assert declared(store, "t3") == {"a:alt": "long"}
    assert "Rows loaded: 10" in result.stderr


def test_load_create_jsonl_from_stdin_and_a_map(store):
    text = "".join(json.dumps(x) + "\n" for x in [
        {"id": "a", "n": 1, "d": 2.5, "s": "10", "city": "Paris", "z": None},
        {"id": "b", "n": 20, "d": 3, "s": "9", "city": "Rome"}])
    result = run("load", store, "j", "-", "--format", "jsonl", "--rowkey-column", "id",
                 "-f", "f", "--map", "city=g:town", "--create", "--no-progress", input=text)
    assert result.stderr.splitlines()[0] == (
        "Detected types: f.d=double, f.n=long, f.s=string, g.town=string; "
        "left undeclared (no values): f.z")
    assert "Rows loaded: 2" in result.stderr
    assert query(store, "SELECT MAX(f.n), SUM(f.d) FROM j") == [
        {"MAX(f.n)": 20, "SUM(f.d)": 5.5}]
    assert [r["ROWKEY"] for r in query(store, "SELECT * FROM j WHERE f.s = '10'")] == ["a"]


def test_load_type_detection_leaves_a_table_that_already_exists_alone(store, airports_csv):
    run("create-table", store, "t", "-f", "a", "-c", "a:alt=string")
    result = run("load", store, "t", airports_csv, "--rowkey-column", "faa", "-f", "a",
                 "--create", "--no-progress")
    assert "Detected" not in result.stderr and "Created" not in result.stderr
    assert declared(store, "t") == {"a:alt": "string"}


def test_load_type_option_errors(store, airports_csv):
    args = ("load", store, "t", airports_csv, "--rowkey-column", "faa", "-f", "a")
    msg = usage_error(*args, "--type", "alt=long")
    assert "--create" in msg and "hibase alter-table" in msg and "a:alt=long" not in msg
    assert "alter-table" in usage_error(*args, "--no-detect")
    assert "no column 'elevation'" in usage_error(*args, "--create", "--type", "elevation=long")
    assert "rowkey column" in usage_error(*args, "--create", "--type", "faa=string")
    assert "Phoenix" in usage_error(*args, "--create", "--type", "alt=money")
    with hibase.connect(store) as db:
        assert b"t" not in db.tables()  # nothing was created
    run(*args, "--create", "--no-progress")
    assert "exists" in usage_error(*args, "--create", "--type", "alt=double")


# -- alter-table / declare_columns ----------------------------------------------------------

def test_alter_table_declares_after_a_load_without_types(store, airports_csv):
    run("load", store, "airports", airports_csv, "--rowkey-column", "faa", "-f", "a",
        "--create", "--no-detect", "--no-progress")
    run("put", store, "airports", "ZZZ", "a:alt=n/a", "a:lat=1")
    msg = error("alter-table", store, "airports", "-c", "a:lat=DOUBLE", "-c", "a:alt=long")
    assert msg == "Error: row 'ZZZ': a.alt = 'n/a' is not a long; nothing declared"
    assert declared(store, "airports") == {}  # a:lat, which was fine, is not declared either

    run("put", store, "airports", "ZZZ", "a:alt=0")
    # ... but the family keeps 3 versions: the older 'n/a' comes back if the newer is deleted
    msg = error("alter-table", store, "airports", "-c", "a:alt=long")
    assert "row 'ZZZ': a.alt = 'n/a' (an older version, timestamp" in msg
    with hibase.connect(store) as db:
        db.table("airports").delete(b"ZZZ")
    result = run("alter-table", store, "airports", "-c", "a:lat=DOUBLE", "-c", "a:alt=long")
    assert result.stderr.strip() == ("Declared a:lat=double, a:alt=long on 'airports' "
                                     "(20 stored cell(s) in 10 row(s) checked).")
    assert declared(store, "airports") == {"a:lat": "double", "a:alt": "long"}
    assert query(store, "SELECT COUNT(*) FROM airports WHERE a.alt > 1000") == [
        {"COUNT(*)": 5}]
    # puts are checked from now on
    assert "a.alt" in error("put", store, "airports", "QQQ", "a:alt=high")
    # the same again: nothing to do; another type the values fit: allowed
    assert "Nothing to change" in run("alter-table", store, "airports", "-c",
                                      "a:alt=long").stderr
    run("alter-table", store, "airports", "-c", "a:alt=double")
    assert declared(store, "airports")["a:alt"] == "double"
    assert "Example:" in run("alter-table", "--help").stdout


def test_alter_table_refuses_an_indexed_column_and_bad_arguments(store):
    run("create-table", store, "t", "-f", "f", "-c", "f:n=long")
    run("put", store, "t", "r1", "f:n=1", "f:c=x")
    run("index", "create", store, "t", "by_n", "-c", "f:n", "--cover", "f:c", "--no-progress")
    msg = error("alter-table", store, "t", "-c", "f:n=string")
    assert "indexed by 'by_n'" in msg and "drop the index" in msg
    run("alter-table", store, "t", "-c", "f:c=string")  # a covered column may change
    assert "family 'g'" in error("alter-table", store, "t", "-c", "g:x=long")
    assert "invalid column type" in error("alter-table", store, "t", "-c", "f:x=number")
    assert "no table 'nope'" in error("alter-table", store, "nope", "-c", "f:x=long")
    run("alter-table", store, "t", code=2)  # -c is required
    assert declared(store, "t") == {"f:n": "long", "f:c": "string"}


def test_declare_columns_api(backend):
    with backend.connect() as db:
        db.create_table("t", {"f": {"max_versions": 1}, "g": {}})
        t = db.table("t")
        t.put(b"k1", {b"f:a": b"1", b"g:b": b"x"})
        t.put(b"k2", {b"f:a": b"2.5"})
        with pytest.raises(errors.ValueTypeError, match=r"row 'k2': f.a = '2.5' is not a long"):
            db.declare_columns("t", {"f:a": "long", "g:b": "string"})
        assert t.schema.columns == {}
        done = db.declare_columns("t", {b"f:a": "double", "g:b": ColumnType("string")})
        assert done == {"columns": {"f:a": "double", "g:b": "string"}, "rows": 2, "cells": 3}
        assert db.declare_columns("t", {"f:a": "double"})["columns"] == {}
        assert db.sql("SELECT COUNT(*) FROM t WHERE f.a > 2") == [(1,)]
        with pytest.raises(errors.SchemaError, match="non-empty dict"):
            db.declare_columns("t", {})
        with pytest.raises(errors.SchemaError, match="family:qualifier"):
            db.declare_columns("t", {"f": "long"})
    with backend.connect() as db:  # kept
        assert db.table("t").schema.columns == {b"f:a": DOUBLE, b"g:b": STRING}


# -- index create on an undeclared column -----------------------------------------------------

def test_index_create_on_an_undeclared_column_says_how_to_declare_it(store):
    run("create-table", store, "t", "-f", "f", "-c", "f:ip=VARCHAR")
    run("put", store, "t", "r1", "f:ip=1.2.3.4", "f:n=5")
    msg = error("index", "create", store, "t", "by_n", "-c", "f:ip,f:n", "--no-progress")
    assert msg == (f"Error: cannot index 'f:n': only declared columns can be indexed; declare it "
                   f"first: hibase alter-table {shlex.quote(store)} t "
                   "-c f:n=TYPE (TYPE: long, double, string, ...)")
    run("alter-table", store, "t", "-c", "f:n=long")
    run("index", "create", store, "t", "by_n", "-c", "f:ip,f:n", "--no-progress")
    with hibase.connect(store) as db:
        with pytest.raises(errors.SchemaError, match=r"db\.declare_columns\(table"):
            db.create_index("t", "by_x", ["f:x"])
