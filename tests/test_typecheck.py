"""The type checker over the whole source (mypy, configured in pyproject.toml): both store
backends are checked against the store contract (store/api.py) through their callers' types."""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_mypy_passes():
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-20_000:] + proc.stderr[-5_000:]
