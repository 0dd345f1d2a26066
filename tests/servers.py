"""Real servers for the cache tests: redis-server and a standalone ZooKeeper (Debian packages)
started on free loopback ports, killed and restarted by the tests.

In CI (env CI=true) a missing server binary FAILS the test; elsewhere the test is skipped.
scripts/test.sh installs both packages when they are missing.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import pytest

from hibase.cluster.local import RedisProcess, ServerMissing, ZooKeeperProcess

__all__ = ["start_redis", "start_zookeeper", "in_ci", "wait_until"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _start(factory: Callable[[], Any]) -> Any:
    try:
        server = factory()
    except ServerMissing as exc:
        if in_ci():
            pytest.fail(f"{exc} - CI must have it (scripts/test.sh installs it)")
        pytest.skip(str(exc))
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
