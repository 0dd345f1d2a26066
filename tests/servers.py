"""Real servers for the cache tests: redis-server and a standalone ZooKeeper (Debian packages)
started on free loopback ports, killed and restarted by the tests.

In CI (env CI=true) a missing server binary FAILS the test; elsewhere the test is skipped.
scripts/test.sh installs both packages when they are missing.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NoReturn

import pytest

from hibase.cluster.local import RedisProcess, ServerMissing, ZooKeeperProcess
from hibase.coprocessor import ToolMissing

__all__ = ["start_redis", "start_zookeeper", "in_ci", "wait_until", "missing", "required",
           "coprocessor_cluster", "cluster_url", "HBASE_TIMEOUT_MS"]

HBASE_TIMEOUT_MS = 60_000  # real HBase: a table create or region move takes a while


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing(exc: Exception) -> NoReturn:
    """A server or tool the test needs is missing: a failure in CI, where scripts/test.sh
    installs it, else a skip."""
    if in_ci():
        pytest.fail(f"{exc} - CI must have it (scripts/test.sh installs it)")
    pytest.skip(str(exc))


@contextmanager
def required() -> Iterator[None]:
    """Around starting a server or resolving its tools: ServerMissing is `missing`."""
    try:
        yield
    except (ServerMissing, ToolMissing) as exc:
        missing(exc)


def coprocessor_cluster(request: Any) -> Any:
    """The session's real HBase (conftest's hbase_cluster), which must run hibase's index
    coprocessor (a failure in CI, else a skip)."""
    cluster = request.getfixturevalue("hbase_cluster")
    if not cluster.coprocessor:
        if in_ci():
            pytest.fail("CI's session HBase must run hibase's coprocessor")
        pytest.skip("the session's cluster runs without hibase's coprocessor")
    return cluster


def cluster_url(cluster: Any, prefix: str, **extra: Any) -> str:
    """A thrift:// URL of `cluster` whose tables carry `prefix` (tests sharing the session's
    HBase keep apart), with no catalog lease or region check to wait out, plus `extra`."""
    sep = "&" if "?" in cluster.thrift_url else "?"
    more = "".join(f"&{k}={v}" for k, v in extra.items())
    return (f"{cluster.thrift_url}{sep}timeout={HBASE_TIMEOUT_MS}&region_check_ms=0"
            f"&catalog_lease_ms=0&prefix={prefix}{more}")


def _start(factory: Callable[[], Any]) -> Any:
    with required():
        server = factory()
    return server.start()


def start_redis() -> RedisProcess:
    """A running redis-server on a free port; call .close() when done."""
    return _start(RedisProcess)


def start_zookeeper() -> ZooKeeperProcess:
    """A running standalone ZooKeeper on a free port; call .close() when done."""
    return _start(ZooKeeperProcess)


def wait_until(check: Callable[[], Any], timeout: float = 10.0, step: float = 0.05) -> Any:
    """Poll `check` until it returns something truthy; fail the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s")
        time.sleep(step)
