"""Reopen cost at many regions (issue 15, item 6): a table pre-split into REGIONS regions with a
local index (so one routing filter per region), closed, then timed: connect, first put, first
indexed query; median of 3 reopens. Prints JSON (benchmarks/reopen_5000_regions*.json).

    python benchmarks/reopen_regions.py 5000
    PYTHONPATH=/old/checkout/src python benchmarks/reopen_regions.py 5000
"""
import json
import statistics
import sys
import tempfile
import time

import hibase

regions = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
per_region = 4
report = {"benchmark": "reopen_regions", "hibase": hibase.__file__, "regions": regions}
with tempfile.TemporaryDirectory() as tmp:
    path = tmp + "/s"
    db = hibase.connect(path, cache_policy=None)
    db.create_table("t", {"f": {}}, columns={"f:a": "int"}, split_size=1 << 30)
    t = db.table("t")
    t0 = time.perf_counter()
    with t.batch(batch_size=5000) as b:
        for i in range(regions * per_region):
            b.put(b"r%08d" % i, {b"f:a": b"%d" % (i % 997)})
    db.create_index("t", "by_a", ["f:a"], local=True)
    for r in range(1, regions):
        db.split("t", b"r%08d" % (r * per_region))
    report["setup_s"] = round(time.perf_counter() - t0, 1)
    report["regions_made"] = len(db.table("t").regions())
    db.close()
    runs = []
    for n in range(3):
        t0 = time.perf_counter()
        db = hibase.connect(path, cache_policy=None)
        t1 = time.perf_counter()
        db.table("t").put(b"r%08d" % 7, {b"f:a": b"%d" % (1000 + n)})
        t2 = time.perf_counter()
        got = sorted(k for k, _ in db.table("t").where(f"f.a = {1000 + n}"))
        t3 = time.perf_counter()
        db.close()
        runs.append({"connect_s": round(t1 - t0, 3), "first_put_s": round(t2 - t1, 3),
                     "reopen_plus_first_put_s": round(t2 - t0, 3),
                     "first_query_s": round(t3 - t2, 3), "query_rows_ok": got == [b"r%08d" % 7]})
        print(runs[-1], file=sys.stderr, flush=True)
    report["runs"] = runs
    report["median_reopen_plus_first_put_s"] = statistics.median(
        r["reopen_plus_first_put_s"] for r in runs)
    report["target_le_0_5_s"] = report["median_reopen_plus_first_put_s"] <= 0.5
print(json.dumps(report, indent=1))
