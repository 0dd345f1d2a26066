"""Cache policies on synthetic lookup traces: the scenario table of ``hibase bench cache``.

Each scenario is a seeded trace of set lookups ``(key, size in records)``, the stream the
hot-index cache sees (a point query looks up one set, a range query one set per value). Every
policy replays the same trace through the same ``Policy`` objects the cache runs
(``cache.policy.simulate``), at capacities that are `ratios` of the records the trace touches
(each distinct set counted once), beside Belady's MIN on the same trace (the offline ceiling):

* ``zipf-0.8``, ``zipf-0.99``, ``zipf-1.2``: static popularity, Zipf law over `keys` sets of 1
  to 10 records;
* ``shifting``: Zipf 0.99 whose popularity order is re-drawn every `shift_every` lookups (the
  hot set moves);
* ``scans``: a Zipf 0.99 stream where a `scan_share` of the queries are range queries over
  `scan_width` consecutive cold values (each met once, rarely again);
* ``mixed-sizes``: Zipf 0.99 over sets of 1 to 500 records (log-uniform, independent of
  popularity).

Reported per scenario, ratio and policy: hit ratio (lookups answered by the cache), record
hit ratio (records answered) and the policy's own CPU time per lookup (``policy_us``, process
time of the replay: what the policy adds to every cached lookup). ``plot(report, folder)`` draws hit ratio against cache ratio, one
PNG per scenario (matplotlib: ``pip install 'hibase[bench]'``).
"""

from __future__ import annotations

import os
import random
import statistics
import time
from typing import Any, Callable, Iterable

from hibase.cache.policies import make_policy
from hibase.cache.policy import belady_hit_ratio, simulate
from hibase.extras import require

__all__ = ["SCENARIOS", "POLICIES", "RATIOS", "trace", "run", "targets", "plot",
           "summary_lines", "check_plotting"]

POLICIES = ("lru", "hotscore", "window-heat")
RATIOS = (0.05, 0.1, 0.2, 0.5)
SCENARIOS = ("zipf-0.8", "zipf-0.99", "zipf-1.2", "shifting", "scans", "mixed-sizes")
TITLES = {
    "zipf-0.8": "static Zipf 0.8, sets of 1-10 records",
    "zipf-0.99": "static Zipf 0.99, sets of 1-10 records",
    "zipf-1.2": "static Zipf 1.2, sets of 1-10 records",
    "shifting": "Zipf 0.99, popularity re-drawn every 2,500 lookups",
    "scans": "Zipf 0.99 + range scans of 20 cold values",
    "mixed-sizes": "Zipf 0.99, sets of 1-500 records",
}
ONLINE_LABEL = {"lru": "LRU", "hotscore": "hotscore (as published)",
                "window-heat": "window-heat (default)", "belady": "Belady's MIN"}


def check_plotting() -> None:
    """Raise MissingExtra (with how to install it) unless matplotlib can be imported."""
    require("bench", "plots (--plots)", ("matplotlib",))


def _cum(n: int, s: float) -> list[float]:
    total, out = 0.0, []
    for rank in range(n):
        total += 1.0 / (rank + 1) ** s
        out.append(total)
    return out


def trace(name: str, lookups: int = 30_000, keys: int = 5_000, seed: int = 0, *,
          shift_every: int = 2_500, scan_share: float = 0.05, scan_width: int = 20
          ) -> list[tuple[int, int]]:
    """The lookup trace of scenario `name` (see the module docstring)."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; choose from {', '.join(SCENARIOS)}")
    rng = random.Random(f"hibase-cache-scenario/{name}/{seed}")
    skew = float(name.split("-")[1]) if name.startswith("zipf-") else 0.99
    if name == "mixed-sizes":
        sizes = [max(1, round(500 ** rng.random())) for _ in range(keys)]
    else:
        sizes = [rng.randint(1, 10) for _ in range(keys)]
    order = list(range(keys))
    rng.shuffle(order)
    cum = _cum(keys, skew)
    out: list[tuple[int, int]] = []
    next_cold = keys  # scans walk values never queried by the Zipf stream
    while len(out) < lookups:
        if name == "shifting" and out and len(out) % shift_every == 0:
            rng.shuffle(order)
        if name == "scans" and rng.random() < scan_share:
            for _ in range(scan_width):
                out.append((next_cold, rng.randint(1, 10)))
                next_cold += 1
            continue
        key = order[rng.choices(range(keys), cum_weights=cum)[0]]
        out.append((key, sizes[key]))
    return out[:lookups]


def run(scenarios: Iterable[str] = SCENARIOS, ratios: Iterable[float] = RATIOS,
        policies: Iterable[str] = POLICIES, lookups: int = 30_000, keys: int = 5_000,
        seed: int = 0, progress: Callable[[str], Any] | None = None) -> dict:
    """Replay every scenario's trace through every policy at every ratio (and Belady's MIN)."""
    note = progress or (lambda _msg: None)
    ratios, policies = [float(r) for r in ratios], list(policies)
    results: list[dict] = []
    traces: dict[str, dict] = {}
    for name in scenarios:
        note(f"scenario {name}")
        tr = trace(name, lookups, keys, seed)
        sizes: dict = {}
        for key, size in tr:
            sizes[key] = size
        touched = sum(max(1, s) for s in sizes.values())
        traces[name] = {"lookups": len(tr), "distinct_sets": len(sizes),
                        "touched_records": touched}
        for ratio in ratios:
            capacity = max(1, int(ratio * touched))
            best = belady_hit_ratio(tr, capacity)
            rows, cpu = {"belady": best}, {}
            for policy in policies:
                started = time.process_time()
                rows[policy] = simulate(make_policy(policy, capacity), tr)
                cpu[policy] = round(1e6 * (time.process_time() - started) / len(tr), 2)
            for policy, st in rows.items():
                results.append({"scenario": name, "ratio": ratio, "capacity": capacity,
                                "policy": policy, "hit_ratio": round(st["hit_ratio"], 4),
                                "record_hit_ratio": round(st["record_hit_ratio"], 4),
                                "policy_us": cpu.get(policy)})
    report = {"params": {"lookups": lookups, "keys": keys, "seed": seed, "ratios": ratios,
                         "policies": policies, "scenarios": list(scenarios)},
              "traces": traces, "results": results}
    report["targets"] = targets(report)
    return report


def _table(report: dict) -> dict[tuple[str, float], dict[str, float]]:
    out: dict[tuple[str, float], dict[str, float]] = {}
    for r in report["results"]:
        out.setdefault((r["scenario"], r["ratio"]), {})[r["policy"]] = r["hit_ratio"]
    return out


def targets(report: dict) -> dict:
    """Issue 13's targets, each with the numbers behind it (differences in hit-ratio points)."""
    table = _table(report)
    out: dict[str, dict] = {}
    online = [p for p in report["params"]["policies"] if p != "belady"]

    def diff(scenario: str, ratio: float, a: str, b: str) -> float | None:
        row = table.get((scenario, ratio), {})
        return round(100 * (row[a] - row[b]), 2) if a in row and b in row else None

    if "window-heat" in online and "lru" in online:
        gains = {r: diff("zipf-0.99", r, "window-heat", "lru") for r in (0.1, 0.2)}
        if None not in gains.values():
            out["zipf-0.99: window-heat beats LRU by >= 4 points at 0.1 and 0.2"] = {
                "met": all(g >= 4 for g in gains.values()),
                "points": {str(r): g for r, g in gains.items()}}
        closest = {}
        for (scenario, ratio), row in table.items():
            if scenario == "zipf-0.99" and "belady" in row:
                gaps = {p: row["belady"] - row[p] for p in online if p in row}
                closest[str(ratio)] = min(gaps, key=lambda p: (gaps[p], p != "window-heat"))
        if closest:
            out["zipf-0.99: window-heat is the online policy closest to Belady"] = {
                "met": all(p == "window-heat" for p in closest.values()), "closest": closest}
        for scenario, rule, test in (
                ("shifting", "never more than 1 point below LRU", lambda d: d >= -1),
                ("scans", "beats LRU", lambda d: d > 0)):
            ds = {str(r): diff(scenario, r, "window-heat", "lru")
                  for (s, r) in table if s == scenario}
            if ds and None not in ds.values():
                out[f"{scenario}: window-heat {rule}"] = {
                    "met": all(test(d) for d in ds.values()), "points": ds}
    return out


def summary_lines(report: dict, with_targets: bool = True) -> list[str]:
    """The scenario table as text: hit ratio (record hit ratio) per policy."""
    table: dict[tuple[str, float], dict[str, tuple[float, float]]] = {}
    for r in report["results"]:
        table.setdefault((r["scenario"], r["ratio"]), {})[r["policy"]] = (
            r["hit_ratio"], r["record_hit_ratio"])
    names = [*report["params"]["policies"], "belady"]
    lines = ["scenario      ratio  " + "  ".join(f"{n:>15}" for n in names)]
    for (scenario, ratio), row in table.items():
        cells = [f"{row[n][0]:.3f} ({row[n][1]:.3f})" if n in row else "-" for n in names]
        lines.append(f"{scenario:<13} {ratio:<5}  " + "  ".join(f"{c:>15}" for c in cells))
    cpu: dict[str, list[float]] = {}
    for r in report["results"]:
        if r.get("policy_us") is not None:
            cpu.setdefault(r["policy"], []).append(r["policy_us"])
    if cpu:
        lines.append("policy CPU per lookup, median over the table: " + ", ".join(
            f"{name} {statistics.median(v):.1f} us" for name, v in cpu.items()))
    for name, t in (report.get("targets", {}) if with_targets else {}).items():
        detail = {k: v for k, v in t.items() if k != "met"}
        lines.append(f"target {name}: {'met' if t['met'] else 'MISSED'} {detail}")
    return lines


def plot(report: dict, folder: str) -> list[str]:
    """One PNG per scenario, hit ratio against cache ratio per policy; returns the paths."""
    check_plotting()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(folder, exist_ok=True)
    paths = []
    names = [*report["params"]["policies"], "belady"]
    for scenario in report["params"]["scenarios"]:
        fig, ax = plt.subplots(figsize=(5, 3.6))
        for name in names:
            pts = sorted((r["ratio"], r["hit_ratio"]) for r in report["results"]
                         if r["scenario"] == scenario and r["policy"] == name)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        linestyle="--" if name == "belady" else "-",
                        label=ONLINE_LABEL.get(name, name))
        ax.set_title(TITLES.get(scenario, scenario), fontsize=9)
        ax.set_xlabel("cache ratio (share of touched records)")
        ax.set_ylabel("hit ratio")
        ax.set_xscale("log")
        ax.set_xticks(report["params"]["ratios"])
        ax.set_xticklabels([str(r) for r in report["params"]["ratios"]])
        ax.minorticks_off()
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(folder, f"cache_{scenario}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
