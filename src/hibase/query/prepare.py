"""Validate and plan one SELECT: the column types it reads with, its WHERE typed and in DNF,
and the access paths (shared by the engine and the aggregate layer above the plan)."""

from __future__ import annotations

import functools
from typing import Any

from .. import errors
from .ast import ROWKEY, Select
from .columns import statement_types, usable_specs
from .evaluate import referenced_columns
from .normalize import normalize, typed
from .plan import Plan, plan_query

__all__ = ["RANGE_METHODS", "prepare", "types_of"]

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
