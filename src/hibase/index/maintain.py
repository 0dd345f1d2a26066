"""Index upkeep on the write path: from a batch of staged mutations, the index-row and
value-table writes that keep every global index (and, through local.py, every local index and its
per-region counts) equal to a rebuild from the table.

The store tells each staged row's state before and after the batch (`Store.stage`), so the
newest value of each indexed column before and after the batch is exact for every kind of write (puts,
deletes of rows / columns / families / versions, several mutations of one row in one batch).
Callers hold the store's write lock from here until the commit, which makes the read-modify-write
of rows atomic within a process; value counts are written as deltas (CountDelta), which the store
adds up, so they stay exact across processes too.
"""

from __future__ import annotations

from typing import Iterable

from ..store import cells as C
from . import local, text
from ..store.api import Staged, Store
from ..store.base import CountDelta, KVWrite
from .spec import IndexSpec, index_table, needed_columns, raw_values, value_table

__all__ = ["index_writes", "entry_writes", "Change", "needed_columns", "raw_values"]



class Change:
    """One row's change in one index: the rowkey, its new covered values, and the value keys
    of its entry before and after (None: no entry), computed once from the cells and reused by
    the entry writes, the value counts and the cache."""

    __slots__ = ("spec", "row", "covered", "old_key", "new_key")

    def __init__(self, spec: IndexSpec, row: bytes, covered: list | None,
                 old_key: bytes | None, new_key: bytes | None) -> None:
        self.spec, self.row, self.covered = spec, row, covered
        self.old_key, self.new_key = old_key, new_key

    def __repr__(self) -> str:
        return (f"Change({self.spec.name}, {self.old_key!r} -> {self.new_key!r}, "
                f"row={self.row!r}, covered={self.covered!r})")


def _covered(spec: IndexSpec, state: dict) -> list[bytes | None]:
    return [state[c][1] if c in state else None for c in spec.covering]


def index_writes(store: Store, specs: list[IndexSpec], staged: Staged,
                 events: list | None = None) -> tuple[list[KVWrite], list[Change]]:
    """kv writes (table, key, value-or-None) for the `staged` mutations of tables with
    `specs`, and the list of index changes (for cache upkeep); `events` collects the local
    indexes' routing-filter changes (local.entry_writes)."""
    by_table: dict[str, list[IndexSpec]] = {}
    for spec in specs:
        by_table.setdefault(spec.table, []).append(spec)
    changes: list[Change] = []
    for table in staged.tables():
        table_specs = by_table.get(table)
        if table_specs:
            for row, before, after in staged.rows(table, needed_columns(table_specs)):
                _diff(table_specs, row, before, after, changes)
    return entry_writes(store, changes, events), changes


def _diff(table_specs: list[IndexSpec], row: bytes, before: dict, after: dict,
          changes: list[Change]) -> None:
    """Append the index changes one row's before / after states imply."""
    for spec in table_specs:
        if spec.kind:  # a text index: one entry per token (index/text.py)
            text.diff(spec, row, before, after, changes, Change)
            continue
        # equal keys <=> equal values (the key encoding is injective; -0.0 and 0.0 are one)
        old_key = spec.cells_key(before, True)
        new_key = spec.cells_key(after, True)
        new_cov = _covered(spec, after) if new_key is not None else None
        if old_key == new_key and (new_key is None or new_cov == _covered(spec, before)):
            continue
        changes.append(Change(spec, row, new_cov, old_key, new_key))


def entry_writes(store: Store, changes: Iterable[Change], events: list | None = None
                 ) -> list[KVWrite]:
    """Index entry puts/deletes and the value-table count deltas for `changes` (local
    indexes' rows and per-region counts by local.entry_writes)."""
    writes: list[KVWrite] = []
    deltas: dict[tuple[str, bytes], int] = {}
    changes = list(changes)
    local_changes = [c for c in changes if c.spec.local]
    if local_changes:
        writes += local.entry_writes(store, local_changes, events)
        changes = [c for c in changes if not c.spec.local]
    pack = C.pack
    index_tables: dict[str, str] = {}
    for c in changes:
        table, row, old_key, new_key = c.spec.table, c.row, c.old_key, c.new_key
        idx = index_tables.get(table) or index_tables.setdefault(table, index_table(table))
        if old_key is not None and old_key != new_key:
            writes.append((idx, old_key + row, None))  # an entry key: value key + rowkey
            key = (table, old_key)
            deltas[key] = deltas.get(key, 0) - 1
        if new_key is not None:
            writes.append((idx, new_key + row, pack(c.covered)))
            if old_key != new_key:
                key = (table, new_key)
                deltas[key] = deltas.get(key, 0) + 1
    # counts change by deltas the store adds up: no read here, and no update lost to another
    # client changing the same count at once
    writes += [(value_table(table), vkey, CountDelta(delta))
               for (table, vkey), delta in deltas.items() if delta]
    return writes

