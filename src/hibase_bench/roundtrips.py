"""Round trips on the HBase backend (issue 11): hot against cold lookups with the hot-index
cache, Thrift calls per query, the load with 0 and 3 indexes, and an indexed lookup against the
full scan, through `gateway` (hibase's own Thrift1 gateway, started as a subprocess) or a
thrift:// URL (a running gateway or a real HBase Thrift1 server).

Data: `rows` rows, column f:a with `values` distinct values (rows/values rows each), f:b and
f:c carried, f:d unique. Two tables: one loaded with no index, one with three indexes kept on
every put (by_a on f:a covering f:b, by_c on f:c, by_d on f:d), same rows, same batches.
Before any timing, one full scan gives every value's rows and each queried value's answer is
compared with it (covered and with rows); a mismatch raises BenchmarkMismatch.

Per cache (`memory` in process; `redis` with one local redis-server): for each of `lookups`
values, the cache is emptied and the query timed (cold: it reads the index from the store),
then timed again (hot: the set is cached), covered (`columns=[f:b]`: no row fetch) and with
rows. Medians, their ratio, and the store's Thrift calls per query (`db.stats()`), with the
default catalog lease. Without cache: the indexed lookup's median against the full scan's.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from contextlib import ExitStack
from typing import Any

from tqdm import tqdm

import hibase
from hibase import errors
from hibase_bench.gateway_proc import Gateway, check_backend
from hibase_bench.store import drop_tables, with_option

__all__ = ["run", "measure", "summary"]

COLUMNS = {"f:a": "string", "f:b": "string", "f:c": "string", "f:d": "string"}


def rows_of(n: int, values: int, start: int = 0) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """Rows start .. start+n-1: f:a with `values` values, f:b 97, f:c 13, f:d unique (the
    writes bench loads the same rows)."""
    return [(b"r%09d" % i, {b"f:a": b"v%06d" % (i % values), b"f:b": b"b%d" % (i % 97),
                            b"f:c": b"c%d" % (i % 13), b"f:d": b"d%09d" % i})
            for i in range(start, start + n)]


def _calls(db: Any) -> int:
    return db.stats()["store_calls_total"]


def _load(db: Any, name: str, data: list, indexes: bool, progress: bool, label: str
          ) -> dict[str, Any]:
    db.create_table(name, {"f": {}}, columns=COLUMNS)
    if indexes:
        db.create_index(name, "by_a", ["f:a"], covering=["f:b"])
        db.create_index(name, "by_c", ["f:c"])
        db.create_index(name, "by_d", ["f:d"])
    t = db.table(name)
    c0, t0 = _calls(db), time.perf_counter()
    with tqdm(total=len(data), desc=label, unit="row", disable=not progress) as bar:
        for i in range(0, len(data), 1000):
            with t.batch() as b:
                for row, cells in data[i:i + 1000]:
                    b.put(row, cells)
            bar.update(min(1000, len(data) - i))
    secs = time.perf_counter() - t0
    return {"seconds": round(secs, 3), "rows_per_s": round(len(data) / secs),
            "calls": _calls(db) - c0}


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 4)


def _lookups(db: Any, name: str, picked: list[bytes], expected: dict, columns: Any,
             progress: bool, label: str) -> dict[str, Any]:
    """Cold then hot timing of each picked value; answers checked first."""
    t = db.table(name)

    def query(v: bytes) -> list:
        return list(t.where(f"f.a = '{v.decode()}'", columns=columns))

    for v in picked:  # every answer equals the full scan's before anything is timed
        got = sorted(query(v))
        want = sorted((r, {c: x for c, x in d.items() if columns is None or c in columns})
                      for r, d in expected.get(v, []))
        if got != want:
            raise BenchmarkMismatch(f"{label}: f.a = {v!r} gave {len(got)} rows, the full scan "
                                    f"{len(want)}")
    cold, hot, cold_calls, hot_calls = [], [], [], []
    for v in tqdm(picked, desc=label, unit="value", disable=not progress):
        if db.cache is not None:
            db.cache.invalidate()
        c0, t0 = _calls(db), time.perf_counter()
        query(v)
        cold.append(time.perf_counter() - t0)
        cold_calls.append(_calls(db) - c0)
        c0, t0 = _calls(db), time.perf_counter()
        query(v)
        hot.append(time.perf_counter() - t0)
        hot_calls.append(_calls(db) - c0)
    out = {"cold_p50_ms": _median_ms(cold), "hot_p50_ms": _median_ms(hot),
           "cold_calls_per_query": round(statistics.mean(cold_calls), 3),
           "hot_calls_per_query": round(statistics.mean(hot_calls), 3)}
    out["hot_vs_cold_speedup"] = round(out["cold_p50_ms"] / out["hot_p50_ms"], 2)
    return out


class BenchmarkMismatch(errors.HibaseError):
    """An indexed answer differed from the full scan's: nothing is reported."""


def _phoenix(url: str, data: list, picked: list[bytes], expected: dict, progress: bool
             ) -> dict[str, Any]:
    """Apache Phoenix beside hibase on the same HBase and rows (a `hibase cluster` with
    Phoenix's jars): the same load into a table without index and one with the same three
    indexes as global indexes (by_a INCLUDE (b), by_c, by_d: Phoenix's strongly consistent
    global indexes, kept by its IndexRegionObserver), batches of 1,000 upserts per commit,
    timed inside Phoenix's JVM; then the covered lookup `SELECT k, b WHERE a = ?` of each
    picked value (answers checked against the full scan), timed inside the JVM."""
    from hibase.cluster.phoenix import phoenix_for_backend

    px = phoenix_for_backend(url)
    if px is None:
        return {"ran": False, "reason": f"no running `hibase cluster` with Phoenix serves {url}"}
    base = f"RT_{os.getpid()}"
    rows = [(r.decode(), c[b"f:a"].decode(), c[b"f:b"].decode(), c[b"f:c"].decode(),
             c[b"f:d"].decode()) for r, c in data]
    with px:
        made = []
        try:
            for kind in ("PLAIN", "IDX"):
                px.execute(f"CREATE TABLE {base}_{kind} (k VARCHAR PRIMARY KEY, a VARCHAR, "
                           f"b VARCHAR, c VARCHAR, d VARCHAR)")
                made.append(f"{base}_{kind}")
            px.execute(f"CREATE INDEX {base}_BY_A ON {base}_IDX (a) INCLUDE (b)")
            px.execute(f"CREATE INDEX {base}_BY_C ON {base}_IDX (c)")
            px.execute(f"CREATE INDEX {base}_BY_D ON {base}_IDX (d)")
            load = {}
            for kind in ("PLAIN", "IDX"):
                sql = f"UPSERT INTO {base}_{kind} VALUES (?, ?, ?, ?, ?)"
                secs = 0.0
                for i in tqdm(range(0, len(rows), 50_000), desc=f"Phoenix load {kind}",
                              disable=not progress):
                    secs += px.upsert_many(sql, rows[i:i + 50_000])
                load[kind] = round(secs, 3)
            sql = f"SELECT k, b FROM {base}_IDX WHERE a = ?"
            plan = " ".join(str(r[0]) for r in px.execute("EXPLAIN " + sql, ["x"]))
            times = []
            for v in picked:
                got = sorted(px.execute(sql, [v.decode()]))
                want = sorted((r.decode(), d[b"f:b"].decode()) for r, d in expected.get(v, []))
                if got != want:
                    raise BenchmarkMismatch(f"Phoenix: a = {v!r} gave {len(got)} rows, the "
                                            f"full scan {len(want)}")
                times += px.time_query(sql, [v.decode()], 3)[1:]
            return {"ran": True, "how": px.describe(),
                    "load": {"no_index_s": load["PLAIN"], "three_global_indexes_s": load["IDX"],
                             "three_vs_none_time_ratio": round(load["IDX"] / load["PLAIN"], 3),
                             "rows_per_s_no_index": round(len(rows) / load["PLAIN"]),
                             "rows_per_s_three_indexes": round(len(rows) / load["IDX"])},
                    "covered_lookup_p50_ms": _median_ms(times), "plan": plan[:300]}
        finally:
            for table in made:
                px.execute(f"DROP TABLE IF EXISTS {table}")


def measure(url: str, rows: int = 20_000, values: int = 2_000, lookups: int = 200,
            caches: tuple[str, ...] = ("memory",), progress: bool = True,
            reader_lease_ms: int | None = None, phoenix: bool = False) -> dict[str, Any]:
    """The measurements on an open thrift:// URL (tables made and dropped here);
    `reader_lease_ms`: the catalog lease of the lookup clients (default: the URL's);
    `phoenix`: Phoenix's loads and covered lookups beside, on the same rows (_phoenix)."""
    data = rows_of(rows, values)
    tag = f"rt_{os.getpid()}_{time.time_ns() // 1_000_000}"
    plain, indexed = tag + "_plain", tag + "_idx"
    db = hibase.connect(url, cache_policy=None)
    made: list[str] = []
    try:
        made.append(plain)
        load0 = _load(db, plain, data, False, progress, "load, no index")
        made.append(indexed)
        load3 = _load(db, indexed, data, True, progress, "load, 3 indexes")
        # who kept the indexes: hibase's region-server coprocessor, or this client
        load3["upkeep"] = "server" if all(s.server for s in db.indexer.specs(indexed)) \
            else "client"
        expected: dict[bytes, list] = {}
        t0 = time.perf_counter()
        for row, cells in db.table(indexed).scan():
            expected.setdefault(cells[b"f:a"], []).append((row, cells))
        scan_s = time.perf_counter() - t0
        step = max(1, values // lookups)
        picked = [b"v%06d" % i for i in range(0, values, step)][:lookups]
        per_cache: dict[str, Any] = {}
        for cache in caches:
            with ExitStack() as stack:
                spec = "memory"
                if cache == "redis":
                    from hibase.cluster.local import RedisProcess
                    spec = stack.enter_context(RedisProcess()).url
                reader = url if reader_lease_ms is None else \
                    with_option(url, f"catalog_lease_ms={reader_lease_ms}")
                client = stack.enter_context(hibase.connect(
                    reader, cache=spec, cache_policy="lru", cache_capacity=10 * rows))
                # a user who opts into answers up to a minute old (cache_staleness_ms): a
                # hot hit without the get of the table's index write version
                lax = stack.enter_context(hibase.connect(
                    reader, cache=spec, cache_policy="lru", cache_capacity=10 * rows,
                    cache_staleness_ms=60_000))
                per_cache[cache] = {
                    "covered": _lookups(client, indexed, picked, expected, [b"f:b"], progress,
                                        f"{cache}: covered"),
                    "with_rows": _lookups(client, indexed, picked, expected, None, progress,
                                          f"{cache}: with rows"),
                    "covered_staleness_60s": _lookups(lax, indexed, picked, expected,
                                                      [b"f:b"], progress,
                                                      f"{cache}: covered, 60 s staleness")}
        # the indexed lookup against the full scan of the same condition, no cache
        t = db.table(indexed)
        cond = f"f.a = '{picked[0].decode()}'"
        scans = []
        for _ in range(3):
            s0 = time.perf_counter()
            full = sorted(t.where(cond, full_scan=True))
            scans.append(time.perf_counter() - s0)
        if full != sorted(t.where(cond)):
            raise BenchmarkMismatch(f"{cond}: the index and the full scan disagree")
        idx = []
        for _ in range(20):
            s0 = time.perf_counter()
            list(t.where(cond))
            idx.append(time.perf_counter() - s0)
        px = _phoenix(url, data, picked, expected, progress) if phoenix else None
        return {
            **({"phoenix": px} if px is not None else {}),
            "rows": rows, "values": values, "rows_per_value": rows // values,
            "lookups": len(picked),
            "load": {"no_index": load0, "three_indexes": load3,
                     "three_vs_none_time_ratio": round(load3["seconds"] / load0["seconds"], 3)},
            "hot_cold": per_cache,
            "full_scan": {"p50_ms": _median_ms(scans), "indexed_p50_ms": _median_ms(idx),
                          "indexed_speedup": round(statistics.median(scans)
                                                   / statistics.median(idx), 1),
                          "check_scan_seconds": round(scan_s, 3)},
        }
    finally:
        drop_tables(db, made)
        db.close()


def run(backend: str, rows: int = 20_000, values: int = 2_000, lookups: int = 200,
        caches: tuple[str, ...] = ("memory", "redis"), progress: bool = True,
        phoenix: bool = False) -> dict[str, Any]:
    """measure() on `backend`: "gateway" (started here, stopped at the end) or a thrift://
    URL; a JSON-ready report."""
    if check_backend(backend) == "embedded":
        raise errors.InvalidArgument("the round-trip benchmark needs 'gateway' or a "
                                     "thrift:// URL")
    base = tempfile.mkdtemp(prefix="hibase-bench-rt-")
    try:
        with ExitStack() as stack:
            url = backend
            if backend == "gateway":
                url = stack.enter_context(Gateway(os.path.join(base, "gateway-store"))).url
            report = measure(url, rows, values, lookups, caches, progress, phoenix=phoenix)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {"benchmark": "roundtrips", "backend": backend,
            "url": url, "cpu_count": os.cpu_count(),
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            **report}


def summary(r: dict[str, Any]) -> list[str]:
    lines = [f"round trips on {r['backend']}: {r['rows']:,} rows, {r['values']:,} values "
             f"({r['rows_per_value']} rows each), {r['lookups']} lookups"]
    ld = r["load"]
    lines.append(f"load: no index {ld['no_index']['rows_per_s']:,} rows/s, 3 indexes "
                 f"{ld['three_indexes']['rows_per_s']:,} rows/s "
                 f"(time ratio {ld['three_vs_none_time_ratio']}, upkeep "
                 f"{ld['three_indexes'].get('upkeep', 'client')})")
    px = r.get("phoenix")
    if px and px.get("ran"):
        pl = px["load"]
        lines.append(f"Phoenix load: no index {pl['rows_per_s_no_index']:,} rows/s, 3 global "
                     f"indexes {pl['rows_per_s_three_indexes']:,} rows/s (time ratio "
                     f"{pl['three_vs_none_time_ratio']}); covered lookup "
                     f"{px['covered_lookup_p50_ms']} ms (inside its JVM)")
    elif px:
        lines.append(f"Phoenix: not run ({px['reason']})")
    for cache, kinds in r["hot_cold"].items():
        for kind, m in kinds.items():
            lines.append(f"{cache} {kind}: cold {m['cold_p50_ms']} ms "
                         f"({m['cold_calls_per_query']} calls), hot {m['hot_p50_ms']} ms "
                         f"({m['hot_calls_per_query']} calls): {m['hot_vs_cold_speedup']}x")
    fs = r["full_scan"]
    lines.append(f"indexed lookup {fs['indexed_p50_ms']} ms vs full scan {fs['p50_ms']} ms: "
                 f"{fs['indexed_speedup']}x")
    return lines

