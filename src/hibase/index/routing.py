"""Routing local-index lookups with split counting Bloom filters (SPEC §3).

One scalable SCBF per (region, local index) answers "may this region hold value v?" without any
read, so a point lookup visits only the regions that may hold the value instead of every region
(hindex). The filters are kept exact:

- Items are value keys (alias | encoded values). An item is added when its region's count in the
  per-region value table (local.py) goes 0 -> n and removed when it goes n -> 0: the write path
  reads those counts anyway (local.entry_writes reports the crossings as events) and the filters
  change right after the commit (`after_commit`), under the write lock, so queries (which route
  under the lock) never see a filter behind the index. Removal never makes a false negative
  (`ScalableSCBF.remove`).
- Filters are keyed by region id. A split gives both daughters new ids; the split listener builds
  their filters from the daughters' counts inside the split (`on_split`), so a filter change
  computed for the parent in the same batch is simply dropped (its id is gone), and if the split
  batch failed the parent's filters would still be the live ones.
- Persistence, in ``__lrt__<table>``: ``g`` is a generation counter written (+1) in the same
  atomic batch as the first write (or split) after each save (on a store shared with other
  clients, HBase: a new random generation with every filter change, and lookups and writes
  reload the filters when ``g`` is not theirs); ``save()`` (on close) writes every
  filter under ``f | region prefix | alias`` and ``s`` = [generation, region (start, id) list].
  On open the filters are loaded only if ``s`` matches ``g`` and the current regions; otherwise
  (a crash, a missing or stale save) they are rebuilt from the per-region counts.

Region servers (the paper's global level, SPEC §3): beside the per-region filters, one counting
filter per (region server, local index) holds the values of every region that server holds
(`server_filters`), each value counted once per region holding it, so removals stay exact.
They are built from the per-region counts for a placement (`Store.servers`, cached for
PLACEMENT_TTL_S), kept by the same commit events, and dropped (rebuilt on next use) when the
placement, the regions or the per-region state change. `level = "server"` routes a lookup as
the paper does: the servers whose filter may hold the value, then every region they hold; the
default, "region", uses the finer per-region filters. A stale placement costs accuracy of the
server count only: a server's filter is the union of the regions it was built for, and the
regions are what a lookup visits. The embedded store has one server ("localhost").
"""

from __future__ import annotations

import math
import random
import struct
import threading
import time
from bisect import bisect_right
from typing import Any

from ..store.api import Store
from ..codec import prefix_successor
from ..store import cells as C
from .local import local_value_table, region_counts, region_prefix, routing_table
from .scbf import ScalableSCBF

__all__ = ["Router", "PLACEMENT_TTL_S"]

PLACEMENT_TTL_S = 5.0  # how long a table's region -> server placement is reused

_GEN = struct.Struct(">q")
_LN2_SQ = math.log(2) ** 2


class _LazyFilters(dict):
    """{(region id, alias): ScalableSCBF}, each decoded from its saved bytes on first use:
    reopening a table of thousands of regions decodes only the filters a put or a lookup
    touches (decoding all of them made the first put after a reopen take seconds)."""

    def __getitem__(self, key: Any) -> Any:
        f = dict.__getitem__(self, key)
        if isinstance(f, bytes):
            f = ScalableSCBF.from_bytes(f)
            dict.__setitem__(self, key, f)
        return f

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def items(self) -> list:  # type: ignore[override]
        return [(k, self[k]) for k in list(self.keys())]

    def values(self) -> list:  # type: ignore[override]
        return [self[k] for k in list(self.keys())]

    def saved_bytes(self, key: Any) -> bytes:
        """The filter's bytes to persist, without decoding one that was never used."""
        f = dict.__getitem__(self, key)
        return f if isinstance(f, bytes) else f.to_bytes()


class _State:
    """One table's filters: {(region id, alias): ScalableSCBF}, its generation, whether the
    persisted filters are behind the live ones, and how the filters were obtained."""

    __slots__ = ("filters", "gen", "dirty", "source")

    def __init__(self, filters: dict, gen: int, dirty: bool, source: str):
        self.filters = filters
        self.gen = gen
        self.dirty = dirty
        self.source = source


class _ServerView:
    """One local index's per-server filters, for the state object and placement they were
    built from."""

    __slots__ = ("state", "placement", "filters")

    def __init__(self, state: _State, placement: dict[int, str],
                 filters: dict[str, ScalableSCBF]):
        self.state, self.placement, self.filters = state, placement, filters


class Router:
    """Routing filters of every local index of one store (see the module docstring)."""

    def __init__(self, store: Store, fpr: float = 0.001, initial_counters: int = 16_384,
                 counter_bits: int = 4):
        self.store = store
        self.fpr = fpr
        self.initial_counters = initial_counters
        self.counter_bits = counter_bits
        self.enabled = True  # False: every local lookup visits every region (hindex)
        self.repack = True  # False: stacks grow as the paper's scalable SCBF (see after_commit)
        self.version = 0  # bumped by every filter change: equal versions, equal routes
        self._level = "region"
        self._states: dict[str, _State] = {}
        self._views: dict[tuple[str, bytes], _ServerView] = {}
        # table -> (when read, start key -> server, the start keys sorted)
        self._placements: dict[str, tuple[float, dict[bytes, str], list[bytes]]] = {}
        self._lock = threading.RLock()
        # a store other clients write too (HBase): their writes change filters this process
        # holds, so lookups and writes first compare the persisted generation (one read)
        self.shared = store.capabilities.shared

    @property
    def level(self) -> str:
        """How point lookups are routed: "region" (each region's filters, the default) or
        "server" (the paper's: each region server's filter, then every region it holds)."""
        return self._level

    @level.setter
    def level(self, value: str) -> None:
        if value not in ("region", "server"):
            raise ValueError(f"routing level must be 'region' or 'server', not {value!r}")
        with self._lock:
            self._level = value
            self.version += 1  # routes planned at the other level are not reused

    # -- state -------------------------------------------------------------------------------
    def state(self, table: str) -> _State:
        st = self._states.get(table)
        if st is None:
            with self.store.write_lock(), self._lock:
                st = self._states.get(table)
                if st is None:
                    st = self._states[table] = self._load(table)
        return st

    def fresh_state(self, table: str) -> _State:
        """state(), re-read first when another client changed the filters (shared stores:
        every filter change there writes a new random generation)."""
        if not self.shared:
            return self.state(table)
        st = self._states.get(table)
        if st is not None and st.gen == self._durable_gen(table):
            return st
        with self.store.write_lock(), self._lock:
            st = self._states[table] = self._load(table)
            self.version += 1
        return st

    def loaded(self, table: str) -> bool:
        return table in self._states

    def _new_filter(self, items: int, rid: int) -> ScalableSCBF:
        # One seed for every region: a lookup hashes the value once per stack depth, not once
        # per region (ScalableSCBF.probe). False positives stay independent across regions:
        # they depend on each filter's own contents.
        want = math.ceil(items * -math.log(self.fpr) / _LN2_SQ * 1.25)
        return ScalableSCBF(max(self.initial_counters, want), self.fpr, self.counter_bits,
                            growth=2, seed=0)

    def _filter_of(self, counts: dict[bytes, int], rid: int) -> ScalableSCBF:
        """A filter holding the values of `counts`, with room for as many again."""
        f = self._new_filter(2 * len(counts), rid)
        for vkey, n in counts.items():
            if n > 0:
                f.add(vkey)
        return f

    def _load(self, table: str) -> _State:
        store = self.store
        regions = store.regions(table)
        lrt = routing_table(table)
        gen = 0
        if lrt in store.kv_tables():
            g_raw, s_raw = store.kv_get(lrt, [b"g", b"s"])
            gen = _GEN.unpack(g_raw)[0] if g_raw else 0
            if s_raw:
                saved_gen, saved_regions = C.unpack(s_raw)
                if saved_gen == gen and [tuple(x) for x in saved_regions] == \
                        [(r.start, r.id) for r in regions]:
                    filters = _LazyFilters()
                    for key, value in store.kv_scan(lrt, b"f", b"g"):
                        rid, blob = C.unpack(value)
                        filters[(rid, key[-2:])] = bytes(blob)  # decoded on first use
                    return _State(filters, gen, False, "loaded")
        return self._rebuilt(table, gen)

    def _rebuilt(self, table: str, gen: int) -> _State:
        by_start = {r.start: r for r in self.store.regions(table)}
        filters = {}
        for start, by_alias in region_counts(self.store, table).items():
            r = by_start.get(start)
            if r is None:
                continue  # rows under a region prefix that no longer exists: verify reports them
            for alias, counts in by_alias.items():
                filters[(r.id, alias)] = self._filter_of(counts, r.id)
        return _State(filters, gen, True, "rebuilt")

    def rebuild(self, table: str) -> None:
        """Rebuild a table's filters from the per-region counts (after a batch build or repair;
        the caller holds the write lock)."""
        with self.store.write_lock(), self._lock:
            old = self._states.get(table)
            gen = old.gen if old is not None else self._durable_gen(table)
            st = self._rebuilt(table, gen)
            self._bump(table, st)  # a save from before the rebuild must not load again
            self._states[table] = st
            self.version += 1

    def _durable_gen(self, table: str) -> int:
        lrt = routing_table(table)
        if lrt not in self.store.kv_tables():
            return 0
        raw = self.store.kv_get(lrt, [b"g"])[0]
        return _GEN.unpack(raw)[0] if raw else 0

    def _bump(self, table: str, st: _State, add: Any = None) -> None:
        """Mark the persisted filters stale: generation + 1, written with `add` (a batch) or
        alone."""
        # shared stores: a random generation, so two clients bumping the same one differ
        st.gen = random.getrandbits(62) if self.shared else st.gen + 1
        st.dirty = True
        write = (routing_table(table), b"g", _GEN.pack(st.gen))
        if add is not None:
            add(*write)
        elif not self.store.read_only:
            self.store.write_kv([write])

    def forget(self, table: str) -> None:
        """Drop a table's filters from memory (table or index dropped; rebuilt on next use)."""
        with self._lock:
            self._states.pop(table, None)
            self._drop_views(table)
            self._placements.pop(table, None)
            self.version += 1

    # -- queries -----------------------------------------------------------------------------
    def may_hold(self, table: str, region, alias: bytes, vkey: bytes | None,
                 memo: dict | None = None) -> bool | None:
        """None: the region holds no row of the index; else whether it may hold `vkey` (any
        value when None). Never False for a value the region holds. `memo` (a dict per value)
        shares the value's hashes between regions."""
        f = self.fresh_state(table).filters.get((region.id, alias))
        if f is None or len(f) == 0:
            return None
        if vkey is None:
            return True
        return f.probe(vkey, {} if memo is None else memo)

    def route(self, table: str, alias: bytes, regions: list, vkey: bytes | None
              ) -> tuple[list, int, int]:
        """(regions that may hold `vkey` (or any value when None), how many the filters ruled
        out, how many hold no row of the index): may_hold over `regions`, hashing once."""
        filters = self.fresh_state(table).filters
        memo: dict = {}
        chosen = []
        ruled_out = empty = 0
        for r in regions:
            f = filters.get((r.id, alias))
            if f is None or len(f) == 0:
                empty += 1
            elif vkey is None or f.probe(vkey, memo):
                chosen.append(r)
            else:
                ruled_out += 1
        return chosen, ruled_out, empty

    # -- region servers (the paper's global level) ----------------------------------------
    def placement(self, table: str, regions: list) -> dict[int, str]:
        """Region id -> the server holding it (`Store.servers`, reused for PLACEMENT_TTL_S; a
        region of the recorded layout maps to HBase's region holding its start key)."""
        now = time.monotonic()
        got = self._placements.get(table)
        if got is None or now - got[0] > PLACEMENT_TTL_S:
            live = self.store.servers(table)
            got = self._placements[table] = (now, live, sorted(live))
        _, live, starts = got
        out = {}
        for r in regions:
            i = bisect_right(starts, r.start) - 1
            out[r.id] = live[starts[i]] if i >= 0 else "?"
        return out

    def server_filters(self, table: str, alias: bytes, regions: list
                       ) -> tuple[dict[str, ScalableSCBF], dict[int, str]]:
        """({server: filter of the values its regions hold}, {region id: server}) for local
        index `alias` of `table`; built from the per-region counts when missing or stale."""
        v = self._view(table, alias, regions)
        return v.filters, v.placement

    def _view(self, table: str, alias: bytes, regions: list) -> _ServerView:
        placement = self.placement(table, regions)
        st = self.fresh_state(table)
        # under the write lock: counts read and commit events applied cannot interleave
        with self.store.write_lock(), self._lock:
            v = self._views.get((table, alias))
            if v is None or v.state is not st or v.placement != placement:
                by_start = {r.start: r for r in regions}
                per_server: dict[str, list[bytes]] = {srv: [] for srv in placement.values()}
                for start, by_alias in region_counts(self.store, table).items():
                    r = by_start.get(start)
                    if r is None:
                        continue
                    per_server[placement[r.id]].extend(
                        vk for vk, n in by_alias.get(alias, {}).items() if n > 0)
                filters = {}
                for srv, items in per_server.items():
                    f = filters[srv] = self._new_filter(2 * len(items), 0)
                    for vkey in items:
                        f.add(vkey)
                v = self._views[(table, alias)] = _ServerView(st, placement, filters)
            return v

    def route_servers(self, table: str, alias: bytes, regions: list, vkey: bytes | None
                      ) -> tuple[list, set[str], set[str]]:
        """The paper's routing: (the regions of every server whose filter may hold `vkey`
        (any value when None) that hold rows of the index, the servers chosen, all servers
        holding such regions)."""
        v = self._view(table, alias, regions)  # its state: the per-region filters read with it
        filters, placement, region_filters = v.filters, v.placement, v.state.filters
        memo: dict = {}
        held = [r for r in regions if len(region_filters.get((r.id, alias)) or ()) > 0]
        servers = {placement[r.id] for r in held}
        chosen = {srv for srv in servers
                  if vkey is None or filters[srv].probe(vkey, memo)}
        return [r for r in held if placement[r.id] in chosen], chosen, servers

    def _view_event(self, table: str, rid: int, alias: bytes, vkey: bytes, sign: int) -> None:
        v = self._views.get((table, alias))
        if v is None:
            return
        srv = v.placement.get(rid)
        if srv is None:  # a region the view was not built for: rebuilt on next use
            del self._views[(table, alias)]
        elif sign > 0:
            v.filters.setdefault(srv, self._new_filter(0, 0)).add(vkey)
        elif srv in v.filters:
            v.filters[srv].remove(vkey)

    def _drop_views(self, table: str) -> None:
        for key in [k for k in self._views if k[0] == table]:
            del self._views[key]

    # -- write path --------------------------------------------------------------------------
    def before_commit(self, events: list, kv_writes: list) -> None:
        """Before a batch commits (under the write lock): load the filters of the tables its
        `events` ((table, region id, alias, value key, +1 / -1), from local.entry_writes)
        change, and when their saved filters were up to date, add the generation bump to the
        batch (`kv_writes`)."""
        for table in {e[0] for e in events}:
            st = self.fresh_state(table)
            if not st.dirty or self.shared:
                self._bump(table, st, lambda *w: kv_writes.append(w))

    def after_commit(self, events: list) -> None:
        """Apply `events` to the filters once their batch is committed (still under the lock):
        a value entering a region is added, one leaving it removed. With `repack`, a stack
        that would grow a filter is rebuilt instead, as one filter with room for twice its
        values, from the region's committed counts (amortized O(1) per value, like a growing
        array): lookups then hash once and probe one filter per region."""
        live: dict[str, dict[int, Any]] = {}
        regrow: set[tuple[str, int, bytes]] = set()
        with self._lock:
            for table, rid, alias, vkey, sign in events:
                ids = live.get(table)
                if ids is None:
                    ids = live[table] = {r.id: r for r in self.store.regions(table)}
                if rid not in ids:
                    continue  # the region split in this commit: its daughters were rebuilt
                self._view_event(table, rid, alias, vkey, sign)
                if (table, rid, alias) in regrow:
                    continue  # rebuilt from the committed counts below
                st = self.state(table)
                f = st.filters.get((rid, alias))
                if sign > 0:
                    if f is None:
                        f = st.filters[(rid, alias)] = self._new_filter(0, rid)
                    elif self.repack and all(x.fill_ratio() >= 0.5 for x in f.filters):
                        regrow.add((table, rid, alias))
                        continue
                    f.add(vkey)
                elif f is not None:
                    f.remove(vkey)
            for table, rid, alias in regrow:
                counts = self._region_alias_counts(table, live[table][rid], alias)
                self.state(table).filters[(rid, alias)] = self._filter_of(counts, rid)
            self.version += 1

    def _region_alias_counts(self, table: str, region, alias: bytes) -> dict[bytes, int]:
        p = region_prefix(region.start)
        return {key[len(p):]: _GEN.unpack(raw)[0]  # counts are 8-byte big-endian, as _GEN
                for key, raw in self.store.kv_scan(local_value_table(table), p + alias,
                                                   prefix_successor(p + alias))}

    def on_split(self, table: str, parent, left, right, left_counts: dict, right_counts: dict,
                 add: Any) -> None:
        """Inside a split: filters for both daughters from their counts ({alias: {vkey: n}});
        `add(kv, key, value)` puts the generation bump in the split's batch."""
        with self._lock:
            st = self.state(table)
            live = {r.id for r in self.store.regions(table)}
            for key in [k for k in st.filters if k[0] not in live]:
                del st.filters[key]  # ancestors of earlier splits
            for region, counts in ((left, left_counts), (right, right_counts)):
                for alias, c in counts.items():
                    st.filters[(region.id, alias)] = self._filter_of(c, region.id)
            self._drop_views(table)
            self._placements.pop(table, None)
            if not st.dirty:
                self._bump(table, st, add)
            self.version += 1

    # -- persistence ---------------------------------------------------------------------------
    def save(self, table: str | None = None) -> int:
        """Write the filters of `table` (every loaded table when None) that changed since the
        last save; returns the tables written."""
        if self.store.read_only or self.store.closed:
            return 0
        done = 0
        with self.store.write_lock(), self._lock:
            for name in ([table] if table is not None else list(self._states)):
                st = self._states.get(name)
                lrt = routing_table(name)
                if st is None or not st.dirty or lrt not in self.store.kv_tables():
                    continue
                regions = self.store.regions(name)
                by_id = {r.id: r for r in regions}
                writes: list = [(lrt, k, None) for k, _ in self.store.kv_scan(lrt, b"f", b"g")]
                filters = st.filters
                for (rid, alias) in list(filters.keys()):
                    r = by_id.get(rid)
                    if r is not None:
                        key = (rid, alias)
                        blob = (filters.saved_bytes(key) if isinstance(filters, _LazyFilters)
                                else filters[key].to_bytes())
                        writes.append((lrt, b"f" + region_prefix(r.start) + alias,
                                       C.pack([rid, blob])))
                writes.append((lrt, b"s", C.pack([st.gen, [[r.start, r.id] for r in regions]])))
                self.store.write_kv(writes)
                st.dirty = False
                done += 1
        return done

    # -- inspection ----------------------------------------------------------------------------
    def check(self, table: str, alias: bytes | None = None) -> dict[str, Any]:
        """Filters against the per-region counts: false negatives (must be 0), stale positives
        (items a filter still counts after its value left the region), sizes. `alias`: judge
        one local index alone (another one mid-build has counts but no filters yet)."""
        with self.store.write_lock(), self._lock:
            # as lookups see them: on a shared store another client may have changed them
            st = self.fresh_state(table)
            by_start = {r.start: r for r in self.store.regions(table)}
            misses = values = 0
            expected_items: dict[tuple[int, bytes], int] = {}
            for start, by_alias in region_counts(self.store, table).items():
                r = by_start.get(start)
                for alias_, counts in by_alias.items():
                    if alias is not None and alias_ != alias:
                        continue
                    for vkey, n in counts.items():
                        values += 1
                        f = st.filters.get((r.id, alias_)) if r is not None else None
                        if n > 0 and (f is None or vkey not in f):
                            misses += 1
                    if r is not None:
                        expected_items[(r.id, alias_)] = len(counts)
            live = {r.id for r in by_start.values()}
            filters = {k: f for k, f in st.filters.items()
                       if k[0] in live and (alias is None or k[1] == alias)}
            stale = sum(max(0, len(f) - expected_items.get(k, 0)) for k, f in filters.items())
            return {"table": table, "regions": len(by_start), "values": values,
                    "false_negatives": misses, "stale_items": stale,
                    "filters": sum(len(f.filters) for f in filters.values()),
                    "bytes": sum(f.nbytes for f in filters.values()),
                    "overflows": sum(f.overflows for f in filters.values()),
                    "generation": st.gen, "saved": not st.dirty, "source": st.source}
