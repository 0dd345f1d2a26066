"""Cached sets in Redis nodes on a consistent-hash ring.

Per set, on the node that owns its key (cache/ring.py)::

    hb:d:<key>   hash   marker field "" = FORMAT (or FORMAT|tag for a set stored under a tag:
                        backend.py), then rowkey -> CRC-32 + msgpack(covered)
    hb:v:<key>   string write version (INCR by every write touching the key; expires after
                        VERSION_TTL s: fills older than half of it are never stored)

Per node: ``hb:gen`` (bumped by invalidations, part of every fill token), and for cache-node
services (zk://) ``hb:visits`` (visit log the clients append to), ``hb:allow`` (sets the node's
policy wants stored), ``hb:free`` (records clients may still store on their own: warm-up),
``hb:fill`` (the largest set a client may store on any miss, for policies that decide at every
access; the service trims losers right after) and ``hb:stats``. Each access is one Lua script call (atomic on the node): a hit costs one round
trip, a write one pipelined round trip per node it touches.

Faults: every Redis error is caught per node. A failing node is marked down for `retry_after`
seconds: its keys are misses (they are not moved), writes that touch them are remembered, and
before the node is used again those keys are deleted (all of our keys, if too many were missed),
so a node that was unreachable for a while never serves a set a write could not patch. Anything
under our keys that is not ours (another type, no marker, bad checksum, unparsable) is counted as
garbage, treated as a miss and deleted or overwritten.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Any, Iterable, Iterator, NamedTuple

import redis
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.retry import Retry

from ..errors import BackendUnavailable
from .backend import NODE, SKIP, Backend, Lookup, Ops, pack_entry, unpack_entry
from .membership import Membership
from .ring import Ring

__all__ = ["RedisBackend", "FORMAT", "DATA", "VERSION", "GEN", "VISITS", "ALLOW", "FREE",
           "STATS", "SERVICE", "FILL_LIMIT", "VERSION_TTL", "data_key", "glob_escape"]

log = logging.getLogger(__name__)

FORMAT = b"hibase-cache/1"
DATA, VERSION = b"hb:d:", b"hb:v:"
GEN, VISITS, ALLOW, FREE, STATS, SERVICE = (b"hb:gen", b"hb:visits", b"hb:allow", b"hb:free",
                                            b"hb:stats", b"hb:svc")
FILL_LIMIT = b"hb:fill"
VERSION_TTL = 3600
MAX_VISITS = 200_000  # the visit log is trimmed to half of this if no service drains it
MAX_MISSED = 10_000  # more missed writes than this: the node is purged before reuse
GRACE = 30.0  # seconds after a ring change during which writes also patch the previous owner


def data_key(key: bytes) -> bytes:
    return DATA + key


def glob_escape(raw: bytes) -> bytes:
    """`raw` as a literal inside a Redis MATCH pattern."""
    out = bytearray()
    for b in raw:
        if b in b"*?[]\\":
            out += b"\\"
        out.append(b)
    return bytes(out)


_LOG_VISIT = f"""
local function log_visit(entry)
  local n = redis.call('RPUSH', KEYS[#KEYS], entry)
  if n > {MAX_VISITS} then redis.call('LTRIM', KEYS[#KEYS], -{MAX_VISITS // 2}, -1) end
end
"""

# KEYS: data, version, gen, visits   ARGV: log (0/1), key, marker (FORMAT or FORMAT|tag)
# A set stored under another tag is a miss (kind 0: the fill overwrites it), not garbage.
_READ = _LOG_VISIT + """
local gen = redis.call('GET', KEYS[3]) or '0'
local ver = redis.call('GET', KEYS[2]) or '0'
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'hash' then
  local marker = redis.call('HGET', KEYS[1], '')
  if marker and marker ~= ARGV[3]
      and string.sub(marker, 1, #'""" + FORMAT.decode() + """') == '""" + FORMAT.decode() + """' then
    return {0, gen, ver}
  end
  local data = redis.call('HGETALL', KEYS[1])
  if ARGV[1] == '1' then log_visit('h ' .. (#data / 2 - 1) .. ' ' .. ARGV[2]) end
  return {1, gen, ver, data}
end
return {t == 'none' and 0 or 2, gen, ver}
"""

# KEYS: data, version, gen, allow, free, fill limit, visits
# ARGV: version, gen, mode, size, cost, log, key, purge, marker, row1, entry1, ...
_FILL = _LOG_VISIT + """
local stored = 0
if (redis.call('GET', KEYS[2]) or '0') == ARGV[1]
    and (redis.call('GET', KEYS[3]) or '0') == ARGV[2] then
  local ok = ARGV[3] == 'store'
  if ARGV[3] == 'node' then
    if redis.call('SISMEMBER', KEYS[4], ARGV[7]) == 1
        or tonumber(redis.call('GET', KEYS[6]) or '0') >= tonumber(ARGV[5]) then
      ok = true
    elseif tonumber(redis.call('GET', KEYS[5]) or '0') >= tonumber(ARGV[5]) then
      ok = true
      redis.call('DECRBY', KEYS[5], ARGV[5])
    end
  end
  if ok then
    redis.call('DEL', KEYS[1])
    redis.call('HSET', KEYS[1], '', ARGV[9])
    for i = 10, #ARGV, 2000 do
      redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + 1999, #ARGV)))
    end
    stored = 1
  end
end
if stored == 0 and ARGV[8] == '1' then redis.call('DEL', KEYS[1]) end
if ARGV[6] == '1' then log_visit('m' .. stored .. ' ' .. ARGV[4] .. ' ' .. ARGV[7]) end
return stored
"""

# KEYS: data, version, visits   ARGV: log, key, row1, entry1 ('' = remove), ...
_PATCH = _LOG_VISIT + """
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], """ + str(VERSION_TTL) + """)
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then return -1 end
if t ~= 'hash' or string.sub(redis.call('HGET', KEYS[1], '') or '', 1, #'""" + FORMAT.decode() \
    + """') ~= '""" + FORMAT.decode() + """' then
  redis.call('DEL', KEYS[1])
  return -2
end
for i = 3, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
local size = redis.call('HLEN', KEYS[1]) - 1
if ARGV[1] == '1' then log_visit('r ' .. size .. ' ' .. ARGV[2]) end
return size
"""


class _Script(NamedTuple):
    source: str
    sha: str


def _script(source: str) -> _Script:
    return _Script(source, hashlib.sha1(source.encode()).hexdigest())


READ, FILL, PATCH = _script(_READ), _script(_FILL), _script(_PATCH)
SCRIPTS = (READ, FILL, PATCH)


def connect_redis(url: str, timeout: float) -> redis.Redis:
    """A client that fails fast: no retries, short timeouts (a dead node costs a miss)."""
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                retry=Retry(NoBackoff(), 0), health_check_interval=0)


def run_scripts(client: Any, calls: list[tuple[_Script, list, list]]) -> list:
    """EVALSHA each call in one pipeline (one round trip), loading the scripts if the node lost
    them; per-call results, exceptions included (ResponseError for a script error)."""
    results: list = [None] * len(calls)
    todo = list(range(len(calls)))
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for i in todo:
            script, keys, args = calls[i]
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        got = pipe.execute(raise_on_error=False)
        retry = []
        for i, r in zip(todo, got):
            if isinstance(r, NoScriptError) and attempt == 0:
                retry.append(i)
            elif isinstance(r, (ConnectionError, TimeoutError, redis.ConnectionError,
                                redis.TimeoutError)):
                raise r
            else:
                results[i] = r
        if not retry:
            break
        for s in SCRIPTS:
            client.script_load(s.source)
        todo = retry
    return results


class _Node:
    """One Redis node and what this client knows of its health."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.client = connect_redis(url, timeout)
        self.lock = threading.Lock()
        self.down_until = 0.0
        self.dirty = False  # marked down since last use: recover before trusting it again
        self.missed: set[bytes] = set()  # keys whose write patches did not reach the node
        self.overflow = False  # too many missed: purge all of our keys
        self.failures = 0
        self.last_error = ""

    def info(self) -> dict:
        return {"url": self.url, "up": time.monotonic() >= self.down_until,
                "failures": self.failures, "missed_writes": len(self.missed),
                "last_error": self.last_error}


class _Token(NamedTuple):
    url: str
    version: bytes
    gen: bytes
    started: float
    garbage: bool


class RedisBackend(Backend):
    """Sets in Redis hashes on an MD5 ring of nodes given by `membership`."""

    name = "redis"

    def __init__(self, membership: Membership, *, node_managed: bool = False,
                 timeout: float = 0.5, retry_after: float = 1.0, check: bool = True) -> None:
        self.membership = membership
        self.node_managed = node_managed
        self.timeout = timeout
        self.retry_after = retry_after
        self._log = b"1" if node_managed else b"0"
        self._nodes: dict[str, _Node] = {}
        self._nodes_lock = threading.Lock()
        self._ring = Ring(membership.nodes)
        self._prev: tuple[Ring, float] | None = None
        membership.subscribe(self._membership_changed)
        if check:
            self._check_reachable()

    # -- nodes and the ring -------------------------------------------------------------------
    def _check_reachable(self) -> None:
        urls = list(self._ring.nodes)
        if not urls:
            return
        failed = []
        for url in urls:
            node = self._node(url)
            try:
                node.client.ping()
            except RedisError as exc:
                failed.append(f"{url} ({exc})")
                self._down(node, exc)
        if len(failed) == len(urls):
            raise BackendUnavailable(
                "cannot reach any Redis cache node: " + "; ".join(failed)
                + ". Start redis-server, or connect with cache='memory' or cache_policy=None.")
        for f in failed:
            log.warning("Redis cache node unreachable, treated as down: %s", f)

    def _node(self, url: str) -> _Node:
        node = self._nodes.get(url)
        if node is None:
            with self._nodes_lock:
                node = self._nodes.get(url)
                if node is None:
                    node = self._nodes[url] = _Node(url, self.timeout)
        return node

    def _membership_changed(self, nodes: tuple[str, ...]) -> None:
        new = Ring(nodes)
        old = self._ring
        if new != old:
            self._prev = (old, time.monotonic() + GRACE)
            self._ring = new
            log.info("cache ring now %s", list(new.nodes))

    @property
    def ring(self) -> Ring:
        return self._ring

    def owner(self, key: bytes) -> str | None:
        return self._ring.node_for(key)

    def _owners(self, key: bytes) -> list[str]:
        """The owner, and during the grace period after a ring change the previous owner (so a
        reader that has not yet seen the change does not read a set a write failed to patch)."""
        own = self._ring.node_for(key)
        out = [own] if own else []
        prev = self._prev
        if prev is not None:
            if time.monotonic() > prev[1]:
                self._prev = None
            else:
                old = prev[0].node_for(key)
                if old and old != own:
                    out.append(old)
        return out

    def _down(self, node: _Node, exc: BaseException, missed: Iterable[bytes] = (),
              purge: bool = False) -> None:
        node.down_until = time.monotonic() + self.retry_after
        node.dirty = True
        node.failures += 1
        node.last_error = f"{type(exc).__name__}: {exc}"
        node.missed.update(missed)
        if purge or len(node.missed) > MAX_MISSED:
            node.overflow = True
            node.missed.clear()
        log.warning("cache node %s failed (%s); treated as down for %.1f s", node.url,
                    node.last_error, self.retry_after)

    def _usable(self, url: str | None) -> _Node | None:
        """The node if it may be used now (recovered first if it was down)."""
        if url is None:
            return None
        node = self._node(url)
        if node.dirty:
            if time.monotonic() < node.down_until:
                return None
            with node.lock:
                if node.dirty:
                    try:
                        self._recover(node)
                    except RedisError as exc:
                        self._down(node, exc)
                        return None
        return node

    def _recover(self, node: _Node) -> None:
        """Delete what writes could not patch while the node was down; then trust it again."""
        client = node.client
        failures, overflow, keys = node.failures, node.overflow, list(node.missed)
        if overflow:
            _purge(client, DATA + b"*")
            client.incr(GEN)
        elif keys:
            pipe = client.pipeline(transaction=False)
            for key in keys:
                pipe.delete(DATA + key)
                pipe.incr(VERSION + key)
                pipe.expire(VERSION + key, VERSION_TTL)
            pipe.execute()
        node.missed.difference_update(keys)
        if node.failures == failures:  # no new failure meanwhile (it would need recovery again)
            if overflow:
                node.overflow = False
            node.dirty = False
            log.info("cache node %s is back", node.url)

    # -- the Backend interface ----------------------------------------------------------------
    def get(self, key: bytes, tag: bytes = b"") -> Lookup:
        node = self._usable(self.owner(key))
        if node is None:
            return Lookup(None, None)
        marker = _marker(tag)
        try:
            reply = run_scripts(node.client, [(READ, [DATA + key, VERSION + key, GEN, VISITS],
                                               [self._log, key, marker])])[0]
            if isinstance(reply, ResponseError):
                raise reply
        except ResponseError:  # something not ours broke the script: heal, treat as a miss
            self._heal(node, [key])
            return Lookup(None, None, True)
        except RedisError as exc:
            self._down(node, exc)
            return Lookup(None, None)
        kind, gen, version = reply[0], reply[1], reply[2]
        started = time.monotonic()
        if kind == 1:
            entries = _decode(reply[3], marker)
            if entries is not None:
                return Lookup(entries)
        garbage = kind != 0
        return Lookup(None, _Token(node.url, version, gen, started, garbage), garbage)

    def fill(self, key: bytes, token: Any, entries: list, mode: str, tag: bytes = b"") -> bool:
        if token is None:
            return False
        if mode == SKIP and not token.garbage and not self.node_managed:
            return False
        if self.node_managed:
            mode = NODE
        fresh = time.monotonic() - token.started < VERSION_TTL / 2
        if self.owner(key) != token.url or not fresh:
            mode = SKIP  # the ring moved, or the load took too long: only purge / log
        node = self._usable(token.url)
        if node is None:
            return False
        size = len(entries)
        args: list = [token.version, token.gen, mode, size, max(size, 1), self._log, key,
                      b"1" if token.garbage else b"0", _marker(tag)]
        if mode != SKIP:
            for row, covered in entries:
                args += (row, pack_entry(row, covered))
        try:
            reply = run_scripts(node.client, [(FILL, [DATA + key, VERSION + key, GEN, ALLOW,
                                                      FREE, FILL_LIMIT, VISITS], args)])[0]
            if isinstance(reply, ResponseError):
                raise reply
        except ResponseError:
            self._heal(node, [key])
            return False
        except RedisError as exc:
            self._down(node, exc, [key])
            return False
        return reply == 1

    def delete(self, keys: Iterable[bytes]) -> None:
        by_node: dict[str, list[bytes]] = {}
        for key in keys:
            for url in self._owners(key):
                by_node.setdefault(url, []).append(key)
        for url, node_keys in by_node.items():
            node = self._usable(url)
            if node is None:
                self._node(url).missed.update(node_keys)
                continue
            try:
                node.client.delete(*[DATA + k for k in node_keys])
            except RedisError as exc:
                self._down(node, exc, node_keys)

    def patch(self, ops: Ops) -> dict[bytes, int]:
        by_node: dict[str, list[bytes]] = {}
        owner_of: dict[bytes, str] = {}
        for key in ops:
            owners = self._owners(key)
            if owners:
                owner_of[key] = owners[0]
            for url in owners:
                by_node.setdefault(url, []).append(key)
        sizes: dict[bytes, int] = {}
        for url, keys in by_node.items():
            node = self._usable(url)
            if node is None:
                node = self._node(url)
                node.missed.update(keys)
                if len(node.missed) > MAX_MISSED:
                    node.overflow, node.missed = True, set()
                continue
            calls = []
            for key in keys:
                args: list = [self._log, key]
                for row, covered in ops[key]:
                    args += (row, b"" if covered is None else pack_entry(row, covered))
                calls.append((PATCH, [DATA + key, VERSION + key, VISITS], args))
            try:
                replies = run_scripts(node.client, calls)
            except RedisError as exc:
                self._down(node, exc, keys)
                continue
            broken = [k for k, r in zip(keys, replies) if isinstance(r, ResponseError)]
            if broken:
                self._heal(node, broken)
            for key, reply in zip(keys, replies):
                if isinstance(reply, int) and reply >= 0 and owner_of.get(key) == url:
                    sizes[key] = reply
        return sizes

    def invalidate(self, prefix: bytes = b"") -> None:
        for url in set(self._ring.nodes) | set(self._nodes):
            node = self._node(url)
            try:
                node.client.incr(GEN)
                _purge(node.client, DATA + glob_escape(prefix) + b"*")
            except RedisError as exc:
                self._down(node, exc, purge=True)

    def _heal(self, node: _Node, keys: list[bytes]) -> None:
        """Drop a key's data and version when something not ours sits there."""
        log.warning("cache node %s holds data that is not ours under %d key(s); deleting",
                    node.url, len(keys))
        try:
            node.client.delete(*[k for key in keys for k in (DATA + key, VERSION + key)])
        except RedisError as exc:
            self._down(node, exc, keys)

    def keys(self) -> Iterator[bytes]:
        out: list[bytes] = []
        for url in self._ring.nodes:
            node = self._usable(url)
            if node is None:
                continue
            try:
                out += [k[len(DATA):] for k in node.client.scan_iter(DATA + b"*", count=1000)]
            except RedisError as exc:
                self._down(node, exc)
        return iter(out)

    def where(self, key: bytes) -> str | None:
        """The node URL holding `key` now (tests, tools)."""
        return self.owner(key)

    def stats(self) -> dict:
        nodes = []
        node_stats = []
        for url in self._ring.nodes:
            node = self._node(url)
            info = node.info()
            nodes.append(info)
            if not self.node_managed or not info["up"]:
                continue
            try:
                # redis-py types every command for its sync and async clients at once
                # (value | Awaitable) and keys as str (redis/redis-py#2399, #3497)
                raw: dict[bytes, bytes] = node.client.hgetall(STATS)  # type: ignore[arg-type, assignment]
            except RedisError:
                continue
            node_stats.append({k.decode(): _num(v) for k, v in raw.items()})
        out = {"backend": self.name, "nodes": nodes, **self.membership.describe()}
        if self.node_managed:
            out["node_stats"] = node_stats
        return out

    def close(self) -> None:
        for node in list(self._nodes.values()):
            try:
                node.client.close()
            except Exception:
                pass
        self.membership.close()


def _num(raw: bytes) -> Any:
    text = raw.decode(errors="replace")
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _purge(client: Any, pattern: bytes) -> int:
    """Delete every key matching `pattern` (SCAN + UNLINK in batches)."""
    n = 0
    batch: list[bytes] = []
    for key in client.scan_iter(pattern, count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            n += client.unlink(*batch)
            batch = []
    if batch:
        n += client.unlink(*batch)
    return n


def _marker(tag: bytes) -> bytes:
    """The marker field's value of a set stored under `tag`."""
    return FORMAT + b"|" + tag if tag else FORMAT


def _decode(flat: list, marker: bytes = FORMAT) -> list | None:
    """A Redis hash (flat field/value list) as a sorted set of entries; None if not ours (or
    not stored under `marker`)."""
    if len(flat) % 2:
        return None
    entries = []
    marked = False
    try:
        for i in range(0, len(flat), 2):
            row, raw = flat[i], flat[i + 1]
            if not row:
                marked = raw == marker
                continue
            entries.append((row, unpack_entry(row, raw)))
    except (ValueError, TypeError):
        return None
    if not marked:
        return None
    entries.sort(key=lambda e: e[0])
    return entries
