"""The command line speaking one voice: `hibase tables` as a table, `hibase describe`,
`load --null-string`, `load --create` on a table that exists, -p values typed by the column
they meet, an index column's typo answered with the real columns, and a load stopped by
Ctrl-C or a truncated file saying what was written (no bare "Aborted!")."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time

from click.testing import CliRunner

import hibase
from children import as_from_a_terminal
from hibase.cli import cli


def run(*args: str, code: int = 0):
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == code, (r.exit_code, r.output)
    return r


def _people(tmp_path) -> str:
    store = str(tmp_path / "s")
    run("create-table", store, "people", "-f", "c", "-c", "c:name=string", "-c", "c:age=int",
        "-c", "c:year=string")
    run("put", store, "people", "r1", "c:name=ann", "c:age=5", "c:year=2010")
    run("put", store, "people", "r2", "c:name=bob", "c:age=2010", "c:year=1999")
    return store


def test_tables_is_a_table_and_describe_lists_a_table(tmp_path):
    store = _people(tmp_path)
    run("create-table", store, "wide", "-f", "f:max_versions=1,compression=ZSTD",
        *[x for i in range(40) for x in ("-c", f"f:column_number_{i}=string")])
    run("index", "create", store, "people", "by_name", "-c", "c:name")
    lines = run("tables", store).stdout.splitlines()
    assert lines[0].split() == ["table", "families", "columns", "indexes", "regions"]
    assert lines[2].split() == ["people", "c", "3", "by_name", "1"]
    assert lines[3].split() == ["wide", "f", "40", "-", "1"]
    assert max(map(len, lines)) < 80  # not one line of every column per table
    # --json / --csv still give every column with its type
    doc = [json.loads(x) for x in run("tables", store, "--json").stdout.splitlines()]
    assert len(doc[1]["columns"]) == 40 and doc[0]["indexes"] == ["by_name"]
    assert "f:column_number_39=string" in run("tables", store, "--csv").stdout

    out = run("describe", store, "people").stdout.splitlines()
    assert out[:6] == ["COLUMN_NAME  TYPE_NAME  NOTE", "-----------  ---------  ------",
                       "ROWKEY       VARBINARY  rowkey", "c.name       VARCHAR",
                       "c.age        INTEGER", "c.year       VARCHAR"]
    assert any(line.split()[:3] == ["by_name", "c:name", "no"] for line in out)
    out = run("describe", store, "wide").stdout
    assert "max_versions=1, compression=ZSTD" in out
    doc = json.loads(run("describe", store, "people", "--json").stdout)
    assert doc["table"] == "people" and doc["indexes"][0]["name"] == "by_name"
    assert doc["describe"][1] == {"column": "c.name", "type": "VARCHAR", "note": ""}
    r = run("describe", store, "nosuch", code=1)
    assert r.stderr.strip() == "Error: no table 'nosuch'"


def test_params_are_typed_by_the_column_they_meet(tmp_path):
    store = _people(tmp_path)

    def rows(sql: str, *params: str) -> list[str]:
        out = run("query", store, sql, *params, "--csv").stdout.splitlines()[1:]
        return [line.split(",")[0] for line in out]

    # a VARCHAR column: -p 2010 is the text '2010' (before: an error, -p "'2010'" needed)
    assert rows("SELECT * FROM people WHERE c.year = ?", "-p", "2010") == ["r1"]
    assert rows("SELECT * FROM people WHERE c.year = ?", "-p", "'2010'") == ["r1"]
    assert rows("SELECT * FROM people WHERE c.year IN (?, ?)", "-p", "1999", "-p", "2010") \
        == ["r1", "r2"]
    assert rows("SELECT * FROM people WHERE c.year BETWEEN ? AND ?", "-p", "2000",
                "-p", "2020") == ["r1"]
    # a number column: still a number, in the same statement too
    assert rows("SELECT * FROM people WHERE c.age = ? AND c.year = ?", "-p", "2010",
                "-p", "1999") == ["r2"]
    assert rows("SELECT * FROM people WHERE c.age = :a OR c.year = :y", "-P", "a=5",
                "-P", "y=1999") == ["r1", "r2"]
    # the rowkey (bytes) is text; an undeclared column of a table declaring none too
    run("put", store, "people", "2010", "c:name=num")
    assert rows("SELECT * FROM people WHERE ROWKEY = ?", "-p", "2010") == ["2010"]
    run("create-table", store, "raw", "-f", "r")
    run("put", store, "raw", "k", "r:x=7")
    assert rows("SELECT * FROM raw WHERE r.x = ?", "-p", "7") == ["k"]


def test_index_create_suggests_the_declared_column(tmp_path):
    store = _people(tmp_path)
    r = run("index", "create", store, "people", "by_name", "-c", "c:nmae", code=1)
    assert "did you mean c:name?" in r.stderr and "alter-table" not in r.stderr
    r = run("index", "create", store, "people", "by_name", "-c", "c:Name", code=1)
    assert "did you mean c:name?" in r.stderr
    r = run("index", "create", store, "people", "by_zip", "-c", "c:zip", code=1)
    assert "declare it first: hibase alter-table" in r.stderr  # no close name: declare it
    db = hibase.connect(store, cache=None)
    try:
        try:
            db.create_index("people", "x", ["c:yaer"])
        except hibase.errors.SchemaError as exc:
            assert "did you mean c:year?" in str(exc)
        else:
            raise AssertionError("a typo was indexed")
    finally:
        db.close()


def test_load_null_string_and_create_on_an_existing_table(tmp_path):
    store = str(tmp_path / "s")
    data = tmp_path / "na.csv"
    data.write_text("id,name,age,score\n1,ann,NA,1.5\n2,bob,3,NA\n3,NA,4,2\n")
    r = run("load", store, "p", str(data), "--rowkey-column", "id", "-f", "c", "--create",
            "--null-string", "NA")
    assert "c.age=long" in r.stderr and "c.score=double" in r.stderr  # NA is not a value
    cells = run("scan", store, "p", "--csv").stdout.splitlines()[1:]
    assert cells == ["1,c.name,ann", "1,c.score,1.5", "2,c.age,3", "2,c.name,bob", "3,c.age,4",
                     "3,c.score,2"]
    # without it NA is text: the numbers become strings (the old behaviour, still chosen)
    r = run("load", store, "q", str(data), "--rowkey-column", "id", "-f", "c", "--create")
    assert "c.age=string" in r.stderr
    # --create again: the table exists, the load goes into it (a re-runnable script)
    more = tmp_path / "more.csv"
    more.write_text("id,name,age,score\n4,dan,NA,3.5\n")
    for args in ([], ["--type", "age=long"], ["--no-detect"]):
        r = run("load", store, "p", str(more), "--rowkey-column", "id", "-f", "c", "--create",
                "--null-string", "NA", *args)
        assert "Table 'p' exists: loading into it." in r.stderr
    assert "4,c.score,3.5" in run("scan", store, "p", "--csv").stdout
    # ... unless --type disagrees with the table's declared type
    r = run("load", store, "p", str(more), "--rowkey-column", "id", "-f", "c", "--create",
            "--type", "age=string", code=2)
    assert "declares c:age=long, not age=string" in r.stderr and "alter-table" in r.stderr
    r = run("load", store, "p", str(more), "--rowkey-column", "id", "-f", "c",
            "--null-string", "", code=2)
    assert "empty fields are NULL already" in r.stderr


def _truncated_gzip(path, rows: int) -> None:
    body = "id,name,n\n" + "".join(f"{i},name{i},{i * 3}\n" for i in range(rows))
    data = gzip.compress(body.encode(), compresslevel=1)
    path.write_bytes(data[: len(data) // 2])


def test_a_truncated_gzip_says_what_was_written(tmp_path):
    store = str(tmp_path / "s")
    bad = tmp_path / "cut.csv.gz"
    _truncated_gzip(bad, 20000)
    # while detecting types: nothing written, the table not made, no "Aborted!"
    r = run("load", store, "t", str(bad), "--rowkey-column", "id", "-f", "c", "--create",
            code=1)
    assert "while detecting the column types" in r.stderr and "nothing was written" in r.stderr
    assert "Aborted" not in r.stderr
    # while loading: the rows before the cut are written, and said
    run("create-table", store, "t", "-f", "c")
    r = run("load", store, "t", str(bad), "--rowkey-column", "id", "-f", "c", code=1)
    assert "Aborted" not in r.stderr
    line = [x for x in r.stderr.splitlines() if x.startswith("Error: ")][0]
    written = int(line.split("; the ")[1].split(" row(s)")[0])
    assert written > 0 and "loading the whole file again rewrites them" in line
    assert "(stopped where the file could not be read)" in r.stderr
    n = len(run("scan", store, "t", "--csv").stdout.splitlines()) - 1
    assert n == written * 2  # two cells (name, n) per row


def test_ctrl_c_during_a_load_says_what_was_written(tmp_path):
    store = str(tmp_path / "s")
    run("create-table", store, "t", "-f", "c")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "hibase", "load", store, "t", "-",
                             "--rowkey-column", "id", "-f", "c", "--batch-size", "100"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=as_from_a_terminal)
    # stderr read all along: a full pipe would block the load's progress bar, and the load
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(proc.stderr.readline, "")),
                              daemon=True)
    reader.start()
    try:
        proc.stdin.write("id,name\n" + "".join(f"{i},n{i}\n" for i in range(5000)))
        proc.stdin.flush()  # the pipe stays open: the load waits for more
        end = time.monotonic() + 60
        while True:  # the store read alongside the load until the rows are in
            db = hibase.connect(store, read_only=True, cache=None)
            try:
                n = sum(1 for _ in db.table("t").scan())
            finally:
                db.close()
            if n >= 4900 or time.monotonic() > end:
                break
            time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        # stdin stays open (a user's Ctrl-C with input still to come: closing it could let the
        # load read to the end first and finish normally); a load that does not stop prints
        # every thread's stack (SIGUSR1, hibase's faulthandler) into the failure
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)
            time.sleep(2)
            proc.kill()
        proc.stdin.close()
        proc.wait()
        reader.join(10)
        err = "".join(chunks)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Aborted" not in err and "Traceback" not in err
    assert "Interrupted (Ctrl-C) after line 5001: 5000 row(s) were written" in err, err
    assert "loading the same file again rewrites them" in err
    db = hibase.connect(store, read_only=True, cache=None)
    try:
        assert sum(1 for _ in db.table("t").scan()) == 5000
    finally:
        db.close()


def test_sigusr1_prints_every_threads_stack_of_a_command_that_seems_stuck(tmp_path):
    store = str(tmp_path / "s")
    run("create-table", store, "t", "-f", "c")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "hibase", "load", store, "t", "-",
                             "--rowkey-column", "id", "-f", "c", "--no-progress",
                             "--batch-size", "1"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        proc.stdin.write("id,name\n1,a\n2,b\n")
        proc.stdin.flush()
        end = time.monotonic() + 60
        while time.monotonic() < end:  # a row is written: the load runs, waiting for more
            db = hibase.connect(store, read_only=True, cache=None)
            try:
                if db.table("t").row(b"1"):
                    break
            finally:
                db.close()
            time.sleep(0.2)
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        assert proc.poll() is None  # the dump does not end the command
        _, err = proc.communicate(timeout=60)  # closes stdin: the load finishes
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "most recent call first" in err and "load.py" in err, err
