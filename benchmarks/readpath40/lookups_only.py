"""Run only measure_lookups of hibase_bench.query; JSON to argv[1]."""
import json, os, sys, tempfile, time, shutil
from hibase_bench.query import measure_lookups
base = tempfile.mkdtemp(dir="/work/exp40")
t0 = time.time(); la0 = os.getloadavg()
try:
    out = measure_lookups(base, int(sys.argv[2]) if len(sys.argv) > 2 else 200000, 0, 50, False)
finally:
    shutil.rmtree(base, ignore_errors=True)
out["loadavg"] = [la0, os.getloadavg()]; out["wall_s"] = time.time() - t0
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(json.dumps(out["figures"], indent=1), out["loadavg"])
