"""What routing costs for a local index the region server keeps (issue 37, item 7), on a
running `hibase cluster start DIR` (with the coprocessor):

- every region: a point lookup through a server-kept local index (no routing filters used,
  what hibase does), per query;
- rebuilt filters: what keeping the filters right would cost instead, since the coprocessor's
  writes never reach a client's filters: rebuilding them from the per-region counts
  (Router.rebuild) each time the coprocessor changed the table, plus a routed lookup;
- routed: a point lookup through the same data's client-kept local index (filters exact).

    python benchmarks/server_kept_routing.py DIR [--rows 20000] [--regions 8] [--values 2000]

Prints one JSON object (seconds are medians over the lookups)."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time

import happybase

import hibase
from hibase.cluster import HBaseCluster


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--regions", type=int, default=8)
    ap.add_argument("--values", type=int, default=2_000)
    ap.add_argument("--lookups", type=int, default=50)
    a = ap.parse_args()
    cluster = HBaseCluster(a.dir)
    prefix = f"skr{os.getpid()}"
    sep = "&" if "?" in cluster.thrift_url else "?"
    url = f"{cluster.thrift_url}{sep}timeout=60000&prefix={prefix}"
    server = hibase.connect(url)
    client = hibase.connect(url + "&server_upkeep=0")
    conn = happybase.Connection("127.0.0.1", cluster.thrift_port, timeout=60000)
    out: dict = {"rows": a.rows, "regions": a.regions, "values": a.values}
    try:
        rows = [b"r%07d" % i for i in range(a.rows)]
        for name, db in (("s", server), ("c", client)):
            db.create_table(name, {"f": {}}, columns={"f:a": "string"})
            with conn.table(f"{prefix}_{name}").batch(batch_size=2000) as b:
                for i, row in enumerate(rows):
                    b.put(row, {b"f:a": b"v%05d" % (i * a.values // a.rows)})  # one region each
            step = a.rows // a.regions
            for k in range(1, a.regions):
                cluster.split(f"{prefix}_{name}", rows[k * step])
            db.create_index(name, "la", ["f:a"], local=True)
        assert all(s.server for s in server.indexer.specs("s"))
        assert not any(s.server for s in client.indexer.specs("c"))
        rnd = random.Random(1)
        values = [b"v%05d" % rnd.randrange(a.values) for _ in range(a.lookups)]

        def lookups(db, table: str) -> float:
            t = db.table(table)
            times = []
            for v in values:
                t0 = time.perf_counter()
                got = list(t.where(f"f.a = '{v.decode()}'"))
                times.append(time.perf_counter() - t0)
                assert len(got) == a.rows // a.values
            return statistics.median(times)

        lookups(server, "s"), lookups(client, "c")  # warm both
        out["every_region_lookup_s"] = lookups(server, "s")
        out["routed_lookup_s"] = lookups(client, "c")
        out["explain_every_region"] = server.explain("SELECT * FROM s WHERE f.a = 'v00001'")
        out["explain_routed"] = client.explain("SELECT * FROM c WHERE f.a = 'v00001'")
        times = []
        table = server.indexer.specs("s")[0].table
        for _ in range(5):
            t0 = time.perf_counter()
            server.indexer.router.rebuild(table)
            times.append(time.perf_counter() - t0)
        out["filter_rebuild_s"] = statistics.median(times)
        out["rebuild_per_lookup_saved"] = round(
            out["filter_rebuild_s"] / max(1e-9, out["every_region_lookup_s"]
                                          - out["routed_lookup_s"]), 1)
    finally:
        for name, db in (("s", server), ("c", client)):
            try:
                db.delete_table(name, disable=True)
            except hibase.errors.HibaseError:
                pass
            db.close()
        conn.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
