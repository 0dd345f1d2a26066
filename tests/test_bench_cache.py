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


def test_families_are_what_they_claim():
    hottest = lambda tr: Counter(k for k, _ in tr).most_common(1)[0][0]  # noqa: E731
    params, static = sc.draw("zipf-0.99", lookups=5000, keys=1000, seed=3)
    assert params == {"skew": 0.99} and len(static) == 5000
    assert static == sc.trace("zipf-0.99", lookups=5000, keys=1000, seed=3)  # deterministic
    assert static != sc.trace("zipf-0.99", lookups=5000, keys=1000, seed=4)
    assert {size for _, size in static} <= set(range(1, 11))
    counts = Counter(key for key, _ in static).most_common()
    assert counts[0][1] > 20 * counts[len(counts) // 2][1]  # skewed
    skews = {sc.draw("zipf", 100, 100, seed)[0]["skew"] for seed in range(8)}
    assert len(skews) == 8 and all(0.6 <= s <= 1.3 for s in skews)  # drawn per seed
    for family, (low, high) in sc.SHIFT_EVERY.items():
        p, tr = sc.draw(family, lookups=12_000, keys=1000, seed=1)
        assert low <= p["shift_every"] <= high and 0.5 <= p["moved_share"] <= 1
        step = p["shift_every"]
        moves = {hottest(tr[i:i + step]) for i in range(0, 12_000 - step + 1, step)}
        assert len(moves) >= min(3, 12_000 // step)  # the hot set moves
    p, drift = sc.draw("drift", lookups=10_000, keys=1000, seed=2)
    assert any(key >= 1000 for key, _ in drift)  # new sets arrive ...
    assert Counter(k for k, _ in drift if k >= 1000).most_common(1)[0][1] > 20  # ... hot
    p, scans = sc.draw("scans", lookups=10_000, keys=1000, seed=0)
    cold = [key for key, _ in scans if key >= 1000]
    assert len(cold) == len(set(cold)) > 100  # each scanned value is met once
    p, loop = sc.draw("loop", lookups=10_000, keys=1000, seed=0)
    walked = [key for key, _ in loop if key >= 1000]
    assert walked[:p["loop_sets"]] == list(range(1000, 1000 + p["loop_sets"]))
    assert len(walked) == pytest.approx(p["loop_share"] * 10_000, rel=0.1)
    sizes = {size for _, size in sc.trace("mixed-sizes", lookups=5000, keys=1000)}
    assert min(sizes) == 1 and 300 < max(sizes) <= 500
    with pytest.raises(ValueError):
        sc.trace("nope")


def test_run_reports_every_policy_and_belady_as_medians():
    report = sc.run(scenarios=("zipf-0.99", "scans"), ratios=(0.1, 0.5), lookups=3000,
                    keys=600, seeds=2)
    json.dumps(report)
    rows = {(r["scenario"], r["seed"], r["ratio"], r["policy"]): r for r in report["results"]}
    assert len(rows) == 2 * 2 * 2 * (len(sc.POLICIES) + 1)
    for (scenario, seed, ratio, policy), r in rows.items():
        assert 0 <= r["hit_ratio"] <= 1 and 0 <= r["record_hit_ratio"] <= 1
        if policy != "belady":
            best = rows[(scenario, seed, ratio, "belady")]["hit_ratio"]
            assert r["hit_ratio"] <= best and r["share_of_min"] <= 1
            assert r["policy_us"] > 0
    assert [t["seed"] for t in report["traces"]["scans"]] == [0, 1]
    assert len(report["medians"]) == 2 * 2 * (len(sc.POLICIES) + 1)
    m = next(m for m in report["medians"] if m["policy"] == "lru")
    assert m["seeds"] == 2 and m["vs_lru_points"] == 0
    assert set(report["targets"]) == {  # no ratio 0.2 here
        "window-heat never more than 1 point below LRU (any family, any ratio)",
        "zipf-0.99: window-heat >= 90% of Belady's MIN (goal)"}
    text = "\n".join(sc.summary_lines(report))
    for name in ("window-heat", "s3-fifo", "w-tinylfu", "belady", "CPU per lookup"):
        assert name in text


def test_quick_run_is_small():
    report = sc.run(scenarios=("shift-fast",), quick=True)
    assert report["params"]["seeds"] == sc.QUICK["seeds"]
    assert report["params"]["ratios"] == list(sc.QUICK["ratios"])
    assert report["traces"]["shift-fast"][0]["lookups"] == sc.QUICK["lookups"]


def test_targets_by_hand():
    def row(scenario, ratio, seed=0, **hits):
        return [{"scenario": scenario, "ratio": ratio, "seed": seed, "policy": p,
                 "hit_ratio": h, "record_hit_ratio": h, "share_of_min": h / hits["belady"]}
                for p, h in hits.items()]
    results = (row("zipf-0.99", 0.1, lru=0.50, **{"window-heat": 0.545}, belady=0.6)
               + row("zipf-0.99", 0.2, lru=0.60, **{"window-heat": 0.639}, belady=0.7)
               + row("shift-fast", 0.1, lru=0.60, **{"window-heat": 0.585}, belady=0.8)
               + row("shift-fast", 0.1, seed=1, lru=0.60, **{"window-heat": 0.595}, belady=0.8)
               + row("shift-fast", 0.1, seed=2, lru=0.60, **{"window-heat": 0.60}, belady=0.8))
    report = {"params": {"policies": ["window-heat", "lru"]}, "results": results}
    t = sc.targets(report)
    beats = t["zipf-0.99: window-heat beats LRU by >= 4 points at 0.1 and 0.2"]
    assert beats == {"met": False, "points": {"0.1": 4.5, "0.2": 3.9}}
    never = t["window-heat never more than 1 point below LRU (any family, any ratio)"]
    assert never["met"] and never["worst"] == {"shift-fast 0.1": -0.5}  # median of 3 seeds
    share = t["zipf-0.99: window-heat >= 90% of Belady's MIN (goal)"]
    assert share == {"met": True, "share_of_min": {"0.1": 0.9083, "0.2": 0.9129}}


def test_plots(tmp_path):
    report = sc.run(scenarios=("shift-fast",), ratios=(0.05, 0.2), lookups=3000, keys=600,
                    seeds=1, policies=("window-heat", "lru"))
    paths = sc.plot(report, str(tmp_path / "plots"))
    assert [os.path.basename(p) for p in paths] == ["cache_shift-fast.png"]
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
    assert "window-heat" in out.output and "--quick" in out.output and "S3-FIFO" in out.output


def test_quick_scenario_table_from_the_command_line(tmp_path):
    path = tmp_path / "families.json"
    out = CliRunner().invoke(cli, ["bench", "cache", "--scenarios", "only", "--quick",
                                   "--no-progress", "-o", str(path)])
    assert out.exit_code == 0, out.output
    report = json.loads(path.read_text())
    assert report["params"]["quick"] and report["params"]["scenarios"] == list(sc.FAMILIES)
    assert "target window-heat never more than 1 point below LRU" in out.output


def test_reshuffle_moves_the_hot_values_of_the_real_workload(tmp_path):
    """--reshuffle-every deals the telecom workload's popularity order anew (issue 44's case);
    without it the workload is what it always was: the same hot value in every block."""
    from hibase_bench import cache as bench_cache

    def hottest_per_block(trace, block):
        return [Counter(k for k, _ in trace[i:i + block]).most_common(1)[0][0]
                for i in range(0, len(trace), block)]

    moving, info = bench_cache.record_trace(str(tmp_path / "a"), rows=3000, queries=3000,
                                            range_share=0, reshuffle_every=1000)
    assert info["reshuffle_every"] == 1000 and len(moving) == 3000  # a point query: 1 lookup
    assert len(set(hottest_per_block(moving, 1000))) == 3
    still, _ = bench_cache.record_trace(str(tmp_path / "b"), rows=3000, queries=3000,
                                        range_share=0)
    assert len(set(hottest_per_block(still, 1000))) == 1
    assert still[:1000] == moving[:1000]  # the first block is the unshuffled workload
    out = CliRunner().invoke(cli, ["bench", "cache", "--help"])
    assert "--reshuffle-every" in out.output
