"""The index layer's face: catalog, write-path upkeep, build and verify for one store."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..store.api import Store
from ..store.base import Mutation, Region, SplitBatch
from ..store.schema import FOREVER
from . import local, lookup
from .build import build_index, build_indexes, verify_index
from .catalog import IndexCatalog
from .commit import choose, server_kept
from .maintain import Change, index_writes
from .routing import Router
from .spec import BUILDING, READY, STALE, IndexSpec, change_table, expiring

__all__ = ["IndexManager"]


class IndexManager:
    """Keeps a store's global and local indexes exact; every write of the Connection goes
    through write()."""

    def __init__(self, store: Store, cache: Any = None, cache_staleness_ms: int = 0):
        self.store = store
        self.catalog = IndexCatalog(store)
        # SCBF routing of local-index lookups; local rows follow region splits (_on_split)
        self.router = Router(store)
        if not store.read_only:
            store.add_split_listener(self._on_split)
        # how a write's index changes are committed with its rows (index/commit.py: one
        # atomic batch, or the verified protocol where index rows and data rows are separate
        # writes, whose readers resolve unverified entries: index/verified.py)
        self.committer = choose(store, self.catalog)
        # The hot-index cache (cache layer), or None. It offers read(spec, vkey, loader) ->
        # entries and apply(changes), called under the write lock right after each commit.
        self.cache = cache
        # how old a server write version may be when the cache answers a server-kept index
        # (cache_tag): 0, the default, reads it at every lookup; more is the user's opt-in
        self.cache_staleness_s = cache_staleness_ms / 1000
        # a store other clients write too (HBase): the index catalog is re-checked (one get)
        # before a write or query plan once its lease ran out (catalog_lease_ms); changes to
        # definitions wait a lease before relying on every client knowing them (_wait_lease)
        self.shared = store.capabilities.shared
        self._layouts: dict[str, bytes] = {}  # the region layout token last seen per table

    def _refresh(self) -> None:
        """Pick up indexes another client created, rebuilt or dropped (shared stores); cached
        sets of those tables may be stale (a dropped index's alias can be reused)."""
        for table in self.catalog.refresh():
            self._invalidate_cache(table)

    def cache_tag(self, spec: IndexSpec) -> bytes:
        """The tag under which the hot cache answers `spec`'s sets (cache/backend.py): for an
        index the region server keeps (other programs' writes change it without this client
        knowing), and on any store other processes write (their writes patch only their own
        in-process caches), the table's write version, read from the store (one get, or none
        within cache_staleness_ms of the last); b"" on a store only this process writes (its
        writes patch the cache)."""
        if not (spec.server or self.shared):
            return b""
        return self.store.index_version(spec.table, self.cache_staleness_s)

    def read_value(self, spec: IndexSpec, vkey: bytes,
                   tag: bytes | None = None) -> list[tuple[bytes, list]]:
        """Every entry (rowkey, covered values) of one full index value: HiBase's point
        lookup, answered by the hot cache when it holds the set under `tag` (cache_tag(spec)
        unless given: a lookup of many values reads it once)."""
        if self.cache is None:
            return lookup.entries_for_value(self.store, spec, vkey)
        if tag is None:
            tag = self.cache_tag(spec)
        return self.cache.read(spec, vkey, lambda: lookup.entries_for_value(self.store, spec,
                                                                            vkey), tag)

    def specs(self, table: str, fresh: bool = False) -> list[IndexSpec]:
        """The table's indexes; `fresh` first picks up other clients' changes (shared stores)."""
        if fresh and self.shared:
            self._refresh()
        return self.catalog.for_table(table)

    def ready(self, table: str) -> list[IndexSpec]:
        """Indexes queries may use (fully built)."""
        if self.shared:
            self._refresh()
        specs = [s for s in self.catalog.for_table(table) if s.state == READY]
        self._follow_splits(table, specs)
        return self._mark_expiring(table, specs)

    def ttls(self, table: str) -> dict[bytes, int]:
        """The families of `table` with a TTL: {family: seconds} (empty: nothing expires)."""
        return {f: fo.time_to_live for f, fo in self.store.schema(table).families.items()
                if fo.time_to_live != FOREVER}

    def _mark_expiring(self, table: str, specs: list[IndexSpec]) -> list[IndexSpec]:
        """Set each spec's `expires` from the table's schema as it is now (spec.expiring)."""
        if specs:
            ttls = self.ttls(table)
            for s in specs:
                s.expires = expiring(s, ttls)
        return specs

    def _follow_splits(self, table: str, specs: list[IndexSpec], force: bool = False) -> None:
        """Stores that split regions without telling (HBase) are asked to catch up before
        local rows are computed, built or read: their split listeners then run (_on_split)."""
        store = self.store
        if store.capabilities.follows_splits and any(s.local for s in specs):
            # the layout another client switched within the catalog lease (one get):
            # local rows are computed and read by the layout HBase holds, and routing
            # filters of regions this client did not split itself are loaded again
            now = store.layout_token(table)
            seen = self._layouts.get(table)
            if seen is not None and seen != now:
                self.router.forget(table)
            self._layouts[table] = now
            store.follow_splits(table, force)
            if force:
                self._layouts[table] = store.layout_token(table)

    def client_kept(self, table: str) -> tuple[list[IndexSpec], bool]:
        """The seam of server-side upkeep: (the indexes of `table` this client keeps on its
        writes, whether the region server keeps others). An index made where hibase's
        coprocessor runs (IndexSpec.server) is kept by the region server on every write, so
        the client computes nothing for it and a write is the data call alone."""
        return server_kept(self.catalog.for_table(table))

    def write(self, mutations: list[Mutation]) -> list[Change]:
        """Write mutations and their index rows / value counts in one atomic batch."""
        if self.shared:
            self._refresh()
        specs: list[IndexSpec] = []
        server_kept = []
        for t in {m.table for m in mutations}:
            mine, theirs = self.client_kept(t)
            specs += mine
            if theirs:
                server_kept.append(t)
        try:
            return self._write(mutations, specs)
        finally:
            # other processes may cache the sets this write changed: on a shared store the
            # table's write version moves before the write returns (cache_tag), by the region
            # server for the indexes it keeps, here for the others; the next lookup here
            # reads it afresh even within cache_staleness_ms (this client reads its writes)
            if self.shared:
                for t in {s.table for s in specs if not s.local}:
                    self.store.bump_index_version(t)
            for t in server_kept:
                self.store.forget_index_version(t)

    def _write(self, mutations: list[Mutation], specs: list[IndexSpec]) -> list[Change]:
        if not specs:
            self.store.apply(mutations)
            return []
        with self.store.write_lock():
            for t in {m.table for m in mutations}:
                self._follow_splits(t, [s for s in specs if s.table == t])
            staged = self.store.stage(mutations)
            events: list = []  # local indexes: values entering / leaving a region
            kv_writes, changes = index_writes(self.store, specs, staged, events)
            if events:
                self.router.before_commit(events, kv_writes)
            try:
                self.committer.commit(self.store, staged, kv_writes)
            except BaseException:
                # a commit that stopped half way (HBase: separate RPCs) may have changed index
                # sets the cache holds: drop them rather than serve them stale
                for t in {m.table for m in mutations}:
                    self._invalidate_cache(t)
                raise
            if events:
                self.router.after_commit(events)
            if self.cache is not None and changes:
                # the hot cache holds global-index sets only: local lookups visit regions
                cached = [c for c in changes if not c.spec.local]
                if cached:
                    self.cache.apply(cached)
        return changes

    def create(self, table: str, name: str, columns: Any, covering: Any = (),
               local: bool = False, processes: int | None = None,
               progress: Callable[[int, int], Any] | None = None,
               build: bool = True, consistency: str = "strong",
               uncovered: bool = False, where: dict | None = None, kind: str = "") -> IndexSpec:
        """Define an index and build it from the table's current rows (build=False: leave it
        "building", maintained by writes but not used by queries until `build` runs); where:
        a partial index's compiled predicate (index/partial.py); kind "text": full text."""
        spec = self.catalog.create(table, name, columns, covering, local, consistency,
                                   uncovered, where, kind)
        if not build:
            return spec
        self._wait_lease()  # every writer maintains the new index before the build reads
        self._follow_splits(table, [spec], force=True)
        build_index(self.store, self.catalog, spec, processes, progress, self.router)
        return spec

    def build(self, table: str, name: str, processes: int | None = None,
              progress: Callable[[int, int], Any] | None = None) -> dict[str, int]:
        try:
            spec = self.catalog.get(table, name)
            if self.shared and spec.state != BUILDING:
                # other clients stop querying it (and all maintain it) before it is cleared
                self.catalog.set_state(spec, BUILDING)
                self._wait_lease()
            self._follow_splits(table, [spec], force=True)
            return build_index(self.store, self.catalog, spec, processes, progress, self.router)
        finally:
            self._entries_changed(table)

    @contextmanager
    def bulk(self, table: str, processes: int | None = None,
             progress: Callable[[str, int, int], Any] | None = None) -> Iterator[list[str]]:
        """Suspend the upkeep of `table`'s indexes while the block loads data, then rebuild
        them (in worker processes over regions): much cheaper than per-put upkeep for big
        loads. Meanwhile the indexes are "stale": queries do not use them and writes skip them;
        an interrupted rebuild leaves them stale until `build` runs."""
        names = [s.name for s in self.catalog.for_table(table)]
        with self.store.write_lock():
            for name in names:
                self.catalog.set_state(self.catalog.get(table, name), STALE)
        self._invalidate_cache(table)
        if names:
            self._wait_lease()  # other clients stop reading them before the load changes rows
        try:
            yield names
        finally:
            if len(names) > 1 and not self.shared:
                # the table read once for all of its indexes (build_indexes), not once each
                specs = [self.catalog.get(table, name) for name in names]
                try:
                    self._follow_splits(table, specs, force=True)
                    build_indexes(self.store, self.catalog, specs, processes, progress,
                                  self.router)
                finally:
                    self._entries_changed(table)
            else:
                for name in names:
                    report = (lambda done, total, n=name: progress(n, done, total)) \
                        if progress else None
                    self.build(table, name, processes, report)

    def lag(self, table: str, name: str) -> dict[str, Any]:
        """How far an index's entries are behind its rows: the changed rows the region
        servers have recorded and not applied yet (one per changed row, for every eventual
        index of the table at once) and the age of the oldest; 0 for an index kept at
        once (strong, or kept by the clients)."""
        spec = self.catalog.get(table, name)
        out: dict[str, Any] = {"table": table, "index": name, "consistency": spec.consistency,
                               "pending": 0, "oldest_s": None}
        if not spec.lags:
            return out
        oldest = None
        for key, _ in self.store.kv_scan(change_table(table)):
            # key: the writer's stamp (8 bytes, ms), its incarnation, the escaped rowkey
            out["pending"] += 1
            stamp = int.from_bytes(key[:8], "big")
            oldest = stamp if oldest is None else min(oldest, stamp)
        if oldest is not None:
            out["oldest_s"] = round(max(0.0, time.time() * 1000 - oldest) / 1000, 3)
        return out

    def verify(self, table: str, name: str, repair: bool = False) -> dict[str, Any]:
        try:
            spec = self._mark_expiring(table, [self.catalog.get(table, name)])[0]
            return verify_index(self.store, spec, repair, self.router)
        finally:
            if repair:
                self._entries_changed(table)

    def _invalidate_cache(self, table: str) -> None:
        """Index entries changed outside write(): cached sets of `table` may be stale."""
        if self.cache is not None:
            self.cache.invalidate(table)

    def _entries_changed(self, table: str) -> None:
        """Index entries of `table` changed outside write() (a build, a repair): this
        process's cached sets go, and other processes' caches (which answer only under the
        table's index write version: cache_tag) stop answering from theirs."""
        self._invalidate_cache(table)
        if self.shared and not self.store.read_only:
            self.store.bump_index_version(table)

    def _wait_lease(self) -> None:
        """Shared stores that trust their index definitions for a lease (HBase's
        catalog_lease_ms): wait until every client has re-read the change just saved."""
        if self.shared:
            self.store.wait_lease()

    def drop(self, table: str, name: str) -> None:
        if self.shared:
            # other clients stop querying it before its entries are cleared
            spec = self.catalog.get(table, name)
            if spec.state != STALE:
                self.catalog.set_state(spec, STALE)
                self._invalidate_cache(table)
                self._wait_lease()
        with self.store.write_lock():
            was_local = self.catalog.get(table, name).local
            self.catalog.drop(table, name)
            self._invalidate_cache(table)  # a later index may reuse the alias
            if was_local:
                if any(s.local for s in self.catalog.for_table(table)):
                    self.router.rebuild(table)
                else:
                    self.router.forget(table)
                    # HBase: no local rows follow the recorded layout any more; regions()
                    # answers with HBase's own again
                    self.store.forget_layout(table)

    def drop_table(self, table: str) -> None:
        with self.store.write_lock():
            self.catalog.drop_table(table)
            self._invalidate_cache(table)
            self.router.forget(table)

    def _on_split(self, table: str, parent: Region, left: Region, right: Region,
                  batch: SplitBatch) -> None:
        """Split listener: the right daughter's local rows and counts move under its start key
        and both daughters get routing filters, all in the split's atomic batch."""
        specs = {s.alias: s for s in self.catalog.for_table(table) if s.local}
        if not specs:
            return
        left_counts, right_counts = local.split_rewrite(self.store, specs, table, parent, right,
                                                        batch.put, batch.delete)
        self.router.on_split(table, parent, left, right, left_counts, right_counts, batch.put)

    def close(self) -> None:
        """Persist the routing filters (called before the store closes)."""
        if not self.store.closed:
            self.router.save()
