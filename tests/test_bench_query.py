"""Smoke test of the query benchmark at a tiny size: the report's structure and its checks
(the figures themselves are meaningless at this size)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hibase.bench import query
from hibase.cli import cli

NAMES = ["eq_0", "eq_10", "eq_1000", "eq_100000", "range_1000", "and_ip_url", "or_url_ip"]


def test_bench_query_report_at_tiny_size(tmp_path):
    dest = tmp_path / "q.json"
    result = CliRunner().invoke(cli, ["bench", "query", "--rows", "3000", "--repeats", "2",
                                      "--no-progress", "--output", str(dest)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    r = json.loads(dest.read_text())

    assert r["benchmark"] == "query" and r["rows"] == 3000
    assert [q["name"] for q in r["queries"]] == NAMES
    for q in r["queries"]:
        assert q["same_rows"] is True, q["name"]
        for engine in ("hibase_index", "hibase_prepared", "sqlite_index"):
            assert q[engine]["p50_us"] > 0 and 1 <= q[engine]["runs"] <= 2
        assert q["hibase_full_scan_s"] > 0 and q["sqlite_full_scan_s"] >= 0
        assert q["speedup_vs_full_scan"] > 0
        assert "PLAN for" in q["plan"] and q["sqlite_plan"]
        assert q["sqlite_full_scan_plan"] == "SCAN telecom", q["sqlite_full_scan_plan"]
    by = {q["name"]: q for q in r["queries"]}
    assert by["eq_0"]["rows"] == 0 and by["eq_10"]["rows"] > 0
    assert by["eq_1000"]["rows"] > by["eq_10"]["rows"]
    assert "INDEX by_url" in by["eq_10"]["plan"] and "by_url" in by["eq_10"]["sqlite_plan"]
    assert "INDEX by_start" in by["range_1000"]["plan"]
    assert "hibase_index_value_table_walk" in by["range_1000"]
    assert "UNION" in by["or_url_ip"]["plan"]

    load = r["load"]
    assert load["hibase_ratio"] > 0 and load["sqlite_ratio"] > 0
    assert load["hibase_3_indexes"]["load_s"] > 0 and load["hibase_build_start_time_index_s"] > 0
    sizes = r["sizes"]["hibase"]
    assert set(sizes["logical"]["per_index"]) == {"by_ip", "by_ip_port", "by_url", "by_start"}
    assert all(v["ratio_to_data"] > 0 for v in sizes["logical"]["per_index"].values())
    assert sizes["on_disk"]["data_bytes"] > 0
    assert set(r["sizes"]["sqlite"]["per_index"]) == set(sizes["logical"]["per_index"])
    assert set(r["meets_targets"]) == {
        "eq_le10_speedup_vs_full_scan", "eq_le10_p50_us", "eq_le10_prepared_p50_us",
        "eq_le10_vs_sqlite_p50_ratio", "load_ratio_3_indexes", "all_paths_same_rows"}
    assert r["meets_targets"]["all_paths_same_rows"] is True
    assert r["targets"] == query.TARGETS

    out = result.stdout
    assert out.startswith("bench query: 3,000 telecom rows")
    assert all(name in out for name in NAMES)
    assert "target load_ratio_3_indexes:" in out and f"full report: {dest}" in out
