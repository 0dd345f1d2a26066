"""Batch build of an index over a table that already holds data (HiBase's static-data build,
a map-only job there; worker processes over regions here), and verify / repair (Phoenix's
IndexScrutinyTool): compare the index with what a rebuild from the table would produce.

Writes are suspended for the whole build (the caller holds the store's write lock), so no write
can slip between the scan and the index. An interrupted build leaves the index in state
"building", which queries never use; running the build again starts from scratch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, TypeVar

import msgpack

from ..codec import BadCells
from ..store.api import Store
from ..store import cells as C
from .maintain import raw_values
from . import text
from ..store.base import CountDelta, KVWrite
from .verified import as_stored, stored
from .spec import count_settled, decode_count, encode_count
from .local import local_table, local_value_table, region_prefix, split_key
from .spec import BUILDING, READY, STALE, IndexSpec, index_table, value_table

__all__ = ["build_index", "build_indexes", "verify_index", "expected_entries",
           "expected_entries_many"]

_CHUNK = 20_000

T = TypeVar("T")


def expected_entries(store: Store, spec: IndexSpec, start: bytes | None = None,
                     stop: bytes | None = None, bad: BadCells | None = None
                     ) -> tuple[list[tuple[bytes, bytes]], dict]:
    """The sorted index entries and value counts a rebuild of rows [start, stop) produces;
    indexed cells that do not parse as their type are NULL (no entry), counted in `bad`."""
    return expected_entries_many(store, [spec], start, stop, bad)[0]


def expected_entries_many(store: Store, specs: list[IndexSpec], start: bytes | None = None,
                          stop: bytes | None = None, bad: BadCells | None = None
                          ) -> list[tuple[list[tuple[bytes, bytes]], dict]]:
    """expected_entries of several indexes of one table from one scan of its rows (a bulk
    load's rebuild reads the table once, not once per index)."""
    out: list[tuple[list[tuple[bytes, bytes]], dict]] = [([], {}) for _ in specs]
    # a NULL list needs every row that exists, so every column is read (maintain.raw_values)
    columns: list[bytes] | None = None
    if all(s.null_alias is None for s in specs):
        columns = sorted({c for s in specs for c in s.needed})
    pack = C.pack
    work = [(s, s.value_key, s.cells_key, s.covering, entries, counts) for s, (entries, counts)
            in zip(specs, out)]
    for row, cells in store.scan_latest(specs[0].table, start, stop, columns, with_ts=False):
        for spec, value_key, cells_key, cover, entries, counts in work:
            if spec.kind:  # a text index: an entry per token (index/text.py)
                for tkey in text.token_keys(spec, cells):
                    entries.append((tkey + row, pack([])))
                    counts[tkey] = counts.get(tkey, 0) + 1
                continue
            if bad is None:  # the key from the cells, as the upkeep of writes makes it
                vkey = cells_key(cells)
                if vkey is None:
                    continue
            else:  # each cell that does not parse counted in `bad`
                values = raw_values(spec, cells, bad, row)
                if values is None:
                    continue
                vkey = value_key(values)
            entries.append((vkey + row, pack([cells.get(c) for c in cover])))
            counts[vkey] = counts.get(vkey, 0) + 1
    for entries, _ in out:
        entries.sort()
    return out


def _worker_job(path: str, specs: list[IndexSpec], regions: list) -> list[list[tuple[list, dict]]]:
    """Run some regions in one worker process (python -m hibase.index.build_worker): per
    region, (entries, counts) per spec."""
    with tempfile.TemporaryDirectory(prefix="hibase-build-") as tmp:
        out = os.path.join(tmp, "entries.msgpack")
        job = {"path": path, "specs": [spec.to_json().decode() for spec in specs], "out": out,
               "ranges": [(r.start.hex(), r.end.hex()) for r in regions]}
        proc = subprocess.run([sys.executable, "-m", "hibase.index.build_worker"],
                              input=json.dumps(job), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError((proc.stderr.strip().splitlines() or [str(proc.returncode)])[-1])
        with open(out, "rb") as f:
            return msgpack.unpackb(f.read(), raw=False, strict_map_key=False)


PARALLEL_MIN_BYTES = 32 * 1024 * 1024  # below this, starting workers costs more than it saves


def _region_results(store: Store, spec: IndexSpec, processes: int | None
                    ) -> Iterator[tuple[list, dict]]:
    """(entries, counts) per region, in region order."""
    for per_spec in _region_results_many(store, [spec], processes):
        yield per_spec[0]


def _region_results_many(store: Store, specs: list[IndexSpec], processes: int | None
                         ) -> Iterator[list[tuple[list, dict]]]:
    """Per region, in region order, (entries, counts) of each of `specs` (one table's)."""
    regions = store.regions(specs[0].table)
    if processes is None:
        big = sum(r.size for r in regions) >= PARALLEL_MIN_BYTES
        processes = min(len(regions), os.cpu_count() or 1) if big else 1
    if processes <= 1 or len(regions) == 1 or store.read_only:
        for r in regions:
            yield expected_entries_many(store, specs, r.start or None, r.end or None)
        return
    store.flush()  # workers read SST files and the WAL; flushing makes their replay short
    # Worker processes, not threads (the scan is Python-bound), each taking a contiguous share
    # of the regions; started as fresh interpreters, never forked from a process running
    # RocksDB threads.
    share = -(-len(regions) // processes)
    groups = [regions[i:i + share] for i in range(0, len(regions), share)]
    with ThreadPoolExecutor(len(groups)) as pool:
        futures = [pool.submit(_worker_job, store.path, specs, g) for g in groups]
        for group, fut in zip(groups, futures):
            try:
                results = fut.result()
            except Exception as exc:  # a worker that cannot run: do its regions here
                warnings.warn(f"index build worker failed ({exc}); building its regions "
                              "in this process", RuntimeWarning, stacklevel=2)
                results = [expected_entries_many(store, specs, r.start or None, r.end or None)
                           for r in group]
            yield from results


def build_index(store: Store, catalog, spec: IndexSpec, processes: int | None = None,
                progress: Callable[[int, int], Any] | None = None, router: Any = None
                ) -> dict[str, int]:
    """Rebuild `spec` from its table; returns {"rows_indexed", "values", "regions"}. A local
    index's routing filters are rebuilt by `router` (the index manager's)."""
    if spec.server:
        return _build_server(store, catalog, spec, progress)
    if spec.local:
        return _build_local(store, catalog, spec, processes, progress, router)
    report = (lambda name, done, total: progress(done, total)) if progress else None
    return _build_global(store, catalog, [spec], processes, report)[0]


def _build_global(store: Store, catalog, specs: list[IndexSpec], processes: int | None,
                  progress: Callable[[str, int, int], Any] | None) -> list[dict[str, int]]:
    """Rebuild global indexes of one table from one scan of its rows (in worker processes when
    the table is big): each cleared, its entries and value counts written, then READY."""
    with store.write_lock():
        for spec in specs:
            catalog.clear(spec)
        regions = len(store.regions(specs[0].table))
        idx, val = index_table(specs[0].table), value_table(specs[0].table)
        counts: list[dict[bytes, int]] = [{} for _ in specs]
        totals = [0] * len(specs)
        done = 0
        for per_spec in _region_results_many(store, specs, processes):
            for j, (entries, region_counts) in enumerate(per_spec):
                for i in range(0, len(entries), _CHUNK):
                    store.write_kv([(idx, k, stored(store, v))
                                    for k, v in entries[i:i + _CHUNK]])
                totals[j] += len(entries)
                for vkey, n in region_counts.items():
                    counts[j][vkey] = counts[j].get(vkey, 0) + n
            done += 1
            if progress:
                for spec in specs:
                    progress(spec.name, done, regions)
        stats = []
        for spec, spec_counts, total in zip(specs, counts, totals):
            items = sorted(spec_counts.items())
            # the clear left every count at 0: deltas set them without a read per chunk
            for i in range(0, len(items), _CHUNK):
                store.write_kv([(val, k, CountDelta(n)) for k, n in items[i:i + _CHUNK]])
            catalog.set_state(spec, READY)
            stats.append({"rows_indexed": total, "values": len(spec_counts), "regions": regions})
    return stats


def build_indexes(store: Store, catalog, specs: list[IndexSpec], processes: int | None = None,
                  progress: Callable[[str, int, int], Any] | None = None, router: Any = None
                  ) -> list[dict[str, int]]:
    """build_index of several indexes of one table (a bulk load's rebuild), the global ones
    from one scan of the table; an index the region server keeps, or a local one, is built
    alone. `progress(name, done, total)`."""
    alone = [s for s in specs if s.server or s.local]
    together = [s for s in specs if not (s.server or s.local)]
    stats: dict[str, dict[str, int]] = {}
    for spec in alone:
        report = (lambda done, total, n=spec.name: progress(n, done, total)) if progress \
            else None
        stats[spec.name] = build_index(store, catalog, spec, processes, report, router)
    if together:
        for spec, got in zip(together, _build_global(store, catalog, together, processes,
                                                     progress)):
            stats[spec.name] = got
    return [stats[s.name] for s in specs]


def counted(store: Store, spec: IndexSpec) -> tuple[int, int]:
    """(rows indexed, distinct values) of an index, as its value counts say: what a build
    made where no entry passed through this process (the coprocessor's, a MapReduce job's)."""
    from ..codec import prefix_successor
    rows = values = 0
    if spec.local:
        for key, raw in store.kv_scan(local_value_table(spec.table)):
            if key[split_key(key)[1]:][:2] == spec.alias:
                rows += decode_count(raw)
                values += 1
        return rows, values
    for alias in spec.aliases:
        for _, raw in store.kv_scan(value_table(spec.table), alias, prefix_successor(alias)):
            rows += decode_count(raw)
            values += 1
    return rows, values


def rebuild_server_kept(store: Store, catalog, spec: IndexSpec, fill: Callable[[], T]) -> T:
    """How an index the region server keeps is rebuilt: stale (the coprocessor stops writing
    it; every client knows once the lease passed), cleared, `building` (the coprocessor keeps
    every write again), then `fill()` hands the rows to the coprocessor, then ready."""
    catalog.set_state(spec, STALE)
    store.wait_lease()
    # a write batch the coprocessor began while the index was kept still writes its entries
    # and puts its count cell's totals after the lease: the clear would be undone in part
    # (issue 37 item 5: bad_counts after a build racing plain writes)
    store.drain_server_writes(spec.table)
    catalog.clear(spec)
    catalog.set_state(spec, BUILDING)
    store.wait_lease()
    store.drain_server_writes(spec.table)  # writes that did not keep it have landed
    out = fill()
    catalog.set_state(spec, READY)
    return out


def _build_server(store: Store, catalog, spec: IndexSpec,
                  progress: Callable[[int, int], Any] | None) -> dict[str, int]:
    """An index the region server keeps (spec.server): its entries go (stale: the coprocessor
    stops writing them, then cleared), then it is `building` (the coprocessor keeps every
    write from then on, looking up whether a row's old entry exists before taking its count)
    and every existing row is handed to the coprocessor (store.reindex), which writes the
    row's entry and count under the row's lock unless a write did already. No entry is
    computed here, so the build never races a writer of any client."""
    rebuild_server_kept(store, catalog, spec,
                        lambda: store.reindex(spec.table, spec.alias, progress))
    rows, values = counted(store, spec)
    return {"rows_indexed": rows, "values": values, "regions": len(store.regions(spec.table))}


def _build_local(store: Store, catalog, spec: IndexSpec, processes: int | None,
                 progress: Callable[[int, int], Any] | None, router: Any) -> dict[str, int]:
    """A local index: each region's entries and counts under the region's prefix."""
    with store.write_lock():
        catalog.clear(spec)
        regions = store.regions(spec.table)
        idx, val = local_table(spec.table), local_value_table(spec.table)
        total = done = 0
        values = 0
        for r, (entries, counts) in zip(regions, _region_results(store, spec, processes)):
            p = region_prefix(r.start)
            for i in range(0, len(entries), _CHUNK):
                store.write_kv([(idx, p + k, stored(store, v))
                                for k, v in entries[i:i + _CHUNK]])
            items = sorted(counts.items())
            for i in range(0, len(items), _CHUNK):
                store.write_kv([(val, p + k, CountDelta(n))
                                for k, n in items[i:i + _CHUNK]])
            total += len(entries)
            values += len(items)
            done += 1
            if progress:
                progress(done, len(regions))
        if router is not None:
            router.rebuild(spec.table)
        catalog.set_state(spec, READY)
    return {"rows_indexed": total, "values": values, "regions": len(regions)}


def _local_state(store: Store, spec: IndexSpec, bad: BadCells | None = None
                 ) -> tuple[list, dict, list, dict]:
    """Expected and actual (entries, counts) of a local index, keys with region prefixes."""
    expected: list = []
    counts: dict[bytes, int] = {}
    for r in store.regions(spec.table):
        entries, c = expected_entries(store, spec, r.start or None, r.end or None, bad)
        p = region_prefix(r.start)
        expected += [(p + k, v) for k, v in entries]
        counts.update((p + k, n) for k, n in c.items())
    mine = lambda key: key[split_key(key)[1]:][:2] == spec.alias  # noqa: E731
    actual = as_stored(store, ((k, v) for k, v in store.kv_scan(local_table(spec.table))
                               if mine(k)))
    have_counts = {k: _count(v)
                   for k, v in store.kv_scan(local_value_table(spec.table)) if mine(k)}
    return expected, counts, actual, have_counts


def _count(raw: bytes) -> int | None:
    """A stored count as verify compares it: None while it is unsettled (never equal)."""
    return decode_count(raw) if count_settled(raw) else None


def verify_index(store: Store, spec: IndexSpec, repair: bool = False, router: Any = None
                 ) -> dict[str, Any]:
    """Compare index and value table with a rebuild; with repair, write the differences. For a
    local index the per-region rows and counts are compared, and the routing filters checked
    (no false negatives; repair rebuilds them) unless the region server keeps the index:
    its lookups visit every region, the filters are not used (`routing.used` False). On a
    table with a TTL (spec.expires) what expiry explains is reported apart ("expired" rows,
    "stale_counts"), not as differences; repair removes and settles it too.

    An indexed cell that does not parse as its declared type (another writer's) is NULL, so
    the index holds no entry for it: the report counts such cells (`bad_cells`, the first few
    in `bad_cell_examples` as {"row", "column"}) without making the index NOT OK, which
    judges only whether the index matches the table."""
    from ..codec import prefix_successor
    bad = BadCells()
    # entries as stored (as_stored): on stores with verified / unverified entries (HBase)
    # leftovers of a writer that died mid-write count as wrong / extra and repair fixes them
    with store.write_lock():
        if spec.local:
            expected, counts, actual, have_counts = _local_state(store, spec, bad)
            idx, val = local_table(spec.table), local_value_table(spec.table)
        else:
            expected, counts = expected_entries(store, spec, bad=bad)
            idx, val = index_table(spec.table), value_table(spec.table)
            actual, have_counts = [], {}
            for alias in spec.aliases:  # its entries, and its NULL list's
                stop = prefix_successor(alias)
                actual += as_stored(store, store.kv_scan(idx, alias, stop))
                have_counts.update((k, _count(v))
                                   for k, v in store.kv_scan(val, alias, stop))
        want = dict(expected)
        have = dict(actual)
        missing = [k for k in want if k not in have]
        extra = [k for k in have if k not in want]
        wrong = [k for k in want if k in have and have[k] != want[k]]
        bad_counts = sorted(set(counts) ^ set(have_counts) |
                            {k for k, n in have_counts.items() if n != counts.get(k)})
        differences = missing, extra, wrong, bad_counts
        expired: set[bytes] = set()
        stale_counts = 0
        if spec.expires:
            # a table with a TTL: entries and counts outlive expired cells (_expired), and
            # no answer is taken from either (plan._candidates_only); repair settles both
            expired = _expired(spec, want, have, missing, extra, wrong)
            missing, extra, wrong = ([k for k in keys if k not in expired]
                                     for keys in (missing, extra, wrong))
        if spec.expires or spec.lags:
            # counts no answer is taken from: outliving expired cells (a TTL), or not kept
            # with the entries (an eventual index the region servers keep): reported apart
            stale_counts, bad_counts = len(bad_counts), []
        report = {"index": spec.name, "table": spec.table, "entries": len(expected),
                  "missing": len(missing), "extra": len(extra), "wrong_covered": len(wrong),
                  "bad_counts": len(bad_counts),
                  # of those, counts a write left pending (in flight, or its writer stopped
                  # between the verified protocol's phases): no answer is taken from them
                  "pending_counts": sum(n is None for n in have_counts.values()),
                  # rows whose entries outlived expired cells (a TTL), and counts that differ
                  # from a rebuild's meanwhile: not differences, no answer is taken from
                  # them; repair removes / settles them
                  "expired": len({_rowkey(spec, k) for k in expired}),
                  "stale_counts": stale_counts,
                  "examples": {"missing": [_rowkey(spec, k) for k in missing[:5]],
                               "extra": [_rowkey(spec, k) for k in extra[:5]]},
                  "bad_cells": bad.count,
                  "bad_cell_examples": bad.as_json()["examples"],
                  "ok": not (missing or extra or wrong or bad_counts), "repaired": False}
        if spec.local and router is not None and spec.server:
            # the coprocessor writes its entries where this client's filters never see them:
            # lookups visit every region (local.plan_route), so there is nothing to be exact
            # about; the filters are neither read nor judged
            report["routing"] = {"table": spec.table, "used": False, "false_negatives": 0,
                                 "why": "the index is kept by the region server; lookups "
                                        "visit every region"}
        elif spec.local and router is not None:
            routing = router.check(spec.table, spec.alias)
            routing["used"] = router.enabled
            report["routing"] = routing
            report["ok"] = report["ok"] and routing["false_negatives"] == 0
        if repair and (expired or stale_counts or not report["ok"]):
            missing, extra, wrong, bad_counts = differences  # expired ones go too
            writes: list[KVWrite] = [(idx, k, stored(store, want[k])) for k in missing + wrong]
            writes += [(idx, k, None) for k in extra]
            writes += [(val, k, encode_count(counts[k]) if k in counts else None)
                       for k in bad_counts]
            for i in range(0, len(writes), _CHUNK):
                store.write_kv(writes[i:i + _CHUNK])
            if spec.local and router is not None and not spec.server:
                router.rebuild(spec.table)
            report["repaired"] = True
        return report


def _parts(spec: IndexSpec, key: bytes, payload: bytes | None
           ) -> tuple[list, bytes, list | None]:
    """(values, user rowkey, covered values or None: an unverified entry's) of an entry."""
    if spec.local:
        key = key[split_key(key)[1]:]
    values, row = spec.split_entry(key)
    # 0x00: an unverified entry's rowkey (verified.as_stored), no covered values
    covered = None if payload is None or payload[:1] == b"\x00" else C.unpack(payload)
    return values, row, covered


def _expired(spec: IndexSpec, want: dict, have: dict, missing: list, extra: list,
             wrong: list) -> set[bytes]:
    """The differing entry keys that expiry explains, on a table with a TTL (spec.expires).
    HBase's TTL is per cell and only turns cells into NULL, so a row's live entry is its
    stored one with some indexed or covered values NULL (a row whose cells all expired has
    none), and an entry is orphaned when a write comes after some cell expired (upkeep reads
    the row as it is then, and no longer sees the old entry's value). So: every extra entry
    (no live row has it), a wrong one whose covered values are the stored ones or NULL, and a
    missing one whose row has a stored entry it is such a NULLed copy of. Verify cannot tell
    an extra entry of expired cells from one a lost delete left behind: both are `expired`,
    neither is an answer (queries check each row: plan._candidates_only), repair removes
    both. A missing entry no expiry explains stays a difference (a row the index would miss)."""
    def covers(old: list, now: list) -> bool:
        return all(b is None or a == b for a, b in zip(old, now))

    out = set(extra)
    stored_rows: dict[bytes, list[tuple[list, list | None]]] = {}
    for k in extra:
        values, row, covered = _parts(spec, k, have[k])
        stored_rows.setdefault(row, []).append((values, covered))
    for k in wrong:
        _, _, covered = _parts(spec, k, have[k])
        _, _, covered2 = _parts(spec, k, want[k])
        if covered is not None and covered2 is not None and covers(covered, covered2):
            out.add(k)
    for k in missing:
        values2, row, covered2 = _parts(spec, k, want[k])
        if any(covered is not None and covered2 is not None and covers(values, values2)
               and covers(covered, covered2) for values, covered in stored_rows.get(row, ())):
            out.add(k)
    return out


def _rowkey(spec: IndexSpec, key: bytes) -> bytes:
    """The user rowkey of a global or local (region-prefixed) entry key."""
    if spec.local:
        key = key[split_key(key)[1]:]
    return spec.split_entry(key)[1]
