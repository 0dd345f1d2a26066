"""The query layer's face: SQL text or a condition in, planned and executed rows out."""

from __future__ import annotations

from typing import Any, Iterator

from . import aggregate, fast, pushdown
from .ast import Select
from .execute import execute
from .plan import FullScan
from .params import bind
from .parse import MAX_STATEMENT, check_size, parse_condition, parse_select, parse_where
from .prepare import RANGE_METHODS, Shape, prepare, prepared, shape_of, types_of
from .resolve import resolve_casts
from ..codec import encode_cell
from .cast import result_type
from .evaluate import cell_value

__all__ = ["parse_select", "parse_condition", "parse_where", "check_size", "MAX_STATEMENT",
           "prepare", "run", "run_select", "select_rows", "explain", "bind", "types_of",
           "shape_of", "Shape", "RANGE_METHODS"]


def run(select: Select, store, indexer, range_method: str = "auto", full_scan: bool = False,
        params: Any = None) -> Iterator[tuple[bytes, dict]]:
    """The rows of a plain query, streamed; ``params`` binds its placeholders."""
    select = _resolved(select, store)
    if select.computed:
        return _computed(select, store, run(_fetching_sources(bind(select, params)), store,
                                             indexer, range_method, full_scan))
    plan, conjuncts, shape = prepared(select, store, indexer, range_method, full_scan, params,
                                      template=True)
    return execute(plan, indexer, shape.types, conjuncts)


def _resolved(select: Select, store) -> Select:
    """``select`` with its casts resolved against the schema; a statement without casts (the
    lean path's common case) skips the schema lookup."""
    return resolve_casts(select, store.schema(select.table)) if select.casts else select


def _fetching_sources(select: Select) -> Select:
    """A plain query whose select list has casts, reading their columns instead (the casts are
    then computed from them by _computed)."""
    keys = {c.key for c in select.computed}
    columns = [c for c in select.columns or () if c not in keys]
    columns += [c.name for c in select.computed if c.name not in columns]
    return select.with_(columns=tuple(columns), computed=())


def _computed(select: Select, store, rows) -> Iterator[tuple[bytes, dict]]:
    """Rows of ``_fetching_sources(select)`` with each cast of the select list computed (as
    its text) and the columns read only for them dropped."""
    types = types_of(select.with_(computed=()), store)
    keep = set(select.columns or ())
    for key, cells in rows:
        out = {c: v for c, v in cells.items() if c in keep}
        for col in select.computed:
            v = cell_value(col, key, cells, types)
            if v is not None:
                out[col.key] = encode_cell(result_type(col), v)
        yield key, out


def _shaped(select: Select) -> bool:
    """Does the query need the aggregate / ordering layer (query/aggregate.py, order.py)?"""
    return select.aggregate or bool(select.order_by) or select.offset is not None


def run_select(select: Select, store, indexer, range_method: str = "auto",
               full_scan: bool = False, params: Any = None) -> list:
    """All result rows of a query: (rowkey, {column: value}) for plain queries (also with
    ORDER BY / OFFSET), tuples of decoded values for aggregate, GROUP BY and DISTINCT ones."""
    return select_rows(select, store, indexer, range_method, full_scan, params)[0]


def select_rows(select: Select, store, indexer, range_method: str = "auto",
                full_scan: bool = False, params: Any = None) -> tuple[list, Shape | None]:
    """run_select's rows, and the Shape of a plain query read without casts (its types and
    cell decoders, for decoding the rows; None for the others): the statement's types are
    computed once, with its plan."""
    select = _resolved(select, store)
    if _shaped(select):
        select = bind(select, params)
        if select.computed:
            return list(_computed(select, store, aggregate.run(
                _fetching_sources(select), store, indexer, range_method, full_scan))), None
        return aggregate.run(select, store, indexer, range_method, full_scan), None
    if select.computed:
        return list(run(select, store, indexer, range_method, full_scan, params)), None
    plan, conjuncts, shape = prepared(select, store, indexer, range_method, full_scan, params,
                                      template=True)
    # only a plan scanning the table may be routed (an index plan, the common case, skips
    # both checks)
    scanning = select.where is not None and (
        plan.full_scan or not plan.steps or isinstance(plan.steps[0].path, FullScan))
    if scanning:
        # a filtered scan runs in the region servers (query/pushdown.py) when no index answers
        work = pushdown.routable(plan.select, store, plan)
        if work is not None:
            return pushdown.run(plan.select, store, work), shape
    if scanning and fast.ENABLED:
        # a filtered scan runs on the columnar feed (query/fast.py) when no index answers
        route = fast.routable(plan.select, store, plan)
        if route is not None:
            rows = fast.run(plan.select, store, route)
            if rows is not None:
                return rows, shape
    return list(execute(plan, indexer, shape.types, conjuncts)), shape


def explain(select: Select, store, indexer, range_method: str = "auto",
            full_scan: bool = False, params: Any = None) -> str:
    """The plan of a query as text (EXPLAIN): the plan it runs by (of its shape, planned
    with these values)."""
    select = _resolved(select, store)
    if select.computed:
        select = _fetching_sources(select)
    if _shaped(select):
        return aggregate.explain(bind(select, params), store, indexer, range_method, full_scan)
    plan = prepare(select, store, indexer, range_method, full_scan, params)[0]
    route = fast.routable(plan.select, store, plan) if select.where is not None else None
    text = plan.explain()
    work = pushdown.routable(plan.select, store, plan) if select.where is not None else None
    if work is not None:
        return "\n".join([text.splitlines()[0]] + pushdown.describe(work, store)
                         + ["  (below: the lean plan, taken with scan_pushdown=0)"]
                         + text.splitlines()[1:])
    why = pushdown.unavailable(plan.select, store, plan) if select.where is not None else None
    if why is not None:
        text += f"\n  NOTE {why}"
    return text if route is None else "\n".join([text.splitlines()[0]] + fast.describe(route)
                                                 + text.splitlines()[1:])
