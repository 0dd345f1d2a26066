"""The three backends the suite runs on, behind one object: `Backend("embedded", folder)` opens
the folder itself; `Backend("thrift", folder)` serves an embedded store in that folder through
hibase's Thrift1 gateway and opens thrift:// connections to it (the HBase backend, whose catalog
lives in the served store, so tables and indexes must be made through those connections);
`Backend("hbase", folder, cluster=...)` opens thrift:// connections to the session's real Apache
HBase (hibase.cluster.HBaseCluster), each test under its own table prefix (`prefix=` in the URL:
its catalog and tables are its own)."""

from __future__ import annotations

import dataclasses
import itertools
import os
import queue
import threading

import hibase
from hibase.server.thrift import ThriftServer
from servers import HBASE_TIMEOUT_MS, cluster_url

TIMEOUT_MS = 10_000
KINDS = ("embedded", "thrift", "hbase")
_prefixes = itertools.count()


class _ReadyPrefixes:
    """Table prefixes on the session's HBase whose catalog (hibase_meta) is already made, by
    hibase.connect itself in a background thread while tests run: an [hbase] test's first
    connect makes its catalog, one HBase createTable (0.6-1 s of HBase's procedures, mostly
    waiting), which a test no longer waits for. The catalog is what connect would make, so a
    test sees what it would have seen; a prefix is used by one test only."""

    AHEAD = 2

    def __init__(self, cluster):
        self.cluster = cluster
        self.ready: queue.Queue[str] = queue.Queue()
        self.wanted = threading.Semaphore(self.AHEAD)
        threading.Thread(target=self._fill, daemon=True, name="hbase-prefixes").start()

    def _fill(self) -> None:
        while True:
            self.wanted.acquire()
            prefix = new_prefix()
            try:
                hibase.connect(cluster_url(self.cluster, prefix)).close()
            except Exception:  # the cluster stopping at the session's end, or busy: take()
                pass           # makes prefixes itself, connect makes their catalogs then
            self.ready.put(prefix)

    def take(self) -> str:
        self.wanted.release()
        try:  # one being made is ready sooner than one made now
            return self.ready.get(timeout=30)
        except queue.Empty:
            return new_prefix()


_ready: dict[int, _ReadyPrefixes] = {}


def new_prefix() -> str:
    """A table prefix no test has used, with no catalog made ahead (hbase_prefix's have one)."""
    # a cluster kept across sessions (HIBASE_TEST_CLUSTER) holds earlier sessions' tables
    # ... and xdist's workers share one: the pid keeps their tables apart
    shared = os.environ.get("HIBASE_TEST_CLUSTER") or os.environ.get("PYTEST_XDIST_WORKER")
    return f"t{next(_prefixes)}" + (f"x{os.getpid()}" if shared else "")


def hbase_prefix(cluster) -> str:
    """A fresh table prefix on `cluster` for one test, its catalog made ahead when it could."""
    pool = _ready.get(id(cluster))
    if pool is None or pool.cluster is not cluster:
        pool = _ready[id(cluster)] = _ReadyPrefixes(cluster)
    return pool.take()


class Backend:
    """How a test reaches one store.

    kind        "embedded", "thrift" or "hbase"
    remote      True for thrift and hbase (a Thrift1 client: HBase splits regions, not it)
    url         what hibase.connect() and the command line take: the folder, or
                thrift://host:port?timeout=... (append "&option=..." for more URL options)
    path        the embedded folder (the store itself, or the one behind the gateway; unused
                on hbase)
    gateway_db  thrift: the gateway's own embedded Connection (server side: split regions,
                inspect what HBase holds); None otherwise
    server      thrift: the running ThriftServer (server.address); None otherwise
    cluster     hbase: the session's HBaseCluster; prefix: this test's table prefix there
    """

    def __init__(self, kind: str, folder: str | os.PathLike, cluster=None, **gateway_options):
        if kind not in KINDS:
            raise ValueError(f"backend kind must be one of {KINDS}, not {kind!r}")
        self.kind = kind
        self.path = os.fspath(folder)
        self.opened: list[hibase.Connection] = []
        self.gateway_db: hibase.Connection | None = None
        self.server: ThriftServer | None = None
        self.server2: ThriftServer | None = None
        self.cluster = cluster
        self.remote = kind != "embedded"
        self._split_sizes: dict[str, int] = {}
        if kind == "hbase":
            assert cluster is not None, "an hbase backend needs the session's cluster"
            self.prefix = hbase_prefix(cluster)
            self.url = cluster_url(cluster, self.prefix)
        elif kind == "thrift":
            self.gateway_db = hibase.connect(self.path)
            self.server = ThriftServer(self.gateway_db, port=0, **gateway_options).__enter__()
            # the gateway's Thrift2 side, as `hibase cluster` runs HBase's Thrift2 server
            self.server2 = ThriftServer(self.gateway_db, port=0, interface="thrift2",
                                        **gateway_options).__enter__()
            host, port = self.server.address
            # region_check_ms=0: a split made through gateway_db is seen on the next call
            # catalog_lease_ms=0: an index made by one client is seen by the next call of another
            self.url = (f"thrift://{host}:{port}?timeout={TIMEOUT_MS}&region_check_ms=0"
                        f"&catalog_lease_ms=0&thrift2_port={self.server2.address[1]}")
        else:
            self.url = self.path

    def __repr__(self) -> str:
        return f"Backend({self.kind!r}, {self.url!r})"

    @property
    def address(self) -> tuple[str, int]:
        """The Thrift server's (host, port), for plain happybase (thrift, hbase)."""
        if self.kind == "hbase":
            return ("127.0.0.1", self.cluster.thrift_port)
        assert self.server is not None, "an embedded backend has no gateway"
        return self.server.address

    def hbase_name(self, table: str) -> str:
        """The name HBase knows a store table by (hbase: with this test's prefix)."""
        return f"{self.prefix}_{table}" if self.kind == "hbase" else table

    def connect(self, **options) -> hibase.Connection:
        """A new client connection with connect() options (cache=..., cache_policy=...,
        table_prefix=...); closed at teardown if the test did not. Embedded: one open
        connection at a time (a second one gets StoreLocked), so close before reopening;
        thrift: reconnects to the same gateway, whose store persists, any number at once."""
        db = hibase.connect(self.url, **options)
        self.opened.append(db)
        return db

    def foreign_put(self, db: hibase.Connection, table: str, row: bytes, data: dict) -> None:
        """Write cells as a client that skips hibase's type checks: plain happybase on real
        HBase (the coprocessor indexes it), the gateway's own store behind Thrift (hibase's
        gateway refuses such a put from happybase), `db`'s store when embedded."""
        if self.kind == "hbase":
            import happybase
            conn = happybase.Connection(*self.address, timeout=HBASE_TIMEOUT_MS)
            try:
                conn.table(self.hbase_name(table)).put(row, data)
            finally:
                conn.close()
        else:
            from hibase.store.base import Mutation
            store = self.gateway_db.store if self.kind == "thrift" else db.store
            store.apply([Mutation("put", self.hbase_name(table), row, data)])

    def split(self, table: str, row: bytes | None = None) -> bool:
        """Split a region on the server side (regions are HBase's business, not a Thrift1
        client's): through HBase's Admin API, the gateway's store, or the latest open embedded
        connection. Thrift and hbase: open clients with local indexes on the table then follow
        the split at once (they would on their next local-index write or query;
        tests/test_hbase_local.py covers that path)."""
        if self.kind == "hbase":
            done = self.cluster.split(self.hbase_name(table), row)
        else:
            admin = self.gateway_db if self.kind == "thrift" else next(
                db for db in reversed(self.opened) if not db.store.closed)
            done = admin.split(table, row)
        if self.remote:
            for db in self.opened:
                if not db.store.closed and any(s.local for s in db.indexer.specs(table)):
                    db.store.follow_splits(table, force=True)
        return done

    def settle(self, table: str, max_regions: int = 8) -> int:
        """hbase: split `table` where a size policy with the split_size given to create_table
        would have (HBase's own policy splits at 10 GB and Thrift1 cannot set a table's size):
        at each row where another split_size/2 bytes of cells begin, as the embedded store's
        halving splits leave regions, but into at most `max_regions` (each split costs ~1 s of
        HBase's split procedure; evenly chosen among those rows). Elsewhere a no-op: the store
        split during the writes. Returns the splits made."""
        size = self._split_sizes.get(table)
        if self.kind != "hbase" or size is None:
            return 0
        import happybase
        conn = happybase.Connection(*self.address, timeout=HBASE_TIMEOUT_MS)
        try:
            acc, points = 0, []
            for row, data in conn.table(self.hbase_name(table)).scan():
                n = len(row) + sum(len(c) + len(v) for c, v in data.items())
                if acc and acc + n > size // 2:
                    points.append(row)
                    acc = 0
                acc += n
        finally:
            conn.close()
        if len(points) >= max_regions:
            step = len(points) / (max_regions - 1)
            points = [points[int(i * step)] for i in range(max_regions - 1)]
        return sum(self.split(table, row) for row in points)

    def flush(self, table: str) -> None:
        """hbase: flush the table's memstores (HBase's Admin API), which drops versions beyond
        max_versions as hibase's read-time trimming always does; a no-op elsewhere."""
        if self.kind == "hbase":
            self.cluster.flush(self.hbase_name(table))

    def create_table(self, db: hibase.Connection, name: str, families, columns=None,
                     split_size: int | None = None) -> None:
        """db.create_table(...); on thrift the split size also goes to the gateway's table,
        standing in for HBase's region size policy (Thrift1 cannot carry it); on hbase HBase's
        own policy rules (regions of 10 GB: tests split by hand)."""
        db.create_table(name, families, columns=columns, split_size=split_size)
        if split_size is not None:
            self._split_sizes[name] = split_size
        if self.kind == "thrift" and split_size is not None:
            store = self.gateway_db.store
            store.save_schema(dataclasses.replace(store.schema(name), split_size=split_size))

    def close(self) -> None:
        """Close the connections still open, then stop the gateway and close its store."""
        for db in self.opened:
            if not db.store.closed:
                db.close()
        self.opened.clear()
        for server in (self.server2, self.server):
            if server is not None:
                server.__exit__(None, None, None)
        self.server = self.server2 = None
        if self.gateway_db is not None:
            self.gateway_db.close()
            self.gateway_db = None
