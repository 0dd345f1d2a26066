"""The index layer's face: catalog, write-path upkeep, build and verify for one store."""

from __future__ import annotations

from typing import Any, Callable

from ..store.base import Mutation
from . import lookup
from .build import build_index, verify_index
from .catalog import IndexCatalog
from .maintain import Change, index_writes
from .spec import READY, IndexSpec

__all__ = ["IndexManager"]


class IndexManager:
    """Keeps a store's global indexes exact; every write of the Connection goes through write()."""

    def __init__(self, store, cache: Any = None):
        self.store = store
        self.catalog = IndexCatalog(store)
        # The hot-index cache (cache layer), or None. It offers read(spec, vkey, loader) ->
        # entries and apply(changes), called under the write lock right after each commit.
        self.cache = cache

    def read_value(self, spec: IndexSpec, vkey: bytes) -> list[tuple[bytes, list]]:
        """Every entry (rowkey, covered values) of one full index value: HiBase's point
        lookup, answered by the hot cache when it holds the set."""
        if self.cache is None:
            return lookup.entries_for_value(self.store, spec, vkey)
        return self.cache.read(spec, vkey, lambda: lookup.entries_for_value(self.store, spec,
                                                                            vkey))

    def specs(self, table: str) -> list[IndexSpec]:
        return self.catalog.for_table(table)

    def ready(self, table: str) -> list[IndexSpec]:
        """Indexes queries may use (fully built)."""
        return [s for s in self.catalog.for_table(table) if s.state == READY]

    def write(self, mutations: list[Mutation]) -> list[Change]:
        """Write mutations and their index rows / value counts in one atomic batch."""
        specs = [s for t in {m.table for m in mutations} for s in self.catalog.for_table(t)]
        if not specs:
            self.store.apply(mutations)
            return []
        with self.store.write_lock():
            prepared = self.store.prepare(mutations)
            kv_writes, changes = index_writes(self.store, specs, prepared)
            self.store.commit(prepared, kv_writes)
            if self.cache is not None and changes:
                self.cache.apply(changes)
        return changes

    def create(self, table: str, name: str, columns: Any, covering: Any = (),
               local: bool = False, processes: int | None = None,
               progress: Callable[[int, int], Any] | None = None) -> IndexSpec:
        """Define an index and build it from the table's current rows."""
        spec = self.catalog.create(table, name, columns, covering, local)
        build_index(self.store, self.catalog, spec, processes, progress)
        return spec

    def build(self, table: str, name: str, processes: int | None = None,
              progress: Callable[[int, int], Any] | None = None) -> dict[str, int]:
        return build_index(self.store, self.catalog, self.catalog.get(table, name), processes,
                           progress)

    def verify(self, table: str, name: str, repair: bool = False) -> dict[str, Any]:
        return verify_index(self.store, self.catalog.get(table, name), repair)

    def drop(self, table: str, name: str) -> None:
        with self.store.write_lock():
            self.catalog.drop(table, name)

    def drop_table(self, table: str) -> None:
        with self.store.write_lock():
            self.catalog.drop_table(table)
