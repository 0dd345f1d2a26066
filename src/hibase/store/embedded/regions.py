"""Regions of the embedded store: splits (by size, or asked for), per-row folding and whole
table compaction, sizes (a mixin of EmbeddedStore, which provides _lock, _db, _tables, table(),
_split_listeners, _check_writable and read_only)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Callable

import rocksdict as rd

from .. import cells as C
from ..base import Region, SplitListener, now_ms
from .rocks import (
    checked_items, mapped,
)
from ..schema import FOREVER, FamilyOptions

from .reads import _MAX_SEQ_KEY
from .tables import Table as _Table

__all__ = ["Regions"]

_MARKERS = (C.DELETE_COLUMNS, C.DELETE_FAMILY)  # a segment's kind: msgpack fixint at byte 1


def _live_size(segments: list[bytes], key_len: int, fo: FamilyOptions, floor: int) -> int:
    """Bytes one row's segments in a family would take once folded (0: nothing lives)."""
    if len(segments) == 1 and segments[0][1] not in _MARKERS and floor < 0:
        return key_len + len(segments[0])  # one plain segment: already what a fold leaves
    folded = C.fold(C.merge_segments(segments, None), fo.max_versions, floor)
    return 0 if folded is None else key_len + len(folded)



class _SplitBatch:
    """A split's SplitBatch on RocksDB: the split's own WriteBatch, key-value tables by their
    column-family handles."""

    def __init__(self, wb: Any, handle: Callable[[str], Any]):
        self._wb, self._handle = wb, handle

    def put(self, kv: str, key: bytes, value: bytes) -> None:
        self._wb.put(key, value, self._handle(kv))

    def delete(self, kv: str, key: bytes) -> None:
        self._wb.delete(key, self._handle(kv))

class Regions:
    """Splits, compaction and sizes (EmbeddedStore's); see the module docstring."""

    if TYPE_CHECKING:  # what EmbeddedStore and its other parts provide (checked by mypy)
        path: str
        _db: Any
        _lock: Any
        _kv: dict[str, tuple[Any, Any]]
        _tables: dict[str, _Table]
        _split_listeners: list[SplitListener]

        def table(self, name: str) -> _Table: ...
        def _check_writable(self) -> None: ...
        def _note_writes(self, deleted: dict[int, list]) -> None: ...

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
            if folded is None and not single:
                # a base readers stop at, rather than a row of tombstones later puts of the
                # row would read through (a major compaction drops it)
                folded = C.EMPTY_BASE
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
            region = t.region_of(row)  # the running size follows the bytes stored
            freed = sum(len(k) + len(v) for k, v in zip(keys, segs))
            region.size = max(region.size - freed + (len(keys[0]) + len(folded) if folded else 0), 0)
            self._note_writes({id(handle): [view, len(keys) - (folded is not None),
                                            keys[0], keys[-1]]})

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
            cur, n, lone_dead = None, 0, False
            rows: list[bytes] = []
            for key, value in checked_items(view):
                prefix = key[:-8]
                if prefix != cur:
                    if cur is not None and (n > 1 or lone_dead):
                        rows.append(cur)
                    cur, n = prefix, 0
                    # [kind, ...]: a msgpack fixarray; an empty base is what a fold left of a
                    # deleted row
                    lone_dead = ttl or value[1] in markers or value == C.EMPTY_BASE
                n += 1
            if cur is not None and (n > 1 or lone_dead):
                rows.append(cur)
            for prefix in rows:
                self._compact_row(t, fo, C.row_of_key(prefix + _MAX_SEQ_KEY), single=True)
            folded += len(rows)
        return folded

    # -- regions -----------------------------------------------------------------------------
    def regions(self, table: str) -> list[Region]:
        return list(self.table(table).regions)

    def servers(self, table: str) -> dict[bytes, str]:
        """Start key -> server of each region: every region of this process's store is on one
        server, "localhost" (as Region.info says)."""
        return {r.start: "localhost" for r in self.table(table).regions}

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
            cur, key_len = None, 0
            segs: list[bytes] = []
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
        batch = _SplitBatch(wb, self._kv_handle)  # type: ignore[attr-defined]
        for listener in self._split_listeners:
            listener(t.schema.name, region, left, right, batch)
        wb.put(b"region/" + name + b"/" + left.start, C.pack([left.id, left.size]))
        wb.put(b"region/" + name + b"/" + right.start, C.pack([right.id, right.size]))
        self._db.write(wb)
        i = t.regions.index(region)
        t.regions[i:i + 1] = [left, right]
        t.starts = [r.start for r in t.regions]
        return True

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
            self._check_writable()
            self._db.flush()
            for name in self._tables:
                for view, _, _ in self._tables[name].fams.values():
                    view.flush()
