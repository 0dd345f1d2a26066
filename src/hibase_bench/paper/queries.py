"""Experiments 1 and 4 of the paper at one size: the four query types as full scan, cold index
and hot index on hibase, beside SQLite (B-tree indexes, and its full scan) and DuckDB (its scan
and its ART indexes); every engine's rows are checked equal to hibase's index answer before the
timings count; then the index sizes against the table (hibase; SQLite's pages).

Cold = the persistent index alone (``cache_policy=None``); hot = the in-process hot-index
cache holding the sets (one filling run first); full scan = ``db.sql(q, full_scan=True)``, once.
Peers: median of the same repeats after a warm-up run; SQLite's scan keeps its indexes out with
``+col``. Queries are ``SELECT *`` (every column of every row: rows are read after the index), and
the three indexed ones again selecting only f:mdn and f:start_time ("covered"), which hibase's
index rows carry and SQLite's covering indexes hold, so neither reads the table.
"""

from __future__ import annotations

import time
from typing import Any

from .. import query as Q
from hibase.samples.telecom import COLUMNS
from ..store import sqlite_open
from .engines import Loaded, normalize_hibase, normalize_sql, timed
from hibase.samples.workload import paper_queries

__all__ = ["run_size", "HOT_CAPACITY"]

HOT_CAPACITY = 10_000_000  # records: the hot cache holds every set the queries read


def _scan_sql(sql: str) -> str:
    """The peer SQL with every column behind a unary + (SQLite then uses no index)."""
    where = sql.split(" WHERE ", 1)
    cond = where[1]
    for col in ("k ", "start_time ", "ip ", "port ", "url "):
        cond = cond.replace(col, "+" + col)
    return where[0] + " WHERE " + cond


def _duck_plan(duck: Any, sql: str, params: tuple) -> str:
    """Whether DuckDB read through an ART index (EXPLAIN shows the plan before its optimizer
    picks the index; EXPLAIN ANALYZE shows the scan it ran)."""
    text = "\n".join(str(r[-1]) for r in duck.execute("EXPLAIN ANALYZE " + sql,
                                                        list(params)).fetchall())
    return "ART index scan" if "INDEX SCAN" in text.upper() else "table scan"


def run_size(ld: Loaded, repeats: int, remote: bool) -> dict[str, Any]:
    """Time the four queries on every engine; sizes; the rows' equality per engine."""
    qs = (paper_queries(ld.stats, ld.table, peer_table="telecom")
          + paper_queries(ld.stats, ld.table, covered=True, peer_table="telecom"))
    out: list[dict[str, Any]] = []
    wants: list[list[tuple]] = []
    db = ld.hibase(cache_policy=None)
    con = sqlite_open(ld.sqlite_path)
    try:
        for q in qs:
            sql, params = q["sql"], q["params"]
            r: dict[str, Any] = {"type": q["type"], "hibase_sql": q["hibase"], "peer_sql": sql,
                                 "params": list(params)}
            r["plan"] = db.explain(q["hibase"]).splitlines()[0:3]
            cold, got = timed(lambda: db.sql(q["hibase"], raw=True), repeats)
            cols = q.get("columns", COLUMNS)
            want = normalize_hibase(got, cols)
            r["rows"] = len(want)
            wants.append(want)
            t0, c0 = time.perf_counter(), time.process_time()
            scanned = db.sql(q["hibase"], full_scan=True, raw=True)
            r["full_scan_s"] = time.perf_counter() - t0
            r["full_scan_cpu_s"] = time.process_time() - c0
            r["cold"] = cold
            same = {"hibase_full_scan": normalize_hibase(scanned, cols) == want}
            s_idx, srows = timed(lambda: con.execute(sql, params).fetchall(), repeats)
            same["sqlite_index"] = normalize_sql(srows) == want
            t0 = time.perf_counter()
            sfull = con.execute(_scan_sql(sql), params).fetchall()
            r["sqlite_scan_s"] = time.perf_counter() - t0
            same["sqlite_scan"] = normalize_sql(sfull) == want
            r["sqlite_index"] = s_idx
            r["sqlite_plan"] = " | ".join(x[-1] for x in con.execute(
                "EXPLAIN QUERY PLAN " + sql, params))
            if ld.duck is not None:
                lp = list(params)
                d_scan, drows = timed(lambda: ld.duck.execute(sql, lp).fetchall(), repeats)
                art_sql = sql.replace(" FROM telecom ", " FROM telecom_art ")
                d_art, arows = timed(lambda: ld.duck.execute(art_sql, lp).fetchall(), repeats)
                same["duckdb_scan"] = normalize_sql(drows) == want
                same["duckdb_art"] = normalize_sql(arows) == want
                r["duckdb_scan"], r["duckdb_art"] = d_scan, d_art
                r["duckdb_art_plan"] = _duck_plan(ld.duck, art_sql, params)
            r["same_rows"] = same
            out.append(r)
        sizes = _sizes(db, ld, con, remote)
    finally:
        con.close()
        db.close()
    hot = ld.hibase(cache="memory", cache_capacity=HOT_CAPACITY)
    try:
        for q in qs:
            hot.sql(q["hibase"])  # fills the cache with the sets this query reads
        for r, q, want in zip(out, qs, wants):
            h, got = timed(lambda: hot.sql(q["hibase"], raw=True), repeats)
            r["same_rows"]["hibase_hot"] = normalize_hibase(got, q.get("columns", COLUMNS)) \
                == want
            r["hot"] = h
        r_hits = hot.cache_stats().get("hits", 0)
    finally:
        hot.close()
    for r in out:
        scan_us = r["full_scan_s"] * 1e6
        r["speedup_cold"] = scan_us / r["cold"]["p50_us"]
        r["speedup_hot"] = scan_us / r["hot"]["p50_us"]
        r["hot_over_cold"] = r["cold"]["p50_us"] / r["hot"]["p50_us"]
        r["all_same"] = all(r["same_rows"].values())
    return {"rows": ld.rows, "load_s": ld.load, "row_bytes": ld.stats.bytes / ld.rows,
            "queries": out, "hot_cache_hits": r_hits, "sizes": sizes,
            "_answers": wants}  # popped by the caller: Phoenix's answers are checked on them


def _sizes(db: Any, ld: Loaded, con: Any, remote: bool) -> dict[str, Any]:
    """Index bytes against table bytes: hibase's logical keys + values (embedded only: over
    Thrift the store's files are HBase's) and SQLite's pages (dbstat)."""
    out: dict[str, Any] = {}
    if not remote:
        Q.settle_store(db)
        h = Q.hibase_sizes(db)
        out["hibase"] = {"data_bytes": h["logical"]["data_bytes"],
                         "per_index": {n: v["ratio_to_data"]
                                       for n, v in h["logical"]["per_index"].items()},
                         "three_indexes": h["logical"]["three_paper_indexes_ratio"],
                         "on_disk_all_indexes": h["on_disk"]["all_indexes_ratio"]}
    pages = dict(con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
    data = pages.get("telecom", 0)
    names = ("by_ip", "by_ip_port", "by_url")
    out["sqlite"] = {"data_bytes": data,
                     "per_index": {n: pages.get(n, 0) / data for n in names},
                     "three_indexes": sum(pages.get(n, 0) for n in names) / data}
    return out
