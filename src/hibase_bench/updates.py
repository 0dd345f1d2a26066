"""Update benchmark: the cost of a row's history (issue 24, "bounded row history").

``run()`` puts ``rows`` telecom rows into a fresh embedded store (family ``f`` with
``max_versions=1``, one global index on ``f:ip``), then updates every row ``rounds`` times: each
update is one ``table.put(row, {f:ip, f:port})`` with new values (so the index entry moves too).
Per round it records the median ``put`` latency (µs, each call timed alone) and, after the round,
the median ``row()`` latency over every row. The same is measured for ``single_updates`` updates
of one row, in rounds of ``SINGLE_ROUND`` updates (``row()`` timed after each put).

After writes stop the benchmark waits for the store's background work (its idle maintenance and
RocksDB's flushes and compactions; it never calls ``compact_table``), then reports the store
folder's bytes on disk (``disk_size()``: SST files, WAL, MANIFEST, OPTIONS, LOG) against:

* ``fresh_bytes``: the same final rows written once into a fresh store with the same table and
  index, flushed and settled the same way: the live data as the store keeps it, fixed files
  included (the ratio ``disk_over_fresh`` is the "within 5x of live data" criterion);
* ``empty_bytes``: a store with the same table and index and no rows (RocksDB's fixed files);
* ``live_bytes``: the logical bytes of the final rows (rowkey + column + value per cell).

Every row is checked against the values last written (and the index answers the last values).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable

import hibase
from hibase.samples.telecom import TELECOM_COLUMNS, telecom_rows
from hibase_bench.store import _machine, _settle_rocksdb

__all__ = ["run", "TARGETS", "summary"]

TABLE = "telecom"
INDEX = "by_ip"
SINGLE_ROUND = 100  # updates of the one row per measured round
TARGETS = {"put_last_over_first": 1.5, "row_last_over_first": 2.0, "disk_over_fresh": 5.0}
SETTLE_TIMEOUT = 120.0


def _ip(i: int, r: int) -> bytes:
    return f"10.{r % 250}.{i // 250 % 250}.{i % 250}".encode()


def _open(path: str) -> tuple[Any, Any]:
    db = hibase.connect(path)
    db.create_table(TABLE, {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
    db.create_index(TABLE, INDEX, ["f:ip"])
    return db, db.table(TABLE)


def _settle(db: Any) -> float:
    """Wait for the store's background maintenance, then RocksDB's own work; seconds waited."""
    t0 = time.perf_counter()
    wait = getattr(db.store, "wait_maintenance", None)
    if wait is not None:
        wait(SETTLE_TIMEOUT)
    else:  # a store without background maintenance (before issue 24): RocksDB's work only
        time.sleep(2.0)
    _settle_rocksdb(db, SETTLE_TIMEOUT)
    return round(time.perf_counter() - t0, 2)


def _median_us(ns: list[int]) -> float:
    return round(statistics.median(ns) / 1000, 1)


def _ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b else float("inf")


def _segment_keys(db: Any) -> int:
    return sum(1 for v in db.store.rocksdb_views(kv=False, table=TABLE).values()
               for _ in v.keys())


def _final_size(path: str, final: dict[bytes, dict[bytes, bytes]]) -> tuple[int, int]:
    """(bytes of an empty store with the table and index, bytes of a fresh store holding
    `final`), both flushed and settled like the measured store."""
    out = []
    for rows in ({}, final):
        shutil.rmtree(path, ignore_errors=True)
        db, table = _open(path)
        with table.batch(batch_size=1000) as b:
            for key, data in rows.items():
                b.put(key, data)
        db.store.flush()
        _settle(db)
        out.append(db.store.disk_size())
        db.close()
    shutil.rmtree(path, ignore_errors=True)
    return out[0], out[1]


def _scenario(path: str, rows: int, rounds: int, round_size: int | None, seed: int,
              note: Callable[[str], Any], total: int = 0) -> dict[str, Any]:
    """`rows` rows updated `rounds` times; round_size: updates of the one row per round, `total`
    in all (then rows is 1 and row() is timed after each put)."""
    db, table = _open(path)
    base = list(telecom_rows(rows, seed))
    keys = [k for k, _ in base]
    final = {k: dict(d) for k, d in base}
    with table.batch(batch_size=1000) as b:
        for key, data in base:
            b.put(key, data)
    per_round: list[dict[str, float]] = []
    clock = time.perf_counter_ns
    t0 = time.perf_counter()
    n = 0
    for r in range(rounds):
        puts, reads = [], []
        for j in range(min(round_size, total - n) if round_size else len(keys)):
            i = 0 if round_size else j
            key = keys[i]
            data = {b"f:ip": _ip(i, n), b"f:port": str(1024 + n % 60000).encode()}
            n += 1
            s = clock()
            table.put(key, data)
            puts.append(clock() - s)
            final[key].update(data)
            if round_size:
                s = clock()
                table.row(key)
                reads.append(clock() - s)
        if not round_size:
            for key in keys:
                s = clock()
                table.row(key)
                reads.append(clock() - s)
        per_round.append({"put_us": _median_us(puts), "row_us": _median_us(reads)})
        if r % max(1, rounds // 10) == 0:
            note(f"round {r + 1}/{rounds}: put {per_round[-1]['put_us']} µs, "
                 f"row {per_round[-1]['row_us']} µs")
    write_s = round(time.perf_counter() - t0, 2)
    updates = n
    settle_s = _settle(db)
    disk = db.store.disk_size()
    segments = _segment_keys(db)
    wrong = sum(1 for k in keys if table.row(k) != final[k])
    ip = final[keys[-1]][b"f:ip"]
    by_index = sorted(k for k, _ in table.where("f.ip = ?", params=[ip.decode()]))
    index_ok = by_index == sorted(k for k in keys if final[k][b"f:ip"] == ip)
    verify = db.verify_index(TABLE, INDEX)
    db.close()
    empty, fresh = _final_size(path + "-fresh", final)
    live = sum(len(k) + sum(len(c) + len(v) for c, v in d.items()) for k, d in final.items())
    first, last = per_round[0], per_round[-1]
    return {
        "rows": rows, "rounds": rounds, "updates": updates, "write_s": write_s,
        "first_round": first, "last_round": last,
        "put_last_over_first": _ratio(last["put_us"], first["put_us"]),
        "row_last_over_first": _ratio(last["row_us"], first["row_us"]),
        "per_round": per_round,
        "settle_s": settle_s,
        "disk_bytes": disk, "fresh_bytes": fresh, "empty_bytes": empty, "live_bytes": live,
        "disk_over_fresh": _ratio(disk, fresh),
        "disk_over_live": _ratio(disk, live),
        "stored_over_live": _ratio(max(disk - empty, 0), max(fresh - empty, 1)),
        "segment_keys": segments,
        "rows_wrong": wrong, "index_checked": index_ok, "verify_index": verify,
    }


def _meets(s: dict[str, Any]) -> dict[str, bool]:
    return {k: bool(s[k] <= v) for k, v in TARGETS.items()}


def run(rows: int = 500, rounds: int = 120, single_updates: int = 10_000, seed: int = 0,
        workdir: str | None = None, progress: bool = True) -> dict[str, Any]:
    if rows < 1 or rounds < 1 or single_updates < 1:
        raise ValueError("rows, rounds and single_updates must be positive")
    note = (lambda m: print(m, file=__import__("sys").stderr)) if progress else (lambda _m: None)
    machine = _machine()
    top = tempfile.mkdtemp(prefix="hibase-bench-updates-", dir=workdir)
    try:
        many = _scenario(os.path.join(top, "many"), rows, rounds, None, seed, note)
        single_rounds = max(1, -(-single_updates // SINGLE_ROUND))
        size = min(SINGLE_ROUND, single_updates)
        one = _scenario(os.path.join(top, "one"), 1, single_rounds, size, seed, note,
                        single_updates)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return {
        "benchmark": "updates",
        "setup": (f"family f max_versions=1, one global index on f:ip; each update puts f:ip "
                  f"and f:port of a row; {rows} rows x {rounds} rounds, and one row x "
                  f"{single_updates} updates in rounds of {size}; medians of single calls; "
                  f"disk after waiting for background work, no compact_table"),
        "machine": machine,
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "many_rows": many, "one_row": one,
        "targets": TARGETS,
        "meets_targets": {"many_rows": _meets(many), "one_row": _meets(one)},
    }


def summary(r: dict) -> list[str]:
    lines = ["bench updates: put and row() in the first and last round, disk after writes stop"]
    for name in ("many_rows", "one_row"):
        s = r[name]
        lines.append(
            f"{name}: {s['rows']} rows x {s['updates'] // s['rows']} updates: put "
            f"{s['first_round']['put_us']} -> {s['last_round']['put_us']} µs "
            f"({s['put_last_over_first']}x), row() {s['first_round']['row_us']} -> "
            f"{s['last_round']['row_us']} µs ({s['row_last_over_first']}x), disk "
            f"{s['disk_bytes']:,} B vs {s['fresh_bytes']:,} B fresh ({s['disk_over_fresh']}x), "
            f"{s['segment_keys']} segment keys, rows wrong {s['rows_wrong']}")
        lines += [f"  target {k}: {'met' if v else 'MISSED'}"
                  for k, v in r["meets_targets"][name].items()]
    return lines
