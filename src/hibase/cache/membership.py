"""Which cache nodes are alive: a static list, or the live nodes registered in ZooKeeper.

ZooKeeper layout under a base path (``zk://host:2181/hibase`` -> ``/hibase``)::

    /hibase/nodes/<quoted redis URL>    ephemeral, one per cache-node service, data = JSON info

A cache-node service holds a session and its ephemeral znode; when the service dies the session
expires and the znode goes, so every client watching ``/hibase/nodes`` drops the node from its
ring; when the service returns it registers again and the node comes back. Clients keep the last
list they saw while ZooKeeper itself is unreachable (the paper: clients cache the list).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Callable
from urllib.parse import quote, unquote, urlsplit

from ..errors import BackendUnavailable, InvalidArgument

__all__ = ["Membership", "StaticMembership", "ZooKeeperMembership", "normalize_redis_url",
           "parse_zk", "znode_name", "NODES"]

log = logging.getLogger(__name__)
# kazoo's own lines ("Connection dropped", "Transition to CONNECTING") come here: silent unless
# the application configures logging, instead of Python's last-resort handler on stderr
ZK_LOG = logging.getLogger("hibase.cache.zk")
ZK_LOG.addHandler(logging.NullHandler())
NODES = "nodes"  # child of the base path that holds the live nodes


def normalize_redis_url(url: str) -> str:
    """``redis://host[:port][/db]`` in one spelling (port 6379, db 0 by default), so clients and
    cache-node services name a node identically on the ring."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidArgument(f"a Redis node URL is needed, got {url!r}")
    text = url.strip()
    if "://" not in text:
        text = "redis://" + text
    parts = urlsplit(text)
    if parts.scheme != "redis" or not parts.hostname or parts.query or parts.fragment:
        raise InvalidArgument(f"bad Redis node URL {url!r}; expected redis://host:port[/db]")
    try:
        port = parts.port or 6379
    except ValueError:
        raise InvalidArgument(f"bad port in Redis node URL {url!r}") from None
    db = parts.path.strip("/") or "0"
    if not db.isdigit():
        raise InvalidArgument(f"bad database number in Redis node URL {url!r}")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    auth = parts.netloc.rpartition("@")[0]
    return f"redis://{auth + '@' if auth else ''}{host}:{port}/{int(db)}"


def parse_zk(spec: str) -> tuple[str, str]:
    """``zk://h1:2181,h2:2181/base`` or ``h1:2181/base`` -> (hosts, base path)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgument(f"a ZooKeeper address is needed, got {spec!r}")
    text = spec.strip()
    if text.startswith("zk://"):
        text = text[5:]
    elif "://" in text:
        raise InvalidArgument(f"bad ZooKeeper address {spec!r}; expected zk://host:port/path")
    hosts, _, path = text.partition("/")
    base = "/" + path.strip("/") if path.strip("/") else "/hibase"
    if not hosts or any(not h.rpartition(":")[2].isdigit() for h in hosts.split(",")):
        raise InvalidArgument(f"bad ZooKeeper hosts in {spec!r}; expected host:port[,host:port]")
    return hosts, base


def znode_name(url: str) -> str:
    return quote(url, safe="")


class Membership:
    """The live cache nodes; ``version`` grows at every change."""

    def __init__(self) -> None:
        self._nodes: tuple[str, ...] = ()
        self.version = 0
        self._listeners: list[Callable[[tuple[str, ...]], None]] = []
        self._lock = threading.Lock()

    @property
    def nodes(self) -> tuple[str, ...]:
        return self._nodes

    def subscribe(self, listener: Callable[[tuple[str, ...]], None]) -> None:
        self._listeners.append(listener)

    def _set(self, nodes: tuple[str, ...]) -> None:
        with self._lock:
            if nodes == self._nodes:
                return
            self._nodes = nodes
            self.version += 1
        for listener in list(self._listeners):
            try:
                listener(nodes)
            except Exception:  # a listener's bug must not stop membership updates
                log.exception("membership listener failed")

    def describe(self) -> dict:
        return {"membership": "static", "members": list(self._nodes)}

    def close(self) -> None:
        pass


class StaticMembership(Membership):
    """A fixed list of Redis nodes (``redis://a:6379,redis://b:6380``)."""

    def __init__(self, urls: list[str]) -> None:
        super().__init__()
        nodes = tuple(dict.fromkeys(normalize_redis_url(u) for u in urls))
        if not nodes:
            raise InvalidArgument("a redis:// cache needs at least one node")
        self._set(nodes)


class ZooKeeperMembership(Membership):
    """Live nodes from ZooKeeper children, watched; the last list survives ZooKeeper outages."""

    def __init__(self, spec: str, timeout: float = 3.0) -> None:
        super().__init__()
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError
        from kazoo.recipe.watchers import ChildrenWatch
        from kazoo.retry import KazooRetry

        self.hosts, self.base = parse_zk(spec)
        self.path = f"{self.base}/{NODES}"
        self.connected = False
        self._client = KazooClient(
            hosts=self.hosts, timeout=max(timeout, 2.0), logger=ZK_LOG,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0))
        self._client.add_listener(self._state)
        try:
            self._client.start(timeout=timeout)
            self._client.ensure_path(self.path)
        except (KazooTimeoutError, Exception) as exc:
            self._client.stop()
            self._client.close()
            raise BackendUnavailable(
                f"cannot reach ZooKeeper at {self.hosts} for the cache ({type(exc).__name__}: "
                f"{exc or 'timed out'}); is it running?") from None
        self.connected = True
        ChildrenWatch(self._client, self.path, self._children)

    def _state(self, state: str) -> None:
        self.connected = state == "CONNECTED"
        if not self.connected:
            log.info("ZooKeeper connection %s; keeping the last node list %s", state,
                     list(self._nodes))

    def _children(self, children: list[str]) -> None:
        urls = []
        for child in children:
            try:
                urls.append(normalize_redis_url(unquote(child)))
            except InvalidArgument:
                log.warning("ignoring znode %r: not a Redis node URL", child)
        self._set(tuple(sorted(urls)))

    def info(self, url: str) -> dict:
        """The JSON a node's service registered ({} if unknown or unreachable)."""
        try:
            raw, _ = self._client.get(f"{self.path}/{znode_name(url)}")
            return json.loads(raw or b"{}")
        except Exception:
            return {}

    def describe(self) -> dict:
        return {"membership": "zookeeper", "zookeeper": self.hosts, "path": self.path,
                "zk_connected": self.connected, "members": list(self._nodes)}

    def close(self) -> None:
        try:
            self._client.stop()
            self._client.close()
        except Exception:
            pass
