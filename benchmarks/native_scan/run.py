"""The filtered full scan in native code against hibase's best pure-Python scan, on the same
embedded store, in one process and one run (issue 16's adoption rule: adopt a native core only
if it wins by >= 5x).

    cd benchmarks/native_scan && cargo build --release && cd ../..
    python benchmarks/native_scan/run.py [ROWS] > benchmarks/native_scan/result_<rows>.json

The native side (src/lib.rs, a PyO3 module) opens the store read-only with RocksDB 8.10 (the
`rocksdb` crate), iterates the table family's column family itself, decodes the msgpack
segments, evaluates the condition and hands back the matching rows' rowkey, f:mdn and f:url.
The Python side is `table.where(condition, columns=[f:mdn, f:url])` in one process
(query/scan.py's PROCESSES = 1: rocksdict's iterator, byte needles, compiled conjunct) and with
its worker processes (the default). Both answers are checked equal before timing; medians of
3 after one untimed run, wall clock and CPU seconds of this process (the native scan runs in
it with the GIL released; worker processes' CPU is not in this process's count).
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import hibase
from hibase.samples.telecom import TELECOM_COLUMNS, telecom_rows
from hibase.query import scan as scan_mod

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = [
    ("f.port = 8080 AND f.cell_id = 12345",
     [[(b"f:port", "int=", 8080), (b"f:cell_id", "int=", 12345)]]),
    ("f.port = 8080 AND f.bytes_up > 500000",
     [[(b"f:port", "int=", 8080), (b"f:bytes_up", "int>", 500000)]]),
    ("f.cell_id < 10200 AND f.bytes_up > 500000",
     [[(b"f:cell_id", "int<", 10200), (b"f:bytes_up", "int>", 500000)]]),
    ("f.mdn LIKE '1301%' OR f.port = 5222",
     [[(b"f:mdn", "prefix", b"1301")], [(b"f:port", "int=", 5222)]]),
]
PROJECTION = [b"f:mdn", b"f:url"]


def _native():
    """The compiled module from cargo's target folder (copied under its import name)."""
    built = glob.glob(os.path.join(HERE, "target", "release", "libnative_scan.so"))
    if not built:
        sys.exit("build it first: cd benchmarks/native_scan && cargo build --release")
    dest = os.path.join(tempfile.mkdtemp(), "native_scan.so")
    shutil.copy(built[0], dest)
    spec = importlib.util.spec_from_file_location("native_scan", dest)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _timed(fn) -> tuple[float, float]:
    fn()
    walls, cpus = [], []
    for _ in range(3):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main(rows: int) -> dict:
    native = _native()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "store")
        db = hibase.connect(path, cache_policy=None)
        db.create_table("telecom", {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
        with db.table("telecom").batch(batch_size=2000) as b:
            for key, data in telecom_rows(rows, 0):
                b.put(key, data)
        db.store.flush()
        db.close()
        db = hibase.connect(path, cache_policy=None)
        t = db.table("telecom")
        (cf,) = [n for n in db.store.rocksdb_views(kv=False, table="telecom")]
        cf_name = "t/" + cf  # the store's column family of table family "telecom/f"
        out = []
        for cond, dnf in QUERIES:
            def run_native():
                return native.scan(path, cf_name, dnf, PROJECTION)

            visited, got = run_native()
            native_rows = sorted((k, dict(zip(PROJECTION, vs))) for k, vs in got)
            py_rows = sorted((k, {c: v for c, v in d.items()})
                             for k, d in t.where(cond, columns=PROJECTION))
            full = sorted(t.where(cond, columns=PROJECTION, full_scan=True))
            if not (visited == rows and native_rows == py_rows == full):
                raise SystemExit(f"answers differ for {cond}: native {len(native_rows)} rows "
                                 f"(visited {visited}), python {len(py_rows)}, full {len(full)}")
            saved = scan_mod.PROCESSES
            scan_mod.PROCESSES = 1
            try:
                one = _timed(lambda: list(t.where(cond, columns=PROJECTION)))
            finally:
                scan_mod.PROCESSES = saved
            workers = _timed(lambda: list(t.where(cond, columns=PROJECTION)))
            nat = _timed(run_native)
            out.append({
                "condition": cond, "rows": len(native_rows),
                "rows_per_s": {"native": rows / nat[0], "python_one_process": rows / one[0],
                               "python_workers": rows / workers[0]},
                "rows_per_cpu_s": {"native": rows / nat[1], "python_one_process": rows / one[1]},
                "native_over_one_process": one[0] / nat[0],
                "native_over_workers": workers[0] / nat[0],
            })
        # a big index result's row fetch: every row of the most frequent url (~10% of the
        # table), rowkeys in key order as an index gives them; hibase's store read against the
        # native seek-per-row read of the same rows (no index lookup on either side)
        urls: dict = {}
        for _, d in t.scan(columns=[b"f:url"]):
            urls[d[b"f:url"]] = urls.get(d[b"f:url"], 0) + 1
        url = max(urls, key=lambda u: (urls[u], u))
        keys = [k for k, _ in t.where(f"f.url = '{url.decode()}'", columns=[b"f:url"])]
        mine = db.store.read_latest_many("telecom", keys, None, with_ts=False)
        theirs = native.fetch(path, cf_name, keys)
        if [(k, d) for k, d in zip(keys, mine)] != [(k, d) for k, d in theirs]:
            raise SystemExit("fetched rows differ")
        py_fetch = _timed(lambda: db.store.read_latest_many("telecom", keys, None,
                                                            with_ts=False))
        nat_fetch = _timed(lambda: native.fetch(path, cf_name, keys))
        fetch = {"rows": len(keys),
                 "rows_per_s": {"native": len(keys) / nat_fetch[0],
                                "python_store_read": len(keys) / py_fetch[0]},
                 "native_over_python": py_fetch[0] / nat_fetch[0]}
        db.close()
    return {"rows": rows, "queries": out, "fetch": fetch,
            "min_native_over_one_process": min(q["native_over_one_process"] for q in out),
            "min_native_over_workers": min(q["native_over_workers"] for q in out),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "loadavg": [round(x, 2) for x in os.getloadavg()]}}


if __name__ == "__main__":
    r = main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
    print(json.dumps(r, indent=2))
    for q in r["queries"]:
        rs = q["rows_per_s"]
        print(f"{q['condition']:<45} {q['rows']:>7,} rows  native {rs['native']:>12,.0f}/s  "
              f"python {rs['python_one_process']:>10,.0f}/s (1 proc) "
              f"{rs['python_workers']:>10,.0f}/s (workers)  "
              f"x{q['native_over_one_process']:.1f} / x{q['native_over_workers']:.1f}",
              file=sys.stderr)
    f = r["fetch"]
    print(f"fetch {f['rows']:,} rows: native {f['rows_per_s']['native']:,.0f}/s, hibase's store "
          f"read {f['rows_per_s']['python_store_read']:,.0f}/s (x{f['native_over_python']:.1f})",
          file=sys.stderr)
