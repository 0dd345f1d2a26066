import time, statistics, hibase, os, functools
from hibase.store.embedded import reads
from hibase.query import prepare
from hibase import codec
db = hibase.connect("/work/exp40/store", cache_policy=None)
FOREVER = reads.FOREVER
shapes = []
def old():
    reads.FOREVER = -999
    prepare.fast_decoder = lambda t: functools.partial(codec.cell_decoder(t), t)
    for c, _ in prepare._SHAPES.values():
        for s in c.values(): s.decoders = None
def new():
    reads.FOREVER = FOREVER; prepare.fast_decoder = codec.fast_decoder
    for c, _ in prepare._SHAPES.values():
        for s in c.values(): s.decoders = None
qs = {"big": "SELECT * FROM lk WHERE f.b = 3", "isnull": "SELECT * FROM lk WHERE f.n IS NULL"}
old(); a = {k: db.sql(q) for k, q in qs.items()}; new(); b = {k: db.sql(q) for k, q in qs.items()}; assert a == b
res = {(k, n): [] for k in qs for n in ("old", "new")}
for _ in range(9):
    for name, sw in (("old", old), ("new", new)):
        sw()
        for k, q in qs.items():
            t0 = time.process_time(); db.sql(q); res[(k, name)].append(time.process_time() - t0)
print({f"{k}/{n}": (round(min(v) * 1e3, 1), round(statistics.median(v) * 1e3, 1)) for (k, n), v in res.items()}, os.getloadavg())
