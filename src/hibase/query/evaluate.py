"""Brute-force evaluation of a condition on one row, in SQL's three-valued logic.

The reference the planner is tested against, and the residual-predicate step of execution.
A cell that is missing, does not decode as its declared type, or decodes to NaN is NULL; any
comparison with NULL is UNKNOWN (None), NOT UNKNOWN is UNKNOWN, AND/OR follow Kleene, and a row
matches iff the whole condition is TRUE. The rowkey and undeclared columns compare as raw bytes.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..codec import ColumnType, decode_cell
from ..errors import ValueTypeError
from ..index import contains_text
from .ast import (
    ROWKEY, And, Between, Column, Compare, FalseNode, In, IsNotNull, IsNull, Like, Node, Not,
    NotLike, Or, TrueNode, UnknownNode, walk, Contains, NotContains,
)
from .cast import column_type, convert
from .normalize import Conjunct, coerce_literal, coerce_literals, coerce_prefix

__all__ = ["evaluate", "matches", "matches_dnf", "referenced_columns", "cell_value"]

Truth = bool | None
Cells = Mapping[bytes, bytes]
SchemaTypes = Mapping[bytes, ColumnType]
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
_EMPTY: dict[bytes, ColumnType] = {}


def cell_value(column: Column, row: bytes, cells: Cells, schema_types: SchemaTypes) -> Any:
    """The column's value in this row (decoded by its declared type), or None for NULL."""
    if column.cast is not None:
        return _cast_value(column, row, cells, schema_types)
    if column.name == ROWKEY:
        return row
    raw = cells.get(column.name)
    if raw is None:
        return None
    t = schema_types.get(column.name)
    if t is None:
        return bytes(raw)
    try:
        v = decode_cell(t, raw)
    except ValueTypeError:
        return None
    return None if v != v else v  # NaN is unordered: treat it as NULL


def _cast_value(column: Column, row: bytes, cells: Cells, schema_types: SchemaTypes) -> Any:
    """``CAST(column AS type)`` in this row: the column's value (as declared) converted."""
    source = Column(column.name)
    v = cell_value(source, row, cells, schema_types)
    if v is None:
        return None
    v = convert(v, schema_types.get(column.name), column.cast)  # type: ignore[arg-type]
    return None if v != v else v


def evaluate(node: Node | None, row: bytes, cells: Cells,
             schema_types: SchemaTypes | None = None) -> Truth:
    """TRUE / FALSE / UNKNOWN (None) of ``node`` on one row; None as node is TRUE."""
    if node is None:
        return True
    return _eval(node, row, cells, schema_types or _EMPTY)


def matches(node: Node | None, row: bytes, cells: Cells,
            schema_types: SchemaTypes | None = None) -> bool:
    """Does the row satisfy the condition (evaluates to TRUE, not FALSE or UNKNOWN)?"""
    return evaluate(node, row, cells, schema_types) is True


def matches_dnf(conjuncts: Iterable[Conjunct], row: bytes, cells: Cells,
                schema_types: SchemaTypes | None = None) -> bool:
    """Does the row satisfy a normalized condition (every atom TRUE in some conjunct)?"""
    types = schema_types or _EMPTY
    return any(all(_eval(a, row, cells, types) is True for a in c) for c in conjuncts)


def three_valued(node: Any, leaf: Callable[..., Truth], *args: Any) -> Truth:
    """SQL's three-valued AND / OR / NOT over a tree whose other nodes leaf(node, *args)
    answers (TRUE, FALSE or None for UNKNOWN): the one place that logic is written (WHERE and
    HAVING)."""
    if isinstance(node, And):
        result: Truth = True
        for item in node.items:
            r = three_valued(item, leaf, *args)
            if r is False:
                return False
            if r is None:
                result = None
        return result
    if isinstance(node, Or):
        result = False
        for item in node.items:
            r = three_valued(item, leaf, *args)
            if r is True:
                return True
            if r is None:
                result = None
        return result
    if isinstance(node, Not):
        r = three_valued(node.item, leaf, *args)
        return None if r is None else not r
    return leaf(node, *args)


def _eval(node: Node, row: bytes, cells: Cells, types: SchemaTypes) -> Truth:
    if isinstance(node, (And, Or, Not)):
        return three_valued(node, _atom, row, cells, types)
    return _atom(node, row, cells, types)


def _atom(node: Node, row: bytes, cells: Cells, types: SchemaTypes) -> Truth:
    if isinstance(node, TrueNode):
        return True
    if isinstance(node, FalseNode):
        return False
    if isinstance(node, UnknownNode):
        return None
    if isinstance(node, In) and not node.values:
        return False
    # _eval and three_valued hand this atoms only (no And / Or / Not / HAVING node)
    v = cell_value(node.column, row, cells, types)  # type: ignore[union-attr]
    if isinstance(node, IsNull):
        return v is None
    if isinstance(node, IsNotNull):
        return v is not None
    if v is None:
        return None
    col = node.column  # type: ignore[union-attr]
    if isinstance(node, Compare):
        return _OPS[node.op](v, coerce_literal(col, node.value, types))
    if isinstance(node, Between):
        return coerce_literal(col, node.low, types) <= v <= coerce_literal(col, node.high, types)
    if isinstance(node, In):
        if len(node.values) <= _SMALL_IN:
            return any(v == coerce_literal(col, x, types) for x in node.values)
        return v in _in_set(node, types)
    if isinstance(node, (Like, NotLike)):
        hit = v.startswith(coerce_prefix(col, node.prefix, types))
        return hit if isinstance(node, Like) else not hit
    if isinstance(node, (Contains, NotContains)):
        hit = contains_text(v if isinstance(v, str) else v.decode("utf-8", "replace"),
                            node.query)
        return hit if isinstance(node, Contains) else not hit
    raise TypeError(f"not a condition node: {node!r}")


_SMALL_IN = 8  # longer IN lists are tested by a set lookup


def _in_set(node: In, types: Mapping) -> frozenset:
    """The IN list's literals as the column's typed values, built once per node and column
    type: one set lookup per row instead of a coercion and comparison per literal (a 100,000
    value list took seconds per row batch). Set membership agrees with ``==`` here: typed values
    are numbers, str or bytes (NaN matches nothing either way)."""
    col = node.column
    t = column_type(col, types)
    sets = node.__dict__.setdefault("_typed_sets", {})  # frozen dataclass: a cache on the side
    found = sets.get(t)
    if found is None:
        found = sets[t] = frozenset(coerce_literals(col, node.values, types))
    return found


def referenced_columns(condition: Node | Iterable[Conjunct] | None, *,
                       include_rowkey: bool = False) -> set[bytes]:
    """The columns a condition (tree or conjunct list) reads; the rowkey only if asked."""
    return {n.column.name for n in _nodes(condition)
            if hasattr(n, "column") and (include_rowkey or not n.column.is_rowkey)}


def _nodes(condition: Any) -> Iterator[Any]:
    """The nodes of a tree, or of every tree in a (nested) list of conjuncts."""
    if isinstance(condition, (list, tuple)):
        for item in condition:
            yield from _nodes(item)
    else:
        yield from walk(condition)
