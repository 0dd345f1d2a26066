"""How much a native decode/filter core could speed up hibase's filtered full scan while the
RocksDB iteration stays in Python (rocksdict), measured in one process on the same rows (issue 16).

    python benchmarks/scan_bound.py [ROWS] > benchmarks/scan_bound_200k.json

Times, medians of 3 after one untimed run, one process, over the whole telecom table:
- raw_iter: `for key, value in view.items(): pass` (the (key, segment) pairs reach Python);
- raw_iter_needle: the same plus the byte prefilter every filtered scan applies (`needle in value`);
- raw_iter_unpack: the same plus msgpack-decoding every segment (what a decode costs);
- scan: hibase's filtered scan, `where("f.port = 8080 AND f.cell_id = 12345")`, one process
  (query/scan.py, PROCESSES = 1), the issue's "two equalities on unindexed int columns".
scan / raw_iter is the most any native replacement of the decode + predicate can win while
the pairs still come through rocksdict's Python iterator: if it is below 5, the issue's
adoption bar (5x) can only be met by a core that reads RocksDB itself.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time

import msgpack

import hibase
from hibase.samples.telecom import TELECOM_COLUMNS, telecom_rows
from hibase.query import scan as scan_mod

CONDITION = "f.port = 8080 AND f.cell_id = 12345"


def _timed(fn) -> float:
    fn()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(rows: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db = hibase.connect(os.path.join(tmp, "store"), cache_policy=None)
        db.create_table("telecom", {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
        t = db.table("telecom")
        with t.batch(batch_size=2000) as b:
            for key, data in telecom_rows(rows, 0):
                b.put(key, data)
        (view,) = db.store.rocksdb_views(kv=False, table="telecom").values()
        needle = b"\xcd\x1f\x90"  # 8080 as msgpack would carry it; any short needle will do
        unpack = msgpack.unpackb

        def raw_iter():
            for _k, _v in view.items():
                pass

        def raw_iter_needle():
            for _k, v in view.items():
                if needle in v:
                    pass

        def raw_iter_unpack():
            for _k, v in view.items():
                unpack(v)

        saved = scan_mod.PROCESSES
        scan_mod.PROCESSES = 1
        try:
            got = list(t.where(CONDITION))
            want = list(t.where(CONDITION, full_scan=True))
            assert sorted(got) == sorted(want)
            out = {name: _timed(fn) for name, fn in (
                ("raw_iter", raw_iter), ("raw_iter_needle", raw_iter_needle),
                ("raw_iter_unpack", raw_iter_unpack),
                ("scan", lambda: list(t.where(CONDITION))))}
        finally:
            scan_mod.PROCESSES = saved
        db.close()
    res = {"rows": rows, "condition": CONDITION, "matching_rows": len(got),
           "seconds": {k: round(v, 4) for k, v in out.items()},
           "rows_per_s": {k: round(rows / v) for k, v in out.items()},
           "ns_per_row": {k: round(v / rows * 1e9) for k, v in out.items()},
           "max_native_speedup_keeping_python_iteration": round(out["scan"] / out["raw_iter"], 2),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "loadavg": [round(x, 2) for x in os.getloadavg()]}}
    return res


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000), indent=2))
