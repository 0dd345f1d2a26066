"""Salted tables: the one place stored rowkeys differ from the rowkeys users see.

A table created with salt_buckets=N stores row `k` under `salt_byte(k, N) + k`, so rowkeys
that grow in time (a timestamp prefix) spread over N buckets, each its own region from the
start, instead of all landing on the table's last region. `SaltedStore` wraps a backend and
maps the data-table rowkeys of every Store call in and out: everything above store/ (Table,
where(), SQL, indexes, verify, build, dump/load) sees user rowkeys only, and index entries
carry user rowkeys. A scan is N bucket scans merged in user-rowkey order (read in parallel
threads on HBase, where each is a remote scanner).

The hash is fixed and documented, so any writer can add the byte itself: h = Java's
`Arrays.hashCode(byte[])` (h = 1, then h = 31*h + b over the bytes as signed values, in 32-bit
two's complement), mixed by murmur3's 32-bit finalizer (h ^= h >>> 16; h *= 0x85ebca6b;
h ^= h >>> 13; h *= 0xc2b2ae35; h ^= h >>> 16), salt = |h % N| (Java's remainder, sign of h):
`salt_byte` here, `Salt.bucket` in the coprocessor (io/hibase/Salt.java), golden vectors in
tests/codec_vectors.py."""

from __future__ import annotations

import heapq
import queue
import threading
from contextlib import nullcontext
from types import MethodType
from typing import Any, Iterable, Iterator

from .base import Mutation
from .staged import RowChange

__all__ = ["salt_byte", "salted_key", "SaltedStore", "bucket_ranges"]


def salt_byte(row: bytes, buckets: int) -> int:
    """The bucket (0 .. buckets-1) of user rowkey `row`: |mix(Arrays.hashCode(row)) % buckets|
    (see the module docstring)."""
    h = 1
    for b in row:
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFFFFFF
    # murmur3's 32-bit finalizer: the polynomial hash alone cancels mod a power of two when
    # bytes an odd distance apart grow together (a timestamp and a sequence number: every
    # row of "<ms>#<seq>" in one bucket of 8)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    if h & 0x80000000:
        h = (1 << 32) - h  # |h| of the signed 32-bit value (2^31 stays 2^31, as a long)
    return h % buckets


def salted_key(row: bytes, buckets: int) -> bytes:
    """The stored rowkey of user rowkey `row` in a table of `buckets` salt buckets."""
    return bytes((salt_byte(row, buckets),)) + row


def bucket_ranges(buckets: int, start: bytes | None, stop: bytes | None, reverse: bool
                  ) -> list[tuple[bytes | None, bytes | None]]:
    """The stored-key range of each bucket that holds the user-key range [start, stop)
    (reverse: from start down to stop)."""
    out: list[tuple[bytes | None, bytes | None]] = []
    for b in range(buckets):
        pre = bytes((b,))
        top = bytes((b + 1,)) if b < 255 else None  # above every key of bucket b
        if reverse:
            out.append((pre + start if start else top, pre + stop if stop else pre))
        else:
            out.append((pre + start if start else pre, pre + stop if stop else top))
    return out


class _SaltedStaged:
    """A backend's staged batch as the layers above see it: user rowkeys."""

    __slots__ = ("inner", "_salted")

    def __init__(self, inner: Any, salted: dict[str, int]) -> None:
        self.inner = inner
        self._salted = salted  # table -> buckets, for the salted tables of the batch

    def __len__(self) -> int:
        return len(self.inner)

    def __bool__(self) -> bool:
        return bool(self.inner)

    @property
    def mutations(self) -> list[Mutation]:
        return [m._replace(row=m.row[1:]) if m.table in self._salted else m
                for m in self.inner.mutations]

    def tables(self) -> list[str]:
        return self.inner.tables()

    def rows(self, table: str, columns: list[bytes] | None) -> list[RowChange]:
        changes = self.inner.rows(table, columns)
        if table not in self._salted:
            return changes
        return [c._replace(row=c.row[1:]) for c in changes]


_END = object()


def _prefetched(it: Iterator, depth: int = 2048) -> Iterator:
    """`it` read ahead by a thread of its own (a bounded queue): N remote bucket scans wait
    on the server together instead of one after another."""
    q: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def run() -> None:
        try:
            for item in it:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(_END)
        except BaseException as exc:  # handed to the reader, raised there
            q.put(exc)

    threading.Thread(target=run, daemon=True, name="hibase-salt-scan").start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()  # the reader thread owns `it`: it stops at its next put


class SaltedStore:
    """A backend with the rowkeys of salted tables mapped in and out (see the module
    docstring); every other call and attribute is the backend's own, and isinstance checks
    see the backend's class (`__class__`), so callers that ask "is this HBase?" need not know
    the wrapper."""

    def __init__(self, inner: Any) -> None:
        self.__dict__["inner"] = inner

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self.inner)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if isinstance(value, MethodType) and value.__self__ is self.inner:
            self.__dict__[name] = value  # the backend's method, found once
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # a call this wrapper answers itself is replaced here, where callers find it; any
        # other attribute (state, or a backend method the backend also calls internally) is
        # the backend's, and the copy this wrapper held of it is dropped
        if name in type(self).__dict__:
            self.__dict__[name] = value
        else:
            self.__dict__.pop(name, None)
            setattr(self.inner, name, value)

    def __delattr__(self, name: str) -> None:
        if name in type(self).__dict__ and name in self.__dict__:
            del self.__dict__[name]
        else:
            self.__dict__.pop(name, None)
            delattr(self.inner, name)

    def _buckets(self, table: str) -> int:
        try:
            return self.schema(table).salt_buckets
        except Exception:  # not a table (yet): the backend answers the call as it would
            return 0

    # -- tables --------------------------------------------------------------------------
    def create_table(self, schema: Any) -> None:
        self.inner.create_table(schema)

    def fast_scan_supported(self, table: str) -> bool:
        """Raw-segment scans see stored keys: salted tables take the ordinary scan."""
        return not self._buckets(table) and self.inner.fast_scan_supported(table)

    def scan_pushdown(self, table: str) -> bool:
        """The ScanObserver answers with stored keys: salted tables are read by the client."""
        return not self._buckets(table) and self.inner.scan_pushdown(table)

    # -- rows ----------------------------------------------------------------------------
    def read_row(self, table: str, row: bytes, *args: Any, **kwargs: Any) -> Any:
        n = self._buckets(table)
        return self.inner.read_row(table, salted_key(row, n) if n else row, *args, **kwargs)

    def read_latest(self, table: str, row: bytes, *args: Any, **kwargs: Any) -> Any:
        n = self._buckets(table)
        return self.inner.read_latest(table, salted_key(row, n) if n else row, *args, **kwargs)

    def read_latest_many(self, table: str, rows: list[bytes], *args: Any, **kwargs: Any) -> Any:
        n = self._buckets(table)
        if n:
            rows = [salted_key(r, n) for r in rows]
        return self.inner.read_latest_many(table, rows, *args, **kwargs)

    def scan_latest(self, table: str, start: bytes | None = None, stop: bytes | None = None,
                    columns: list[bytes] | None = None, reverse: bool = False,
                    with_ts: bool = True) -> Iterator[tuple[bytes, dict]]:
        n = self._buckets(table)
        if not n:
            return self.inner.scan_latest(table, start, stop, columns, reverse, with_ts)
        return self._merged(table, n, start, stop, reverse, lambda a, b: self.inner.scan_latest(
            table, a, b, columns, reverse, with_ts))

    def scan(self, table: str, start: bytes | None = None, stop: bytes | None = None,
             columns: list[bytes] | None = None, timestamp: int | None = None,
             versions: int = 1, reverse: bool = False) -> Iterator[tuple[bytes, dict]]:
        n = self._buckets(table)
        if not n:
            return self.inner.scan(table, start, stop, columns, timestamp, versions, reverse)
        return self._merged(table, n, start, stop, reverse, lambda a, b: self.inner.scan(
            table, a, b, columns, timestamp, versions, reverse))

    def _merged(self, table: str, n: int, start: bytes | None, stop: bytes | None,
                reverse: bool, open_scan: Any) -> Iterator[tuple[bytes, dict]]:
        """The N bucket scans of a user-key range, merged in user-key order."""
        if start is not None and stop is not None and start == stop:
            return iter(())
        ranges = bucket_ranges(n, start, stop, reverse)
        remote = self.inner.kind != "embedded"
        with self.inner.write_lock() if not remote else nullcontext():
            # embedded: opened together under the write lock, the scans read one instant
            scans = [open_scan(a, b) for a, b in ranges]
            if remote:
                scans = [_prefetched(s) for s in scans]
            else:
                scans = [_started(s) for s in scans]
        stripped = [((row[1:], cells) for row, cells in s) for s in scans]
        return heapq.merge(*stripped, key=_first, reverse=reverse)

    # -- writes --------------------------------------------------------------------------
    def _salt_mutations(self, mutations: Iterable[Mutation]) -> tuple[list[Mutation],
                                                                      dict[str, int]]:
        out: list[Mutation] = []
        salted: dict[str, int] = {}
        known: dict[str, int] = {}
        for m in mutations:
            n = known.get(m.table)
            if n is None:
                n = known[m.table] = self._buckets(m.table)
            if n and isinstance(m.row, bytes) and m.row:
                salted[m.table] = n
                m = m._replace(row=salted_key(m.row, n))
            out.append(m)
        return out, salted

    def apply(self, mutations: list[Mutation]) -> None:
        self.inner.apply(self._salt_mutations(mutations)[0])

    def stage(self, mutations: list[Mutation]) -> Any:
        inner_mutations, salted = self._salt_mutations(mutations)
        staged = self.inner.stage(inner_mutations)
        return _SaltedStaged(staged, salted) if salted else staged

    def commit(self, staged: Any, kv_writes: Iterable[Any] = ()) -> None:
        if isinstance(staged, _SaltedStaged):
            staged = staged.inner
        self.inner.commit(staged, kv_writes)

    # -- regions -------------------------------------------------------------------------
    def region_of(self, table: str, row: bytes) -> Any:
        n = self._buckets(table)
        return self.inner.region_of(table, salted_key(row, n) if n else row)

    def split(self, table: str, row: bytes | None = None) -> bool:
        n = self._buckets(table)
        return self.inner.split(table, salted_key(row, n) if n and row else row)


def _first(item: tuple[bytes, Any]) -> bytes:
    return item[0]


def _started(it: Iterator) -> Iterator:
    """`it` with its first item read now (an embedded scan takes its snapshot then)."""
    try:
        first = next(it)
    except StopIteration:
        return iter(())

    def chained() -> Iterator:
        yield first
        yield from it
    return chained()
