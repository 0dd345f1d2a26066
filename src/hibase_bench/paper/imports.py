"""Experiment 3: import time with 0, 1, 2 and 3 of the paper's indexes kept on every put
(the paper: 1.03-1.12x with its 3 indexes), the upkeep of single puts, and the bulk path
(load without indexes, then the batch build over the regions), hibase beside SQLite.

The same generated rows (in memory, generation not timed) go into a fresh table per index
count, through ``table.batch(batch_size=1000)`` (hibase) and 1,000-row transactions (SQLite),
the index counts interleaved per chunk so machine noise falls on all alike. Single puts: rows
with new rowkeys, one ``table.put`` each, on the 0- and 3-index tables.
"""

from __future__ import annotations

import os
import statistics
import time
from itertools import islice
from typing import Any

import hibase

from hibase.samples.telecom import TELECOM_COLUMNS, telecom_rows
from ..store import sqlite_open
from .engines import INDEXES, SQL_TXN_ROWS, sql_index_statements, sql_schema
from hibase.samples.workload import INT_COLUMNS, SQL_COLUMNS

__all__ = ["run"]

CHUNK = 5_000
SINGLE_PUTS = 1_000


def _chunks(rows: int, seed: int) -> list[list]:
    it = telecom_rows(rows + SINGLE_PUTS, seed)
    data = list(islice(it, rows))
    extra = list(it)
    return [data[i:i + CHUNK] for i in range(0, len(data), CHUNK)] + [extra]


def run(workdir: str, location: str, rows: int, seed: int, remote: bool) -> dict[str, Any]:
    """Load `rows` rows with 0..3 indexes on hibase (`location`: a store folder or a thrift
    URL) and SQLite (files under `workdir`)."""
    *chunks, extra = _chunks(rows, seed)
    db = hibase.connect(location, cache_policy=None)
    tag = f"imp{os.getpid()}_" if remote else "imp_"
    names = [f"{tag}{n}" for n in range(4)]
    cons = []
    spent = {n: 0.0 for n in range(4)}
    sspent = {n: 0.0 for n in range(4)}
    conv = [int if c in INT_COLUMNS else bytes.decode for c in SQL_COLUMNS]
    cols = [f"f:{c}".encode() for c in SQL_COLUMNS]
    insert = f"INSERT INTO telecom VALUES ({', '.join('?' * (len(SQL_COLUMNS) + 1))})"
    try:
        batches = []
        for n, name in enumerate(names):
            db.create_table(name, {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
            for iname, icols in INDEXES[:n]:
                db.create_index(name, iname, icols)
            batches.append(db.table(name).batch(batch_size=1000))
            con = sqlite_open(os.path.join(workdir, f"imp-{n}.db"))
            con.execute(sql_schema("telecom") + " WITHOUT ROWID")
            for stmt in sql_index_statements("telecom")[:n]:
                con.execute(stmt)
            cons.append(con)
        for chunk in chunks:
            tuples = [(k.decode(), *[f(d[c]) for f, c in zip(conv, cols)]) for k, d in chunk]
            for n in range(4):
                put = batches[n].put
                t0 = time.perf_counter()
                for k, d in chunk:
                    put(k, d)
                spent[n] += time.perf_counter() - t0
                t0 = time.perf_counter()
                for i in range(0, len(tuples), SQL_TXN_ROWS):
                    with cons[n]:
                        cons[n].executemany(insert, tuples[i:i + SQL_TXN_ROWS])
                sspent[n] += time.perf_counter() - t0
        for n in range(4):
            t0 = time.perf_counter()
            batches[n].send()
            spent[n] += time.perf_counter() - t0
        single = {}
        for n in (0, 3):
            t = db.table(names[n])
            lat = []
            for k, d in extra:
                t0 = time.perf_counter()
                t.put(k, d)
                lat.append(time.perf_counter() - t0)
            single[str(n)] = statistics.median(lat) * 1e6
        # the bulk path: the 0-index table gets the 3 indexes by the batch build
        t0 = time.perf_counter()
        for iname, icols in INDEXES:
            db.create_index(names[0], iname, icols)
        build = time.perf_counter() - t0
        if remote:
            for name in names:
                db.delete_table(name, disable=True)
    finally:
        db.close()
        for con in cons:
            con.close()
    base = spent[0]
    return {
        "rows": rows,
        "hibase_load_s": {str(n): spent[n] for n in range(4)},
        "hibase_ratio": {str(n): spent[n] / base for n in range(4)},
        "sqlite_load_s": {str(n): sspent[n] for n in range(4)},
        "sqlite_ratio": {str(n): sspent[n] / sspent[0] for n in range(4)},
        "single_put_p50_us": single,
        "single_put_upkeep_ratio": single["3"] / single["0"],
        "bulk_load_then_build_s": base + build, "batch_build_3_s": build,
        "bulk_vs_streaming": (base + build) / spent[3],
        "paper_ratio": [1.03, 1.12],
    }

