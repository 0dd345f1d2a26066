"""The documentation site (mkdocs.yml: docs/ and the API reference from the docstrings) builds
with `mkdocs build --strict`: a broken link or anchor, a page missing from the nav, or a
docstring mkdocstrings cannot render fails the test run. Needs the dev extras."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_docs_site_builds_strict(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    # not --quiet: it silences the warnings, and --strict then has none to count
    got = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                          "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir",
                          str(tmp_path / "site")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-3000:]
    assert "WARNING" not in got.stderr, got.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("hibase.connect", "hibase.Connection.sql", "hibase.Table.where",
                 "hibase.dbapi.connect", "hibase.errors.HibaseError"):
        assert f'id="{name}"' in api, name


def test_every_docs_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages and all(f": {page}" in nav for page in pages), pages
