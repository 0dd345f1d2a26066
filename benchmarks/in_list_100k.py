"""100,000-value IN lists (issue 15, item 5) on a 300-row and a 100,000-row table, with no index,
a global index and a local index on the column; median of 3 runs of `table.where()` (the list shuffled each run, so no cache of a parsed
condition answers), each answer
checked against brute-force evaluation of the rows. Prints JSON (benchmarks/in_list_100k*.json).

    python benchmarks/in_list_100k.py [ROWS,ROWS [RUNS]]   # this checkout (300,100000; 3 runs)
    PYTHONPATH=/old/checkout/src python benchmarks/in_list_100k.py 300 1   # another one
"""
import json
import random
import statistics
import sys
import tempfile
import time

import hibase

VALUES = 100_000
SIZES = [int(x) for x in sys.argv[1].split(",")] if len(sys.argv) > 1 else [300, 100_000]
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
report = {"benchmark": "in_list_100k", "hibase": hibase.__file__, "values": VALUES, "cases": []}
rng = random.Random(7)
for rows in SIZES:
    for index in ("none", "global", "local"):
        with tempfile.TemporaryDirectory() as tmp:
            db = hibase.connect(tmp + "/s", cache_policy=None)
            db.create_table("t", {"f": {}}, columns={"f:a": "int"}, split_size=4 << 20)
            t = db.table("t")
            data = {}
            with t.batch(batch_size=5000) as b:
                for i in range(rows):
                    a = rng.randint(0, 4 * rows)
                    data[b"r%07d" % i] = a
                    b.put(b"r%07d" % i, {b"f:a": b"%d" % a})
            if index != "none":
                db.create_index("t", "by_a", ["f:a"], local=index == "local")
            values = rng.sample(range(0, 8 * rows + VALUES), VALUES)
            wanted = set(values)
            want = sorted(k for k, a in data.items() if a in wanted)
            times, ok = [], True
            for _ in range(RUNS):
                rng.shuffle(values)  # a new text each run: no parse cache helps
                cond = "f.a IN (" + ", ".join(map(str, values)) + ")"
                t0 = time.perf_counter()
                got = sorted(k for k, _ in t.where(cond))
                times.append(time.perf_counter() - t0)
                ok = ok and got == want
            report["cases"].append({"rows": rows, "index": index, "matches": len(want),
                                    "median_s": round(statistics.median(times), 3),
                                    "runs_s": [round(x, 3) for x in times],
                                    "same_rows_as_brute_force": ok})
            print(report["cases"][-1], file=sys.stderr, flush=True)
            db.close()
print(json.dumps(report, indent=1))
