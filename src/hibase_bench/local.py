"""Local-index benchmark: the global index against the local (per-region) index visiting every
region (Huawei hindex) and the local index routed by split counting Bloom filters (SPEC §1, §3,
§5; issue 5, item 6).

``run(rows, regions, queries, seed)`` loads ``telecom_rows(rows, seed)`` three times, into tables
pre-split into ``regions`` regions of equal row counts (split points: rowkey quantiles, so every
table has exactly ``regions`` regions; ``split_size`` is set high enough that none splits again):

* ``none``: no index; ``global``: global indexes; ``local``: the same indexes, local. Indexes on
  f:url and on (f:ip, f:port), covering f:mdn, created before the load so every put maintains
  them. **Write throughput** = rows / load time through ``table.batch(batch_size=1000)`` (1,000
  cells: one atomic write per 100 ten-column rows), the three tables loaded in turn, 5,000 rows
  at a time, so other work on the machine slows them alike; row generation is not timed, the
  final flush (of all tables together) is reported apart.
* **Queries**, ``columns=[b"f:mdn"]`` (answered from the index, no row fetch, so the figures are
  the index access itself), with the hot-index cache off. Per query type, ``queries`` different
  values of about the same row count (equality on f:url: absent, ~2, ~20, ~200 and ~2,000 rows at
  200,000 rows, i.e. the URL tiers; equality on (f:ip, f:port), a prefix lookup on f:ip alone,
  a range on f:ip). Each query runs through ``table.where``: global index (one index visit);
  local index with routing off (every region: hindex); local index with SCBF routing; the three
  interleaved value by value.
  Reported: median latency (µs) over all values and runs, the mean region visits per query (from
  the plan: one seek per region per key range), and whether all three returned the same rows.
* **Filters**: number, bytes and false negatives (must be 0) of the routing filters after the load.

The story to expect (SPEC §1, §3): a global index reads least (one seek); hindex visits every
region, most returning nothing; SCBF routing cuts the visits to about the regions holding the
value (plus false positives) for point lookups, not for prefix or range lookups.
"""

from __future__ import annotations

import inspect
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from typing import Any

import hibase
from hibase.samples.telecom import C_IP, C_PORT, C_URL, TELECOM_COLUMNS, telecom_rows
from hibase.query import engine
from hibase.query.ast import Select
from hibase.query.plan import IndexLookup

from .store import with_option

__all__ = ["run", "summary"]

TABLES = ("none", "global", "local")
INDEXES = (("by_url", ["f:url"]), ("by_ip_port", ["f:ip", "f:port"]))
COVER = ["f:mdn"]
BATCH_CELLS = 1000
RUNS = 3  # timed runs per value (after one warm-up run)


def _connect(path: str) -> Any:
    if "cache_policy" in inspect.signature(hibase.connect).parameters:
        return hibase.connect(path, cache_policy=None)
    return hibase.connect(path)


def _lit(v: bytes | int) -> str:
    return str(v) if isinstance(v, int) else "'" + v.decode().replace("'", "''") + "'"


def _pick(counts: Counter, target: int, n: int) -> list[tuple[Any, int]]:
    """Up to n values whose counts are nearest `target` by ratio, within a factor of 2 of it
    (the nearest one when none is)."""
    t = max(target, 1)
    ranked = sorted(counts.items(), key=lambda kv: (abs(math.log(kv[1] / t)), kv[0]))
    near = [kv for kv in ranked[:n] if t / 2 <= kv[1] <= t * 2]
    return near or ranked[:1]


def _queries(data: list, rows: int, n: int) -> list[dict[str, Any]]:
    urls = Counter(d[C_URL] for _, d in data)
    pairs = Counter((d[C_IP], int(d[C_PORT])) for _, d in data)
    ips = Counter(d[C_IP] for _, d in data)
    out: list[dict[str, Any]] = []
    out.append({"name": "url = absent", "kind": "point", "target": 0,
                "conds": [f"f.url = 'http://absent.example/{i}'" for i in range(n)],
                "counts": [0] * n})
    for target in (rows // 100_000, rows // 10_000, rows // 1000, rows // 100):
        if target < 1:
            continue
        got = _pick(urls, target, n)
        out.append({"name": f"url = value with ~{target:,} rows", "kind": "point",
                    "target": target, "conds": [f"f.url = {_lit(v)}" for v, _ in got],
                    "counts": [c for _, c in got]})
    got = _pick(pairs, max(1, rows // 2000), n)
    out.append({"name": f"(ip, port) = pair with ~{max(1, rows // 2000):,} rows", "kind": "point",
                "target": max(1, rows // 2000),
                "conds": [f"f.ip = {_lit(ip)} AND f.port = {port}" for (ip, port), _ in got],
                "counts": [c for _, c in got]})
    got = _pick(ips, max(1, rows // 2000), n)
    out.append({"name": f"ip = value (prefix of ip, port) ~{max(1, rows // 2000):,} rows",
                "kind": "prefix", "target": max(1, rows // 2000),
                "conds": [f"f.ip = {_lit(v)}" for v, _ in got], "counts": [c for _, c in got]})
    ordered = sorted(ips)
    step = max(1, len(ordered) // (n + 1))
    conds, counts = [], []
    for i in range(n):
        lo = ordered[min(i * step, len(ordered) - 1)]
        j = min(i * step + max(1, len(ordered) // 200), len(ordered) - 1)
        hi = ordered[j]
        conds.append(f"f.ip >= {_lit(lo)} AND f.ip < {_lit(hi)}")
        counts.append(sum(ips[v] for v in ordered[i * step:j]))
    out.append({"name": "ip range (0.5% of the IPs)", "kind": "range", "target": None,
                "conds": conds, "counts": counts})
    return out


def _create(db: Any, name: str, split_points: list[bytes], indexes: str,
            total_bytes: int, cluster: Any = None) -> None:
    """Table `name` split at `split_points` with `indexes` (none, global, local); on an HBase
    `cluster` split through its Admin API and spread round-robin over its region servers."""
    db.create_table(name, {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS,
                    split_size=max(total_bytes * 4, 1 << 20))
    if cluster is None:
        for p in split_points:
            db.split(name, p)
    if indexes != "none":
        for iname, cols in INDEXES:
            db.create_index(name, iname, cols, covering=COVER, local=indexes == "local",
                            processes=1)  # the table is empty: no worker processes
    if cluster is not None:
        hname = db.store.hbase_name(_full(db, name))
        for p in split_points:
            cluster.split(hname, p)
        cluster.spread(hname)
        db.store.follow_splits(_full(db, name), force=True)  # local rows follow the regions


def _full(db: Any, name: str) -> str:
    """The store's name of table `name` (the connection's table prefix included)."""
    return str(db.table(name).name.decode())


def _cluster_of(backend: str) -> Any:
    """The running `hibase cluster` serving Thrift URL `backend` (its Admin API splits and
    moves regions, which Thrift1 cannot)."""
    from hibase.cluster.hbase import cluster_for_url
    cluster = cluster_for_url(backend)
    if cluster is None:
        raise ValueError(f"no running `hibase cluster` serves {backend}: the benchmark splits "
                         "and moves regions through its Admin API")
    return cluster


def _load_all(db: Any, data: list, chunk: int = 5000) -> dict[str, Any]:
    """Load every table, chunk by chunk in turn (none, global, local, none, ...), so a machine
    busy with other work slows all three alike; each table's time is the sum of its chunks."""
    spent = dict.fromkeys(TABLES, 0.0)
    tables = {name: db.table(name) for name in TABLES}
    for i in range(0, len(data), chunk):
        part = data[i:i + chunk]
        for name in TABLES:
            t0 = time.perf_counter()
            with tables[name].batch(batch_size=BATCH_CELLS) as b:
                for key, d in part:
                    b.put(key, d)
            spent[name] += time.perf_counter() - t0
    t0 = time.perf_counter()
    db.store.flush()
    flush = time.perf_counter() - t0
    return {name: {"seconds": round(spent[name], 3), "rows_per_s": round(len(data) / spent[name]),
                   "regions": len(tables[name].regions())} for name in TABLES} | {
        "flush_seconds_all_tables": round(flush, 3)}


def _visits(db: Any, table: str, cond: str) -> tuple[int, str, set[str] | None]:
    """Region visits of the plan (global index: one per key range), its index, and the region
    servers a local lookup visits (the servers holding the regions its route reads; None for
    the global index: one index read per key range, wherever HBase holds that index region)."""
    select = Select(table, (b"f:mdn",), engine.parse_condition(cond), None)
    plan = engine.prepare(select, db.store, db.indexer)[0]
    path = plan.steps[0].path if plan.steps else None
    if not isinstance(path, IndexLookup):  # no index read
        return 0, "none", None
    if path.route is not None:
        regions = path.route.regions
        placement = db.indexer.router.placement(path.spec.table, regions)
        return (path.route.visits, path.spec.name + " (local)",
                {placement[r.id] for r in regions})
    return len(path.ranges), path.spec.name, None


def _servers_holding(db: Any, table: str, rows: list[bytes]) -> set[str]:
    """The region servers holding `rows` of `table` (where a lookup must go for them)."""
    full = _full(db, table)
    regions = [db.store.region_of(full, r) for r in rows]
    placement = db.indexer.router.placement(full, regions)
    return {placement[r.id] for r in regions}


def _measure(db: Any, q: dict[str, Any]) -> dict[str, Any]:
    """Each value's query in each mode in turn (interleaved, as the loads)."""
    modes = {"global": ("global", True, "region"), "local_all_regions": ("local", False, "region"),
             "local_scbf": ("local", True, "region"),
             "local_scbf_servers": ("local", True, "server")}
    router = db.indexer.router
    times: dict[str, list[float]] = {m: [] for m in modes}
    visits: dict[str, list[int]] = {m: [] for m in modes}
    servers: dict[str, list[int]] = {m: [] for m in modes}
    false_servers: dict[str, list[int]] = {m: [] for m in modes}
    holding: list[int] = []
    rowsets: dict[str, list] = {m: [] for m in modes}
    index: dict[str, str] = {}
    try:
        for cond in q["conds"]:
            for mode, (table, routed, level) in modes.items():
                router.enabled, router.level = routed, level
                t = db.table(table)
                rowsets[mode].append(sorted(r for r, _ in t.where(cond, columns=[b"f:mdn"])))
                v, index[mode], srv = _visits(db, table, cond)
                visits[mode].append(v)
                if mode == "local_all_regions":  # where the rows are: same table, same regions
                    held = _servers_holding(db, table, rowsets[mode][-1])
                    holding.append(len(held))
                if srv is not None:
                    servers[mode].append(len(srv))
            for mode in ("local_all_regions", "local_scbf", "local_scbf_servers"):
                router.enabled, router.level = modes[mode][1], modes[mode][2]
                srv = _visits(db, "local", cond)[2] or set()
                false_servers[mode].append(len(srv - held))
            for _ in range(RUNS):
                for mode, (table, routed, level) in modes.items():
                    router.enabled, router.level = routed, level
                    t = db.table(table)
                    t0 = time.perf_counter()
                    for _ in t.where(cond, columns=[b"f:mdn"]):
                        pass
                    times[mode].append(time.perf_counter() - t0)
    finally:
        router.enabled, router.level = True, "region"
    out: dict[str, Any] = {
        mode: {"median_us": round(statistics.median(times[mode]) * 1e6, 1),
               "regions_visited": round(statistics.mean(visits[mode]), 2),
               "index": index[mode]} for mode in modes}
    for mode in ("local_all_regions", "local_scbf", "local_scbf_servers"):
        out[mode]["servers_visited"] = round(statistics.mean(servers[mode]), 2)
        out[mode]["servers_without_match"] = round(statistics.mean(false_servers[mode]), 2)
    out["servers_holding_rows"] = round(statistics.mean(holding), 2)
    out["rows"] = round(statistics.mean(len(r) for r in rowsets["global"]), 1)
    out["same_rows"] = all(rowsets[m] == rowsets["global"] for m in modes)
    return out


def run(rows: int = 200_000, regions: int = 16, queries: int = 20, seed: int = 0,
        workdir: str | None = None, progress: bool = False,
        backend: str = "embedded") -> dict[str, Any]:
    """Measure; returns a JSON-serializable report (see the module docstring). `backend`: the
    embedded store, or the thrift:// URL of a `hibase cluster` (its tables' regions spread
    over its region servers; indexes kept by the client, server_upkeep=0, as routing filters
    need)."""
    if rows < regions or regions < 1 or queries < 1:
        raise ValueError("need rows >= regions >= 1 and queries >= 1")
    t_start = time.perf_counter()
    cluster = None if backend == "embedded" else _cluster_of(backend)
    data = list(telecom_rows(rows, seed))
    keys = sorted(k for k, _ in data)
    split_points = sorted({keys[i * len(keys) // regions] for i in range(1, regions)})
    total_bytes = sum(len(k) + sum(len(v) for v in d.values()) for k, d in data)
    base = tempfile.mkdtemp(prefix="hibase-bench-local-", dir=workdir)
    location = os.path.join(base, "store") if cluster is None else (
        with_option(backend, f"prefix=bl{os.getpid()}_&server_upkeep=0"))
    try:
        db = _connect(location)
        try:
            for name in TABLES:
                _create(db, name, split_points, name, total_bytes, cluster)
            if progress:
                print("loading ...", file=sys.stderr)
            write = _load_all(db, data)
            checks = db.indexer.router.check("local")
            qs = _queries(data, rows, queries)
            results = []
            for q in qs:
                if progress:
                    print(f"query {q['name']} ...", file=sys.stderr)
                m = _measure(db, q)
                results.append({"query": q["name"], "kind": q["kind"],
                                "example": q["conds"][0], "values": len(q["conds"]),
                                "value_rows": [min(q["counts"]), max(q["counts"])], **m})
            verify = {name: db.verify_index("local", name)["ok"] for name, _ in INDEXES}
            placement = db.store.servers(_full(db, "local"))
            if cluster is not None:
                for name in TABLES:
                    db.delete_table(name, disable=True)
        finally:
            db.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {
        "benchmark": "local", "rows": rows, "regions": regions, "queries_per_type": queries,
        "seed": seed, "runs_per_value": RUNS, "columns": "f:mdn (covered: no row fetch)",
        "hot_cache": "off",
        "write": write,
        "write_ratio_local_vs_global": round(write["local"]["rows_per_s"]
                                             / write["global"]["rows_per_s"], 3),
        "queries": results,
        "filters": {k: checks[k] for k in ("filters", "bytes", "values", "false_negatives",
                                           "stale_items", "overflows")},
        "local_indexes_verified": verify,
        "backend": "embedded" if cluster is None else backend,
        "servers": {"count": len(set(placement.values())),
                    "regions_per_server": dict(Counter(placement.values())),
                    "note": "servers visited: the region servers holding the data regions a "
                            "local lookup reads (the paper's placement: a region's local index "
                            "lives with it); hibase on HBase keeps local index rows in one "
                            "key-value table under region prefixes, which HBase places on its "
                            "own"},
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "cpus": os.cpu_count()},
        "elapsed_s": round(time.perf_counter() - t_start, 1),
    }


def summary(r: dict[str, Any]) -> list[str]:
    """A short human summary of a report."""
    lines = [f"bench local: {r['rows']:,} telecom rows, {r['regions']} regions, "
             f"{r['queries_per_type']} values per query type"]
    w = r["write"]
    lines.append("write rows/s: " + ", ".join(f"{k} {w[k]['rows_per_s']:,}" for k in TABLES)
                 + f" (local/global {r['write_ratio_local_vs_global']})")
    head = (f"{'query':<48} {'rows':>8}  {'global':>16}  {'hindex (all)':>16}  {'SCBF':>16}  "
            f"{'SCBF servers':>16}")
    lines += [head, "-" * len(head)]
    for q in r["queries"]:
        cells = [f"{q[m]['median_us']:>8,.0f}us/{q[m]['regions_visited']:>5}"
                 for m in ("global", "local_all_regions", "local_scbf", "local_scbf_servers")]
        lines.append(f"{q['query'][:48]:<48} {q['rows']:>8,.1f}  " + "  ".join(cells)
                     + ("" if q["same_rows"] else "  ROWS DIFFER"))
    lines.append("(median latency / mean regions visited per query)")
    srv = r["servers"]
    head = (f"{'query':<48} {'holding':>8}  {'hindex (all)':>12}  {'SCBF regions':>12}  "
            f"{'SCBF servers':>12}")
    lines += [f"region servers: {srv['count']} ({srv['regions_per_server']}); servers visited "
              "/ of them holding no matching row, per query", head, "-" * len(head)]
    for q in r["queries"]:
        cells = [f"{q[m]['servers_visited']:>6}/{q[m]['servers_without_match']:<5}"
                 for m in ("local_all_regions", "local_scbf", "local_scbf_servers")]
        lines.append(f"{q['query'][:48]:<48} {q['servers_holding_rows']:>8}  "
                     + "  ".join(f"{c:>12}" for c in cells))
    f = r["filters"]
    lines.append(f"routing filters: {f['filters']} SCBFs, {f['bytes']:,} bytes, "
                 f"false negatives {f['false_negatives']}")
    return lines
