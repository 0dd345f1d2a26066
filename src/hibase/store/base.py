"""What every storage backend offers the layers above: the HBase data model as plain calls."""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import Callable, NamedTuple, Protocol

__all__ = ["Mutation", "Region", "SplitListener", "SplitBatch", "now_ms", "LATEST_TIMESTAMP",
           "CountDelta", "KVWrite", "encode_count", "decode_count"]

# HBase's HConstants.LATEST_TIMESTAMP: "now" for a write's timestamp, "every version" for a read
LATEST_TIMESTAMP = (1 << 63) - 1


_COUNT = struct.Struct(">q")


def encode_count(n: int) -> bytes:
    """A value table's row count as stored (global and local value tables alike)."""
    return _COUNT.pack(n)


def decode_count(raw: bytes) -> int:
    """The row count a value table holds for one value."""
    return _COUNT.unpack(raw)[0]


class CountDelta(int):
    """A key-value write that adds to a value table's count instead of replacing it
    (`commit(kv_writes=[(value_table, key, CountDelta(-1))])`): stores apply it without the
    writer reading the count first, so writers in different processes never lose each
    other's updates. A count that reaches 0 or less is gone (reads see no row)."""

    __slots__ = ()


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
