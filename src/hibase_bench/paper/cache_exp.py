"""Experiment 2: hit ratio against cache size on the paper's workload (Brown-style Zipf point
and range queries), for hotscore as published, LRU, hibase's default (window-heat) and
Belady's MIN (the offline ceiling). The lookup trace is recorded from real queries on a real
table (``bench.cache.record_trace``); the policies replay it through the same Policy objects
the cache runs (``cache.policy.simulate``), at capacities that are ratios of the records the
trace touches. The paper: hotscore about 16 points above LRU at ratio 0.2.
"""

from __future__ import annotations

from typing import Any

from hibase.cache.policies import make_policy
from hibase.cache.policy import belady_hit_ratio, simulate
from .. import cache as C

__all__ = ["run", "RATIOS", "POLICIES"]

RATIOS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
POLICIES = ("hotscore", "lru", "window-heat")


def run(workdir: str, rows: int, queries: int, seed: int, zipf: float = 0.99) -> dict[str, Any]:
    trace, info = C.record_trace(workdir, rows, queries, zipf, seed)
    sizes: dict = {}
    for key, size in trace:
        sizes[key] = size
    touched = sum(max(1, s) for s in sizes.values())
    results = []
    for ratio in RATIOS:
        cap = max(1, int(ratio * touched))
        row: dict[str, Any] = {"ratio": ratio, "capacity": cap}
        for p in POLICIES:
            row[p] = simulate(make_policy(p, cap), trace)["hit_ratio"]
        row["belady"] = belady_hit_ratio(trace, cap)["hit_ratio"]
        results.append(row)
    at = {r["ratio"]: r for r in results}
    return {"rows": rows, "queries": queries, "zipf": zipf, "dataset": info,
            "lookups": len(trace), "distinct_sets": len(sizes), "touched_records": touched,
            "results": results,
            "hotscore_minus_lru_at_0.2": at[0.2]["hotscore"] - at[0.2]["lru"],
            "window_heat_minus_lru_at_0.2": at[0.2]["window-heat"] - at[0.2]["lru"],
            "paper_hotscore_minus_lru_at_0.2": 0.16}
