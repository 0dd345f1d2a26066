"""Smoke test of `hibase bench unindexed` at a tiny size: every query (the 3-table join too)
returns SQLite's answer on each variant; the figures themselves mean nothing at this size."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hibase.cli import cli


def test_bench_unindexed_report_at_tiny_size(tmp_path):
    dest = tmp_path / "unindexed.json"
    result = CliRunner().invoke(cli, ["bench", "unindexed", "--rows", "2000", "--repeats", "1",
                                      "--no-progress", "--output", str(dest)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    r = json.loads(dest.read_text())
    assert r["rows"] == 2000 and r["all_same"] is True
    assert [q["query"] for q in r["queries"]] == [
        "filtered scan", "filtered max", "max", "sum", "group by", "order by limit 3",
        "3-table join"]
    join = r["queries"][-1]
    assert join["same"] and join["path"] == "columnar" and join["rows_returned"] > 20
    assert [q["path"] for q in r["queries"]] == ["columnar"] * 7  # warm: a feed kept
    for q in r["queries"]:
        assert q["sqlite_s"] > 0 and q["cold_ratio"] > 0 and q["warm_ratio"] > 0, q
    assert "3-table join" in result.stdout
