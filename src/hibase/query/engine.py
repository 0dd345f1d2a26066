"""The query layer's face: SQL text or a condition in, planned and executed rows out."""

from __future__ import annotations

import functools
from typing import Any, Iterator

from .. import errors
from .ast import ROWKEY, Select
from .columns import statement_types, usable_specs
from .evaluate import referenced_columns
from .execute import execute
from .normalize import normalize, typed
from .params import bind
from .parse import MAX_STATEMENT, check_size, parse_condition, parse_select, parse_where
from .plan import Plan, plan_query

__all__ = ["parse_select", "parse_condition", "parse_where", "check_size", "MAX_STATEMENT",
           "prepare", "run", "run_select", "explain", "bind", "types_of"]

RANGE_METHODS = ("auto", "scan", "walk")


def _check_columns(schema, columns) -> None:
    for col in columns:
        if col == ROWKEY:
            continue
        fam = col.split(b":", 1)[0]
        if fam not in schema.families:
            raise errors.ColumnNotFound(
                f"table {schema.name!r} has no column {col.decode(errors='replace')!r} "
                f"(families: {', '.join(f.decode() for f in schema.families)})")


@functools.lru_cache(maxsize=4096)
def _normalized(where: Any, types: tuple) -> tuple[Any, list]:
    """The typed condition and its DNF: pure functions of the (immutable) tree and the column
    types, cached so a repeated query skips them."""
    typed_where = typed(where, dict(types))
    return typed_where, normalize(typed_where, dict(types))


def types_of(select: Select, store) -> Any:
    """The column types ``select`` reads with: declared, overridden by its CASTs."""
    return statement_types(select.casts, store.schema(select.table).columns)


def prepare(select: Select, store, indexer, range_method: str = "auto",
            full_scan: bool = False) -> tuple[Plan, Any]:
    """Validate and plan a query; returns (plan, normalized conjuncts or None).

    full_scan=True skips every rowkey and index path: the condition is evaluated over a full
    table scan (the baseline the indexes are measured against; same rows, only slower)."""
    if range_method not in RANGE_METHODS:
        raise errors.InvalidArgument(f"range_method must be one of {RANGE_METHODS}")
    schema = store.schema(select.table)
    types = statement_types(select.casts, schema.columns)
    _check_columns(schema, [c for c, _ in select.casts])
    if select.columns is not None:
        _check_columns(schema, select.columns)
    conjuncts = None
    where = None
    if select.where is not None:
        where, conjuncts = _normalized(select.where, tuple(types.items()))
        _check_columns(schema, referenced_columns(where))
    if full_scan:
        plan = Plan(select, [], list(select.columns) if select.columns is not None else None,
                    full_scan=True, where=where, notes=["full scan forced (full_scan=True)"])
        return plan, conjuncts
    specs = usable_specs(indexer.ready(select.table), select.casts, types)
    plan = plan_query(select, conjuncts, store, types, specs,
                      range_method, where, cached=indexer.cache is not None,
                      router=indexer.router)
    return plan, conjuncts


def run(select: Select, store, indexer, range_method: str = "auto", full_scan: bool = False
        ) -> Iterator[tuple[bytes, dict]]:
    plan, conjuncts = prepare(select, store, indexer, range_method, full_scan)
    return execute(plan, indexer, types_of(select, store), conjuncts)


def _shaped(select: Select) -> bool:
    """Does the query need the aggregate / ordering layer (query/aggregate.py)?"""
    return select.aggregate or bool(select.order_by) or select.offset is not None


def run_select(select: Select, store, indexer, range_method: str = "auto",
               full_scan: bool = False) -> list:
    """All result rows of a query: (rowkey, {column: value}) for plain queries (also with
    ORDER BY / OFFSET), tuples of decoded values for aggregate, GROUP BY and DISTINCT ones."""
    if _shaped(select):
        from . import aggregate
        return aggregate.run(select, store, indexer, range_method, full_scan)
    return list(run(select, store, indexer, range_method, full_scan))


def explain(select: Select, store, indexer, range_method: str = "auto",
            full_scan: bool = False) -> str:
    """The plan of a query as text (EXPLAIN)."""
    if _shaped(select):
        from . import aggregate
        return aggregate.explain(select, store, indexer, range_method, full_scan)
    return prepare(select, store, indexer, range_method, full_scan)[0].explain()
