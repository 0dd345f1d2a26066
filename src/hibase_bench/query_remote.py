"""The query benchmark over HBase's Thrift1 protocol (issue 6, item 6): `hibase bench query
--backend gateway | thrift://host:port` runs ``hibase_bench.query``'s queries through hibase's
HBase backend and, in the same run, on the embedded store, so the cost of the network hop is
measured next to the embedded figures.

Backends:

* ``gateway``: the benchmark starts ``hibase serve --thrift --port 0 --thrift2-port 0 <temporary
  folder>`` as a subprocess (a separate process, so the hop is real and no GIL is shared),
  reads the URL it prints (with its Thrift2 port), and stops it with SIGTERM at the end, also on
  errors and Ctrl-C.
* ``thrift://host:port[?options]``: an already running gateway or HBase Thrift1 server. The
  rows go into a new table ``bench_<pid>_<ms>`` (with its index tables), dropped at the end; no
  other table is touched (hibase's catalog ``hibase_meta`` is created if missing, as by any
  hibase client).

Both sides get the same generated rows (``query.generate``), the same three indexes kept on
every put during the load (``query.load_table``), the start-time index built after it, and the
same queries (``query.queries``), with no hot-index cache (``cache_policy=None``). Per query:
``list(table.where(condition))`` and the prepared plan executed (``query.prepared``), p50 over
up to ``repeats`` runs (``query.timed``), embedded and remote interleaved query by query, and
thrift/embedded ratios of the medians. Before any timing every query runs once on both sides:
if their rows differ, ``BenchmarkMismatch`` is raised and nothing is reported. The hop alone:
``table.row()`` of a missing key on each side, and ``getTableNames`` on a plain happybase
connection (one Thrift round trip, no hibase code on the client).
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from typing import Any

from tqdm import tqdm

from hibase import errors
from hibase_bench import query as Q
from hibase_bench.gateway_proc import Gateway, check_backend
from hibase.store.hbase import KV_PREFIX, parse_url

__all__ = ["run", "summary", "check_backend", "Gateway", "BenchmarkMismatch", "DEFAULT_ROWS"]

DEFAULT_ROWS = 50_000  # loading through Thrift is slow: ~2,000 rows/s with 3 indexes here
ROUND_TRIP_BUDGET_S = 1.0
MISSING_ROW = b"~no such row"


class BenchmarkMismatch(errors.HibaseError):
    """The embedded and the remote backend returned different rows for a query."""


# -- pieces -------------------------------------------------------------------------------------

def _raw_tables(url: str) -> list[str]:
    """Every HBase table name, read on a plain happybase connection."""
    conn = _raw_connection(url)
    try:
        return [n.decode() for n in conn.tables()]
    finally:
        conn.close()


def _raw_connection(url: str) -> Any:
    import happybase

    o = parse_url(url)
    return happybase.Connection(host=o["host"], port=o["port"], timeout=o["timeout"],
                                transport=o["transport"], protocol=o["protocol"])


def _drop(remote: Any, url: str, name: str, out: dict[str, Any]) -> None:
    """Drop the benchmark's table (and with it its index tables) if it exists; record whether
    anything named after it is left in HBase. Never raises (it runs while unwinding)."""
    try:
        if name.encode() in remote.tables():
            remote.delete_table(name, disable=True)
        left = [t for t in _raw_tables(url)
                if t == name or t.startswith(KV_PREFIX) and t.endswith("__" + name)]
        out.update(table_dropped=not left, leftover_tables=left)
    except Exception as exc:  # reported, not raised: the run's own error matters more
        out.update(table_dropped=False, drop_error=f"{type(exc).__name__}: {exc}")


def _round_trips(local: Any, remote: Any, url: str, name: str, repeats: int
                 ) -> dict[str, Any]:
    """The hop alone: row() of a missing key on each side; getTableNames over plain Thrift."""
    n = max(20, min(repeats * 20, 2000))
    lt, rt = local.table(Q.TABLE), remote.table(name)
    emb, _ = Q.timed(lambda: lt.row(MISSING_ROW), n, ROUND_TRIP_BUDGET_S)
    thr, _ = Q.timed(lambda: rt.row(MISSING_ROW), n, ROUND_TRIP_BUDGET_S)
    conn = _raw_connection(url)
    try:
        names, _ = Q.timed(conn.tables, n, ROUND_TRIP_BUDGET_S)
    finally:
        conn.close()
    return {"embedded_row_missing": emb, "thrift_row_missing": thr,
            "thrift_row_missing_vs_embedded_p50_ratio": thr["p50_us"] / emb["p50_us"],
            "raw_get_table_names": names}


def _key(item: tuple) -> bytes:
    return item[0]


def _check_rows(local: Any, remote: Any, name: str, queries: list[dict], progress: bool
                ) -> dict[str, dict[str, int]]:
    """Run every query once on both sides (end-to-end and prepared); the row counts, or
    BenchmarkMismatch naming each query whose rows differ."""
    lt, rt = local.table(Q.TABLE), remote.table(name)
    counts: dict[str, dict[str, int]] = {}
    bad = []
    for q in tqdm(queries, desc="check rows", file=sys.stderr, disable=not progress,
                  leave=False):
        cond = q["condition"]
        got = {"embedded": list(lt.where(cond)), "thrift": list(rt.where(cond)),
               "embedded_prepared": Q.prepared(local, Q.TABLE, cond)(),
               "thrift_prepared": Q.prepared(remote, name, cond)()}
        counts[q["name"]] = {k: len(v) for k, v in got.items()}
        want = sorted(got["embedded"], key=_key)
        differ = [k for k, v in got.items() if sorted(v, key=_key) != want]
        if differ:
            bad.append(f"{q['name']} ({cond}): rows " + ", ".join(
                f"{k} {len(v):,}" for k, v in got.items()) + f"; differing: {', '.join(differ)}")
    if bad:
        raise BenchmarkMismatch(
            "the backends disagree, so no times are reported: " + " | ".join(bad))
    return counts


def _measure(local: Any, remote: Any, name: str, queries: list[dict],
             counts: dict[str, dict[str, int]], repeats: int, progress: bool) -> list[dict]:
    """Per query, embedded then remote: end-to-end and prepared p50s and their ratios."""
    lt, rt = local.table(Q.TABLE), remote.table(name)
    out = []
    for q in tqdm(queries, desc="queries", file=sys.stderr, disable=not progress, leave=False):
        cond = q["condition"]
        r: dict[str, Any] = {k: q[k] for k in ("name", "kind", "target_rows", "condition")}
        r["rows"] = counts[q["name"]]["embedded"]
        r["rows_by_backend"] = counts[q["name"]]
        r["plan"] = lt.explain(cond)
        plan_thrift = rt.explain(cond)
        r["same_plan"] = plan_thrift.replace(name, Q.TABLE, 1) == r["plan"]
        if not r["same_plan"]:
            r["plan_thrift"] = plan_thrift
        r["embedded"], _ = Q.timed(lambda: list(lt.where(cond)), repeats)
        r["thrift"], _ = Q.timed(lambda: list(rt.where(cond)), repeats)
        r["embedded_prepared"], _ = Q.timed(Q.prepared(local, Q.TABLE, cond), repeats)
        r["thrift_prepared"], _ = Q.timed(Q.prepared(remote, name, cond), repeats)
        r["thrift_vs_embedded_p50_ratio"] = r["thrift"]["p50_us"] / r["embedded"]["p50_us"]
        r["prepared_thrift_vs_embedded_p50_ratio"] = (r["thrift_prepared"]["p50_us"]
                                                      / r["embedded_prepared"]["p50_us"])
        out.append(r)
    return out


# -- run ----------------------------------------------------------------------------------------

def run(backend: str, rows: int = DEFAULT_ROWS, repeats: int = 50, seed: int = 0,
        progress: bool = True, workdir: str | None = None) -> dict[str, Any]:
    """Run the query benchmark on `backend` ("gateway" or a thrift:// URL) and on the embedded
    store; a JSON-ready report (see the module docstring). `workdir`: where the embedded store
    and the gateway's folder go (kept); default a temporary folder, removed at the end."""
    if check_backend(backend) == "embedded":
        raise errors.InvalidArgument("query_remote.run() needs 'gateway' or a thrift:// URL; "
                                     "the embedded benchmark is hibase_bench.query.run()")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise errors.InvalidArgument("rows must be a positive int")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise errors.InvalidArgument("repeats must be a positive int")
    started = time.perf_counter()
    loadavg = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    if workdir is not None:
        os.makedirs(workdir, exist_ok=True)
    base = tempfile.mkdtemp(prefix="hibase-bench-query-thrift-", dir=workdir)
    name = f"bench_{os.getpid()}_{time.time_ns() // 1_000_000}"
    dropped: dict[str, Any] = {}
    gateway = None
    try:
        with ExitStack() as stack:
            url = backend
            if backend == "gateway":
                gateway = stack.enter_context(Gateway(os.path.join(base, "gateway-store")))
                url = gateway.url
            remote, cache = Q.connect_bench(url)  # an unreachable server fails here, before work
            stack.callback(remote.close)
            if name.encode() in remote.tables():
                raise errors.TableExists(f"table {name!r} already exists on {url}; run again")
            stack.callback(_drop, remote, url, name, dropped)
            local, _ = Q.connect_bench(os.path.join(base, "embedded"))
            stack.callback(local.close)

            chunks, stats = Q.generate(rows, seed, progress)
            queries = Q.make_queries(rows, stats)
            load_e = Q.load_table(local, Q.TABLE, chunks, True, progress,
                                   "embedded load +3 indexes")
            load_t = Q.load_table(remote, name, chunks, True, progress,
                                   "thrift load +3 indexes")
            del chunks
            build_e = Q.build_range_index(local, Q.TABLE, progress,
                                           "embedded build " + Q.RANGE_INDEX[0])
            build_t = Q.build_range_index(remote, name, progress,
                                           "thrift build " + Q.RANGE_INDEX[0])
            counts = _check_rows(local, remote, name, queries, progress)
            trips = _round_trips(local, remote, url, name, repeats)
            results = _measure(local, remote, name, queries, counts, repeats, progress)
            # hot against cold lookups with the in-process cache, calls per query, load with
            # 0 and 3 indexes (hibase_bench.roundtrips), on the same server: as many rows as
            # the queries' table, up to roundtrips' own default of 20,000 (10 rows a value)
            from . import roundtrips
            n = min(rows, 20_000)
            hot_cold = roundtrips.measure(url, rows=n, values=max(1, n // 10),
                                          lookups=min(200, max(1, n // 10)),
                                          caches=("memory",), progress=progress)
    finally:
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)

    ratios = [r["thrift_vs_embedded_p50_ratio"] for r in results]
    by_name = {r["name"]: r for r in results}
    report = {
        "benchmark": "query_thrift",
        "rows": rows, "seed": seed, "repeats": repeats,
        "backend": {
            "kind": backend if backend == "gateway" else "thrift",
            "url": url,
            "gateway": None if gateway is None else {
                "command": "hibase serve --thrift --host 127.0.0.1 --port 0 --thrift2-port 0 DIR "
                           "(subprocess)",
                "exit_code": gateway.returncode,
                "stopped_cleanly": gateway.returncode == 0},
            "table": name, **dropped,
        },
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "loadavg": loadavg,
                    "loadavg_end": list(os.getloadavg()) if hasattr(os, "getloadavg")
                    else None},
        "dataset": {"generator": "hibase.samples.telecom.telecom_rows",
                    "avg_row_bytes": stats["raw"] / rows},
        "setup": {
            "cache": cache,
            "indexes": {n: c for n, c in Q.INDEXES + (Q.RANGE_INDEX,)},
            "load": f"table.batch(batch_size={Q.BATCH_CELLS}) with the first 3 indexes kept "
                    "on every put; the start-time index built after the load",
            "timing": f"p50 over up to {repeats} runs after one warm-up run (at least "
                      f"{Q.MIN_REPEATS}; fewer once {Q.TIME_BUDGET_S} s are spent), embedded "
                      "and thrift interleaved per query; µs unless named _s; ratios are "
                      "thrift p50 / embedded p50",
            "check": "every query ran once on both backends (end-to-end and prepared) before "
                     "timing and returned the same rows",
        },
        "roundtrips": hot_cold,
        "load": {
            "embedded": load_e, "thrift": load_t,
            "thrift_vs_embedded_rows_per_s_ratio": load_t["rows_per_s"] / load_e["rows_per_s"],
            "embedded_build_start_time_index_s": build_e,
            "thrift_build_start_time_index_s": build_t,
        },
        "round_trip": trips,
        "queries": results,
        "figures": {
            "same_rows_all_queries": True,
            "median_query_thrift_vs_embedded_p50_ratio": statistics.median(ratios),
            "eq_10_embedded_p50_us": by_name["eq_10"]["embedded"]["p50_us"],
            "eq_10_thrift_p50_us": by_name["eq_10"]["thrift"]["p50_us"],
            "round_trip_get_table_names_p50_us": trips["raw_get_table_names"]["p50_us"],
            "load_embedded_rows_per_s": load_e["rows_per_s"],
            "load_thrift_rows_per_s": load_t["rows_per_s"],
        },
        "elapsed_s": time.perf_counter() - started,
    }
    return Q.round_floats(report)


def summary(r: dict[str, Any]) -> list[str]:
    """A short human summary of a report."""
    def us(v: float) -> str:
        return f"{v / 1e6:.2f} s" if v >= 1e6 else f"{v / 1e3:.2f} ms" if v >= 1e3 \
            else f"{v:.0f} µs"

    b = r["backend"]
    where = ("a `hibase serve --thrift` subprocess" if b["kind"] == "gateway"
             else "an external Thrift1 server")
    head = ["query", "rows", "embedded", "thrift", "thrift/emb", "prepared emb",
            "prepared thrift", "thrift/emb"]
    lines = [[q["name"], f"{q['rows']:,}", us(q["embedded"]["p50_us"]),
              us(q["thrift"]["p50_us"]), f"{q['thrift_vs_embedded_p50_ratio']:.2f}x",
              us(q["embedded_prepared"]["p50_us"]), us(q["thrift_prepared"]["p50_us"]),
              f"{q['prepared_thrift_vs_embedded_p50_ratio']:.2f}x"] for q in r["queries"]]
    widths = [max(len(x[i]) for x in [head] + lines) for i in range(len(head))]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    from .roundtrips import summary as rt_summary

    ld, rt = r["load"], r["round_trip"]
    out = [f"bench query over {b['url']} ({where}) against embedded: {r['rows']:,} telecom "
           f"rows, p50 times (cache: {r['setup']['cache']})",
           fmt(head), fmt(["-" * w for w in widths])] + [fmt(x) for x in lines]
    out.append(f"every query returned the same rows on both backends; median thrift/embedded "
               f"{r['figures']['median_query_thrift_vs_embedded_p50_ratio']:.2f}x")
    out.append(f"load with 3 indexes: embedded {ld['embedded']['rows_per_s']:,.0f} rows/s, "
               f"thrift {ld['thrift']['rows_per_s']:,.0f} rows/s "
               f"({ld['thrift_vs_embedded_rows_per_s_ratio']:.3g}x); start-time index built in "
               f"{ld['embedded_build_start_time_index_s']:.2f} s / "
               f"{ld['thrift_build_start_time_index_s']:.2f} s")
    out.append(f"one round trip: row() of a missing key embedded "
               f"{us(rt['embedded_row_missing']['p50_us'])}, thrift "
               f"{us(rt['thrift_row_missing']['p50_us'])}; getTableNames on plain happybase "
               f"{us(rt['raw_get_table_names']['p50_us'])}")
    if b.get("table_dropped"):
        out.append(f"table {b['table']} dropped")
    else:
        out.append(f"WARNING: table {b['table']} was not fully dropped: "
                   f"{b.get('drop_error') or b.get('leftover_tables')}")
    if b.get("gateway") and not b["gateway"]["stopped_cleanly"]:
        out.append(f"WARNING: the gateway exited with code {b['gateway']['exit_code']}")
    if "roundtrips" in r:
        out += rt_summary({"backend": b["kind"], **r["roundtrips"]})
    return out
