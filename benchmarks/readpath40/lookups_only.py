"""Only the lookups section of `hibase bench query` (issue 40), its JSON to argv[1]; argv[2]:
rows (default 200,000). The stores go to a temporary folder (removed)."""
import json
import os
import shutil
import sys
import tempfile
import time

from hibase_bench.query import measure_lookups

base = tempfile.mkdtemp()
t0 = time.time()
la0 = os.getloadavg()
try:
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    out = measure_lookups(base, rows, 0, 50, False)
finally:
    shutil.rmtree(base, ignore_errors=True)
out["loadavg"] = [la0, os.getloadavg()]
out["wall_s"] = time.time() - t0
with open(sys.argv[1], "w") as fh:
    json.dump(out, fh, indent=1)
print(json.dumps(out["figures"], indent=1), out["loadavg"])
