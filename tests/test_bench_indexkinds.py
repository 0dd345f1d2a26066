"""Smoke test of the index kinds benchmark at a tiny size: the report's structure and its
checks (the partial lookup and the full scan return the same rows; the figures mean nothing
at this size)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hibase.cli import cli


def test_bench_indexkinds_report_at_tiny_size(tmp_path):
    dest = tmp_path / "ik.json"
    result = CliRunner().invoke(cli, ["bench", "indexkinds", "--rows", "2000", "--repeats", "1",
                                      "--lookups", "3", "--no-progress", "-o", str(dest)])
    assert result.exit_code == 0, (result.stdout, result.exception)
    r = json.loads(dest.read_text())
    p = r["partial"]
    assert r["benchmark"] == "indexkinds" and r["rows"] == 2000
    assert p["same_rows"] is True and p["verified"] is True
    assert 0 < p["entries"] < p["full_index_entries"] == 2000
    assert "PARTIAL WHERE f.status = 'open'" in p["plan"]
    assert p["index_ms_per_lookup"] > 0 and p["full_scan_ms"] > 0
    assert "bench indexkinds: 2,000 rows" in result.stdout
