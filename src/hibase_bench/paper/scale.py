"""The paper at scale on real HBase, Apache Phoenix beside on the same rows (`hibase bench paper
--backend thrift://... --scale full`): per size, each system loads the rows without index,
then builds the paper's three covered indexes (Phoenix: as global indexes, then dropped and
built again as local ones); index and table bytes on disk after a flush; each of the paper's
queries timed on its first run after the build and as the median of repeats (hibase also with
its in-process hot-index cache). Every Phoenix answer is checked equal to hibase's.

Sizes: the smallest first; then the largest of the bigger ones whose estimated time (the
smaller size's seconds per row, times its rows, with a margin) fits what is left of the
budget; the sizes skipped are recorded with their estimates, so the report states why the
run stops where it does.
"""

from __future__ import annotations

import os
import statistics
import time
from itertools import islice
from typing import Any, Callable, cast

import hibase

from hibase.samples.telecom import COLUMNS, TELECOM_COLUMNS, telecom_rows
from hibase.samples.workload import COVERED, Stats, paper_queries
from .engines import INDEXES, normalize_hibase, sql_schema
from .phoenix_peer import index_statement, phoenix_row, time_queries, upsert_statement
from ..store import progress_bar, with_option

__all__ = ["run", "all_same", "MARGIN"]

CHUNK = 20_000  # rows per Phoenix upsert_many call (one JSON message to its JVM)
MARGIN = 1.25  # an estimate is the smaller size's seconds per row x rows x MARGIN
PHOENIX_TIMEOUT_S = 4 * 3600  # one CREATE INDEX over millions of rows is one call
PHOENIX_PROPERTIES = {"phoenix.query.timeoutMs": 4 * 3600 * 1000,
                      "hbase.rpc.timeout": 1_200_000,
                      "hbase.client.scanner.timeout.period": 1_200_000}


def _dir_bytes(path: str, family: str | None = None) -> int:
    """Bytes of the files under `path` (only those in column family folders named `family`)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        if family is not None and os.path.basename(root) != family:
            continue
        if "/.tmp" in root or "/recovered.edits" in root:
            continue
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files
                     if not f.startswith("."))
    return total


class _Disk:
    """Bytes of HBase tables in the cluster's root folder (local filesystem), after a flush."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.root = os.path.join(cluster.dir, "hbase", "data", "default")

    def bytes(self, hbase_table: str, family: str | None = None) -> int:
        self.cluster.flush(hbase_table)
        return _dir_bytes(os.path.join(self.root, hbase_table.replace(":", os.sep)), family)


def _sql(db: Any, sql: str, full_scan: bool = False) -> list:
    """A query's rows as hibase returns them (rowkey, {column: bytes})."""
    return cast(list, db.sql(sql, raw=True, full_scan=full_scan))


def _hbase_name(db: Any, table: str) -> str:
    """The HBase table holding hibase table `table` (the HBase backend's own naming)."""
    return cast(str, db.store.hbase_name(table))


def _p50_us(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median µs of `repeats` runs of `fn`, and its last result."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        got = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6, got


def _hibase(backend: str, disk: _Disk, n: int, seed: int, repeats: int, progress: bool,
            note: Callable[[str], Any]) -> tuple[dict[str, Any], list, Stats]:
    """hibase on HBase: load, build, sizes, queries; (figures, answers, stats)."""
    url = with_option(backend, "server_upkeep=0")
    table = f"scale{os.getpid()}_{n}"
    stats = Stats()
    out: dict[str, Any] = {"table": table}
    db = hibase.connect(url, cache_policy=None)
    try:
        db.create_table(table, {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
        batch = db.table(table).batch(batch_size=1000)
        spent = 0.0
        with progress_bar(progress, n, f"hibase load {n:,} rows") as bar:
            for i, (key, data) in enumerate(telecom_rows(n, seed)):
                stats.add(key, data)
                t0 = time.perf_counter()
                batch.put(key, data)
                spent += time.perf_counter() - t0
                if i % 10_000 == 9_999:
                    bar.update(10_000)
            t0 = time.perf_counter()
            batch.send()
            spent += time.perf_counter() - t0
        out["load_s"] = spent
        out["table_bytes"] = disk.bytes(_hbase_name(db, table))
        builds = {}
        for name, cols in INDEXES:
            note(f"[bench paper] hibase: building {name} over {n:,} rows ...")
            t0 = time.perf_counter()
            db.create_index(table, name, cols, covering=[c for c in COVERED if c not in cols])
            builds[name] = time.perf_counter() - t0
        out["index_build_s"] = builds
        out["index_build_total_s"] = sum(builds.values())
        out["index_bytes"] = _hibase_index_bytes(db, disk, table)
        qs = paper_queries(stats, table) + paper_queries(stats, table, covered=True)
        answers, rows = [], []
        for q in qs:
            t0 = time.perf_counter()
            got = _sql(db, q["hibase"])
            first = time.perf_counter() - t0
            cold, _ = _p50_us(lambda: _sql(db, q["hibase"]), repeats)
            want = normalize_hibase(got, q.get("columns", COLUMNS))
            answers.append(want)
            rows.append({"type": q["type"], "covered": "columns" in q, "rows": len(want),
                         "first_us": first * 1e6, "cold_p50_us": cold})
        note(f"[bench paper] hibase: one full scan of {n:,} rows ...")
        t0 = time.perf_counter()
        scanned = _sql(db, qs[3]["hibase"], full_scan=True)
        out["full_scan_s"] = time.perf_counter() - t0
        out["full_scan_same_rows"] = normalize_hibase(scanned) == answers[3]
        out["full_scan_query"] = qs[3]["type"]
    finally:
        db.close()
    hot = hibase.connect(url, cache="memory", cache_capacity=10_000_000)
    try:
        for q in qs:
            hot.sql(q["hibase"])
        for r, q, want in zip(rows, qs, answers):
            r["hot_p50_us"], got = _p50_us(lambda: _sql(hot, q["hibase"]), repeats)
            r["hot_same_rows"] = normalize_hibase(got, q.get("columns", COLUMNS)) == want
        hot.delete_table(table, disable=True)
    finally:
        hot.close()
    out["queries"] = rows
    return out, answers, stats


def _hibase_index_bytes(db: Any, disk: _Disk, table: str) -> dict[str, int]:
    """Bytes on disk of the HBase tables hibase's indexes of `table` live in (entries, value
    tables), by HBase table name."""
    data = _hbase_name(db, table)
    return {name: disk.bytes(name) for name in sorted(os.listdir(disk.root))
            if name != data and table in name}


def _phoenix(px: Any, disk: _Disk, n: int, seed: int, repeats: int, stats: Stats,
             answers: list, progress: bool, note: Callable[[str], Any]) -> dict[str, Any]:
    """Phoenix on the same HBase: load, global covered indexes (build, bytes, queries), then
    the same as local indexes."""
    table = f"HIBASE_SCALE_{os.getpid()}_{n}"
    px.execute(sql_schema(table, "VARCHAR"))
    out: dict[str, Any] = {"table": table}
    try:
        upsert = upsert_statement(table)
        jvm, wall = 0.0, 0.0
        it = telecom_rows(n, seed)
        with progress_bar(progress, n, f"Phoenix load {n:,} rows") as bar:
            while chunk := list(islice(it, CHUNK)):
                data = [phoenix_row(k, d) for k, d in chunk]
                t0 = time.perf_counter()
                jvm += px.upsert_many(upsert, data)
                wall += time.perf_counter() - t0
                bar.update(len(chunk))
        out["load_s"], out["load_wall_s"] = jvm, wall
        out["table_bytes"] = disk.bytes(table)
        qs = paper_queries(stats, table) + paper_queries(stats, table, covered=True)
        for kind in ("global", "local"):
            names = []
            builds = {}
            for name, icols in INDEXES:
                iname = f"{table}_{kind[0].upper()}_{name.upper()}"
                note(f"[bench paper] Phoenix: building {kind} index {iname} over {n:,} rows ...")
                t0 = time.perf_counter()
                px.execute(index_statement(table, iname, icols, kind == "local"))
                builds[name] = time.perf_counter() - t0
                names.append(iname)
            sizes = ({iname: disk.bytes(iname) for iname in names} if kind == "global"
                     else {"L#0 families": disk.bytes(table, "L#0")})
            rows = time_queries(px, table, qs, repeats, answers,
                                (lambda q: _hinted(q, table, names)) if kind == "global"
                                else (lambda q: q["sql"]))
            out[kind] = {"index_build_s": builds, "index_build_total_s": sum(builds.values()),
                         "index_bytes": sizes, "queries": rows}
            for iname in names:
                px.execute(f"DROP INDEX {iname} ON {table}")
    finally:
        px.execute(f"DROP TABLE IF EXISTS {table}")
    return out


def _hinted(q: dict[str, Any], table: str, names: list[str]) -> str:
    """A SELECT * on an indexed column with Phoenix's INDEX hint: a global index that does not
    cover every column serves a query only when hinted (Phoenix then joins back to the data
    table, as hibase reads rows after its index); covered queries and the rowkey one as they
    are."""
    if "columns" in q or not q["sql"].startswith("SELECT * "):
        return q["sql"]
    where = q["sql"].split(" WHERE ", 1)[1]
    if where.startswith("url "):
        index = names[2]
    elif where.startswith("ip = ? AND port"):
        index = names[1]
    elif where.startswith("ip "):
        index = names[0]
    else:
        return q["sql"]
    return f"SELECT /*+ INDEX({table} {index}) */ *{q['sql'][len('SELECT *'):]}"


def _one_size(backend: str, disk: _Disk, n: int, seed: int, repeats: int, progress: bool,
              note: Callable[[str], Any]) -> dict[str, Any]:
    from hibase.cluster.phoenix import PhoenixClient
    t0 = time.perf_counter()
    hb, answers, stats = _hibase(backend, disk, n, seed, repeats, progress, note)
    hb["wall_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with PhoenixClient(disk.cluster.zk_port, heap_mb=2048, timeout=PHOENIX_TIMEOUT_S,
                       log=os.path.join(disk.cluster.dir, "logs", "phoenix.log"),
                       properties=PHOENIX_PROPERTIES) as px:
        how = px.describe()
        ph = _phoenix(px, disk, n, seed, repeats, stats, answers, progress, note)
    ph["wall_s"] = time.perf_counter() - t0
    ph["how"] = how
    return {"rows": n, "row_bytes": stats.bytes / n, "hibase": hb, "phoenix": ph}


def run(backend: str, sizes: list[int], bigger: list[int], seed: int, repeats: int,
        deadline: float, progress: bool = True,
        note: Callable[[str], Any] = lambda _m: None,
        checkpoint: Callable[[dict[str, Any]], Any] = lambda _r: None) -> dict[str, Any]:
    """Run `sizes` (each), then the largest of `bigger` that is estimated to end before
    `deadline` (time.monotonic()); {"ran": False, "reason"} where no cluster serves `backend`.
    `checkpoint(results so far)` after every size."""
    if not backend.startswith("thrift://"):
        return {"ran": False, "reason": "needs --backend thrift:// of a `hibase cluster`"}
    from hibase.cluster.hbase import cluster_for_url
    cluster = cluster_for_url(backend)
    if cluster is None or not cluster.phoenix:
        return {"ran": False, "reason": f"no running `hibase cluster` with Phoenix serves "
                                        f"{backend}"}
    disk = _Disk(cluster)
    done: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    per_row = None
    for n in sizes:
        t0 = time.monotonic()
        done.append(_one_size(backend, disk, n, seed, repeats, progress, note))
        per_row = (time.monotonic() - t0) / n
        checkpoint({"ran": True, "sizes": done, "skipped": skipped})
    for n in sorted(bigger, reverse=True):
        left = deadline - time.monotonic()
        estimate = None if per_row is None else per_row * n * MARGIN
        if estimate is None or estimate > left:
            skipped.append({"rows": n, "estimated_s": estimate, "left_s": left})
            continue
        note(f"[bench paper] scale: {n:,} rows estimated {estimate / 60:.0f} min, "
             f"{left / 60:.0f} min left")
        t0 = time.monotonic()
        done.append(_one_size(backend, disk, n, seed, repeats, progress, note))
        done[-1]["estimated_s"], done[-1]["took_s"] = estimate, time.monotonic() - t0
        break
    return {"ran": True, "sizes": done, "skipped": skipped, "margin": MARGIN,
            "hibase_upkeep": "client (server_upkeep=0): the indexes are built by the client "
                             "over the regions; hibase's coprocessor-kept build answers "
                             "reindex requests row by row (a few hundred rows/s)"}


def all_same(size: dict[str, Any]) -> bool:
    """Whether every answer at one size agreed: Phoenix's (global, local) with hibase's, the
    hot cache's and the full scan's with the index's."""
    hb, px = size["hibase"], size["phoenix"]
    return (hb["full_scan_same_rows"] and all(q["hot_same_rows"] for q in hb["queries"])
            and all(q["same_rows"] for k in ("global", "local") for q in px[k]["queries"]))
