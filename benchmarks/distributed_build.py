"""The index build as a MapReduce job (--distributed) against the one-process build, on the same
table of a real HBase (issue 29, item 4).

    python benchmarks/distributed_build.py thrift://127.0.0.1:PORT --rows 200000 --regions 4 \
        -o benchmarks/distributed_build_200k.json

The table is written by plain happybase (as another program would) and split into --regions
regions; it is recorded with create_table(existing=True). For each upkeep (server: hibase's
coprocessor keeps the index and both builds send reindex requests it answers; client: the
builds compute the entries, the job with HibaseCodec in its map tasks) the index is built by
the one-process build (`hibase index build`, no --distributed) and by the job, --repeat times
each, alternating, after one untimed build (so each timed build first clears a full index),
and verified after each build. Reported: rows/s of each build (wall time of
build_index, the job's JVM start included), and for the job its own wall time and every map
task's rows and rows/s (the task's setup to cleanup).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import happybase

import hibase
from hibase.cluster.mapreduce import MapReduceJob


def _rows(n: int):
    for i in range(n):
        yield b"r%09d" % (i * 7919 % n), {b"d:city": b"c%04d" % (i % 5000),
                                         b"d:total": str(i * 0.5).encode(),
                                         b"d:note": b"x" * 40}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url", help="thrift://host:port of a `hibase cluster` (or HBase with "
                                "HBASE_CONF_DIR set) running hibase's coprocessor")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--regions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--map-slots", type=int, default=None)
    ap.add_argument("--upkeep", default="server,client",
                    help="which indexes to build: server (coprocessor-kept), client, or both")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    prefix = f"bench{os.getpid()}"
    sep = "&" if "?" in a.url else "?"
    base = f"{a.url}{sep}timeout=120000&prefix={prefix}"
    db = hibase.connect(base)
    host, port = db.store.opts["host"], db.store.opts["port"]
    conn = happybase.Connection(host, port, timeout=120_000)
    name = f"{prefix}_orders"
    conn.create_table(name, {"d": {"max_versions": 1}})
    t0 = time.perf_counter()
    t = conn.table(name)
    with t.batch(batch_size=2000) as b:
        for k, v in _rows(a.rows):
            b.put(k, v)
    load_s = time.perf_counter() - t0
    from hibase.cluster.hbase import cluster_for_port
    cluster = cluster_for_port(port)
    splits = [b"r%09d" % (a.rows * i // a.regions) for i in range(1, a.regions)]
    for s in splits:
        cluster.split(name, s)
        deadline = time.monotonic() + 300
        while s not in cluster.region_starts(name):
            if time.monotonic() > deadline:
                raise SystemExit(f"split at {s!r} did not land")
            time.sleep(0.5)
    regions = len(cluster.region_starts(name))
    db.create_table("orders", ["d"], columns={"d:city": "string", "d:total": "double"},
                    existing=True)
    out: dict = {"benchmark": "distributed_build", "rows": a.rows, "regions": regions,
                 "cpu_count": os.cpu_count(), "python": platform.python_version(),
                 "loadavg_start": os.getloadavg(), "load_s": round(load_s, 2),
                 "command": " ".join(["python", *sys.argv]), "upkeep": {}}
    for upkeep in a.upkeep.split(","):
        c = db if upkeep == "server" else hibase.connect(base + "&server_upkeep=0")
        iname = f"by_city_{upkeep}"
        c.create_index("orders", iname, ["d:city"], covering=["d:total"], build=False)
        assert c.indexer.catalog.get("orders", iname).server == (upkeep == "server")
        # untimed first build: every timed build then clears a full index first, as a
        # rebuild does (a build of an empty index skips that work)
        c.build_index("orders", iname)
        one, dist = [], []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            s = c.build_index("orders", iname)
            one.append(time.perf_counter() - t0)
            assert s["rows_indexed"] == a.rows, s
            assert c.verify_index("orders", iname)["ok"]
            t0 = time.perf_counter()
            s = c.build_index("orders", iname, job=MapReduceJob(map_slots=a.map_slots))
            dist.append((time.perf_counter() - t0, s["job"]))
            assert s["rows_indexed"] == a.rows, s
            assert c.verify_index("orders", iname)["ok"]
        best = min(dist, key=lambda d: d[0])
        job = best[1]
        out["upkeep"][upkeep] = {
            "one_process": {"seconds": [round(x, 2) for x in one],
                            "rows_per_s_best": round(a.rows / min(one)),
                            "rows_per_s_median": round(a.rows / statistics.median(one))},
            "mapreduce": {"seconds": [round(x, 2) for x, _ in dist],
                          "rows_per_s_best": round(a.rows / best[0]),
                          "rows_per_s_median": round(
                              a.rows / statistics.median(x for x, _ in dist)),
                          "job_seconds_best": round(job["seconds"], 2),
                          "job_rows_per_s_best": job["rows_per_s"],
                          "mode": job["mode"],
                          "tasks": [{"rows": t["rows"], "seconds": t["ms"] / 1000,
                                     "rows_per_s": t["rows_per_s"]} for t in job["tasks"]]},
        }
        if c is not db:
            c.close()
        print(upkeep, json.dumps(out["upkeep"][upkeep]), file=sys.stderr)
    out["loadavg_end"] = os.getloadavg()
    db.delete_table("orders", disable=True)
    conn.close()
    db.close()
    text = json.dumps(out, indent=1)
    if a.output:
        with open(a.output, "w") as fh:
            fh.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
