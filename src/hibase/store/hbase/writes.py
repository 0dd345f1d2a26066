"""Writes of the HBase store: timestamps fixed before sending, the state of rows after pending
mutations, and the commit of key-value writes and data rows (a mixin of HBaseStore, which
provides _lock, table(), rpc, _kv_write and the timestamps it hands out). The
verified / unverified order of index entries and data rows is index/commit.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from .. import cells as C
from ..base import KVWrite, Mutation, now_ms
from ..api import Staged
from ..staged import SegmentBatch, prepared_of
from ..schema import TableSchema
from .rpc import SCAN_CHUNK, Rpc

if TYPE_CHECKING:
    from .layout import Layouts


__all__ = ["Writes"]

def _deletes_with_ts(pending: dict[bytes, list[bytes]]) -> bool:
    for segs in pending.values():
        for raw in segs:
            seg = C.unpack(raw)
            if seg[0] in (C.DELETE_COLUMNS, C.DELETE_FAMILY) and seg[1] != C.ALL_VERSIONS:
                return True
    return False



class Writes:
    """stage / commit (see the module docstring)."""

    if TYPE_CHECKING:  # what HBaseStore and its other parts provide (checked by mypy)
        T: Any
        rpc: Rpc
        layouts: Layouts
        _lock: Any
        _last_auto: int  # the highest timestamp stage() gave a mutation
        _after_delete: int  # above the last timestamp stage() gave a delete

        def table(self, name: str) -> Any: ...
        def schema(self, name: str) -> TableSchema: ...
        def _check_writable(self) -> None: ...
        def _kv_write(self, writes: list[KVWrite],
                      others: dict[tuple[str, bytes], tuple[int, int]] | None = None,
                      ts: int | None = None) -> None: ...
        def _versions(self, table: str, row: bytes, columns: list[bytes], ts: int | None,
                      versions: int) -> dict[bytes, list]: ...
        def read_latest_many(self, table: str, rows: list[bytes],
                             columns: list[bytes] | None = None,
                             with_ts: bool = True) -> list[dict]: ...

    def stage(self, mutations: list[Mutation]) -> SegmentBatch:
        """The mutations with their timestamps fixed and encoded as row segments (cells.py),
        so each row's state after them is computed by hibase's merge over HBase's cells
        (SegmentBatch.rows, read by _row_states)."""
        # Real HBase masks every put whose timestamp is not above a delete marker's, even one
        # written after the marker, and its Thrift1 server applies a batch's puts before its
        # deletes. So deletes without a timestamp are sent with one at or above every
        # timestamp this store gave so far, and later puts get one above it: the order of the
        # calls then decides, as the segments below (and the embedded store) assume.
        now = now_ms()
        out = []
        for m in mutations:
            t = self.table(m.table)
            if m.kind == "put":
                if m.ts is None:
                    ts = max(now, self._after_delete)
                    self._last_auto = max(self._last_auto, ts)
                else:
                    ts = m.ts
                m = m._replace(ts=ts)
                segments = list(C.mutation_segments(t.schema.families, m, ts))
            else:
                segments = list(C.mutation_segments(t.schema.families, m, m.ts))
                if m.ts is None:
                    ts = max(now, self._last_auto)
                    m = m._replace(ts=ts)
                    self._last_auto, self._after_delete = ts, ts + 1
            out.append((t, m, segments))
        return SegmentBatch(out, self._row_states)

    def _row_states(self, table: str, items: list[tuple[bytes, dict[bytes, list[bytes]]]],
                    columns: list[bytes] | None) -> list[tuple[dict, dict]]:
        """Newest values of `columns` (None: every column) before and after pending segments
        (per family, newest first): the stored versions are read from HBase (newest only,
        unless a pending delete names a timestamp: then every version, which that delete may
        uncover), folded into one segment, and the pending segments merged over it."""
        by_fam: dict[bytes, set[bytes] | None] = {}
        if columns is None:
            by_fam = dict.fromkeys(self.schema(table).families)
        for col in columns or ():
            by_fam.setdefault(col[:col.index(b":")], set()).add(col)  # type: ignore[union-attr]
        rows = [row for row, _ in items]
        stored = self.read_latest_many(table, rows, columns)
        out = []
        for (row, pending), latest in zip(items, stored):
            before = dict(latest)
            if _deletes_with_ts(pending):
                cells = {c: vs for c, vs in self._versions(
                    table, row, list(latest) if columns is None else columns, None,
                    1 << 30).items()}
            else:
                cells = {c: [tv] for c, tv in latest.items()}
            after: dict = {}
            for fam, cols in by_fam.items():
                wanted = None if cols is None else frozenset(cols)
                mine = {c: vs for c, vs in cells.items() if (
                    c in wanted if wanted is not None else c.startswith(fam + b":"))}
                base = C.fold(mine, 1 << 30, -1) if mine else None
                segs = list(pending.get(fam, ())) + ([base] if base else [])
                if segs:
                    after.update(C.merge_latest(segs, wanted))
            out.append((before, after))
        return out

    def _send(self, prepared: list[tuple[Any, Mutation, list]]) -> None:
        """Data mutations, in order; consecutive ones of one kind, table and timestamp go in
        one mutateRows(Ts) call."""
        T = self.T
        groups: list[tuple[tuple, list]] = []
        for t, m, _ in prepared:
            key = (m.kind, m.table, m.ts)
            if groups and groups[-1][0] == key:
                groups[-1][1].append((t, m))
            else:
                groups.append((key, [(t, m)]))
        for (kind, table, ts), ms in groups:
            batches = []
            for t, m in ms:
                if kind == "put":
                    muts = [T.Mutation(column=c, value=v, isDelete=False)
                            for c, v in m.data.items()]
                else:
                    targets = list(t.schema.families) if m.data is None else \
                        self.rpc.thrift_columns(m.data) or []
                    muts = [T.Mutation(column=c, isDelete=True) for c in targets]
                batches.append(T.BatchMutation(row=m.row, mutations=muts))
            name = table.encode()
            parts = [batches[i:i + SCAN_CHUNK] for i in range(0, len(batches), SCAN_CHUNK)]

            def send(part: list, name: bytes = name, ts: int | None = ts) -> None:
                if ts is None:
                    self.rpc.call("mutateRows", name, part, {})
                else:
                    self.rpc.call("mutateRowsTs", name, part, ts, {})

            if len({b.row for b in batches}) == len(batches):
                self.rpc.parallel(send, parts)  # distinct rows: chunks in flight together
            else:
                for part in parts:  # a row twice at one timestamp: the later must land last
                    send(part)

    def reindex(self, table: str, alias: bytes,
                progress: Any = None) -> int:
        """Server-side build of the index with `alias` (kept by hibase's coprocessor): every
        row of `table` is sent as a put carrying the attribute hibase.reindex, which the
        coprocessor does not apply but answers by writing the row's entry and count from the
        row as stored, under the row's lock, unless the entry exists; so the build never
        races a write (the coprocessor keeps the index from the moment it is `building`).
        Row keys come from one scan per HBase region (`progress(regions done, regions)` after
        each); 1,000 rows per mutateRows. Returns the rows sent."""
        T = self.T
        fam = next(iter(self.schema(table).families))
        mutation = [T.Mutation(column=fam + b":\x00hibase-reindex", value=b"", isDelete=False)]
        attrs = {b"hibase.reindex": alias.hex().encode()}
        name = table.encode()
        sent = 0
        rows: list[bytes] = []

        def send(part: list[bytes]) -> None:
            self.rpc.call("mutateRows", name, [T.BatchMutation(row=r, mutations=mutation)
                                            for r in part], attrs)

        regions = self.layouts.live(table)
        for done, region in enumerate(regions, 1):
            for row, _ in self.rpc.scan_raw(table, region.start or None, region.end or None, None):
                rows.append(row)
                if len(rows) >= 8 * SCAN_CHUNK:
                    self.rpc.parallel(send, [rows[i:i + SCAN_CHUNK]
                                         for i in range(0, len(rows), SCAN_CHUNK)])
                    sent += len(rows)
                    rows = []
            if rows:
                self.rpc.parallel(send, [rows[i:i + SCAN_CHUNK]
                                     for i in range(0, len(rows), SCAN_CHUNK)])
                sent += len(rows)
                rows = []
            if progress:
                progress(done, len(regions))
        return sent

    def write_kv(self, kv_writes: Iterable[KVWrite], ts: int | None = None) -> None:
        """Key-value writes alone (puts, deletes, count deltas); `ts`: the timestamp of their
        puts and deletes (None: HBase's time; count cells keep their own, kv.py)."""
        with self._lock:
            self._check_writable()
            self._kv_write(list(kv_writes), ts=ts)

    def commit(self, staged: Staged | None, kv_writes: Iterable[KVWrite] = ()) -> None:
        """Write key-value writes, then data mutations (separate calls: the order of index
        entries and data rows that keeps readers right is index/commit.py's, which commits
        in phases)."""
        prepared = prepared_of(staged)
        with self._lock:
            self._check_writable()
            self._kv_write(list(kv_writes))
            if prepared:
                self._send(prepared)
