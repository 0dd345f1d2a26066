"""Key-value tables of the HBase backend (index entries, value tables, routing filters): the
HBase table `hibase_kv<name>`, family `v` (1 version), one column `v:v`, values stored as
written (the index layer's verified / unverified marks included: index/verified.py).

A table of counts made with `create_kv(name, counts_in=home)` (the index layer's value tables)
has no HBase table of its own: its counts live in family `c` of `home`'s HBase table, in rows
keyed by the value key (never equal to an entry's key, which is a value key followed by a
rowkey). So a write's entries and counts go out in one mutateRows. Which table holds whose
counts is recorded in the catalog (`kv/<name>` -> home), so the store needs no names.
A count is the sum of that row's cells, one per writer: each store writes only its own cell
(`c:` + 8 random bytes, a new one per writer generation) and remembers what it holds, so a
CountDelta is one blind put of remembered + delta (no read, and no update lost to another
client adding to the same count at once); an outright count n puts n minus the other cells
(one read). A cell is never deleted: a count of 0 or less reads as absent. A cell holds the
writer's (count, pending) totals (base.count_settled: pending is the writer's changes begun
and not finished), encoded as base.encode_count.
A count cell is put with an explicit timestamp, above every earlier one of its writer, in its own
mutateRowsTs beside the entries' call (both in flight together): a call that timed out
on hibase's side may still be retried by HBase's Thrift server (its client rides out a region
away for minutes) and land after the writer's later totals, and only the timestamp keeps that
stale total from overwriting them. Other writes take the timestamp their caller gives
(`write_kv(..., ts=)`: the verified protocol's phases, index/commit.py), else HBase's."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from ... import errors
from ..base import CountDelta, KVWrite, decode_count, decode_pending, encode_count, now_ms
from .rpc import SCAN_CHUNK, Rpc

__all__ = ["HBaseKeyValueTables", "KV_PREFIX", "META_TABLE", "META_COL"]

KV_PREFIX = "hibase_kv"
_KV_COL = b"v:v"
_COUNT_FAM = b"c"
META_COL = b"m:v"
META_TABLE = "hibase_meta"
# rows per multi-get when many rows are fetched: chunks go out in parallel (store.rpc.parallel)
_FETCH_CHUNK = 250
# counts this store remembers for its own cell before it starts a new one (a new writer)
_REMEMBERED = 100_000


@contextmanager
def _count_family() -> Iterator[None]:
    """Around reads and writes of count cells: an index table made before counts moved into
    it has no family c, which is said plainly."""
    try:
        yield
    except errors.FamilyNotFound:
        raise errors.BackendError(
            "an index table made by an older hibase (value counts had tables of their own): "
            "drop the table's indexes and create them again") from None


def _encoded(n: tuple[int, int]) -> bytes | None:
    """A summed (count, pending) as value tables give it: absent unless the count is above 0
    (a count is never below the rows, pending or not)."""
    return encode_count(*n) if n[0] > 0 else None


def _count_of(cells: dict[bytes, tuple[int, bytes]], but: bytes | None = None
              ) -> tuple[int, int]:
    """The sum of a count row's cells, (count, pending) (leaving out column `but`)."""
    n = p = 0
    for c, (_, v) in cells.items():
        if c != but and c.startswith(_COUNT_FAM + b":"):
            n += decode_count(v)
            p += decode_pending(v)
    return n, p


class _HBaseRangeReader:
    """kv_reader's answer on HBase: each range is its own bounded scanner (stop row set,
    scanner caching), streamed in chunks; nothing past a range's stop is read. HBase reads are
    no snapshot across calls (callers that need one check `layout_token` around them)."""

    __slots__ = ("_store", "_name")

    def __init__(self, store: Any, name: str):
        self._store, self._name = store, name

    def scan(self, start: bytes, stop: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        return self._store.kv_scan(self._name, start, stop)


class HBaseKeyValueTables:
    """Mixed into HBaseStore, which provides rpc, _meta_put, _create_hbase_table,
    _drop_hbase_table, _check_writable, _kv, _lock."""

    # key-value table -> the key-value table whose HBase table holds its counts (family c),
    # None for a table of values
    _kv: dict[str, str | None]
    _lock: Any
    T: Any

    if TYPE_CHECKING:  # HBaseStore's (checked by mypy)
        rpc: Rpc
        read_only: bool

        def _check_writable(self) -> None: ...
        def _meta_put(self, key: bytes, value: bytes | None) -> None: ...
        def _create_hbase_table(self, name: str, families: dict[bytes, Any]) -> None: ...
        def _drop_hbase_table(self, name: str) -> None: ...
    # this writer's count cell: (column, {(value table, key): the (count, pending) it holds})
    _cell: tuple[bytes, dict]
    _count_ts: int  # the last timestamp this writer's count cell was put with

    def _new_writer(self) -> None:
        """Start a new count cell: what the old one holds stays in the sums, never touched
        again. Called when what it holds may be unknown (a failed write, a dropped table,
        another client's catalog change) or too much to remember."""
        self._cell = (_COUNT_FAM + b":" + os.urandom(8), {})
        self._count_ts = 0

    def _next_count_ts(self) -> int:
        """A timestamp for this writer's count cell above every one it used (module docstring)."""
        self._count_ts = max(now_ms(), self._count_ts + 1)
        return self._count_ts

    def _kv_check(self, name: str) -> None:
        if name not in self._kv:
            # another client may have created it since we opened
            got = self.rpc.get_raw(META_TABLE, [b"kv/" + name.encode()], [META_COL])[0]
            if not got:
                raise errors.TableNotFound(f"no key-value table {name!r}")
            self._kv[name] = got[META_COL][1].decode() or None

    def _count_home(self, name: str) -> str | None:
        """The key-value table whose HBase table holds table `name`'s counts; None when
        `name` is no table of counts."""
        return self._kv.get(name)

    def _kv_hbase(self, name: str) -> str:
        """The HBase table of key-value table `name` (a table of counts: its home's)."""
        return KV_PREFIX + (self._kv.get(name) or name)

    def kv_tables(self) -> list[str]:
        return sorted(self._kv)

    def create_kv(self, name: str, counts_in: str | None = None) -> None:
        """A key-value table; `counts_in`: a table of counts (CountDelta writes, summed reads)
        kept in that key-value table's HBase table (family c), made first."""
        with self._lock:
            if name in self._kv:
                if counts_in is not None and self._kv[name] != counts_in:
                    # recorded by an older hibase, which knew where counts lived by name and
                    # wrote no home: the one given is the one that older code used
                    self._kv[name] = counts_in
                    if not self.read_only:
                        self._meta_put(b"kv/" + name.encode(), counts_in.encode())
                return
            self._check_writable()
            if counts_in is not None:
                self._kv_check(counts_in)
            else:
                try:  # family c: any key-value table can hold another's counts
                    self._create_hbase_table(KV_PREFIX + name, {b"v": 1, _COUNT_FAM: 1})
                except errors.TableExists:
                    pass
            self._meta_put(b"kv/" + name.encode(), (counts_in or "").encode())
            self._kv[name] = counts_in

    def drop_kv(self, name: str) -> None:
        with self._lock:
            self._check_writable()
            if name not in self._kv:
                return
            home = self._count_home(name)
            if home is not None:
                if home in self._kv:  # else its index table went first, counts with it
                    try:
                        self._clear_counts(name, None, None)
                    except errors.TableNotFound:
                        pass  # another client dropped the index table
            else:
                self._drop_hbase_table(self._kv_hbase(name))
            self._new_writer()
            self._meta_put(b"kv/" + name.encode(), None)
            self._kv.pop(name, None)

    def _others_share(self, items: list[tuple[str, bytes]]
                      ) -> dict[tuple[str, bytes], tuple[int, int]]:
        """What the other writers' cells add to each (value table, key): one multi-get per
        HBase table."""
        mine = self._cell[0]
        by_table: dict[str, list[tuple[str, bytes]]] = {}
        for item in dict.fromkeys(items):
            by_table.setdefault(self._kv_hbase(item[0]), []).append(item)
        out: dict[tuple[str, bytes], tuple[int, int]] = {}
        for table, its in by_table.items():
            with _count_family():
                got = self.rpc.get_raw(table, [k for _, k in its], [_COUNT_FAM])
            out.update((it, _count_of(cells, mine)) for it, cells in zip(its, got))
        return out

    def _kv_write(self, writes: list[KVWrite],
                  others: dict[tuple[str, bytes], tuple[int, int]] | None = None,
                  ts: int | None = None) -> None:
        """Write (name, key, value-or-None) in one mutateRows(Ts: at `ts`, if given) per HBase
        table and chunk, counts in one mutateRowsTs per HBase table and chunk (all in flight
        together), as in the module docstring (`others`: the other writers' share of each
        count written outright, when the caller has read it)."""
        T = self.T
        column, held = self._cell
        if others is None:
            outright = [(n, k) for n, k, v in writes
                        if not isinstance(v, CountDelta) and self._count_home(n) is not None]
            others = self._others_share(outright) if outright else {}
        rows: dict[str, dict[bytes, dict[bytes, Any]]] = {}  # entries (HBase's timestamps)
        count_rows: dict[str, dict[bytes, dict[bytes, Any]]] = {}  # counts (this writer's)
        now: dict[tuple[str, bytes], tuple[int, int]] = {}
        for name in {name for name, _, _ in writes}:
            self._kv_check(name)
        for name, key, value in writes:
            if self._count_home(name) is None:
                col, into = _KV_COL, rows
                m = T.Mutation(column=col, isDelete=True) if value is None else \
                    T.Mutation(column=col, value=value, isDelete=False)
            else:
                into = count_rows
                col, item = column, (name, key)
                if isinstance(value, CountDelta):
                    n, p = now.get(item) or held.get(item) or (0, 0)
                    n, p = n + value, p + value.pending
                else:  # outright: settled (the others' pending cancelled here)
                    n, p = others[item]
                    n, p = (0 if value is None else decode_count(value)) - n, -p
                now[item] = (n, p)
                m = T.Mutation(column=col, value=encode_count(n, p), isDelete=False)
            # one key once per call (HBase applies a mutateRows' puts before its deletes):
            # the last write of a cell wins
            into.setdefault(self._kv_hbase(name), {}).setdefault(key, {})[col] = m
        calls: list[tuple[bytes, list, int | None]] = []
        count_ts = self._next_count_ts() if count_rows else None
        for by_table, at in ((rows, ts), (count_rows, count_ts)):
            for table, by_row in by_table.items():
                batches = [T.BatchMutation(row=k, mutations=list(ms.values()))
                           for k, ms in by_row.items()]
                calls += [(table.encode(), batches[i:i + SCAN_CHUNK], at)
                          for i in range(0, len(batches), SCAN_CHUNK)]

        def send(c: tuple[bytes, list, int | None]) -> None:
            if c[2] is None:
                self.rpc.call("mutateRows", c[0], c[1], {})
            else:
                self.rpc.call("mutateRowsTs", c[0], c[1], c[2], {})

        try:
            with _count_family():  # distinct keys per call: all chunks in flight together
                self.rpc.parallel(send, calls)
        except BaseException:
            if now:  # whether the cell holds the new counts is unknown: leave it
                self._new_writer()
            raise
        if now:
            if self._cell[0] != column:
                return  # a new writer started meanwhile; this one's counts are in the sums
            held.update(now)
            if len(held) > _REMEMBERED:
                self._new_writer()

    def _clear_counts(self, name: str, start: bytes | None, stop: bytes | None) -> None:
        """Counts of value table `name` in [start, stop) to 0 (this writer's cell set to minus
        the others', which the scan reads: their cells are theirs to write)."""
        mine = self._cell[0]
        with _count_family():
            rows = [(key, _count_of(cells, mine)) for key, cells in
                    self.rpc.scan_raw(self._kv_hbase(name), start, stop, [_COUNT_FAM])]
        for i in range(0, len(rows), 20_000):
            part = rows[i:i + 20_000]
            self._kv_write([(name, k, None) for k, _ in part],
                           {(name, k): share for k, share in part})

    def kv_get(self, name: str, keys: list[bytes]) -> list[bytes | None]:
        self._kv_check(name)
        if self._count_home(name) is not None:
            with _count_family():
                got = self.rpc.get_raw(self._kv_hbase(name), list(keys), [_COUNT_FAM])
            return [_encoded(_count_of(cells)) for cells in got]
        got = self.rpc.get_raw(self._kv_hbase(name), list(keys), [_KV_COL])
        return [cells[_KV_COL][1] if _KV_COL in cells else None for cells in got]

    def kv_reader(self, name: str) -> _HBaseRangeReader:
        """Bounded range scans of a key-value table (one scanner per range asked for)."""
        self._kv_check(name)
        return _HBaseRangeReader(self, name)

    def kv_delete_range(self, name: str, start: bytes, stop: bytes | None) -> None:
        with self._lock:
            self._check_writable()
            self._kv_check(name)
            if self._count_home(name) is not None:
                self._clear_counts(name, start or None, stop)
                return
            keys = [k for k, _ in self.rpc.scan_raw(self._kv_hbase(name), start or None, stop,
                                                 [_KV_COL])]
            self._kv_write([(name, k, None) for k in keys])

    def kv_scan(self, name: str, start: bytes | None = None, stop: bytes | None = None,
                reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) for start <= key < stop, ascending (or descending from stop)."""
        self._kv_check(name)
        counts = self._count_home(name) is not None
        table = self._kv_hbase(name)
        col = _COUNT_FAM if counts else _KV_COL
        if reverse:
            # HBase's reversed scan starts at its (inclusive) start row: skip `stop` itself
            # and end at the first key below `start`
            def down() -> Iterator[tuple[bytes, dict]]:
                for k, c in self.rpc.scan_raw(table, stop, None, [col], reverse=True):
                    if start is not None and k < start:
                        return
                    if stop is None or k < stop:
                        yield k, c
            it = down()
        else:
            it = self.rpc.scan_raw(table, start or None, stop, [col])
        if counts:
            with _count_family():
                for key, cells in it:
                    raw = _encoded(_count_of(cells))
                    if raw is not None:
                        yield key, raw
            return
        for key, cells in it:
            if _KV_COL in cells:
                yield key, cells[_KV_COL][1]
