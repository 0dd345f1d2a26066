"""The embedded backend: HBase's data model in one RocksDB database in a folder.

One RocksDB column family per (table, family) holds that family's row segments (see cells.py);
the `default` column family holds the catalog (table schemas, region boundaries and sizes).
Writes are serialised by one lock (RocksDB's write path is not the bottleneck from Python, and a
single writer makes read-modify-write steps such as index maintenance and counters atomic);
reads run concurrently and see either all or none of any write.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import json
import os
import shutil
import threading
import time
import weakref
from contextlib import contextmanager
from typing import Any, Iterator

import rocksdict as rd

from .. import errors
from . import cells as C
from .api import BaseStore, Capabilities
from .base import Mutation, Region, SplitListener, now_ms
from .kv import KeyValueTables
from .rocks import (
    check_manifest, checked_items, close_all, create_column_family, mapped, shadow_folder,
    translate, verify_end, writable,
)
from .schema import FOREVER, FamilyOptions, TableSchema, split_column

__all__ = ["EmbeddedStore"]

# HBase compression names -> RocksDB's (a mutable column-family option, re-applied on open)
_COMPRESSION = {"NONE": "kNoCompression", "GZ": "kZlibCompression", "SNAPPY": "kSnappyCompression",
                "LZ4": "kLZ4Compression", "ZSTD": "kZSTD", "BZIP2": "kBZip2Compression"}
COMPACT_AFTER = 16  # a row read with more segments than this in one family is folded
_MAX_SEQ_KEY = b"\xff" * 8


def _cf_name(table: str, family: bytes) -> str:
    return f"t/{table}/{family.decode()}"


_MARKERS = (C.DELETE_COLUMNS, C.DELETE_FAMILY)  # a segment's kind: msgpack fixint at byte 1


def _live_size(segments: list[bytes], key_len: int, fo: FamilyOptions, floor: int) -> int:
    """Bytes one row's segments in a family would take once folded (0: nothing lives)."""
    if len(segments) == 1 and segments[0][1] not in _MARKERS and floor < 0:
        return key_len + len(segments[0])  # one plain segment: already what a fold leaves
    folded = C.fold(C.merge_segments(segments, None), fo.max_versions, floor)
    return 0 if folded is None else key_len + len(folded)


def _segments_at(it, prefix: bytes) -> list[bytes]:
    """The segments of the row whose keys start with `prefix`, read through a reused iterator."""
    it.seek(prefix)
    segs = []
    while it.valid():
        if not it.key().startswith(prefix):
            break
        segs.append(it.value())
        it.next()
    else:
        it.status()  # invalid at an error, not at the end: raise it (rocks.py translates)
    return segs


class _Table:
    """An open table: its schema, family handles and regions (kept sorted by start key)."""

    __slots__ = ("schema", "fams", "regions", "starts")

    def __init__(self, schema: TableSchema, fams: dict, regions: list[Region]):
        self.schema = schema
        self.fams = fams  # family -> (Rdict view, ColumnFamily handle, FamilyOptions)
        self.regions = regions
        self.starts = [r.start for r in regions]

    def region_of(self, row: bytes) -> Region:
        return self.regions[bisect.bisect_right(self.starts, row) - 1]


class EmbeddedStore(KeyValueTables, BaseStore):
    """A store folder: tables, regions and cells on RocksDB."""

    # one writer process; reads opened together under the write lock see one instant
    capabilities = Capabilities(shared=False, follows_splits=False, verified_index_writes=False,
                                snapshot_reads=True)

    @mapped
    def __init__(self, path: str | os.PathLike, *, create: bool = True, read_only: bool = False,
                 sync: bool = False, block_cache_mb: int = 256):
        self.path = os.fspath(path)
        self.read_only = read_only
        self._engine_error: errors.HibaseError | None = None  # the first fatal one (rocks.py)
        self._shadow: str | None = None
        self._lock = threading.RLock()
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
        wo = rd.WriteOptions()
        wo.sync = sync  # the WAL reaches the OS on every write, so a killed process loses nothing
        self._db.set_write_options(wo)
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
        if self.read_only:
            raise errors.StoreReadOnly("the store was opened read-only", self.path)
        if self._db is None:
            raise errors.BackendUnavailable("the store is closed")

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

    # -- reads -------------------------------------------------------------------------------
    def _plan(self, t: _Table, columns: list[bytes] | None) -> list[tuple]:
        """(family options, Rdict view, wanted columns or None) per family to read."""
        if columns is None:
            return [(fo, view, None) for view, _, fo in t.fams.values()]
        wanted: dict[bytes, set[bytes] | None] = {}
        for col in columns:
            fam, qual = split_column(col)
            t.schema.check_family(fam)
            # HBase's Get/Scan addFamily / addColumn, in order: b"f" or b"f:" (happybase's
            # docs) asks for the whole family; a column after it narrows the family to the
            # columns named from then on (real HBase: [f, f:a] reads f:a only, [f:a, f] all f)
            if not qual:
                wanted[fam] = None
            elif wanted.get(fam) is None:
                wanted[fam] = {col}
            else:
                wanted[fam].add(col)  # type: ignore[union-attr]
        out = []
        for fam, cols in wanted.items():
            view, _, fo = t.fams[fam]
            out.append((fo, view, None if cols is None else frozenset(cols)))
        return out

    @contextmanager
    def _views(self, plan: list[tuple], open_reader: Any) -> Iterator[list[tuple]]:
        """(family options, open_reader(view), wanted) per family, all at one instant.

        A RocksDB iterator reads the database as of its creation, so iterators created together
        under the write lock see every write to all families or none of it. (Snapshots cannot do
        this: rocksdict's Snapshot.iter() and .items() read live data, only its get() is pinned.)
        """
        if len(plan) <= 1:
            yield [(fo, open_reader(view), wanted) for fo, view, wanted in plan]
            return
        with self._lock:
            readers = [(fo, open_reader(view), wanted) for fo, view, wanted in plan]
        yield readers

    @staticmethod
    def _select(out: dict, cells: dict, fo: FamilyOptions, timestamp: int | None,
                versions: int, now: int) -> None:
        ttl_floor = now - fo.time_to_live * 1000 if fo.time_to_live != FOREVER else -1
        maxv = fo.max_versions
        for col, vs in cells.items():
            if len(vs) > 1:
                vs.sort(reverse=True)
                if len(vs) > maxv:
                    del vs[maxv:]
            if ttl_floor >= 0:
                vs = [x for x in vs if x[0] >= ttl_floor]
            if timestamp is not None:
                vs = [x for x in vs if x[0] < timestamp]
            if vs:
                out[col] = vs[:versions] if len(vs) > versions else vs

    @mapped
    def read_row(self, table: str, row: bytes, columns: list[bytes] | None = None,
                 timestamp: int | None = None, versions: int = 1) -> dict[bytes, list]:
        """{b"f:q": [(ts, value), ...newest first]} of one row; {} when absent."""
        t = self.table(table)
        prefix = C.row_prefix(row)
        out: dict[bytes, list] = {}
        now = now_ms()
        with self._views(self._plan(t, columns), lambda view: view.iter()) as views:
            for fo, it, wanted in views:
                segs = _segments_at(it, prefix)
                if segs:
                    self._select(out, C.merge_segments(segs, wanted), fo, timestamp, versions, now)
                    if len(segs) > COMPACT_AFTER and not self.read_only:
                        self._compact_row(t, fo, row)
        return out

    def read_latest(self, table: str, row: bytes, columns: list[bytes] | None = None,
                    with_ts: bool = True) -> dict:
        """{b"f:q": (ts, value)} of the newest version of each cell of one row ({} if absent),
        or {b"f:q": value} with with_ts=False: the fast path of row(), rows() and queries."""
        t = self._tables.get(table) or self.table(table)
        if columns is not None or len(t.fams) != 1:
            cells = self.read_latest_many(table, [row], columns)[0]
            return cells if with_ts else {c: tv[1] for c, tv in cells.items()}
        # one family, every column: the hot path of Table.row(), kept free of generality
        view, _, fo = next(iter(t.fams.values()))
        prefix = C.row_prefix(row)
        segs = []
        for key, value in view.items(from_key=prefix):
            if not key.startswith(prefix):
                break
            segs.append(value)
        else:
            verify_end(view, key if segs else None, prefix)
        if not segs:
            return {}
        if len(segs) > COMPACT_AFTER and not self.read_only:
            self._compact_row(t, fo, row)
        if with_ts or fo.time_to_live != FOREVER:
            cells = C.merge_latest(segs, None)
            if fo.time_to_live != FOREVER:
                floor = now_ms() - fo.time_to_live * 1000
                cells = {c: tv for c, tv in cells.items() if tv[0] >= floor}
            return cells if with_ts else {c: tv[1] for c, tv in cells.items()}
        return C.merge_values(segs)

    @mapped
    def read_latest_many(self, table: str, rows: list[bytes], columns: list[bytes] | None = None,
                         with_ts: bool = True) -> list[dict]:
        """read_latest for many rows, one iterator per family for all of them, visiting the
        rows in key order (neighbouring seeks share blocks) and answering in the given order."""
        t = self._tables.get(table) or self.table(table)
        plan = self._plan(t, columns)
        out: list[dict] = [{} for _ in rows]
        now = now_ms()
        order = sorted(range(len(rows)), key=rows.__getitem__) if len(rows) > 1 else [0] * len(rows)
        with self._views(plan, lambda view: view.iter()) as views:
            for fo, it, wanted in views:
                ttl = fo.time_to_live
                floor = now - ttl * 1000 if ttl != FOREVER else -1
                merge = C.merge_latest if with_ts or floor >= 0 else C.merge_values
                for i in order:
                    row = rows[i]
                    segs = _segments_at(it, C.row_prefix(row))
                    if not segs:
                        continue
                    cells = merge(segs, wanted)
                    if floor >= 0:
                        cells = {c: tv for c, tv in cells.items() if tv[0] >= floor}
                        if not with_ts:
                            cells = {c: tv[1] for c, tv in cells.items()}
                    if out[i]:
                        out[i].update(cells)
                    else:
                        out[i] = cells
                    if len(segs) > COMPACT_AFTER and not self.read_only:
                        self._compact_row(t, fo, row)
        return out

    def scan_latest(self, table: str, start: bytes | None = None, stop: bytes | None = None,
                    columns: list[bytes] | None = None, reverse: bool = False,
                    with_ts: bool = True) -> Iterator[tuple[bytes, dict]]:
        """Like scan(), with only the newest version of each cell as (ts, value), or as the
        value alone with with_ts=False."""
        t = self.table(table)
        plan = self._plan(t, columns)
        now = now_ms()
        first, open_items = self._range_opener(start, reverse)
        with self._views(plan, open_items) as views:
            floors = [now - fo.time_to_live * 1000 if fo.time_to_live != FOREVER else -1
                      for fo, _, _ in views]
            row_of_key = C.row_of_key
            if len(views) == 1 and floors[0] < 0:
                _, items, wanted = views[0]
                merge = C.merge_latest if with_ts else C.merge_values
                for prefix, cells in self._family_rows(items, wanted, stop, reverse, merge):
                    yield row_of_key(prefix + _MAX_SEQ_KEY), cells
                return
            if not with_ts:
                for row, cells in self.scan_latest(table, start, stop, columns, reverse):
                    yield row, {c: tv[1] for c, tv in cells.items()}
                return
            streams = [self._family_rows(items, wanted, stop, reverse, C.merge_latest)
                       for _, items, wanted in views]
            tagged = [((p, j, c) for (p, c), j in zip(s, itertools.repeat(i)))
                      for i, s in enumerate(streams)]
            merged = heapq.merge(*tagged, key=lambda x: x[0], reverse=reverse)
            cur, out = None, {}
            for prefix, i, cells in merged:
                if prefix != cur:
                    if out:
                        yield row_of_key(cur + _MAX_SEQ_KEY), out  # type: ignore[operator]
                    cur, out = prefix, {}
                floor = floors[i]
                out.update(cells if floor < 0 else
                           {c: tv for c, tv in cells.items() if tv[0] >= floor})
            if out:
                yield row_of_key(cur + _MAX_SEQ_KEY), out  # type: ignore[operator]

    @staticmethod
    def _range_opener(start: bytes | None, reverse: bool) -> tuple[bytes | None, Any]:
        """Where a scan starts, and a function opening a family's (key, value) stream there."""
        if reverse:
            first = C.row_prefix(start) + _MAX_SEQ_KEY if start else None
            return first, lambda view: checked_items(view, first, True)
        first = C.row_prefix(start) if start else None
        return first, lambda view: checked_items(view, first)

    def scan(self, table: str, start: bytes | None = None, stop: bytes | None = None,
             columns: list[bytes] | None = None, timestamp: int | None = None,
             versions: int = 1, reverse: bool = False) -> Iterator[tuple[bytes, dict]]:
        """Rows in [start, stop) (reverse: from start down to, not including, stop)."""
        t = self.table(table)
        plan = self._plan(t, columns)
        now = now_ms()
        first, open_items = self._range_opener(start, reverse)
        with self._views(plan, open_items) as views:
            streams = [self._family_rows(items, wanted, stop, reverse)
                       for _, items, wanted in views]
            fos = [fo for fo, _, _ in views]
            if len(streams) == 1:
                fo = fos[0]
                select = self._select
                for prefix, cells in streams[0]:
                    out: dict[bytes, list] = {}
                    select(out, cells, fo, timestamp, versions, now)
                    if out:
                        yield C.row_of_key(prefix + _MAX_SEQ_KEY), out
                return
            # bind each stream's family index now (a bare generator would see the last i)
            tagged = [((p, j, c) for (p, c), j in zip(s, itertools.repeat(i)))
                      for i, s in enumerate(streams)]
            merged = heapq.merge(*tagged, key=lambda x: x[0], reverse=reverse)
            cur, out = None, {}
            for prefix, i, cells in merged:
                if prefix != cur:
                    if out:
                        yield C.row_of_key(cur + _MAX_SEQ_KEY), out  # type: ignore[operator]
                    cur, out = prefix, {}
                self._select(out, cells, fos[i], timestamp, versions, now)
            if out:
                yield C.row_of_key(cur + _MAX_SEQ_KEY), out  # type: ignore[operator]

    @staticmethod
    def _family_rows(items: Any, wanted: frozenset | None, stop: bytes | None,
                     reverse: bool, merge: Any = C.merge_segments
                     ) -> Iterator[tuple[bytes, dict]]:
        """(row prefix, merged cells) for each row of one family's (key, value) `items`, opened
        at the range's start, up to `stop`."""
        if reverse:
            bound = C.row_prefix(stop) + _MAX_SEQ_KEY if stop else None
        else:
            bound = C.row_prefix(stop) if stop else None
        cur = None
        segs: list[bytes] = []
        for key, value in items:
            prefix = key[:-8]
            if prefix != cur:
                if bound is not None and (key <= bound if reverse else key >= bound):
                    break
                if segs:
                    cells = merge(segs if not reverse else segs[::-1], wanted)
                    if cells:
                        yield cur, cells  # type: ignore[misc]
                cur, segs = prefix, []
            segs.append(value)
        if segs:
            cells = merge(segs if not reverse else segs[::-1], wanted)
            if cells:
                yield cur, cells  # type: ignore[misc]

    # -- writes ------------------------------------------------------------------------------
    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Hold the single-writer lock across a read-modify-write (index upkeep, counters)."""
        with self._lock:
            yield

    def apply(self, mutations: list[Mutation]) -> None:
        """Write mutations (possibly of several tables) in one atomic batch."""
        if mutations:
            with self._lock:
                self.commit(self.prepare(mutations))

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
            for name, key, value in kv_writes:
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

    def _split_by_size(self, t: _Table, region: Region) -> None:
        """Split `region` at its middle while it holds more live bytes than the table's
        split_size, then its halves the same way: one big batch ends in regions under
        split_size, as the same rows put one by one would."""
        limit = t.schema.split_size
        pending = [region]
        while pending:
            r = pending.pop()
            if r in t.regions and self._split(t, r, None, limit):
                i = t.regions.index(r) if r in t.regions else t.starts.index(r.start)
                pending += [x for x in t.regions[i:i + 2] if x.size > limit]


    @mapped
    def _compact_row(self, t: _Table, fo: FamilyOptions, row: bytes,
                     single: bool = False) -> None:
        """Fold one row's segments in one family into a single segment (`single`: rewrite a lone
        segment too, dropping what it holds that is dead: delete markers, expired versions)."""
        fam = next(f for f, (_, _, o) in t.fams.items() if o is fo)
        view, handle, _ = t.fams[fam]
        prefix = C.row_prefix(row)
        with self._lock:
            keys, segs = [], []
            for key, value in checked_items(view, prefix):
                if not key.startswith(prefix):
                    break
                keys.append(key)
                segs.append(value)
            if len(keys) <= (0 if single else 1):
                return
            ttl = fo.time_to_live
            floor = now_ms() - ttl * 1000 if ttl != FOREVER else -1
            folded = C.fold(C.merge_segments(segs, None), fo.max_versions, floor)
            if folded == segs[0] and len(keys) == 1:
                return
            wb = rd.WriteBatch(raw_mode=True)
            for key in keys[1:]:
                wb.delete(key, handle)
            if folded is None:
                wb.delete(keys[0], handle)
            else:
                wb.put(keys[0], folded, handle)  # keeps the newest segment's place in order
            self._db.write(wb)

    @mapped
    def compact(self, table: str) -> int:
        """Fold every row with more than one segment, and drop lone delete markers and (in
        families with a TTL) expired versions, as HBase's major compaction; returns the rows
        folded."""
        self._check_writable()
        t = self.table(table)
        folded = 0
        markers = (C.DELETE_COLUMNS, C.DELETE_FAMILY)
        for fam, (view, _, fo) in list(t.fams.items()):
            ttl = fo.time_to_live != FOREVER
            cur, n, rows, lone_dead = None, 0, [], False
            for key, value in checked_items(view):
                prefix = key[:-8]
                if prefix != cur:
                    if n > 1 or lone_dead:
                        rows.append(cur)
                    cur, n = prefix, 0
                    lone_dead = ttl or value[1] in markers  # [kind, ...]: a msgpack fixarray
                n += 1
            if n > 1 or lone_dead:
                rows.append(cur)
            for prefix in rows:
                self._compact_row(t, fo, C.row_of_key(prefix + _MAX_SEQ_KEY), single=True)
            folded += len(rows)
        return folded

    # -- regions -----------------------------------------------------------------------------
    def regions(self, table: str) -> list[Region]:
        return list(self.table(table).regions)

    def add_split_listener(self, listener: SplitListener) -> None:
        """Run `listener(table, parent, left, right, batch)` inside every split, before commit:
        what it adds to `batch` (a rocksdict WriteBatch) commits atomically with the split."""
        self._split_listeners.append(listener)

    @mapped
    def split(self, table: str, row: bytes | None = None) -> bool:
        """Split the region holding `row` at `row`, or every region at its middle row (HBase's
        admin split). Returns whether any region split."""
        with self._lock:
            self._check_writable()
            t = self.table(table)
            if row is not None:
                return self._split(t, t.region_of(row), row)
            return any([self._split(t, r, None) for r in list(t.regions)])

    def _middle_row(self, t: _Table, region: Region) -> tuple[bytes | None, int, int]:
        """The first row at or past half of the region's live bytes (every family counted), the
        live bytes before it, and the region's live bytes now.

        Live bytes are what a compaction would leave: a row with several segments counts as its
        folded segment (old versions over max_versions, deleted and expired cells dropped), so
        overwrites do not split a region whose data has not grown (3,000 rows updated in place
        had made 16 regions of 64 KB out of 180 KB of live data)."""
        lo = C.row_prefix(region.start)
        hi = C.row_prefix(region.end) if region.end else None
        by_row: dict[bytes, int] = {}
        now = now_ms()
        for view, _, fo in t.fams.values():
            floor = now - fo.time_to_live * 1000 if fo.time_to_live != FOREVER else -1
            cur, segs, key_len = None, [], 0
            for key, value in checked_items(view, lo):
                if hi is not None and key >= hi:
                    break
                prefix = key[:-8]
                if prefix != cur:
                    if cur is not None:
                        by_row[cur] = by_row.get(cur, 0) + _live_size(segs, key_len, fo, floor)
                    cur, segs = prefix, []
                segs.append(value)
                key_len = len(key)
            if cur is not None:
                by_row[cur] = by_row.get(cur, 0) + _live_size(segs, key_len, fo, floor)
        by_row = {p: n for p, n in by_row.items() if n}
        sizes = sorted(by_row.items())
        total = sum(by_row.values())
        if len(sizes) < 2:
            return None, 0, total
        before = 0
        for i, (prefix, size) in enumerate(sizes):
            if i and before * 2 >= total:
                return C.row_of_key(prefix + _MAX_SEQ_KEY), before, total
            before += size
        return C.row_of_key(sizes[-1][0] + _MAX_SEQ_KEY), before - sizes[-1][1], total

    def _split(self, t: _Table, region: Region, at: bytes | None, min_size: int = 0) -> bool:
        """Split `region` at `at` (None: its middle row, only if it holds over `min_size`
        bytes now: region.size counts bytes written, which folding and deletes shrink)."""
        if at is None:
            at, left_size, total = self._middle_row(t, region)
            if at is None or total <= min_size:
                # re-measured (persisted with the region's next write); a region that cannot
                # split (one big row) is measured again only after min_size / 2 more bytes, not
                # on every write
                region.size = min(total, min_size // 2) if min_size else total
                return False
            region.size = total
        else:
            if at == region.start or not region.contains(at):
                return False
            left_size = region.size // 2
        name = t.schema.name.encode()
        rid = max(time.time_ns() // 1000, max(r.id for r in t.regions) + 1)
        left = Region(t.schema.name, region.start, at, rid, left_size)
        right = Region(t.schema.name, at, region.end, rid + 1, max(region.size - left_size, 0))
        wb = rd.WriteBatch(raw_mode=True)
        for listener in self._split_listeners:
            listener(t.schema.name, region, left, right, wb)
        wb.put(b"region/" + name + b"/" + left.start, C.pack([left.id, left.size]))
        wb.put(b"region/" + name + b"/" + right.start, C.pack([right.id, right.size]))
        self._db.write(wb)
        i = t.regions.index(region)
        t.regions[i:i + 1] = [left, right]
        t.starts = [r.start for r in t.regions]
        return True

    def family_handle(self, table: str, family: bytes) -> Any:
        """The RocksDB column-family handle of a table's family (for split listeners)."""
        return self.table(table).fams[family][1]

    def rocksdb_views(self, kv: bool = True, table: str | None = None) -> dict[str, Any]:
        """The RocksDB column-family views of the store by name, for benchmarks and
        diagnostics (properties, sizes): "table/family" for table families (only `table`'s if
        given), then the key-value tables by their own names unless kv=False."""
        with self._lock:
            out = {f"{name}/{fam.decode()}": view for name, t in self._tables.items()
                   if table is None or name == table for fam, (view, _, _) in t.fams.items()}
            if kv:
                out.update((name, view) for name, (view, _) in self._kv.items())
        return out

    def disk_size(self) -> int:
        """Bytes the store folder takes on disk."""
        total = 0
        for root, _, files in os.walk(self.path):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except FileNotFoundError:  # deleted by a compaction meanwhile
                    pass
        return total

    @mapped
    def flush(self) -> None:
        """Flush memtables to SST files (used before measuring size on disk)."""
        with self._lock:
            self._db.flush()
            for name in self._tables:
                for view, _, _ in self._tables[name].fams.values():
                    view.flush()
