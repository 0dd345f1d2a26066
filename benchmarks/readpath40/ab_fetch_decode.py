"""The old and new row fetch + result decode of issue 40's big indexed result and IS NULL,
alternated in one process (process_time, min and median of 9): the old fetch by making
read_latest_many skip its one-family path, the old decoders by functools.partial.
argv[1]: a store holding the 200k lookup_rows with the 3 indexes and by_n (as
hibase_bench.query.measure_lookups builds it)."""
import functools
import os
import statistics
import sys
import time

import hibase
from hibase import codec
from hibase.query import prepare
from hibase.store.embedded import reads

db = hibase.connect(sys.argv[1], cache_policy=None)
FOREVER = reads.FOREVER


def _reset() -> None:
    for cache, _ in prepare._SHAPES.values():
        for shape in cache.values():
            shape.decoders = None


def old() -> None:
    reads.FOREVER = -999  # no family's TTL equals it: the general loop runs
    prepare.fast_decoder = lambda t: functools.partial(codec.cell_decoder(t), t)
    _reset()


def new() -> None:
    reads.FOREVER = FOREVER
    prepare.fast_decoder = codec.fast_decoder
    _reset()


qs = {"big": "SELECT * FROM lk WHERE f.b = 3", "isnull": "SELECT * FROM lk WHERE f.n IS NULL"}
old()
a = {k: db.sql(q) for k, q in qs.items()}
new()
assert a == {k: db.sql(q) for k, q in qs.items()}
res: dict = {(k, n): [] for k in qs for n in ("old", "new")}
for _ in range(9):
    for name, switch in (("old", old), ("new", new)):
        switch()
        for k, q in qs.items():
            t0 = time.process_time()
            db.sql(q)
            res[(k, name)].append(time.process_time() - t0)
print({f"{k}/{n}": (round(min(v) * 1e3, 1), round(statistics.median(v) * 1e3, 1))
       for (k, n), v in res.items()}, os.getloadavg())
