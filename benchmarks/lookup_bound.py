"""The floor of a 10-row indexed lookup returning whole rows while RocksDB is read through
rocksdict from Python, beside hibase's own paths and SQLite's indexed query on the same rows
(issue 14: "equality returning <= 10 whole rows <= 2x SQLite").

    python benchmarks/lookup_bound.py [ROWS] > benchmarks/lookup_bound_200k.json

One process, the telecom table with an index on f:url (built after the load), a url value
with 10 rows; medians of 3,000 runs after 300 untimed ones, microseconds per query:
- bare: what any Python code over rocksdict must do at least: one iterator over the index's
  column family reading the value's entries, then one iterator seeking each row's segments
  and merging them (the store's merge_values): no parsing, planning, re-checking or typing;
- prepared: hibase's plan made once, executed (`query.execute`);
- sql: `db.sql("SELECT * FROM t WHERE f.url = ?", (url,))` (parse cached by statement text);
- sqlite: the same query on SQLite (WITHOUT ROWID, index on url), `fetchall()`.
bare / sqlite above 2 means no Python over rocksdict can meet the 2x target: it would take
a native core doing the lookup end to end (index range + row reads + merge).
- native (when benchmarks/native_scan is built: `cargo build --release` there): that core,
  `native_scan.Store(path).lookup(...)` on a read-only open of the same store, rows returned as
  the same (rowkey, {column: value}) pairs.

The same for a big result (issue 16: "rows fetched for large index results at >= 500,000
rows/s"): the most frequent url (~10% of the rows), medians of 5, rows per second of
- big_bare: the bare loop above over its entries (rows visited in key order, one iterator);
- big_where: `table.where("f.url = ...")` (lookup, fetch, re-check, projection);
- big_sqlite: SQLite's indexed `SELECT *`.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter

import hibase
from hibase.samples.telecom import COLUMNS, TELECOM_COLUMNS, telecom_rows
from hibase.index.spec import index_table
from hibase.query import engine
from hibase.query.ast import Select
from hibase.query.execute import execute
from hibase.store import cells as C

RUNS, WARM = 3000, 300


def _p50_us(fn) -> float:
    for _ in range(WARM):
        fn()
    times = []
    clock = time.perf_counter
    for _ in range(RUNS):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times) * 1e6


def _native_store(path: str):
    """native_scan.Store over `path` if benchmarks/native_scan was built, else None."""
    import importlib.util
    import shutil

    built = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native_scan", "target",
                         "release", "libnative_scan.so")
    if not os.path.exists(built):
        return None
    dest = os.path.join(tempfile.mkdtemp(), "native_scan.so")
    shutil.copy(built, dest)
    spec = importlib.util.spec_from_file_location("native_scan", dest)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.Store(path)


def _median_s(fn, runs: int = 5) -> float:
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(rows: int) -> dict:
    data = list(telecom_rows(rows, 0))
    urls = Counter(d[b"f:url"] for _, d in data)
    url = min(urls, key=lambda u: (abs(urls[u] - 10), u))
    with tempfile.TemporaryDirectory() as tmp:
        db = hibase.connect(os.path.join(tmp, "store"), cache_policy=None)
        db.create_table("t", {"f": {"max_versions": 1}}, columns=TELECOM_COLUMNS)
        with db.table("t").batch(batch_size=2000) as b:
            for key, d in data:
                b.put(key, d)
        db.create_index("t", "by_url", ["f:url"])
        db.store.flush()
        spec = db.indexer.catalog.get("t", "by_url")
        prefix = spec.prefix_key([url.decode()])
        index_view = db.store.rocksdb_views()[index_table("t")]
        (row_view,) = db.store.rocksdb_views(kv=False, table="t").values()
        merge, row_prefix = C.merge_values, C.row_prefix

        def bare(prefix: bytes = prefix) -> list:
            rowkeys = []
            for key, _ in index_view.items(from_key=prefix):
                if not key.startswith(prefix):
                    break
                rowkeys.append(key[len(prefix):])
            out = []
            it = row_view.iter()
            for row in rowkeys:
                p = row_prefix(row)
                it.seek(p)
                segs = []
                while it.valid() and it.key().startswith(p):
                    segs.append(it.value())
                    it.next()
                out.append((row, merge(segs, None)))
            return out

        cond = f"f.url = '{url.decode()}'"
        plan, conj = engine.prepare(Select("t", None, engine.parse_condition(cond), None),
                                    db.store, db.indexer)
        types = db.store.schema("t").columns
        stmt = "SELECT * FROM t WHERE f.url = ?"
        want = sorted(db.table("t").where(cond, full_scan=True))
        assert len(want) == urls[url]
        assert sorted(bare()) == want
        assert sorted(execute(plan, db.indexer, types, conj)) == want
        assert sorted(db.sql(stmt, (url.decode(),), raw=True)) == want

        con = sqlite3.connect(os.path.join(tmp, "sqlite.db"))
        cols = [c.split(b":", 1)[1].decode() for c in COLUMNS]
        ints = {c.split(b":", 1)[1].decode() for c in COLUMNS
                if TELECOM_COLUMNS[c.decode()] in ("int", "long")}
        decl = ", ".join(f"{c} INTEGER" if c in ints else f"{c} TEXT" for c in cols)
        con.execute(f"CREATE TABLE t (k BLOB PRIMARY KEY, {decl}) WITHOUT ROWID")
        conv = [int if c in ints else bytes.decode for c in cols]
        marks = ", ".join("?" * (len(cols) + 1))
        con.executemany(f"INSERT INTO t VALUES ({marks})",
                        [(k, *[f(d[c]) for f, c in zip(conv, COLUMNS)]) for k, d in data])
        con.execute("CREATE INDEX by_url ON t (url)")
        con.commit()
        sq = "SELECT * FROM t WHERE url = ?"
        assert len(con.execute(sq, (url.decode(),)).fetchall()) == len(want)

        native = _native_store(db.store.path)
        if native is not None:
            index_cf, data_cf = "k/" + index_table("t"), "t/t/f"  # their column families

            def native_lookup() -> list:
                return native.lookup(index_cf, prefix, data_cf)
            assert sorted(native_lookup()) == want
        del data  # a big live heap makes every full GC pass slow, for all four alike
        gc.collect()
        out = {
            "rows": rows, "result_rows": len(want),
            "p50_us": {
                "bare": _p50_us(bare),
                "prepared": _p50_us(lambda: list(execute(plan, db.indexer, types, conj))),
                "sql": _p50_us(lambda: db.sql(stmt, (url.decode(),), raw=True)),
                "sqlite": _p50_us(lambda: con.execute(sq, (url.decode(),)).fetchall()),
            },
        }
        if native is not None:
            out["p50_us"]["native"] = _p50_us(native_lookup)
        big = max(urls, key=lambda u: (urls[u], u))
        big_prefix = spec.prefix_key([big.decode()])
        big_cond = f"f.url = '{big.decode()}'"
        big_rows = sorted(db.table("t").where(big_cond))
        assert len(big_rows) == urls[big] and sorted(bare(big_prefix)) == big_rows
        assert len(con.execute(sq, (big.decode(),)).fetchall()) == urls[big]
        n = urls[big]
        out["big_result_rows"] = n
        out["big_rows_per_s"] = {
            "big_bare": n / _median_s(lambda: bare(big_prefix)),
            "big_where": n / _median_s(lambda: list(db.table("t").where(big_cond))),
            "big_sqlite": n / _median_s(lambda: con.execute(sq, (big.decode(),)).fetchall()),
        }
        con.close()
        db.close()
    p = out["p50_us"]
    out["ratios_vs_sqlite"] = {k: p[k] / p["sqlite"] for k in p if k != "sqlite"}
    out["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                      "loadavg": list(os.getloadavg())}
    return out


if __name__ == "__main__":
    json.dump(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000), sys.stdout, indent=2)
    print()
