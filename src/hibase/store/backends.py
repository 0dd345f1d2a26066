"""The one place a folder or a thrift:// URL becomes a store (Connection and the build
workers open stores here). Above store/api.py, so the protocol imports no backend."""

from __future__ import annotations

import os
from typing import Any

from .. import errors
from ..extras import require
from .api import durability_level, is_remote_url
from .salted import SaltedStore

__all__ = ["open_store"]


def open_store(path: str | os.PathLike, *, create: bool = True, read_only: bool = False,
               durability: str | None = None, sync: bool | None = None,
               block_cache_mb: int | None = None) -> Any:
    """The store at `path`: HBase through Thrift1 for a thrift:// URL (its options in the
    URL's query string), else the embedded RocksDB store in that folder; either wrapped in
    SaltedStore (salted tables' rowkeys mapped in and out: store/salted.py). `durability` (or
    the older `sync`, see durability_level) applies to the embedded store; HBase's WAL
    durability is the cluster's, so only the default "process" is accepted for it."""
    level = durability_level(durability, sync)
    if is_remote_url(path):
        if level != "process":
            raise errors.InvalidArgument(
                f"durability={level!r} applies to the embedded store; HBase's WAL durability "
                "is set on the cluster (hbase.wal.hsync, a table's DURABILITY)")
        require("hbase", "a thrift:// store (HBase through Thrift)")
        from .hbase import HBaseStore  # imported here: the embedded store works without it

        return SaltedStore(HBaseStore(str(path), create=create, read_only=read_only))
    from .embedded import EmbeddedStore

    if block_cache_mb is None:
        return SaltedStore(EmbeddedStore(path, create=create, read_only=read_only,
                                         durability=level))
    return SaltedStore(EmbeddedStore(path, create=create, read_only=read_only, durability=level,
                                     block_cache_mb=block_cache_mb))
