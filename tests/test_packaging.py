"""The base install is the embedded product (issue 25): `pip install .` into a fresh virtualenv
brings none of the extras' packages, `hibase demo` runs there, and every part that needs an
extra says which, in one line, before it does any work."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# duckdb is a base dependency since issue 38 (SELECTs beyond the lean path run on it)
EXTRA_PACKAGES = {"redis", "kazoo", "happybase", "thriftpy2", "uhashring", "matplotlib"}


@pytest.fixture
def slim(base_install):
    """A fresh virtualenv with `pip install .` and nothing else (conftest's base_install)."""
    return base_install


def _run(venv, *args, cwd=None):
    return subprocess.run([str(venv / "bin" / "hibase"), *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_base_install_has_no_extra_package(slim):
    out = subprocess.run([str(slim / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
                         capture_output=True, text=True, check=True).stdout
    installed = {line.split("==")[0].lower() for line in out.splitlines()}
    assert not installed & EXTRA_PACKAGES, installed & EXTRA_PACKAGES


def test_demo_runs_on_the_base_install(slim, tmp_path):
    r = _run(slim, "demo", "--rows", "3000", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "IP + PORT" in r.stdout and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, extra", [
    (["query", "thrift://127.0.0.1:1", "SELECT * FROM t"], "hbase"),
    (["serve", "--thrift", "{tmp}/s"], "hbase"),
    (["cache-node", "--redis", "redis://127.0.0.1:1", "--zk", "127.0.0.1:1/x"], "cache"),
    (["cluster", "start", "{tmp}/c"], "cluster"),
    (["bench", "paper", "--scale", "smoke", "--out", "{tmp}/p"], "bench"),
    (["bench", "query", "--backend", "gateway"], "hbase"),
])
def test_a_missing_extra_is_one_line_naming_it(slim, tmp_path, args, extra):
    r = _run(slim, *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert r.returncode != 0
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"pip install 'hibase[{extra}]'" in err, err


def test_python_api_names_the_extra(slim, tmp_path):
    code = ("import hibase, hibase.errors as e\n"
            "for kw in ({'path': 'thrift://127.0.0.1:1'},\n"
            "           {'path': %r, 'cache': 'redis://127.0.0.1:1'}):\n"
            "    try:\n"
            "        hibase.connect(kw.pop('path'), **kw)\n"
            "    except e.MissingExtra as x:\n"
            "        print(x.extra, x)\n" % str(tmp_path / "s"))
    r = subprocess.run([str(slim / "bin" / "python"), "-c", code], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("hbase ") and lines[1].startswith("cache "), lines
