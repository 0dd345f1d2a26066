"""Partial indexes (issue 43): the predicate deciding which rows have an entry.

A partial index's spec holds its predicate compiled to the pushed-scan condition format
(query/pushdown.py; its Java twin is PushedScan.java, which the coprocessor reuses through
IndexWhere.java) as ``{"sql": text, "cols": [[hex column, type], ...], "where": tree}``. A row
has an entry exactly when the predicate is TRUE on its latest cells (FALSE or UNKNOWN: none),
each cell read as the pushed scan reads it: its order-preserving key, a missing, malformed or
NaN cell NULL. A partial index keeps no NULL list (rows without the first column have no entry).
"""

from __future__ import annotations

from typing import Any

from .. import codec, errors

__all__ = ["Predicate", "predicate", "holds", "columns"]


class Predicate:
    """A compiled partial-index predicate: test(cells) in SQL's three-valued logic."""

    __slots__ = ("columns", "types", "_test")

    def __init__(self, where: dict) -> None:
        self.columns = [bytes.fromhex(c) for c, _ in where["cols"]]
        self.types = [codec.parse_type(t) for _, t in where["cols"]]
        self._test = self._node(where["where"])

    def holds(self, cells: dict, timestamped: bool = False) -> bool:
        """Is the predicate TRUE on a row's cells ({column: raw} or {column: (ts, raw)})?"""
        raws = []
        for c in self.columns:
            raw = cells.get(c)
            raws.append(raw[1] if timestamped and raw is not None else raw)
        return self._test(raws, [_UNSET] * len(raws)) == 1

    def _key(self, i: int, raws: list, keys: list) -> bytes | None:
        k = keys[i]
        if k is _UNSET:
            raw = raws[i]
            try:
                k = None if raw is None else codec.cell_key(self.types[i], raw)
            except errors.ValueTypeError:
                k = None
            keys[i] = k
        return k

    def _node(self, n: list) -> Any:
        op = n[0]
        key = self._key
        if op in ("true", "false", "unknown"):
            v = {"true": 1, "false": 0, "unknown": -1}[op]
            return lambda raws, keys: v
        if op in ("and", "or"):
            items = [self._node(x) for x in n[1]]
            stop = 0 if op == "and" else 1

            def junction(raws: list, keys: list) -> int:
                out = 1 - stop
                for f in items:
                    t = f(raws, keys)
                    if t == stop:
                        return t
                    if t < 0:
                        out = -1
                return out
            return junction
        if op == "not":
            inner = self._node(n[1])

            def negate(raws: list, keys: list) -> int:
                t = inner(raws, keys)
                return t if t < 0 else 1 - t
            return negate
        if op in ("isnull", "notnull"):
            i, want = n[1], op == "isnull"
            return lambda raws, keys: int((key(i, raws, keys) is None) == want)
        if op == "cmp":
            cmp, i, lit = n[1], n[2], bytes.fromhex(n[3])
            test = _CMP[cmp]

            def compare(raws: list, keys: list) -> int:
                k = key(i, raws, keys)
                return -1 if k is None else int(test(k, lit))
            return compare
        if op == "in":
            i, lits = n[1], {bytes.fromhex(x) for x in n[2]}

            def member(raws: list, keys: list) -> int:
                k = key(i, raws, keys)
                return -1 if k is None else int(k in lits)
            return member
        if op in ("like", "notlike"):
            i, prefix, like = n[1], bytes.fromhex(n[2]), op == "like"

            def starts(raws: list, keys: list) -> int:
                if key(i, raws, keys) is None:  # the key checks the cell is valid UTF-8
                    return -1
                return int(raws[i].startswith(prefix) == like)
            return starts
        raise errors.SchemaError(f"unknown condition {op!r} in a partial index predicate")


_UNSET = object()
_CMP = {"=": bytes.__eq__, "<>": bytes.__ne__, "<": bytes.__lt__, "<=": bytes.__le__,
        ">": bytes.__gt__, ">=": bytes.__ge__}
_COMPILED: dict[int, tuple[dict, Predicate]] = {}


def predicate(where: dict) -> Predicate:
    """The compiled predicate of a spec's ``where`` (made once per dict)."""
    hit = _COMPILED.get(id(where))
    if hit is not None and hit[0] is where:
        return hit[1]
    if len(_COMPILED) > 4096:
        _COMPILED.clear()
    pred = Predicate(where)
    _COMPILED[id(where)] = (where, pred)
    return pred


def holds(where: dict, cells: dict, timestamped: bool = False) -> bool:
    """Does a row with `cells` belong in the partial index whose predicate is `where`?"""
    return predicate(where).holds(cells, timestamped)


def columns(where: dict) -> list[bytes]:
    """The columns the predicate reads."""
    return predicate(where).columns
