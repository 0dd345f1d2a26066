"""Running a plan: per conjunct its access path, covered values or one multi-get of the rows,
the residual predicates, then the union of conjuncts without duplicates."""

from __future__ import annotations

import threading
from itertools import islice
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

from ..index import is_point, scan_entries, scan_local, scan_points, walk_values
from .ast import ROWKEY, And
from .evaluate import matches
from .plan import IndexLookup, Intersect, Plan, RowGet, RowRange, Step
from .scan import conjunct_test, full_scan, quick_test
from .textsearch import TextLookup
from .scan import project as _project

__all__ = ["execute"]

_FETCH_CHUNK = 1000
_COMPILE_AFTER = 64  # rows fetched before the conjunct's check is compiled


def _lookup_rows(indexer, lk: IndexLookup) -> Iterator[tuple[bytes, list]]:
    """(rowkey, covered values) from one index lookup: point lookups of full values through
    the hot cache, ranges by ordered index scan or by value-table walk + point lookups."""
    spec, store = lk.spec, indexer.store
    if spec.local:  # each key range under every region the routing filters cannot rule out
        yield from scan_local(store, spec, lk.ranges, indexer.router, planned=lk.route)
        return
    if lk.method == "merge":  # a long IN list: one scan from its smallest to largest value
        yield from scan_points(store, spec, [rng.start for rng in lk.ranges])
        return
    # the cache answers a server-kept index only under the table's write version as of this
    # lookup: read once here (one get) for all of the lookup's values
    tag = indexer.cache_tag(spec) if indexer.cache is not None else None
    if lk.method != "walk":
        for rng in lk.ranges:
            if is_point(spec, rng):
                yield from indexer.read_value(spec, rng.start, tag)
            else:
                yield from scan_entries(store, spec, rng)
        return
    # a full value is its own value key: only ranges walk the value table (a point lookup the
    # hot cache answers then makes no store call at all)
    vkeys = [vkey for rng in lk.ranges
             for vkey in ([rng.start] if is_point(spec, rng) else
                          (v for v, _, _ in walk_values(store, spec, rng)))]
    # an in-process cache answers faster alone than through threads (cache.parallel False);
    # without a cache the point lookups go to the store in parallel
    if len(vkeys) <= 1 or (indexer.cache is not None and not indexer.cache.parallel):
        for vkey in vkeys:
            yield from indexer.read_value(spec, vkey, tag)
        return
    for entries in _walk_pool().map(lambda v: indexer.read_value(spec, v, tag), vkeys):
        yield from entries


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _walk_pool() -> ThreadPoolExecutor:
    """One shared pool for the parallel point lookups of value-table walks (starting threads
    per query would cost more than the lookups)."""
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="hibase-walk")
    return _POOL


def _candidates(indexer, table: str, step: Step) -> Iterator[tuple[bytes, dict | None]]:
    """(rowkey, covered cells or None) of the rows the step's path yields."""
    path = step.path
    if isinstance(path, RowGet):
        for row in path.rows:
            yield row, None
    elif isinstance(path, IndexLookup):
        cover = path.spec.covering
        for row, values in _lookup_rows(indexer, path):
            yield row, {c: v for c, v in zip(cover, values) if v is not None}
    elif isinstance(path, Intersect):
        first, *rest = path.lookups
        keep: set[bytes] | None = None
        for lk in rest:
            rows = {row for row, _ in _lookup_rows(indexer, lk)}
            keep = rows if keep is None else keep & rows
        cover = first.spec.covering
        for row, values in _lookup_rows(indexer, first):
            if keep is None or row in keep:
                yield row, {c: v for c, v in zip(cover, values) if v is not None}
    elif isinstance(path, TextLookup):  # CONTAINS through a text index: candidate rows
        for row in path.rows(indexer.store):
            yield row, None
    else:  # pragma: no cover - full scans are planned as a whole
        raise AssertionError(path)


def _fetch_columns(plan: Plan, step_residual_cols: set[bytes]) -> list[bytes] | None:
    if plan.columns is None:
        return None
    cols = set(plan.columns) | step_residual_cols
    cols.discard(ROWKEY)
    return sorted(cols)


def _run_step(indexer, table: str, plan: Plan, step: Step, types) -> Iterator[tuple[bytes, dict]]:
    store = indexer.store
    node = And(tuple(step.residual)) if step.residual else None
    if isinstance(step.path, RowRange):
        for row, got in store.scan_latest(table, step.path.start, step.path.stop):
            cells = {c: tv[1] for c, tv in got.items()}
            if node is None or matches(node, row, cells, types):
                yield row, _project(cells, plan.columns)
        return
    # index entries prove the row exists; a rowkey get must check it when no column came back
    check_exists = isinstance(step.path, RowGet) and plan.columns is not None
    if not step.fetch:
        path = step.path
        if node is None and isinstance(path, IndexLookup) and plan.columns is not None and \
                all(b":" in c or c == ROWKEY for c in plan.columns):
            # covered with nothing left to check: each entry's selected values taken by
            # position, no row of its covered cells built to be projected
            cover = path.spec.covering
            picks = [(c, cover.index(c)) for c in dict.fromkeys(plan.columns) if c in cover]
            for row, values in _lookup_rows(indexer, path):
                n = len(values)  # as zip(cover, values): a shorter entry lacks the rest
                yield row, {c: values[i] for c, i in picks if i < n and values[i] is not None}
            return
        for row, covered in _candidates(indexer, table, step):
            if node is None or matches(node, row, covered or {}, types):
                yield row, _project(covered or {}, plan.columns)
        return
    # A fetched row is read after its index entry: a write in between can move it out of the
    # condition. The whole conjunct, not just the residual, is checked on the cells returned,
    # so every row returned satisfies the query against the data returned with it.
    node = And(tuple(step.conjunct)) if step.conjunct else None
    fetch_cols = _fetch_columns(plan, {a.column.name for a in step.conjunct})
    read_many = store.read_latest_many
    batch: list[bytes] = []
    test = None if node is None else quick_test(tuple(step.conjunct), types)

    def flush(test) -> Iterator[tuple[bytes, dict]]:
        for row, cells in zip(batch, read_many(table, batch, fetch_cols, with_ts=False)):
            if not cells and (plan.columns is None or
                              (check_exists and not read_many(table, [row])[0])):
                continue
            if test is None or test(row, cells):
                yield row, _project(cells, plan.columns)
        batch.clear()

    # rows are fetched in multi-gets that grow from 16 to _FETCH_CHUNK, so a LIMIT query
    # reads little more than it returns and a big result pays few round trips
    chunk = 16
    for row, _ in _candidates(indexer, table, step):
        batch.append(row)
        if len(batch) >= chunk:
            yield from flush(test)
            if chunk == _COMPILE_AFTER and node is not None:
                # a big result: the conjunct compiled once (scan.py) checks the rest faster
                # than the tree walk; small results never pay the compilation
                test = conjunct_test(step.conjunct, types)
            chunk = min(chunk * 4, _FETCH_CHUNK)
    yield from flush(test)


def _one_value(step: Step) -> bool:
    """Is the step one point lookup of one global index value (the plan of `f.a = ?`)?"""
    path = step.path
    return (isinstance(path, IndexLookup) and not path.spec.local and path.method == "scan"
            and len(path.ranges) == 1 and is_point(path.spec, path.ranges[0]))


def _value_rows(indexer, table: str, plan: Plan, step: Step, types
                ) -> list | Iterator[tuple[bytes, dict]]:
    """_run_step's rows for a step of _one_value, in one pass: the value's entries (unique
    rowkeys, in rowkey order) read at once; covered values picked from them, or the rows
    fetched in one multi-get and checked against the whole conjunct, as _run_step does."""
    lk = step.path
    assert isinstance(lk, IndexLookup)
    spec = lk.spec
    tag = indexer.cache_tag(spec) if indexer.cache is not None else None
    entries = indexer.read_value(spec, lk.ranges[0].start, tag)
    if not entries:
        return []
    columns = plan.columns
    if not step.fetch:
        cover = spec.covering
        if not step.residual and columns is not None and \
                all(b":" in c or c == ROWKEY for c in columns):
            picks = [(c, cover.index(c)) for c in dict.fromkeys(columns) if c in cover]
            if len(picks) == 1:
                c, i = picks[0]
                return [(row, {c: values[i]} if i < len(values) and values[i] is not None
                         else {}) for row, values in entries]
            return [(row, {c: values[i] for c, i in picks
                           if i < len(values) and values[i] is not None})
                    for row, values in entries]
        node = And(tuple(step.residual)) if step.residual else None
        out = []
        for row, values in entries:
            covered = {c: v for c, v in zip(cover, values) if v is not None}
            if node is None or matches(node, row, covered, types):
                out.append((row, _project(covered, columns)))
        return out
    return _fetched(indexer.store, table, plan, step, types, [row for row, _ in entries])


def _fetched(store, table: str, plan: Plan, step: Step, types, rows: list
             ) -> Iterator[tuple[bytes, dict]]:
    """The rows of _value_rows that are fetched: in multi-gets growing from 16 rows to
    _FETCH_CHUNK, each fetched as late as _run_step fetches it (a row a write moves out of
    the condition before its fetch is not returned), and checked against the whole conjunct."""
    columns = plan.columns
    fetch_cols = _fetch_columns(plan, {a.column.name for a in step.conjunct})
    test = None if not step.conjunct else (
        quick_test(tuple(step.conjunct), types) if len(rows) <= _COMPILE_AFTER
        else conjunct_test(step.conjunct, types))
    read_many = store.read_latest_many
    start, chunk = 0, 16
    while start < len(rows):
        batch = rows[start:start + chunk]
        start += chunk
        chunk = min(chunk * 4, _FETCH_CHUNK)
        for row, cells in zip(batch, read_many(table, batch, fetch_cols, with_ts=False)):
            if not cells and columns is None:
                continue
            if test is None or test(row, cells):
                yield row, (cells if columns is None else _project(cells, columns))


def execute(plan: Plan, indexer, types, conjuncts=None) -> Iterator[tuple[bytes, dict]]:
    """Rows (rowkey, {column: value}) matching the plan's query, each once; a single conjunct
    streams in its access path's order, several come back in rowkey order."""
    table = plan.select.table
    limit = plan.select.limit
    if plan.full_scan:
        yield from full_scan(plan, indexer.store, types, conjuncts, limit)
        return
    if len(plan.steps) == 1 and limit is None and _one_value(plan.steps[0]):
        yield from _value_rows(indexer, table, plan, plan.steps[0], types)
        return
    if len(plan.steps) == 1:
        yield from islice(_unique(_run_step(indexer, table, plan, plan.steps[0], types)), limit)
        return
    found: dict[bytes, dict] = {}
    for step in plan.steps:
        for row, data in _run_step(indexer, table, plan, step, types):
            found.setdefault(row, data)
    for row in islice(sorted(found), limit):
        yield row, found[row]


def _unique(rows: Iterator[tuple[bytes, dict]]) -> Iterator[tuple[bytes, dict]]:
    """Each row once: IN lists on several ranges can meet one row once each."""
    seen: set[bytes] = set()
    for row, data in rows:
        if row not in seen:
            seen.add(row)
            yield row, data

