"""Experiment 5: the SCBF paper's tables 1-4 (``bench.scbf``: recomputed, FPR measured,
overflow computed exactly and simulated) and local vs global vs SCBF-routed lookups
(``bench.local``), each run as those benchmarks run, at this scale's size."""

from __future__ import annotations

from typing import Any

from .. import local, scbf

__all__ = ["run"]


def run(workdir: str, probes: int, overflow_seeds: int, rows: int, regions: int,
        queries: int, seed: int) -> dict[str, Any]:
    s = scbf.run(probes=probes, seed=1, overflow_seeds=overflow_seeds)
    lo = local.run(rows=rows, regions=regions, queries=queries, seed=seed, workdir=workdir)
    return {"scbf": s, "local": lo}
