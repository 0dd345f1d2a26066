"""The store contract everything above store/ programs against (`Store`: every member the
index and query layers, the Connection, the CLI and the servers call), what only some backends
do (a capabilities record, read instead of probing for methods), and how a URL or folder is
told apart (`store/backends.py` opens it).

Both backends (store/embedded/: RocksDB in a folder; store/hbase/: HBase through Thrift1)
derive from `BaseStore`, whose defaults are the embedded store's answers to the questions only a
store shared with other clients asks (catalog leases, splits made by someone else, index rows
written apart from data rows); store/conformance.py has mypy check both against `Store`."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ContextManager, Iterable, Iterator, Protocol, runtime_checkable

from .. import errors
from .base import KVWrite, Mutation, Region, SplitListener
from .faults import Faults
from .schema import TableSchema
from .staged import RowChange

__all__ = ["Capabilities", "BaseStore", "Store", "Staged", "RowChange", "KeyValueStore",
           "KVRangeReader",
           "is_remote_url", "durability_level", "DURABILITY"]


@dataclass(frozen=True)
class Capabilities:
    """What a backend does that another may not; the layers above branch on these flags."""

    # other clients write the same tables: the index catalog is re-read when its lease runs out
    # (meta_changed), definition changes wait a lease (wait_lease), routing filters carry a
    # generation other clients bump
    shared: bool = False
    # regions split without telling this client (HBase): follow_splits catches up and
    # layout_token tells whether a split was applied between two reads
    follows_splits: bool = False
    # index rows and data rows are written in separate calls: the index layer commits them
    # by the verified / unverified protocol (index/commit.py) and resolves unverified entries
    # on read (index/verified.py)
    verified_index_writes: bool = False
    # reads across rows and tables see one instant (iterators opened together under the
    # write lock); without it a scan guarded by layout_token is redone when a split lands
    snapshot_reads: bool = True
    # a region-server coprocessor may keep some tables' indexes (HBase with hibase's
    # IndexObserver): `server_upkeep(table)` tells whether it runs on that table; indexes made
    # there say so (IndexSpec.server) and the client computes no index writes for them
    server_index_upkeep: bool = False
    # the store is files in a local folder that `hibase check` can verify (store/embedded/check.py)
    local_files: bool = True
    # full scans filtered on the raw stored bytes (`fast_scan_supported` / `filtered_rows`:
    # the embedded store's store/embedded/fastscan.py)
    fast_scan: bool = False
    # work no index answers (filter, projection, partial aggregates, top-k) can run inside the
    # region servers (HBase with hibase's ScanObserver): `scan_pushdown(table)` says whether it
    # does for that table, `pushed_scan` runs it (query/pushdown.py)
    pushed_scans: bool = False


class BaseStore:
    """Defaults for what a single-process store has no use for: no other client to wait for,
    no split made behind its back, index entries and rows committed in one batch."""

    capabilities = Capabilities()
    kind = "embedded"  # the backend's name, for reports ("hbase": through Thrift)
    read_only: bool = False
    # fault points between a store's separate calls (tests arm them; inert here)
    faults = Faults()

    def server_upkeep(self, table: str) -> bool:
        """Whether a coprocessor in the server keeps `table`'s indexes: never here."""
        return False

    def scan_pushdown(self, table: str) -> bool:
        """Whether scans of `table` can carry work into the server: never here."""
        return False

    def index_version(self, table: str, max_age_s: float = 0.0) -> bytes:
        """The write version of `table`'s server-kept index sets (changed by the server after
        every write that changed them): nothing changes them here."""
        return b""

    def bump_index_version(self, table: str) -> None:
        """This client changed index sets of `table` others may cache: nobody else here."""

    def forget_index_version(self, table: str) -> None:
        """This client wrote `table`: the next index_version is read afresh (nothing here)."""

    def meta_changed(self, force: bool = False) -> bool:
        """Whether another client changed the catalog since this one read it: never here."""
        return False

    def wait_lease(self) -> None:
        """Wait until every other client has re-read a catalog change: none to wait for."""

    def drain_server_writes(self, table: str) -> None:
        """Wait until every write the server's coprocessor began on `table` before this call
        has finished (and later ones read the index definitions afresh): no coprocessor
        here."""

    def follow_splits(self, table: str, force: bool = False) -> int:
        """Catch up with splits made elsewhere; returns how many were applied: none here."""
        return 0

    def layout_token(self, table: str) -> bytes:
        """A token that changes whenever a split of `table` is applied (snapshot stores never
        need to compare one: their reads see one instant)."""
        return b""

    def forget_layout(self, table: str) -> None:
        """The table's last local index is gone: nothing recorded here to forget."""

    def fast_scan_supported(self, table: str) -> bool:
        """Whether `filtered_rows` can scan `table` (Capabilities.fast_scan): not here."""
        return False

    def filtered_rows(self, table: str, start: bytes | None, stop: bytes | None,
                      needles: Any, keep: Any) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
        """Rows of [start, stop) passing a byte prefilter (`needles`) and `keep`: only on
        stores with Capabilities.fast_scan."""
        raise errors.BackendError("filtered_rows needs a store with Capabilities.fast_scan")

    def raw_segments(self, table: str) -> tuple[list[bytes], list[bytes]]:
        """(keys, raw values) of every stored segment of a fast-scan table, in key order
        (the columnar feed parses them: query/columnar.py): only on stores with
        Capabilities.fast_scan."""
        raise errors.BackendError("raw_segments needs a store with Capabilities.fast_scan")

    def write_sequence(self) -> int | None:
        """A number that moves with every write to the store, or None when the store has none
        (what was read may be kept while it holds)."""
        return None

    def reindex(self, table: str, alias: bytes, progress: Any = None) -> int:
        """Server-side build of an index kept by the server: no server here."""
        raise errors.BackendError("reindex needs a store whose server keeps indexes "
                                  "(Capabilities.server_index_upkeep)")

    def call_stats(self) -> dict[str, int]:
        """Remote calls made so far, by method: none in process."""
        return {}

    def existing_families(self, name: str) -> dict[bytes, dict[str, Any]]:
        """The families (and their options, as FamilyOptions names them) of a table the
        backend holds but hibase did not create; the embedded store holds no such table."""
        raise errors.InvalidArgument(
            "existing=True records a table that HBase already holds; an embedded store holds "
            "only the tables it made")

    def record_table(self, schema: Any) -> None:
        """Record `schema` for a table the backend already holds, leaving its rows as they
        are (see existing_families)."""
        self.existing_families(schema.name)

    def forget_table(self, name: str) -> None:
        """Remove a recorded table from the catalog, leaving the backend's table and rows."""
        raise errors.InvalidArgument(
            "keeping a table's data while unregistering it is for HBase tables other programs "
            "write; an embedded store's table lives only in the store (drop it, or keep it)")

    # the stores below provide _lock (an RLock), stage() and commit()
    _lock: Any

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Hold the store's writer lock across a read-modify-write (index upkeep, counters).
        Process-local: on HBase (Thrift1 has no row locks) writers in other processes are not
        serialized, as Phoenix without its coprocessors; the verified protocol keeps readers
        right meanwhile."""
        with self._lock:
            yield

    def apply(self, mutations: list[Mutation]) -> None:
        """Write mutations (possibly of several tables) in one batch, without index upkeep."""
        if mutations:
            with self._lock:
                self.commit(self.stage(mutations))  # type: ignore[attr-defined]


class KVRangeReader(Protocol):
    """Bounded range scans of one key-value table (`kv_reader`): only [start, stop) is read.
    Embedded: every scan reads as of the reader's creation (readers created together under
    the write lock agree); HBase: each scan is a scanner of its own, streamed in chunks."""

    def scan(self, start: bytes, stop: bytes | None) -> Iterator[tuple[bytes, bytes]]: ...


class Staged(Protocol):
    """Mutations a store has encoded for one commit (`Store.stage`) and not yet written: what
    the index layer reads of them before the commit (each row's state before and after).
    The encoding is the backend's own; only `Store.commit` of the same store reads it."""

    @property
    def mutations(self) -> list[Mutation]: ...
    def __len__(self) -> int: ...
    def tables(self) -> list[str]: ...
    def rows(self, table: str, columns: list[bytes] | None) -> list[RowChange]: ...


@runtime_checkable
class KeyValueStore(Protocol):
    """Single-version key-value tables (index entries, value tables, local index rows)."""

    def kv_tables(self) -> list[str]: ...
    def create_kv(self, name: str, counts_in: str | None = None) -> None: ...
    def drop_kv(self, name: str) -> None: ...
    def kv_get(self, name: str, keys: list[bytes]) -> list[bytes | None]: ...
    def kv_scan(self, name: str, start: bytes | None = None, stop: bytes | None = None,
                reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...
    def kv_reader(self, name: str) -> KVRangeReader: ...
    def kv_delete_range(self, name: str, start: bytes, stop: bytes | None) -> None: ...
    # ts: the timestamp of the writes' puts and deletes where a store keeps timestamps (HBase:
    # a writer's later writes, above its earlier ones, stay above a late retry of those)
    def write_kv(self, kv_writes: Iterable[KVWrite], ts: int | None = None) -> None: ...


@runtime_checkable
class Store(KeyValueStore, Protocol):
    """Everything the layers above call on a store (index/, query/, connection.py, table.py,
    cli/, server/): the HBase data model as plain calls, key-value tables, the staged write
    (stage / commit under one write lock), regions and split listeners, the catalog's meta
    keys, and what only a store shared with other clients asks (leases, splits made
    elsewhere). Both backends are checked against it by mypy (store/conformance.py)."""

    path: str
    read_only: bool
    kind: str
    capabilities: Capabilities
    faults: Faults

    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def call_stats(self) -> dict[str, int]: ...

    # tables and their schemas
    def tables(self, internal: bool = False) -> list[str]: ...
    def schema(self, name: str) -> TableSchema: ...
    def create_table(self, schema: TableSchema) -> None: ...
    def save_schema(self, schema: TableSchema) -> None: ...
    def drop_table(self, name: str) -> None: ...
    def existing_families(self, name: str) -> dict[bytes, dict[str, Any]]: ...
    def record_table(self, schema: TableSchema) -> None: ...
    def forget_table(self, name: str) -> None: ...

    # the catalog's own keys (index definitions, routing generations)
    def put_meta(self, key: bytes, value: bytes | None) -> None: ...
    def meta_items(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]: ...
    def meta_changed(self, force: bool = False) -> bool: ...
    def wait_lease(self) -> None: ...

    def drain_server_writes(self, table: str) -> None: ...

    # rows
    def read_row(self, table: str, row: bytes, columns: list[bytes] | None = None,
                 timestamp: int | None = None, versions: int = 1) -> dict[bytes, list]: ...
    def read_latest(self, table: str, row: bytes, columns: list[bytes] | None = None,
                    with_ts: bool = True) -> dict: ...
    def read_latest_many(self, table: str, rows: list[bytes],
                         columns: list[bytes] | None = None,
                         with_ts: bool = True) -> list[dict]: ...
    def scan_latest(self, table: str, start: bytes | None = None, stop: bytes | None = None,
                    columns: list[bytes] | None = None, reverse: bool = False,
                    with_ts: bool = True) -> Iterator[tuple[bytes, dict]]: ...
    def scan(self, table: str, start: bytes | None = None, stop: bytes | None = None,
             columns: list[bytes] | None = None, timestamp: int | None = None,
             versions: int = 1, reverse: bool = False) -> Iterator[tuple[bytes, dict]]: ...

    # writes: stage, then commit with key-value writes (count deltas included), under the lock
    def write_lock(self) -> ContextManager[None]: ...
    def apply(self, mutations: list[Mutation]) -> None: ...
    def stage(self, mutations: list[Mutation]) -> Staged: ...
    def commit(self, staged: Staged | None, kv_writes: Iterable[KVWrite] = ()) -> None: ...

    # regions
    def regions(self, table: str) -> list[Region]: ...
    def region_of(self, table: str, row: bytes) -> Region: ...
    def servers(self, table: str) -> dict[bytes, str]: ...
    def add_split_listener(self, listener: SplitListener) -> None: ...
    def split(self, table: str, row: bytes | None = None) -> bool: ...
    def follow_splits(self, table: str, force: bool = False) -> int: ...
    def layout_token(self, table: str) -> bytes: ...
    def forget_layout(self, table: str) -> None: ...

    # full scans filtered on raw bytes (Capabilities.fast_scan)
    def fast_scan_supported(self, table: str) -> bool: ...

    def raw_segments(self, table: str) -> tuple[list[bytes], list[bytes]]: ...

    def write_sequence(self) -> int | None: ...
    def filtered_rows(self, table: str, start: bytes | None, stop: bytes | None,
                      needles: Any, keep: Any) -> Iterator[tuple[bytes, dict[bytes, bytes]]]: ...

    # upkeep and size
    def compact(self, table: str) -> int: ...
    def flush(self) -> None: ...
    def disk_size(self) -> int: ...

    # indexes kept by the server (Capabilities.server_index_upkeep)
    def server_upkeep(self, table: str) -> bool: ...
    def index_version(self, table: str, max_age_s: float = 0.0) -> bytes: ...

    def bump_index_version(self, table: str) -> None: ...

    def forget_index_version(self, table: str) -> None: ...
    def reindex(self, table: str, alias: bytes, progress: Any = None) -> int: ...


def is_remote_url(path: str | os.PathLike) -> bool:
    """A thrift://host:port (or TLS: thrifts://) URL (HBase, or hibase's gateway) rather than
    a store folder."""
    return isinstance(path, str) and path.startswith(("thrift://", "thrifts://"))


DURABILITY = ("process", "fsync")


def durability_level(durability: str | None = None, sync: bool | None = None) -> str:
    """The durability level asked for: `durability` ("process", the default: an acknowledged
    write survives the process's death, kill -9 included; "fsync": it survives a power cut) or
    the older `sync` flag (True is "fsync", False "process"). InvalidArgument otherwise."""
    if sync is not None and not isinstance(sync, bool):
        raise errors.InvalidArgument(f"sync must be True or False, not {sync!r} "
                                     "(or use durability='process' | 'fsync')")
    if durability is not None and durability not in DURABILITY:
        raise errors.InvalidArgument(f"durability must be 'process' or 'fsync', not "
                                     f"{durability!r}")
    implied = None if sync is None else ("fsync" if sync else "process")
    if durability is not None and implied is not None and durability != implied:
        raise errors.InvalidArgument(f"sync={sync} contradicts durability={durability!r} "
                                     "(sync is the older spelling: pass durability alone)")
    return durability or implied or "process"
