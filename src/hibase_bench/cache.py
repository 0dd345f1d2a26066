"""The paper's cache experiment (SPEC §1): Zipf-distributed point and range queries against the
hot-index cache at several cache sizes, for window-heat (the default), hotscore as published,
LRU, no cache, and the offline optimum; then the scenario table of bench/cache_scenarios.py.

``run(rows, queries)`` builds a telecom table (``hibase.samples.telecom.telecom_rows``) with two global
indexes, ``by_ip`` on f:ip (covering f:port, f:mdn; Zipf-sized sets) and ``by_cell`` on f:cell_id
(covering f:mdn), then draws `queries` queries whose targets follow a Zipf law of exponent `zipf`
over a seeded random order of the values:

* point queries ``f.ip = X`` (one cached set each),
* range queries ``f.cell_id BETWEEN s AND s + range_width - 1`` (a value-table walk, then one
  cached set per value: the paper's range-query path), a `range_share` of the queries.

With `reshuffle_every` = N the popularity order of the values is dealt anew every N queries (a
hot set that moves, issue 44's case through the real cache path: it measured window-heat 0.606
against LRU 0.626 at N = 2,500 and 0.546 against 0.554 at N = 800 on 40,000 rows, ratio 0.2).

A first pass records the trace of set lookups (key, size in records). Capacities are the `ratios`
of the records the workload touches (each distinct set counted once, an empty one as 1). For each
backend (in-process ``memory``; ``redis`` with each of `redis_nodes` local redis-server processes
on free ports, started here and stopped after), each ratio and each policy, the same queries run
through ``Table.where`` on a fresh cache: hit ratio (lookups answered by the cache), mean and
median query latency. The offline optimum is Belady's MIN on the same trace with the same capacity
(``policy.belady_hit_ratio``): the ceiling every policy is measured against. ``hot_cold`` compares
a hit with a miss on the most popular point queries, both for the index lookup alone
(``IndexManager.read_value``) and for the whole query.

The report is JSON-serializable; ``findings`` says in words how each policy fares against LRU and
the optimum (and flags every ratio where hotscore or window-heat loses to LRU). With
``scenarios=True`` it also holds ``scenarios``, the policies and two published peers on
families of synthetic traces (static Zipf, hot sets moving at several speeds, scans, loops,
mixed set sizes; several seeds each; bench/cache_scenarios.py, options in
`scenario_options`), and with ``plots=DIR`` one PNG per family.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
from contextlib import ExitStack
from typing import Any, Callable, Iterable, Sequence

import hibase

from hibase.cache.backend import cache_key
from hibase.cache.policies import make_policy
from hibase.cache.policy import belady_hit_ratio, simulate
from hibase.index import lookup
from . import cache_scenarios
from hibase.samples.telecom import C_IP, TELECOM_COLUMNS, telecom_rows, value_counts

__all__ = ["run", "POLICIES", "summary", "record_trace"]

TABLE = "tel"
POLICIES = ("window-heat", "hotscore", "lru", "hotscore-per-record")
REDIS_POLICIES = ("window-heat", "hotscore", "lru")
HEAT = ("window-heat", "hotscore", "hotscore-per-record")  # take alpha and count_period
N_CELLS, CELL0 = 20_000, 10_000
POINT_COLUMNS = [b"f:port", b"f:mdn"]
SIZE_TARGETS = (1, 10, 100, 1000)
# policy variants replayed on the same trace (simulation only): what would close the gap
# name -> (policy, make_policy's options)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "hotscore fill_gaps": ("hotscore", {"fill_gaps": True}),
    "hotscore-per-record fill_gaps": ("hotscore-per-record", {"fill_gaps": True}),
    "hotscore count_period=100": ("hotscore", {"count_period": 100}),
    "hotscore-per-record count_period=100 fill_gaps": (
        "hotscore-per-record", {"count_period": 100, "fill_gaps": True}),
    "hotscore alpha=0.9": ("hotscore", {"alpha": 0.9}),
}
RANGE_COLUMNS = [b"f:mdn"]


class _Recorder:
    """A stand-in cache that answers every lookup from the index and records (key, size)."""

    parallel = False

    def __init__(self) -> None:
        self.trace: list[tuple[bytes, int]] = []

    def read(self, spec: Any, vkey: bytes, loader: Callable[[], list], tag: bytes = b"") -> list:
        entries = loader()
        self.trace.append((cache_key(spec.table, vkey), len(entries)))
        return entries

    def apply(self, changes: list) -> None:
        pass

    def invalidate(self, table: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass


def _record(db: Any, work: Sequence[tuple[str, str, list[bytes]]]) -> list[tuple[bytes, int]]:
    """Run `work` on `db` (no cache) and return the set lookups it made, (key, size) each."""
    rec = _Recorder()
    db.indexer.cache = rec
    try:
        _timed(db, work)
    finally:
        db.indexer.cache = None
    return rec.trace


def record_trace(workdir: str, rows: int, queries: int, zipf: float = 0.99, seed: int = 0,
                 range_share: float = 0.2, range_width: int = 10, reshuffle_every: int = 0
                 ) -> tuple[list[tuple[bytes, int]], dict]:
    """The lookup trace of this experiment's workload on a table built under `workdir` (kept
    there): (trace, dataset info). For replaying policies offline (bench paper)."""
    path = os.path.join(workdir, "cache-store")
    dataset = _build(path, rows, seed)
    work, _ = _workload(rows, queries, zipf, seed, range_share, range_width, reshuffle_every)
    with hibase.connect(path, cache_policy=None, read_only=True) as db:
        trace = _record(db, work)
    return trace, {**dataset, "queries": queries, "zipf": zipf, "range_share": range_share,
                   "range_width": range_width, "reshuffle_every": reshuffle_every}


def _zipf_cum(n: int, s: float) -> list[float]:
    total, cum = 0.0, []
    for rank in range(n):
        total += 1.0 / (rank + 1) ** s
        cum.append(total)
    return cum


def _workload(rows: int, queries: int, zipf: float, seed: int, range_share: float,
              width: int, reshuffle_every: int = 0
              ) -> tuple[list[tuple[str, str, list[bytes]]], list[str]]:
    """(kind, condition, columns) per query, and the IPs by popularity at the start (hottest
    first); with `reshuffle_every` the popularity order is dealt anew every so many queries."""
    rng = random.Random(f"hibase-bench-cache/{seed}")
    ips = sorted(ip.decode() for ip in value_counts(rows, seed, C_IP))
    rng.shuffle(ips)
    starts = list(range(CELL0, CELL0 + N_CELLS - width + 1))
    rng.shuffle(starts)
    ip_cum, start_cum = _zipf_cum(len(ips), zipf), _zipf_cum(len(starts), zipf)
    first = list(ips)
    out: list[tuple[str, str, list[bytes]]] = []
    for i in range(queries):
        if reshuffle_every and i and i % reshuffle_every == 0:
            rng.shuffle(ips)
            rng.shuffle(starts)
        if rng.random() < range_share:
            s = rng.choices(starts, cum_weights=start_cum)[0]
            out.append(("range", f"f.cell_id BETWEEN {s} AND {s + width - 1}", RANGE_COLUMNS))
        else:
            ip = rng.choices(ips, cum_weights=ip_cum)[0]
            out.append(("point", f"f.ip = '{ip}'", POINT_COLUMNS))
    return out, first


def _build(path: str, rows: int, seed: int) -> dict:
    t0 = time.perf_counter()
    with hibase.connect(path, cache_policy=None) as db:
        db.create_table(TABLE, {"f": {}}, columns=TELECOM_COLUMNS)
        t = db.table(TABLE)
        with t.batch(batch_size=5000) as b:
            for key, data in telecom_rows(rows, seed):
                b.put(key, data)
        loaded = time.perf_counter()
        db.create_index(TABLE, "by_ip", ["f:ip"], covering=["f:port", "f:mdn"])
        db.create_index(TABLE, "by_cell", ["f:cell_id"], covering=["f:mdn"])
        built = time.perf_counter()
    return {"rows": rows, "load_s": round(loaded - t0, 2),
            "index_build_s": round(built - loaded, 2),
            "indexes": ["by_ip (f:ip) covering f:port, f:mdn",
                        "by_cell (f:cell_id) covering f:mdn"]}


def _timed(db: Any, queries: Sequence[tuple[str, str, list[bytes]]]) -> list[float]:
    t = db.table(TABLE)
    out = []
    clock = time.perf_counter
    for _, cond, cols in queries:
        start = clock()
        for _ in t.where(cond, columns=cols):
            pass
        out.append(clock() - start)
    return out


def _lat(latencies: list[float]) -> dict:
    if not latencies:
        return {"mean_ms": None, "p50_ms": None, "p95_ms": None}
    ordered = sorted(latencies)
    return {"mean_ms": round(1000 * statistics.fmean(latencies), 4),
            "p50_ms": round(1000 * ordered[len(ordered) // 2], 4),
            "p95_ms": round(1000 * ordered[int(len(ordered) * 0.95)], 4)}


def _by_size(counts: dict, samples: int) -> list[tuple[int, list[str]]]:
    """For set sizes 1, 10, 100, 1000 rows: the IPs whose row counts are nearest."""
    import math
    ranked = sorted(counts.items())
    out = []
    for target in SIZE_TARGETS:
        near = sorted(ranked, key=lambda kv: (abs(math.log(kv[1] / target)), kv[0]))
        out.append((target, [ip.decode() for ip, _ in near[:max(1, samples // 4)]]))
    return out


def _hot_cold(db: Any, ips: list[str], samples: int) -> dict:
    """Miss vs hit on `ips`: index lookup alone and whole query."""
    spec = db.indexer.catalog.get(TABLE, "by_ip")
    cache = db.cache
    t = db.table(TABLE)
    store = db.store
    chosen = ips[:samples]
    lk_none: list[float] = []  # seconds: lookups without cache, on a miss, on a hit
    lk_cold: list[float] = []
    lk_hot: list[float] = []
    q_cold: list[float] = []  # seconds: whole queries on a miss, on a hit
    q_hot: list[float] = []
    sizes: list[int] = []  # entries per looked-up value
    clock = time.perf_counter
    cache.clear()
    for ip in chosen:
        vkey = spec.value_key([ip])
        a = clock()
        n = len(lookup.entries_for_value(store, spec, vkey))
        lk_none.append(clock() - a)
        a = clock()
        db.indexer.read_value(spec, vkey)
        lk_cold.append(clock() - a)
        a = clock()
        db.indexer.read_value(spec, vkey)
        lk_hot.append(clock() - a)
        sizes.append(n)
    cache.clear()
    for ip in chosen:
        cond = f"f.ip = '{ip}'"
        for bucket in (q_cold, q_hot):
            a = clock()
            for _ in t.where(cond, columns=POINT_COLUMNS):
                pass
            bucket.append(clock() - a)
    us = lambda xs: round(1e6 * statistics.fmean(xs), 2)  # noqa: E731
    ms = lambda xs: round(1e3 * statistics.fmean(xs), 4)  # noqa: E731
    return {
        "samples": len(chosen), "mean_set_size": round(statistics.fmean(sizes), 1) if sizes else 0,
        "lookup_no_cache_us": us(lk_none), "lookup_cold_us": us(lk_cold),
        "lookup_hot_us": us(lk_hot), "lookup_hot_speedup": round(
            statistics.fmean(lk_cold) / statistics.fmean(lk_hot), 2),
        "query_cold_ms": ms(q_cold), "query_hot_ms": ms(q_hot),
        "query_hot_speedup": round(statistics.fmean(q_cold) / statistics.fmean(q_hot), 2),
    }


def run(rows: int = 100_000, queries: int = 10_000, zipf: float = 0.99,
        ratios: Iterable[float] = (0.2, 0.4, 0.6, 0.8), backends: Iterable[str] = ("memory",),
        redis_nodes: Iterable[int] = (1, 2, 4), seed: int = 0, *,
        policies: Iterable[str] = POLICIES, redis_policies: Iterable[str] = REDIS_POLICIES,
        range_share: float = 0.2, range_width: int = 10, hot_cold_samples: int = 200,
        reshuffle_every: int = 0,
        alpha: float | None = None, count_period: int | None = None,
        workdir: str | None = None, progress: Callable[[str], Any] | None = None,
        scenarios: bool = False, plots: str | None = None,
        scenario_options: dict | None = None) -> dict:
    """Run the experiment (see the module docstring); returns a JSON-serializable report."""
    ratios, backends = [float(r) for r in ratios], list(backends)
    redis_nodes, policies = [int(n) for n in redis_nodes], list(policies)
    redis_policies = [p for p in redis_policies if p in policies] or policies
    for b in backends:
        if b not in ("memory", "redis"):
            raise ValueError(f"unknown backend {b!r}; use 'memory' and/or 'redis'")
    if rows < 1 or queries < 1 or not ratios or any(not 0 < r <= 1 for r in ratios):
        raise ValueError("rows and queries must be >= 1 and ratios in (0, 1]")
    note = progress or (lambda _msg: None)
    hot_opts = {k: v for k, v in (("hotscore_alpha", alpha), ("count_period", count_period))
                if v is not None}
    started = time.perf_counter()
    base = tempfile.mkdtemp(prefix="hibase-bench-cache-", dir=workdir)
    try:
        path = os.path.join(base, "store")
        note(f"loading {rows:,} telecom rows and building the indexes")
        dataset = _build(path, rows, seed)
        work, ips = _workload(rows, queries, zipf, seed, range_share, range_width,
                              reshuffle_every)
        popular = [ip for ip in ips]  # already in popularity order (rank 0 hottest)
        by_size = _by_size(value_counts(rows, seed, C_IP), hot_cold_samples)

        note("recording the lookup trace")
        with hibase.connect(path, cache_policy=None, read_only=True) as db:
            trace = _record(db, work)
            note("no-cache baseline")
            no_cache = _lat(_timed(db, work))
        sizes: dict[bytes, int] = {}
        for key, size in trace:
            sizes[key] = size
        touched = sum(max(1, s) for s in sizes.values())
        capacities = {r: max(1, int(r * touched)) for r in ratios}
        optimum = {r: belady_hit_ratio(trace, capacities[r]) for r in ratios}
        simulated = {
            (p, r): simulate(make_policy(p, capacities[r], **(
                {k.replace("hotscore_", ""): v for k, v in hot_opts.items()}
                if p in HEAT else {})), trace)
            for p in policies for r in ratios}

        variants = {
            name: {str(r): round(simulate(make_policy(p, capacities[r], **opts),
                                          trace)["hit_ratio"], 4) for r in ratios}
            for name, (p, opts) in VARIANTS.items()}
        configs: list[tuple[str, int]] = []
        if "memory" in backends:
            configs.append(("memory", 0))
        if "redis" in backends:
            configs += [("redis", n) for n in redis_nodes]
        results: list[dict] = []
        hot_cold: list[dict] = []
        for backend, nodes in configs:
            with ExitStack() as stack:
                if backend == "redis":
                    from hibase.cluster.local import RedisProcess
                    servers = [stack.enter_context(RedisProcess()) for _ in range(nodes)]
                    spec = ",".join(s.url for s in servers)
                    names = redis_policies
                else:
                    spec, names = "memory", policies
                label = backend if backend == "memory" else f"redis x{nodes}"
                for ratio in ratios:
                    for policy in names:
                        note(f"{label}: {policy} at cache ratio {ratio}")
                        heat = policy in HEAT  # the policies that take alpha and count_period
                        with hibase.connect(path, read_only=True, cache=spec, cache_policy=policy,
                                            cache_capacity=capacities[ratio],
                                            hotscore_alpha=alpha if heat else None,
                                            count_period=count_period if heat else None) as db:
                            if backend == "redis":
                                db.cache.clear()
                            lat = _timed(db, work)
                            st = db.cache_stats()
                        best = optimum[ratio]["hit_ratio"]
                        results.append({
                            "backend": backend, "nodes": nodes, "ratio": ratio,
                            "capacity": capacities[ratio], "policy": policy,
                            "hit_ratio": round(st["hit_ratio"], 4),
                            "record_hit_ratio": round(
                                st["policy_stats"]["record_hit_ratio"], 4),
                            "simulated_hit_ratio": round(
                                simulated[(policy, ratio)]["hit_ratio"], 4),
                            "optimum_hit_ratio": round(best, 4),
                            "gap_to_optimum": round(best - st["hit_ratio"], 4),
                            "share_of_optimum": round(st["hit_ratio"] / best, 4) if best else None,
                            "evictions": st["evictions"], **_lat(lat),
                            "speedup_vs_no_cache": round(no_cache["mean_ms"] / (
                                1000 * statistics.fmean(lat)), 3),
                        })
                note(f"{label}: hot vs cold")
                with hibase.connect(path, read_only=True, cache=spec, cache_policy="lru",
                                    cache_capacity=10 * rows) as db:
                    hot_cold.append({"backend": backend, "nodes": nodes, "sets": "popular",
                                     **_hot_cold(db, popular, hot_cold_samples)})
                    for target, chosen in by_size:
                        hot_cold.append({"backend": backend, "nodes": nodes,
                                         "sets": f"~{target} rows",
                                         **_hot_cold(db, chosen, len(chosen))})
    finally:
        shutil.rmtree(base, ignore_errors=True)

    point = sum(1 for kind, _, _ in work if kind == "point")
    report: dict[str, Any] = {
        "experiment": "hot-index cache: hit ratio and latency by policy and cache ratio",
        "params": {"rows": rows, "queries": queries, "zipf": zipf, "ratios": ratios,
                   "backends": backends, "redis_nodes": redis_nodes, "seed": seed,
                   "policies": policies, "redis_policies": redis_policies,
                   "range_share": range_share, "range_width": range_width,
                   "reshuffle_every": reshuffle_every, "hot_cold_samples": hot_cold_samples, "hotscore_alpha": alpha,
                   "count_period": count_period},
        "dataset": dataset,
        "workload": {"point_queries": point, "range_queries": len(work) - point,
                     "lookups": len(trace), "distinct_sets": len(sizes),
                     "touched_records": touched,
                     "capacities": {str(r): c for r, c in capacities.items()}},
        "no_cache": no_cache,
        "optimum": {str(r): {k: (round(v, 4) if isinstance(v, float) else v)
                             for k, v in o.items()} for r, o in optimum.items()},
        "results": results,
        "simulated_variants": variants,
        "hot_cold": hot_cold,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    report["comparison"], report["findings"], report["meets_targets"] = _judge(report)
    if scenarios:
        report["scenarios"] = cache_scenarios.run(seed=seed, progress=note,
                                                  **(scenario_options or {}))
        report["meets_targets"].update(
            {k: v["met"] for k, v in report["scenarios"]["targets"].items()})
    if plots and "scenarios" in report:
        report["plots"] = cache_scenarios.plot(report.get("scenarios") or {}, plots)
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    return report


def _judge(report: dict) -> tuple[dict, list[str], dict]:
    """window-heat - LRU and hotscore - LRU per backend and ratio; findings in words; targets
    met or not."""
    by: dict[tuple[str, int, float], dict[str, dict]] = {}
    for r in report["results"]:
        by.setdefault((r["backend"], r["nodes"], r["ratio"]), {})[r["policy"]] = r
    comparison: dict[str, dict] = {}
    findings: list[str] = []
    losses, default_losses = [], []
    for (backend, nodes, ratio), pol in sorted(by.items()):
        label = backend if backend == "memory" else f"redis x{nodes}"
        row: dict[str, Any] = {}
        if "hotscore" in pol and "lru" in pol:
            diff = pol["hotscore"]["hit_ratio"] - pol["lru"]["hit_ratio"]
            row["hotscore_minus_lru"] = round(diff, 4)
            row["hotscore_vs_lru_latency"] = round(
                pol["hotscore"]["mean_ms"] / pol["lru"]["mean_ms"], 3)
            if diff < 0:
                losses.append((label, ratio, diff))
        if "window-heat" in pol and "lru" in pol:
            diff = pol["window-heat"]["hit_ratio"] - pol["lru"]["hit_ratio"]
            row["window_heat_minus_lru"] = round(diff, 4)
            if diff < 0:
                default_losses.append((label, ratio, diff))
        if "hotscore-per-record" in pol and "lru" in pol:
            row["per_record_minus_lru"] = round(
                pol["hotscore-per-record"]["hit_ratio"] - pol["lru"]["hit_ratio"], 4)
        for name, r in pol.items():
            row[f"{name}_gap_to_optimum"] = r["gap_to_optimum"]
        comparison.setdefault(label, {})[str(ratio)] = row
    for label, rows in comparison.items():
        parts = []
        for ratio, row in rows.items():
            gaps = ", ".join(f"{k.replace('_gap_to_optimum', '')} {v:+.3f}"
                             for k, v in row.items() if k.endswith("_gap_to_optimum"))
            parts.append(f"ratio {ratio}: below the optimum by {gaps}")
        findings.append(f"{label}: " + "; ".join(parts))
    if losses:
        worst = min(losses, key=lambda x: x[2])
        findings.append(
            "hotscore as published LOSES to LRU at " + ", ".join(
                f"{lab} ratio {ratio} ({diff:+.3f})" for lab, ratio, diff in losses)
            + f"; worst {worst[2]:+.3f} (it admits only at period ends; window-heat, the "
            "default, decides every miss).")
    elif any("hotscore_minus_lru" in row for rows in comparison.values() for row in rows.values()):
        findings.append("hotscore's hit ratio is >= LRU's at every ratio measured")
    gains = [row["window_heat_minus_lru"] for rows in comparison.values()
             for row in rows.values() if "window_heat_minus_lru" in row]
    if gains:
        findings.append(f"window-heat minus LRU: {min(gains):+.3f} to {max(gains):+.3f}"
                        + (" (loses at " + ", ".join(f"{lab} ratio {r}" for lab, r, _ in
                                                    default_losses) + ")"
                           if default_losses else ""))
    speed = [h["lookup_hot_speedup"] for h in report["hot_cold"]]
    qspeed = [h["query_hot_speedup"] for h in report["hot_cold"]]
    if report.get("simulated_variants"):
        findings.append("policy variants replayed on the same trace (hit ratio by cache ratio): "
                        + "; ".join(f"{k} {v}" for k, v in report["simulated_variants"].items()))
    if speed:
        findings.append(
            f"hot vs cold: index lookup {min(speed)}x-{max(speed)}x faster on a hit; whole "
            f"query {min(qspeed)}x-{max(qspeed)}x (the rest of a query - parsing, planning, "
            "building result rows - is the same hot or cold)")
    targets = {
        "window-heat >= lru at every ratio": bool(gains) and not default_losses,
        "hot lookups >= 5x faster than cold": bool(speed) and min(speed) >= 5,
        "hot queries >= 5x faster than cold": bool(qspeed) and min(qspeed) >= 5,
    }
    return comparison, findings, targets


def summary(report: dict) -> list[str]:
    """A short text summary for the command line."""
    p, w = report["params"], report["workload"]
    moves = (f", ranking dealt anew every {p['reshuffle_every']:,}"
             if p.get("reshuffle_every") else "")
    lines = [f"bench cache: {p['rows']:,} rows, {p['queries']:,} queries (zipf {p['zipf']}"
             f"{moves}, {w['range_queries']:,} ranges), {w['lookups']:,} set lookups over "
             f"{w['distinct_sets']:,} sets / {w['touched_records']:,} records; "
             f"no cache {report['no_cache']['mean_ms']} ms/query",
             "backend     ratio  policy               hit    optimum  mean ms  vs none"]
    for r in report["results"]:
        label = r["backend"] if r["backend"] == "memory" else f"redis x{r['nodes']}"
        lines.append(f"{label:<11} {r['ratio']:<5}  {r['policy']:<20} {r['hit_ratio']:.3f}  "
                     f"{r['optimum_hit_ratio']:.3f}    {r['mean_ms']:<8.3f} "
                     f"{r['speedup_vs_no_cache']:.2f}x")
    for h in report["hot_cold"]:
        label = h["backend"] if h["backend"] == "memory" else f"redis x{h['nodes']}"
        lines.append(f"hot/cold {label} {h.get('sets', '')} (mean {h['mean_set_size']} rows): "
                     f"lookup {h['lookup_cold_us']} -> {h['lookup_hot_us']} us "
                     f"({h['lookup_hot_speedup']}x), query {h['query_cold_ms']} -> "
                     f"{h['query_hot_ms']} ms ({h['query_hot_speedup']}x)")
    lines += report["findings"]
    if "scenarios" in report:
        lines += cache_scenarios.summary_lines(report["scenarios"], with_targets=False)
    lines += [f"target {k}: {'met' if v else 'MISSED'}" for k, v in report["meets_targets"].items()]
    lines += [f"plot: {path}" for path in report.get("plots", [])]
    return lines
