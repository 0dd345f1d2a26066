"""One size of the paper's telecom table loaded into hibase, SQLite and DuckDB in one pass, and
the helpers that run a query on each engine and compare the answers.

hibase: ``hibase.connect(path or thrift URL, cache_policy=None)``, rows through
``table.batch``, then the paper's three global indexes (f:ip; f:ip, f:port; f:url) built over
the loaded table (the paper's batch build of static data, over the regions; the upkeep of every
put is experiment 3's, bench/paper/imports.py), their rows carrying f:mdn and f:start_time
(covered, as the paper's index rows carry the columns queries need). SQLite: on disk, ``k TEXT PRIMARY KEY``
WITHOUT ROWID (the rowkey order, as HBase's), typed columns, the same three B-tree indexes
with mdn and start_time appended (covering) created after the load, 1,000-row transactions, WAL, ANALYZE. DuckDB: the same typed table read from
a CSV written during the load (``telecom``: no index, DuckDB's own scan) and a copy with ART
indexes on the same columns (``telecom_art``).
"""

from __future__ import annotations

import csv
import os
import time
from typing import Any, Callable

import hibase

from .. import query as Q
from hibase.samples.telecom import COLUMNS, TELECOM_COLUMNS, telecom_rows
from ..store import progress_bar, sqlite_open
from hibase.samples.workload import COVERED, INT_COLUMNS, SQL_COLUMNS, Stats

__all__ = ["INDEXES", "Loaded", "load_all", "normalize_hibase", "normalize_sql", "sql_schema"]

INDEXES = (("by_ip", ["f:ip"]), ("by_ip_port", ["f:ip", "f:port"]), ("by_url", ["f:url"]))
BATCH_CELLS = 1000
SQL_TXN_ROWS = 1000


def sql_schema(table: str, text_type: str = "TEXT") -> str:
    """CREATE TABLE of the telecom table for a SQL engine (rowkey `k`, typed columns)."""
    cols = ", ".join(f"{c} {'BIGINT' if c in INT_COLUMNS else text_type}" for c in SQL_COLUMNS)
    return f"CREATE TABLE {table} (k {text_type} PRIMARY KEY, {cols})"


def sql_index_statements(table: str, suffix: str = "", covering: bool = False) -> list[str]:
    """CREATE INDEX of the paper's indexes; `covering`: with COVERED appended (SQLite's
    covering index, the columns hibase's index rows carry)."""
    out = []
    for name, cols in INDEXES:
        names = [c.split(":", 1)[1] for c in cols]
        if covering:
            names += [c.split(":", 1)[1] for c in COVERED if c not in cols]
        out.append(f"CREATE INDEX {name}{suffix} ON {table} ({', '.join(names)})")
    return out


def normalize_hibase(rows: list, columns: Any = COLUMNS) -> list[tuple]:
    """hibase's (rowkey, {b"f:col": bytes}) rows as sorted (k, values as text) tuples."""
    return sorted((k.decode(), *[(d.get(c) or b"").decode() for c in columns]) for k, d in rows)


def normalize_sql(rows: list) -> list[tuple]:
    """A SQL engine's (k, col, ...) tuples as sorted text tuples, like normalize_hibase."""
    return sorted(tuple("" if v is None else (v.decode() if isinstance(v, bytes) else str(v))
                        for v in r) for r in rows)


class Loaded:
    """The engines holding one size: hibase's location and table, SQLite's and DuckDB's files."""

    def __init__(self, rows: int, hibase_path: str, table: str, sqlite_path: str,
                 duck: Any, stats: Stats, load: dict[str, float]) -> None:
        self.rows, self.hibase_path, self.table = rows, hibase_path, table
        self.sqlite_path, self.duck, self.stats, self.load = sqlite_path, duck, stats, load

    def hibase(self, **options: Any) -> Any:
        return hibase.connect(self.hibase_path, **options)


def load_all(workdir: str, hibase_path: str, table: str, rows: int, seed: int,
             progress: bool, duckdb: Any | None) -> Loaded:
    """Generate `rows` rows once and load every engine from the same stream (load seconds each,
    generation not counted; hibase's final flush and SQLite's checkpoint included)."""
    db = hibase.connect(hibase_path, cache_policy=None)
    spent = {"hibase": 0.0, "hibase_cpu": 0.0, "sqlite": 0.0}
    stats = Stats()
    spath = os.path.join(workdir, f"sqlite-{rows}.db")
    csv_path = os.path.join(workdir, f"rows-{rows}.csv")
    clock, cpu = time.perf_counter, time.process_time
    try:
        db.create_table(table, {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
        con = sqlite_open(spath)
        con.execute(sql_schema("telecom") + " WITHOUT ROWID")
        insert = f"INSERT INTO telecom VALUES ({', '.join('?' * (len(SQL_COLUMNS) + 1))})"
        conv: list[Callable] = [int if c in INT_COLUMNS else bytes.decode for c in SQL_COLUMNS]
        batch = db.table(table).batch(batch_size=BATCH_CELLS)
        pending: list[tuple] = []
        with open(csv_path, "w", newline="") as fh, \
                progress_bar(progress, rows, f"load {rows:,} rows") as bar:
            out = csv.writer(fh)
            out.writerow(["k", *SQL_COLUMNS])
            for key, data in telecom_rows(rows, seed):
                stats.add(key, data)
                t0, c0 = clock(), cpu()
                batch.put(key, data)
                spent["hibase"] += clock() - t0
                spent["hibase_cpu"] += cpu() - c0
                vals = [data[c] for c in COLUMNS]
                pending.append((key.decode(), *[f(v) for f, v in zip(conv, vals)]))
                out.writerow([key.decode(), *[v.decode() for v in vals]])
                if len(pending) >= SQL_TXN_ROWS:
                    t0 = clock()
                    with con:
                        con.executemany(insert, pending)
                    spent["sqlite"] += clock() - t0
                    bar.update(len(pending))
                    pending.clear()
            t0, c0 = clock(), cpu()
            batch.send()
            if hasattr(db.store, "flush"):
                db.store.flush()
            spent["hibase"] += clock() - t0
            spent["hibase_cpu"] += cpu() - c0
            t0 = clock()
            with con:
                con.executemany(insert, pending)
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            spent["sqlite"] += clock() - t0
        t0 = clock()
        for stmt in sql_index_statements("telecom", covering=True):
            con.execute(stmt)
        spent["sqlite_index_build"] = clock() - t0
        con.execute("ANALYZE")
        con.close()
        t0, c0 = clock(), cpu()
        for name, cols in INDEXES:
            # the batch build over the regions; index rows carry COVERED
            db.create_index(table, name, cols, covering=[c for c in COVERED if c not in cols])
        spent["hibase_index_build"] = clock() - t0
        spent["hibase_index_build_cpu"] = cpu() - c0
    finally:
        db.close()
    duck = None
    if duckdb is not None:
        duck = duckdb.connect(os.path.join(workdir, f"duck-{rows}.db"))
        duck.execute("SET enable_progress_bar = false")
        types = ", ".join(f"'{c}': '{'BIGINT' if c in INT_COLUMNS else 'VARCHAR'}'"
                          for c in SQL_COLUMNS)
        t0 = clock()
        duck.execute(sql_schema("telecom", "VARCHAR"))
        duck.execute(f"INSERT INTO telecom SELECT * FROM read_csv('{csv_path}', header=true, "
                     f"columns={{'k': 'VARCHAR', {types}}})")
        spent["duckdb"] = clock() - t0
        t0 = clock()
        duck.execute(sql_schema("telecom_art", "VARCHAR"))
        duck.execute("INSERT INTO telecom_art SELECT * FROM telecom")
        for stmt in sql_index_statements("telecom_art", "_art"):
            duck.execute(stmt)
        spent["duckdb_art"] = clock() - t0
    os.remove(csv_path)
    return Loaded(rows, hibase_path, table, spath, duck, stats, spent)


def timed(fn: Callable[[], Any], repeats: int) -> tuple[dict[str, Any], Any]:
    """query.timed: p50/p90/min/CPU µs over up to `repeats` runs after a warm-up run."""
    return Q.timed(fn, repeats)
