"""The scenario table of `hibase bench cache`: its traces, the targets it judges, its plots and
its command line (the telecom experiment itself is run by test_cache_zk.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from click.testing import CliRunner

from hibase_bench import cache_scenarios as sc
from hibase.cli import cli


def test_traces_are_what_they_claim():
    static = sc.trace("zipf-0.99", lookups=5000, keys=1000)
    assert len(static) == 5000 and static == sc.trace("zipf-0.99", lookups=5000, keys=1000)
    assert {size for _, size in static} <= set(range(1, 11))
    counts = Counter(key for key, _ in static).most_common()
    assert counts[0][1] > 20 * counts[len(counts) // 2][1]  # skewed
    hottest = lambda tr: Counter(k for k, _ in tr).most_common(1)[0][0]  # noqa: E731
    shifting = sc.trace("shifting", lookups=10_000, keys=1000)
    assert len({hottest(shifting[i:i + 2500]) for i in range(0, 10_000, 2500)}) >= 3
    scans = sc.trace("scans", lookups=10_000, keys=1000)
    cold = [key for key, _ in scans if key >= 1000]
    assert len(cold) == len(set(cold)) > 1000  # each scanned value is met once
    sizes = {size for _, size in sc.trace("mixed-sizes", lookups=5000, keys=1000)}
    assert min(sizes) == 1 and 400 < max(sizes) <= 500
    with pytest.raises(ValueError):
        sc.trace("nope")


def test_run_reports_every_policy_and_belady():
    report = sc.run(scenarios=("zipf-0.99", "scans"), ratios=(0.1, 0.5), lookups=4000,
                    keys=800)
    json.dumps(report)
    rows = {(r["scenario"], r["ratio"], r["policy"]): r for r in report["results"]}
    assert len(rows) == 2 * 2 * 4
    for (scenario, ratio, policy), r in rows.items():
        assert 0 <= r["hit_ratio"] <= 1 and 0 <= r["record_hit_ratio"] <= 1
        if policy != "belady":
            assert r["hit_ratio"] <= rows[(scenario, ratio, "belady")]["hit_ratio"]
    assert report["traces"]["scans"]["lookups"] == 4000
    assert set(report["targets"]) == {  # no ratio 0.2 and no shifting trace here
        "zipf-0.99: window-heat is the online policy closest to Belady",
        "scans: window-heat beats LRU"}
    text = "\n".join(sc.summary_lines(report))
    assert "window-heat" in text and "belady" in text and "target scans" in text


def test_targets_by_hand():
    def row(scenario, ratio, **hits):
        return [{"scenario": scenario, "ratio": ratio, "policy": p, "hit_ratio": h,
                 "record_hit_ratio": h} for p, h in hits.items()]
    results = (row("zipf-0.99", 0.1, lru=0.50, hotscore=0.52, **{"window-heat": 0.545},
                   belady=0.7)
               + row("zipf-0.99", 0.2, lru=0.60, hotscore=0.66, **{"window-heat": 0.639},
                     belady=0.8)
               + row("shifting", 0.1, lru=0.60, **{"window-heat": 0.592})
               + row("scans", 0.1, lru=0.30, **{"window-heat": 0.30}))
    report = {"params": {"policies": ["lru", "hotscore", "window-heat"]}, "results": results}
    t = sc.targets(report)
    beats = t["zipf-0.99: window-heat beats LRU by >= 4 points at 0.1 and 0.2"]
    assert beats == {"met": False, "points": {"0.1": 4.5, "0.2": 3.9}}
    closest = t["zipf-0.99: window-heat is the online policy closest to Belady"]
    assert closest == {"met": False, "closest": {"0.1": "window-heat", "0.2": "hotscore"}}
    assert t["shifting: window-heat never more than 1 point below LRU"] == {
        "met": True, "points": {"0.1": -0.8}}
    assert t["scans: window-heat beats LRU"] == {"met": False, "points": {"0.1": 0.0}}


def test_plots(tmp_path):
    report = sc.run(scenarios=("shifting",), ratios=(0.05, 0.2), lookups=3000, keys=600)
    paths = sc.plot(report, str(tmp_path / "plots"))
    assert [os.path.basename(p) for p in paths] == ["cache_shifting.png"]
    with open(paths[0], "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_plots_without_matplotlib_say_how_to_install_it(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from hibase.cli import main\n"
            f"main(['bench', 'cache', '--scenarios', 'only', '--plots', {str(tmp_path)!r}])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert "pip install 'hibase[bench]'" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_help_names_the_scenarios():
    out = CliRunner().invoke(cli, ["bench", "cache", "--help"])
    assert out.exit_code == 0 and "--scenarios" in out.output and "--plots" in out.output
    assert "window-heat" in out.output
