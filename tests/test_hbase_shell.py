"""HBase's own shell as a writer (`hibase cluster shell DIR`, cluster/shell.py): its put,
deleteall, delete of one cell, incr and append, fed as one script to one shell JVM, reach the
region servers like any client's writes, so hibase's index coprocessor keeps every index kind
exact for them (global uncovered, covered, multi-column, local); and the command's errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import hibase
from servers import cluster_url, coprocessor_cluster


def hibase_cmd(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hibase", *args], input=stdin,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def hbase(request):
    return coprocessor_cluster(request)


INDEXES = {  # name: (columns, covering, local)
    "g_a": (["f:a"], None, False),
    "g_n_cov": (["f:n"], ["f:a", "f:m"], False),
    "g_an": (["f:a", "f:n"], None, False),
    "l_a": (["f:a"], ["f:n"], True),
    "g_k": (["f:k"], None, False),
}


def _script(table: str) -> str:
    """The shell's statements: 8 rows put cell by cell, then an update, a deleteall, a delete
    of one indexed cell, increments (8-byte longs) and an append."""
    lines = []
    for i in range(1, 9):
        row = f"r{i:02d}"
        for col, value in (("f:a", f"v{i % 3}"), ("f:n", str(i - 4)), ("f:m", f"m{i}")):
            lines.append(f"put '{table}', '{row}', '{col}', '{value}'")
    lines += [
        f"put '{table}', 'r02', 'f:a', 'v9'",
        f"deleteall '{table}', 'r03'",
        f"delete '{table}', 'r04', 'f:a'",
        f"incr '{table}', 'r05', 'f:k', 3",
        f"incr '{table}', 'r05', 'f:k', 2",
        f"incr '{table}', 'r06', 'f:k'",
        f"append '{table}', 'r07', 'f:a', '-x'",
    ]
    return "\n".join(lines) + "\n"


def _rows(t, where: str) -> list[bytes]:
    return sorted(r for r, _ in t.where(where))


def test_shell_writes_are_found_through_every_index_kind(hbase):
    prefix = f"sh{os.getpid()}"
    db = hibase.connect(cluster_url(hbase, prefix))
    try:
        db.create_table("t", {"f": {}}, columns={"f:a": "string", "f:n": "long",
                                                  "f:m": "string", "f:k": "long binary"})
        for name, (cols, cover, local) in INDEXES.items():
            db.create_index("t", name, cols, covering=cover, local=local)
        out = hibase_cmd("cluster", "shell", hbase.dir, stdin=_script(f"{prefix}_t"))
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert "append" in out.stdout  # the shell echoed the statements it ran
        t = db.table("t")
        # r01..r08: a = v1 v9(updated) -(deleteall) <deleted> v2 v0 v1-x v2; n = i - 4
        expected = {
            "f.a = 'v1'": [b"r01"],
            "f.a = 'v9'": [b"r02"],
            "f.a = 'v2'": [b"r05", b"r08"],
            "f.a = 'v1-x'": [b"r07"],
            "f.a IS NULL": [b"r04"],
            "f.n = -1": [],  # r03: deleteall
            "f.n = 0": [b"r04"],  # its other cells stay
            "f.a = 'v2' AND f.n = 1": [b"r05"],
            "f.n >= 3": [b"r07", b"r08"],
            "f.m = 'm3'": [],
            "f.k = 5": [b"r05"],
            "f.k = 1": [b"r06"],
        }
        for where, rows in expected.items():
            assert _rows(t, where) == rows, where
            assert _rows(t, where) == sorted(r for r, _ in t.where(where, full_scan=True))
        # each index answers for the rows it holds
        plans = {"g_a": "f.a = 'v9'", "g_n_cov": "f.n = 0", "g_an": "f.a = 'v2' AND f.n = 1",
                 "g_k": "f.k = 5"}
        for name, where in plans.items():
            assert name in t.explain(where), (name, t.explain(where))
        assert db.sql("SELECT COUNT(*) FROM t WHERE f.a = 'v2'") == [(2,)]
        assert db.sql("SELECT COUNT(*) FROM t WHERE f.k > 0") == [(2,)]
        for name in INDEXES:
            report = db.verify_index("t", name)
            assert report["ok"], (name, report)
        # the local index, once it is the only one on f.a
        for name in ("g_a", "g_an"):
            db.drop_index("t", name)
        assert "l_a" in t.explain("f.a = 'v2'")
        assert _rows(t, "f.a = 'v2'") == [b"r05", b"r08"]
        assert _rows(t, "f.a = 'v1-x'") == [b"r07"]
        assert _rows(t, "f.a IS NULL") == [b"r04"]
    finally:
        db.close()


def test_failing_statement_of_a_script_file_stops_the_shell_with_exit_1(hbase, tmp_path):
    script = tmp_path / "statements.rb"
    script.write_text("put 'hibase_no_such_table', 'r', 'f:q', 'v'\nlist\n")
    out = hibase_cmd("cluster", "shell", hbase.dir, str(script))
    assert out.returncode == 1
    assert "Unknown table hibase_no_such_table" in out.stdout + out.stderr
    assert "TABLE" not in out.stdout  # stopped at the first failure: `list` never ran


def test_shell_on_a_folder_without_a_running_cluster_says_so(tmp_path):
    out = hibase_cmd("cluster", "shell", str(tmp_path), stdin="list\n")
    assert out.returncode == 1
    assert f"no cluster runs in {tmp_path}" in out.stderr
    assert "hibase cluster start" in out.stderr and "Traceback" not in out.stderr


def test_on_a_terminal_the_shell_is_interactive(hbase):
    """On a terminal (a pty here) the shell prompts, answers a statement and ends on `exit`."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the command on the pty
        os.execv(sys.executable, [sys.executable, "-m", "hibase", "cluster", "shell", hbase.dir])
    seen = b""

    def until(text: bytes, limit: float = 300.0) -> None:
        nonlocal seen
        end = time.monotonic() + limit  # a bound on a hang, not a speed assertion
        while text not in seen and time.monotonic() < end:
            if select.select([fd], [], [], 1.0)[0]:
                try:
                    seen += os.read(fd, 65536)
                except OSError:  # the child closed the pty
                    return
        assert text in seen, seen[-2000:]

    try:
        until(b"hbase:001:0>")
        os.write(fd, b"exists 'hibase_no_such_table'\n")
        until(b"does not exist")
        os.write(fd, b"exit\n")
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        os.close(fd)
