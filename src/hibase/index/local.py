"""Local (per-region) indexes, as Huawei hindex and 360's HBase index (SPEC §5): index rows live
with their region's data, so a write costs no cross-region index write and a read visits regions.

Local index row, in the key-value table ``__lidx__<table>`` (every local index of the table):

    escaped region start key | alias (2 bytes) | encoded value(s) | user rowkey
        -> msgpack [covered values...]

Per-region value table, in ``__lval__<table>``:

    escaped region start key | alias | encoded value(s)   ->   row count in that region (8 bytes)

The region start key comes first, as 360's ``SK + index id + value + rowkey``; it is written with
codec's escaped, terminated byte-string encoding, so a region's keys never run into those of a
region whose start key extends it. After the prefix, an entry is byte for byte a global index
entry (`IndexSpec.entry_key`), so one `KeyRange` serves both: a local lookup runs the same range
once per region, under each region's prefix, and merges the regions' streams in index order
(the same rows, in the same order, as the global index).

Splits (`split_rewrite`, run inside the store's split batch): the daughter holding the upper half
gets the parent's entries whose rowkey is >= its start key rewritten under its own start key, and
both daughters' counts are recounted from their rows, in the same atomic batch as the new region
boundaries. Queries open their region list and their index iterators together under the write
lock, so a query sees the index either wholly before or wholly after a split: never a row twice
or none. On HBase, where a split's writes are separate RPCs applied as copy, switch, clean up
(store/hbase/layout.py), readers also drop entries whose rowkey lies outside the region scanned,
and split_rewrite is idempotent, so a split that stopped half way is finished by running it again.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from ..store.api import Store
from .. import codec
from ..store import cells as C
from ..store.base import CountDelta
from . import verified
from .spec import (IndexSpec, count_settled, decode_count, encode_count, local_table,
                   local_value_table, region_prefix, routing_table, split_key)

__all__ = ["local_table", "local_value_table", "routing_table", "region_prefix", "Route",
           "entry_writes", "split_rewrite", "plan_route", "scan_entries", "count_values",
           "count_routed", "region_counts", "clear", "region_of", "is_point"]





def _prefix_stop(prefix: bytes) -> bytes:
    return prefix[:-1] + b"\x01"  # prefixes end with the terminator 0x00 0x00




def region_of(store: Store, table: str, row: bytes):
    """The region holding `row` now."""
    return store.region_of(table, row)


# -- write path --------------------------------------------------------------------------------
def entry_writes(store: Store, changes: Iterable, events: list | None = None) -> list:
    """Local index puts/deletes and per-region count deltas for `changes` of local specs (the
    caller holds the write lock, so the rows' regions cannot change before the commit). When
    `events` is a list, a (table, region id, alias, value key, +1 / -1) is appended for each
    value that enters (count 0 -> n) or leaves (n -> 0) a region: the routing filters' changes."""
    writes: list = []
    deltas: dict[tuple[str, bytes], list] = {}
    prefixes: dict[tuple[str, int], bytes] = {}
    for c in changes:
        spec, row, cov, old_vkey, new_vkey = c.spec, c.row, c.covered, c.old_key, c.new_key
        table = spec.table
        region = store.region_of(table, row)
        p = prefixes.get((table, region.id))
        if p is None:
            p = prefixes[(table, region.id)] = region_prefix(region.start)
        idx, val = local_table(table), local_value_table(table)
        if old_vkey is not None and old_vkey != new_vkey:
            writes.append((idx, p + old_vkey + row, None))
            vkey = old_vkey
            d = deltas.get((val, p + vkey))
            if d is None:
                d = deltas[(val, p + vkey)] = [0, table, region.id, vkey]
            d[0] -= 1
        if new_vkey is not None:
            writes.append((idx, p + new_vkey + row, C.pack(cov)))
            if old_vkey != new_vkey:
                vkey = new_vkey
                d = deltas.get((val, p + vkey))
                if d is None:
                    d = deltas[(val, p + vkey)] = [0, table, region.id, vkey]
                d[0] += 1
    by_val: dict[str, list[tuple[bytes, list]]] = {}
    for (val, key), d in deltas.items():
        if d[0]:
            by_val.setdefault(val, []).append((key, d))
    for val, items in by_val.items():
        # counts are written as deltas (no lost update across clients); the counts before are
        # read only to tell the routing filters which values enter or leave a region
        writes += [(val, key, CountDelta(d[0])) for key, d in items]
        if events is None:
            continue
        for (key, (delta, table, rid, vkey)), raw in zip(
                items, store.kv_get(val, [k for k, _ in items])):
            before = decode_count(raw) if raw else 0
            if (before > 0) != (before + delta > 0):
                events.append((table, rid, vkey[:2], vkey, 1 if before + delta > 0 else -1))
    return writes


def split_rewrite(store: Store, specs: dict[bytes, IndexSpec], table: str, parent, right,
                  put: Any, delete: Any) -> tuple[dict, dict]:
    """Move the parent's local rows of rows >= right.start under the right daughter's prefix
    and write both daughters' counts, recounted from their rows (put(kv, key, value) /
    delete(kv, key) add to the split's writes). Returns the daughters' counts
    {alias: {value key: rows}} as (left, right).

    Idempotent: run again over a split that stopped half way (HBase applies the writes as
    separate RPCs), it moves what is left and recounts, rows already moved included."""
    idx, val = local_table(table), local_value_table(table)
    p, pr = region_prefix(parent.start), region_prefix(right.start)
    at = right.start
    left: dict[bytes, dict[bytes, int]] = {}
    right_counts: dict[bytes, dict[bytes, int]] = {}

    def tally(counts: dict, rest: bytes, row: bytes) -> None:
        vkey = rest[:len(rest) - len(row)]
        by_value = counts.setdefault(vkey[:2], {})
        by_value[vkey] = by_value.get(vkey, 0) + 1

    moved: set[bytes] = set()
    known = list(specs.values())
    for key, value in verified.scan(store, idx, known, p, _prefix_stop(p)):
        rest = key[len(p):]
        spec = specs.get(rest[:2])
        if spec is None:  # rows of an index being dropped: leave them to its clear()
            continue
        row = spec.entry_row(rest)
        if row >= at:
            delete(idx, key)
            put(idx, pr + rest, verified.stored(store, value))
            moved.add(rest)
            tally(right_counts, rest, row)
        else:
            tally(left, rest, row)
    for key, _ in verified.scan(store, idx, known, pr, _prefix_stop(pr)):  # moved earlier
        rest = key[len(pr):]
        spec = specs.get(rest[:2])
        if spec is not None and rest not in moved:
            tally(right_counts, rest, spec.entry_row(rest))
    for prefix, counts in ((p, left), (pr, right_counts)):  # write only the counts that change
        stored = {}
        for key, raw in store.kv_scan(val, prefix, _prefix_stop(prefix)):
            if key[len(prefix):len(prefix) + 2] in specs:
                stored[key[len(prefix):]] = raw
        for by_value in counts.values():
            for vkey, n in by_value.items():
                packed = encode_count(n)
                if stored.pop(vkey, None) != packed:
                    put(val, prefix + vkey, packed)
        for vkey in stored:  # values with no row left in this daughter
            delete(val, prefix + vkey)
    return left, right_counts


def clear(store: Store, spec: IndexSpec) -> None:
    """Remove every local row and per-region count of one index, in every region (and under
    any region prefix left behind)."""
    alias = spec.alias
    for kv in (local_table(spec.table), local_value_table(spec.table)):
        if kv not in store.kv_tables():
            continue
        doomed = [key for key, _ in store.kv_scan(kv) if key[split_key(key)[1]:][:2] == alias]
        for i in range(0, len(doomed), 20_000):
            store.write_kv([(kv, k, None) for k in doomed[i:i + 20_000]])


# -- reads -------------------------------------------------------------------------------------
def is_point(spec: IndexSpec, rng) -> bool:
    """Whether KeyRange `rng` fixes every column of the index (one value: a point lookup)."""
    return rng.known == len(spec.types) and rng.stop == codec.prefix_successor(rng.start)


@dataclass
class Route:
    """Which regions a local lookup visits: per key range the regions, and why others are
    skipped (the routing filters, or a region holding no row of the index)."""

    total: int
    per_range: list[list[Any]]
    routed: bool
    skipped_by_filter: int = 0
    skipped_empty: int = 0
    points: int = 0
    version: int = -1  # the router's version when routed (-1: no router)
    region_ids: tuple = ()
    servers: tuple[int, int] | None = None  # routed by server filters: (chosen, holding rows)
    server_kept: bool = False  # not routed: the region server keeps the index (no filters)

    def still_valid(self, store: Store, table: str, router) -> bool:
        """Whether routing now would give this route (same regions, same filters)."""
        routed = router is not None and router.enabled
        if routed:
            router.fresh_state(table)  # shared stores: other clients' filter changes
        return (routed == self.routed and (not routed or router.version == self.version)
                and tuple(r.id for r in store.regions(table)) == self.region_ids)

    @property
    def visits(self) -> int:
        """Region visits (one seek each) over all ranges."""
        return sum(len(rs) for rs in self.per_range)

    @property
    def regions(self) -> list[Any]:
        seen: dict[int, Any] = {}
        for rs in self.per_range:
            for r in rs:
                seen.setdefault(r.id, r)
        return sorted(seen.values(), key=lambda r: r.start)

    def describe(self) -> str:
        visited = len(self.regions)
        text = f"visits {visited} of {self.total} region(s)"
        if len(self.per_range) > 1:
            text += f" ({self.visits} region visit(s) over {len(self.per_range)} ranges)"
        why = []
        if self.skipped_by_filter:
            why.append(f"{self.skipped_by_filter} skipped by SCBF routing")
        if self.skipped_empty:
            why.append(f"{self.skipped_empty} skipped as empty")
        if self.servers is not None:
            why.append(f"{self.servers[0]} of {self.servers[1]} region server(s) by their SCBF")
        if not self.routed:
            why.append("no routing filters (kept by the region server): every region"
                       if self.server_kept else "routing off: every region")
        elif self.points < len(self.per_range):
            why.append("ranges: every region with rows")
        return text + (f", {'; '.join(why)}" if why else "")


def plan_route(store: Store, spec: IndexSpec, ranges: list, router=None) -> Route:
    """The regions a lookup of `ranges` visits now (the caller holds the write lock when the
    route must match iterators opened with it)."""
    regions = store.regions(spec.table)
    # an index the region server keeps has no routing filters: its writes are not seen here,
    # and keeping filters right would mean rebuilding them from the per-region counts after
    # every batch the coprocessor wrote (benchmarks/server_kept_routing.py: one rebuild cost
    # ~4 lookups that visit every region, 2,000 values in 8 regions)
    routed = router is not None and router.enabled and not spec.server
    version = router.version if routed else -1
    per_range: list[list[Any]] = []
    by_filter = empty = points = 0
    by_server = routed and router.level == "server"
    chosen_servers: set[str] = set()
    holding: set[str] = set()
    for rng in ranges:
        point = is_point(spec, rng)
        points += point
        if not routed:
            per_range.append(list(regions))
            continue
        vkey = rng.start if point else None
        if by_server:
            chosen, srv_chosen, srv_holding = router.route_servers(spec.table, spec.alias,
                                                                   regions, vkey)
            chosen_servers |= srv_chosen
            holding |= srv_holding
        else:
            chosen, ruled_out, none = router.route(spec.table, spec.alias, regions, vkey)
            by_filter += ruled_out
            empty += none
        per_range.append(chosen)
    return Route(len(regions), per_range, routed, by_filter, empty, points, version,
                 tuple(r.id for r in regions),
                 (len(chosen_servers), len(holding)) if by_server else None,
                 server_kept=spec.server)


def _first(item: tuple) -> bytes:
    return item[0]


def _region_stream(reader: Any, lo: bytes, hi: bytes, n: int, region: Any
                   ) -> Iterator[tuple[bytes, bytes, Any]]:
    for key, value in reader.scan(lo, hi):
        yield key[n:], value, region


def scan_entries(store: Store, spec: IndexSpec, ranges: list, router=None, route_out: list | None = None,
                 planned: Route | None = None) -> Iterator[tuple[bytes, list]]:
    """(user rowkey, covered values) of every entry in `ranges`, range after range, each range
    in index order merged over the regions the route visits. The route and the iterators are
    taken together under the write lock: one consistent instant even across splits. A route
    `planned` for the same ranges is reused when routing now would give the same one.

    Stores whose reads are no snapshot (HBase, `layout_token`): a split applied by another
    thread or client while the scan runs deletes rows the old route reads, so the whole scan
    is read first and done again when the layout changed meanwhile."""
    if store.capabilities.snapshot_reads:
        yield from _scan_entries(store, spec, ranges, router, route_out, planned)
        return
    token = store.layout_token
    while True:
        before = token(spec.table)
        routes: list = []
        got = list(_scan_entries(store, spec, ranges, router, routes, planned))
        if token(spec.table) == before:
            break
        planned = None
    if route_out is not None:
        route_out.extend(routes)
    yield from got


def _scan_entries(store: Store, spec: IndexSpec, ranges: list, router, route_out: list | None,
                  planned: Route | None) -> Iterator[tuple[bytes, list]]:
    with store.write_lock():
        if planned is not None and planned.still_valid(store, spec.table, router):
            route = planned
        else:
            route = plan_route(store, spec, ranges, router)
        its = {r.id: verified.reader(store, local_table(spec.table), [spec])
               for r in route.regions}
    if route_out is not None:
        route_out.append(route)
    unpack = C.unpack
    ntypes = len(spec.types)
    for rng, regions in zip(ranges, route.per_range):
        if not regions:
            continue
        streams = []
        for r in regions:
            p = region_prefix(r.start)
            hi = p + rng.stop if rng.stop is not None else _prefix_stop(p)
            streams.append(_region_stream(its[r.id], p + rng.start, hi, len(p), r))
        merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=_first)
        full, plen, known = rng.known == ntypes, rng.prefix_len, rng.known
        for rest, value, region in merged:
            row = rest[plen:] if full else spec.entry_row(rest, plen, known)
            # rows outside the region: left under the parent's prefix by a split that is
            # still being applied (HBase, split_rewrite's writes are separate RPCs)
            if row >= region.start and (not region.end or row < region.end):
                yield row, unpack(value)


def count_values(store: Store, spec: IndexSpec, rng, cap: int = 2000, router=None,
                 regions: list | None = None) -> tuple[int, bool]:
    """Rows in the range by per-region counts, summed over the regions: (count, exact). A point
    reads one count per region the routing filters cannot rule out (or per region of
    `regions`, a route's); ranges walk each region's values, at most `cap` in all (then a lower
    bound)."""
    val = local_value_table(spec.table)
    if is_point(spec, rng):
        if regions is None:
            regions = plan_route(store, spec, [rng], router).per_range[0]
        keys = [region_prefix(r.start) + rng.start for r in regions]
        got = [raw for raw in store.kv_get(val, keys) if raw] if keys else []
        return sum(map(decode_count, got)), all(map(count_settled, got))
    total = seen = 0
    exact = True
    for r in (store.regions(spec.table) if regions is None else regions):
        p = region_prefix(r.start)
        hi = p + rng.stop if rng.stop is not None else _prefix_stop(p)
        for _, raw in store.kv_scan(val, p + rng.start, hi):
            if seen >= cap:
                return total, False
            total += decode_count(raw)
            exact &= count_settled(raw)
            seen += 1
    return total, exact


def count_routed(store: Store, spec: IndexSpec, ranges: list, route: Route, cap: int = 2000
                 ) -> tuple[int, bool]:
    """The planner's estimate over a route: per range, the counts in the regions it visits."""
    total, exact = 0, True
    for rng, regions in zip(ranges, route.per_range):
        n, ex = count_values(store, spec, rng, cap, regions=regions)
        total += n
        exact &= ex
    return total, exact


def region_counts(store: Store, table: str) -> dict[bytes, dict[bytes, dict[bytes, int]]]:
    """{region start: {alias: {value key: rows}}} from the per-region value table."""
    out: dict[bytes, dict[bytes, dict[bytes, int]]] = {}
    val = local_value_table(table)
    if val not in store.kv_tables():
        return out
    for key, raw in store.kv_scan(val):
        start, pos = split_key(key)
        vkey = key[pos:]
        out.setdefault(start, {}).setdefault(vkey[:2], {})[vkey] = decode_count(raw)
    return out
