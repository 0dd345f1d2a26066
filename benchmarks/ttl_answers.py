"""What a TTL costs indexed answers (issue 37): the same 100,000 rows and indexes with no TTL
(covered lookups, value-table counts) and with a 1-day TTL (nothing expires in the run, but the
index only finds candidates: rows fetched and checked, counts not used, aggregates streamed).
Median milliseconds per query on the embedded store.

    python benchmarks/ttl_answers.py [-o benchmarks/ttl_answers_100k.json]
"""
import json
import statistics
import sys
import tempfile
import time

import hibase

N = 100_000
def make(ttl):
    db = hibase.connect(tempfile.mkdtemp())
    fam = {"time_to_live": ttl} if ttl else {}
    db.create_table("t", {"f": {**fam, "max_versions": 1}}, columns={"f:s": "string", "f:n": "int", "f:c": "string"})
    t = db.table("t")
    with t.batch(batch_size=5000) as b:
        for i in range(N):
            b.put(b"r%07d" % i, {b"f:s": b"v%03d" % (i % 500), b"f:n": b"%d" % i, b"f:c": b"c%d" % i})
    db.create_index("t", "by_s", ["f:s"], covering=["f:c"])
    db.create_index("t", "by_n", ["f:n"])
    return db
def timeit(db, q, reps=30):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); db.sql(q); ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1000
qs = ["SELECT f.c FROM t WHERE f.s = 'v007'",            # 200 rows, covered
      "SELECT ROWKEY FROM t WHERE f.n >= 1000 AND f.n < 3000",  # 2000-row range
      "SELECT COUNT(*) FROM t WHERE f.s = 'v007'",
      "SELECT COUNT(*) FROM t WHERE f.n >= 1000 AND f.n < 3000",
      "SELECT f.s, COUNT(*) FROM t GROUP BY f.s",
      "SELECT COUNT(*) FROM t"]
res = {}
for ttl in (None, 86400):
    db = make(ttl)
    for q in qs:
        res.setdefault(q, []).append(timeit(db, q, 30 if "GROUP" not in q and q != "SELECT COUNT(*) FROM t" else 3))
    db.close()
print(f"{'query':60s} {'no TTL ms':>10s} {'TTL ms':>10s}")
for q, (a, b) in res.items():
    print(f"{q:60s} {a:10.2f} {b:10.2f}")
if "-o" in sys.argv:
    with open(sys.argv[sys.argv.index("-o") + 1], "w") as f:
        json.dump({"rows": N, "median_ms": {q: {"no_ttl": round(a, 2), "ttl": round(b, 2)}
                                            for q, (a, b) in res.items()}}, f, indent=1)
