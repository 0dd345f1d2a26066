"""The query layer's face: SQL text or a condition in, planned and executed rows out."""

from __future__ import annotations

from typing import Iterator

from . import aggregate
from .ast import Select
from .execute import execute
from .params import bind
from .parse import MAX_STATEMENT, check_size, parse_condition, parse_select, parse_where
from .prepare import RANGE_METHODS, prepare, types_of

__all__ = ["parse_select", "parse_condition", "parse_where", "check_size", "MAX_STATEMENT",
           "prepare", "run", "run_select", "explain", "bind", "types_of", "RANGE_METHODS"]


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
        return aggregate.run(select, store, indexer, range_method, full_scan)
    return list(run(select, store, indexer, range_method, full_scan))


def explain(select: Select, store, indexer, range_method: str = "auto",
            full_scan: bool = False) -> str:
    """The plan of a query as text (EXPLAIN)."""
    if _shaped(select):
        return aggregate.explain(select, store, indexer, range_method, full_scan)
    return prepare(select, store, indexer, range_method, full_scan)[0].explain()
