"""Cache policies on synthetic lookup traces: the scenario table of ``hibase bench cache``.

Each *family* is a kind of workload whose parameters are drawn at random per seed; a seed gives
one trace of set lookups ``(key, size in records)``, the stream the hot-index cache sees (a
point query looks up one set, a range query one set per value). Every policy replays the same
trace through the same ``Policy`` objects the cache runs (``cache.policy.simulate``), at
capacities that are `ratios` of the records the trace touches (each distinct set counted once),
beside Belady's MIN on the same trace (the offline ceiling). The families (sets of 1 to 10
records unless said; Zipf over `keys` sets in a random order):

* ``zipf-0.99``: static Zipf 0.99 (the paper's workload; only the key order and sizes vary);
* ``zipf``: static Zipf, the exponent drawn in [0.6, 1.3];
* ``shift-slow``, ``shift-medium``, ``shift-fast``: Zipf (exponent in [0.8, 1.2]) whose hot set
  moves every 5,000-10,000, 1,500-3,000 or 300-1,000 lookups: a share (drawn in [0.5, 1]) of
  the ranking is re-dealt;
* ``drift``: Zipf (exponent in [0.8, 1.2]) where new sets keep arriving among the 50 hottest
  ranks (new content), a chance drawn in [0.2%, 2%] per lookup, pushing the others down;
* ``scans``: Zipf (exponent in [0.8, 1.2]) where a share (2-10%) of the queries are range
  queries over 10-100 consecutive values never met before (each met once);
* ``loop``: Zipf (exponent in [0.8, 1.2]) mixed with a loop: a share (20-60%) of the lookups
  walk round a cycle of 200-2,000 other sets (LRU's worst case when the loop outgrows it);
* ``mixed-sizes``: Zipf (exponent in [0.8, 1.2]) over sets of 1-500 records (log-uniform).

The policies are window-heat (the default), LRU, hotscore as published, and two published
peers implemented in ``cache_peers.py``: S3-FIFO and W-TinyLFU. Per family, ratio and policy
the report gives medians over the seeds of the hit ratio (lookups answered by the cache), the
record hit ratio, the hit ratio as a share of Belady's MIN, the difference to LRU in points
(paired by seed) and the policy's own CPU time per lookup (``policy_us``, process time of the
replay: what the policy adds to every cached lookup). ``quick=True`` is a small version for
tests. ``plot(report, folder)`` draws median hit ratio against cache ratio, one PNG per family
(matplotlib: ``pip install 'hibase[bench]'``).
"""

from __future__ import annotations

import bisect
import os
import random
import statistics
import time
from typing import Any, Callable, Iterable

from hibase.cache.policies import make_policy
from hibase.cache.policy import Policy, belady_hit_ratio, simulate
from hibase.extras import require

from .cache_peers import PEERS

__all__ = ["FAMILIES", "SCENARIOS", "POLICIES", "RATIOS", "SEEDS", "QUICK", "draw", "trace",
           "run", "targets", "plot", "summary_lines", "check_plotting", "build"]

DEFAULT = "window-heat"
POLICIES = (DEFAULT, "lru", "hotscore", "s3-fifo", "w-tinylfu")
RATIOS = (0.05, 0.1, 0.2, 0.3, 0.5)
SEEDS = 5
LOOKUPS, KEYS = 30_000, 5_000
QUICK: dict[str, Any] = {"seeds": 2, "lookups": 5_000, "keys": 1_000, "ratios": (0.05, 0.1, 0.2, 0.5)}
FAMILIES = ("zipf-0.99", "zipf", "shift-slow", "shift-medium", "shift-fast", "drift", "scans",
            "loop", "mixed-sizes")
SCENARIOS = FAMILIES  # the name the command line and older reports use
SHIFT_EVERY = {"shift-slow": (5_000, 10_000), "shift-medium": (1_500, 3_000),
               "shift-fast": (300, 1_000)}
TITLES = {
    "zipf-0.99": "static Zipf 0.99",
    "zipf": "static Zipf 0.6-1.3",
    "shift-slow": "hot set moves every 5,000-10,000 lookups",
    "shift-medium": "hot set moves every 1,500-3,000 lookups",
    "shift-fast": "hot set moves every 300-1,000 lookups",
    "drift": "new hot sets keep arriving",
    "scans": "Zipf + range scans of cold values",
    "loop": "Zipf + a loop over 200-2,000 sets",
    "mixed-sizes": "Zipf, sets of 1-500 records",
}
LABEL = {"lru": "LRU", "hotscore": "hotscore (as published)", DEFAULT: "window-heat (default)",
         "belady": "Belady's MIN", "s3-fifo": "S3-FIFO", "w-tinylfu": "W-TinyLFU"}


def check_plotting() -> None:
    """Raise MissingExtra (with how to install it) unless matplotlib can be imported."""
    require("bench", "plots (--plots)", ("matplotlib",))


def build(name: str, capacity: int) -> Policy:
    """A policy of the table by name: hibase's (make_policy) or a peer (cache_peers)."""
    return PEERS[name](capacity) if name in PEERS else make_policy(name, capacity)


def _params(family: str, rng: random.Random) -> dict:
    """The family's parameters for one seed (see the module docstring)."""
    p: dict[str, Any] = {"skew": 0.99 if family == "zipf-0.99" else
                         round(rng.uniform(0.6, 1.3), 3) if family == "zipf" else
                         round(rng.uniform(0.8, 1.2), 3)}
    if family in SHIFT_EVERY:
        p["shift_every"] = rng.randint(*SHIFT_EVERY[family])
        p["moved_share"] = round(rng.uniform(0.5, 1.0), 3)
    elif family == "drift":
        p["arrival"] = round(rng.uniform(0.002, 0.02), 4)
    elif family == "scans":
        p["scan_share"] = round(rng.uniform(0.02, 0.1), 3)
        p["scan_width"] = rng.randint(10, 100)
    elif family == "loop":
        p["loop_share"] = round(rng.uniform(0.2, 0.6), 3)
        p["loop_sets"] = rng.randint(200, 2_000)
    return p


def draw(family: str, lookups: int = LOOKUPS, keys: int = KEYS, seed: int = 0
         ) -> tuple[dict, list[tuple[int, int]]]:
    """(parameters, trace) of `family` for `seed`: the same every time for the same arguments."""
    if family not in FAMILIES:
        raise ValueError(f"unknown scenario {family!r}; choose from {', '.join(FAMILIES)}")
    rng = random.Random(f"hibase-cache-family/{family}/{seed}")
    p = _params(family, rng)
    if family == "mixed-sizes":
        sizes = [max(1, round(500 ** rng.random())) for _ in range(keys)]
    else:
        sizes = [rng.randint(1, 10) for _ in range(keys)]
    order = list(range(keys))  # order[rank] = key
    rng.shuffle(order)
    cum, total = [], 0.0
    for rank in range(keys):
        total += 1.0 / (rank + 1) ** p["skew"]
        cum.append(total)
    out: list[tuple[int, int]] = []
    fresh = keys  # keys never seen so far: scans, new arrivals and the loop take from here
    loop = list(range(fresh, fresh + p.get("loop_sets", 0)))
    fresh += len(loop)
    for key in loop:
        sizes.append(rng.randint(1, 10))
    at = 0  # position in the loop
    next_shift = p.get("shift_every", 0)
    while len(out) < lookups:
        if next_shift and len(out) >= next_shift:
            next_shift += p["shift_every"]
            ranks = rng.sample(range(keys), round(p["moved_share"] * keys))
            moved = [order[r] for r in ranks]
            rng.shuffle(moved)
            for r, key in zip(ranks, moved):
                order[r] = key
        if family == "drift" and rng.random() < p["arrival"]:
            order.insert(rng.randrange(50), fresh)
            order.pop()
            sizes.append(rng.randint(1, 10))
            fresh += 1
        if family == "scans" and rng.random() < p["scan_share"]:
            for _ in range(p["scan_width"]):
                out.append((fresh, rng.randint(1, 10)))
                fresh += 1
            continue
        if family == "loop" and rng.random() < p["loop_share"]:
            key = loop[at]
            at = (at + 1) % len(loop)
        else:
            key = order[bisect.bisect_left(cum, rng.random() * total)]
        out.append((key, sizes[key]))
    return p, out[:lookups]


def trace(name: str, lookups: int = LOOKUPS, keys: int = KEYS, seed: int = 0
          ) -> list[tuple[int, int]]:
    """The lookup trace of family `name` for `seed` (see :func:`draw`)."""
    return draw(name, lookups, keys, seed)[1]


def run(scenarios: Iterable[str] = FAMILIES, ratios: Iterable[float] = RATIOS,
        policies: Iterable[str] = POLICIES, lookups: int = LOOKUPS, keys: int = KEYS,
        seeds: int = SEEDS, seed: int = 0, progress: Callable[[str], Any] | None = None,
        quick: bool = False) -> dict:
    """Replay every family's traces (seeds ``seed .. seed + seeds - 1``) through every policy at
    every ratio, and Belady's MIN; ``quick=True`` takes QUICK's sizes instead."""
    if quick:
        seeds, lookups, keys, ratios = (QUICK["seeds"], QUICK["lookups"], QUICK["keys"],
                                        QUICK["ratios"])
    note = progress or (lambda _msg: None)
    ratios, policies, families = [float(r) for r in ratios], list(policies), list(scenarios)
    started = time.perf_counter()
    results: list[dict] = []
    traces: dict[str, list] = {}
    for name in families:
        traces[name] = []
        for s in range(seed, seed + seeds):
            note(f"family {name}, seed {s}")
            params, tr = draw(name, lookups, keys, s)
            sizes = dict(tr)
            touched = sum(max(1, size) for size in sizes.values())
            traces[name].append({"seed": s, **params, "lookups": len(tr),
                                 "distinct_sets": len(sizes), "touched_records": touched})
            for ratio in ratios:
                capacity = max(1, int(ratio * touched))
                rows, cpu = {"belady": belady_hit_ratio(tr, capacity)}, {}
                for policy in policies:
                    t0 = time.process_time()
                    rows[policy] = simulate(build(policy, capacity), tr)
                    cpu[policy] = round(1e6 * (time.process_time() - t0) / len(tr), 2)
                best = rows["belady"]["hit_ratio"]
                for policy, st in rows.items():
                    results.append({
                        "scenario": name, "seed": s, "ratio": ratio, "capacity": capacity,
                        "policy": policy, "hit_ratio": round(st["hit_ratio"], 4),
                        "record_hit_ratio": round(st["record_hit_ratio"], 4),
                        "share_of_min": round(st["hit_ratio"] / best, 4) if best else None,
                        "policy_us": cpu.get(policy)})
    report = {"params": {"lookups": lookups, "keys": keys, "seeds": seeds, "first_seed": seed,
                         "ratios": ratios, "policies": policies, "scenarios": families,
                         "quick": quick},
              "traces": traces, "results": results}
    report["medians"] = medians(report)
    report["targets"] = targets(report)
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    return report


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 4) if values else None


def medians(report: dict) -> list[dict]:
    """Per family, ratio and policy, medians over the seeds: hit ratio, record hit ratio, share
    of MIN, CPU per lookup, and the difference to LRU in points (paired by seed)."""
    by: dict[tuple[str, float, str], list[dict]] = {}
    lru: dict[tuple[str, float, int], float] = {}
    for r in report["results"]:
        by.setdefault((r["scenario"], r["ratio"], r["policy"]), []).append(r)
        if r["policy"] == "lru":
            lru[(r["scenario"], r["ratio"], r["seed"])] = r["hit_ratio"]
    out = []
    for (family, ratio, policy), rows in by.items():
        diffs = [100 * (r["hit_ratio"] - lru[(family, ratio, r["seed"])]) for r in rows
                 if (family, ratio, r["seed"]) in lru]
        out.append({"scenario": family, "ratio": ratio, "policy": policy, "seeds": len(rows),
                    **{k: _median([r.get(k) for r in rows]) for k in (
                        "hit_ratio", "record_hit_ratio", "share_of_min", "policy_us")},
                    "vs_lru_points": round(statistics.median(diffs), 2) if diffs else None})
    return out


def _table(report: dict) -> dict[tuple[str, float], dict[str, dict]]:
    out: dict[tuple[str, float], dict[str, dict]] = {}
    for m in report.get("medians") or medians(report):
        out.setdefault((m["scenario"], m["ratio"]), {})[m["policy"]] = m
    return out


def targets(report: dict) -> dict:
    """Issue 44's targets, each with the numbers behind it (medians over seeds; points)."""
    table = _table(report)
    online = report["params"]["policies"]
    out: dict[str, dict] = {}
    if DEFAULT not in online or "lru" not in online:
        return out
    worst = {f"{family} {ratio}": row[DEFAULT]["vs_lru_points"]
             for (family, ratio), row in table.items() if DEFAULT in row}
    if worst:
        low = min(worst, key=lambda k: worst[k])
        out["window-heat never more than 1 point below LRU (any family, any ratio)"] = {
            "met": worst[low] >= -1, "worst": {low: worst[low]},
            "below_lru": {k: v for k, v in worst.items() if v < 0}}
    gains = {str(r): table[("zipf-0.99", r)][DEFAULT]["vs_lru_points"] for r in (0.1, 0.2)
             if DEFAULT in table.get(("zipf-0.99", r), {})}
    if len(gains) == 2:
        out["zipf-0.99: window-heat beats LRU by >= 4 points at 0.1 and 0.2"] = {
            "met": all(g >= 4 for g in gains.values()), "points": gains}
    shares = {str(r): row[DEFAULT]["share_of_min"] for (f, r), row in table.items()
              if f == "zipf-0.99" and DEFAULT in row}
    if shares:
        out["zipf-0.99: window-heat >= 90% of Belady's MIN (goal)"] = {
            "met": all(v >= 0.9 for v in shares.values()), "share_of_min": shares}
    return out


def summary_lines(report: dict, with_targets: bool = True) -> list[str]:
    """The table as text: median hit ratio per policy (and its share of MIN), then window-heat
    minus LRU in points, per family and ratio; CPU per lookup per policy."""
    table = _table(report)
    names = [*report["params"]["policies"], "belady"]
    p = report["params"]
    lines = [f"scenario table: {len(p['scenarios'])} families x {p['seeds']} seeds, "
             f"{p['lookups']:,} lookups over {p['keys']:,} sets; median hit ratio "
             "(share of Belady's MIN)",
             "family        ratio " + "".join(f"{n:>15}" for n in names) + "  default-LRU"]
    for (family, ratio), row in table.items():
        cells = [(f"{row[n]['hit_ratio']:.3f} ({row[n]['share_of_min']:.0%})"
                  if n != "belady" else f"{row[n]['hit_ratio']:.3f}") if n in row else "-"
                 for n in names]
        diff = row.get(DEFAULT, {}).get("vs_lru_points")
        lines.append(f"{family:<13} {ratio:<5} " + "".join(f"{c:>15}" for c in cells)
                     + (f"  {diff:+.1f}" if diff is not None else ""))
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
    """One PNG per family, median hit ratio against cache ratio per policy; returns the
    paths."""
    check_plotting()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(folder, exist_ok=True)
    paths = []
    names = [*report["params"]["policies"], "belady"]
    meds = report.get("medians") or medians(report)
    for family in report["params"]["scenarios"]:
        fig, ax = plt.subplots(figsize=(5, 3.6))
        for name in names:
            pts = sorted((m["ratio"], m["hit_ratio"]) for m in meds
                         if m["scenario"] == family and m["policy"] == name)
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o",
                        linestyle="--" if name == "belady" else "-",
                        label=LABEL.get(name, name))
        ax.set_title(TITLES.get(family, family) + " (median over seeds)", fontsize=9)
        ax.set_xlabel("cache ratio (share of touched records)")
        ax.set_ylabel("hit ratio")
        ax.set_xscale("log")
        ax.set_xticks(report["params"]["ratios"])
        ax.set_xticklabels([str(r) for r in report["params"]["ratios"]])
        ax.minorticks_off()
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(folder, f"cache_{family}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
