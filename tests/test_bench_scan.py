"""Smoke test of the scan benchmark at a tiny size: the report's structure and its checks
(every engine returns the same rows; the figures themselves mean nothing at this size)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hibase.cli import cli


def test_bench_scan_report_at_tiny_size(tmp_path):
    dest = tmp_path / "scan.json"
    result = CliRunner().invoke(cli, ["bench", "scan", "--rows", "3000", "--repeats", "1",
                                      "--no-progress", "--output", str(dest)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    r = json.loads(dest.read_text())
    assert r["benchmark"] == "scan" and r["rows"] == 3000 and r["duckdb"]
    assert r["all_same_rows"] is True
    assert [q["query"] for q in r["scan"]] == [
        "two_int_equalities", "equality_and_range", "two_ranges", "like_or_equality"]
    for q in r["scan"] + r["fetch"]:
        for engine in ("hibase", "sqlite", "duckdb"):
            assert q[f"{engine}_rows_per_s"] > 0, (q["query"], engine)
    assert r["null_rows"] == 30 and r["is_null"]["rows"] == 30
    assert "NULL LIST POINT LOOKUP" in r["is_null"]["plan"]
    assert set(r["meets_targets"]) == {"scan_rows_per_s (best query)",
                                       "scan_rows_per_s (every query)",
                                       "fetch_rows_per_s (100k rows)"}
    assert "bench scan: 3,000 telecom rows" in result.stdout
