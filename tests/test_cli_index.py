"""`hibase index ...`, `hibase query`, the bench group's wiring and the command tree, through
click's CliRunner; and the library's full_scan option they rely on. Commands on a store run on
both backends: the command line takes a thrift:// URL where it takes a folder."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from hibase.cli import cli
from hibase.index.spec import index_table

ROWS = {
    b"r1": {b"f:ip": b"10.0.0.1", b"f:port": b"443", b"f:url": b"http://a/x", b"f:n": b"1"},
    b"r2": {b"f:ip": b"10.0.0.1", b"f:port": b"80", b"f:url": b"http://a/y", b"f:n": b"2"},
    b"r3": {b"f:ip": b"10.0.0.2", b"f:port": b"443", b"f:url": b"http://b/x", b"f:n": b"3"},
    b"r4": {b"f:ip": b"10.0.0.3", b"f:port": b"22", b"f:n": b"4"},
    b"r\tx": {b"f:ip": b"10.0.0.1", b"f:port": b"8080", b"f:url": b"http://c/\x01"},
}


def run(*args, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr,
                                      result.exception)
    if code == 0:
        assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


def error(*args) -> str:
    """A command that must fail as one `Error: ...` line with exit code 1, no traceback."""
    result = run(*args, code=1)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def store(backend):
    """The store argument of the commands (a folder, or a thrift:// URL) of a store with table t
    (declared f:ip, f:port, f:url; undeclared f:n) and 5 rows."""
    with backend.connect() as db:
        db.create_table("t", {"f": {}}, columns={"f:ip": "string", "f:port": "int",
                                                 "f:url": "string"})
        t = db.table("t")
        for key, data in ROWS.items():
            t.put(key, data)
    return backend.url


# -- help ----------------------------------------------------------------------------------------

COMMANDS = [["index"], ["index", "create"], ["index", "list"], ["index", "drop"],
            ["index", "build"], ["index", "verify"], ["query"], ["demo"], ["bench"],
            ["bench", "store"], ["bench", "updates"], ["bench", "scbf"], ["bench", "query"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_new_command_has_help_with_an_example(command):
    out = run(*command, "--help").stdout
    assert "Example:" in out
    assert "hibase " + " ".join(command) in out.split("Example:", 1)[1]


# -- index create / list / query / verify / drop ---------------------------------------------

def test_index_lifecycle(store):
    res = run("index", "create", store, "t", "by_ip", "--column", "f:ip", "--cover", "f:port",
              "--no-progress")
    assert "Created index 'by_ip' on 't' (f:ip; covers f:port)" in res.stderr
    run("index", "create", store, "t", "by_ip_port", "-c", "f:ip,f:port", "--processes", "1")

    out = run("index", "list", store).stdout.splitlines()
    assert out[0].split() == ["table", "name", "kind", "columns", "types", "covering", "state",
                              "alias"]
    assert out[2].split()[:7] == ["t", "by_ip", "global", "f:ip", "string", "f:port", "ready"]
    assert out[3].split()[:6] == ["t", "by_ip_port", "global", "f:ip,f:port", "string,int",
                                  "ready"]
    listed = [json.loads(line) for line in run("index", "list", store, "t", "--json")
              .stdout.splitlines()]
    assert [d["name"] for d in listed] == ["by_ip", "by_ip_port"]
    assert listed[1]["columns"] == ["f:ip", "f:port"] and listed[0]["covering"] == ["f:port"]

    plan = run("query", store, "SELECT * FROM t WHERE f.ip = '10.0.0.1' AND f.port = 443",
               "--explain").stdout
    assert "INDEX by_ip_port" in plan
    assert plan == run("query", store, "explain SELECT * FROM t WHERE f.ip = '10.0.0.1' "
                                       "AND f.port = 443").stdout
    full = run("query", store, "SELECT * FROM t WHERE f.ip = '10.0.0.1'", "--explain",
               "--full-scan").stdout
    assert "FULL TABLE SCAN" in full

    res = run("index", "verify", store, "t", "by_ip")
    assert res.stdout.strip() == "index by_ip on t: 5 expected entries; OK"
    report = json.loads(run("index", "verify", store, "t", "by_ip_port", "--json").stdout)
    assert report["ok"] is True and report["entries"] == 5

    res = run("index", "build", store, "t", "by_ip", "--no-progress")
    assert "5 row(s) indexed, 3 distinct value(s)" in res.stderr

    run("index", "drop", store, "t", "by_ip")
    listed = run("index", "list", store, "--json").stdout.splitlines()
    assert [json.loads(x)["name"] for x in listed] == ["by_ip_port"]
    error("index", "verify", store, "t", "by_ip")


def test_index_create_uncovered(store):
    res = run("index", "create", store, "t", "by_port", "-c", "f:port", "--uncovered",
              "--no-progress")
    assert "Created index 'by_port' on 't' (f:port; uncovered)" in res.stderr
    listed = [json.loads(line) for line in run("index", "list", store, "t", "--json")
              .stdout.splitlines()]
    assert listed[0]["uncovered"] is True
    res = error("index", "create", store, "t", "by_ip", "-c", "f:ip", "--cover", "f:port",
                "--uncovered", "--no-progress")
    assert "uncovered: its entries carry no values" in res


def test_verify_reports_and_repairs_a_damaged_index(backend, store):
    run("index", "create", store, "t", "by_url", "-c", "f:url", "--no-progress")
    with backend.connect(cache_policy=None) as db:  # remove one entry behind its back
        key = next(k for k, _ in db.store.kv_scan(index_table("t")))
        db.store.commit([], [(index_table("t"), key, None)])
    res = run("index", "verify", store, "t", "by_url", code=1)
    assert "NOT OK: missing 1, extra 0" in res.stdout
    assert "run again with --repair" in res.stdout
    report = json.loads(run("index", "verify", store, "t", "by_url", "--repair",
                            "--json").stdout)
    assert report["missing"] == 1 and report["repaired"] is True and report["ok"] is False
    assert "OK" in run("index", "verify", store, "t", "by_url").stdout


# -- query output -------------------------------------------------------------------------------

def test_query_table_json_csv(store):
    run("index", "create", store, "t", "by_ip", "-c", "f:ip", "--no-progress")
    sql = "SELECT ROWKEY, f.port, f.url FROM t WHERE f.ip = '10.0.0.1'"
    res = run("query", store, sql)
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["ROWKEY", "f.port", "f.url"]
    body = [line.split() for line in lines[2:]]
    assert body == [["r\\tx", "8080", "http://c/\\x01"], ["r1", "443", "http://a/x"],
                    ["r2", "80", "http://a/y"]]  # rowkey order: b"\t" < b"1"
    assert res.stderr.startswith("3 row(s) in ")

    objs = [json.loads(x) for x in run("query", store, sql, "--json").stdout.splitlines()]
    assert objs[1] == {"ROWKEY": "r1", "f.port": 443, "f.url": "http://a/x"}
    assert objs[0]["ROWKEY"] == "r\\tx" and objs[0]["f.url"] == "http://c/\\x01"

    rows = list(csv.reader(io.StringIO(run("query", store, sql, "--csv").stdout)))
    assert rows[0] == ["ROWKEY", "f.port", "f.url"] and rows[3] == ["r2", "80", "http://a/y"]

    # SELECT *: declared columns in schema order, then the undeclared found; a missing cell
    # prints empty; --full-scan: same rows
    star = "SELECT * FROM t WHERE f.port <= 443 OR f.url IS NULL"
    rows = list(csv.reader(io.StringIO(run("query", store, star, "--csv").stdout)))
    assert rows[0] == ["ROWKEY", "f.ip", "f.port", "f.url", "f.n"]
    assert [r[0] for r in rows[1:]] == ["r1", "r2", "r3", "r4"]
    assert rows[4] == ["r4", "10.0.0.3", "22", "", "4"]
    assert run("query", store, star, "--csv", "--full-scan").stdout == \
        run("query", store, star, "--csv").stdout
    assert run("query", store, "SELECT * FROM t WHERE f.ip = 'none'").stderr.startswith(
        "0 row(s)")


def test_local_index_from_the_command_line(store):
    res = run("index", "create", store, "t", "loc_port", "-c", "f:port", "--local",
              "--no-progress")
    assert "Created local index 'loc_port'" in res.stderr
    listed = json.loads(run("index", "list", store, "t", "--json").stdout)
    assert listed["local"] is True and listed["state"] == "ready"
    sql = "SELECT f.ip FROM t WHERE f.port = 443"
    assert "LOCAL INDEX loc_port" in run("query", store, sql, "--explain").stdout
    assert run("query", store, sql, "--json").stdout == \
        run("query", store, sql, "--json", "--full-scan").stdout
    assert "OK" in run("index", "verify", store, "t", "loc_port").stdout


def test_query_range_method_walk_gives_the_same_rows(store):
    run("index", "create", store, "t", "by_port", "-c", "f:port", "--no-progress")
    sql = "SELECT f.port FROM t WHERE f.port BETWEEN 80 AND 443"
    assert "RANGE SCAN" in run("query", store, sql, "--explain").stdout
    assert "VALUE-TABLE WALK" in run("query", store, sql, "--explain",
                                     "--range-method", "walk").stdout
    assert run("query", store, sql, "--range-method", "walk", "--json").stdout == \
        run("query", store, sql, "--json").stdout


# -- errors: one line each ----------------------------------------------------------------------

def test_errors_are_one_line(store, tmp_path):
    assert "no table 'nope'" in error("index", "create", store, "nope", "i", "-c", "f:ip",
                                      "--no-progress")
    assert "only declared columns" in error("index", "create", store, "t", "i", "-c", "f:n",
                                            "--no-progress")
    run("index", "create", store, "t", "i", "-c", "f:ip", "--no-progress")
    assert "already exists" in error("index", "create", store, "t", "i", "-c", "f:url",
                                     "--no-progress")
    assert "no index 'zz'" in error("index", "drop", store, "t", "zz")
    assert "no index 'zz'" in error("index", "build", store, "t", "zz", "--no-progress")
    error("index", "list", store, "nope")
    error("index", "list", str(tmp_path / "missing"))
    error("query", store, "SELECT * FROM t WHERE f.ip = ")
    error("query", store, "SELECT * FROM nope WHERE f.ip = 'x'")
    error("query", store, "SELECT * FROM t WHERE g.x = 1")
    error("query", store, "SELECT * FROM t WHERE f.port = 'abc'")
    bad = run("index", "create", store, "t", "j", "-c", "ip", code=2)
    assert "family.qualifier" in bad.stderr
    run("index", "create", store, "t", "j", code=2)  # --column is required


# -- bench wiring -------------------------------------------------------------------------------

def test_bench_scbf_wiring(monkeypatch, tmp_path):
    from hibase_bench import scbf
    calls = []

    def fake_run(probes, seed):
        calls.append((probes, seed))
        return {"benchmark": "scbf", "probes": probes, "elapsed_s": 0.1,
                "findings": ["table 1: all four rows reproduced"]}

    monkeypatch.setattr(scbf, "run", fake_run)
    out = run("bench", "scbf", "--probes", "1234").stdout
    assert calls == [(1234, 1)]
    assert "- table 1: all four rows reproduced" in out
    report = json.loads(run("bench", "scbf", "--probes", "5", "--json").stdout)
    assert report["probes"] == 5
    dest = tmp_path / "scbf.json"
    out = run("bench", "scbf", "--output", dest).stdout
    assert json.loads(dest.read_text())["findings"] and f"full report: {dest}" in out


def test_bench_store_runs_at_tiny_size(tmp_path):
    dest = tmp_path / "store.json"
    out = run("bench", "store", "--rows", "200", "--reads", "20", "--no-progress",
              "--output", dest).stdout
    assert out.startswith("bench store: 200 telecom rows")
    assert "row() p50 µs" in out
    assert json.loads(dest.read_text())["rows"] == 200


# -- the command tree ---------------------------------------------------------------------------

def _walk(group, path=()):
    for name, command in sorted(group.commands.items()):
        yield path + (name,), command
        if hasattr(command, "commands"):
            yield from _walk(command, path + (name,))


def test_every_command_has_help_with_an_example():
    """Every command and subcommand answers --help (exit 0) and shows an Example block."""
    paths = [p for p, _ in _walk(cli)]
    assert ("bench", "cache") in paths and ("index", "create") in paths and ("serve",) in paths
    for path, _ in _walk(cli):
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Example" in result.output, path


def test_cli_package_modules_do_not_import_each_other_in_a_circle():
    """The command modules import only `base` from the package (no module imports back up)."""
    import ast
    import pathlib

    import hibase.cli
    folder = pathlib.Path(hibase.cli.__file__).parent
    for path in folder.glob("*.py"):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text())
        siblings = {n.module for n in ast.walk(tree)
                    if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module}
        assert siblings <= {"base"}, (path.name, siblings)


# -- the library option the demo and `query --full-scan` use --------------------------------------

def test_full_scan_option_returns_the_same_rows(backend, store):
    with backend.connect() as db:
        db.create_index("t", "by_ip", ["f:ip"])
        sql = "SELECT f.port FROM t WHERE f.ip = '10.0.0.1' OR ROWKEY = 'r3'"
        assert db.sql(sql, full_scan=True) == db.sql(sql)
        assert len(db.sql(sql)) == 4
        assert "FULL TABLE SCAN" in db.explain(sql, full_scan=True)
        assert "FULL TABLE SCAN" not in db.explain(sql)
        t = db.table("t")
        cond = "f.ip = '10.0.0.1'"
        assert list(t.where(cond, full_scan=True)) == list(t.where(cond))
        assert "full scan forced" in t.explain(cond, full_scan=True)


# -- library fix found while benchmarking: no redundant lookups in an intersection -------------

def test_intersection_reads_each_answered_column_once(backend):
    path = backend.url
    with backend.connect() as db:
        db.create_table("t", {"f": {}}, columns={"f:ip": "string", "f:port": "int",
                                                 "f:url": "string"})
        with db.table("t").batch() as b:
            for i in range(300):
                b.put(b"r%03d" % i, {b"f:ip": b"A" if i < 200 else b"B",  # url is rarer
                                     b"f:port": b"%d" % (i % 7),
                                     b"f:url": b"U" if i % 2 else b"V"})
        for name, cols in (("by_ip", ["f:ip"]), ("by_ip_port", ["f:ip", "f:port"]),
                           ("by_url", ["f:url"])):
            db.create_index("t", name, cols)
    sql = "SELECT * FROM t WHERE f.ip = 'A' AND f.url = 'U'"
    plan = run("query", path, sql, "--explain").stdout
    assert "INTERSECT" in plan and plan.count("INDEX ") == 2, plan  # not by_ip and by_ip_port
    assert "by_url" in plan
    rows = run("query", path, sql, "--csv").stdout
    assert rows == run("query", path, sql, "--csv", "--full-scan").stdout
    assert len(rows.splitlines()) == 1 + 100


def test_query_with_a_shared_redis_cache(backend):
    """`hibase query --cache redis://...` answers through the shared hot cache."""
    import redis as redis_client
    from servers import start_redis

    server = start_redis()
    try:
        store = backend.url
        db = backend.connect(cache_policy=None)
        db.create_table("t", {"f": {}}, columns={"f:a": "int"})
        t = db.table("t")
        for i in range(20):
            t.put(b"r%02d" % i, {b"f:a": str(i % 4).encode()})
        db.create_index("t", "ia", ["f:a"])
        db.close()
        runner = CliRunner()
        for _ in range(2):
            result = runner.invoke(cli, ["query", store, "SELECT * FROM t WHERE f.a = 2",
                                         "--json", "--cache", server.url])
            assert result.exit_code == 0, result.output
            assert result.output.count('"ROWKEY"') == 5
        keys = redis_client.Redis.from_url(server.url).keys("*")
        assert keys, "the query's index set was stored in Redis"
        bad = runner.invoke(cli, ["query", store, "SELECT * FROM t", "--cache", "bogus://x"])
        assert bad.exit_code == 1 and "Error:" in bad.output
    finally:
        server.close()
