"""Issue 41's bench: what index upkeep inside HBase's region servers costs a load, beside
Apache Phoenix's on the same HBase and rows.

Rows: rowkey r%09d, f:a with `values` distinct values, f:b carried (97 values), f:c with 13
values, f:d unique. Indexes (the same three on every indexed table): by_a on f:a covering f:b
and by_c on f:c (global), by_d on f:d (local, per region); on the uncovered table the same
three made uncovered (issue 43: entries written once, by_a carrying nothing). Loads of
batches of 1,000 puts through `Table.batch`, timed in this process (the Thrift round trips
included), in this order: a warm-up load (not reported: JIT, region server caches), the plain
table, the strongly consistent indexed table, the eventually consistent one and the uncovered
one (when asked), the plain table again.
The ratios divide by the mean of the two plain loads, so a machine slowing down or speeding up
during the run shows as the two plain loads differing (reported). After the loads, every
index is verified against its table (verify_index: no problem may be found) and, for the
eventual indexes, the seconds from the load's end until they had caught up (index_lag 0).

Phoenix (a `hibase cluster` started with Phoenix): the same rows into a table without index
and one with the same three indexes (BY_A global INCLUDE (b), BY_C global, BY_D local),
upserts committed every 1,000 rows, timed inside its JVM; its ratio is its own indexed load
over its own plain one.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from tqdm import tqdm

import hibase
from hibase import errors
from hibase_bench.roundtrips import COLUMNS, rows_of
from hibase_bench.store import drop_tables

__all__ = ["run", "summary"]

BATCH = 1000


def _indexes(db: Any, name: str, kind: str) -> None:
    """The three indexes of a `kind` table: strong, eventual, or uncovered (by_a then carries
    no f:b)."""
    options: dict[str, dict[str, Any]] = {"eventual": {"consistency": "eventual"},
                                          "uncovered": {"uncovered": True}}
    extra = options.get(kind, {})
    db.create_index(name, "by_a", ["f:a"], covering=None if kind == "uncovered" else ["f:b"],
                    **extra)
    db.create_index(name, "by_c", ["f:c"], **extra)
    db.create_index(name, "by_d", ["f:d"], local=True, **extra)


def _load(db: Any, name: str, rows: int, values: int, progress: bool, label: str
          ) -> dict[str, Any]:
    """Load `rows` rows into table `name` in batches of BATCH; the seconds it took."""
    t = db.table(name)
    secs = 0.0
    with tqdm(total=rows, desc=label, unit="row", disable=not progress) as bar:
        for i in range(0, rows, 50_000):
            data = rows_of(min(50_000, rows - i), values, i)  # made outside the clock
            t0 = time.perf_counter()
            for j in range(0, len(data), BATCH):
                with t.batch() as b:
                    for row, cells in data[j:j + BATCH]:
                        b.put(row, cells)
            secs += time.perf_counter() - t0
            bar.update(len(data))
    return {"seconds": round(secs, 3), "rows_per_s": round(rows / secs)}


def _phoenix(url: str, rows: int, values: int, progress: bool) -> dict[str, Any]:
    """Phoenix's plain and indexed loads of the same rows, timed inside its JVM."""
    from hibase.cluster.phoenix import phoenix_for_backend

    px = phoenix_for_backend(url)
    if px is None:
        return {"ran": False, "reason": f"no running `hibase cluster` with Phoenix serves {url}"}
    base = f"WB_{os.getpid()}"
    with px:
        made = []
        try:
            for kind in ("WARM", "PLAIN", "IDX"):
                px.execute(f"CREATE TABLE {base}_{kind} (k VARCHAR PRIMARY KEY, a VARCHAR, "
                           f"b VARCHAR, c VARCHAR, d VARCHAR)")
                made.append(f"{base}_{kind}")
            px.execute(f"CREATE INDEX {base}_BY_A ON {base}_IDX (a) INCLUDE (b)")
            px.execute(f"CREATE INDEX {base}_BY_C ON {base}_IDX (c)")
            px.execute(f"CREATE LOCAL INDEX {base}_BY_D ON {base}_IDX (d)")
            load: dict[str, float] = {}
            for kind, n in (("WARM", min(rows, 100_000)), ("PLAIN", rows), ("IDX", rows)):
                sql = f"UPSERT INTO {base}_{kind} VALUES (?, ?, ?, ?, ?)"
                secs = 0.0
                for i in tqdm(range(0, n, 50_000), desc=f"Phoenix load {kind}",
                              disable=not progress):
                    chunk = [(r.decode(), c[b"f:a"].decode(), c[b"f:b"].decode(),
                              c[b"f:c"].decode(), c[b"f:d"].decode())
                             for r, c in rows_of(min(50_000, n - i), values, i)]
                    secs += px.upsert_many(sql, chunk, batch=BATCH)
                load[kind] = secs
            return {"ran": True, "how": px.describe(),
                    "indexes": "BY_A global INCLUDE (b), BY_C global, BY_D local",
                    "plain_s": round(load["PLAIN"], 3), "indexed_s": round(load["IDX"], 3),
                    "indexed_vs_plain": round(load["IDX"] / load["PLAIN"], 3),
                    "rows_per_s_plain": round(rows / load["PLAIN"]),
                    "rows_per_s_indexed": round(rows / load["IDX"])}
        finally:
            for table in made:
                px.execute(f"DROP TABLE IF EXISTS {table}")


def _caught_up(db: Any, name: str, timeout_s: float) -> float | None:
    """Seconds until the indexes of `name` report no lag (None: not within timeout_s). The
    eventual indexes of a table share one record per changed row, so one index's lag is
    every one's; asked once a second (each ask reads the pending records)."""
    index = db.indexes(name)[0]["name"]
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        if db.index_lag(name, index)["pending"] == 0:
            return round(time.perf_counter() - t0, 3)
        time.sleep(1.0)
    return None


def run(url: str, rows: int = 100_000, values: int = 10_000, eventual: bool = False,
        uncovered: bool = False, phoenix: bool = True, progress: bool = True
        ) -> dict[str, Any]:
    """The loads and checks on a thrift:// URL of a real HBase with hibase's coprocessor; a
    JSON-ready report (tables made here are dropped at the end)."""
    tag = f"wb_{os.getpid()}_{time.time_ns() // 1_000_000}"
    db = hibase.connect(url, cache_policy=None)
    made: list[str] = []
    report: dict[str, Any] = {"benchmark": "writes", "url": url, "rows": rows,
                              "values": values, "batch": BATCH, "cpu_count": os.cpu_count(),
                              "loadavg_before": list(os.getloadavg())}
    try:
        kinds = ["warm", "plain1", "strong"] + (["eventual"] if eventual else []) + \
            (["uncovered"] if uncovered else []) + ["plain2"]
        indexed = ("strong", "eventual", "uncovered")
        for kind in kinds:
            name = f"{tag}_{kind}"
            db.create_table(name, {"f": {}}, columns=COLUMNS)
            made.append(name)
            if kind in indexed:
                _indexes(db, name, kind)
                report.setdefault("upkeep", {})[kind] = sorted(
                    {"server" if s.server else "client" for s in db.indexer.specs(name)})
        loads: dict[str, Any] = {}
        for kind, name in zip(kinds, made):
            n = min(rows, 100_000) if kind == "warm" else rows
            loads[kind] = _load(db, name, n, values, progress, f"load {kind}")
            if kind == "eventual":
                loads[kind]["caught_up_s"] = _caught_up(db, name, 120.0)
        plain = statistics.mean([loads["plain1"]["seconds"], loads["plain2"]["seconds"]])
        report["loads"] = {k: v for k, v in loads.items() if k != "warm"}
        report["plain_drift"] = round(loads["plain2"]["seconds"] / loads["plain1"]["seconds"], 3)
        report["strong_vs_plain"] = round(loads["strong"]["seconds"] / plain, 3)
        for kind in ("eventual", "uncovered"):
            if kind in loads:
                report[f"{kind}_vs_plain"] = round(loads[kind]["seconds"] / plain, 3)
        if uncovered:
            report["uncovered_vs_strong"] = round(
                loads["uncovered"]["seconds"] / loads["strong"]["seconds"], 3)
        verify: dict[str, Any] = {}
        for kind, name in zip(kinds, made):
            for spec in db.indexes(name):
                v = db.verify_index(name, spec["name"])
                verify[f"{kind}.{spec['name']}"] = v["ok"]
                if not v["ok"]:
                    raise errors.HibaseError(f"verify of {kind}.{spec['name']} failed: {v}")
        report["verify"] = verify
        report["loadavg_after"] = list(os.getloadavg())
    finally:
        drop_tables(db, made)
        db.close()
    if phoenix:
        report["phoenix"] = _phoenix(url, rows, values, progress)
    return report


def summary(r: dict[str, Any]) -> list[str]:
    ld = r["loads"]
    lines = [f"writes on {r['url']}: {r['rows']:,} rows in batches of {r['batch']}, 3 indexes "
             f"(by_a covering, by_c, by_d local)",
             f"plain {ld['plain1']['rows_per_s']:,} then {ld['plain2']['rows_per_s']:,} rows/s; "
             f"strong {ld['strong']['rows_per_s']:,} rows/s = {r['strong_vs_plain']}x plain"]
    if "eventual" in ld:
        lines.append(f"eventual {ld['eventual']['rows_per_s']:,} rows/s = "
                     f"{r['eventual_vs_plain']}x plain, caught up "
                     f"{ld['eventual'].get('caught_up_s')} s after the load")
    if "uncovered" in ld:
        lines.append(f"uncovered {ld['uncovered']['rows_per_s']:,} rows/s = "
                     f"{r['uncovered_vs_plain']}x plain, {r['uncovered_vs_strong']}x the "
                     f"covered (strong) load")
    px = r.get("phoenix")
    if px and px.get("ran"):
        lines.append(f"Phoenix: plain {px['rows_per_s_plain']:,} rows/s, indexed "
                     f"{px['rows_per_s_indexed']:,} rows/s = {px['indexed_vs_plain']}x")
    elif px:
        lines.append(f"Phoenix: not run ({px['reason']})")
    return lines
