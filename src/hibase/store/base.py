"""The plain values the store contract speaks in (Mutation, Region, KVWrite, CountDelta and the
count cells, a split listener's types, timestamps), shared by both backends and the layers
above. The contract itself is shared/DESIGN.md and store/api.py (`Store`, `Capabilities`,
`BaseStore`)."""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import Callable, NamedTuple, Protocol

__all__ = ["Mutation", "Region", "SplitListener", "SplitBatch", "now_ms", "LATEST_TIMESTAMP",
           "CountDelta", "KVWrite", "encode_count", "decode_count", "decode_pending",
           "count_settled"]

# HBase's HConstants.LATEST_TIMESTAMP: "now" for a write's timestamp, "every version" for a read
LATEST_TIMESTAMP = (1 << 63) - 1


_COUNT = struct.Struct(">q")
_UNSETTLED = struct.Struct(">qq")


def encode_count(n: int, pending: int = 0) -> bytes:
    """A value table's row count as stored (global and local value tables alike); `pending`:
    changes of it begun and not finished (count_settled), stored only when not 0."""
    return _UNSETTLED.pack(n, pending) if pending else _COUNT.pack(n)


def decode_count(raw: bytes) -> int:
    """The row count a value table holds for one value (an upper bound while unsettled)."""
    return _COUNT.unpack_from(raw)[0]


def decode_pending(raw: bytes) -> int:
    """The changes of a stored count begun and not finished (0: settled)."""
    return _UNSETTLED.unpack(raw)[1] if len(raw) > _COUNT.size else 0


def count_settled(raw: bytes) -> bool:
    """Whether a count read from a value table is exact. A writer of the verified protocol
    (index/commit.py) grows counts before its data and shrinks them after, each change marked
    pending from its first phase to its last: while one is in flight, or after its writer
    died between phases, the count may be above the rows (never below), and answers must
    not be taken from it."""
    return len(raw) <= _COUNT.size


class CountDelta(int):
    """A key-value write that adds to a value table's count instead of replacing it
    (`commit(kv_writes=[(value_table, key, CountDelta(-1))])`): stores apply it without the
    writer reading the count first, so writers in different processes never lose each
    other's updates. A count that reaches 0 or less is gone (reads see no row). `pending`
    adds to the count's unfinished changes (count_settled): +1 where a verified write begins
    a change, -1 where it ends it."""

    pending = 0

    def __new__(cls, n: int, pending: int = 0) -> "CountDelta":
        d = super().__new__(cls, n)
        if pending:
            d.pending = pending
        return d


# A key-value write: (key-value table, key, value); None deletes the key, a CountDelta adds to
# a count (value tables)
KVWrite = tuple[str, bytes, "bytes | CountDelta | None"]


class Mutation(NamedTuple):
    """One row change. kind "put": data = {b"f:q": value}; kind "delete": data = list of
    b"f" / b"f:q" names, or None for the whole row; ts = the cell timestamp (put) or the
    newest timestamp deleted (delete), None for now / every version."""

    kind: str
    table: str
    row: bytes
    data: object
    ts: int | None = None


@dataclass
class Region:
    """A rowkey range [start, end) of a table; b"" as end means "to the end"."""

    table: str
    start: bytes
    end: bytes
    id: int
    size: int = 0

    def contains(self, row: bytes) -> bool:
        return self.start <= row and (not self.end or row < self.end)

    def info(self) -> dict:
        """The shape happybase's Table.regions() returns (Thrift TRegionInfo as a dict)."""
        return {
            "start_key": self.start, "end_key": self.end, "id": self.id,
            "name": b"%s,%s,%d." % (self.table.encode(), self.start, self.id),
            "version": 1, "server_name": b"localhost", "port": 0,
        }


class SplitBatch(Protocol):
    """The writes a split listener adds to a split, to key-value tables named as kv_get and
    kv_scan take them: committed with the split (atomically on the embedded store; on HBase
    the puts before the layout switches, the deletes after)."""

    def put(self, kv: str, key: bytes, value: bytes) -> None: ...

    def delete(self, kv: str, key: bytes) -> None: ...


# Called inside a split, before it is committed: (table, parent, left, right, batch).
SplitListener = Callable[[str, Region, Region, Region, SplitBatch], None]


def now_ms() -> int:
    return time.time_ns() // 1_000_000
