"""Figures for issue 15's items 5 and 6, before/after comparable: a 100,000-value IN list on a
300-row table (with and without an index on the column), region counts after rewriting live
rows and after one big batch, and loading a routing filter from bytes.

    python benchmarks/hardening_figures.py benchmarks/hardening.json
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time

import hibase
from hibase.index.scbf import ScalableSCBF


def in_lists(folder: str) -> dict:
    out = {}
    for indexed in (False, True):
        path = f"{folder}/in{int(indexed)}"
        with hibase.connect(path) as db:
            db.create_table("t", {"f": {}}, columns={"f:a": "int", "f:b": "string"})
            t = db.table("t")
            with t.batch() as b:
                for i in range(300):
                    b.put(b"r%03d" % i, {b"f:a": str(i * 7).encode(), b"f:b": b"v%d" % i})
            if indexed:
                db.create_index("t", "by_a", ["f:a"])
            sql = "SELECT * FROM t WHERE f.a IN (" + ", ".join(map(str, range(100_000))) + ")"
            times, rows = [], 0
            for rep in range(3):  # a trailing space each time: the parse cache does not help
                t0 = time.perf_counter()
                rows = len(db.sql(sql + " " * rep))
                times.append(time.perf_counter() - t0)
            out["indexed" if indexed else "unindexed"] = {
                "rows": rows, "median_s": statistics.median(times), "runs_s": times}
    return out


def regions(folder: str) -> dict:
    out = {}
    with hibase.connect(f"{folder}/live") as db:
        db.create_table("t", {"f": {"max_versions": 1}}, split_size=64 * 1024)
        t = db.table("t")
        counts = []
        for r in range(8):
            for i in range(3000):
                t.put(b"r%05d" % i, {b"f:a": b"x" * 40, b"f:n": b"%d" % r})
            counts.append(len(t.regions()))
        out["rewrites_3000_rows_x8_split_64k"] = counts
    for mode in ("batch", "one_by_one"):
        with hibase.connect(f"{folder}/{mode}") as db:
            db.create_table("t", {"f": {}}, split_size=128 * 1024)
            t = db.table("t")
            if mode == "batch":
                with t.batch() as b:
                    for i in range(20000):
                        b.put(b"r%05d" % i, {b"f:a": b"y" * 40})
            else:
                for i in range(20000):
                    t.put(b"r%05d" % i, {b"f:a": b"y" * 40})
            out[f"20000_rows_{mode}_split_128k"] = len(t.regions())
    return out


def filter_load() -> dict:
    s = ScalableSCBF(4096, 0.01)
    for i in range(20000):
        s.add(b"v%d" % i)
    blob = s.to_bytes()
    t0 = time.perf_counter()
    for _ in range(200):
        ScalableSCBF.from_bytes(blob)
    return {"filter_bytes": len(blob), "loads": 200, "seconds": time.perf_counter() - t0}


def main() -> None:
    folder = tempfile.mkdtemp(prefix="hibase-hardening-")
    try:
        report = {"in_list_100k_values_300_rows": in_lists(folder), "regions": regions(folder),
                  "routing_filter_from_bytes": filter_load()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
