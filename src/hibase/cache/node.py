"""The cache-node service: one per Redis node, where the cache policy runs (window-heat by
default; the paper's hotscore as published with ``--policy hotscore``).

``hibase cache-node --redis redis://10.0.0.5:6379 --zk zk://10.0.0.1:2181/hibase`` runs this:

1. On start it empties the node of our keys (a node that was away may hold sets that writes could
   not patch), publishes the node's allowance and registers an **ephemeral znode**
   ``<base>/nodes/<quoted URL>``. Clients watching ``<base>/nodes`` put the node on their ring;
   when the service dies its session expires, the znode goes and clients drop the node. After a
   lost ZooKeeper session the service empties the node again and registers anew.
2. Clients read with one Lua call that also appends a visit ``h <size> <key>`` to ``hb:visits``;
   a miss loads from the persistent index and calls the fill script, which stores the set if
   the node allows it (the key is in ``hb:allow``; or the set is no larger than ``hb:fill``,
   published for policies that decide at every miss (window-heat, LRU), whose losers the
   service deletes right after; or ``hb:free`` still has room: warm-up) and appends
   ``m<stored> <size> <key>``; a write's patch appends ``r <size> <key>``.
3. The service drains ``hb:visits`` every `poll` seconds and replays each visit through its
   policy (``policy.access`` / ``policy.resize``), in the order the node saw them, so it takes
   the same decisions as the policy of an in-process cache seeing the same lookups (window-heat
   decides each miss; hotscore counts visits and, every `count_period` visits, rescores every
   set seen and picks the top sets up to the node's capacity). It obeys the decisions: evicted sets are deleted from the node, chosen sets are put
   in ``hb:allow`` so the next client miss stores them (lazy admission: the data is with the
   clients, not here), sets stored without the policy's consent are deleted, and ``hb:free`` is
   set to the room the policy still has. Counters go to ``hb:stats`` for ``db.cache_stats()``.
4. When the membership changes it deletes the sets this node no longer owns on the new ring, so
   a set that moves away and later comes back is never served stale.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from redis.exceptions import RedisError

from ..errors import BackendUnavailable, InvalidArgument
from .config import DEFAULT_CAPACITY, DEFAULT_POLICY, _policy_name, policy_options
from .membership import NODES, ZK_LOG, normalize_redis_url, parse_zk, znode_name
from .policies import make_policy
from .policy import Policy
from .redis_backend import (ALLOW, DATA, FILL_LIMIT, FREE, GEN, SERVICE, STATS, VISITS, _purge,
                            connect_redis)
from .ring import Ring

__all__ = ["CacheNodeService"]

log = logging.getLogger(__name__)


class CacheNodeService:
    """Visit counting and replacement for one Redis node; see the module docstring."""

    def __init__(self, redis_url: str, zk: str | None = None, *, policy: str = DEFAULT_POLICY,
                 capacity: int = DEFAULT_CAPACITY, alpha: float | None = None,
                 count_period: int | None = None, poll: float = 0.05, batch: int = 5000,
                 session_timeout: float = 4.0) -> None:
        self.url = normalize_redis_url(redis_url)
        name = _policy_name(policy)
        if name is None:
            raise InvalidArgument("a cache node needs a policy (window-heat, hotscore, lru, ...)")
        self.capacity, self._options = policy_options(name, capacity, alpha, count_period)
        self.policy_name = name
        self.zk_spec = zk
        if zk is not None:
            self.zk_hosts, self.zk_base = parse_zk(zk)
        if not poll > 0 or not isinstance(batch, int) or batch < 1:
            raise InvalidArgument("poll must be > 0 and batch an int >= 1")
        self.poll, self.batch, self.session_timeout = poll, batch, session_timeout
        self.client = connect_redis(self.url, timeout=max(2.0, poll * 10))
        self.policy: Policy = make_policy(name, self.capacity, **self._options)
        self._allowed: set = set()
        self._periods = 0
        self._token = b""
        self._zk: Any = None
        self._ring = Ring([self.url])
        self._ring_dirty = False
        self._lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.processed = 0
        self.deleted = 0

    # -- life cycle ---------------------------------------------------------------------------
    def start(self, background: bool = True) -> "CacheNodeService":
        """Empty the node, register in ZooKeeper, and (background) run the loop in a thread."""
        try:
            self.client.ping()
        except RedisError as exc:
            raise BackendUnavailable(f"cannot reach the Redis node {self.url}: {exc}") from None
        self._reset()
        if self.zk_spec is not None:
            self._connect_zk()
        if background:
            self._thread = threading.Thread(target=self.run, name=f"cache-node {self.url}",
                                            daemon=True)
            self._thread.start()
        return self

    def run(self) -> None:
        """The service loop, until stop()."""
        while not self._stop.is_set():
            try:
                if self._lost and self._zk is not None and self._zk.connected:
                    self._reset()
                    self._register()
                    self._lost = False
                if self._ring_dirty:
                    self._cleanup_ring()
                n = self.step()
            except RedisError as exc:
                log.warning("cache node %s: Redis error %s; retrying", self.url, exc)
                n = 0
                self._stop.wait(min(1.0, self.poll * 10))
            except Exception:  # keep serving; a bug here must not take the node down
                log.exception("cache node %s: step failed", self.url)
                n = 0
            if n < self.batch:
                self._stop.wait(self.poll)

    def stop(self) -> None:
        """Stop the loop and leave ZooKeeper (the znode goes at once)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception:
                pass
            self._zk = None
        try:
            self.client.close()
        except Exception:
            pass

    def __enter__(self) -> "CacheNodeService":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- ZooKeeper ----------------------------------------------------------------------------
    @property
    def znode(self) -> str:
        return f"{self.zk_base}/{NODES}/{znode_name(self.url)}"

    def _connect_zk(self) -> None:
        from kazoo.client import KazooClient
        from kazoo.recipe.watchers import ChildrenWatch
        from kazoo.retry import KazooRetry

        zk = KazooClient(hosts=self.zk_hosts, timeout=self.session_timeout, logger=ZK_LOG,
                         connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0))
        zk.add_listener(self._zk_state)
        try:
            zk.start(timeout=max(self.session_timeout, 3.0))
            zk.ensure_path(f"{self.zk_base}/{NODES}")
        except Exception as exc:
            zk.stop()
            zk.close()
            raise BackendUnavailable(
                f"cannot reach ZooKeeper at {self.zk_hosts}: {exc or 'timed out'}") from None
        self._zk = zk
        self._register()
        ChildrenWatch(zk, f"{self.zk_base}/{NODES}", self._members)

    def _register(self) -> None:
        """Create our ephemeral znode; an old one of a dead session is awaited, then replaced."""
        from kazoo.exceptions import NodeExistsError

        data = json.dumps({"url": self.url, "policy": self.policy_name,
                           "capacity": self.capacity, "host": socket.gethostname(),
                           "pid": os.getpid()}).encode()
        deadline = time.monotonic() + 2 * self.session_timeout
        while True:
            try:
                self._zk.create(self.znode, data, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                stat = self._zk.exists(self.znode)
                if stat is not None and stat.ephemeralOwner == self._zk.client_id[0]:
                    return
                if time.monotonic() > deadline:
                    log.warning("replacing the znode of an earlier service for %s", self.url)
                    try:
                        self._zk.delete(self.znode)
                    except Exception:
                        pass
                    deadline = time.monotonic() + self.session_timeout
                time.sleep(0.2)

    def _zk_state(self, state: str) -> None:
        if state == "LOST":  # our znode is gone; re-register (and empty the node) on reconnect
            self._lost = True

    def _members(self, children: list[str]) -> None:
        from urllib.parse import unquote
        urls = []
        for child in children:
            try:
                urls.append(normalize_redis_url(unquote(child)))
            except InvalidArgument:
                pass
        ring = Ring(urls)
        if self.url in ring.nodes and ring != self._ring:
            self._ring = ring
            self._ring_dirty = True

    def _cleanup_ring(self) -> None:
        """Delete the sets this node no longer owns on the current ring."""
        self._ring_dirty = False
        ring = self._ring
        gone = [k for k in self.client.scan_iter(DATA + b"*", count=1000)
                if ring.node_for(k[len(DATA):]) != self.url]
        if gone:
            pipe = self.client.pipeline(transaction=False)
            for raw in gone:
                key = raw[len(DATA):]
                self.policy.discard(key)
                self._allowed.discard(key)
                pipe.delete(raw)
                pipe.srem(ALLOW, key)
            pipe.execute()
            self.deleted += len(gone)
            log.info("cache node %s: dropped %d sets that moved to other nodes", self.url,
                     len(gone))

    # -- the policy's work --------------------------------------------------------------------
    def _reset(self) -> None:
        """Empty the node of our keys and start the policy afresh."""
        client = self.client
        _purge(client, DATA + b"*")
        client.delete(ALLOW, VISITS, FREE, FILL_LIMIT, STATS)
        client.incr(GEN)  # fills in flight against the old contents are void
        self.policy = make_policy(self.policy_name, self.capacity, **self._options)
        self._allowed = set()
        self._periods = 0
        self._token = uuid.uuid4().hex.encode()
        pipe = client.pipeline(transaction=False)
        pipe.set(FREE, self.capacity)
        pipe.set(FILL_LIMIT, self.policy.fill_limit)
        pipe.set(SERVICE, self._token)
        pipe.execute()
        self._publish(client.pipeline(transaction=False))

    def step(self) -> int:
        """Drain up to `batch` visits, replay them through the policy and make the node follow
        its decisions; returns how many visits were processed."""
        client = self.client
        token = client.get(SERVICE)
        if token != self._token:
            log.warning("cache node %s was restarted or flushed; starting afresh", self.url)
            self._reset()
        # redis-py types every command for its sync and async clients at once (value |
        # Awaitable) and keys as str (redis/redis-py#2399, #3497): LPOP with a count gives a list
        records: list[bytes] = client.lpop(VISITS, self.batch) or []  # type: ignore[arg-type, assignment]
        policy = self.policy
        delete: set = set()
        admitted: set = set()
        for record in records:
            try:
                kind, size_text, key = record.split(b" ", 2)
                size = int(size_text)
            except ValueError:
                continue  # not ours: ignore
            if kind == b"r":
                delete.update(policy.resize(key, size))
                continue
            decision = policy.access(key, size)
            delete.update(decision.evict)
            if decision.admit:
                if kind == b"m0":  # chosen, but the client did not store it: allow the next
                    admitted.add(key)
                delete.discard(key)
            elif key not in policy and (kind == b"m1" or (kind == b"h" and not decision.hit)):
                delete.add(key)  # stored without the policy's consent
        delete = {k for k in delete if k not in policy}
        pipe = client.pipeline(transaction=False)
        for key in delete:
            pipe.delete(DATA + key)
            self._allowed.discard(key)
        if delete:
            pipe.srem(ALLOW, *delete)
        wanted = admitted | set(policy.pending_admissions())
        periods = policy.stats.get("periods", 0)
        if periods != self._periods:  # a period ended: resync the allowance fully
            self._periods = periods
            target = set(policy) | wanted
            extra = self._allowed - target
            if extra:
                pipe.srem(ALLOW, *extra)
            self._allowed -= extra
        new = wanted - self._allowed
        if new:
            pipe.sadd(ALLOW, *new)
            self._allowed |= new
        pipe.set(FREE, max(0, self.capacity - policy.records - policy.reserved))
        pipe.set(FILL_LIMIT, policy.fill_limit)
        self._publish(pipe)
        self.processed += len(records)
        self.deleted += len(delete)
        return len(records)

    def _publish(self, pipe: Any) -> None:
        stats = self.policy.stats
        fields = {k: stats[k] for k in ("policy", "capacity", "accesses", "hits", "misses",
                                        "evictions", "admissions", "sets", "records")}
        fields.update(url=self.url, periods=stats.get("periods", 0), processed=self.processed,
                      pending=len(self.policy.pending_admissions()))
        pipe.hset(STATS, mapping=fields)
        pipe.execute()

    def stats(self) -> dict:
        return {**self.policy.stats, "url": self.url, "processed": self.processed,
                "deleted": self.deleted, "allowed": len(self._allowed)}
