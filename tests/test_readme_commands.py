"""Every command in README.md runs as written: the fenced ```sh blocks run as one bash script
(set -e, pipefail) in a temporary folder, with `hibase` and `python` being this checkout's, on
the embedded store; the ```python example runs there too. The commands that are not run here
are listed in NOT_RUN with the reason and the test that covers them instead."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

NOT_RUN = {
    # installs from the package index (network), then the 200,000-row demo (about a minute):
    # test_packaging.py's base install runs `pip install .` and `hibase demo --rows 3000`
    "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/hibase demo",
    "pip install .",
    "pip install '.[hbase,cache]'",
    # the test command itself (it installs Debian packages and runs this suite): CI's .ci/run
    "scripts/test.sh",
}


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)


def _commands(block: str) -> list[str]:
    """Each command of a shell block: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", "", block)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _shims(tmp_path: pathlib.Path) -> dict:
    """`hibase` and `python` on PATH as this checkout's (src/ first), whatever is installed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, args in (("hibase", "-m hibase"), ("python", "")):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {args} "$@"\n')
        shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT / "src")}
    return env


def test_the_not_run_list_names_readme_commands():
    commands = {c for b in _blocks("sh") for c in _commands(b)}
    assert NOT_RUN <= commands, NOT_RUN - commands


def test_every_readme_command_runs_as_written(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = _shims(tmp_path)
    commands = [c for b in _blocks("sh") for c in _commands(b) if c not in NOT_RUN]
    assert len(commands) >= 8
    script = "set -e -o pipefail\n" + "\n".join(commands) + "\n"
    got = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 0, (got.stdout[-3000:], got.stderr[-3000:])
    out, err = got.stdout, got.stderr
    assert "Traceback" not in err
    assert "Rows loaded: 44, rejected: 0" in err
    assert "Noble Numbat" in out and "Resolute Raccoon" in out  # the indexed range
    assert "Warty Warthog" not in out
    assert "INDEX by_eol" in out  # EXPLAIN
    assert '"u.codename": "Noble Numbat"' in out  # get --json, flat (issue 42)
    assert "\n11\n" in out  # LTS releases, through hibase sql
    assert "data: OK" in out


def test_the_python_example_runs_as_written(tmp_path):
    (example,) = _blocks("python")
    got = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=_shims(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "b'k1' {b'f:carrier': b'UA'}" in got.stdout and "INDEX by_dest" in got.stdout
