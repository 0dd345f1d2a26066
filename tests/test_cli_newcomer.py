"""Issue 27, the command line as a newcomer finds it: opening stores, loads, messages, JSON
output, delete/dump/restore, extras checked first (CliRunner, and subprocesses where pipes and
terminals matter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

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
