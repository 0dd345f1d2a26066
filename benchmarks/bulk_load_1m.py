"""Bulk load (index upkeep suspended, indexes rebuilt after) against a plain load, 1M telecom
rows, 3 indexes, one run; prints JSON (benchmarks/bulk_load_1m.json)."""
import json
import shutil
import tempfile
import time

import hibase
from hibase.samples.telecom import telecom_rows, TELECOM_COLUMNS
rows = list(telecom_rows(1_000_000))
IDX = (('by_ip', ['f:ip']), ('by_ip_port', ['f:ip', 'f:port']), ('by_url', ['f:url']))
def load(path, indexes, bulk):
    db = hibase.connect(path, cache_policy=None)
    db.create_table('telecom', {'f': {'max_versions': 1}}, columns=TELECOM_COLUMNS)
    for n, c in (IDX if indexes else ()):
        db.create_index('telecom', n, c)
    t = db.table('telecom')
    t0 = time.perf_counter()
    if bulk:
        with db.bulk_load('telecom'):
            with t.batch(batch_size=1000) as b:
                for k, d in rows: b.put(k, d)
    else:
        with t.batch(batch_size=1000) as b:
            for k, d in rows: b.put(k, d)
    s = time.perf_counter() - t0
    ok = all(db.verify_index('telecom', n)['ok'] for n, _ in (IDX if indexes else ()))
    db.close()
    return s, ok
base = tempfile.mkdtemp(prefix='hibase-bulk-')
try:
    plain, _ = load(base + '/plain', False, False)
    bulk, ok = load(base + '/bulk', True, True)
finally:
    shutil.rmtree(base, ignore_errors=True)
print(json.dumps({"rows": 1000000, "plain_load_s": round(plain, 2), "bulk_load_3_indexes_s": round(bulk, 2), "ratio": round(bulk / plain, 2), "indexes_verified": ok}))
