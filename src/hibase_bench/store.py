"""Storage benchmark: hibase's embedded store (RocksDB) against SQLite on the same telecom rows.

``run()`` loads the same ``telecom_rows(rows, seed)`` into both stores, in the same process, and
measures per store:

* bulk load rows/s: hibase through ``table.batch(batch_size=1000)`` puts (happybase's batch_size
  counts cells, so one atomic write per 100 ten-column rows); SQLite through ``executemany`` in
  explicit transactions of 1,000 rows. Row generation is not timed; converting each row dict to
  the store's input (SQLite: a parameter tuple) is. The final ``db.store.flush()`` (memtables to
  SST files) and SQLite's ``PRAGMA wal_checkpoint(TRUNCATE)`` are part of the load time.
* random ``row()`` latency p50/p99 (µs) over ``reads`` random existing keys, one call timed at a
  time; SQLite: ``SELECT <10 columns> WHERE k = ?`` and a dict of the same shape
  ({b"f:col": bytes}).
* ``rows()`` of 1,000 random keys (median of 5 key sets); SQLite: both ``WHERE k IN (...)``
  (results put back in request order) and 1,000 point selects are timed, the faster is reported.
* full scan rows/s: hibase ``table.scan()`` yielding (key, dict); SQLite ``SELECT`` of everything
  in key order, building the same (key, dict) pair per row (the raw tuple rate is reported too).
* bytes on disk per row: hibase ``db.store.flush()`` then ``db.store.disk_size()`` (the whole
  store folder: SST files, WAL, manifest, RocksDB's info LOG); SQLite the database file plus its
  -wal and -shm files after a TRUNCATE checkpoint.

Set-up, identical where the engines allow: SQLite on disk, one ``WITHOUT ROWID`` table with the
rowkey as ``BLOB PRIMARY KEY`` and the 10 columns as BLOBs holding the same bytes as hibase's
cells, ``journal_mode=WAL``, ``synchronous=NORMAL``, a 256 MiB page cache (``cache_size``) to
match hibase's 256 MiB RocksDB block cache; hibase with its defaults (``durability="process"``:
neither store fsyncs per commit), family ``f`` with ``max_versions=1``, no declared column
types. Both stores are loaded fresh (hibase first, then SQLite) and finalised; before closing
RocksDB the benchmark waits for its background compactions to finish (at most 120 s). Then every
file of both stores is read once (so the OS page cache holds both alike: without it the store
loaded first had cold pages reclaimed on this VM) and both stores are reopened, each starting
the read phases with an empty in-process cache. Warm-up, the same for both: ``min(2000, rows)``
untimed random ``row()`` reads of keys drawn apart from the timed ones. Phases then run store by
store (hibase, SQLite) in this order: row(), rows(), scan.

Besides wall-clock figures the report gives each phase's process CPU time and the bytes it
fetched from storage rather than the page cache (``/proc/self/io``), so that contention from
other processes or cache misses show up as such.

``run_durability()`` (``hibase bench store --durability``) measures instead what each
durability level costs writers: single-row puts and batches, from 1 and 4 threads, under
"process" and "fsync" (whose group commit lets concurrent writers share an fsync).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from itertools import islice
from operator import itemgetter
from typing import Any, Callable, Iterator

from tqdm import tqdm

import hibase
from hibase import errors
from hibase.samples.telecom import COLUMNS, telecom_rows
from hibase.store.embedded import EmbeddedStore

__all__ = ["run", "run_durability", "TARGETS"]

TARGETS = {"load_rows_per_s": 50_000, "row_p50_us": 20, "scan_rows_per_s": 100_000,
           "within_2x_of_sqlite": True}
TABLE = "telecom"
HIBASE_BATCH = 1000  # table.batch(batch_size=...) in cells, as happybase counts them
SQLITE_TXN_ROWS = 1000
SQLITE_CACHE_KIB = 256 * 1024  # = EmbeddedStore's default block_cache_mb
GEN_CHUNK = 10_000
MULTI_GET = 1000
MULTI_GET_REPEATS = 5
WARMUP_READS = 2000
SQL_COLS = [c.split(b":", 1)[1].decode() for c in COLUMNS]
ROW_CHECKS = 200  # sampled keys whose hibase and SQLite rows are compared for equality


def quantile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank quantile of an ascending list."""
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[i]


def with_option(url: str, option: str) -> str:
    """Thrift URL `url` with `option` ("key=value[&...]") added to its query string."""
    return url + ("&" if "?" in url else "?") + option


def drop_tables(db: hibase.Connection, names: list[str]) -> None:
    """Drop a benchmark's tables at its end, as far as they exist (a failed run may not have
    made them all)."""
    for name in names:
        try:
            db.delete_table(name, disable=True)
        except errors.HibaseError:
            pass


def progress_bar(progress: bool, total: int, desc: str) -> tqdm:
    return tqdm(total=total, desc=desc, unit="row", unit_scale=True, file=sys.stderr,
                disable=not progress, leave=False, mininterval=0.5)


def _chunks(rows: int, seed: int) -> Iterator[list[tuple[bytes, dict[bytes, bytes]]]]:
    it = telecom_rows(rows, seed)
    while True:
        chunk = list(islice(it, GEN_CHUNK))
        if not chunk:
            return
        yield chunk


def _dir_bytes(path: str) -> dict[str, int]:
    """Bytes per kind of file under `path` (by extension, or name for extension-less files)."""
    out: dict[str, int] = {}
    for root, _, files in os.walk(path):
        for f in files:
            kind = f.rsplit(".", 1)[1] if "." in f else f.split("-")[0]
            out[kind] = out.get(kind, 0) + os.path.getsize(os.path.join(root, f))
    return dict(sorted(out.items()))


def _read_files(path: str) -> int:
    """Read every file under `path` (or the file `path` and its -wal/-shm) once, untimed, so
    the OS page cache holds both stores alike before the read phases; returns bytes read."""
    paths = []
    if os.path.isdir(path):
        for root, _, files in os.walk(path):
            paths += [os.path.join(root, f) for f in files]
    else:
        paths = [p for p in (path, path + "-wal", path + "-shm") if os.path.exists(p)]
    total = 0
    for p in paths:
        try:
            with open(p, "rb", buffering=0) as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    total += len(chunk)
        except OSError:  # LOCK and the like
            pass
    return total


def _disk_reads() -> int | None:
    """Bytes this process has made the storage layer fetch (not served by the page cache)."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:  # pragma: no cover - not Linux
        pass
    return None


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        return None


def _machine() -> dict[str, Any]:
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:  # pragma: no cover
        pass
    try:
        import rocksdict
        rdv = getattr(rocksdict, "__version__", None)
        if rdv is None:
            from importlib.metadata import version
            rdv = version("rocksdict")
    except Exception:  # pragma: no cover
        rdv = None
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "mem_total_gib": mem,
        "sqlite": sqlite3.sqlite_version,
        "rocksdict": rdv,
        "hibase": hibase.__version__,
        "loadavg_start": _loadavg(),
    }


# -- hibase -----------------------------------------------------------------------------------

def embedded_store(db: hibase.Connection) -> EmbeddedStore:
    """The embedded store under `db`: these benchmarks measure it (its flush, size on disk,
    RocksDB files and WAL syncs are its own), so another backend is refused."""
    store = db.store
    if not isinstance(store, EmbeddedStore):
        raise TypeError(f"this benchmark measures the embedded store, not {type(store).__name__}")
    return store


def _hibase_open(path: str) -> tuple[Any, Any]:
    db = hibase.connect(path)
    return db, db.table(TABLE)


def _settle_rocksdb(db: Any, timeout: float = 120.0) -> float:
    """Wait until no RocksDB compaction is pending or running; returns the seconds waited."""
    t0 = time.perf_counter()
    views = list(db.store.rocksdb_views(kv=False).values())
    while time.perf_counter() - t0 < timeout:
        busy = 0
        for v in views:
            try:
                busy += (v.property_int_value("rocksdb.compaction-pending") or 0)
                busy += (v.property_int_value("rocksdb.num-running-compactions") or 0)
                busy += (v.property_int_value("rocksdb.num-running-flushes") or 0)
            except Exception:  # pragma: no cover - property unsupported: do not wait
                return 0.0
        if not busy:
            break
        time.sleep(0.1)
    return time.perf_counter() - t0


def _lsm_shape(db: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in db.store.rocksdb_views(kv=False).values():
        for level in range(7):
            try:
                n = v.property_int_value(f"rocksdb.num-files-at-level{level}") or 0
            except Exception:  # pragma: no cover
                return out
            if n:
                out[f"L{level}"] = out.get(f"L{level}", 0) + n
    return out


def _hibase_load(path: str, rows: int, seed: int, progress: bool,
                 keys: list[bytes]) -> dict[str, Any]:
    db = hibase.connect(path)
    db.create_table(TABLE, {"f": {"max_versions": 1}})
    table = db.table(TABLE)
    batch = table.batch(batch_size=HIBASE_BATCH)
    put = batch.put
    clock = time.perf_counter
    elapsed = 0.0
    loaded = 0
    raw = 0
    gc.collect()
    cpu = 0.0
    with progress_bar(progress, rows, "hibase load") as bar:
        for chunk in _chunks(rows, seed):
            keys.extend(k for k, _ in chunk)
            raw += sum(len(k) + sum(map(len, d.values())) for k, d in chunk)
            t0, c0 = clock(), time.process_time()
            for k, d in chunk:
                put(k, d)
            elapsed += clock() - t0
            cpu += time.process_time() - c0
            loaded += len(chunk)
            bar.update(len(chunk))
        t0, c0 = clock(), time.process_time()
        batch.send()
        put_s = elapsed + clock() - t0
    store = embedded_store(db)
    t1 = clock()
    store.flush()
    flush_s = clock() - t1
    cpu += time.process_time() - c0
    size_after_flush = store.disk_size()
    settle_s = _settle_rocksdb(db)
    size = store.disk_size()
    lsm = _lsm_shape(db)
    db.close()
    files = _dir_bytes(path)
    total_s = put_s + flush_s
    return {
        "load_rows_per_s": loaded / total_s,
        "load_s": total_s, "load_put_s": put_s, "load_flush_s": flush_s,
        "load_cpu_s": cpu, "compaction_settle_s": settle_s,
        "disk_bytes": size, "disk_bytes_right_after_flush": size_after_flush,
        "bytes_per_row": size / max(loaded, 1), "disk_files": files, "lsm_files": lsm,
        "_raw_bytes": raw, "_loaded": loaded,
    }


# -- SQLite -----------------------------------------------------------------------------------

def sqlite_open(path: str) -> sqlite3.Connection:
    """A SQLite connection tuned as the benchmarks compare against it: WAL, synchronous=NORMAL,
    a page cache as large as the embedded store's block cache."""
    con = sqlite3.connect(path, isolation_level=None, cached_statements=256)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
    return con


def _sqlite_files(path: str) -> dict[str, int]:
    out = {}
    for suffix in ("", "-wal", "-shm"):
        p = path + suffix
        out["db" + suffix] = os.path.getsize(p) if os.path.exists(p) else 0
    return out


def _sqlite_load(path: str, rows: int, seed: int, progress: bool) -> dict[str, Any]:
    con = sqlite_open(path)
    cols = ", ".join(f"{c} BLOB" for c in SQL_COLS)
    con.execute(f"CREATE TABLE {TABLE} (k BLOB PRIMARY KEY, {cols}) WITHOUT ROWID")
    insert = (f"INSERT INTO {TABLE} (k, {', '.join(SQL_COLS)}) "
              f"VALUES ({', '.join('?' * (len(SQL_COLS) + 1))})")
    values = itemgetter(*COLUMNS)
    clock = time.perf_counter
    elapsed = 0.0
    loaded = 0
    gc.collect()
    cpu = 0.0
    with progress_bar(progress, rows, "sqlite load") as bar:
        for chunk in _chunks(rows, seed):
            t0, c0 = clock(), time.process_time()
            for i in range(0, len(chunk), SQLITE_TXN_ROWS):
                con.execute("BEGIN")
                con.executemany(insert, [(k, *values(d))
                                         for k, d in chunk[i:i + SQLITE_TXN_ROWS]])
                con.execute("COMMIT")
            elapsed += clock() - t0
            cpu += time.process_time() - c0
            loaded += len(chunk)
            bar.update(len(chunk))
    t0, c0 = clock(), time.process_time()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ckpt_s = clock() - t0
    cpu += time.process_time() - c0
    con.close()
    files = _sqlite_files(path)
    size = sum(files.values())
    total_s = elapsed + ckpt_s
    return {
        "load_rows_per_s": loaded / total_s,
        "load_s": total_s, "load_put_s": elapsed, "load_checkpoint_s": ckpt_s,
        "load_cpu_s": cpu,
        "disk_bytes": size, "bytes_per_row": size / max(loaded, 1), "disk_files": files,
        "_loaded": loaded,
    }


class _SqliteReader:
    def __init__(self, con: sqlite3.Connection):
        self.con = con
        cols = ", ".join(SQL_COLS)
        self.point = f"SELECT {cols} FROM {TABLE} WHERE k = ?"
        self.in_sql: dict[int, str] = {}  # n -> statement
        self.cols_sql = cols

    def row(self, key: bytes) -> dict[bytes, bytes]:
        r = self.con.execute(self.point, (key,)).fetchone()
        return {} if r is None else dict(zip(COLUMNS, r))

    def rows_point(self, keys: list[bytes]) -> list[tuple[bytes, dict]]:
        ex, sql, out = self.con.execute, self.point, []
        for k in keys:
            r = ex(sql, (k,)).fetchone()
            if r is not None:
                out.append((k, dict(zip(COLUMNS, r))))
        return out

    def rows_in(self, keys: list[bytes]) -> list[tuple[bytes, dict]]:
        sql = self.in_sql.get(len(keys))
        if sql is None:
            sql = self.in_sql[len(keys)] = (
                f"SELECT k, {self.cols_sql} FROM {TABLE} WHERE k IN ({','.join('?' * len(keys))})")
        found = {r[0]: r[1:] for r in self.con.execute(sql, keys)}
        out = []
        for k in keys:  # happybase returns rows in request order
            r = found.get(k)
            if r is not None:
                out.append((k, dict(zip(COLUMNS, r))))
        return out

    def scan(self) -> Iterator[tuple[bytes, dict]]:
        for r in self.con.execute(f"SELECT k, {self.cols_sql} FROM {TABLE} ORDER BY k"):
            yield r[0], dict(zip(COLUMNS, r[1:]))

    def scan_tuples(self) -> Iterator[tuple]:
        return self.con.execute(f"SELECT k, {self.cols_sql} FROM {TABLE} ORDER BY k")


# -- read phases (same code for both stores) ----------------------------------------------------

def _point_reads(get: Callable[[bytes], dict], keys: list[bytes], warm: list[bytes],
                 progress: bool, name: str) -> dict[str, Any]:
    for k in warm:
        get(k)
    clock = time.perf_counter
    lat: list[float] = []
    append = lat.append
    missing = 0
    gc.collect()
    io0 = _disk_reads()
    c0 = time.process_time()
    with progress_bar(progress, len(keys), f"{name} row()") as bar:
        step = max(1, len(keys) // 50)
        for i in range(0, len(keys), step):
            for k in keys[i:i + step]:
                t0 = clock()
                d = get(k)
                append(clock() - t0)
                if not d:
                    missing += 1
            bar.update(min(step, len(keys) - i))
    cpu = time.process_time() - c0
    io1 = _disk_reads()
    lat.sort()
    us = 1e6
    return {"row_p50_us": quantile(lat, 0.50) * us, "row_p99_us": quantile(lat, 0.99) * us,
            "row_mean_us": sum(lat) / len(lat) * us, "row_min_us": lat[0] * us,
            "row_cpu_us_per_read": cpu / len(lat) * us, "row_missing": missing,
            "row_disk_read_bytes": None if io0 is None or io1 is None else io1 - io0}


def _multi_gets(get_many: Callable[[list[bytes]], list], key_sets: list[list[bytes]]
                ) -> tuple[float, int]:
    """Median seconds of get_many over the key sets, and rows returned by the last call."""
    clock = time.perf_counter
    times = []
    got = 0
    gc.collect()
    for ks in key_sets:
        t0 = clock()
        got = len(get_many(ks))
        times.append(clock() - t0)
    return statistics.median(times), got


def _scan(it_factory: Callable[[], Iterator], rows: int, progress: bool, name: str
          ) -> tuple[float, int, float, int | None]:
    clock = time.perf_counter
    n = 0
    gc.collect()
    io0 = _disk_reads()
    with progress_bar(progress, rows, f"{name} scan") as bar:
        t0, c0 = clock(), time.process_time()
        it = it_factory()
        while True:
            k = sum(1 for _ in islice(it, 50_000))
            if not k:
                break
            n += k
            bar.update(k)
        el, cpu = clock() - t0, time.process_time() - c0
    io1 = _disk_reads()
    return el, n, cpu, None if io0 is None or io1 is None else io1 - io0


def run(rows: int = 100_000, workdir: str | None = None, seed: int = 0, reads: int = 20_000,
        progress: bool = True) -> dict:
    """Load `rows` telecom rows into hibase and SQLite, measure both; a JSON-ready report.

    `workdir`: where the two stores go (a fresh sub-folder, kept afterwards); by default a
    temporary folder, removed at the end."""
    if not isinstance(rows, int) or rows < 1:
        raise ValueError("rows must be a positive int")
    if not isinstance(reads, int) or reads < 1:
        raise ValueError("reads must be a positive int")
    started = time.perf_counter()
    machine = _machine()
    if workdir is not None:
        os.makedirs(workdir, exist_ok=True)
    base = tempfile.mkdtemp(prefix="hibase-bench-store-", dir=workdir)
    hpath = os.path.join(base, "hibase")
    spath = os.path.join(base, "sqlite.db")
    try:
        # -- load, finalise, size -------------------------------------------------------------
        keys: list[bytes] = []
        h = _hibase_load(hpath, rows, seed, progress, keys)
        s = _sqlite_load(spath, rows, seed, progress)
        raw = h.pop("_raw_bytes")
        n = h.pop("_loaded")
        if s.pop("_loaded") != n or n != rows:
            raise RuntimeError(f"loaded {n} rows into hibase, expected {rows}")

        # -- the keys each phase reads: drawn once, the same for both stores ----------------
        rng = random.Random(f"hibase-bench-store/{seed}")
        read_keys = rng.sample(keys, reads) if reads <= n else rng.choices(keys, k=reads)
        warm = rng.choices(keys, k=min(WARMUP_READS, n))
        m = min(MULTI_GET, n)
        key_sets = [rng.sample(keys, m) for _ in range(MULTI_GET_REPEATS)]
        checks = read_keys[:ROW_CHECKS]
        del keys

        # -- reopened stores: empty in-process caches, both files read into the OS cache ------
        _read_files(hpath)
        _read_files(spath)
        db, table = _hibase_open(hpath)
        con = sqlite_open(spath)
        sq = _SqliteReader(con)
        try:
            # same answers from both stores
            mismatches = sum(1 for k in checks if table.row(k) != sq.row(k))

            h.update(_point_reads(table.row, read_keys, warm, progress, "hibase"))
            s.update(_point_reads(sq.row, read_keys, warm, progress, "sqlite"))

            t_h, got_h = _multi_gets(table.rows, key_sets)
            t_in, got_in = _multi_gets(sq.rows_in, key_sets)
            t_pt, got_pt = _multi_gets(sq.rows_point, key_sets)
            h.update({"rows_1000_ms": t_h * 1e3, "rows_1000_rows_per_s": m / t_h,
                      "rows_1000_returned": got_h})
            best_in = t_in <= t_pt
            t_s = t_in if best_in else t_pt
            s.update({"rows_1000_ms": t_s * 1e3, "rows_1000_rows_per_s": m / t_s,
                      "rows_1000_method": "WHERE k IN (...)" if best_in else "point selects",
                      "rows_1000_ms_in": t_in * 1e3, "rows_1000_ms_point_selects": t_pt * 1e3,
                      "rows_1000_returned": got_in if best_in else got_pt})

            el, cnt, cpu, io = _scan(lambda: table.scan(), n, progress, "hibase")
            h.update({"scan_s": el, "scan_cpu_s": cpu, "scan_rows_per_s": cnt / el,
                      "scan_rows": cnt, "scan_disk_read_bytes": io})
            el, cnt, cpu, io = _scan(sq.scan, n, progress, "sqlite")
            s.update({"scan_s": el, "scan_cpu_s": cpu, "scan_rows_per_s": cnt / el,
                      "scan_rows": cnt, "scan_disk_read_bytes": io})
            el, _, _, _ = _scan(sq.scan_tuples, n, progress, "sqlite tuples")
            s["scan_tuples_rows_per_s"] = n / el
        finally:
            db.close()
            con.close()
        if h["scan_rows"] != n or s["scan_rows"] != n:
            raise RuntimeError(f"scans returned {h['scan_rows']} / {s['scan_rows']} rows, "
                               f"expected {n}")
    finally:
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)

    ratios = {
        "load_rows_per_s": h["load_rows_per_s"] / s["load_rows_per_s"],
        "row_p50_us": s["row_p50_us"] / h["row_p50_us"],
        "row_p99_us": s["row_p99_us"] / h["row_p99_us"],
        "rows_1000_ms": s["rows_1000_ms"] / h["rows_1000_ms"],
        "scan_rows_per_s": h["scan_rows_per_s"] / s["scan_rows_per_s"],
        "bytes_per_row": s["bytes_per_row"] / h["bytes_per_row"],
    }
    within = {k: v >= 0.5 for k, v in ratios.items()}
    meets = {
        "load_rows_per_s": h["load_rows_per_s"] >= TARGETS["load_rows_per_s"],
        "row_p50_us": h["row_p50_us"] <= TARGETS["row_p50_us"],
        "scan_rows_per_s": h["scan_rows_per_s"] >= TARGETS["scan_rows_per_s"],
        "within_2x_of_sqlite": all(within.values()),
    }
    machine["loadavg_end"] = _loadavg()
    report = {
        "rows": n,
        "seed": seed,
        "reads": reads,
        "machine": machine,
        "dataset": {"generator": "hibase.samples.telecom.telecom_rows", "columns": len(COLUMNS),
                    "avg_row_bytes": raw / n, "note": "rowkey (30 bytes) + 10 values"},
        "setup": {
            "hibase": f"EmbeddedStore defaults (RocksDB, durability=process, 256 MiB block "
                      f"cache, "
                      f"row bloom filters, no compression); family f max_versions=1, no "
                      f"declared types; load via table.batch(batch_size={HIBASE_BATCH}) "
                      f"(cells: one write per {HIBASE_BATCH // len(COLUMNS)} rows) + "
                      f"db.store.flush()",
            "sqlite": f"on disk, WITHOUT ROWID table, k BLOB PRIMARY KEY + 10 BLOB columns, "
                      f"journal_mode=WAL, synchronous=NORMAL, cache_size={SQLITE_CACHE_KIB} KiB; "
                      f"load via executemany in transactions of {SQLITE_TXN_ROWS} rows + "
                      f"wal_checkpoint(TRUNCATE)",
            "warm_up": f"both stores closed after loading, every file of both read once "
                       f"(so the OS page cache holds both alike), stores reopened (empty "
                       f"in-process caches), then {len(warm)} untimed random row() reads "
                       f"each (same keys)",
            "disk_read_bytes": "bytes the phase fetched from storage rather than the OS "
                               "page cache (/proc/self/io read_bytes)",
            "rows_1000": f"median of {MULTI_GET_REPEATS} calls with {m} random keys each",
            "quantiles": "nearest rank over every timed call (time.perf_counter)",
            "cpu_s": "process CPU time (all threads) of the phase: wall times above it mean "
                     "waiting (I/O, or other processes on the machine: see loadavg)",
            "row_checks": f"{len(checks)} sampled rows compared between the stores: "
                          f"{mismatches} differ",
        },
        "hibase": h,
        "sqlite": s,
        "ratios_meaning": "hibase advantage: > 1 means hibase is better (throughputs "
                          "hibase/sqlite; latencies, times and bytes sqlite/hibase)",
        "ratios": ratios,
        "targets": dict(TARGETS),
        "meets_targets": meets,
        "within_2x_of_sqlite_by_metric": within,
        "elapsed_s": time.perf_counter() - started,
    }
    if mismatches:
        raise RuntimeError(f"{mismatches} of {len(checks)} rows differ between hibase and SQLite")
    return _round(report)


# -- durability levels: what an fsync per acknowledged write costs ----------------------------

DURABILITY_THREADS = (1, 4)


def _durability_case(path: str, level: str, threads: int, work: list[list[tuple[bytes, dict]]],
                     batched: bool) -> dict[str, Any]:
    """Write `work` (one list of (key, data) per write) into a fresh store at `level` from
    `threads` threads (write i by thread i % threads); rows/s and writes/s over the wall time
    from the first write to the last acknowledgement."""
    shutil.rmtree(path, ignore_errors=True)
    db = hibase.connect(path, durability=level, cache=None)
    try:
        db.create_table(TABLE, {"f": {"max_versions": 1}})
        table = db.table(TABLE)
        store = embedded_store(db)
        stats0 = store.durability_stats()

        def writer(part: list[list[tuple[bytes, dict]]]) -> None:
            if batched:
                for rows in part:
                    with table.batch() as b:
                        for key, data in rows:
                            b.put(key, data)
            else:
                for rows in part:
                    for key, data in rows:
                        table.put(key, data)

        parts = [work[i::threads] for i in range(threads)]
        workers = [threading.Thread(target=writer, args=(part,)) for part in parts]
        cpu0, t0 = time.process_time(), time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        stats = store.durability_stats()
        fsyncs = stats["fsyncs"] - stats0["fsyncs"]
        acked = stats["acknowledged"] - stats0["acknowledged"]
        n_rows = sum(len(rows) for rows in work)
        assert sum(1 for _ in table.scan(columns=[COLUMNS[0]])) == n_rows
    finally:
        db.close()
    shutil.rmtree(path, ignore_errors=True)
    return {"writes": len(work), "rows": n_rows, "seconds": wall, "cpu_s": cpu,
            "writes_per_s": len(work) / wall, "rows_per_s": n_rows / wall,
            "fsyncs": fsyncs if level == "fsync" else 0,
            "writes_per_fsync": (acked / fsyncs) if fsyncs else None}


def run_durability(puts: int = 4000, batches: int = 400, batch_rows: int = 100,
                   workdir: str | None = None, seed: int = 0, progress: bool = False
                   ) -> dict[str, Any]:
    """Put throughput under each durability level ("process": the WAL reaches the OS;
    "fsync": it is fsynced before a write returns, concurrent writers sharing fsyncs): `puts`
    single-row puts and `batches` batches of `batch_rows` rows, from 1 and from 4 writer
    threads, each case in a fresh store (telecom rows, 10 columns)."""
    started = time.perf_counter()
    machine = _machine()
    singles = [[row] for row in islice(telecom_rows(puts, seed), puts)]
    rows = list(islice(telecom_rows(batches * batch_rows, seed + 1), batches * batch_rows))
    grouped = [rows[i:i + batch_rows] for i in range(0, len(rows), batch_rows)]
    own = workdir is None
    base = (workdir if workdir is not None
            else tempfile.mkdtemp(prefix="hibase-bench-durability-"))
    os.makedirs(base, exist_ok=True)
    cases: dict[str, dict[str, Any]] = {}
    steps = [(level, kind, threads) for level in ("process", "fsync")
             for kind in ("put", "batch") for threads in DURABILITY_THREADS]
    bar = tqdm(total=len(steps), desc="durability", file=sys.stderr, disable=not progress,
               leave=False)
    try:
        for level, kind, threads in steps:
            gc.collect()
            cases[f"{level}/{kind}/{threads}t"] = _durability_case(
                os.path.join(base, f"{level}-{kind}-{threads}"), level, threads,
                singles if kind == "put" else grouped, kind == "batch")
            bar.update(1)
    finally:
        bar.close()
        if own:
            shutil.rmtree(base, ignore_errors=True)
    cost = {f"{kind}/{threads}t": cases[f"fsync/{kind}/{threads}t"]["rows_per_s"]
            / cases[f"process/{kind}/{threads}t"]["rows_per_s"]
            for kind in ("put", "batch") for threads in DURABILITY_THREADS}
    group = {kind: cases[f"fsync/{kind}/4t"]["rows_per_s"] / cases[f"fsync/{kind}/1t"]["rows_per_s"]
             for kind in ("put", "batch")}
    machine["loadavg_end"] = _loadavg()
    return _round({
        "benchmark": "durability",
        "puts": puts, "batches": batches, "batch_rows": batch_rows, "seed": seed,
        "machine": machine,
        "setup": {
            "store": "EmbeddedStore, fresh folder per case, one table (family f max_versions=1, "
                     "no indexes, no cache); telecom rows (10 columns, ~"
                     f"{sum(len(k) + sum(map(len, d.values())) for [(k, d)] in singles) // puts}"
                     " bytes each), generated before timing",
            "levels": {"process": "WAL written to the OS before a write returns (survives "
                                  "kill -9)",
                       "fsync": "WAL also fsynced (FlushWAL(sync)) before a write returns "
                                "(survives a power cut); writers share fsyncs (group commit)"},
            "put": "table.put(key, row): one atomic write per row",
            "batch": f"with table.batch(): {batch_rows} rows per atomic write",
            "threads": "writes dealt round-robin to N threads of one connection; wall time "
                       "from the first write to the last acknowledgement",
            "writes_per_fsync": "acknowledged writes per fsync (fsync level): above 1 is "
                                "group commit at work",
        },
        "cases": cases,
        "fsync_cost": {"meaning": "fsync rows/s over process rows/s, same shape (1 = free)",
                       **cost},
        "group_commit": {"meaning": "fsync level: rows/s with 4 writer threads over 1 thread",
                         **group},
        "elapsed_s": time.perf_counter() - started,
    })


def _round(obj: Any) -> Any:
    if isinstance(obj, float):
        return round(obj, 3) if abs(obj) < 1000 else round(obj, 1)
    if isinstance(obj, dict):
        return {k: _round(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_round(v) for v in obj]
    return obj


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000), indent=1))
