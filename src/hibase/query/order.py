"""ORDER BY with OFFSET / LIMIT, over the rows a query's shape gives (aggregate.py chooses it):
sorting with NULLs first or last, a top-k heap under a LIMIT, and the index order walk (rows
read in an index's order until OFFSET + LIMIT of them match)."""

from __future__ import annotations

import functools
import heapq
from typing import Any, Iterable, Protocol

from ..errors import QueryPlanError
from ..index import scan_entry_keys
from .ast import Column, OrderItem, Select
from .evaluate import cell_value, matches_dnf
from .execute import execute
from .plan import Plan

__all__ = ["Shape", "ordered_rows", "top"]

_WALK_CHUNK = 64


class Shape(Protocol):
    """What ordering reads of a query's shape (aggregate._Shaped)."""

    select: Select
    how: str
    conjuncts: Any
    spec: Any
    ranges: list
    nulls_after: bool

    @property
    def plan(self) -> Plan: ...


def _compare_keys(order: tuple[OrderItem, ...]):
    def cmp(a: list, b: list) -> int:
        for o, x, y in zip(order, a, b):
            if x is None or y is None:
                if x is None and y is None:
                    continue
                first = (x is None) != o.nulls_last  # x sorts first
                return -1 if first else 1
            if x == y:
                continue
            less = x < y
            return (1 if less else -1) if o.desc else (-1 if less else 1)
        return 0
    return cmp


def top(items: Iterable, order: tuple[OrderItem, ...], key, limit: int | None,
        offset: int | None) -> list:
    """Items sorted by ORDER BY (stable), then OFFSET / LIMIT; with a LIMIT only the first
    offset + limit are kept while reading (a heap), so memory is bounded by them."""
    skip = offset or 0
    if order:
        ck = functools.cmp_to_key(_compare_keys(order))
        if limit is not None:
            items = heapq.nsmallest(skip + limit, items, key=lambda it: ck(key(it)))
        else:
            items = sorted(items, key=lambda it: ck(key(it)))
    elif limit is not None:
        out = []
        for it in items:
            out.append(it)
            if len(out) >= skip + limit:
                break
        items = out
    items = list(items)[skip:]
    return items if limit is None else items[:limit]


def _project(cells: dict, columns) -> dict:
    from .execute import _project as project
    return project(cells, columns)


def ordered_rows(shaped: Shape, store, indexer, types) -> list:
    select = shaped.select
    cols = list(select.columns) if select.columns is not None else None
    if shaped.how == "index-walk":
        return _walk_rows(shaped, store, indexer, types, cols)
    order = select.order_by
    keys = [_order_column(o) for o in order]
    rows = ((row, cells, [cell_value(c, row, cells, types) for c in keys])
            for row, cells in execute(shaped.plan, indexer, types, shaped.conjuncts))
    kept = top(rows, order, lambda it: it[2], select.limit, select.offset)
    return [(row, _project(cells, cols)) for row, cells, _ in kept]


def _order_column(o: OrderItem) -> Column:
    """The column an ORDER BY item of a plain query (or an index walk) names: _prepare has
    refused an aggregate there."""
    if not isinstance(o.expr, Column):
        raise QueryPlanError("ORDER BY an aggregate needs an aggregate query")
    return o.expr


def _walk_rows(shaped: Shape, store, indexer, types, cols) -> list:
    """Rows in index order (backwards for DESC) until OFFSET + LIMIT of them match; each row
    fetched is checked against the whole WHERE and must still hold the entry's value. With
    NULLS LAST and too few rows in the index, the rows with NULL in the column follow, read by
    the WHERE's own plan."""
    select, spec = shaped.select, shaped.spec
    o = select.order_by[0]
    expr = _order_column(o)
    col = expr.name
    if select.limit is None:
        raise AssertionError("an index walk is chosen only for a query with a LIMIT")
    want = (select.offset or 0) + select.limit
    fetch = None if cols is None else sorted(set(cols) | {col} | set(
        _where_columns(shaped.conjuncts)))
    out: list = []
    batch: list = []
    table = select.table

    def flush() -> None:
        got = store.read_latest_many(table, [r for r, _ in batch], fetch, with_ts=False)
        alive: set = set()
        if fetch is not None:  # a NULL-list row lacks the column: does it still exist?
            empty = [r for (r, v), cells in zip(batch, got) if v is None and not cells]
            if empty:
                alive = {r for r, cells in zip(empty, store.read_latest_many(
                    table, empty, None, with_ts=False)) if cells}
        for (row, value), cells in zip(batch, got):
            if (not cells and (value is not None or row not in alive)) \
                    or cell_value(expr, row, cells, types) != value:
                continue  # gone, or changed since its entry was read
            if shaped.conjuncts is None or matches_dnf(shaped.conjuncts, row, cells, types):
                out.append((row, _project(cells, cols)))
        batch.clear()

    for rng, reverse in shaped.ranges:
        for key in scan_entry_keys(store, spec, rng.start, rng.stop, reverse):
            values, row = spec.split_entry(key)
            batch.append((row, values[0]))
            if len(batch) >= _WALK_CHUNK:
                flush()
                if len(out) >= want:
                    break
        if len(out) >= want:
            break
    if batch and len(out) < want:
        flush()
    if len(out) < want and shaped.nulls_after:
        for row, cells in execute(shaped.plan, indexer, types, shaped.conjuncts):
            if cell_value(expr, row, cells, types) is None:
                out.append((row, _project(cells, cols)))
                if len(out) >= want:
                    break
    return out[select.offset or 0:want]


def _where_columns(conjuncts) -> set[bytes]:
    if conjuncts is None:
        return set()
    return {a.column.name for conj in conjuncts for a in conj if not a.column.is_rowkey}
