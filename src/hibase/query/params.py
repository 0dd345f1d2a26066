"""Binding statement parameters (``?`` by position, ``:name`` by name) into a parsed query.

The statement text is parsed once (and cached by its text); the values are put into the tree
here, never spliced into SQL text, so a value can hold any character and is always a literal.
"""

from __future__ import annotations

import datetime
import functools
import math
from decimal import Decimal
from typing import Any, Mapping, Sequence, cast

from ..errors import InvalidArgument
from .ast import (
    Between, Compare, HavingCompare, In, Node, Param, Select, Value, map_children, walk,
)

__all__ = ["bind", "params_of"]


def params_of(node: Node | None) -> list[Param]:
    """The placeholders a condition (or HAVING) tree holds, in no particular order."""
    out: list[Param] = []
    for n in walk(node):
        if isinstance(n, (Compare, HavingCompare)):
            if isinstance(n.value, Param):
                out.append(n.value)
        elif isinstance(n, Between):
            out += [v for v in (n.low, n.high) if isinstance(v, Param)]
        elif isinstance(n, In):
            out += [v for v in n.values if isinstance(v, Param)]
    return out


@functools.lru_cache(maxsize=1024)
def _found(where: Any, having: Any) -> tuple[Param, ...]:
    """params_of both trees, once per statement (the trees are immutable and hashable)."""
    return tuple(params_of(where) + params_of(having))


_KINDS = (int, float, str, bytes, datetime.date, datetime.time, Decimal)


def _check(value: Any, what: str) -> Value:
    if type(value).__name__ == "bool_":  # numpy.bool_
        value = bool(value)
    if not isinstance(value, _KINDS):  # a bool is an int here
        raise InvalidArgument(f"parameter {what} must be int, float, str, bytes, bool, date, "
                              f"time, datetime or Decimal, not {type(value).__name__}")
    if isinstance(value, Decimal) and not value.is_finite():
        raise InvalidArgument(f"parameter {what} is {value}, which compares with nothing")
    if isinstance(value, float) and math.isnan(value):
        raise InvalidArgument(f"parameter {what} is NaN, which compares with nothing")
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument(f"parameter {what}: bytes must be UTF-8") from None
    return value


def bind(select: Select, params: Sequence[Any] | Mapping[str, Any] | None) -> Select:
    """``select`` with every placeholder replaced by its value; InvalidArgument when the values
    do not fit the placeholders (count, names, types)."""
    found = _found(select.where, select.having)
    if not found:
        if params:
            raise InvalidArgument(f"the statement has no parameters but {len(params)} value(s) "
                                  "were given")
        return select
    if params is None:
        raise InvalidArgument(f"the statement has {_describe(found)} but no values were given")
    values: dict[Param, Value] = {}
    if found[0].name is not None:
        if not isinstance(params, Mapping):
            raise InvalidArgument("named parameters (:name) take a dict of values")
        by_name = {p.name: p for p in found if p.name is not None}  # the parser refuses mixing
        missing = sorted(n for n in by_name if n not in params)
        if missing:
            raise InvalidArgument(f"no value for parameter(s) {', '.join(':' + m for m in missing)}")
        extra = sorted(set(params) - set(by_name))
        if extra:
            raise InvalidArgument(f"unknown parameter(s) {', '.join(map(str, extra))}")
        for name, p in by_name.items():
            values[p] = _check(params[name], f":{name}")
    else:
        if type(params) not in (tuple, list) and (  # the common cases skip the ABC checks
                isinstance(params, (Mapping, str, bytes)) or not isinstance(params, Sequence)):
            raise InvalidArgument("? parameters take a list or tuple of values")
        params = cast(Sequence[Any], params)  # the test above leaves only sequences
        by_index = {p.index: p for p in found if p.index is not None}
        count = max(by_index) + 1
        if len(params) != count:
            raise InvalidArgument(f"the statement has {count} ? parameter(s) but "
                                  f"{len(params)} value(s) were given")
        for i, p in by_index.items():
            values[p] = _check(params[i], f"{i + 1}")
    return select.with_(where=_sub(select.where, values), having=_sub(select.having, values))


def _describe(found: tuple[Param, ...]) -> str:
    names = sorted({str(p) for p in found if p.name is not None})
    if names:
        return "parameter(s) " + ", ".join(names)
    return f"{max(p.index for p in found if p.index is not None) + 1} ? parameter(s)"


def _sub(node: Node | None, values: dict[Param, Value]) -> Any:
    def v(x: Any) -> Any:
        return values[x] if isinstance(x, Param) else x

    if node is None:
        return None
    if isinstance(node, Compare):
        return Compare(node.column, node.op, v(node.value))
    if isinstance(node, HavingCompare):
        return HavingCompare(node.expr, node.op, v(node.value))
    if isinstance(node, Between):
        return Between(node.column, v(node.low), v(node.high))
    if isinstance(node, In):
        return In(node.column, tuple(dict.fromkeys(v(x) for x in node.values)))
    return map_children(node, lambda n: _sub(n, values))
