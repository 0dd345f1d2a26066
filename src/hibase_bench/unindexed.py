"""Issue 38's speed slice: queries no index answers, hibase beside SQLite in one run.

One table of ``rows`` rows (rowkey k, f.a BIGINT, f.d DOUBLE, f.s VARCHAR with 100 values,
f.g VARCHAR with 20), loaded into hibase's embedded store and into SQLite (on disk, typed
columns, k the PRIMARY KEY, no other index), then per query:

* ``lean``: hibase's row-at-a-time path (query/fast.ENABLED off), one run;
* ``cold``: the columnar feed scanned afresh (the kept feed dropped first), one run;
* ``warm``: the feed kept from an earlier statement (no write since), median of ``repeats``;
  a filtered statement takes the feed only once one is kept (cold, the lean fast scan wins),
  so when the cold run built none ``PRIME`` builds it first (``primed`` in the report);
* ``sqlite``: median of ``repeats``.

The 3-table join reads a fact table of ``rows`` flights (origin airport, carrier, departure
delay, distance) joined to its dimensions by their code rowkeys: ``AIRPORTS`` airports (a
few hundred) and ``AIRLINES`` airlines (tens), filtered on the delay and grouped by airline
and country; the flights' origins are skewed toward big airports, as real traffic is.

Every variant must return SQLite's answer (``same``). Ratios are hibase / SQLite.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from typing import Any, Callable

import hibase
from hibase.query import columnar, fast

__all__ = ["run", "summary", "QUERIES"]

QUERIES = [
    ("filtered scan", "SELECT * FROM t WHERE f.s = 'c17'", "SELECT * FROM t WHERE s = 'c17'"),
    ("filtered max", "SELECT MAX(f.a) FROM t WHERE f.s = 'c17'",
     "SELECT MAX(a) FROM t WHERE s = 'c17'"),
    ("max", "SELECT MAX(f.a) FROM t", "SELECT MAX(a) FROM t"),
    ("sum", "SELECT SUM(f.a) FROM t", "SELECT SUM(a) FROM t"),
    ("group by", "SELECT f.g, COUNT(*), MAX(f.a) FROM t GROUP BY f.g",
     "SELECT g, COUNT(*), MAX(a) FROM t GROUP BY g ORDER BY g"),
    ("order by limit 3", "SELECT * FROM t ORDER BY f.d LIMIT 3",
     "SELECT * FROM t ORDER BY d LIMIT 3"),
]
JOINS = [
    ("3-table join",
     "SELECT al.c.name, ap.p.country, COUNT(*), SUM(fl.f.delay), MAX(fl.f.distance) "
     "FROM flights AS fl JOIN airports AS ap ON fl.f.origin = ap.code "
     "JOIN airlines AS al ON fl.f.carrier = al.code WHERE fl.f.delay > 60 "
     "GROUP BY al.c.name, ap.p.country ORDER BY 1, 2",
     "SELECT al.name, ap.country, COUNT(*), SUM(fl.delay), MAX(fl.distance) "
     "FROM flights AS fl JOIN airports AS ap ON fl.origin = ap.code "
     "JOIN airlines AS al ON fl.carrier = al.code WHERE fl.delay > 60 "
     "GROUP BY al.name, ap.country ORDER BY 1, 2"),
]
PRIME = "SELECT MAX(f.a) FROM t"
AIRPORTS = 300
AIRLINES = 25
TARGET_RATIO = 4.0


def _norm(rows: Any) -> list:
    out = []
    for r in rows:
        if isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], dict):
            key, cells = r
            k = key.decode() if isinstance(key, bytes) else key
            out.append((k, cells.get(b"f:a"), cells.get(b"f:d"), cells.get(b"f:s"),
                        cells.get(b"f:g")))
        else:
            out.append(tuple(r))
    return out


def _median(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _load_flights(db: Any, lite: sqlite3.Connection, rows: int, rng: random.Random) -> None:
    """The join's tables, in hibase and SQLite (codes are the rowkeys / PRIMARY KEYs)."""
    countries = [f"C{i:02d}" for i in range(30)]
    airports = [(f"A{i:03d}", f"city {i}", rng.choice(countries)) for i in range(AIRPORTS)]
    airlines = [(f"L{i:02d}", f"airline {i}") for i in range(AIRLINES)]
    weights = [1 / (i + 1) for i in range(AIRPORTS)]  # a few hubs, many small airports
    origins = rng.choices([a[0] for a in airports], weights, k=rows)
    flights = [(f"f{i:07d}", origins[i], f"L{rng.randrange(AIRLINES):02d}",
                rng.randint(-15, 180) if rng.random() < 0.98 else None,
                round(rng.uniform(100, 5000), 1)) for i in range(rows)]
    db.sql("CREATE TABLE airports (code VARCHAR PRIMARY KEY, p.city VARCHAR, p.country VARCHAR)")
    db.sql("CREATE TABLE airlines (code VARCHAR PRIMARY KEY, c.name VARCHAR)")
    db.sql("CREATE TABLE flights (k VARCHAR PRIMARY KEY, f.origin VARCHAR, f.carrier VARCHAR, "
           "f.delay BIGINT, f.distance DOUBLE)")
    db.execute_many("UPSERT INTO airports (code, p.city, p.country) VALUES (?, ?, ?)", airports)
    db.execute_many("UPSERT INTO airlines (code, c.name) VALUES (?, ?)", airlines)
    for i in range(0, rows, 20_000):
        db.execute_many("UPSERT INTO flights (k, f.origin, f.carrier, f.delay, f.distance) "
                        "VALUES (?, ?, ?, ?, ?)", flights[i:i + 20_000])
    lite.execute("CREATE TABLE airports (code TEXT PRIMARY KEY, city TEXT, country TEXT)")
    lite.execute("CREATE TABLE airlines (code TEXT PRIMARY KEY, name TEXT)")
    lite.execute("CREATE TABLE flights (k TEXT PRIMARY KEY, origin TEXT, carrier TEXT, "
                 "delay INTEGER, distance REAL)")
    lite.executemany("INSERT INTO airports VALUES (?, ?, ?)", airports)
    lite.executemany("INSERT INTO airlines VALUES (?, ?)", airlines)
    lite.executemany("INSERT INTO flights VALUES (?, ?, ?, ?, ?)", flights)
    lite.commit()


def run(rows: int = 300_000, repeats: int = 5, seed: int = 38, workdir: str | None = None,
        progress: bool = False) -> dict[str, Any]:
    rng = random.Random(seed)
    data = [(f"r{i:07d}", rng.randint(0, 10**6), rng.random(), f"c{rng.randrange(100)}",
             f"g{rng.randrange(20)}") for i in range(rows)]
    tmp = workdir or tempfile.mkdtemp(prefix="hibase-unindexed-")
    os.makedirs(tmp, exist_ok=True)
    report: dict[str, Any] = {"rows": rows, "repeats": repeats, "seed": seed,
                              "target_ratio": TARGET_RATIO, "queries": []}
    try:
        report["loadavg_start"] = os.getloadavg()
    except OSError:
        pass
    try:
        db = hibase.connect(os.path.join(tmp, "hibase"))
        db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.a BIGINT, f.d DOUBLE, f.s VARCHAR, "
               "f.g VARCHAR)")
        t0 = time.perf_counter()
        for i in range(0, rows, 20_000):
            db.execute_many("UPSERT INTO t (k, f.a, f.d, f.s, f.g) VALUES (?, ?, ?, ?, ?)",
                            data[i:i + 20_000])
        report["hibase_load_s"] = time.perf_counter() - t0
        lite = sqlite3.connect(os.path.join(tmp, "sqlite.db"))
        lite.execute("CREATE TABLE t (k TEXT PRIMARY KEY, a INTEGER, d REAL, s TEXT, g TEXT)")
        lite.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", data)
        lite.commit()
        del data
        _load_flights(db, lite, rows, rng)
        for name, hq, lq in QUERIES + JOINS:
            sl, want = _median(lambda: lite.execute(lq).fetchall(), repeats)
            fast.ENABLED = False
            try:
                t = time.perf_counter()
                lean = db.sql(hq)
                lean_s = time.perf_counter() - t
            finally:
                fast.ENABLED = True
            columnar.forget()
            t = time.perf_counter()
            cold = db.sql(hq)
            cold_s = time.perf_counter() - t
            primed = "COLUMNAR" not in db.explain(hq)
            if primed:
                db.sql(PRIME)
            warm_s, warm = _median(lambda: db.sql(hq), repeats)
            want_n = _norm(want)
            q: dict[str, Any] = {"query": name, "hibase_sql": hq, "sqlite_sql": lq, "rows_returned": len(want),
                 "path": "columnar" if "COLUMNAR" in db.explain(hq) else "lean",
                 "primed": primed,
                 "lean_s": lean_s, "cold_s": cold_s, "warm_s": warm_s, "sqlite_s": sl,
                 "lean_ratio": lean_s / sl, "cold_ratio": cold_s / sl,
                 "warm_ratio": warm_s / sl,
                 "same": all(_norm(x) == want_n for x in (lean, cold, warm))}
            q["warm_within_target"] = q["warm_ratio"] <= TARGET_RATIO
            q["cold_within_target"] = q["cold_ratio"] <= TARGET_RATIO
            report["queries"].append(q)
        db.close()
        lite.close()
    finally:
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    report["all_same"] = all(q["same"] for q in report["queries"])
    try:
        report["loadavg"] = os.getloadavg()
    except OSError:
        pass
    return report


def summary(r: dict) -> list[str]:
    lines = [f"{r['rows']:,} rows, medians of {r['repeats']} (lean and cold: one run); "
             f"ratio = hibase / SQLite, target <= {r['target_ratio']:g}"]
    lines.append(f"{'query':18s} {'lean':>9s} {'cold':>9s} {'warm':>9s} {'SQLite':>9s} "
                 f"{'lean x':>7s} {'cold x':>7s} {'warm x':>7s} same")
    for q in r["queries"]:
        lines.append(f"{q['query']:18s} {q['lean_s'] * 1000:8.1f}ms {q['cold_s'] * 1000:8.1f}ms "
                     f"{q['warm_s'] * 1000:8.1f}ms {q['sqlite_s'] * 1000:8.1f}ms "
                     f"{q['lean_ratio']:7.1f} {q['cold_ratio']:7.1f} {q['warm_ratio']:7.2f} "
                     f"{q['same']}")
    return lines
