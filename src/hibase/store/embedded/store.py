"""The embedded backend: HBase's data model in one RocksDB database in a folder.

One RocksDB column family per (table, family) holds that family's row segments (see cells.py);
the `default` column family holds the catalog (table schemas, region boundaries and sizes).
Writes are serialised by one lock (RocksDB's write path is not the bottleneck from Python, and a
single writer makes read-modify-write steps such as index maintenance and counters atomic);
reads run concurrently and see either all or none of any write.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import weakref
from typing import Any, Iterator

import rocksdict as rd

from ... import errors
from .. import cells as C
from ..api import BaseStore, Capabilities, durability_level
from ..base import CountDelta, Mutation, Region, SplitListener, decode_count, encode_count, now_ms
from .groupcommit import SyncingLock
from .kv import KeyValueTables
from ..rocks import (
    check_manifest, checked_items, close_all, create_column_family, mapped, shadow_folder,
    translate, writable,
)
from ..schema import TableSchema

from .reads import Reads, _segments_at
from .regions import Regions
from .tables import Table as _Table
from .tables import cf_name as _cf_name

__all__ = ["EmbeddedStore"]


# HBase compression names -> RocksDB's (a mutable column-family option, re-applied on open)
_COMPRESSION = {"NONE": "kNoCompression", "GZ": "kZlibCompression", "SNAPPY": "kSnappyCompression",
                "LZ4": "kLZ4Compression", "ZSTD": "kZSTD", "BZIP2": "kBZip2Compression"}


class EmbeddedStore(KeyValueTables, Reads, Regions, BaseStore):
    """A store folder: tables, regions and cells on RocksDB."""

    # one writer process; reads opened together under the write lock see one instant
    capabilities = Capabilities(shared=False, follows_splits=False, verified_index_writes=False,
                                snapshot_reads=True)

    @mapped
    def __init__(self, path: str | os.PathLike, *, create: bool = True, read_only: bool = False,
                 durability: str | None = None, sync: bool | None = None,
                 block_cache_mb: int = 256):
        self.path = os.fspath(path)
        self._folder = os.path.abspath(self.path)  # asked before each write (_check_writable)
        self.read_only = read_only
        # "process": every write reaches the OS through the WAL before it is acknowledged (a
        # killed process loses nothing); "fsync": the WAL is also fsynced (a power cut loses
        # nothing acknowledged), writers that commit meanwhile sharing one fsync
        self.durability = durability_level(durability, sync)
        self._engine_error: errors.HibaseError | None = None  # the first fatal one (rocks.py)
        self._shadow: str | None = None
        self._db: Any = None
        self._lock: Any = threading.RLock()
        self._split_listeners: list[SplitListener] = []
        if not os.path.isdir(self.path):
            if not create or read_only:
                raise errors.BackendUnavailable(f"no store at {self.path!r}")
            try:
                os.makedirs(self.path, exist_ok=True)
            except OSError as exc:  # a file in the way, no permission...
                raise self._open_error(exc) from None
        self._cache = rd.Cache(block_cache_mb * 1024 * 1024)
        self._db = self._open()
        # Writes never wait for the disk inside RocksDB (WriteOptions.sync stays False): with
        # durability="fsync" the writer lock fsyncs the WAL as its holder leaves (group commit,
        # groupcommit.py), so the lock is not held across the disk's wait.
        if self.durability == "fsync" and not read_only:
            self._lock = SyncingLock(self._sequence, self._sync_wal)
        self._tables: dict[str, _Table] = {}
        self._kv: dict[str, tuple[Any, Any]] = {}
        try:
            for key, _ in checked_items(self._db, b"kv/"):
                if not key.startswith(b"kv/"):
                    break
                self._load_kv(key[3:].decode())
            for key, value in checked_items(self._db, b"table/"):
                if not key.startswith(b"table/"):
                    break
                self._load_table(TableSchema.from_json(json.loads(value)))
        except BaseException:  # a damaged catalog: release the folder before reporting it
            try:
                self.close()
            except Exception:
                pass
            raise

    # -- opening -----------------------------------------------------------------------------
    def _options(self) -> rd.Options:
        # Row bloom filters always: a family's bloom_filter_type is kept for happybase parity,
        # but a RocksDB table factory cannot change after creation and blooms only help.
        opts = rd.Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.set_paranoid_checks(True)  # RocksDB's default, kept explicit: checksums on open
        # A damaged WAL record fails the open (StoreCorrupted); only an incomplete last record,
        # a write a crash cut short, is dropped. RocksDB's default (point in time) would drop
        # every record after the damage without a word.
        opts.set_wal_recovery_mode(rd.DBRecoveryMode.tolerate_corrupted_tail_records())
        table = rd.BlockBasedOptions()
        table.set_block_cache(self._cache)
        table.set_bloom_filter(10, False)
        opts.set_block_based_table_factory(table)
        return opts

    def _open(self) -> rd.Rdict:
        existing = []
        if os.path.exists(os.path.join(self.path, "CURRENT")):
            check_manifest(self.path)
            try:
                existing = rd.Rdict.list_cf(self.path)
            except Exception as exc:
                raise self._open_error(exc) from None
        # Family options are re-applied from the catalog in _load_table; open with defaults.
        cfs = {name: self._options() for name in existing if name != "default"}
        access = rd.AccessType.read_only() if self.read_only else rd.AccessType.read_write()
        where = self.path
        if self.read_only and not writable(self.path):
            where = self._shadow = shadow_folder(self.path)
            weakref.finalize(self, shutil.rmtree, where, True)  # also when never closed
        try:
            return rd.Rdict(where, self._options(), column_families=cfs or None,
                            access_type=access)
        except Exception as exc:
            raise self._open_error(exc) from None

    def durability_stats(self) -> dict[str, Any]:
        """{"durability", "fsyncs" (group fsyncs made since the open), "acknowledged" (writes
        they acknowledged)}: the counters `hibase bench store --durability` reads."""
        lock = self._lock
        return {"durability": self.durability, "fsyncs": getattr(lock, "fsyncs", 0),
                "acknowledged": getattr(lock, "acknowledged", 0)}

    def _sequence(self) -> int:
        db = self._db
        return 0 if db is None else db.latest_sequence_number()

    @mapped
    def _sync_wal(self) -> None:
        """fsync the WAL files (durability="fsync"); called by the writer lock, not under it."""
        db = self._db
        if db is not None:
            db.flush_wal(True)

    def _open_error(self, exc: Exception) -> errors.HibaseError:
        err = translate(exc, self.path)
        if type(err) is errors.BackendError:  # no more precise kind: say it could not open
            return errors.BackendUnavailable(f"cannot open store {self.path!r}: "
                                             f"{' '.join(str(exc).split())}")
        return err

    def _load_table(self, schema: TableSchema) -> _Table:
        fams = {}
        for fam, fo in schema.families.items():
            name = _cf_name(schema.name, fam)
            view = self._db.get_column_family(name)
            if not self.read_only:
                view.set_options({"compression": _COMPRESSION[fo.compression]})
            fams[fam] = (view, self._db.get_column_family_handle(name), fo)
        regions = []
        prefix = b"region/" + schema.name.encode() + b"/"
        for key, value in checked_items(self._db, prefix):
            if not key.startswith(prefix):
                break
            start = key[len(prefix):]
            rid, size = C.unpack(value)
            regions.append(Region(schema.name, start, b"", rid, size))
        for left, right in zip(regions, regions[1:]):
            left.end = right.start
        t = self._tables[schema.name] = _Table(schema, fams, regions)
        return t

    @mapped
    def close(self) -> None:
        with self._lock:
            if self._db is not None and isinstance(self._lock, SyncingLock):
                with self._lock.closing():  # no group fsync runs on the handle as it closes
                    try:
                        self._db.flush_wal(True)  # what this thread wrote under the lock
                    finally:
                        self._close()
            else:
                self._close()

    def _close(self) -> None:
        if self._db is not None:
            # family views hold the database open: close them before it (no local names
            # a handle: the traceback of a failed close must not keep one, or its LOCK)
            views = [v for t in self._tables.values() for v, _, _ in t.fams.values()]
            views += [v for v, _ in self._kv.values()] + [self._db]
            self._db = None  # type: ignore[assignment]  # closed even when closing fails
            self._tables.clear()
            self._kv.clear()
            try:
                close_all(views)
            finally:
                if self._shadow is not None:
                    shutil.rmtree(self._shadow, ignore_errors=True)

    @property
    def closed(self) -> bool:
        return self._db is None

    # -- catalog -----------------------------------------------------------------------------
    def table(self, name: str) -> _Table:
        try:
            return self._tables[name]
        except KeyError:
            if self._db is None:
                raise errors.BackendUnavailable("the store is closed") from None
            raise errors.TableNotFound(f"no table {name!r}") from None

    def tables(self, internal: bool = False) -> list[str]:
        return sorted(n for n in self._tables if internal or not n.startswith("__"))

    def schema(self, name: str) -> TableSchema:
        return self.table(name).schema

    def _check_writable(self) -> None:
        """Raise before any write when the store cannot take it: opened read-only, closed, or
        its folder made read-only since the open. RocksDB's open WAL and MANIFEST would still
        take writes there (a put, an index's new column families, a compaction), and then the
        first file it has to create fails: every writing call refuses up front instead, and
        works again once the folder is writable."""
        if self.read_only:
            raise errors.StoreReadOnly("the store was opened read-only", self.path)
        if self._db is None:
            raise errors.BackendUnavailable("the store is closed")
        if not os.access(self._folder, os.W_OK, effective_ids=True):
            raise errors.StoreReadOnly(
                f"cannot write {self.path!r}: the store's folder is read-only (open the store "
                "with read_only=True to read it)", self.path)

    @mapped
    def create_table(self, schema: TableSchema) -> None:
        with self._lock:
            self._check_writable()
            if schema.name in self._tables:
                raise errors.TableExists(f"table {schema.name!r} already exists")
            for fam, fo in schema.families.items():
                create_column_family(self._db, _cf_name(schema.name, fam), self._options())
            wb = rd.WriteBatch(raw_mode=True)
            wb.put(b"table/" + schema.name.encode(), json.dumps(schema.to_json()).encode())
            wb.put(b"region/" + schema.name.encode() + b"/", C.pack([time.time_ns() // 1000, 0]))
            self._db.write(wb)
            self._load_table(schema)

    @mapped
    def save_schema(self, schema: TableSchema) -> None:
        """Persist a changed schema (e.g. enabled flag) of an existing table."""
        with self._lock:
            self._check_writable()
            self.table(schema.name).schema = schema
            self._db.put(b"table/" + schema.name.encode(), json.dumps(schema.to_json()).encode())

    @mapped
    def drop_table(self, name: str) -> None:
        with self._lock:
            self._check_writable()
            t = self.table(name)
            wb = rd.WriteBatch(raw_mode=True)
            wb.delete(b"table/" + name.encode())
            for r in t.regions:
                wb.delete(b"region/" + name.encode() + b"/" + r.start)
            self._db.write(wb)
            del self._tables[name]
            for fam in t.schema.families:
                self._db.drop_column_family(_cf_name(name, fam))

    @mapped
    def put_meta(self, key: bytes, value: bytes | None) -> None:
        """Catalog entries of the layers above (index definitions...), under b"meta/"."""
        with self._lock:
            self._check_writable()
            if value is None:
                self._db.delete(b"meta/" + key)
            else:
                self._db.put(b"meta/" + key, value)

    def meta_items(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        full = b"meta/" + prefix
        for key, value in checked_items(self._db, full):
            if not key.startswith(full):
                break
            yield key[5:], value

    # -- writes ------------------------------------------------------------------------------
    def prepare(self, mutations: list[Mutation]) -> list[tuple[Any, Mutation, list]]:
        """Encode mutations into (table, mutation, [(family, segment)]) without writing, so a
        layer above can compute what they change (row_states) before commit()."""
        default_ts = now_ms()
        out = []
        for m in mutations:
            t = self._tables.get(m.table) or self.table(m.table)
            ts = default_ts if m.ts is None else m.ts
            out.append((t, m, list(C.mutation_segments(t.fams, m, ts))))
        return out

    def row_states(self, table: str, row: bytes, columns: list[bytes],
                   pending: dict[bytes, list[bytes]]) -> tuple[dict, dict]:
        """Newest values of `columns` ({col: (ts, value)}) before and after the `pending`
        segments (per family, newest first) land on `row`; TTL is not applied."""
        return self.row_states_many(table, [(row, pending)], columns)[0]

    @mapped
    def row_states_many(self, table: str, items: list[tuple[bytes, dict[bytes, list[bytes]]]],
                        columns: list[bytes] | None) -> list[tuple[dict, dict]]:
        """row_states for many (row, pending) pairs, one iterator per family for all;
        columns None: every column of every family."""
        t = self.table(table)
        by_fam: dict[bytes, set[bytes] | None] = {}
        if columns is None:
            by_fam = dict.fromkeys(t.fams)
        for col in columns or ():
            by_fam.setdefault(col[:col.index(b":")], set()).add(col)  # type: ignore[union-attr]
        out: list[tuple[dict, dict]] = [({}, {}) for _ in items]
        merge_latest = C.merge_latest
        for fam, cols in by_fam.items():
            it = t.fams[fam][0].iter()
            wanted = None if cols is None else frozenset(cols)
            for (row, pending), (before, after) in zip(items, out):
                segs = _segments_at(it, C.row_prefix(row))
                old = merge_latest(segs, wanted) if segs else {}
                before.update(old)
                new = pending.get(fam)
                after.update(merge_latest(new + segs, wanted) if new else old)
        return out

    def _resolve_counts(self, kv_writes: Any) -> list:
        """kv_writes with every CountDelta turned into the count it makes (read under the
        write lock, so the read and the batch's write are one atomic step), in order."""
        writes = list(kv_writes)
        wanted: dict[str, list[bytes]] = {}
        for name, key, value in writes:
            if isinstance(value, CountDelta):
                wanted.setdefault(name, []).append(key)
        if not wanted:
            return writes
        now: dict[tuple[str, bytes], int] = {}
        for name, keys in wanted.items():
            keys = list(dict.fromkeys(keys))
            for key, raw in zip(keys, self.kv_get(name, keys)):
                now[(name, key)] = decode_count(raw) if raw is not None else 0
        out = []
        for name, key, value in writes:
            if isinstance(value, CountDelta):
                n = now[(name, key)] + value
                value = encode_count(n) if n > 0 else None
            if (name, key) in now:  # a later delta of this key in the batch adds to this
                now[(name, key)] = decode_count(value) if value is not None else 0
            out.append((name, key, value))
        return out

    @mapped
    def commit(self, prepared: list[tuple[Any, Mutation, list]],
               kv_writes: list[tuple[str, bytes, bytes | None]] = ()) -> None:  # type: ignore[assignment]
        """Write prepared segments and raw key-value writes in one atomic batch."""
        with self._lock:
            self._check_writable()
            wb = rd.WriteBatch(raw_mode=True)
            seq = self._db.latest_sequence_number() + 1
            grown: dict[int, tuple[_Table, Region]] = {}
            added: list[tuple[Region, int]] = []
            row_prefix, segment_key = C.row_prefix, C.segment_key
            for t, m, segments in prepared:
                prefix = row_prefix(m.row)
                written = 0
                for fam, value in segments:
                    key = segment_key(prefix, seq)
                    seq += 1
                    wb.put(key, value, t.fams[fam][1])
                    written += len(key) + len(value)
                region = t.region_of(m.row)
                region.size += written
                grown[id(region)] = (t, region)
                added.append((region, written))
            for name, key, value in self._resolve_counts(kv_writes):
                handle = self._kv_handle(name)
                if value is None:
                    wb.delete(key, handle)
                else:
                    wb.put(key, value, handle)
            for t, region in grown.values():
                wb.put(b"region/" + t.schema.name.encode() + b"/" + region.start,
                       C.pack([region.id, region.size]))
            try:
                self._db.write(wb)
            except BaseException:  # nothing was written (disk full...): sizes as they were
                for region, written in added:
                    region.size -= written
                raise
            for t, region in grown.values():
                if region.size > t.schema.split_size and region in t.regions:
                    self._split_by_size(t, region)
