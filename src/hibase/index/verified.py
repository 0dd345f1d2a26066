"""Index hooks for stores whose index rows and data rows are separate writes (the HBase
backend): Phoenix's verified / unverified protocol, reader side, for global and local indexes.

The store writes an entry *unverified* (with its user rowkey) before the data row and rewrites
it *verified* after; a reader meeting an unverified entry asks `resolve`, which re-reads the
data row: the entry is answered, with covered values from the data row, only if the row still
produces exactly that entry key. Readers never write (a repair racing a live writer could undo
the writer's last step); `verify_index(repair=True)` cleans leftovers.
"""

from __future__ import annotations

from ..store import cells as C
from . import local
from .maintain import needed_columns, raw_values
from .spec import IndexSpec, index_table

__all__ = ["IndexHooks", "is_entry_table"]

_GLOBAL, _LOCAL = index_table(""), local.local_table("")  # the tables' name prefixes


def is_entry_table(name: str) -> bool:
    """Whether key-value table `name` holds index entries (global or local)."""
    return name.startswith(_GLOBAL) or name.startswith(_LOCAL)


def _split_name(name: str) -> tuple[str, bool] | None:
    """(data table, local?) of an index key-value table's name; None for other tables."""
    if name.startswith(_GLOBAL):
        return name[len(_GLOBAL):], False
    if name.startswith(_LOCAL):
        return name[len(_LOCAL):], True
    return None


class IndexHooks:
    """What a store asks the index layer about global- and local-index entries."""

    def __init__(self, store, catalog):
        self.store = store
        self.catalog = catalog

    def _spec(self, name: str, key: bytes) -> tuple[IndexSpec | None, bytes]:
        """The index of an entry key, and the key without a local entry's region prefix."""
        split = _split_name(name)
        if split is None:
            return None, key
        table, is_local = split
        if is_local:
            key = key[local.split_key(key)[1]:]
        alias = key[:2]
        for spec in self.catalog.for_table(table):
            if spec.local == is_local and (spec.alias == alias or spec.null_alias == alias):
                return spec, key
        return None, key

    def row_of(self, name: str, key: bytes) -> bytes | None:
        """The user rowkey of an index entry key."""
        spec, key = self._spec(name, key)
        return None if spec is None else spec.split_entry(key)[1]

    def resolve(self, name: str, entries: list[tuple[bytes, bytes]]) -> list[bytes | None]:
        """For each unverified (entry key, rowkey): the covered-values payload if the data row
        produces that entry now, else None (the entry is skipped)."""
        table = _split_name(name)[0]
        found = [self._spec(name, key) for key, _ in entries]
        specs = [s for s, _ in found]
        entries = [(k, row) for (_, k), (_, row) in zip(found, entries)]
        known = [s for s in specs if s is not None]
        if not known:
            return [None] * len(entries)
        needed = needed_columns(known)  # None: every column (a NULL list needs the whole row)
        rows = list(dict.fromkeys(row for (_, row), s in zip(entries, specs) if s is not None))
        data = dict(zip(rows, self.store.read_latest_many(table, rows, needed)))
        out: list[bytes | None] = []
        for (key, row), spec in zip(entries, specs):
            cells = {c: tv[1] for c, tv in data.get(row, {}).items()} if spec else {}
            values = raw_values(spec, cells) if spec else None
            if values is None or spec.value_key(values) + row != key:
                out.append(None)
            else:
                out.append(C.pack([cells.get(c) for c in spec.covering]))
        return out
