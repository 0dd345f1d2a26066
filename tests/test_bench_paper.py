"""`hibase bench paper --scale smoke`: the whole evaluation at a few thousand rows writes
results.json (every section, machine facts, versions, answers checked equal on every peer),
report.md linking >= 5 PNG plots that exist, and says why Phoenix did not run."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from hibase.cli import cli

import duckdb  # noqa: F401  a dependency of hibase
import matplotlib  # noqa: F401  of hibase[bench], in the dev extras: missing fails, not skips


def test_bench_paper_smoke_writes_results_report_and_plots(tmp_path):
    out = tmp_path / "paper"
    result = CliRunner().invoke(cli, ["bench", "paper", "--scale", "smoke", "--out", str(out),
                                      "--no-progress"])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert "answers of every peer equal: True" in result.stdout
    res = json.loads((out / "results.json").read_text())
    assert not (out / "results.partial.json").exists()  # kept only while the run goes on
    for key in ("machine", "versions", "seeds", "sections", "queries", "imports", "cache",
                "routing", "phoenix"):
        assert key in res, key
    assert res["machine"]["cpu_count"] >= 1 and res["machine"]["mem_total_gib"] > 0
    assert {"python", "hibase", "rocksdict", "sqlite", "duckdb"} <= set(res["versions"])
    assert all(v["wall_s"] >= 0 and v["cpu_s"] >= 0 for v in res["sections"].values())
    assert [s["rows"] for s in res["queries"]] == [1_000, 3_000]
    engines = {"hibase_full_scan", "hibase_hot", "sqlite_index", "sqlite_scan", "duckdb_scan",
               "duckdb_art"}
    for size in res["queries"]:
        assert len(size["queries"]) == 7  # 4 types, the 3 indexed ones again covered
        assert sum(q["type"].endswith("(covered)") for q in size["queries"]) == 3
        for q in size["queries"]:
            assert set(q["same_rows"]) == engines and all(q["same_rows"].values()), q
            assert q["rows"] > 0 and q["full_scan_s"] > 0 and q["cold"]["p50_us"] > 0
            assert q["speedup_cold"] == pytest.approx(q["full_scan_s"] * 1e6
                                                      / q["cold"]["p50_us"])
    assert res["all_answers_checked_equal"] is True
    assert set(res["imports"]["hibase_ratio"]) == {"0", "1", "2", "3"}
    assert res["imports"]["hibase_ratio"]["0"] == 1.0
    ratios = [r["ratio"] for r in res["cache"]["results"]]
    assert ratios == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    for r in res["cache"]["results"]:  # Belady's MIN is the ceiling of every online policy
        assert all(r[p] <= r["belady"] + 1e-9 for p in ("hotscore", "lru", "window-heat"))
    assert res["routing"]["scbf"]["table1"]["rows"] and res["routing"]["local"]["queries"]
    assert res["phoenix"] == {"ran": False, "reason": res["phoenix"]["reason"]}
    report = (out / "report.md").read_text()
    assert "Phoenix: not run (--backend embedded" in report
    pngs = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", report)
    assert len(set(pngs)) >= 5
    for png in pngs:
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for title in ("1. Query time", "2. Hit ratio", "3. Import", "4. Index size",
                  "5. SCBF"):
        assert f"## {title}" in report
    # on HBase the section at scale sits under its own key: "scale" stays the scale's name
    from hibase_bench.paper.report import write
    res["at_scale"] = {"ran": False, "reason": "no cluster here"}
    write(res, str(out))
    text = (out / "report.md").read_text()
    assert text.startswith("# The HiBase paper's evaluation, smoke scale (embedded)")
    assert "## 6. At scale on HBase, Apache Phoenix beside" in text


def test_bench_paper_rejects_a_bad_backend(tmp_path):
    result = CliRunner().invoke(cli, ["bench", "paper", "--scale", "smoke", "--backend",
                                      "http://x", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "thrift://host:port" in result.output
