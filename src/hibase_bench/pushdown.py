"""Issue 39's bench: statements no index answers on HBase, hibase (pushed down into the region
servers, and read by the client with scan_pushdown=0) beside Apache Phoenix on the same rows.

One table of ``rows`` rows (rowkey, f.amt BIGINT 0..99,999, f.b VARCHAR with 50 values,
f.city VARCHAR with 10), loaded through hibase and into a Phoenix table (k VARCHAR PRIMARY
KEY, the same columns), both split into ``regions`` regions; then per query the median of
``repeats`` runs, after one warm-up pass over all five on both: hibase pushed down (wall time in this process, Thrift included), Phoenix
(timed inside its JVM, every row fetched) and hibase's client path (one run). Every answer
must equal Phoenix's (``same``). Ratios are hibase pushed down / Phoenix. Last, an index on
f.city: the two-column filter then takes the index whether pushdown is on or off (``indexed``).
"""

from __future__ import annotations

import os
import random
import statistics
import time
from typing import Any

import hibase

__all__ = ["run", "summary", "QUERIES"]

QUERIES = [
    ("max", "SELECT MAX(f.amt) FROM {t}", "SELECT MAX(f.amt) FROM {t}"),
    ("filtered count", "SELECT COUNT(*) FROM {t} WHERE f.amt < 10000",
     "SELECT COUNT(*) FROM {t} WHERE f.amt < 10000"),
    ("group by (50 groups)", "SELECT f.b, COUNT(*), SUM(f.amt) FROM {t} GROUP BY f.b",
     "SELECT f.b, COUNT(*), SUM(f.amt) FROM {t} GROUP BY f.b"),
    ("order by desc limit 3", "SELECT ROWKEY, f.amt FROM {t} ORDER BY f.amt DESC LIMIT 3",
     "SELECT k, f.amt FROM {t} ORDER BY f.amt DESC LIMIT 3"),
    ("two-column filter", "SELECT ROWKEY FROM {t} WHERE f.city = 'Oslo' AND f.amt < 2000",
     "SELECT k FROM {t} WHERE f.city = 'Oslo' AND f.amt < 2000"),
]
CITIES = ["Oslo", "Rome", "Paris", "Lima", "Kyiv", "Bern", "Riga", "Doha", "Baku", "Nuuk"]


def _data(rows: int, seed: int) -> list[tuple[str, int, str, str]]:
    rnd = random.Random(seed)
    return [(f"u{i:08d}", rnd.randrange(100_000), f"b{rnd.randrange(50):02d}",
             rnd.choice(CITIES)) for i in range(rows)]


def _norm(rows: list) -> list:
    """hibase's and Phoenix's answers as sorted tuples of str / int."""
    out = []
    for r in rows:
        if isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], dict):
            key, cells = r
            r = (key.decode(), *cells.values())
        out.append(tuple(v.decode() if isinstance(v, bytes) else v for v in r))
    return sorted(out, key=repr)


def _same(label: str, *answers: list) -> bool:
    """Whether the answers agree. ORDER BY f.amt DESC LIMIT 3 may tie (at 1M rows six rows hold
    the top amount, 99,999), and then any three of them are right: its answers must agree on
    the amounts returned, not on which rows hold them."""
    if "limit" in label:
        amounts = [sorted(r[1:] for r in _norm(a)) for a in answers]
        return all(a == amounts[0] for a in amounts)
    normed = [_norm(a) for a in answers]
    return all(a == normed[0] for a in normed)


def _median_s(fn: Any, repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 4), out


def run(url: str, rows: int = 200_000, regions: int = 4, repeats: int = 3, seed: int = 39,
        progress: bool = True) -> dict[str, Any]:
    """Load, split, time the five queries on both; a JSON-ready report."""
    from hibase.cluster.hbase import cluster_for_url
    from hibase.cluster.phoenix import phoenix_for_backend

    cluster = cluster_for_url(url)
    if cluster is None:
        raise hibase.errors.InvalidArgument(f"no running `hibase cluster` serves {url}")
    px = phoenix_for_backend(url)
    if px is None:
        raise hibase.errors.InvalidArgument(f"the cluster at {url} runs without Phoenix")
    name = f"pd{os.getpid()}"
    data = _data(rows, seed)
    splits = [data[rows * i // regions][0] for i in range(1, regions)]
    db = hibase.connect(url)
    client = hibase.connect(url + ("&" if "?" in url else "?") + "scan_pushdown=0")
    queries: list[dict[str, Any]] = []
    report: dict[str, Any] = {"benchmark": "pushdown", "url": url, "rows": rows,
                              "regions": regions, "repeats": repeats, "seed": seed,
                              "cpu_count": os.cpu_count(), "loadavg_before": list(os.getloadavg()),
                              "queries": queries}
    try:
        db.create_table(name, {"f": {}}, columns={"f:amt": "long", "f:b": "string",
                                                   "f:city": "string"})
        t0 = time.perf_counter()
        with db.table(name).batch(batch_size=5000) as b:
            for k, amt, g, city in data:
                b.put(k.encode(), {b"f:amt": str(amt).encode(), b"f:b": g.encode(),
                                   b"f:city": city.encode()})
        report["hibase_load_s"] = round(time.perf_counter() - t0, 2)
        for s in splits:
            cluster.split(name, s.encode())
        # round-robin over the region servers (the daughters of a split stay on their
        # parent's server); a no-op on one server
        report["hibase_regions_moved"] = cluster.spread(name)
        report["hibase_regions"] = len(db.store.servers(name))
        report["hibase_region_servers"] = len(set(cluster.region_servers_of(name).values()))
        with px:
            ptable = f"PD{os.getpid()}"
            px.execute(f"CREATE TABLE {ptable} (k VARCHAR PRIMARY KEY, f.amt BIGINT, "
                       f"f.b VARCHAR, f.city VARCHAR) SPLIT ON ("
                       + ", ".join(f"'{s}'" for s in splits) + ")")
            try:
                secs = 0.0
                for i in range(0, rows, 50_000):
                    secs += px.upsert_many(f"UPSERT INTO {ptable} VALUES (?, ?, ?, ?)",
                                           data[i:i + 50_000])
                report["phoenix_load_s"] = round(secs, 2)
                report["phoenix_regions_moved"] = cluster.spread(ptable)
                report["phoenix_region_servers"] = len(
                    set(cluster.region_servers_of(ptable).values()))
                px.execute(f"UPDATE STATISTICS {ptable}")
                # one warm-up pass over every query on both first: the split daughters'
                # first reads and compactions land there, not on whichever query is timed first
                for _, hsql, psql in QUERIES:
                    db.sql(hsql.format(t=name))
                    px.execute(psql.format(t=ptable))
                for label, hsql, psql in QUERIES:
                    h = hsql.format(t=name)
                    p = psql.format(t=ptable)
                    explained: Any = db.sql("EXPLAIN " + h)
                    plan = "\n".join(r[0] for r in explained)
                    db.sql(h)  # warm: the region list, the probe, the connections
                    pushed_s, got = _median_s(lambda: db.sql(h), repeats)
                    client_s, got_client = _median_s(lambda: client.sql(h), 1)
                    want = px.execute(p)
                    times = px.time_query(p, (), repeats + 1)[1:]
                    phoenix_s = round(statistics.median(times), 4)
                    queries.append({
                        "query": label, "hibase_sql": h, "phoenix_sql": p,
                        "pushed_down": "PUSHED DOWN" in plan,
                        "hibase_pushed_s": pushed_s, "hibase_client_s": client_s,
                        "phoenix_s": phoenix_s,
                        "pushed_vs_phoenix": round(pushed_s / phoenix_s, 3),
                        "same": _same(label, got, want, got_client),
                        "rows_returned": len(got)})
                # indexed lookups unchanged: once an index answers, it is used either way
                db.create_index(name, "by_city", ["f:city"])
                h = QUERIES[-1][1].format(t=name)
                explained = db.sql("EXPLAIN " + h)
                plan = "\n".join(r[0] for r in explained)
                db.sql(h)
                client.sql(h)
                # on and off alternate (the same plan either way: an order effect, a compaction
                # or a busy neighbour, would otherwise land on one side only)
                on_t: list[float] = []
                off_t: list[float] = []
                got_off: Any = None
                for i in range(2 * repeats):
                    for conn, acc in ((db, on_t), (client, off_t))[::1 if i % 2 else -1]:
                        t0 = time.perf_counter()
                        out: Any = conn.sql(h)
                        acc.append(time.perf_counter() - t0)
                        if conn is db:
                            got = out
                        else:
                            got_off = out
                on_s = round(statistics.median(on_t), 4)
                off_s = round(statistics.median(off_t), 4)
                report["indexed"] = {
                    "hibase_sql": h, "index_used": "by_city" in plan,
                    "pushed_down": "PUSHED DOWN" in plan, "scan_pushdown_on_s": on_s,
                    "scan_pushdown_off_s": off_s, "same": _norm(got) == _norm(got_off)}
            finally:
                px.execute(f"DROP TABLE IF EXISTS {ptable}")
    finally:
        try:
            db.delete_table(name, disable=True)
        finally:
            db.close()
            client.close()
    report["loadavg_after"] = list(os.getloadavg())
    report["all_same"] = all(q["same"] for q in queries)
    report["all_at_most_phoenix"] = all(q["pushed_vs_phoenix"] <= 1.0 for q in queries)
    return report


def summary(r: dict[str, Any]) -> list[str]:
    lines = [f"pushdown on {r['url']}: {r['rows']:,} rows, {r['regions']} regions (on "
             f"{r.get('hibase_region_servers', '?')} region servers; Phoenix's on "
             f"{r.get('phoenix_region_servers', '?')}), median of {r['repeats']}"]
    for q in r["queries"]:
        lines.append(f"{q['query']}: hibase pushed {q['hibase_pushed_s']} s, client "
                     f"{q['hibase_client_s']} s, Phoenix {q['phoenix_s']} s -> "
                     f"{q['pushed_vs_phoenix']}x{'' if q['same'] else ' (ANSWERS DIFFER)'}")
    ix = r.get("indexed")
    if ix:
        lines.append(f"indexed lookup (index used: {ix['index_used']}, pushed down: "
                     f"{ix['pushed_down']}): {ix['scan_pushdown_on_s']} s, with "
                     f"scan_pushdown=0 {ix['scan_pushdown_off_s']} s")
    return lines
