"""Partial indexes in the planner (issue 43): whether a query's conjunct implies a partial
index's predicate.

The predicate is compiled at create time by partial_create.py. The planner uses a partial
index for a DNF conjunct only when the conjunct implies one of the predicate's own
conjuncts, atom by atom: an atom of the conjunct equal to it, or one whose TRUE rows are
provably a subset of its TRUE rows on the same column (x = 5 implies x > 3 and x IN (4, 5);
x > 5 implies x >= 5; any comparison implies IS NOT NULL; LIKE 'abc%' implies LIKE 'ab%').
Anything else is not proved, and the index is not used.
"""

from __future__ import annotations

import operator
from typing import Any, Mapping

from ..codec import ColumnType, decode_key, parse_type
from .ast import (
    And, Atom, Column, Compare, FalseNode, In, IsNotNull, IsNull, Like, Not, NotLike, Or,
    TrueNode, UnknownNode,
)
from .normalize import normalize, typed

__all__ = ["implied", "answered", "text", "conjuncts"]


def text(where: dict) -> str:
    """The predicate as written (EXPLAIN, describe)."""
    return str(where["sql"])


def _node(n: list, cols: list) -> Any:
    """The condition tree of the compiled predicate (values decoded from their keys)."""
    op = n[0]
    if op in ("and", "or"):
        return (And if op == "and" else Or)(tuple(_node(x, cols) for x in n[1]))
    if op == "not":
        return Not(_node(n[1], cols))
    if op in ("true", "false", "unknown"):
        return {"true": TrueNode, "false": FalseNode, "unknown": UnknownNode}[op]()
    if op == "cmp":
        col, t = cols[n[2]]
        return Compare(col, n[1], decode_key(t, bytes.fromhex(n[3]))[0])
    col, t = cols[n[1]]
    if op == "in":
        return In(col, tuple(decode_key(t, bytes.fromhex(x))[0] for x in n[2]))
    if op in ("like", "notlike"):
        prefix = bytes.fromhex(n[2]).decode("utf-8")
        return Like(col, prefix) if op == "like" else NotLike(col, prefix)
    return IsNull(col) if op == "isnull" else IsNotNull(col)


def conjuncts(spec: Any, types: Mapping[bytes, ColumnType]) -> list[tuple[Atom, ...]]:
    """The predicate's DNF as the planner normalizes a query's (made once per predicate)."""
    where = spec.where
    hit = _DNF.get(id(where))
    if hit is not None and hit[0] is where:
        return hit[1]
    cols = [(Column(bytes.fromhex(c)), parse_type(t)) for c, t in where["cols"]]
    tree = _node(where["where"], cols)
    ptypes = {c.name: t for c, t in cols}
    dnf = normalize(typed(tree, ptypes), ptypes)
    if len(_DNF) > 1024:
        _DNF.clear()
    _DNF[id(where)] = (where, dnf)
    return dnf


_DNF: dict[int, tuple[dict, list]] = {}
_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "=": operator.eq, "<>": operator.ne}


def _passes(value: Any, p: Any) -> bool:
    """Does a non-NULL `value` make atom `p` TRUE?"""
    try:
        if isinstance(p, Compare):
            return bool(_OPS[p.op](value, p.value))
        if isinstance(p, In):
            return value in p.values
        if isinstance(p, (Like, NotLike)):
            prefix: Any = p.prefix
            hit = isinstance(value, type(prefix)) and value.startswith(prefix)
            return hit if isinstance(p, Like) else isinstance(value, type(prefix)) and not hit
        if isinstance(p, IsNotNull):
            return True
    except TypeError:
        return False
    return False


def _implies(q: Any, p: Any) -> bool:
    """Is atom p TRUE on every row where atom q is TRUE (same column, proved exactly)?"""
    if q == p:
        return True
    if q.column != p.column or type(q).__name__ == "IsNull":
        return False
    if isinstance(p, IsNotNull):
        return True  # any other atom is TRUE only on a value
    if isinstance(q, Compare) and q.op == "=":
        return _passes(q.value, p)
    if isinstance(q, In):
        return bool(q.values) and all(_passes(v, p) for v in q.values)
    if isinstance(q, Like) and isinstance(p, Like):
        return type(q.prefix) is type(p.prefix) and q.prefix.startswith(p.prefix)  # type: ignore
    if isinstance(q, Compare) and isinstance(p, Compare) and q.op in _OPS and p.op in _OPS:
        qv: Any = q.value
        pv: Any = p.value
        try:
            if q.op in (">", ">=") and p.op in (">", ">="):
                return qv > pv or (qv == pv and (p.op == ">=" or q.op == ">"))
            if q.op in ("<", "<=") and p.op in ("<", "<="):
                return qv < pv or (qv == pv and (p.op == "<=" or q.op == "<"))
        except TypeError:
            return False
    return False


def implied(conjunct: tuple[Atom, ...], spec: Any, types: Mapping[bytes, ColumnType]) -> bool:
    """Does every row the conjunct keeps satisfy the partial index's predicate?"""
    return any(all(any(_implies(q, p) for q in conjunct) for p in pconj)
               for pconj in conjuncts(spec, types))


def answered(conjunct: tuple[Atom, ...], spec: Any, types: Mapping[bytes, ColumnType]
             ) -> list[Atom]:
    """The conjunct's atoms every entry of the index satisfies: those equal to an atom of a
    predicate that is a single conjunct (each entry's row made all of them TRUE)."""
    pdnf = conjuncts(spec, types)
    if len(pdnf) != 1:
        return []
    return [q for q in conjunct if q in pdnf[0]]
