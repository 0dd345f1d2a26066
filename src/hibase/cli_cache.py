"""Cache commands: `hibase cache-node` (the service beside each Redis cache node) and, when the
bench group exists, `hibase bench cache` (the paper's cache experiment). Added by register(cli),
which cli.py calls at import."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

import click

__all__ = ["register", "cache_node", "bench_cache"]


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


@click.command("cache-node")
@click.option("--redis", "redis_url", required=True, metavar="URL",
              help="The Redis node this service manages (redis://host:port[/db]).")
@click.option("--zk", required=True, metavar="HOST:PORT/PATH",
              help="ZooKeeper where the node registers (zk://host:port/path or host:port/path; "
                   "clients connect with cache='zk://host:port/path').")
@click.option("--policy", default="hotscore", show_default=True,
              type=click.Choice(["hotscore", "hotscore-per-record", "lru"]),
              help="Replacement policy run for this node.")
@click.option("--capacity", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Records (index entries) this node caches.")
@click.option("--alpha", type=click.FloatRange(0, 1), default=None,
              help="Hotscore's weight of the current period (default 0.5).")
@click.option("--count-period", type=click.IntRange(min=1), default=None,
              help="Hotscore's period, in visits to this node (default 1000).")
@click.option("--poll", type=click.FloatRange(min=0.001), default=0.05, show_default=True,
              help="Seconds between drains of the visit log when it is empty.")
@click.option("--session-timeout", type=click.FloatRange(min=1), default=4.0, show_default=True,
              help="ZooKeeper session timeout: how soon clients drop this node if it dies.")
def cache_node(redis_url: str, zk: str, policy: str, capacity: int, alpha: float | None,
               count_period: int | None, poll: float, session_timeout: float) -> None:
    """Run the cache-node service of one Redis node until interrupted.

    It empties the node of hibase's keys, registers an ephemeral znode under PATH/nodes (clients
    put the node on their consistent-hash ring; if this service dies the znode expires and they
    drop it), counts the visits clients report, and runs the policy's replacement for this node:
    evicting cold sets and letting clients store the hot ones. SIGTERM or Ctrl-C stops it.

    Example:

    \b
        redis-server --port 6379 --save "" &
        hibase cache-node --redis redis://127.0.0.1:6379 --zk 127.0.0.1:2181/hibase
        # clients: hibase.connect("data/", cache="zk://127.0.0.1:2181/hibase")
    """
    from .cache.node import CacheNodeService

    service = CacheNodeService(redis_url, zk, policy=policy, capacity=capacity, alpha=alpha,
                               count_period=count_period, poll=poll,
                               session_timeout=session_timeout)
    done = threading.Event()

    def stop(*_: Any) -> None:
        done.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    service.start()
    click.echo(f"cache node {service.url} registered at {zk} ({policy}, capacity "
               f"{capacity:,} records)", err=True)
    sys.stderr.flush()
    try:
        while not done.wait(0.5):
            pass
    finally:
        service.stop()
        click.echo(f"cache node {service.url} stopped", err=True)


def bench_cache_command(bench_options: Any, finish_bench: Any) -> click.Command:
    @click.command("cache")
    @click.option("--rows", type=click.IntRange(min=1), default=100_000, show_default=True,
                  help="Telecom rows in the table.")
    @click.option("--queries", type=click.IntRange(min=1), default=10_000, show_default=True,
                  help="Zipf-distributed queries (point and range).")
    @click.option("--zipf", type=click.FloatRange(min=0), default=0.99, show_default=True,
                  help="Zipf exponent of query popularity.")
    @click.option("--ratios", default="0.2,0.4,0.6,0.8", show_default=True,
                  help="Cache sizes as ratios of the records the workload touches.")
    @click.option("--backends", default="memory", show_default=True,
                  help="memory and/or redis, comma-separated (redis starts local servers).")
    @click.option("--redis-nodes", default="1,2,4", show_default=True,
                  help="Redis node counts to run with the redis backend.")
    @click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                  help="Seed of the data and the queries.")
    @bench_options
    def bench_cache(rows: int, queries: int, zipf: float, ratios: str, backends: str,
                    redis_nodes: str, seed: int, as_json: bool, output: str | None,
                    progress: bool) -> None:
        """The paper's cache experiment: hit ratio and latency of hotscore, LRU and
        hotscore-per-record against no cache and the offline optimum (Belady), at several
        cache ratios, with the in-process cache and with 1-4 local Redis nodes.

        Example:

        \b
            hibase bench cache --rows 100000 --queries 10000
            hibase bench cache --backends memory,redis --redis-nodes 1,2,4 --json -o cache.json
        """
        from .bench import cache as bench

        note = (lambda msg: click.echo(msg, err=True)) if progress else None
        report = bench.run(rows, queries, zipf, _floats(ratios),
                           [b.strip() for b in backends.split(",") if b.strip()],
                           _ints(redis_nodes), seed, progress=note)
        finish_bench(report, as_json, output, bench.summary)

    return bench_cache


bench_cache = None  # set by register() when the bench group exists


def register(cli_group: click.Group) -> None:
    """Add `cache-node` to the CLI, and `bench cache` to its bench group if there is one."""
    global bench_cache
    cli_group.add_command(cache_node)
    bench_group = cli_group.commands.get("bench")
    if isinstance(bench_group, click.Group):
        try:
            from .cli_bench import bench_options, finish_bench
        except ImportError:  # pragma: no cover - the bench group lives elsewhere
            return
        bench_cache = bench_cache_command(bench_options, finish_bench)
        bench_group.add_command(bench_cache)
