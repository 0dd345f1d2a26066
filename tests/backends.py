"""The two backends the suite runs on, behind one object: `Backend("embedded", folder)` opens
the folder itself; `Backend("thrift", folder)` serves an embedded store in that folder through
hibase's Thrift1 gateway and opens thrift:// connections to it (the HBase backend, whose catalog
lives in the served store, so tables and indexes must be made through those connections)."""

from __future__ import annotations

import dataclasses
import os

import hibase
from hibase.server.thrift import ThriftServer

TIMEOUT_MS = 10_000
KINDS = ("embedded", "thrift")


class Backend:
    """How a test reaches one store.

    kind        "embedded" or "thrift"
    url         what hibase.connect() and the command line take: the folder, or
                thrift://host:port?timeout=... (append "&option=..." for more URL options)
    path        the embedded folder (the store itself, or the one behind the gateway)
    gateway_db  thrift: the gateway's own embedded Connection (server side: split regions,
                inspect what HBase holds); None when embedded
    server      thrift: the running ThriftServer (server.address); None when embedded
    """

    def __init__(self, kind: str, folder: str | os.PathLike, **gateway_options):
        if kind not in KINDS:
            raise ValueError(f"backend kind must be one of {KINDS}, not {kind!r}")
        self.kind = kind
        self.path = os.fspath(folder)
        self.opened: list[hibase.Connection] = []
        self.gateway_db: hibase.Connection | None = None
        self.server: ThriftServer | None = None
        if kind == "thrift":
            self.gateway_db = hibase.connect(self.path)
            self.server = ThriftServer(self.gateway_db, port=0, **gateway_options).__enter__()
            host, port = self.server.address
            # region_check_ms=0: a split made through gateway_db is seen on the next call
            # catalog_lease_ms=0: an index made by one client is seen by the next call of another
            self.url = (f"thrift://{host}:{port}?timeout={TIMEOUT_MS}&region_check_ms=0"
                        "&catalog_lease_ms=0")
        else:
            self.url = self.path

    def __repr__(self) -> str:
        return f"Backend({self.kind!r}, {self.url!r})"

    @property
    def address(self) -> tuple[str, int]:
        """The gateway's (host, port), for plain happybase (thrift only)."""
        assert self.server is not None, "an embedded backend has no gateway"
        return self.server.address

    def connect(self, **options) -> hibase.Connection:
        """A new client connection with connect() options (cache=..., cache_policy=...,
        table_prefix=...); closed at teardown if the test did not. Embedded: one open
        connection at a time (a second one gets StoreLocked), so close before reopening;
        thrift: reconnects to the same gateway, whose store persists, any number at once."""
        db = hibase.connect(self.url, **options)
        self.opened.append(db)
        return db

    def split(self, table: str, row: bytes | None = None) -> bool:
        """Split a region on the server side (regions are HBase's business, not a Thrift1
        client's): through the gateway's store, or the latest open embedded connection.
        Thrift: open clients with local indexes on the table then follow the split at once
        (they would on their next local-index write or query; tests/test_hbase_local.py
        covers that path)."""
        admin = self.gateway_db if self.kind == "thrift" else next(
            db for db in reversed(self.opened) if not db.store.closed)
        done = admin.split(table, row)
        if self.kind == "thrift":
            for db in self.opened:
                if not db.store.closed and any(s.local for s in db.indexer.specs(table)):
                    db.store.follow_splits(table, force=True)
        return done

    def create_table(self, db: hibase.Connection, name: str, families, columns=None,
                     split_size: int | None = None) -> None:
        """db.create_table(...); on thrift the split size also goes to the gateway's table,
        standing in for HBase's region size policy (Thrift1 cannot carry it)."""
        db.create_table(name, families, columns=columns, split_size=split_size)
        if self.kind == "thrift" and split_size is not None:
            store = self.gateway_db.store
            store.save_schema(dataclasses.replace(store.schema(name), split_size=split_size))

    def close(self) -> None:
        """Close the connections still open, then stop the gateway and close its store."""
        for db in self.opened:
            if not db.store.closed:
                db.close()
        self.opened.clear()
        if self.server is not None:
            self.server.__exit__(None, None, None)
            self.server = None
        if self.gateway_db is not None:
            self.gateway_db.close()
            self.gateway_db = None
