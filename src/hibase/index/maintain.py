"""Index upkeep on the write path: from a batch of prepared mutations, the index-row and
value-table writes that keep every global index (and, through local.py, every local index and its
per-region counts) equal to a rebuild from the table.

The store merges a row's pending segments over its stored ones (`row_states`), so the newest value
of each indexed column before and after the batch is exact for every kind of write (puts,
deletes of rows / columns / families / versions, several mutations of one row in one batch).
Callers hold the store's write lock from here until the commit, which makes the read-modify-write
of rows and value counts atomic.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable

from .. import codec
from ..store import cells as C
from . import local
from .spec import IndexSpec, index_table, value_table

__all__ = ["index_writes", "entry_writes", "Change", "decode_count"]

_COUNT = struct.Struct(">q")


class Change(tuple):
    """(spec, old values or None, new values or None, rowkey, new covered or None)."""


def _values(spec: IndexSpec, state: dict) -> list[Any] | None:
    """The row's index values; None (no entry) when the first indexed column is NULL. NaN is
    unordered, so like the query evaluator the index treats it as NULL."""
    out = []
    for col, t in zip(spec.columns, spec.types):
        cell = state.get(col)
        v = None if cell is None else codec.decode_cell(t, cell[1])
        out.append(None if v != v else v)
    return None if out[0] is None else out


def _covered(spec: IndexSpec, state: dict) -> list[bytes | None]:
    return [state[c][1] if c in state else None for c in spec.covering]


def index_writes(store, specs: list[IndexSpec], prepared: list, events: list | None = None
                 ) -> tuple[list, list[Change]]:
    """kv writes (table, key, value-or-None) for `prepared` mutations of tables with `specs`,
    and the list of index changes (for cache upkeep); `events` collects the local indexes'
    routing-filter changes (local.entry_writes)."""
    by_table: dict[str, list[IndexSpec]] = {}
    for spec in specs:
        by_table.setdefault(spec.table, []).append(spec)
    groups: dict[tuple[str, bytes], list[list]] = {}
    for t, m, segments in prepared:
        if m.table in by_table:
            groups.setdefault((m.table, m.row), []).append(segments)
    changes: list[Change] = []
    for (table, row), seg_lists in groups.items():
        table_specs = by_table[table]
        needed = list(dict.fromkeys(c for s in table_specs for c in s.needed))
        pending: dict[bytes, list[bytes]] = {}
        for segments in reversed(seg_lists):  # newest mutation first
            for fam, seg in reversed(segments):
                pending.setdefault(fam, []).append(seg)
        before, after = store.row_states(table, row, needed, pending)
        for spec in table_specs:
            old, new = _values(spec, before), _values(spec, after)
            new_cov = _covered(spec, after) if new is not None else None
            if old == new and (new is None or new_cov == _covered(spec, before)):
                continue
            changes.append(Change((spec, old, new, row, new_cov)))
    return entry_writes(store, changes, events), changes


def entry_writes(store, changes: Iterable[Change], events: list | None = None) -> list:
    """Index entry puts/deletes and the resulting value-table counts for `changes` (local
    indexes' rows and per-region counts by local.entry_writes)."""
    writes: list = []
    deltas: dict[tuple[str, bytes], int] = {}
    changes = list(changes)
    local_changes = [c for c in changes if c[0].local]
    if local_changes:
        writes += local.entry_writes(store, local_changes, events)
        changes = [c for c in changes if not c[0].local]
    for spec, old, new, row, cov in changes:
        idx = index_table(spec.table)
        if old is not None and old != new:
            writes.append((idx, spec.entry_key(old, row), None))
            key = (spec.table, spec.value_key(old))
            deltas[key] = deltas.get(key, 0) - 1
        if new is not None:
            writes.append((idx, spec.entry_key(new, row), C.pack(cov)))
            if old != new:
                key = (spec.table, spec.value_key(new))
                deltas[key] = deltas.get(key, 0) + 1
    by_val: dict[str, list[tuple[bytes, int]]] = {}
    for (table, vkey), delta in deltas.items():
        if delta:
            by_val.setdefault(value_table(table), []).append((vkey, delta))
    for vt, items in by_val.items():
        current = store.kv_get(vt, [k for k, _ in items])
        for (vkey, delta), raw in zip(items, current):
            count = (_COUNT.unpack(raw)[0] if raw else 0) + delta
            writes.append((vt, vkey, _COUNT.pack(count) if count > 0 else None))
    return writes


def decode_count(raw: bytes) -> int:
    return _COUNT.unpack(raw)[0]
