"""`hibase demo` and the `hibase bench ...` group: each benchmark prints a short human summary,
or its whole JSON report with --json (and into a file with --output FILE).

A benchmark is a command on the `bench` group below, with the shared `bench_options`
(--json, --output FILE, --progress) and `finish_bench` to print its report; the benchmark itself
lives in hibase_bench.<name>, imported when the command runs (so `hibase --help` stays fast).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

import click

from ..extras import require

from .base import HibaseGroup

__all__ = ["bench", "bench_options", "finish_bench", "demo"]


# -- hibase demo -------------------------------------------------------------------------------

@click.command()
@click.option("--rows", type=click.IntRange(min=1), default=200_000, show_default=True,
              help="Telecom records to generate.")
@click.option("--dir", "dir_", type=click.Path(file_okay=False), metavar="DIR",
              help="Put the store in this folder and keep it (default: a temporary folder).")
@click.option("--keep", is_flag=True, help="Keep the temporary store and print its folder.")
@click.option("--backend", metavar="URL",
              help="Run on an HBase Thrift server instead (thrift://host:port, e.g. the one "
                   "`hibase cluster start` prints); the table stays there.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the generated data.")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="Runs of each indexed query (the median is shown).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Show a progress bar while loading.")
def demo(rows: int, dir_: str | None, keep: bool, backend: str | None, seed: int,
         repeats: int, progress: bool) -> None:
    """The HiBase paper's experiment in miniature: telecom records, 3 indexes, 4 queries.

    Generates telecom-style records (~200 bytes, 10 attributes: MDN, start and end time, IP,
    PORT, URL, ...; rowkey = MDN + reversed start time), loads them with the paper's global
    indexes on IP, IP+PORT and URL kept up to date on every put, then runs the paper's four
    query types (by MDN in a time window, by IP in a time window, by IP+PORT, by URL) and
    prints, per query, the rows returned and the time of each tier of the paper's hierarchy:
    a full table scan, the persistent index alone (cold), and the hot-index cache in memory
    (hot), with the speed-ups.

    Example:

    \b
        hibase demo
        hibase demo --rows 50000 --dir demo-store/
        hibase query demo-store/ "EXPLAIN SELECT * FROM telecom WHERE f.ip = '1.2.3.4'"
        hibase demo --rows 20000 --backend thrift://127.0.0.1:9090   # real HBase
    """
    from ..demo import run
    if backend is not None and dir_ is not None:
        raise click.UsageError("give --dir or --backend, not both")
    if backend is not None and not backend.startswith("thrift://"):
        raise click.BadParameter(f"expected thrift://host:port, got {backend!r}",
                                 param_hint="--backend")
    run(rows=rows, path=backend or dir_, keep=keep, seed=seed, repeats=repeats,
        progress=progress, echo=click.echo)


# -- hibase bench ------------------------------------------------------------------------------

@click.group(cls=HibaseGroup)
def bench() -> None:
    """Benchmarks: the store, row updates, the split counting Bloom filter, indexed queries,
    scans.

    Each prints a short summary, or the whole JSON report with --json; --output FILE also
    writes the JSON to FILE. They create their own temporary stores.

    Example:

    \b
        hibase bench query --rows 200000
        hibase bench store --rows 100000 --json --output store.json
    """


def bench_options(f: Callable) -> Callable:
    """--json, --output FILE and --progress/--no-progress, as `as_json`, `output`,
    `progress`."""
    f = click.option("--progress/--no-progress", default=True, show_default=True,
                     help="Show progress bars on stderr.")(f)
    f = click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True),
                     metavar="FILE", help="Also write the JSON report to FILE.")(f)
    f = click.option("--json", "as_json", is_flag=True,
                     help="Print the whole JSON report instead of the summary.")(f)
    return f


def finish_bench(report: dict, as_json: bool, output: str | None,
                 summary: Callable[[dict], list[str]]) -> None:
    """Print the summary (or the JSON report) and write the report to `output`."""
    text = json.dumps(report, indent=1, ensure_ascii=False, default=str)
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    if as_json:
        click.echo(text)
    else:
        for line in summary(report):
            click.echo(line)
        if output:
            click.echo(f"full report: {output}")




def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "-" if v is None else str(v)


def _table(head: list[str], lines: list[list[Any]]) -> list[str]:
    cells = [head] + [[_fmt(v) for v in line] for line in lines]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    out = []
    for j, r in enumerate(cells):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _targets(report: dict) -> list[str]:
    meets = report.get("meets_targets") or {}
    return [f"target {k}: {'met' if v else 'MISSED'}" for k, v in meets.items()]


def _store_summary(r: dict) -> list[str]:
    h, s, ratios = r.get("hibase", {}), r.get("sqlite", {}), r.get("ratios", {})
    metrics = [("load rows/s", "load_rows_per_s"), ("row() p50 µs", "row_p50_us"),
               ("row() p99 µs", "row_p99_us"), ("rows(1000) ms", "rows_1000_ms"),
               ("scan rows/s", "scan_rows_per_s"), ("bytes/row on disk", "bytes_per_row")]
    lines = [f"bench store: {r.get('rows', '?'):,} telecom rows, hibase vs SQLite"
             if isinstance(r.get("rows"), int) else "bench store"]
    lines += _table(["metric", "hibase", "sqlite", "hibase advantage"],
                    [[label, h.get(k), s.get(k), ratios.get(k)] for label, k in metrics])
    return lines + _targets(r)


def _scbf_summary(r: dict) -> list[str]:
    lines = [f"bench scbf: {r.get('probes', '?')} probes, {r.get('elapsed_s', '?')} s"]
    lines += [f"- {f}" for f in r.get("findings", [])]
    return lines


@bench.command("store")
@click.option("--rows", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Telecom rows loaded into each store.")
@click.option("--reads", type=click.IntRange(min=1), default=20_000, show_default=True,
              help="Timed random row() reads.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Put (and keep) the stores under DIR (default: a temporary folder).")
@click.option("--durability", "durability", is_flag=True,
              help="Measure instead what each durability level (process, fsync) costs "
                   "writers: single puts and batches, from 1 and 4 threads.")
@click.option("--puts", type=click.IntRange(min=4), default=4000, show_default=True,
              help="With --durability: single-row puts per case.")
@click.option("--batches", type=click.IntRange(min=4), default=400, show_default=True,
              help="With --durability: batches per case.")
@click.option("--batch-rows", type=click.IntRange(min=1), default=100, show_default=True,
              help="With --durability: rows per batch.")
@bench_options
def bench_store(rows: int, reads: int, seed: int, workdir: str | None, durability: bool,
                puts: int, batches: int, batch_rows: int, as_json: bool,
                output: str | None, progress: bool) -> None:
    """The embedded store against SQLite on the same telecom rows: bulk load, random row()
    reads, multi-gets, full scan, bytes on disk. With --durability: put throughput under
    each durability level instead.

    Example:

    \b
        hibase bench store --rows 100000
        hibase bench store --rows 1000000 --json --output store-1m.json
        hibase bench store --durability --output benchmarks/durability.json
    """
    from hibase_bench import store as mod
    if durability:
        report = mod.run_durability(puts=puts, batches=batches, batch_rows=batch_rows,
                                    workdir=workdir, seed=seed, progress=progress)
        report = {"command": f"hibase bench store --durability --puts {puts} --batches "
                             f"{batches} --batch-rows {batch_rows} --seed {seed}"
                             + (f" --output {output}" if output else ""), **report}
        finish_bench(report, as_json, output, _durability_summary)
        return
    report = mod.run(rows=rows, workdir=workdir, seed=seed, reads=reads, progress=progress)
    finish_bench(report, as_json, output, _store_summary)


def _durability_summary(r: dict) -> list[str]:
    lines = [f"durability: {r['puts']:,} single puts, {r['batches']:,} batches of "
             f"{r['batch_rows']} rows, per case (fresh store each)",
             f"{'case':<20}{'rows/s':>12}{'writes/s':>12}{'fsyncs':>9}{'writes/fsync':>14}"]
    for name, c in r["cases"].items():
        lines.append(f"{name:<20}{_fmt(c['rows_per_s']):>12}{_fmt(c['writes_per_s']):>12}"
                     f"{_fmt(c['fsyncs']):>9}{_fmt(c['writes_per_fsync']):>14}")
    cost = ", ".join(f"{k} {_fmt(v)}" for k, v in r["fsync_cost"].items() if k != "meaning")
    group = ", ".join(f"{k} {_fmt(v)}" for k, v in r["group_commit"].items() if k != "meaning")
    lines.append(f"fsync rows/s over process rows/s: {cost}")
    lines.append(f"fsync with 4 threads over 1 thread: {group}")
    return lines


@bench.command("updates")
@click.option("--rows", type=click.IntRange(min=1), default=500, show_default=True,
              help="Rows updated in rounds (every row once a round).")
@click.option("--rounds", type=click.IntRange(min=1), default=120, show_default=True,
              help="Update rounds over the rows.")
@click.option("--single-updates", type=click.IntRange(min=1), default=10_000,
              show_default=True, help="Updates of one row (the second scenario).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Put the temporary stores under DIR.")
@bench_options
def bench_updates(rows: int, rounds: int, single_updates: int, seed: int,
                  workdir: str | None, as_json: bool, output: str | None,
                  progress: bool) -> None:
    """A row's history: the same rows updated over and over (max_versions=1, one index).
    Median put and row() latency in the first and last round and their ratios, and bytes on
    disk after writes stop (after the store's background upkeep, no compact_table) against the
    same final rows written once into a fresh store; then the same for one row updated
    SINGLE_UPDATES times.

    Example:

    \b
        hibase bench updates
        hibase bench updates --json --output benchmarks/updates.json
    """
    from hibase_bench import updates as mod
    report = mod.run(rows=rows, rounds=rounds, single_updates=single_updates, seed=seed,
                     workdir=workdir, progress=progress)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("scbf")
@click.option("--probes", type=click.IntRange(min=1), default=1_000_000, show_default=True,
              help="Absent items probed against each filter to measure false positives.")
@click.option("--seed", type=click.IntRange(min=0), default=1, show_default=True)
@bench_options
def bench_scbf(probes: int, seed: int, as_json: bool, output: str | None,
               progress: bool) -> None:
    """The split counting Bloom filter against the paper's tables 1-4: parameters recomputed,
    false-positive rates measured, counter overflow computed exactly and simulated.

    Example:

    \b
        hibase bench scbf --probes 100000
        hibase bench scbf --json --output scbf.json
    """
    from hibase_bench import scbf as mod
    report = mod.run(probes=probes, seed=seed)
    finish_bench(report, as_json, output, _scbf_summary)


def _backend_option(ctx: click.Context, param: click.Parameter | None, value: str) -> str:
    from ..errors import InvalidArgument
    if value != "embedded":
        require("hbase", f"--backend {value}")
    try:
        from hibase_bench import query_remote
        return query_remote.check_backend(value)
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


@bench.command("query")
@click.option("--backend", default="embedded", show_default=True, callback=_backend_option,
              metavar="embedded|gateway|thrift://HOST:PORT",
              help="Where the queries run. embedded: the embedded store against SQLite. "
                   "gateway: the benchmark starts `hibase serve --thrift` on a temporary "
                   "folder in a subprocess and runs the queries through it, next to the "
                   "embedded store on the same rows. thrift://HOST:PORT[?options]: the same "
                   "against a running gateway or HBase Thrift1 server (its rows go into a new "
                   "table bench_<pid>_<ms>, dropped at the end).")
@click.option("--rows", type=click.IntRange(min=1), default=None,
              help="Telecom rows loaded [default: 1,000,000 embedded; "
                   "50,000 with gateway or thrift://, where loading is slower].")
@click.option("--repeats", type=click.IntRange(min=1), default=50, show_default=True,
              help="Timed runs of each indexed query (fewer for slow ones: ~2 s each at most).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Put (and keep) the stores under DIR (default: a temporary folder).")
@bench_options
def bench_query(backend: str, rows: int | None, repeats: int, seed: int, workdir: str | None,
                as_json: bool, output: str | None, progress: bool) -> None:
    """Indexed queries against a full scan and against SQLite with the same B-tree indexes:
    equality queries returning 0, ~10, ~1,000 and ~100,000 rows, a range, an AND of two
    indexed columns, an OR; index size against table size; load time with 3 indexes against
    none (the paper: 1.03-1.12).

    With --backend gateway or thrift://HOST:PORT the same queries run through hibase's HBase
    backend over Thrift1 and on the embedded store, on the same rows, so the network hop is
    measured: p50 of each query on both and their ratio, load rows/s on both, and the time of
    one bare round trip. The run fails (exit code 1) if the two return different rows.

    Example:

    \b
        hibase bench query --rows 200000
        hibase bench query --rows 1000000 --json --output query-1m.json
        hibase bench query --backend gateway --rows 50000
        hibase serve --thrift --port 9090 data/ &
        hibase bench query --backend thrift://127.0.0.1:9090 --json
    """
    if backend != "embedded":
        from hibase_bench import query_remote
        report = query_remote.run(backend, rows=rows or query_remote.DEFAULT_ROWS,
                                  repeats=repeats, seed=seed, progress=progress, workdir=workdir)
        finish_bench(report, as_json, output, query_remote.summary)
        return
    from hibase_bench import query
    report = query.run(rows=rows or 1_000_000, repeats=repeats, seed=seed, progress=progress,
                       workdir=workdir)
    finish_bench(report, as_json, output, query.summary)


# -- cache and local indexes ---------------------------------------------------------------

def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by commas, got {text!r}") from None


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected integers separated by commas, got {text!r}") from None


@bench.command("cache")
@click.option("--rows", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Telecom rows in the table.")
@click.option("--queries", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Zipf-distributed queries (point and range).")
@click.option("--zipf", type=click.FloatRange(min=0), default=0.99, show_default=True,
              help="Zipf exponent of query popularity.")
@click.option("--reshuffle-every", type=click.IntRange(min=0), default=0, show_default=True,
              metavar="N", help="Deal the popularity order of the queried values anew every N "
              "queries (a hot set that moves; 0: never).")
@click.option("--ratios", default="0.2,0.4,0.6,0.8", show_default=True,
              help="Cache sizes as ratios of the records the workload touches.")
@click.option("--backends", default="memory", show_default=True,
              help="memory and/or redis, comma-separated (redis starts local servers).")
@click.option("--redis-nodes", default="1,2,4", show_default=True,
              help="Redis node counts to run with the redis backend.")
@click.option("--backend", "store_backend", default="embedded", show_default=True,
              callback=_backend_option, metavar="embedded|gateway|thrift://HOST:PORT",
              help="The store. gateway or thrift://HOST:PORT: instead of the policy "
                   "experiment, hot against cold lookups through the HBase backend with each "
                   "cache of --backends (memory; redis: one local redis-server), Thrift calls "
                   "per query, load with 0 and 3 indexes, indexed lookup against full scan "
                   "(--rows rows, 10 per value; hibase_bench.roundtrips).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the data and the queries.")
@click.option("--phoenix", is_flag=True,
              help="With --backend thrift://... of a `hibase cluster` running Phoenix: "
                   "Phoenix's load (plain and with the same 3 indexes as global indexes) and "
                   "covered lookups on the same rows, beside hibase's.")
@click.option("--scenarios", type=click.Choice(["with", "only", "no"]), default="with",
              show_default=True, help="Also (or only) the scenario table: window-heat, LRU, "
              "hotscore, S3-FIFO and W-TinyLFU against Belady's MIN on trace families with "
              "randomized parameters (static Zipf 0.6-1.3, hot sets moving at three speeds, "
              "new arrivals, scans, loops, mixed sizes), medians over seeds.")
@click.option("--seeds", type=click.IntRange(min=1), default=5, show_default=True,
              help="Seeds (traces) per family in the scenario table, from --seed on.")
@click.option("--quick", is_flag=True,
              help="A small scenario table (2 seeds, 5,000 lookups over 1,000 sets, ratios "
                   "0.05-0.5; about 20 seconds) for tests and a first look.")
@click.option("--plots", type=click.Path(file_okay=False), metavar="DIR", default=None,
              help="Write a PNG per scenario (hit ratio by cache ratio) into DIR; needs "
                   "matplotlib: pip install 'hibase[bench]'.")
@bench_options
def bench_cache(rows: int, queries: int, zipf: float, reshuffle_every: int, ratios: str,
                backends: str,
                redis_nodes: str, store_backend: str, seed: int, phoenix: bool, scenarios: str,
                seeds: int, quick: bool, plots: str | None, as_json: bool, output: str | None,
                progress: bool) -> None:
    """The paper's cache experiment: hit ratio and latency of window-heat (the default),
    hotscore as published, LRU and hotscore-per-record against no cache and the offline
    optimum (Belady), at several cache ratios, with the in-process cache and with 1-4 local
    Redis nodes; then the scenario table (simulated on synthetic lookup traces, with S3-FIFO
    and W-TinyLFU as peers; hit ratios as shares of Belady's MIN, CPU per lookup).

    Example:

    \b
        hibase bench cache --rows 100000 --queries 10000
        hibase bench cache --scenarios only --plots benchmarks/plots -o cache_scenarios.json
        hibase bench cache --scenarios only --quick
        hibase bench cache --backends memory,redis --redis-nodes 1,2,4 --json -o cache.json
        hibase bench cache --rows 40000 --ratios 0.2 --reshuffle-every 2500 --scenarios no
        hibase bench cache --backend gateway --backends memory,redis --rows 20000
    """
    if store_backend != "embedded":
        from hibase_bench import roundtrips
        caches = tuple(b.strip() for b in backends.split(",") if b.strip())
        bad = [c for c in caches if c not in ("memory", "redis")]
        if bad:
            raise click.BadParameter(f"unknown cache backend(s) {bad}; use memory and/or redis",
                                     param_hint="--backends")
        report = roundtrips.run(store_backend, rows=rows, values=max(1, rows // 10),
                                caches=caches, progress=progress, phoenix=phoenix)
        finish_bench(report, as_json, output, roundtrips.summary)
        return
    from hibase_bench import cache as mod
    from hibase_bench import cache_scenarios

    if plots:
        cache_scenarios.check_plotting()  # before the long run, not after it
    note = (lambda msg: click.echo(msg, err=True)) if progress else None
    if scenarios == "only":
        report = cache_scenarios.run(seed=seed, seeds=seeds, quick=quick, progress=note)
        if plots:
            report["plots"] = cache_scenarios.plot(report, plots)
        finish_bench(report, as_json, output, lambda r: cache_scenarios.summary_lines(r) + [
            f"plot: {p}" for p in r.get("plots", [])])
        return
    report = mod.run(rows, queries, zipf, _floats(ratios),
                     [b.strip() for b in backends.split(",") if b.strip()],
                     _ints(redis_nodes), seed, progress=note,
                     scenarios=scenarios == "with", plots=plots,
                     scenario_options={"seeds": seeds, "quick": quick},
                     reshuffle_every=reshuffle_every)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("local")
@click.option("--rows", type=click.IntRange(min=1), default=200_000, show_default=True,
              help="Telecom rows loaded into each of the three tables.")
@click.option("--regions", type=click.IntRange(min=1), default=16, show_default=True,
              help="Regions of each table (pre-split at rowkey quantiles).")
@click.option("--queries", type=click.IntRange(min=1), default=20, show_default=True,
              help="Values queried per query type.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the generated data.")
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Put the temporary store under DIR.")
@click.option("--backend", default="embedded", show_default=True, metavar="embedded|URL",
              help="The embedded store, or the thrift:// URL of a running `hibase cluster` "
                   "(e.g. `--regionservers 3`): its regions are split and spread over the "
                   "region servers through HBase's Admin API.")
@bench_options
def bench_local(rows: int, regions: int, queries: int, seed: int, workdir: str | None,
                backend: str, as_json: bool, output: str | None, progress: bool) -> None:
    """Local (per-region) indexes against the global index: per query type the regions
    visited and the median latency of the global index, of the local index visiting every
    region (hindex), of the local index routed by each region's split counting Bloom filter,
    and routed as the paper does by one filter per region server; the region servers each
    visits and how many of them held no matching row; write throughput with a global and with
    a local index.

    Example:

    \b
        hibase bench local --rows 200000 --regions 16
        hibase bench local --rows 50000 --regions 8 --json --output local.json
        hibase cluster start .c3 --regionservers 3 --redis-nodes 0
        hibase bench local --backend 'thrift://127.0.0.1:PORT?thrift2_port=PORT2' --regions 12
    """
    from hibase_bench import local as mod

    if backend != "embedded" and not backend.startswith("thrift://"):
        raise click.BadParameter(f"expected embedded or thrift://host:port, got {backend!r}",
                                 param_hint="--backend")
    try:
        report = mod.run(rows=rows, regions=regions, queries=queries, seed=seed,
                         workdir=workdir, progress=progress, backend=backend)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    finish_bench(report, as_json, output, mod.summary)


@bench.command("scan")
@click.option("--rows", type=click.IntRange(min=1), default=1_000_000, show_default=True,
              help="Telecom rows loaded into each engine.")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="Timed runs of each query (the median is reported).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Put (and keep) the stores under DIR (default: a temporary folder).")
@bench_options
def bench_scan(rows: int, repeats: int, seed: int, workdir: str | None, as_json: bool,
               output: str | None, progress: bool) -> None:
    """Filtered full scans, big index results and IS NULL on an indexed column, against
    SQLite and DuckDB (when installed: pip install 'hibase[bench]') on the same rows.

    Scans report rows of the table per second (hibase with worker processes, in one process,
    and the generic scan it replaced); index results rows returned per second. Every engine
    must return the same rows (the report's all_same_rows).

    Example:

    \b
        hibase bench scan --rows 200000
        hibase bench scan --rows 1000000 --json --output benchmarks/scan_1m.json
    """
    from hibase_bench import scan as mod

    report = mod.run(rows=rows, repeats=repeats, seed=seed, progress=progress, workdir=workdir)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("unindexed")
@click.option("--rows", type=click.IntRange(min=1), default=300_000, show_default=True,
              help="Rows loaded into hibase and SQLite.")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="Timed runs of the warm path and SQLite (the median is reported).")
@click.option("--seed", type=click.IntRange(min=0), default=38, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Put (and keep) the stores under DIR (default: a temporary folder).")
@bench_options
def bench_unindexed(rows: int, repeats: int, seed: int, workdir: str | None, as_json: bool,
                    output: str | None, progress: bool) -> None:
    """Queries no index answers (issue 38): a filtered scan, MAX, SUM, GROUP BY, ORDER BY
    an unindexed column LIMIT 3 and a 3-table join (flights, airports, airlines), on
    hibase's lean path, on the columnar feed (cold: scanned
    afresh; warm: kept since the last write) and on SQLite, in one run.

    Example:

    \b
        hibase bench unindexed --rows 300000 -o benchmarks/unindexed_300k.json
    """
    from hibase_bench import unindexed as mod

    report = mod.run(rows=rows, repeats=repeats, seed=seed, workdir=workdir,
                     progress=progress)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("indexkinds")
@click.option("--rows", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Task rows written.")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="Timed runs of each query (the median is reported).")
@click.option("--lookups", type=click.IntRange(min=1), default=20, show_default=True,
              help="Owners looked up per indexed run.")
@click.option("--seed", type=click.IntRange(min=0), default=43, show_default=True)
@click.option("--url", metavar="URL", help="A store URL or folder (thrift://... for HBase); "
              "default: an embedded store in a temporary folder. Its table tasks is replaced.")
@bench_options
def bench_indexkinds(rows: int, repeats: int, lookups: int, seed: int, url: str | None,
                     as_json: bool, output: str | None, progress: bool) -> None:
    """Index kinds (issue 43): a lookup through a partial index (WHERE f.status = 'open')
    against the same query over a full scan, with each index's size.

    Example:

    \b
        hibase bench indexkinds --rows 100000 -o benchmarks/indexkinds.json
    """
    from hibase_bench import indexkinds as mod

    report = mod.run(rows=rows, repeats=repeats, lookups=lookups, seed=seed, url=url,
                     progress=progress)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("fulltext")
@click.option("--docs", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Generated documents loaded (10-40 words each).")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="Timed runs of the indexed lookup and of LIKE (the median is reported).")
@click.option("--seed", type=click.IntRange(min=0), default=43, show_default=True)
@click.option("--url", metavar="URL",
              help="Run on this hibase URL (e.g. a `hibase cluster`'s thrift://...) instead "
                   "of an embedded store.")
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Put (and keep) the embedded store under DIR (default: a temporary folder).")
@bench_options
def bench_fulltext(docs: int, repeats: int, seed: int, url: str | None, workdir: str | None,
                   as_json: bool, output: str | None, progress: bool) -> None:
    """Full-text search (issue 43): CONTAINS(f.body, 'word') through a text index against
    f.body LIKE '%word%' (a full scan), for a rare, a medium and a common word, two words
    and a prefix; the indexed answer must equal the unindexed CONTAINS scan's.

    Example:

    \b
        hibase bench fulltext --docs 100000 -o benchmarks/fulltext.json
    """
    from hibase_bench import fulltext as mod

    report = mod.run(docs=docs, repeats=repeats, seed=seed, url=url, workdir=workdir,
                     progress=progress)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("pushdown")
@click.argument("url")
@click.option("--rows", type=click.IntRange(min=1), default=200_000, show_default=True,
              help="Rows loaded into hibase and Phoenix.")
@click.option("--regions", type=click.IntRange(min=1), default=4, show_default=True,
              help="Regions each table is split into.")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="Timed runs per query (the median is reported).")
@click.option("--seed", type=click.IntRange(min=0), default=39, show_default=True)
@bench_options
def bench_pushdown(url: str, rows: int, regions: int, repeats: int, seed: int, as_json: bool,
                   output: str | None, progress: bool) -> None:
    """Queries no index answers on HBase (issue 39): pushed down into the region servers,
    read by this client, and on Phoenix beside, on the same rows of a `hibase cluster`.

    Example:

    \b
        hibase bench pushdown thrift://127.0.0.1:9090?thrift2_port=9091 -o pushdown.json
    """
    from hibase_bench import pushdown as mod

    report = mod.run(url, rows=rows, regions=regions, repeats=repeats, seed=seed,
                     progress=progress)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("salted")
@click.argument("url")
@click.option("--rows", type=click.IntRange(min=1), default=200_000, show_default=True,
              help="Time-ordered rows loaded into each table.")
@click.option("--buckets", type=click.IntRange(1, 256), default=8, show_default=True,
              help="Salt buckets of the salted table.")
@click.option("--writers", type=click.IntRange(min=1), default=4, show_default=True,
              help="Client threads loading each table (each its own connection).")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="Loads and scans of each table (the median is reported).")
@bench_options
def bench_salted(url: str, rows: int, buckets: int, writers: int, repeats: int,
                 as_json: bool, output: str | None, progress: bool) -> None:
    """Salted tables on HBase (issue 43): a time-ordered load (increasing timestamp
    rowkeys) into an unsalted and a salted table, then a full scan of each: rows/s and the
    regions that took the writes.

    Example:

    \b
        hibase bench salted thrift://127.0.0.1:9090?thrift2_port=9091 -o salted.json
    """
    from hibase_bench import salted as mod

    report = mod.run(url, rows=rows, buckets=buckets, writers=writers, repeats=repeats,
                     progress=progress)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("writes")
@click.argument("url")
@click.option("--rows", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Rows per load (each table gets the same rows).")
@click.option("--values", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Distinct values of the covered index's column f:a.")
@click.option("--eventual/--no-eventual", default=True, show_default=True,
              help="Also load a table whose indexes are eventually consistent.")
@click.option("--uncovered/--no-uncovered", default=True, show_default=True,
              help="Also load a table whose indexes are uncovered (entries written once).")
@click.option("--phoenix/--no-phoenix", default=True, show_default=True,
              help="Phoenix's plain and indexed loads beside (a cluster started with Phoenix).")
@bench_options
def bench_writes(url: str, rows: int, values: int, eventual: bool, uncovered: bool,
                 phoenix: bool, as_json: bool, output: str | None, progress: bool) -> None:
    """Index upkeep's cost to a load on HBase (issues 41, 43): plain, strong, eventual and
    uncovered indexes kept by hibase's coprocessor, Phoenix's global and local indexes beside.

    Example:

    \b
        hibase bench writes thrift://127.0.0.1:9090?thrift2_port=9091 --rows 1000000 -o w.json
    """
    from hibase_bench import writes as mod

    report = mod.run(url, rows=rows, values=values, eventual=eventual, uncovered=uncovered,
                     phoenix=phoenix, progress=progress)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("gateway")
@click.option("--idle", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Idle connections opened (and left open) during the second round.")
@click.option("--garbage", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Connections that send noise, 2 GB claimed strings or frames, then wait.")
@click.option("--calls", type=click.IntRange(min=1), default=400, show_default=True,
              help="happybase calls (put/row) timed in each round.")
@click.option("--client-timeout", type=click.FloatRange(min=0, min_open=True), default=5.0,
              show_default=True, metavar="SECONDS",
              help="A call failing or slower than this counts at this latency.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--server-src", type=click.Path(file_okay=False, exists=True), metavar="DIR",
              help="Run the gateway from this source checkout (e.g. an older one, to compare).")
@click.option("--server-option", "server_options", multiple=True, metavar="OPTION",
              help="Passed to `hibase serve` (repeat), e.g. --server-option=--workers=8.")
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Put the temporary store under DIR.")
@bench_options
def bench_gateway(idle: int, garbage: int, calls: int, client_timeout: float, seed: int,
                  server_src: str | None, server_options: tuple[str, ...],
                  workdir: str | None, as_json: bool, output: str | None,
                  progress: bool) -> None:
    """The Thrift gateway under hostile clients: a happybase client's latency alone and with
    IDLE idle plus GARBAGE garbage connections open, the gateway's RSS, how the garbage was
    answered, tracebacks in its log. The gateway runs as `hibase serve --thrift` in a child
    process.

    Example:

    \b
        hibase bench gateway
        hibase bench gateway --idle 200 --garbage 200 --json --output gateway.json
        hibase bench gateway --server-src ../old-checkout --output gateway-before.json
    """
    from hibase_bench import gateway as mod

    report = mod.run(idle=idle, garbage=garbage, calls=calls, timeout_s=client_timeout,
                     seed=seed, server_src=server_src, server_options=list(server_options),
                     workdir=workdir)
    finish_bench(report, as_json, output, mod.summary)


@bench.command("paper")
@click.option("--backend", default="embedded", show_default=True, metavar="embedded|URL",
              help="Where hibase runs: the embedded store, or an HBase Thrift1 URL "
                   "(thrift://host:port, e.g. the one `hibase cluster start` prints; then "
                   "Apache Phoenix runs beside it too). SQLite and DuckDB run locally either "
                   "way.")
@click.option("--scale", type=click.Choice(["smoke", "quick", "full"]), default="quick",
              show_default=True,
              help="quick: 10k, 100k and 1M rows (about 10 minutes on 2 cores); full: up to "
                   "10M rows (about an hour embedded; on HBase 1M rows and the largest of "
                   "2M-10M the budget allows, beside Phoenix); smoke: a few thousand rows "
                   "(seconds, for tests).")
@click.option("--out", required=True, type=click.Path(file_okay=False), metavar="DIR",
              help="Folder for results.json, report.md and the PNG plots.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Show progress on stderr.")
@click.option("--budget-minutes", type=click.FloatRange(min=1), default=None,
              help="With --backend thrift://: the whole run's time budget; the section at "
                   "scale (hibase beside Phoenix) runs its first size, then the largest "
                   "bigger one estimated to end within it (default: 120 for full, 60 quick, "
                   "30 smoke).")
def bench_paper(backend: str, scale: str, out: str, seed: int, progress: bool,
                budget_minutes: float | None) -> None:
    """The HiBase paper's evaluation in one command, beside SQLite, DuckDB and (on an HBase
    cluster) Apache Phoenix: query time of the four query types by size (full scan, cold
    index, hot index), hit ratio by cache size (hotscore, LRU, window-heat, Belady's MIN),
    import overhead with 0-3 indexes, index size, the SCBF tables and local vs global vs
    routed lookups. Every peer's answers are checked equal to hibase's before timing.

    Writes DIR/results.json (every figure, machine, versions, seeds, time per section),
    DIR/report.md (the paper's figures beside ours) and PNG plots.

    Example:

    \b
        hibase bench paper --out paper-report/
        hibase bench paper --scale full --out paper-full/
        hibase cluster start && hibase bench paper --backend thrift://127.0.0.1:9090 --out px/
    """
    # before minutes of work, not after: plots (matplotlib), and DuckDB is one of the peers
    require("bench", "hibase bench paper")
    if backend != "embedded":
        if not backend.startswith("thrift://"):
            raise click.BadParameter(f"expected embedded or thrift://host:port, got {backend!r}",
                                     param_hint="--backend")
        _backend_option(click.get_current_context(), None, backend)
    from hibase_bench import paper
    from hibase_bench.paper.report import headline

    note = (lambda m: click.echo(m, err=True)) if progress else (lambda _m: None)
    res = paper.run(out, backend=backend, scale=scale, seed=seed, progress=progress, note=note,
                    budget_s=None if budget_minutes is None else budget_minutes * 60)
    h = headline(res)
    click.echo(f"bench paper ({scale}, {res['backend']}): {res['elapsed_s']:,} s; answers of "
               f"every peer equal: {res['all_answers_checked_equal']}")
    click.echo(f"at {h['rows']:,} rows: cold/scan {h['cold'][0]:,.0f}-{h['cold'][1]:,.0f}x "
               f"(paper 65-3,082x), hot/scan {h['hot'][0]:,.0f}-{h['hot'][1]:,.0f}x (paper "
               f"343-17,751x), hot/cold {h['hot_over_cold'][0]:.1f}-{h['hot_over_cold'][1]:.1f}x"
               f", covered queries {h['hot_over_cold_covered'][0]:.1f}-"
               f"{h['hot_over_cold_covered'][1]:.1f}x (paper 5-15x)")
    click.echo(f"import with 3 indexes {h['import_3']:.2f}x (paper 1.03-1.12); hotscore - LRU "
               f"at 0.2: {h['hotscore_minus_lru_0.2']:+.3f} (paper +0.16)")
    click.echo(f"report: {os.path.join(out, 'report.md')}")
