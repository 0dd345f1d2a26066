"""The `hibase` command line, through click's CliRunner (and once through `python -m hibase`).
Commands on a store run on both backends: they take a thrift:// URL where they take a folder."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

import hibase
from hibase.cli import cli, parse_bytes, show_bytes


@pytest.fixture
def store(backend):
    """What the commands take as the store: a folder, or a thrift:// URL of a gateway."""
    return backend.url


def run(*args, input=None, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr,
                                      result.exception)
    if code == 0:
        assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


def error(*args, input=None) -> str:
    """Run a command that must fail as one `Error: ...` line, exit code 1, no traceback."""
    result = run(*args, input=input, code=1)
    assert isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def cells_of(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def _flights(store):
    """Table flights (four rows) made through the commands in `store`; returns `store`."""
    run("create-table", store, "flights", "-f", "f:max_versions=3", "-f", "g",
        "-c", "f:delay=double", "-c", "f:n=long binary")
    for k, dest, delay in [("k1", "IAH", "12.5"), ("k2", "SFO", "-3"), ("k3", "IAH", "0"),
                           ("m1", "JFK", "7")]:
        run("put", store, "flights", k, f"f:dest={dest}", f"f:delay={delay}", "g:x=1")
    return store


@pytest.fixture
def flights(store):
    """Table flights in the test's own store (for tests that write to it)."""
    return _flights(store)


@pytest.fixture(scope="module")
def read_flights(module_backend):
    """Table flights, one per module and backend, for the tests that only read it (or check
    that a refused command wrote nothing)."""
    return _flights(module_backend.url)


# -- help --------------------------------------------------------------------------------------

def _commands(group: click.Group, prefix=()):
    for name, cmd in group.commands.items():
        yield prefix + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, prefix + (name,))


def test_every_command_has_help_with_an_example():
    names = set()
    for path, _ in _commands(cli):
        result = run(*path, "--help")
        assert "Example" in result.stdout, path
        names.add(" ".join(path))
    assert {"tables", "create-table", "drop-table", "put", "get", "scan", "load", "regions",
            "split"} <= names
    assert "Example" in run("--help").stdout


def test_python_m_hibase():
    out = subprocess.run([sys.executable, "-m", "hibase", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Usage: hibase" in out.stdout and "scan" in out.stdout


# -- bytes as text -----------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [b"plain", "h\u00e9llo".encode(), b"a\x00b", b"\xff\xfe",
                                 b"back\\slash", b"tab\tnl\n", b"\\x41", b"\xe2\x82"])
def test_show_and_parse_bytes_round_trip(raw):
    assert parse_bytes(show_bytes(raw)) == raw


def test_show_bytes_escapes():
    assert show_bytes("h\u00e9llo".encode()) == "h\u00e9llo"
    assert show_bytes(b"a\x00\xff\\") == "a\\x00\\xff\\\\"
    assert parse_bytes("C:\\path") == b"C:\\path"  # unknown escapes stay as typed


# -- create / put / get / scan ------------------------------------------------------------------

def test_round_trip_in_three_formats(read_flights):
    flights = read_flights
    out = run("get", flights, "flights", "k1").stdout.splitlines()
    assert out[0].split() == ["ROWKEY", "column", "value"]
    assert ["k1", "f.delay", "12.5"] in [line.split() for line in out]
    assert jsonl(run("get", flights, "flights", "k1", "--json").stdout) == [
        {"ROWKEY": "k1", "f.delay": 12.5, "f.dest": "IAH", "g.x": "1"}]  # typed, flat
    assert cells_of(run("get", flights, "flights", "k1", "--csv").stdout) == [
        {"ROWKEY": "k1", "column": c, "value": v}
        for c, v in [("f.delay", "12.5"), ("f.dest", "IAH"), ("g.x", "1")]]

    rows = jsonl(run("scan", flights, "flights", "--json").stdout)
    assert [r["ROWKEY"] for r in rows] == ["k1", "k2", "k3", "m1"]
    assert rows[1]["f.dest"] == "SFO"
    table = run("scan", flights, "flights", "--columns", "f:dest").stdout.splitlines()
    assert len(table) == 2 + 4 and table[2].split() == ["k1", "f.dest", "IAH"]
    assert len(cells_of(run("scan", flights, "flights", "--csv").stdout)) == 12


def test_scan_options(read_flights):
    flights = read_flights
    def keys(*opts):
        return [r["ROWKEY"] for r in jsonl(run("scan", flights, "flights", "--json",
                                               *opts).stdout)]
    assert keys("--prefix", "k") == ["k1", "k2", "k3"]
    assert keys("--start", "k2", "--stop", "m1") == ["k2", "k3"]
    assert keys("--limit", "2") == ["k1", "k2"]
    assert keys("--reverse", "--limit", "2") == ["m1", "k3"]
    assert keys("--filter", "PrefixFilter('k2')") == ["k2"]
    assert keys("--filter", "SingleColumnValueFilter('f', 'dest', =, 'binary:IAH')") == [
        "k1", "k3"]
    cols = jsonl(run("scan", flights, "flights", "--json", "-c", "g,f:dest").stdout)[0]
    assert set(cols) == {"ROWKEY", "g.x", "f.dest"}


def test_get_missing_row_is_an_error(read_flights):
    flights = read_flights
    assert error("get", flights, "flights", "zz", "--json") == \
        "Error: no row 'zz' in table 'flights'"
    assert error("get", flights, "flights", "k1", "--csv", "-c", "f:nope") == \
        "Error: row 'k1' of 'flights' has none of the columns f:nope"


def test_versions_binary_columns_and_escapes(flights):
    run("put", flights, "flights", "k1", "f:dest=HOU", "--timestamp", "99999999999999")
    got = jsonl(run("get", flights, "flights", "k1", "--versions", "2", "-c", "f:dest",
                    "--json").stdout)[0]
    assert [c["value"] for c in got["f.dest"]] == ["HOU", "IAH"]
    assert got["f.dest"][0]["timestamp"] == 99999999999999
    # a 'long binary' column takes text and stores Bytes.toBytes
    run("put", flights, "flights", "b\\x00\\xff", "f:n=42", "f:raw=a\\x01\\\\")
    with hibase.connect(flights, read_only=True) as db:
        assert db.table("flights").row(b"b\x00\xff") == {
            b"f:n": (42).to_bytes(8, "big"), b"f:raw": b"a\x01\\"}
    row = jsonl(run("get", flights, "flights", "b\\x00\\xff", "--json").stdout)[0]
    assert row == {"ROWKEY": "b\\x00\\xff", "f.n": 42, "f.raw": "a\\x01\\\\"}


def test_declared_type_errors_write_nothing(read_flights):
    flights = read_flights
    msg = error("put", flights, "flights", "k9", "f:dest=X", "f:delay=soon")
    assert "f.delay" in msg and "DOUBLE" in msg
    msg = error("put", flights, "flights", "k9", "f:n=4.5")
    assert "f.n" in msg
    assert "no row 'k9'" in error("get", flights, "flights", "k9", "--json")


def test_errors_are_one_line(read_flights, tmp_path):
    flights = read_flights
    assert "no table 'nope'" in error("get", flights, "nope", "k1")
    assert "no table 'nope'" in error("scan", flights, "nope")
    assert "PrefixFilter" in error("scan", flights, "flights", "--filter", "PrefixFilter('a'")
    assert "NoSuchFilter" in error("scan", flights, "flights", "--filter", "NoSuchFilter()")
    assert "not a hibase store" in error("tables", str(tmp_path / "missing"))
    assert "not a hibase store" in error("put", str(tmp_path / "missing"), "t", "r", "f:a=1")
    assert not (tmp_path / "missing").exists()
    assert "exists" in error("create-table", flights, "flights", "-f", "f")
    assert "compression" in error("create-table", flights, "t2", "-f", "f:compression=FOO")
    assert "unknown option" in error("create-table", flights, "t2", "-f", "f:colour=red")
    assert "family" in error("put", flights, "flights", "k1", "zz:a=1")
    error("scan", flights, "flights", "--prefix", "k", "--start", "a")


def test_tables(read_flights):
    flights = read_flights
    rows = jsonl(run("tables", flights, "--json").stdout)
    assert [r["table"] for r in rows] == ["flights"]
    assert rows[0]["families"]["f"]["max_versions"] == 3
    assert rows[0]["columns"] == {"f:delay": "double", "f:n": "long binary"}
    assert cells_of(run("tables", flights, "--csv").stdout)[0]["families"] == "f,g"
    assert "flights" in run("tables", flights).stdout


def test_create_table_options(store):
    # GZ: real HBase refuses a codec its JVM cannot load (ZSTD and LZ4 need native / extra jars)
    run("create-table", store, "t", "-f", "f:max_versions=1,compression=GZ,in_memory=true",
        "--split-size", "1M")
    with hibase.connect(store, read_only=True) as db:
        schema = db.table("t").schema
    fo = schema.families[b"f"]
    assert (fo.max_versions, fo.compression, fo.in_memory) == (1, "GZ", True)
    assert schema.split_size == 1 << 20
    run("put", store, "t", "r", "f:a=1")
    run("put", store, "t", "r", "f:a=2")
    got = jsonl(run("get", store, "t", "r", "--versions", "5", "--json").stdout)[0]
    assert [c["value"] for c in got["f.a"]] == ["2"]


def test_drop_table_asks(flights):
    result = run("drop-table", flights, "flights", input="n\n", code=1)
    assert "Aborted" in result.stderr
    assert "flights" in run("tables", flights).stdout
    run("drop-table", flights, "flights", input="y\n")
    run("create-table", flights, "t", "-f", "f")
    run("drop-table", flights, "t", "--yes")
    assert jsonl(run("tables", flights, "--json").stdout) == []
    assert "no table" in error("drop-table", flights, "t", "--yes")


def test_reads_work_while_another_connection_writes(backend, flights):
    """Embedded: a connection holding the folder's write lock leaves the commands' reads
    working and makes their writes a clear error. Thrift: the gateway serves every client,
    writes included."""
    with hibase.connect(flights) as db:
        db.table("flights").put(b"w1", {b"f:dest": b"LAX"})
        assert "LAX" in run("get", flights, "flights", "w1").stdout
        assert len(jsonl(run("scan", flights, "flights", "--json").stdout)) == 5
        run("tables", flights)
        run("regions", flights, "flights")
        if backend.kind == "embedded":
            assert "another process" in error("put", flights, "flights", "k1", "f:dest=X")
        else:
            run("put", flights, "flights", "k1", "f:dest=X")
            assert db.table("flights").row(b"k1")[b"f:dest"] == b"X"


# -- load --------------------------------------------------------------------------------------

CALLS = """mdn,ts,delay,city
100,1,1.5,Paris
101,2,abc,Rome
,3,2.0,Oslo
103,4,,Nice
104,5,3.5,Lima,extra
105,6,4.5,Kyiv
"""


def _rows(store, table):
    """{rowkey: {family.qualifier: value}} from scan --json (the rowkey is each object's first
    key, under the table's rowkey name)."""
    return {key: dict(cells) for (_, key), *cells in
            (list(r.items()) for r in jsonl(run("scan", store, table, "--json").stdout))}


def test_load_csv_with_template_reports_bad_rows_and_loads_the_rest(store, tmp_path):
    path = tmp_path / "calls.csv"
    path.write_text(CALLS)
    run("create-table", store, "calls", "-f", "f", "-c", "f:delay=double")
    result = run("load", store, "calls", path, "--rowkey", "{mdn}:{ts}", "--progress", code=1)
    err = result.stderr
    assert err.strip().splitlines()[-1] == "Error: 3 row(s) rejected, 3 loaded (above)"
    assert "line 3: column 'f.delay'" in err and "abc" in err  # declared type
    assert "line 4: rowkey column 'mdn'" in err
    assert "line 6: 5 fields" in err
    assert "100%" in err  # the progress bar ran to the end of the file
    assert "Rows loaded: 3, rejected: 3" in err and "rows/s" in err
    rows = _rows(store, "calls")
    assert list(rows) == ["100:1", "103:4", "105:6"]
    assert rows["100:1"] == {"f.city": "Paris", "f.delay": 1.5, "f.mdn": "100", "f.ts": "1"}
    assert "f.delay" not in rows["103:4"]  # empty CSV field: no cell
    # ... so, as in Phoenix (empty string = NULL), = '' finds nothing and IS NULL finds it
    # f:city is not declared: a dynamic column names it (a bare f.city is ColumnNotFound)
    assert run("query", store, "SELECT * FROM calls (f.city VARCHAR) WHERE f.city = ''",
               "--json").stdout == ""
    found = jsonl(run("query", store, "SELECT * FROM calls WHERE f.delay IS NULL",
                      "--json").stdout)
    assert [r["ROWKEY"] for r in found] == ["103:4"]
    assert "f.x IS NULL, not with f.x = ''" in " ".join(run("load", "--help").stdout.split())


def test_load_csv_with_rowkey_column_map_and_create(store, tmp_path):
    path = tmp_path / "calls.csv"
    path.write_text("mdn,ts,city\n100,1,Paris\n101,2,Rome\n")
    result = run("load", store, "calls", path, "--rowkey-column", "mdn", "--family", "f",
                 "--map", "city=g:town", "--create", "--batch-size", "1")
    assert "Created table 'calls'" in result.stderr and "Rows loaded: 2, rejected: 0" in \
        result.stderr
    assert _rows(store, "calls") == {"100": {"f.ts": 1, "g.town": "Paris"},  # detected long
                                     "101": {"f.ts": 2, "g.town": "Rome"}}


def test_load_with_durability(tmp_path):
    """--durability fsync: the load's writes are fsynced (the folder's store; HBase's WAL
    durability is the cluster's, so a thrift:// store refuses it as a clear error)."""
    path = tmp_path / "calls.csv"
    path.write_text("mdn,ts\n100,1\n101,2\n")
    store = str(tmp_path / "store")
    run("load", store, "calls", path, "--rowkey-column", "mdn", "--family", "f", "--create",
        "--durability", "fsync")
    assert _rows(store, "calls") == {"100": {"f.ts": 1}, "101": {"f.ts": 2}}  # typed (long)
    result = run("load", store, "calls", path, "--rowkey-column", "mdn", "--durability",
                 "power", code=2)
    assert "'power' is not one of 'process', 'fsync'" in result.stderr
    message = error("load", "thrift://127.0.0.1:1", "calls", path, "--rowkey-column", "mdn",
                    "--durability", "fsync")
    assert "applies to the embedded store" in message


def test_load_strict_stops_at_the_bad_row(store, tmp_path):
    path = tmp_path / "calls.csv"
    path.write_text("id,delay\n" + "".join(f"r{i},{i}\n" for i in range(5)) + "r5,bad\n"
                    + "".join(f"r{i},{i}\n" for i in range(6, 9)))
    run("create-table", store, "calls", "-f", "f", "-c", "f:delay=double")
    result = run("load", store, "calls", path, "--rowkey-column", "id", "--strict",
                 "--batch-size", "2", "--no-progress", code=1)
    assert result.stderr.strip().splitlines()[-1].startswith("Error: line 7: column 'f.delay'")
    assert "Rows loaded: 5, rejected: 1" in result.stderr and "Traceback" not in result.output
    # every row before the bad one is written (the pending batch too), nothing after it
    assert list(_rows(store, "calls")) == [f"r{i}" for i in range(5)]


def test_load_jsonl(store, tmp_path):
    path = tmp_path / "flights.jsonl"
    path.write_text('{"id": "a", "n": 1, "d": 2.5, "o": {"x": [1]}, "z": null}\n\n'
                    'not json\n[1]\n{"id": "b", "n": "x"}\n{"n": 3}\n{"id": "c", "n": 7}\n')
    run("create-table", store, "j", "-f", "f", "-c", "f:n=long binary")
    result = run("load", store, "j", path, "--rowkey-column", "id", code=1)
    err = result.stderr
    assert "line 3: invalid JSON" in err and "line 4: expected a JSON object" in err
    assert "line 5: column 'f.n'" in err and "line 6: rowkey column 'id'" in err
    assert "Rows loaded: 2, rejected: 4" in err
    assert _rows(store, "j") == {"a": {"f.d": "2.5", "f.n": 1, "f.o": '{"x":[1]}'},
                                 "c": {"f.n": 7}}
    # JSON lines from stdin, with a template rowkey
    result = run("load", store, "j", "-", "--format", "jsonl", "--rowkey", "x-{id}",
                 input='{"id": "q", "n": 5}\n')
    assert "x-q" in _rows(store, "j")


def test_load_setup_errors(store, tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("id,v\n1,2\n")
    run("create-table", store, "t", "-f", "f", "-f", "g")
    assert "no table" in error("load", store, "nope", path, "--rowkey-column", "id")
    assert "not in the CSV header" in error("load", store, "t", path, "--rowkey", "{x}")
    assert "no family" in error("load", store, "t", path, "--rowkey-column", "id")
    assert "family" in error("load", store, "t", path, "--rowkey-column", "id", "-f", "zz")
    result = run("load", store, "t", path, code=2)
    assert "--rowkey" in result.stderr
    assert _rows(store, "t") == {}


# -- regions / split ---------------------------------------------------------------------------

def test_regions_and_split(backend, flights):
    regions = jsonl(run("regions", flights, "flights", "--json").stdout)
    assert len(regions) == 1 and regions[0]["start_key"] == "" and regions[0]["end_key"] == ""
    if backend.remote:  # Thrift1 has no split call: regions are HBase's to split
        if backend.kind == "hbase":  # a `hibase cluster`: `split` goes through its Admin API
            assert "2 regions" in run("split", flights, "flights", "--row", "k3").stderr
        else:  # hibase's gateway: no local cluster serves its URL
            assert "no split call" in error("split", flights, "flights", "--row", "k3")
            backend.split("flights", b"k3")
        regions = jsonl(run("regions", flights, "flights", "--json").stdout)
        assert [(r["start_key"], r["end_key"]) for r in regions] == [("", "k3"), ("k3", "")]
        return
    assert "2 regions" in run("split", flights, "flights", "--row", "k3").stderr
    regions = jsonl(run("regions", flights, "flights", "--json").stdout)
    assert [(r["start_key"], r["end_key"]) for r in regions] == [("", "k3"), ("k3", "")]
    assert "No region" in run("split", flights, "flights", "--row", "k3").stderr
    run("split", flights, "flights")
    regions = cells_of(run("regions", flights, "flights", "--csv").stdout)
    assert len(regions) == 4 and regions[-1]["end_key"] == ""
    assert [r["ROWKEY"] for r in jsonl(run("scan", flights, "flights", "--json").stdout)] == [
        "k1", "k2", "k3", "m1"]


def test_create_table_existing_records_an_hbase_table(thrift_backend):
    """`hibase create-table URL T --existing` records a table plain happybase made (issue 29)."""
    import happybase

    raw = happybase.Connection(*thrift_backend.address)
    raw.create_table("legacy", {"f": {}})
    raw.table("legacy").put(b"k1", {b"f:n": b"7"})
    raw.close()
    url = thrift_backend.url
    r = CliRunner().invoke(cli, ["create-table", url, "legacy", "-f", "f", "-c", "f:n=long",
                                 "--existing"])
    assert r.exit_code == 0, r.output
    assert "Recorded existing table 'legacy' (families: f)" in r.output
    r = CliRunner().invoke(cli, ["query", url, "SELECT COUNT(*) FROM legacy WHERE f.n > 5"])
    assert r.exit_code == 0 and "1" in r.output, r.output
    r = CliRunner().invoke(cli, ["create-table", url, "nosuch", "--existing"])
    assert r.exit_code == 1 and "HBase has no table 'nosuch'" in r.output
    r = CliRunner().invoke(cli, ["create-table", url, "legacy2"])
    assert r.exit_code == 2 and "-f FAMILY" in r.output
