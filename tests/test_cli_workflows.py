"""The command line's workflows as a newcomer meets them (issue 27): opening stores, loads,
messages, JSON output, delete/dump/restore, extras checked first (CliRunner, and subprocesses
where pipes and terminals matter)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

import hibase
from hibase.cli import cli

HIBASE = [sys.executable, "-m", "hibase"]


def run(*args, input=None, code=0, env=None):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, env=env)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr,
                                      result.exception)
    return result


def error(*args, code=1, input=None) -> str:
    """A command failing as one `Error: ...` line, no traceback."""
    result = run(*args, code=code, input=input)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# -- opening a store -------------------------------------------------------------------------

READERS = [(["tables"], []), (["check"], []), (["query"], ["SELECT * FROM t"]),
           (["scan"], ["t"]), (["get"], ["t", "k"]), (["index", "list"], []),
           (["regions"], ["t"])]


@pytest.mark.parametrize("kind", ["empty", "other", "missing"])
@pytest.mark.parametrize("command", READERS, ids=lambda c: " ".join(c[0]))
def test_not_a_store_is_one_line_and_writes_nothing(tmp_path, kind, command):
    folder = tmp_path / "f"
    if kind != "missing":
        folder.mkdir()
    if kind == "other":
        (folder / "notes.txt").write_text("hello")
    before = sorted(os.listdir(folder)) if folder.exists() else None
    line = error(*command[0], folder, *command[1])
    assert "is not a hibase store" in line and "CURRENT" not in line
    assert (sorted(os.listdir(folder)) if folder.exists() else None) == before


def test_a_locked_store_names_the_writer_relative_or_absolute(tmp_path):
    folder = tmp_path / "f1"
    run("create-table", folder, "t", "-f", "f")
    db = hibase.connect(str(folder))  # this process writes; the CLI runs in another one
    try:
        for path in ("f1", str(folder)):
            got = subprocess.run(HIBASE + ["put", path, "t", "k", "f:a=1"], cwd=tmp_path,
                                 capture_output=True, text=True)
            assert got.returncode == 1
            assert got.stderr.strip() == (
                f"Error: store {path!r} is locked by another process (pid {os.getpid()}): "
                "stop it first; reading commands (query, scan, get, tables, check) work "
                "alongside it"), got.stderr
        got = subprocess.run(HIBASE + ["tables", "f1"], cwd=tmp_path, capture_output=True,
                             text=True)
        assert got.returncode == 0 and "t" in got.stdout  # readers work alongside
    finally:
        db.close()


# -- load ------------------------------------------------------------------------------------

def _csv(path, rows, header="id,n,name"):
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows))
    return path


@pytest.fixture
def half_bad(tmp_path):
    """5,000 rows, every other one with a non-number in the long column n."""
    return _csv(tmp_path / "half.csv",
                [f"k{i},{i if i % 2 else 'x' + str(i)},n{i}" for i in range(5000)])


def test_rejected_rows_exit_1_show_20_and_keep_all_with_errors(tmp_path, half_bad):
    store = tmp_path / "d"
    run("create-table", store, "t", "-f", "f", "-c", "f:n=long")
    result = run("load", store, "t", half_bad, "--rowkey-column", "id", code=1)
    lines = result.stderr.strip().splitlines()
    assert [ln for ln in lines if ln.startswith("line ")] == lines[:20]
    assert lines[0] == "line 2: column 'f.n': invalid BIGINT value 'x0': not a decimal integer"
    assert lines[20].startswith("Rows loaded: 2500, rejected: 2500, ")
    assert lines[21] == ("Error: 2500 row(s) rejected, 2500 loaded; the first 20 above, "
                         "--errors FILE keeps them all")
    assert len(lines) == 22
    bad = tmp_path / "bad.txt"
    result = run("load", store, "t", half_bad, "--rowkey-column", "id", "--errors", bad, code=1)
    kept = bad.read_text().splitlines()
    assert len(kept) == 2500
    assert kept[0] == "2\tcolumn 'f.n': invalid BIGINT value 'x0': not a decimal integer"
    assert kept[-1].startswith("5000\t")
    assert result.stderr.strip().splitlines()[-1].endswith(f"every one in {bad}")
    assert run("query", store, "SELECT COUNT(*) FROM t").stdout.split()[-1] == "2500"


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ""])
def test_compressed_inputs_by_extension_or_magic(tmp_path, suffix):
    import bz2
    import gzip
    import lzma
    text = "id,n\na,1\nb,2\n".encode()
    if suffix:
        compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
        # by extension, and the same bytes under a plain .csv name (by magic)
        for name in (f"in.csv{suffix}", "misnamed.csv"):
            (tmp_path / name).write_bytes(compress(text))
    else:
        (tmp_path / "in.csv").write_bytes(text)
    for name in ([f"in.csv{suffix}", "misnamed.csv"] if suffix else ["in.csv"]):
        store = tmp_path / f"s{name}"
        run("load", store, "t", tmp_path / name, "--rowkey-column", "id", "-f", "f", "--create")
        assert json.loads(run("get", store, "t", "b", "--json").stdout) == {
            "ROWKEY": "b", "f.n": 2}


def test_jsonl_gz_is_json_lines(tmp_path):
    import gzip
    (tmp_path / "in.jsonl.gz").write_bytes(gzip.compress(b'{"id": "a", "n": 1}\n'))
    run("load", tmp_path / "s", "t", tmp_path / "in.jsonl.gz", "--rowkey-column", "id", "-f",
        "f", "--create")
    assert "a" in run("scan", tmp_path / "s", "t").stdout


@pytest.mark.parametrize("content", [bytes(range(256)) * 20,
                                     bytes(b % 255 + 1 for b in os.urandom(4000))],
                         ids=["with-nul", "no-nul"])
def test_a_binary_file_is_refused_before_anything_is_created(tmp_path, content):
    (tmp_path / "rand.bin").write_bytes(content)
    line = error("load", tmp_path / "s", "t", tmp_path / "rand.bin", "--rowkey-auto", "-f", "f",
                 "--create")
    assert "is not a CSV or JSON-lines text file" in line and "\\udc" not in line
    assert not (tmp_path / "s").exists()


def test_utf16_is_named(tmp_path):
    (tmp_path / "u16.csv").write_bytes("id,n\na,1\n".encode("utf-16"))
    assert "UTF-16" in error("load", tmp_path / "s", "t", tmp_path / "u16.csv",
                             "--rowkey-column", "id", "-f", "f", "--create")


def test_a_corrupt_gzip_is_one_line(tmp_path):
    import gzip
    data = gzip.compress(b"id,n\n" + b"".join(b"k%d,%d\n" % (i, i) for i in range(20000)))
    (tmp_path / "cut.csv.gz").write_bytes(data[:len(data) // 2])
    result = run("load", tmp_path / "s", "t", tmp_path / "cut.csv.gz", "--rowkey-column", "id",
                 "-f", "f", "--create", "--no-detect", code=1)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ") and "cannot read" in last and "end-of-stream" in last
    assert "Traceback" not in result.output


def test_bulk_timing_includes_the_index_rebuild(tmp_path):
    store = tmp_path / "d"
    path = _csv(tmp_path / "in.csv", [f"k{i},{i},n{i}" for i in range(3000)])
    run("create-table", store, "t", "-f", "f", "-c", "f:n=long")
    run("index", "create", store, "t", "by_n", "-c", "f:n")
    result = run("load", store, "t", path, "--rowkey-column", "id", "--bulk")
    last = result.stderr.strip().splitlines()[-1]
    import re
    m = re.fullmatch(r"Rows loaded: 3000, rejected: 0, ([\d.]+) s \(load ([\d.]+) s, index "
                     r"rebuild ([\d.]+) s\), (\d+) rows/s", last)
    assert m, last
    total, load_s, rebuild_s, rate = map(float, m.groups())
    assert abs(total - load_s - rebuild_s) < 0.02  # each printed rounded to 0.01 s
    assert abs(rate * total - 3000) <= 3000 * 0.01 / total + 1


@pytest.mark.parametrize("kind", ["row", "uuid", "ulid"])
def test_rowkey_auto_for_a_file_with_no_key_column(tmp_path, kind):
    path = _csv(tmp_path / "nokey.csv", ["1,x", "2,y", "3,z"], header="a,b")
    args = ["--rowkey-auto"] + ([] if kind == "row" else [kind])
    run("load", tmp_path / "s", "t", path, *args, "-f", "f", "--create")
    rows = [json.loads(x) for x in run("scan", tmp_path / "s", "t", "--json").stdout.splitlines()]
    got = [r["f.a"] for r in rows]
    assert got == [1, 2, 3] if kind != "uuid" else sorted(got) == [1, 2, 3]  # file order
    keys = [r["ROWKEY"] for r in rows]
    if kind == "row":
        assert keys == ["000000000001", "000000000002", "000000000003"]
    else:
        assert len(set(keys)) == 3 and {len(k) for k in keys} == {36 if kind == "uuid" else 26}
    if kind == "row":  # again: the same rows, not three more
        run("load", tmp_path / "s", "t", path, "--rowkey-auto", "-f", "f")
        assert run("query", tmp_path / "s", "SELECT COUNT(*) FROM t").stdout.split()[-1] == "3"


def _in_pty(argv, cwd, input=None):
    """Run argv with stdin, stdout and stderr on a pseudo-terminal of 100 x 30 characters;
    (exit code, everything it wrote)."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    out = bytearray()
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: the child side closed
            break
        if not data:
            break
        out.extend(data)
    os.close(master)
    return proc.wait(timeout=120), out.decode("utf-8", "replace")


def test_progress_bars_on_a_terminal_only(tmp_path):
    path = _csv(tmp_path / "in.csv", [f"k{i},{i},n{i}" for i in range(20000)])
    got = subprocess.run(HIBASE + ["load", "s1", "t", str(path), "--rowkey-column", "id", "-f",
                                   "f", "--create"], cwd=tmp_path, capture_output=True,
                         text=True)
    assert got.returncode == 0, got.stderr
    assert "\r" not in got.stderr and "it/s" not in got.stderr and "B/s" not in got.stderr
    assert got.stderr.splitlines()[-1].startswith("Rows loaded: 20000")
    code, out = _in_pty(HIBASE + ["load", "s2", "t", str(path), "--rowkey-column", "id", "-f",
                                  "f", "--create"], tmp_path)
    assert code == 0 and "load t" in out and "\r" in out, out
    forced = subprocess.run(HIBASE + ["load", "s1", "t", str(path), "--rowkey-column", "id",
                                      "--progress"], cwd=tmp_path, capture_output=True, text=True)
    assert "load t" in forced.stderr


# -- messages --------------------------------------------------------------------------------

def test_messages_show_sql_literals_and_sql_type_names(tmp_path):
    s = tmp_path / "s"
    run("create-table", s, "t", "-f", "f", "-c", "f:n=long", "-c", "f:x=double",
        "-c", "f:s=string")
    assert error("put", s, "t", "k", "f:x=abc") == \
        "Error: column 'f.x': invalid DOUBLE value 'abc': not a number"
    assert error("put", s, "t", "k", "f:n=a\\xffb") == \
        "Error: column 'f.n': invalid BIGINT value X'61FF62': not a decimal integer"
    assert error("query", s, "SELECT * FROM t WHERE f.n = 'x'") == \
        "Error: invalid BIGINT value 'x': a VARCHAR literal cannot be compared with it"
    assert error("query", s, "SELECT * FROM t WHERE f.s = 1") == \
        "Error: invalid VARCHAR value 1: an integer literal cannot be compared with it"
    for line in (error("put", s, "t", "k", "f:x=abc"),
                 error("query", s, "SELECT * FROM t WHERE f.n = 'x'")):
        assert "b'" not in line and " str " not in line and " int " not in line


def test_an_unknown_statement_word_is_named(tmp_path):
    s = tmp_path / "s"
    run("create-table", s, "t", "-f", "f")
    assert error("query", s, "SELEC * FROM t") == \
        "Error: unknown statement 'SELEC'; did you mean SELECT? (at position 0)"
    assert error("query", s, "foo") == \
        "Error: unknown statement 'foo'; queries start with SELECT (at position 0)"
    assert "0 row(s)" in run("query", s, "DELETE FROM t").output  # DML is SQL too (issue 28)


# -- --json, NULLs, escapes, missing rows, pipes -------------------------------------------------

@pytest.fixture
def typed(tmp_path):
    s = tmp_path / "s"
    run("create-table", s, "t", "-f", "f", "-c", "f:n=long", "-c", "f:x=double",
        "-c", "f:s=string", "-c", "f:b=long binary")
    run("put", s, "t", "k1", "f:n=42", "f:s=a\\\\b", "f:b=7", "f:u=raw\\x00")
    run("put", s, "t", "k2", "f:x=1.5")
    return s


def test_json_values_are_typed_with_one_escaping_rule_and_nulls(typed):
    k1 = {"ROWKEY": "k1", "f.b": 7, "f.n": 42, "f.s": "a\\\\b", "f.u": "raw\\x00"}
    assert [json.loads(x) for x in run("scan", typed, "t", "--json").stdout.splitlines()] == [
        k1, {"ROWKEY": "k2", "f.x": 1.5}]
    assert json.loads(run("get", typed, "t", "k1", "--json").stdout) == k1
    got = [json.loads(x) for x in run("query", typed, "SELECT ROWKEY, f.n, f.s, f.x FROM t",
                                      "--json").stdout.splitlines()]
    assert got == [{"ROWKEY": "k1", "f.n": 42, "f.s": "a\\\\b", "f.x": None},
                   {"ROWKEY": "k2", "f.n": None, "f.s": None, "f.x": 1.5}]
    groups = [json.loads(x) for x in run("query", typed, "SELECT f.s, COUNT(*), MAX(f.n) FROM t "
                                         "GROUP BY f.s", "--json").stdout.splitlines()]
    assert groups == [{"f.s": None, "COUNT(*)": 1, "MAX(f.n)": None},
                      {"f.s": "a\\\\b", "COUNT(*)": 1, "MAX(f.n)": 42}]
    # the same backslash in the table output of a plain query and of GROUP BY
    plain = run("query", typed, "SELECT f.s FROM t WHERE ROWKEY = 'k1'").stdout
    grouped = run("query", typed, "SELECT f.s, COUNT(*) FROM t GROUP BY f.s").stdout
    assert "a\\\\b" in plain.split() and "a\\\\b" in grouped.split()
    # NULL: empty in table and CSV, for plain and aggregate rows alike
    csv_rows = run("query", typed, "SELECT ROWKEY, f.n FROM t", "--csv").stdout.splitlines()
    assert csv_rows == ["ROWKEY,f.n", "k1,42", "k2,"]
    assert run("query", typed, "SELECT f.s, COUNT(*) FROM t GROUP BY f.s",
               "--csv").stdout.splitlines() == ["f.s,COUNT(*)", ",1", "a\\\\b,1"]


def test_get_of_a_missing_row_exits_1(typed):
    for fmt in ("--table", "--json", "--csv"):
        assert error("get", typed, "t", "nosuchrow", fmt) == \
            "Error: no row 'nosuchrow' in table 't'"


@pytest.mark.parametrize("command", [["query", "s", "SELECT * FROM t"], ["scan", "s", "t"],
                                     ["scan", "s", "t", "--json"], ["tables", "s"]])
def test_a_closed_pipe_or_stdout_is_a_clean_exit(tmp_path, command):
    path = _csv(tmp_path / "in.csv", [f"k{i},{i},n{i}" for i in range(30000)])
    run("load", tmp_path / "s", "t", path, "--rowkey-column", "id", "-f", "f", "--create")
    shell = " ".join(map(shlex.quote, HIBASE + command))
    got = subprocess.run(["bash", "-c", f"set -o pipefail; {shell} | head -1"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert got.returncode == 0 and got.stderr.count("Error") == 0, got.stderr
    assert "Traceback" not in got.stderr and "Exception ignored" not in got.stderr
    got = subprocess.run(["bash", "-c", f"{shell} >&-"], cwd=tmp_path, capture_output=True,
                         text=True)
    assert got.returncode == 0 and "Traceback" not in got.stderr, got.stderr


# -- delete, dump / restore, wide CSV ----------------------------------------------------------

def test_delete_a_row_or_columns(typed):
    assert run("delete", typed, "t", "k1", "f:s", "f:u").stderr.strip() == \
        "Deleted columns f:s, f:u of row 'k1' of 't'."
    assert json.loads(run("get", typed, "t", "k1", "--json").stdout) == {
        "ROWKEY": "k1", "f.b": 7, "f.n": 42}
    run("delete", typed, "t", "k1")
    assert error("get", typed, "t", "k1") == "Error: no row 'k1' in table 't'"
    assert error("delete", typed, "t", "k1") == "Error: no row 'k1' in table 't'"
    assert error("delete", typed, "t", "k2", "f:s") == \
        "Error: row 'k2' of 't' has none of the columns f:s"


def test_scan_csv_wide_is_one_row_per_line(typed):
    lines = run("scan", typed, "t", "--csv", "--wide").stdout.splitlines()
    assert lines == ["ROWKEY,f.b,f.n,f.s,f.u,f.x", "k1,7,42,a\\\\b,raw\\x00,", "k2,,,,,1.5"]
    assert run("scan", typed, "t", "--csv", "--wide", "-c", "f:x,f:n").stdout.splitlines() == [
        "ROWKEY,f.x,f.n", "k1,,42", "k2,1.5,"]


def _cells(path):
    """Every table's schema, index definitions and every kept version of every cell."""
    with hibase.connect(str(path), read_only=True) as db:
        out = {}
        for name in db.tables():
            t = db.table(name)
            doc = t.schema.to_json()
            doc["indexes"] = sorted((d["name"], tuple(d["columns"]), tuple(d["covering"]),
                                     d["state"]) for d in db.indexes(name))
            doc["rows"] = {key: t._store.read_row(t._name, key, None, None, 1 << 31)
                           for key, _ in t.scan()}
            out[name] = doc
        return out


def test_dump_restore_round_trip_with_indexes_and_versions(typed, tmp_path):
    run("put", typed, "t", "k1", "f:n=43")  # a second version
    run("index", "create", typed, "t", "by_n", "-c", "f:n", "--cover", "f:s")
    run("create-table", typed, "u", "-f", "a:max_versions=1,compression=ZSTD,time_to_live=86400",
        "-f", "b:max_versions=5", "--split-size", "1M")
    run("put", typed, "u", "\\x00\\xff", "a:q=\\x01", "b:\\xfe=")
    dumped = run("dump", typed).stdout
    assert dumped.splitlines()[0] == '{"hibase_dump":1}'
    (tmp_path / "all.hdump").write_text(dumped)
    run("restore", tmp_path / "copy", tmp_path / "all.hdump")
    assert _cells(tmp_path / "copy") == _cells(typed)
    plan = run("query", tmp_path / "copy", "EXPLAIN SELECT * FROM t WHERE f.n = 43").stdout
    assert "by_n" in plan
    # one table, through a pipe, gzip-compressed
    import gzip
    (tmp_path / "u.hdump.gz").write_bytes(gzip.compress(run("dump", typed, "u").stdout.encode()))
    run("restore", tmp_path / "copy2", "-", input=(tmp_path / "u.hdump.gz").read_bytes())
    assert _cells(tmp_path / "copy2") == {b"u": _cells(typed)[b"u"]}
    # refused: a table that exists, a cut dump, not a dump
    assert "table 'u' exists" in error("restore", tmp_path / "copy2", tmp_path / "all.hdump")
    (tmp_path / "cut.hdump").write_text("\n".join(dumped.splitlines()[:-1]) + "\n")
    assert "cut short" in error("restore", tmp_path / "copy3", tmp_path / "cut.hdump")
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    assert "not a hibase dump" in error("restore", tmp_path / "copy4", tmp_path / "x.csv")
    assert "no table 'nope'" in error("dump", typed, "nope")


_binary = st.binary(min_size=0, max_size=12)
_versions = st.lists(st.tuples(st.integers(1, 2**40), _binary), min_size=1, max_size=3,
                     unique_by=lambda v: v[0])


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.dictionaries(st.binary(min_size=1, max_size=10),
                            st.dictionaries(st.tuples(st.sampled_from([b"a", b"b"]), _binary)
                                            .filter(lambda fq: fq != (b"a", b"n")),  # typed
                                            _versions, min_size=1, max_size=4),
                            min_size=1, max_size=8),
       numbers=st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=5))
def test_dump_restore_is_lossless_for_random_binary_data(tmp_path_factory, rows, numbers):
    base = tmp_path_factory.mktemp("rt")
    db = hibase.connect(str(base / "src"))
    try:
        db.create_table("r", {"a": {"max_versions": 3}, "b": {"max_versions": 1}},
                        columns={"a:n": "long binary"})
        t = db.table("r")
        for key, cells in rows.items():
            for (fam, qual), versions in cells.items():
                kept = sorted(versions)[-1:] if fam == b"b" else versions
                for ts, value in kept:
                    t.put(key, {fam + b":" + qual: value}, timestamp=ts)
        for i, n in enumerate(numbers):
            t.put(b"n%d" % i, {b"a:n": n.to_bytes(8, "big", signed=True)}, timestamp=1000 + i)
        db.create_index("r", "by_n", ["a:n"])
    finally:
        db.close()
    (base / "d.hdump").write_text(run("dump", base / "src").stdout, encoding="utf-8")
    run("restore", base / "dst", base / "d.hdump")
    assert _cells(base / "dst") == _cells(base / "src")


# -- the gateway serves the catalog the command line wrote --------------------------------------

class _Served:
    """`hibase serve --thrift DIR --port 0` in a subprocess; .url is its thrift:// URL."""

    def __init__(self, folder, cwd):
        self.proc = subprocess.Popen(HIBASE + ["serve", "--thrift", str(folder), "--port", "0"],
                                     cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        assert "Serving" in line, (line, self.proc.stderr.read() if self.proc.poll() else "")
        port = line.split(" on ")[1].split()[0].rsplit(":", 1)[1]
        self.url = f"thrift://127.0.0.1:{port}?timeout=20000&catalog_lease_ms=0"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        assert "Stopped; store closed." in self.proc.stderr.read()


def test_the_gateway_serves_the_catalog_the_cli_wrote(tmp_path):
    folder = tmp_path / "data"
    path = _csv(tmp_path / "flights.csv", ["k1,IAH,12.5", "k2,SFO,-3", "k3,IAH,40"],
                header="id,dest,delay")
    run("load", folder, "flights", path, "--rowkey-column", "id", "-f", "f", "--create")
    run("index", "create", folder, "flights", "by_dest", "-c", "f:dest")
    served = _Served(folder, tmp_path)
    try:
        url = served.url
        tables = run("tables", url, "--json").stdout
        assert json.loads(tables)["columns"] == {"f:dest": "string", "f:delay": "double"}
        got = run("query", url, "SELECT ROWKEY, f.delay FROM flights WHERE f.delay > 10",
                  "--json")
        assert [json.loads(x) for x in got.stdout.splitlines()] == [
            {"ROWKEY": "k1", "f.delay": 12.5}, {"ROWKEY": "k3", "f.delay": 40}]
        assert run("index", "list", url).stdout.splitlines()[2:] == []  # the folder's own
        # as docs/hbase.md's Cluster section: an index made through the URL, used and verified
        run("index", "create", url, "flights", "by_dest", "-c", "f:dest", "--no-progress")
        assert "by_dest" in run("query", url, "--explain",
                                "SELECT * FROM flights WHERE f.dest = 'IAH'").stdout
        assert run("query", url, "SELECT COUNT(*) FROM flights WHERE f.dest = 'IAH'",
                   "--csv").stdout.splitlines() == ["COUNT(*)", "2"]
        assert "OK" in run("index", "verify", url, "flights", "by_dest", "--repair").stdout
        run("put", url, "flights", "k4", "f:dest=IAH", "f:delay=1")
        assert json.loads(run("get", url, "flights", "k4", "--json").stdout) == {
            "ROWKEY": "k4", "f.dest": "IAH", "f.delay": 1}
        run("delete", url, "flights", "k4")
        assert len(run("scan", url, "flights", "--json").stdout.splitlines()) == 3
        assert '"table":"flights"' in run("dump", url).stdout
    finally:
        served.stop()
    # the folder again: its index stayed exact through the gateway's writes, the catalog table
    # is not listed as one of the user's
    assert "OK" in run("index", "verify", folder, "flights", "by_dest").stdout
    assert [json.loads(x)["table"] for x in run("tables", folder, "--json").stdout.splitlines()
            if not json.loads(x)["table"].startswith("hibase_")] == ["flights"]
    assert "hibase_meta" not in run("tables", folder).stdout
    # a change made on the folder while the gateway was down is published at the next start
    run("alter-table", folder, "flights", "-c", "f:dest=VARCHAR", "-c", "f:extra=long")
    served = _Served(folder, tmp_path)
    try:
        assert json.loads(run("tables", served.url, "--json").stdout)["columns"]["f:extra"] == \
            "long"
    finally:
        served.stop()


# -- extras and servers checked first -------------------------------------------------------------

def test_bench_paper_without_matplotlib_says_so_at_once(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    line = error("bench", "paper", "--scale", "smoke", "--out", tmp_path / "out")
    assert line == "Error: hibase bench paper needs matplotlib: pip install 'hibase[bench]'"
    assert not (tmp_path / "out").exists()  # refused before any work


def test_cluster_start_without_redis_server_stops_before_hbase(tmp_path, monkeypatch):
    from hibase.cluster import HBaseCluster, local
    started = []
    monkeypatch.setattr(local, "find_redis_server", lambda: None)
    monkeypatch.setattr(HBaseCluster, "start", lambda self, **kw: started.append(kw) or self)
    line = error("cluster", "start", tmp_path / "c")
    assert "redis-server is not installed" in line and "--redis-nodes 0" in line
    assert started == []
    # without cache nodes it goes on; off a terminal, no progress (no "waiting for HBase" lines)
    monkeypatch.setattr(HBaseCluster, "urls", property(lambda self: ["thrift://x", "zk://y"]),
                        raising=False)
    run("cluster", "start", tmp_path / "c", "--redis-nodes", "0")
    assert started == [{"timeout": 300, "progress": False}]
    run("cluster", "start", tmp_path / "c", "--redis-nodes", "0", "--progress")
    assert started[-1]["progress"] is True


def test_hbase_cluster_start_checks_redis_before_hbase(tmp_path, monkeypatch):
    from hibase.cluster import HBaseCluster, hbase as hb
    from hibase.cluster.local import ServerMissing
    monkeypatch.setattr(hb, "find_redis_server", lambda: None)
    monkeypatch.setattr(hb, "classpath", lambda *a: pytest.fail("HBase was started"))
    with pytest.raises(ServerMissing, match="redis-server is not installed"):
        HBaseCluster(str(tmp_path / "c"), redis_nodes=1).start()


def test_cluster_help_names_the_thrift2_server():
    text = " ".join(run("cluster", "--help").stdout.split())
    assert "Thrift2 server" in text and "status" in text


# -- the first ten minutes -------------------------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _walkthrough() -> str:
    """The sh block under the guide's "The first ten minutes" (docs/guide.md)."""
    text = open(os.path.join(ROOT, "docs", "guide.md"), encoding="utf-8").read()
    section = text[text.index("### The first ten minutes"):]
    block = section[section.index("```sh\n") + 6:]
    return block[:block.index("```")]


def _newcomer_files(folder):
    import gzip
    import random
    rng = random.Random(27)
    lines = ["id,dest,delay,carrier"]
    for i in range(5000):
        delay = "abc" if i % 500 == 7 else f"{rng.uniform(-10, 60):.1f}"
        lines.append(f"k{i},{rng.choice(['IAH', 'SFO', 'JFK', 'ORD'])},{delay},"
                     f"{rng.choice(['UA', 'AA', 'DL'])}")
    (folder / "flights.csv").write_text("\n".join(lines) + "\n")
    (folder / "flights.csv.gz").write_bytes(gzip.compress((folder / "flights.csv").read_bytes()))
    (folder / "events.csv").write_text("kind,value\n" + "".join(
        f"{rng.choice(['click', 'view'])},{i}\n" for i in range(300)))


@pytest.mark.slow
def test_the_first_ten_minutes_in_a_fresh_venv(tmp_path, base_install):
    """`pip install .` into a fresh venv (conftest's base_install, shared with
    test_packaging), then the guide's walkthrough as one script (marked slow: still in the default
    run, `-m "not slow"` leaves it out). It needs the package index or pip's cache."""
    venv = base_install
    work = tmp_path / "work"
    work.mkdir()
    _newcomer_files(work)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    script = "set -e -o pipefail\n" + _walkthrough()
    got = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                         text=True, timeout=600)
    assert got.returncode == 0, (got.stdout[-3000:], got.stderr[-3000:])
    assert "Traceback" not in got.stderr
    out, err = got.stdout, got.stderr
    assert "exit 1: some rows were rejected" in out and "exit 1: no such row" in out
    assert "exit 1: gzip read as is, 10 rows rejected again" in out
    assert len((work / "rejected.txt").read_text().splitlines()) == 10
    assert "Error: 10 row(s) rejected, 4990 loaded; every one in rejected.txt" in err
    assert "Detected types: e.kind=string, e.value=long" in err
    assert "INDEX by_dest" in out
    assert '"f.delay": ' in out and '"f.delay": "' not in out  # typed JSON
    assert "ROWKEY,e.kind,e.value\n000000000001,click," in out or \
        "ROWKEY,e.kind,e.value\n000000000001,view," in out
    assert "Error: no row 'k2' in table 'flights'" in err
    assert out.count(": OK") >= 2  # check data, check copy
    tables = out[out.rindex("table "):].splitlines()
    assert [t.split()[0] for t in tables[2:]] == ["events", "flights", "flights2"]


def test_delete_get_wide_and_typed_json_on_every_backend(backend):
    """The same commands on the embedded store and through a thrift:// URL."""
    s = backend.url
    run("create-table", s, "t", "-f", "f", "-c", "f:n=long", "-c", "f:x=double")
    run("put", s, "t", "k1", "f:n=42", "f:u=a\\\\b")
    run("put", s, "t", "k2", "f:x=2.5")
    assert run("scan", s, "t", "--csv", "--wide").stdout.splitlines() == [
        "ROWKEY,f.n,f.u,f.x", "k1,42,a\\\\b,", "k2,,,2.5"]
    assert json.loads(run("get", s, "t", "k1", "--json").stdout) == {
        "ROWKEY": "k1", "f.n": 42, "f.u": "a\\\\b"}
    got = run("query", s, "SELECT f.n, f.x FROM t", "--json").stdout.splitlines()
    assert [json.loads(x) for x in got] == [{"f.n": 42, "f.x": None},
                                            {"f.n": None, "f.x": 2.5}]
    run("delete", s, "t", "k1", "f:u")
    run("delete", s, "t", "k2")
    assert error("get", s, "t", "k2") == "Error: no row 'k2' in table 't'"
    assert [json.loads(x)["ROWKEY"] for x in run("scan", s, "t", "--json").stdout.splitlines()] \
        == ["k1"]


def test_scan_csv_wide_then_load_unescape_copies_binary_values(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run("create-table", a, "t", "-f", "f")
    run("put", a, "t", "k\\x00\\xff", "f:v=\\x00\\xff\\\\x", "f:w=a,b\\n\"c\"")
    run("put", a, "t", "k2", "f:v=plain")
    wide = run("scan", a, "t", "--csv", "--wide").stdout
    run("create-table", b, "t", "-f", "f")
    run("load", b, "t", "-", "--rowkey-column", "ROWKEY", "--unescape", input=wide)
    with hibase.connect(str(a), read_only=True) as da, hibase.connect(str(b),
                                                                        read_only=True) as db:
        assert list(db.table("t").scan()) == list(da.table("t").scan())
        assert db.table("t").row(b"k\x00\xff") == {b"f:v": b"\x00\xff\\x",
                                                   b"f:w": b'a,b\n"c"'}
