"""`hibase cache-node`: the service beside each Redis cache node (its policy, its membership in
ZooKeeper). The cache benchmark is `hibase bench cache`, in bench.py."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

import click

from ..extras import require

__all__ = ["cache_node"]


@click.command("cache-node")
@click.option("--redis", "redis_url", required=True, metavar="URL",
              help="The Redis node this service manages (redis://host:port[/db]).")
@click.option("--zk", required=True, metavar="HOST:PORT/PATH",
              help="ZooKeeper where the node registers (zk://host:port/path or host:port/path; "
                   "clients connect with cache='zk://host:port/path').")
@click.option("--policy", default="window-heat", show_default=True,
              type=click.Choice(["window-heat", "hotscore", "hotscore-per-record", "lru"]),
              help="Policy run for this node: window-heat (decides every miss), hotscore "
                   "(the paper's, as published), ...")
@click.option("--capacity", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Records (index entries) this node caches.")
@click.option("--alpha", type=click.FloatRange(0, 1), default=None,
              help="Heat's weight of the current period (window-heat, hotscore; default 0.5).")
@click.option("--count-period", type=click.IntRange(min=1), default=None,
              help="Heat's period, in visits to this node (default 1000).")
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
    require("cache", "hibase cache-node")
    from ..cache.node import CacheNodeService

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
