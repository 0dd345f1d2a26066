"""The embedded backend: HBase's data model in one RocksDB database in a folder.

One RocksDB column family per (table, family) holds that family's row segments (see cells.py);
the `default` column family holds the catalog (table schemas, region boundaries and sizes).
Writes are serialised by one lock (RocksDB's write path is not the bottleneck from Python, and a
single writer makes read-modify-write steps such as index maintenance and counters atomic);
reads run concurrently and see either all or none of any write.
"""

from __future__ import annotations

import array
import json
import os
import shutil
import threading
import time
import weakref
from typing import Any, Iterable, Iterator

import rocksdict as rd

from ... import errors
from .. import cells as C
from ..api import BaseStore, Capabilities, Staged, durability_level
from ..base import (CountDelta, KVWrite, Mutation, Region, SplitListener, decode_count,
                    decode_pending, encode_count, now_ms)
from . import fastscan
from .groupcommit import SyncingLock
from .kv import KeyValueTables
from .rocks import (
    check_manifest, checked_items, close_all, create_column_family, mapped, shadow_folder,
    translate, writable,
)
from ..schema import FOREVER, TableSchema
from ..staged import SegmentBatch, prepared_of

from .maintenance import Maintenance
from .reads import Reads, _row_segments, _segments_at
from .regions import Regions
from .tables import Table as _Table
from .tables import cf_name as _cf_name

__all__ = ["EmbeddedStore", "FOLD_AT"]

# A write that would give a row's family this many segments folds them, and itself, into one
# (in the write's own batch): reads and the write path's read of the old row then cost the same
# after the 1st and the 10,000th update of a row. After a fold the next one comes at FOLD_AT,
# FOLD_AT - 1 or FOLD_AT - 2 segments, picked by the write's sequence number: rows updated in
# step (every row once a round) do not all fold in the same round (HBase jitters its
# compactions for the same reason)...
FOLD_AT = 5
# ...unless its other segments together hold under 1/FOLD_RATIO of the bytes of its biggest
# (a wide row changed a few cells at a time): then a put stays O(cells written), amortized,
# instead of rewriting the row every few puts; a read costs at most (1 + 1/FOLD_RATIO) x the
# row's bytes.
FOLD_RATIO = 8
# Writes since the last fold are counted per row in this many buckets (by hash: rows sharing a
# bucket only make a row's check come early); a row is read to decide only when its bucket
# reaches FOLD_AT, so a put of a new row still reads nothing. A row left unfolded by FOLD_RATIO
# gets a negative count: checked again after about as many writes as the ratio needs.
_BUCKETS = 1 << 16
_WAIT_MAX = 128  # (rows sharing the bucket wait too)


# HBase compression names -> RocksDB's (a mutable column-family option, re-applied on open)
_COMPRESSION = {"NONE": "kNoCompression", "GZ": "kZlibCompression", "SNAPPY": "kSnappyCompression",
                "LZ4": "kLZ4Compression", "ZSTD": "kZSTD", "BZIP2": "kBZip2Compression"}


def _first_writes(prepared: list) -> dict[tuple[str, bytes, bytes], int]:
    """{(table, row, family): index of the first mutation of `prepared` writing it}."""
    first: dict[tuple[str, bytes, bytes], int] = {}
    for i, (_, m, segments) in enumerate(prepared):
        for fam, _ in segments:
            first.setdefault((m.table, m.row, fam), i)
    return first


class EmbeddedStore(KeyValueTables, Reads, Regions, Maintenance, BaseStore):
    """A store folder: tables, regions and cells on RocksDB."""

    # one writer process; reads opened together under the write lock see one instant
    capabilities = Capabilities(shared=False, follows_splits=False, verified_index_writes=False,
                                snapshot_reads=True, fast_scan=True)

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
        self._since_fold = array.array("h", [0]) * _BUCKETS
        self._init_maintenance()
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
        # SST files dense with tombstones (folded rows, moved index entries) are compacted by
        # RocksDB itself: 5,000 deletes in 10,000 consecutive entries, or half the file
        opts.add_compact_on_deletion_collector_factory(10_000, 5_000, 0.5)
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
        self._stop_maintenance()
        with self._lock, self._maint_lock:  # a running upkeep finishes first
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
            self._db = None  # closed even when closing fails
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

    def fast_scan_supported(self, table: str) -> bool:
        """Whether `filtered_rows` can scan `table` (one family, no TTL: fastscan.py)."""
        return fastscan.supports_fast_scan(self, table)

    def filtered_rows(self, table: str, start: bytes | None, stop: bytes | None,
                      needles: Any, keep: Any) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
        """(rowkey, {column: newest value}) of the rows of [start, stop) whose raw bytes pass
        the `needles` prefilter and `keep` (fastscan.filtered_rows)."""
        return fastscan.filtered_rows(self, table, start, stop, needles, keep)

    def raw_segments(self, table: str) -> tuple[list[bytes], list[bytes]]:
        """(keys, raw values) of every segment of the table's one family, in key order
        (a fast-scan table: fastscan.supports_fast_scan); each key is the row's prefix and an
        8-byte sequence, each value a segment as store/cells.py writes it."""
        from .rocks import verify_end
        view = next(iter(self.table(table).fams.values()))[0]
        keys: list[bytes] = []
        vals: list[bytes] = []
        ka, va = keys.append, vals.append
        last = None
        for last, value in view.items():
            ka(last)
            va(value)
        verify_end(view, last, None)
        return keys, vals

    def write_sequence(self) -> int | None:
        """RocksDB's latest sequence number: it moves with every write."""
        if self._db is None:
            raise errors.BackendUnavailable("the store is closed")
        return int(self._db.latest_sequence_number())

    def region_of(self, table: str, row: bytes) -> Region:
        """The region of `table` holding `row`."""
        return (self._tables.get(table) or self.table(table)).region_of(row)

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
            for b in range(1, schema.salt_buckets):  # a salted table: a region per bucket
                wb.put(b"region/" + schema.name.encode() + b"/" + bytes((b,)),
                       C.pack([time.time_ns() // 1000 + b, 0]))
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
            with self._maint_lock:
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
    def stage(self, mutations: list[Mutation]) -> SegmentBatch:
        """Encode mutations into row segments without writing, so a layer above can read each
        row's state before and after them (SegmentBatch.rows) before commit()."""
        default_ts = now_ms()
        out = []
        for m in mutations:
            t = self._tables.get(m.table) or self.table(m.table)
            ts = default_ts if m.ts is None else m.ts
            out.append((t, m, list(C.mutation_segments(t.fams, m, ts))))
        return SegmentBatch(out, self._row_states)

    @mapped
    def _row_states(self, table: str, items: list[tuple[bytes, dict[bytes, list[bytes]]]],
                    columns: list[bytes] | None) -> list[tuple[dict, dict]]:
        """Newest values of `columns` ({col: (ts, value)}; None: every column of every family)
        before and after each row's pending segments (per family, newest first) land; TTL is
        not applied. One iterator per family for all the rows."""
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
        now: dict[tuple[str, bytes], tuple[int, int]] = {}

        def count(raw: bytes | None) -> tuple[int, int]:
            return (decode_count(raw), decode_pending(raw)) if raw is not None else (0, 0)

        for name, keys in wanted.items():
            keys = list(dict.fromkeys(keys))
            for key, raw in zip(keys, self.kv_get(name, keys)):
                now[(name, key)] = count(raw)
        out = []
        for name, key, value in writes:
            if isinstance(value, CountDelta):
                n, p = now[(name, key)]
                n, p = n + value, p + value.pending
                value = encode_count(n, p) if n > 0 else None
            if (name, key) in now:  # a later delta of this key in the batch adds to this
                now[(name, key)] = count(value)
            out.append((name, key, value))
        return out

    def write_kv(self, kv_writes: Iterable[KVWrite], ts: int | None = None) -> None:
        """Key-value writes alone (puts, deletes, count deltas), in one atomic batch (`ts`:
        no key-value write keeps a timestamp here; each batch is applied whole, in order)."""
        self.commit(None, kv_writes)

    @mapped
    def commit(self, staged: Staged | None,
               kv_writes: Iterable[KVWrite] = ()) -> None:
        """Write a staged batch and key-value writes in one atomic batch.

        A segment that would be its row's FOLD_AT-th in a family (about: see FOLD_AT) is
        written folded with the row's older segments (which the batch deletes) instead: see
        _fold_pending."""
        prepared = prepared_of(staged)
        with self._lock:
            self._check_writable()
            wb = rd.WriteBatch(raw_mode=True)
            seq = self._db.latest_sequence_number() + 1
            grown: dict[int, tuple[_Table, Region]] = {}
            sizes: dict[int, tuple[Region, int]] = {}  # region sizes before this batch
            row_prefix, segment_key = C.row_prefix, C.segment_key
            counts, mask = self._since_fold, _BUCKETS - 1
            iters: dict[int, Any] = {}  # one iterator per family folded into, opened lazily
            deleted: dict[int, list] = {}  # per family: [view, deletes, lowest, highest key]
            first = None  # _first_writes(prepared), made when a fold is first considered
            for i, (t, m, segments) in enumerate(prepared):
                prefix = row_prefix(m.row)
                h = hash(prefix)
                fams = t.fams
                written = 0
                for fam, value in segments:
                    key = segment_key(prefix, seq)
                    seq += 1
                    entry = fams[fam]  # (view, handle, options): one tuple per family
                    b = (h ^ id(entry)) & mask
                    n = counts[b] + 1
                    if n >= FOLD_AT:  # the rare path: read the row, fold it when it is due
                        if first is None:
                            first = _first_writes(prepared) if len(prepared) > 1 else {}
                        if first and first[(m.table, m.row, fam)] < i:  # an older segment of
                            n = FOLD_AT - 1  # the row is in this batch: not folded above it
                        else:
                            view, handle, fo = entry
                            it = iters.get(id(handle))
                            if it is None:
                                it = iters[id(handle)] = view.iter()
                            value, n, freed = self._fold_pending(it, wb, handle, view, fo,
                                                                 prefix, value, deleted, seq)
                            written -= freed
                    counts[b] = n
                    wb.put(key, value, entry[1])
                    written += len(key) + len(value)
                region = t.region_of(m.row)
                if id(region) not in grown:
                    sizes[id(region)] = (region, region.size)
                    grown[id(region)] = (t, region)
                # folds make `written` negative: the count follows the bytes stored
                region.size += written
                if region.size < 0:
                    region.size = 0
            for name, key, value in self._resolve_counts(kv_writes):
                handle = self._kv_handle(name)
                if value is None:
                    wb.delete(key, handle)
                    d = deleted.get(id(handle))
                    if d is None:
                        deleted[id(handle)] = [self._kv[name][0], 1, key, key]
                    else:
                        d[1] += 1
                        if key < d[2]:
                            d[2] = key
                        if key > d[3]:
                            d[3] = key
                else:
                    wb.put(key, value, handle)
            for t, region in grown.values():
                wb.put(b"region/" + t.schema.name.encode() + b"/" + region.start,
                       C.pack([region.id, region.size]))
            try:
                self._db.write(wb)
            except BaseException:  # nothing was written (disk full...): sizes as they were
                for region, size in sizes.values():
                    region.size = size
                if iters:  # counts of folds that did not happen: check those rows again
                    self._since_fold = array.array("h", [FOLD_AT - 1]) * _BUCKETS
                raise
            self._note_writes(deleted)
            for t, region in grown.values():
                if region.size > t.schema.split_size and region in t.regions:
                    self._split_by_size(t, region)

    def _fold_pending(self, it: Any, wb: Any, handle: Any, view: Any, fo: Any, prefix: bytes,
                      value: bytes, deleted: dict[int, list], seq: int
                      ) -> tuple[bytes, int, int]:
        """The segment to write for `value`, a new segment of the row at `prefix` whose count
        says it is time to fold: the row's segments folded with it (their keys deleted in `wb`,
        noted in `deleted`), else `value` itself (the row has no other segment, or FOLD_RATIO).
        Returns (segment, the row's count after the write, bytes of segments deleted)."""
        keys, segs = _row_segments(it, prefix)
        n = len(segs) + 1
        if n < 2:
            return value, n, 0
        big = max(len(value), max(map(len, segs)))
        rest = len(value) + sum(map(len, segs)) - big
        if rest * FOLD_RATIO < big:  # a few small changes to a big row: not worth a rewrite yet
            wait = (big // FOLD_RATIO - rest) // max(rest // (n - 1), 1) + 1
            return value, FOLD_AT - min(wait, _WAIT_MAX), 0
        ttl = fo.time_to_live
        floor = now_ms() - ttl * 1000 if ttl != FOREVER else -1
        folded = C.fold(C.merge_segments([value] + segs, None), fo.max_versions, floor)
        freed = 0
        for key, seg in zip(keys, segs):
            wb.delete(key, handle)
            freed += len(key) + len(seg)
        d = deleted.get(id(handle))
        if d is None:
            deleted[id(handle)] = [view, len(keys), keys[0], keys[-1]]
        else:
            d[1] += len(keys)
            if keys[0] < d[2]:
                d[2] = keys[0]
            if keys[-1] > d[3]:
                d[3] = keys[-1]
        # the next fold at FOLD_AT - jitter segments: start the count that much higher
        jitter = min((seq * 0x9E3779B1 >> 20) % 3, FOLD_AT - 2)  # seq's steps may be even
        return folded if folded is not None else C.EMPTY_BASE, 1 + jitter, freed
