"""`hibase demo`: the HiBase paper's experiment in miniature (SPEC §1).

Generates telecom-style records (``hibase.samples.telecom.telecom_rows``: ~200 bytes, 10
attributes; rowkey = 11-digit MDN + ``Long.MAX_VALUE - start_ms``, SPEC §2) into a store, builds
the paper's three global indexes (IP, IP+PORT, URL) over the loaded rows (the paper's batch build
of static data, worker processes over regions: on this data ~1.5x faster than maintaining them
on every put during the load; puts keep them exact from then on), then runs the paper's four
query types and times each two ways:

* index: ``db.sql(query)`` on a connection without the hot cache (``cache_policy=None``: the
  persistent index layer alone, the paper's "cold" case), the planner's choice (a rowkey range
  for the MDN query, an index for the others): parse, plan, index lookup, row fetches; the
  median of ``repeats`` runs;
* hot: the same queries on a connection with the in-process hot-index cache (the paper's
  "hot" case): each query runs once to fill the cache, then the median of ``repeats`` runs,
  served from the cached index sets (rows are still read from the table);
* full scan: ``db.sql(query, full_scan=True)``, the same query evaluated over every row (what
  HBase does without a secondary index), once.

All three must return the same rows; ``run()`` raises if they do not.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable

from tqdm import tqdm

import hibase
from hibase import errors
from hibase.samples.telecom import TELECOM_COLUMNS, telecom_rows
from hibase.samples.workload import Stats, paper_queries

__all__ = ["run", "TABLE", "INDEXES"]

TABLE = "telecom"
INDEXES = (("by_ip", ["f:ip"]), ("by_ip_port", ["f:ip", "f:port"]), ("by_url", ["f:url"]))
BATCH_CELLS = 1000  # table.batch(batch_size=...) counts cells: one write per 100 rows
HOT_CAPACITY = 1_000_000  # records: the hot cache holds every set the four queries read


def _load(db: Any, rows: int, seed: int, progress: bool) -> tuple[float, Stats]:
    """Load the rows through table.batch, counting the values the queries are picked from;
    (seconds, counts)."""
    table = db.table(TABLE)
    stats = Stats()
    t0 = time.perf_counter()
    with tqdm(total=rows, desc="loading", unit=" rows", unit_scale=True, disable=not progress,
              leave=False, mininterval=0.5) as bar, table.batch(batch_size=BATCH_CELLS) as batch:
        put, add = batch.put, stats.add
        for i, (key, data) in enumerate(telecom_rows(rows, seed)):
            put(key, data)
            add(key, data)
            if i % 5000 == 4999:
                bar.update(5000)
        bar.update(rows - bar.n)
    return time.perf_counter() - t0, stats


def _build_indexes(db: Any, progress: bool) -> list[tuple[str, str, float]]:
    """Create and batch-build the paper's indexes: (name, columns, seconds) each."""
    out = []
    regions = len(db.table(TABLE).regions())
    for name, cols in INDEXES:
        with tqdm(total=regions, desc=f"building {name}", unit=" region", disable=not progress,
                  leave=False) as bar:
            def report(done: int, total: int, bar: Any = bar) -> None:
                bar.total = total
                bar.update(done - bar.n)

            t0 = time.perf_counter()
            db.create_index(TABLE, name, cols, progress=report)
            out.append((name, ", ".join(cols), time.perf_counter() - t0))
    return out


def _path(plan: str) -> str:
    """A short name of the access path from EXPLAIN text."""
    for line in plan.splitlines():
        s = line.strip()
        if s.startswith("INDEX "):
            name = s.split()[1]
            return f"index {name}"
        if s.startswith("INTERSECT"):
            return "index intersection"
        if s.startswith("ROWKEY RANGE"):
            return "rowkey range scan"
        if s.startswith("ROWKEY GET"):
            return "rowkey get"
        if s.startswith("FULL TABLE SCAN"):
            return "full scan"
    return "?"


def _time_query(db: Any, sql: str, repeats: int) -> tuple[float, list]:
    times = []
    result: list = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = db.sql(sql)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _time_hot(db: Any, queries: list[tuple[str, str]], results: list[dict],
              repeats: int) -> int:
    """Time each query on `db` (a connection with the hot cache) after one filling run; adds
    hot_s and hot_speedup to `results`, checks the rows against the cold ones; returns the
    cache hits counted while timing."""
    for r, (_, sql) in zip(results, queries):
        db.sql(sql)  # fills the cache with the index sets this query reads
    before = db.cache_stats().get("hits", 0)
    for r, (_, sql) in zip(results, queries):
        t_hot, got = _time_query(db, sql, repeats)
        if len(got) != r["rows"]:
            raise RuntimeError(f"query {r['query']}: the hot cache and the index disagree")
        r["hot_s"] = t_hot
        r["hot_speedup"] = r["full_scan_s"] / t_hot if t_hot > 0 else float("inf")
        r["hot_over_cold"] = r["index_s"] / t_hot if t_hot > 0 else float("inf")
    return db.cache_stats().get("hits", 0) - before


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    if ms >= 1000:
        return f"{seconds:.2f} s"
    return f"{ms:.3g} ms" if ms >= 1 else f"{ms:.2f} ms"


def run(rows: int = 200_000, path: str | None = None, keep: bool = False, seed: int = 0,
        repeats: int = 5, progress: bool = True,
        echo: Callable[[str], Any] = print) -> dict[str, Any]:
    """Run the demo, printing as it goes through `echo`; returns the figures.

    `path`: the store folder (created; kept afterwards) or a thrift:// URL of an HBase Thrift
    server; by default a temporary folder, removed at the end unless `keep`."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise errors.InvalidArgument("rows must be a positive int")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise errors.InvalidArgument("repeats must be a positive int")
    started = time.perf_counter()
    temp = None
    if path is None:
        temp = tempfile.mkdtemp(prefix="hibase-demo-")
        path = os.path.join(temp, "store")
    db = hibase.connect(path, cache_policy=None)  # the persistent index alone (paper: "cold")
    try:
        if TABLE.encode() in db.tables():
            raise errors.TableExists(
                f"{path!r} already holds a table {TABLE!r}; give --dir a new folder (or "
                "--backend a thrift:// URL with another ?prefix=)")
        echo(f"HiBase demo: {rows:,} telecom records, the paper's 3 indexes and 4 query types")
        where = ("a temporary folder, removed at the end; --keep keeps it" if temp and not keep
                 else "kept afterwards")
        echo(f"store: {path} ({where})")
        db.create_table(TABLE, {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
        load_s, stats = _load(db, rows, seed, progress)
        echo(f"loaded {rows:,} rows (10 columns, ~{stats.bytes / rows:.0f} bytes of values "
             f"each; rowkey = MDN + reversed start time) in {load_s:.1f} s "
             f"({rows / load_s:,.0f} rows/s, generation included)")
        built = _build_indexes(db, progress)
        echo(f"built {len(built)} indexes in {sum(t for _, _, t in built):.1f} s (batch build "
             f"over {len(db.table(TABLE).regions())} region(s); every put keeps them exact "
             "from now on):")
        echo("  " + ", ".join(f"{n} ({c}) {t:.1f} s" for n, c, t in built))
        echo("")
        results = []
        queries = [(q["type"], q["hibase"]) for q in paper_queries(stats, TABLE)]
        for i, (label, sql) in enumerate(queries, 1):
            path_name = _path(db.explain(sql))
            t_index, got = _time_query(db, sql, repeats)
            t0 = time.perf_counter()
            scanned = db.sql(sql, full_scan=True)
            t_scan = time.perf_counter() - t0
            if sorted(k for k, _ in got) != sorted(k for k, _ in scanned):
                raise RuntimeError(f"query {i}: the index path and the full scan disagree")
            results.append({"query": i, "name": label, "sql": sql, "rows": len(got),
                            "path": path_name, "index_s": t_index, "full_scan_s": t_scan,
                            "speedup": t_scan / t_index if t_index > 0 else float("inf")})
        db.close()
        db = hibase.connect(path, cache="memory", cache_capacity=HOT_CAPACITY)
        hits = _time_hot(db, queries, results, repeats)
        _print_table(results, echo)
        echo("")
        echo(f"cold: median of {repeats} runs of db.sql(query) (parse, plan, index lookup in the "
             "persistent index table, row fetch), no hot cache;")
        echo(f"hot: the same with the in-process hot-index cache, filled by one run first, "
             f"median of {repeats} runs ({hits:,} cache hits);")
        echo("full scan: db.sql(query, full_scan=True), every row read and tested, once. "
             "All three returned the same rows.")
        unindexed = [f"{r['query']} ({r['path']})" for r in results
                     if not r["path"].startswith("index")]
        if unindexed:
            echo(f"query {', '.join(unindexed)}: no index is involved, so the hot cache has "
                 "nothing to serve; its hot column is the same path again.")
        echo("")
        for r in results:
            echo(f"{r['query']}  {r['sql']}")
        if temp is None or keep:
            echo("")
            echo(f'try: hibase query {path} "{results[-1]["sql"]}"')
        total = time.perf_counter() - started
        echo(f"done in {total:.1f} s")
        return {"rows": rows, "seed": seed, "store": path if (temp is None or keep) else None,
                "load_s": load_s, "row_bytes": stats.bytes / rows,
                "build_s": {n: t for n, _, t in built},
                "queries": results, "elapsed_s": total}
    finally:
        db.close()
        if temp is not None and not keep:
            shutil.rmtree(temp, ignore_errors=True)


def _print_table(results: list[dict], echo: Callable[[str], Any]) -> None:
    head = ["#", "query", "rows", "full scan", "cold", "hot", "scan/cold", "scan/hot",
            "cold/hot", "answered by"]
    lines = [[str(r["query"]), r["name"], f"{r['rows']:,}", _ms(r["full_scan_s"]),
              _ms(r["index_s"]), _ms(r["hot_s"]), f"{r['speedup']:,.0f}x",
              f"{r['hot_speedup']:,.0f}x", f"{r['hot_over_cold']:.1f}x", r["path"]]
             for r in results]
    widths = [max(len(x[i]) for x in [head] + lines) for i in range(len(head))]
    right = {2, 3, 4, 5, 6, 7, 8}

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    echo(fmt(head))
    echo(fmt(["-" * w for w in widths]))
    for line in lines:
        echo(fmt(line))
