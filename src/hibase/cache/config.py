"""The cache options of ``hibase.connect`` in one place: defaults, checks, construction.

    hibase.connect(path)                                   # cache="memory", policy window-heat
    hibase.connect(path, cache="redis://127.0.0.1:6379,redis://127.0.0.1:6380")
    hibase.connect(path, cache="zk://127.0.0.1:2181/hibase")   # nodes found in ZooKeeper
    hibase.connect(path, cache_policy="lru", cache_capacity=50_000)
    hibase.connect(path, cache_policy="hotscore")          # the paper's policy, as published
    hibase.connect(path, cache_policy=None)                # no cache

With ``zk://`` the cache-node services (``hibase cache-node``) run the policy with their own
capacity, alpha and period, so those options belong on the service, not here.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..extras import require
from .backend import MemoryBackend
from .layer import HotCache
from .policies import POLICY_NAMES, make_policy

__all__ = ["open_cache", "DEFAULT_CACHE", "DEFAULT_POLICY", "DEFAULT_CAPACITY",
           "DEFAULT_ALPHA", "DEFAULT_COUNT_PERIOD"]

DEFAULT_CACHE = "memory"
DEFAULT_POLICY = "window-heat"
DEFAULT_CAPACITY = 100_000  # records (index entries), summed over the cached sets
DEFAULT_ALPHA = 0.5
DEFAULT_COUNT_PERIOD = 1000  # queries per heat period
HEAT = ("window-heat", "hotscore", "hotscore-per-record")  # take alpha and count_period


def _policy_name(policy: Any) -> str | None:
    if policy is None:
        return None
    if not isinstance(policy, str):
        raise InvalidArgument(f"cache_policy must be a str or None, not {policy!r}")
    name = policy.strip().lower().replace("_", "-")
    if name not in POLICY_NAMES:
        raise InvalidArgument(
            f"unknown cache_policy {policy!r}; choose one of {', '.join(POLICY_NAMES)} or None")
    return None if name == "none" else name


def policy_options(name: str, capacity: Any, alpha: Any, count_period: Any) -> tuple[int, dict]:
    """Checked (capacity, constructor options) for policy `name`."""
    if capacity is None:
        capacity = DEFAULT_CAPACITY
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise InvalidArgument(f"cache_capacity must be an int >= 1 (records), got {capacity!r}")
    options: dict[str, Any] = {}
    if name in HEAT:
        if alpha is not None:
            if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) \
                    or not 0 <= alpha <= 1:
                raise InvalidArgument(f"hotscore_alpha must be a number in [0, 1], got {alpha!r}")
            options["alpha"] = float(alpha)
        if count_period is not None:
            if isinstance(count_period, bool) or not isinstance(count_period, int) \
                    or count_period < 1:
                raise InvalidArgument(
                    f"count_period must be an int >= 1 (queries), got {count_period!r}")
            options["count_period"] = count_period
    elif alpha is not None or count_period is not None:
        raise InvalidArgument(
            f"hotscore_alpha and count_period apply to the heat policies {HEAT}, not {name!r}")
    return capacity, options


def open_cache(cache: Any = DEFAULT_CACHE, cache_policy: Any = DEFAULT_POLICY,
               cache_capacity: Any = None, hotscore_alpha: Any = None,
               count_period: Any = None) -> HotCache | None:
    """Check the cache options and build the cache (None: no cache). Raises InvalidArgument
    for bad options and BackendUnavailable when the Redis nodes or ZooKeeper cannot be reached."""
    name = _policy_name(cache_policy)
    if cache is None or (isinstance(cache, str) and cache.strip().lower() == "none"):
        name = None
    elif not isinstance(cache, str) or not cache.strip():
        raise InvalidArgument(
            f"cache must be 'memory', 'redis://host:port[,...]' or 'zk://host:port/path', "
            f"not {cache!r}")
    if name is None:
        if any(v is not None for v in (cache_capacity, hotscore_alpha, count_period)):
            raise InvalidArgument("cache options were given but the cache is off "
                                  "(cache_policy=None or cache=None)")
        return None
    spec = cache.strip()
    scheme = spec.split("://", 1)[0].lower() if "://" in spec else spec.lower()
    if scheme == "zk":
        if name != DEFAULT_POLICY or any(
                v is not None for v in (cache_capacity, hotscore_alpha, count_period)):
            raise InvalidArgument(
                "with cache='zk://...' the cache-node services run the policy: set it on them "
                "(hibase cache-node --policy/--capacity/--alpha/--count-period)")
        require("cache", "the Redis cache (cache='zk://...')")
        from .membership import ZooKeeperMembership
        from .redis_backend import RedisBackend
        membership = ZooKeeperMembership(spec)
        try:
            return HotCache(RedisBackend(membership, node_managed=True), None)
        except Exception:
            membership.close()
            raise
    capacity, options = policy_options(name, cache_capacity, hotscore_alpha, count_period)
    if scheme == "memory":
        backend: Any = MemoryBackend()
    elif scheme == "redis":
        require("cache", "the Redis cache (cache='redis://...')")
        from .membership import StaticMembership
        from .redis_backend import RedisBackend
        backend = RedisBackend(StaticMembership(spec.split(",")))
    else:
        raise InvalidArgument(
            f"unknown cache {cache!r}; use 'memory', 'redis://host:port[,redis://...]' or "
            "'zk://host:port/path'")
    return HotCache(backend, make_policy(name, capacity, **options))
