"""Salted tables on HBase (issue 43): a time-ordered load (rowkeys increasing: a millisecond
timestamp prefix, as event logs write them) into an unsalted table and into a salted one
(`salt_buckets`), then a full scan of each, on the same rows of a `hibase cluster`.

Each repeat drops and makes both tables (the salted one pre-split, a region per bucket), loads
them with `writers` client threads (each its own connection; batches of BATCH puts taken in
key order from one queue, so the load as a whole moves forward in time, as concurrent
producers of an event log do), then reads each table once in full (`Table.scan()`: the
salted table's bucket scans merged in rowkey order, read in parallel). Reported: rows/s of
the load and of the scan (medians of the repeats, each repeat's figures beside), and the
regions used: HBase's regions of the table (getTableRegions) that hold at least one of the
rows written (an unsalted time-ordered load writes only into its last region). No index:
what is measured is where the rows land."""

from __future__ import annotations

import bisect
import os
import queue
import statistics
import threading
import time
from typing import Any

import hibase
from hibase.store.salted import salted_key
from hibase_bench.store import _loadavg, _machine, drop_tables, progress_bar

__all__ = ["run", "summary"]

BATCH = 1000
T0_MS = 1_764_000_000_000  # the first row's timestamp (Nov 2025), one row per millisecond


def rows_of(start: int, n: int) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """Rows start .. start+n-1 in time order: rowkey = 13-digit ms timestamp + '#' + sequence;
    ~100 bytes of cells."""
    return [(b"%013d#%06d" % (T0_MS + i, i % 1_000_000),
             {b"f:host": b"host-%03d" % (i % 257), b"f:level": (b"INFO", b"WARN", b"ERROR")[i % 3],
              b"f:msg": b"request %d served in %d ms from cache shard %d" % (i, i % 911, i % 17)})
            for i in range(start, start + n)]


def _load(url: str, name: str, rows: int, writers: int, progress: bool, label: str) -> float:
    """Load `rows` rows into `name` with `writers` threads; the seconds it took."""
    work: queue.Queue = queue.Queue()
    for i in range(0, rows, BATCH):
        work.put(i)
    conns = [hibase.connect(url) for _ in range(writers)]
    errors_seen: list[BaseException] = []
    bar = progress_bar(progress, rows, label)

    def writer(db: Any) -> None:
        t = db.table(name)
        try:
            while True:
                try:
                    i = work.get_nowait()
                except queue.Empty:
                    return
                data = rows_of(i, min(BATCH, rows - i))
                with t.batch() as b:
                    for row, cells in data:
                        b.put(row, cells)
                bar.update(len(data))
        except BaseException as exc:  # reported after the threads end
            errors_seen.append(exc)

    try:
        threads = [threading.Thread(target=writer, args=(c,)) for c in conns]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        secs = time.perf_counter() - t0
    finally:
        bar.close()
        for c in conns:
            c.close()
    if errors_seen:
        raise errors_seen[0]
    return secs


def _scan(db: Any, name: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = sum(1 for _ in db.table(name).scan())
    return time.perf_counter() - t0, n


def _regions_used(db: Any, name: str, rows: int, buckets: int) -> tuple[int, int]:
    """(HBase's regions of the table, those holding at least one written row)."""
    starts = sorted(db.store.servers(db._full(name)))
    used = set()
    for i in range(0, rows, BATCH):
        for row, _ in rows_of(i, min(BATCH, rows - i)):
            key = salted_key(row, buckets) if buckets else row
            used.add(starts[bisect.bisect_right(starts, key) - 1])
    return len(starts), len(used)


def run(url: str, rows: int = 200_000, buckets: int = 8, writers: int = 4, repeats: int = 3,
        progress: bool = True) -> dict[str, Any]:
    """The report (see the module docstring)."""
    db = hibase.connect(url)
    base = f"salt_bench_{os.getpid()}"
    names = {"unsalted": f"{base}_plain", "salted": f"{base}_salted"}
    per: dict[str, list[dict[str, Any]]] = {k: [] for k in names}
    try:
        for rep in range(repeats):
            for kind, name in names.items():
                drop_tables(db, [name])
                db.create_table(name, {"f": {"max_versions": 1}},
                                salt_buckets=buckets if kind == "salted" else None)
                load_s = _load(url, name, rows, writers, progress,
                               f"{kind} load {rep + 1}/{repeats}")
                scan_s, seen = _scan(db, name)
                if seen != rows:
                    raise RuntimeError(f"{kind} scan read {seen:,} rows of {rows:,}")
                regions, used = _regions_used(db, name, rows, buckets if kind == "salted" else 0)
                per[kind].append({"load_s": round(load_s, 3),
                                  "load_rows_per_s": round(rows / load_s),
                                  "scan_s": round(scan_s, 3),
                                  "scan_rows_per_s": round(rows / scan_s),
                                  "regions": regions, "regions_used": used})
    finally:
        drop_tables(db, list(names.values()))
        db.close()
    report: dict[str, Any] = {
        "benchmark": "salted", "url": url, "rows": rows, "salt_buckets": buckets,
        "writers": writers, "batch": BATCH, "repeats": repeats,
        "rowkeys": "13-digit millisecond timestamp + '#' + sequence, increasing",
        "machine": _machine(), "loadavg": _loadavg(),
    }
    for kind, runs in per.items():
        report[kind] = {
            "load_rows_per_s": round(statistics.median(r["load_rows_per_s"] for r in runs)),
            "scan_rows_per_s": round(statistics.median(r["scan_rows_per_s"] for r in runs)),
            "regions": runs[-1]["regions"], "regions_used": runs[-1]["regions_used"],
            "runs": runs}
    u, s = report["unsalted"], report["salted"]
    report["salted_over_unsalted"] = {
        "load": round(s["load_rows_per_s"] / u["load_rows_per_s"], 2),
        "scan": round(s["scan_rows_per_s"] / u["scan_rows_per_s"], 2)}
    return report


def summary(r: dict[str, Any]) -> list[str]:
    lines = [f"bench salted on {r['url']}: {r['rows']:,} time-ordered rows, {r['writers']} "
             f"writer(s), batches of {r['batch']}, median of {r['repeats']}"]
    for kind in ("unsalted", "salted"):
        x = r[kind]
        label = kind if kind == "unsalted" else f"salted ({r['salt_buckets']} buckets)"
        lines.append(f"  {label:22} load {x['load_rows_per_s']:>9,} rows/s   full scan "
                     f"{x['scan_rows_per_s']:>9,} rows/s   regions used "
                     f"{x['regions_used']} of {x['regions']}")
    ratio = r["salted_over_unsalted"]
    lines.append(f"  salted / unsalted: load {ratio['load']}x, scan {ratio['scan']}x")
    return lines
