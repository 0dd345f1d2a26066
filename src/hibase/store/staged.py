"""A batch of mutations a store has encoded but not written (`Store.stage`): what the layers
above need to know of it before the commit, each row's newest values before and after.

Both backends encode a mutation as row segments (cells.py: what one mutation writes to one
row's family), so one class serves both; how the stored side of a row is read is the backend's
(`states`: the embedded store merges its own segments, the HBase store reads HBase's cells).
The segments never leave store/."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .. import errors
from .base import Mutation

__all__ = ["RowChange", "SegmentBatch", "StatesReader", "prepared_of"]


class RowChange(NamedTuple):
    """One row of a staged batch: its newest values ({b"f:q": (ts, value)}) before the batch
    and after it (every mutation of the row in the batch applied, in order)."""

    row: bytes
    before: dict[bytes, tuple[int, bytes]]
    after: dict[bytes, tuple[int, bytes]]


# (table, [(row, {family: pending segments, newest first})], columns) -> [(before, after)]
StatesReader = Callable[[str, list[tuple[bytes, dict[bytes, list[bytes]]]], "list[bytes] | None"],
                        list[tuple[dict, dict]]]


class SegmentBatch:
    """`Store.stage`'s answer: the mutations (timestamps fixed) with their segments, committed
    as they are by `Store.commit`. Falsy when it holds no mutation."""

    __slots__ = ("prepared", "_states")

    def __init__(self, prepared: list[tuple[Any, Mutation, list[tuple[bytes, bytes]]]],
                 states: StatesReader) -> None:
        self.prepared = prepared  # (backend table, mutation, [(family, segment)]): store-private
        self._states = states

    def __len__(self) -> int:
        return len(self.prepared)

    @property
    def mutations(self) -> list[Mutation]:
        """The staged mutations, each with the timestamp the commit will write."""
        return [m for _, m, _ in self.prepared]

    def tables(self) -> list[str]:
        """The tables the batch writes, in order of their first mutation."""
        return list(dict.fromkeys(m.table for _, m, _ in self.prepared))

    def rows(self, table: str, columns: list[bytes] | None) -> list[RowChange]:
        """Each row of `table` the batch writes (in order of its first mutation), with the
        newest values of `columns` (None: every column) before and after the batch; one read
        for all of them. TTL is not applied."""
        groups: dict[bytes, list[list[tuple[bytes, bytes]]]] = {}
        for _, m, segments in self.prepared:
            if m.table == table:
                groups.setdefault(m.row, []).append(segments)
        items: list[tuple[bytes, dict[bytes, list[bytes]]]] = []
        for row, seg_lists in groups.items():
            pending: dict[bytes, list[bytes]] = {}
            for segments in reversed(seg_lists):  # newest mutation first
                for fam, seg in reversed(segments):
                    pending.setdefault(fam, []).append(seg)
            items.append((row, pending))
        if not items:
            return []
        states = self._states(table, items, columns)
        return [RowChange(row, before, after) for (row, _), (before, after) in zip(items, states)]


def prepared_of(staged: Any) -> list[tuple[Any, Mutation, list[tuple[bytes, bytes]]]]:
    """What `Store.commit` writes of `staged`: a SegmentBatch's mutations; nothing for None
    or an empty batch (`commit(None, kv_writes)` writes key-value writes alone)."""
    if not staged:
        return []
    if isinstance(staged, SegmentBatch):
        return staged.prepared
    raise errors.InvalidArgument(f"commit() takes what this store's stage() made, not "
                                 f"{type(staged).__name__}")
