"""Point plans made once per statement shape (issue 40): a statement whose WHERE is only
``column = value`` atoms (``?`` or literals) answered by one point lookup of one global index,
with nothing left to check, is planned the same way whatever its values. Its first run is
planned in full (query/plan.py); the plan is kept as a template when it is of that form, and
later runs of the shape put their values into it: their key encoded, their atoms built, no
binding, typing, normalizing or planning.

A template is trusted only after it proved itself: built from the first run's plan, it must
give exactly that run's key range and conjunct for that run's values. Values are taken only
when of the proved Python type (int for the integer types, within the type's range; str for
VARCHAR without a length); any other value plans in full, as before."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .. import codec
from ..index import IndexSpec, KeyRange, is_point
from .ast import ROWKEY, And, Column, Compare, Param, Select
from .plan import IndexLookup, Plan, Step

__all__ = ["PointTemplate", "template_of"]

_INT_BITS = {"byte": 8, "short": 16, "int": 32, "long": 64}


def _check_of(t: Any) -> tuple | None:
    """(python type, low, high) a value of column type `t` must be to be taken as it is."""
    if t is None or t.length is not None:
        return None
    bits = _INT_BITS.get(t.name)
    if bits is not None:
        return int, -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if t.name == "string":
        return str, None, None
    return None


class PointTemplate:
    """A point plan with its values left out: `plan(params)` is the plan for these values,
    or None when they must be planned in full."""

    __slots__ = ("spec", "slots", "key_cols", "count", "base", "fetch", "notes", "n")

    def __init__(self, spec: IndexSpec, slots: list, key_cols: list, count: int, base: Plan,
                 fetch: bool) -> None:
        self.spec = spec
        self.slots = slots  # per conjunct atom: (Column, param index or None, literal, check)
        self.key_cols = key_cols  # per index column: its position in slots
        self.count = count  # ? placeholders the statement has
        self.base = base
        self.fetch = fetch
        self.notes = base.notes
        self.n = len(spec.types)

    def values(self, params: Any) -> list | None:
        if self.count:
            if type(params) not in (tuple, list) or len(params) != self.count:
                return None
        elif params:
            return None
        out = []
        for _, index, literal, (kind, lo, hi) in self.slots:
            if index is None:
                out.append(literal)
                continue
            v = params[index]
            if type(v) is not kind or (lo is not None and not lo <= v <= hi):
                return None
            out.append(v)
        return out

    def key_range(self, values: list) -> KeyRange:
        key = self.spec.prefix_key([values[i] for i in self.key_cols])
        return KeyRange(key, codec.prefix_successor(key), self.n, len(key))

    def conjunct(self, values: list) -> tuple:
        return tuple(Compare(col, "=", v) for (col, _, _, _), v in zip(self.slots, values))

    def plan(self, params: Any) -> Plan | None:
        values = self.values(params)
        if values is None:
            return None
        conj = self.conjunct(values)
        lookup = IndexLookup(self.spec, [self.key_range(values)], 0, False, list(conj))
        base = self.base
        return Plan(base.select, [Step(conj, lookup, [], self.fetch)], base.columns,
                    notes=self.notes)


def template_of(shape_select: Select, params: Any, conjuncts: Sequence | None, plan: Plan,
                types: Mapping[bytes, Any]) -> PointTemplate | None:
    """The template of `plan` (made for `shape_select` bound with `params`, its WHERE
    normalized to `conjuncts`), or None when it is not a lone point lookup answering every
    atom, or when the template does not give back exactly this plan's lookup."""
    where = shape_select.where
    if where is None or shape_select.having is not None or plan.full_scan \
            or len(plan.steps) != 1 or conjuncts is None or len(conjuncts) != 1:
        return None
    step = plan.steps[0]
    path = step.path
    if not isinstance(path, IndexLookup) or path.spec.local or path.method != "scan" \
            or path.spec.expires or path.spec.where is not None \
            or step.residual or len(path.ranges) != 1 \
            or not is_point(path.spec, path.ranges[0]):
        return None
    atoms = where.items if isinstance(where, And) else (where,)
    sources: dict[bytes, Any] = {}
    for a in atoms:
        if type(a) is not Compare or a.op != "=" or a.column.cast is not None \
                or a.column.name == ROWKEY or a.column.name in sources:
            return None
        v = a.value
        if isinstance(v, Param):
            if v.index is None:
                return None
            sources[a.column.name] = v.index
        else:
            sources[a.column.name] = None
    conj = conjuncts[0]
    if len(conj) != len(atoms):
        return None
    slots: list = []
    position: dict[bytes, int] = {}
    for a in conj:
        if type(a) is not Compare or a.op != "=" or not isinstance(a.column, Column) \
                or a.column.name not in sources or a.column.name in position:
            return None
        check = _check_of(types.get(a.column.name))
        if check is None:
            return None
        position[a.column.name] = len(slots)
        slots.append((a.column, sources[a.column.name], a.value, check))
    spec = path.spec
    if set(spec.columns) != set(position) or len(spec.columns) != len(position):
        return None
    indexes = [i for i in sources.values() if i is not None]
    count = max(indexes) + 1 if indexes else 0
    if sorted(indexes) != list(range(count)):
        return None
    tpl = PointTemplate(spec, slots, [position[c] for c in spec.columns], count, plan,
                        step.fetch)
    # proof: this run's values give back this run's plan
    values = tpl.values(params)
    if values is None or tpl.conjunct(values) != tuple(conj) \
            or tpl.key_range(values) != path.ranges[0]:
        return None
    return tpl
