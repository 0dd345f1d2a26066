"""Scan benchmark (issue 16): hibase's filtered full scan, big index results and IS NULL on an
indexed column, against SQLite and DuckDB on the same telecom rows, in one run.

``run()`` loads ``telecom_rows(rows, seed)`` once into each engine: hibase's embedded store
(batches, then two global indexes built over the table: f:url and f:end_time), SQLite (typed
columns: INTEGER for int/long, TEXT for strings, rowkey BLOB PRIMARY KEY, WITHOUT ROWID, WAL,
the same two B-tree indexes) and, when the ``duckdb`` package is installed (``pip install
'hibase[bench]'``), DuckDB (the same typed table read from a CSV the load writes; no index).
Every 100th row then loses f:end_time (a session with no recorded end: hibase deletes the
cell, SQLite and DuckDB set NULL) before the indexes are built.

Queries, each returning the rowkey plus the columns named (hibase: ``table.where(condition,
columns=...)``; the others the same SELECT); medians of ``repeats`` timed runs after one
untimed run, wall clock, and every engine must return the same rowkeys (the report says):

* **scan**: four conditions no index answers (two equalities on unindexed int columns, an
  equality and a range, two ranges, a LIKE prefix OR an equality), projection f:mdn, f:url.
  rows/s = rows in the table / time. hibase three ways: ``auto`` (worker processes over the
  regions when the table is big, query/scan.py), ``one process`` (scan.PROCESSES = 1), and
  ``generic`` (the scan before issue 16: scan_latest + the tree evaluator, one run only).
* **fetch**: equality on the indexed f:url with ~10,000 and ~100,000 rows, SELECT * and a
  two-column projection: rows/s = rows returned / time (and per CPU second). SQLite uses its
  index, DuckDB scans.
* **is_null**: ``f.end_time IS NULL`` (1% of rows) through the index's NULL list, and the same
  over hibase's full scan (``full_scan=True``); SQLite answers it from its index.
"""

from __future__ import annotations

import csv
import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable

import hibase
from hibase.samples.telecom import COLUMNS, TELECOM_COLUMNS, telecom_rows, url_value
from hibase_bench.store import _loadavg, _machine, progress_bar, sqlite_open
from hibase.query import scan as scan_mod

__all__ = ["run", "summary", "TARGETS"]

TABLE = "telecom"
TARGETS = {"scan_rows_per_s": 1_000_000, "fetch_rows_per_s": 500_000}
NULL_EVERY = 100  # every 100th row has no f:end_time
PROJECTION = [b"f:mdn", b"f:url"]
SCANS = [
    ("two_int_equalities", "f.port = 8080 AND f.cell_id = 12345"),
    ("equality_and_range", "f.port = 8080 AND f.bytes_up > 500000"),
    ("two_ranges", "f.cell_id < 10200 AND f.bytes_up > 500000"),
    ("like_or_equality", "f.mdn LIKE '1301%' OR f.port = 5222"),
]
_NAMES = [c.split(b":", 1)[1].decode() for c in COLUMNS]
_SQL_TYPES = {"int": "INTEGER", "long": "BIGINT", "string": "VARCHAR"}


def _sql_select(cols: list[bytes] | None, where: str) -> str:
    """The SELECT for SQLite and DuckDB: `where` names columns bare (the conditions above
    without their family; literals with a dot go in as parameters)."""
    names = "*" if cols is None else "k, " + ", ".join(c.split(b":", 1)[1].decode()
                                                      for c in cols)
    return f"SELECT {names} FROM {TABLE} WHERE {where}"


def _bare(cond: str) -> str:
    return cond.replace("f.", "")  # only for conditions whose literals hold no "f."


_CPU: list[float] = []  # the median CPU seconds of the last _timed call (this process only)


def _timed(fn: Callable[[], list], repeats: int) -> tuple[float, list]:
    """Median wall seconds of `repeats` runs after one untimed run, and the rows of that run;
    the median CPU seconds of this process go to _CPU[0] (on a busy machine the wall time
    includes waiting for a CPU, the CPU time does not)."""
    rows = fn()
    times, cpus = [], []
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    _CPU[:] = [statistics.median(cpus)]
    return statistics.median(times), rows


def _keys(rows: list) -> list[bytes]:
    return sorted(bytes(r[0]) for r in rows)


# -- loading ----------------------------------------------------------------------------------

def _load(tmp: str, rows: int, seed: int, progress: bool, duck: Any) -> dict[str, Any]:
    """Load every engine in one pass over the generated rows; returns load times."""
    db = hibase.connect(os.path.join(tmp, "hibase"), cache_policy=None)
    db.create_table(TABLE, {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
    t = db.table(TABLE)
    con = sqlite_open(os.path.join(tmp, "sqlite.db"))
    cols = ", ".join(f"{n} {_SQL_TYPES[TELECOM_COLUMNS['f:' + n]]}" for n in _NAMES)
    con.execute(f"CREATE TABLE {TABLE} (k BLOB PRIMARY KEY, {cols}) WITHOUT ROWID")
    insert = f"INSERT INTO {TABLE} VALUES ({', '.join('?' * (len(_NAMES) + 1))})"
    ints = [TELECOM_COLUMNS[c.decode()] in ("int", "long") for c in COLUMNS]
    csv_path = os.path.join(tmp, "rows.csv")
    spent = {"hibase": 0.0, "sqlite": 0.0}
    nulls: list[bytes] = []
    with open(csv_path, "w", newline="") as fh, \
            progress_bar(progress, rows, "load hibase + sqlite") as bar:
        out = csv.writer(fh)
        out.writerow(["k", *_NAMES])
        batch: list[tuple] = []
        hb = t.batch(batch_size=1000)
        for i, (key, data) in enumerate(telecom_rows(rows, seed)):
            if i % NULL_EVERY == NULL_EVERY - 1:
                data = {c: v for c, v in data.items() if c != b"f:end_time"}
                nulls.append(key)
            t0 = time.perf_counter()
            hb.put(key, data)
            spent["hibase"] += time.perf_counter() - t0
            vals = [data.get(c) for c in COLUMNS]
            batch.append((key, *[None if v is None else int(v) if is_int else v.decode()
                                 for v, is_int in zip(vals, ints)]))
            out.writerow([key.decode(), *["" if v is None else v.decode() for v in vals]])
            if len(batch) >= 10_000:
                t0 = time.perf_counter()
                with con:
                    con.executemany(insert, batch)
                spent["sqlite"] += time.perf_counter() - t0
                bar.update(len(batch))
                batch.clear()
        t0 = time.perf_counter()
        hb.send()
        spent["hibase"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        with con:
            con.executemany(insert, batch)
        spent["sqlite"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    db.create_index(TABLE, "by_url", ["f:url"])
    db.create_index(TABLE, "by_end", ["f:end_time"])
    spent["hibase_indexes"] = time.perf_counter() - t0
    db.store.flush()
    db.close()
    t0 = time.perf_counter()
    con.execute(f"CREATE INDEX by_url ON {TABLE}(url)")
    con.execute(f"CREATE INDEX by_end ON {TABLE}(end_time)")
    spent["sqlite_indexes"] = time.perf_counter() - t0
    con.close()
    if duck is not None:
        t0 = time.perf_counter()
        types = ", ".join(f"'{n}': '{_SQL_TYPES[TELECOM_COLUMNS['f:' + n]]}'" for n in _NAMES)
        duck.execute(f"CREATE TABLE {TABLE} AS SELECT k::BLOB AS k, * EXCLUDE (k) FROM "
                     f"read_csv('{csv_path}', header=true, columns={{'k': 'VARCHAR', {types}}})")
        spent["duckdb"] = time.perf_counter() - t0
    os.remove(csv_path)
    return {"load_s": spent, "null_rows": len(nulls)}


# -- queries ----------------------------------------------------------------------------------

def _engines(tmp: str, duck: Any) -> dict[str, Any]:
    db = hibase.connect(os.path.join(tmp, "hibase"), cache_policy=None)
    con = sqlite_open(os.path.join(tmp, "sqlite.db"))
    return {"db": db, "t": db.table(TABLE), "sqlite": con, "duck": duck}


def _peers(e: dict, sql: str, repeats: int, params: tuple = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    s, rows = _timed(lambda: e["sqlite"].execute(sql, params).fetchall(), repeats)
    out["sqlite"] = (s, _keys(rows))
    if e["duck"] is not None:
        s, rows = _timed(lambda: e["duck"].execute(sql, params).fetchall(), repeats)
        out["duckdb"] = (s, _keys(rows))
    return out


def _scan_queries(e: dict, n_rows: int, repeats: int, progress: bool) -> list[dict]:
    t = e["t"]
    out = []
    with progress_bar(progress, len(SCANS), "scan queries") as bar:
        for name, cond in SCANS:
            def where(c=cond) -> list:
                return list(t.where(c, columns=PROJECTION))
            auto, rows = _timed(where, repeats)
            keys = _keys(rows)
            scan_mod.PROCESSES = 1
            try:
                one, rows1 = _timed(where, repeats)
                one_cpu = _CPU[0]
            finally:
                scan_mod.PROCESSES = None
            t0 = time.perf_counter()
            generic = _generic_scan(e["db"], cond)
            gen_s = time.perf_counter() - t0
            peers = _peers(e, _sql_select(PROJECTION, _bare(cond)), repeats)
            same = _keys(rows1) == keys and sorted(generic) == keys and all(
                k == keys for _, k in peers.values())
            rec = {"query": name, "condition": cond, "rows": len(keys), "same_rows": same,
                   "hibase_s": auto, "hibase_rows_per_s": n_rows / auto,
                   "hibase_one_process_s": one, "hibase_one_process_rows_per_s": n_rows / one,
                   "hibase_one_process_rows_per_cpu_s": n_rows / max(one_cpu, 1e-9),
                   "hibase_generic_s": gen_s, "hibase_generic_rows_per_s": n_rows / gen_s}
            for peer, (s, _) in peers.items():
                rec[f"{peer}_s"] = s
                rec[f"{peer}_rows_per_s"] = n_rows / s
            out.append(rec)
            bar.update(1)
    return out


def _generic_scan(db: Any, cond: str) -> list[bytes]:
    """The filtered scan as it was before issue 16 (scan_latest, the tree evaluator)."""
    from hibase.query.evaluate import matches
    from hibase.query.normalize import typed
    from hibase.query.parse import parse_condition
    types = db.table(TABLE).schema.columns
    node = typed(parse_condition(cond), types)
    out = []
    for row, got in db.store.scan_latest(TABLE):
        cells = {c: tv[1] for c, tv in got.items()}
        if matches(node, row, cells, types):
            out.append(row)
    return out


def _fetch_queries(e: dict, repeats: int) -> list[dict]:
    t = e["t"]
    out = []
    for tier, label in ((2, "url_10k"), (1, "url_100k")):
        url = url_value(tier, 0).decode()
        cond = f"f.url = '{url}'"
        for cols in (None, [b"f:mdn", b"f:start_time"]):
            s, rows = _timed(lambda c=cols: list(t.where(cond, columns=c)), repeats)
            cpu = _CPU[0]
            keys = _keys(rows)
            peers = _peers(e, _sql_select(cols, "url = ?"), repeats, (url,))
            rec = {"query": label + ("" if cols is None else "_projected"), "condition": cond,
                   "columns": None if cols is None else [c.decode() for c in cols],
                   "rows": len(keys), "hibase_s": s, "hibase_rows_per_s": len(keys) / s,
                   "hibase_rows_per_cpu_s": len(keys) / max(cpu, 1e-9),
                   "same_rows": all(k == keys for _, k in peers.values())}
            for peer, (ps, _) in peers.items():
                rec[f"{peer}_s"] = ps
                rec[f"{peer}_rows_per_s"] = len(keys) / ps
            out.append(rec)
    return out


def _is_null(e: dict, repeats: int) -> dict:
    t = e["t"]
    cond = "f.end_time IS NULL"
    s, rows = _timed(lambda: list(t.where(cond, columns=PROJECTION)), repeats)
    keys = _keys(rows)
    full, full_rows = _timed(lambda: list(t.where(cond, columns=PROJECTION, full_scan=True)),
                             1)
    peers = _peers(e, _sql_select(PROJECTION, _bare(cond)), repeats)
    rec = {"condition": cond, "rows": len(keys), "plan": t.explain(cond, columns=PROJECTION),
           "hibase_index_s": s, "hibase_full_scan_s": full,
           "same_rows": _keys(full_rows) == keys and all(k == keys for _, k in peers.values())}
    for peer, (ps, _) in peers.items():
        rec[f"{peer}_s"] = ps
    return rec


def run(rows: int = 1_000_000, repeats: int = 3, seed: int = 0, progress: bool = True,
        workdir: str | None = None) -> dict[str, Any]:
    try:
        import duckdb
    except ImportError:
        duckdb = None  # type: ignore[assignment]
    tmp = workdir or tempfile.mkdtemp(prefix="hibase-bench-scan-")
    os.makedirs(tmp, exist_ok=True)
    duck = duckdb.connect(os.path.join(tmp, "duck.db")) if duckdb is not None else None
    report: dict[str, Any] = {"benchmark": "scan", "rows": rows, "repeats": repeats,
                              "seed": seed, "machine": _machine(), "targets": TARGETS,
                              "duckdb": getattr(duckdb, "__version__", None)}
    try:
        report.update(_load(tmp, rows, seed, progress, duck))
        e = _engines(tmp, duck)
        try:
            report["scan"] = _scan_queries(e, rows, repeats, progress)
            report["fetch"] = _fetch_queries(e, repeats)
            report["is_null"] = _is_null(e, repeats)
        finally:
            e["db"].close()
            e["sqlite"].close()
    finally:
        if duck is not None:
            duck.close()
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    report["loadavg_end"] = _loadavg()
    best_scan = max(r["hibase_rows_per_s"] for r in report["scan"])
    big = [r for r in report["fetch"] if r["query"].startswith("url_100k")]
    report["meets_targets"] = {
        "scan_rows_per_s (best query)": best_scan >= TARGETS["scan_rows_per_s"],
        "scan_rows_per_s (every query)": all(r["hibase_rows_per_s"] >= TARGETS["scan_rows_per_s"]
                                             for r in report["scan"]),
        "fetch_rows_per_s (100k rows)": all(r["hibase_rows_per_s"] >= TARGETS["fetch_rows_per_s"]
                                            for r in big),
    }
    report["all_same_rows"] = all(r["same_rows"] for r in report["scan"] + report["fetch"]) \
        and report["is_null"]["same_rows"]
    return report


def summary(r: dict[str, Any]) -> list[str]:
    def rate(v: Any) -> str:
        return "-" if v is None else f"{v:,.0f}"

    lines = [f"bench scan: {r['rows']:,} telecom rows, medians of {r['repeats']}, "
             f"same rows on every engine: {r['all_same_rows']}", "",
             "scan (rows/s over the table)    hibase  one-process  (per CPU-s)  generic"
             "   SQLite   DuckDB"]
    for q in r["scan"]:
        lines.append(f"  {q['query']:<28} {rate(q['hibase_rows_per_s']):>9} "
                     f"{rate(q['hibase_one_process_rows_per_s']):>11} "
                     f"{rate(q['hibase_one_process_rows_per_cpu_s']):>12} "
                     f"{rate(q['hibase_generic_rows_per_s']):>8} "
                     f"{rate(q.get('sqlite_rows_per_s')):>9} {rate(q.get('duckdb_rows_per_s')):>9}"
                     f"  ({q['rows']:,} rows)")
    lines += ["", "fetch (rows returned/s)         hibase  (per CPU-s)   SQLite   DuckDB"]
    for q in r["fetch"]:
        lines.append(f"  {q['query']:<28} {rate(q['hibase_rows_per_s']):>7} "
                     f"{rate(q['hibase_rows_per_cpu_s']):>12} "
                     f"{rate(q.get('sqlite_rows_per_s')):>8} {rate(q.get('duckdb_rows_per_s')):>8}"
                     f"  ({q['rows']:,} rows)")
    n = r["is_null"]
    lines += ["", f"{n['condition']} ({n['rows']:,} rows): index {n['hibase_index_s']*1e3:.1f} ms,"
              f" full scan {n['hibase_full_scan_s']*1e3:.0f} ms, SQLite "
              f"{n['sqlite_s']*1e3:.1f} ms"
              + (f", DuckDB {n['duckdb_s']*1e3:.1f} ms" if "duckdb_s" in n else "")]
    lines += [f"target {k}: {'met' if v else 'MISSED'}" for k, v in r["meets_targets"].items()]
    return lines
