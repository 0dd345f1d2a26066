"""`hibase bench paper`: the HiBase paper's evaluation (SPEC §1, §3) in one run, hibase beside
SQLite, DuckDB and (on an HBase cluster) Apache Phoenix, writing results.json, report.md and
PNG plots into one folder.

Sections: queries (experiment 1, and 4: index sizes) per size; cache (2); imports (3); routing
(5: SCBF tables, local vs global vs routed); phoenix. Each section's wall and CPU seconds are
recorded; every peer's answer is checked equal to hibase's before its time counts.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
from typing import Any, Callable

from ..store import _machine

__all__ = ["run", "SCALES"]

SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"sizes": [1_000, 3_000], "remote_sizes": [1_000], "repeats": 3,
              "import_rows": 2_000, "cache_rows": 3_000, "cache_queries": 1_000,
              "probes": 2_000, "overflow_seeds": 1, "local_rows": 2_000, "regions": 4,
              "local_queries": 2, "scale_sizes": [1_000], "scale_bigger": [3_000],
              "budget_s": 1800},
    "quick": {"sizes": [10_000, 100_000, 1_000_000], "remote_sizes": [10_000, 50_000],
              "repeats": 5, "import_rows": 100_000, "cache_rows": 100_000,
              "cache_queries": 10_000, "probes": 100_000, "overflow_seeds": 1,
              "local_rows": 50_000, "regions": 8, "local_queries": 5,
              "scale_sizes": [100_000], "scale_bigger": [1_000_000, 300_000],
              "budget_s": 3600},
    # on HBase the sizes past 100,000 rows are the scale section's (hibase beside Phoenix)
    "full": {"sizes": [10_000, 100_000, 1_000_000, 10_000_000],
             "remote_sizes": [10_000, 100_000], "repeats": 9,
             "import_rows": 1_000_000, "remote_import_rows": 100_000,
             "cache_rows": 1_000_000, "cache_queries": 10_000,
             "probes": 1_000_000, "overflow_seeds": 3, "local_rows": 200_000, "regions": 16,
             "local_queries": 20, "scale_sizes": [1_000_000],
             "scale_bigger": [10_000_000, 5_000_000, 3_000_000, 2_000_000],
             "budget_s": 7200},
}


def _versions() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version
    out: dict[str, Any] = {}
    for pkg in ("hibase", "rocksdict", "duckdb", "matplotlib"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    out["sqlite"] = sqlite3.sqlite_version
    import platform
    out["python"] = platform.python_version()
    return out


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover
        pass
    return None


class _Sections:
    """Runs named sections, recording wall and CPU seconds (and the load average) of each."""

    def __init__(self, note: Callable[[str], Any], save: Callable[[], Any] = lambda: None
                 ) -> None:
        self.timing: dict[str, dict[str, Any]] = {}
        self.note = note
        self.save = save  # after every section: what is done so far survives a stopped run

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        self.note(f"[bench paper] {name} ...")
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn()
        finally:
            self.timing[name] = {"wall_s": round(time.perf_counter() - t0, 2),
                                 "cpu_s": round(time.process_time() - c0, 2),
                                 "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
            self.save()


def run(out: str, backend: str = "embedded", scale: str = "quick", seed: int = 0,
        progress: bool = True, plots: bool = True,
        note: Callable[[str], Any] = lambda _m: None,
        budget_s: float | None = None) -> dict[str, Any]:
    """Run every experiment; write out/results.json, out/report.md and the plots; return the
    results. On HBase the scale section (hibase beside Phoenix) runs last and takes the largest
    size estimated to end within `budget_s` (default: the scale's) of the start."""
    from . import cache_exp, imports, phoenix_peer, queries, routing, scale as at_scale
    from .engines import load_all
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}")
    cfg = SCALES[scale]
    remote = backend != "embedded"
    try:
        import duckdb
    except ImportError:
        duckdb = None  # type: ignore[assignment]
    os.makedirs(out, exist_ok=True)
    started = time.perf_counter()
    deadline = time.monotonic() + (cfg["budget_s"] if budget_s is None else budget_s)
    partial = os.path.join(out, "results.partial.json")

    def save(extra: dict[str, Any] | None = None) -> None:
        """results.partial.json: every section done so far (a long run stopped early keeps
        them); removed once results.json is written."""
        with open(partial, "w", encoding="utf-8") as fh:
            json.dump({**results, **(extra or {}), "sections": sec.timing}, fh, indent=1,
                      default=str)

    sec = _Sections(note, save)
    machine = _machine()
    machine["cpu_model"] = _cpu_model()
    results: dict[str, Any] = {
        "benchmark": "paper", "scale": scale, "backend": "embedded" if not remote else backend,
        "seeds": {"data": seed, "cache_workload": seed, "scbf": 1},
        "machine": machine, "versions": _versions(), "config": cfg,
        "peers": {"sqlite": True, "duckdb": duckdb is not None},
    }
    work = tempfile.mkdtemp(prefix="hibase-bench-paper-")
    try:
        sizes = cfg["remote_sizes"] if remote else cfg["sizes"]
        per_size = []
        answers: dict[int, list] = {}
        for n in sizes:
            def one(n: int = n) -> dict[str, Any]:
                loc = backend if remote else os.path.join(work, f"hibase-{n}")
                table = f"paper{os.getpid()}_{n}" if remote else "telecom"
                ld = load_all(work, loc, table, n, seed, progress, duckdb)
                try:
                    return queries.run_size(ld, cfg["repeats"], remote)
                finally:
                    if ld.duck is not None:
                        ld.duck.close()
                    if remote:
                        with ld.hibase() as db:
                            db.delete_table(table, disable=True)
                    else:
                        shutil.rmtree(loc, ignore_errors=True)
            per_size.append(sec.run(f"queries {n:,} rows", one))
            answers[n] = per_size[-1].pop("_answers")
        results["queries"] = per_size
        results["imports"] = sec.run("imports", lambda: imports.run(
            work, backend if remote else os.path.join(work, "hibase-import"),
            cfg.get("remote_import_rows", cfg["import_rows"]) if remote else cfg["import_rows"],
            seed, remote))
        results["cache"] = sec.run("cache", lambda: cache_exp.run(
            work, cfg["cache_rows"], cfg["cache_queries"], seed))
        results["routing"] = sec.run("routing", lambda: routing.run(
            work, cfg["probes"], cfg["overflow_seeds"], cfg["local_rows"], cfg["regions"],
            cfg["local_queries"], seed))
        # Phoenix gets the smallest size, its answers checked against hibase's at that size
        results["phoenix"] = sec.run("phoenix", lambda: phoenix_peer.run(
            backend, sizes[0], seed, cfg["repeats"], answers[sizes[0]]))
        if remote:
            results["at_scale"] = sec.run("scale", lambda: at_scale.run(
                backend, cfg["scale_sizes"], cfg["scale_bigger"], seed, cfg["repeats"],
                deadline, progress, note, lambda done: save({"at_scale": done})))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["sections"] = sec.timing
    results["all_answers_checked_equal"] = all(
        q["all_same"] for s in results["queries"] for q in s["queries"]) and all(
        q["same_rows"] for q in results["phoenix"].get("queries", [])
        + results["phoenix"].get("queries_local", [])) and all(
        at_scale.all_same(s) for s in results.get("at_scale", {}).get("sizes", []))
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    results["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    from . import report
    if plots:
        results["plots"] = report.plots(results, out)
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1, default=str)
        fh.write("\n")
    report.write(results, out)
    if os.path.exists(partial):
        os.remove(partial)
    return results
