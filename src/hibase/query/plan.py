"""The planner: per DNF conjunct the cheapest access path, chosen by ordered rules.

Paths, cheapest first: rowkey gets, a rowkey range, an index lookup (equal prefix of a composite
index plus a range on the next column; IN lists expand to several ranges), an intersection of
several indexes' rowkey sets, and, when some conjunct has none of these, one filtered full scan
for the whole condition. Index choice uses the value table's exact row counts. Every atom a path
does not answer exactly stays a residual predicate, checked on the covered values or the fetched
row, so plans only ever change speed, never results.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .. import codec
from ..index import (IndexSpec, KeyRange, count_points, count_routed, count_values, is_point,
                     key_range, null_range, plan_route)
from . import partial
from .ast import (ROWKEY, Atom, Compare, In, IsNotNull, IsNull, Like, Select,
                  format_value)
from . import textsearch
from .textsearch import TextLookup

__all__ = ["Plan", "RowGet", "RowRange", "IndexLookup", "Intersect", "FullScan", "plan_query"]

MAX_POINTS = 256  # point lookups one index lookup makes; past it, one merged scan (see below)
MAX_MERGED_POINTS = 1_000_000  # IN-list expansion limit for a merged scan of a global index
REGION_VISIT_COST = 2  # a local lookup's region visit (a seek), in rows read
_INT_BOUNDS = {"byte": 8, "short": 16, "int": 32, "long": 64}


@dataclass
class RowGet:
    rows: list[bytes]

    def describe(self) -> str:
        shown = ", ".join(format_value(r) for r in self.rows[:3]) + (" ..." if len(self.rows) > 3 else "")
        return f"ROWKEY GET {len(self.rows)} row(s) [{shown}]"


@dataclass
class RowRange:
    start: bytes | None
    stop: bytes | None

    def describe(self) -> str:
        return f"ROWKEY RANGE SCAN [{self.start!r}, {self.stop!r})"


@dataclass
class IndexLookup:
    spec: IndexSpec
    ranges: list[KeyRange]
    estimate: int
    exact_estimate: bool
    used: list[Atom]
    method: str = "scan"  # "scan": ordered index scan; "walk": value table then point lookups;
    #                       "merge": many points (a long IN list) in one scan, min to max value
    route: Any = None  # local indexes: the regions visited (index.local.Route) when planned
    # reads (estimate, exact) from the value table when first needed (counted()): a query with
    # a single candidate index never reads counts, which only choose between plans
    counter: Any = field(default=None, repr=False, compare=False)

    def counted(self) -> "IndexLookup":
        """Fill estimate / exact_estimate from the value table if not read yet."""
        if self.counter is not None:
            self.estimate, self.exact_estimate = self.counter()
            self.counter = None
        if self.spec.lags:  # an eventual index's counts are not kept with its entries
            self.exact_estimate = False
        return self

    @property
    def cost(self) -> float:
        """Rows by the estimate, plus REGION_VISIT_COST per region a local lookup visits."""
        self.counted()
        if self.route is None:
            return self.estimate
        return self.estimate + REGION_VISIT_COST * self.route.visits

    def describe(self) -> str:
        self.counted()
        cols = ", ".join(c.decode() for c in self.spec.columns)
        answers = ("candidates (TTL: see NOTE)" if self.spec.expires
                   else _atoms(self.used))
        if self.spec.local:
            how = ("RANGE SCAN" if any(not is_point(self.spec, r) for r in self.ranges)
                   else "POINT LOOKUP")
            est = ("" if self.exact_estimate else ">=") + str(self.estimate)
            where = f"; {self.route.describe()}" if self.route is not None else ""
            return (f"LOCAL INDEX {self.spec.name} ({cols}) {how} over {len(self.ranges)} key "
                    f"range(s) per region{where}; est. {est} row(s) by per-region value tables; "
                    f"answers {answers}{_lag(self.spec)}")
        how = ("NULL LIST POINT LOOKUP" if self.spec.null_alias is not None
               and self.ranges and self.ranges[0].start == self.spec.null_alias
               else "PARALLEL POINT LOOKUPS" if self.method == "walk" and all(
                   is_point(self.spec, r) for r in self.ranges)
               else "VALUE-TABLE WALK + PARALLEL POINT LOOKUPS" if self.method == "walk"
               else "MERGED SCAN (smallest to largest value)" if self.method == "merge"
               else "RANGE SCAN" if any(not is_point(self.spec, r) for r in self.ranges)
               else "POINT LOOKUP")
        est = ("" if self.exact_estimate else ">=") + str(self.estimate)
        return (f"INDEX {self.spec.name} ({cols}){_partial(self.spec)} {how} over "
                f"{len(self.ranges)} key range(s), est. {est} row(s) by value table; answers "
                f"{answers}{_lag(self.spec)}")


def _partial(spec: IndexSpec) -> str:
    """EXPLAIN's word on a partial index: its predicate, which the conjunct implies."""
    return "" if spec.where is None else f" PARTIAL WHERE {partial.text(spec.where)}"


def _lag(spec: IndexSpec) -> str:
    """EXPLAIN's word on an eventually consistent index the region servers keep."""
    return (" (EVENTUAL: may lag behind the latest writes; db.index_lag says by how much)"
            if spec.lags else "")


@dataclass
class Intersect:
    lookups: list[IndexLookup]

    def describe(self) -> str:
        return "INTERSECT rowkeys of: " + "; ".join(lk.describe() for lk in self.lookups)

    @property
    def used(self) -> list[Atom]:
        return [a for lk in self.lookups for a in lk.used]


@dataclass
class FullScan:
    def describe(self) -> str:
        return "FULL TABLE SCAN"


Path = RowGet | RowRange | IndexLookup | Intersect | FullScan | TextLookup


@dataclass
class Step:
    """One conjunct: its access path, the atoms left to check, whether rows are fetched."""

    conjunct: tuple[Atom, ...]
    path: Path
    residual: list[Atom]
    fetch: bool


@dataclass
class Plan:
    select: Select
    steps: list[Step]
    columns: list[bytes] | None  # what to return (None: every column)
    full_scan: bool = False
    where: Any = None
    notes: list[str] = field(default_factory=list)

    def explain(self) -> str:
        s = self.select
        lines = [f"PLAN for {Select(s.table, s.columns, s.where, s.limit, casts=s.casts)}"]
        if self.full_scan:
            lines.append(f"  FULL TABLE SCAN of {self.select.table} filtered by "
                         f"{self.where if self.where is not None else 'TRUE'}")
        else:
            if len(self.steps) > 1:
                lines.append(f"  UNION (no duplicates) of {len(self.steps)} conjuncts")
            for i, step in enumerate(self.steps, 1):
                lines.append(f"  [{i}] {_atoms(step.conjunct)}")
                lines.append(f"      {step.path.describe()}")
                if step.residual:
                    lines.append(f"      FILTER {_atoms(step.residual)}")
                lines.append("      FETCH rows from table" if step.fetch
                             else "      COVERED by index (no table read)")
        if self.select.limit is not None:
            lines.append(f"  LIMIT {self.select.limit}")
        lines += [f"  NOTE {n}" for n in self.notes]
        return "\n".join(lines)

    __str__ = explain


def _atoms(atoms: Sequence[Atom]) -> str:
    return " AND ".join(map(_atom_text, atoms)) if atoms else "TRUE"


_EXPLAIN_IN_VALUES = 16  # a longer IN list is shown by its first values and its length


def _atom_text(a: Atom) -> str:
    """An atom as EXPLAIN shows it; formatting every value of a 100,000-value IN list cost a
    third of planning it, for a line nobody reads whole."""
    if isinstance(a, In) and len(a.values) > _EXPLAIN_IN_VALUES:
        first = ", ".join(map(format_value, a.values[:_EXPLAIN_IN_VALUES]))
        return f"{a.column} IN ({first}, ... {len(a.values):,} values)"
    return str(a)


# -- constraints of one conjunct --------------------------------------------------------------
@dataclass
class _Bounds:
    eq: set | None = None
    lo: Any = None
    lo_inc: bool = True
    hi: Any = None
    hi_inc: bool = True
    like: Any = None
    atoms: list = field(default_factory=list)
    empty: bool = False
    is_null: Any = None  # an IS NULL atom on the column (answered by NULL lists only)


def _int_adjust(t: codec.ColumnType, op: str, v: Any) -> tuple[str, Any] | None:
    """Rewrite a comparison of an integer column with a float / out-of-range literal into an
    exact integer one; None when it can match nothing. Returns (op, value) or ("all", None)."""
    bits = _INT_BOUNDS.get(t.name)
    if bits is None or isinstance(v, int):
        if bits is not None:
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            if v < lo:
                return ("all", None) if op in (">", ">=", "<>") else None
            if v > hi:
                return ("all", None) if op in ("<", "<=", "<>") else None
        return op, v
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            if (v > 0 and op in ("<", "<=")) or (v < 0 and op in (">", ">=")):
                return ("all", None)
            return None if op != "<>" else ("all", None)
        if v == int(v):
            return _int_adjust(t, op, int(v))
        if op == "=":
            return None
        if op == "<>":
            return ("all", None)
        f = math.floor(v)
        return _int_adjust(t, {">": ">", ">=": ">", "<": "<=", "<=": "<="}[op], f)
    return op, v


def _in_points(t: codec.ColumnType | None, values: Sequence[Any]) -> set:
    """The values an IN list can equal in a column of type `t` (_int_adjust per value; a long
    list of ints in the column's range is taken as it is, in one pass)."""
    bits = _INT_BOUNDS.get(t.name) if t is not None else None
    if t is None or (bits is None and t.name not in ("double", "float")):
        return set(values)
    if bits is not None and values and set(map(type, values)) == {int}:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if lo <= min(values) and max(values) <= hi:
            return set(values)
    vals = set()
    for v in values:
        adj = _int_adjust(t, "=", v)
        if adj is not None and adj[0] == "=":
            vals.add(adj[1])
    return vals


def _constraints(conjunct: Sequence[Atom], types: dict[bytes, codec.ColumnType]
                 ) -> dict[bytes, _Bounds]:
    out: dict[bytes, _Bounds] = {}
    for atom in conjunct:
        col = atom.column.name
        if col != ROWKEY and col not in types or atom.column.cast is not None:
            continue  # undeclared columns are never indexed; a cast's values are not the index's
        b = out.setdefault(col, _Bounds())
        t = types.get(col)
        # float32 columns: literals round, so their atoms bound the range but stay residual
        exact = t is None or t.name != "float"
        if isinstance(atom, Compare) and atom.op != "<>":
            op, v = atom.op, atom.value
            if t is not None and t.name == "float":
                # float32 columns: bounds widened to inclusive; the residual check is exact
                if op in ("<", ">"):
                    op += "="
            if t is not None:
                adj = _int_adjust(t, op, v)
                if adj is None:
                    b.empty = True
                    continue
                op, v = adj
                if op == "all":
                    continue
            if exact:
                b.atoms.append(atom)
            if op == "=":
                b.eq = {v} if b.eq is None else b.eq & {v}
            elif op in (">", ">="):
                if b.lo is None or v > b.lo or (v == b.lo and op == ">"):
                    b.lo, b.lo_inc = v, op == ">="
            else:
                if b.hi is None or v < b.hi or (v == b.hi and op == "<"):
                    b.hi, b.hi_inc = v, op == "<="
        elif isinstance(atom, In):
            vals = _in_points(t, atom.values)
            b.eq = vals if b.eq is None else b.eq & vals
            if exact:
                b.atoms.append(atom)
        elif isinstance(atom, Like) and (col == ROWKEY or (t is not None and t.name in
                                                            ("string", "bytes"))):
            b.like = atom.prefix if b.like is None or len(atom.prefix) > len(b.like) else b.like
            b.atoms.append(atom)
        elif isinstance(atom, IsNotNull):
            b.atoms.append(atom)
        elif isinstance(atom, IsNull) and col != ROWKEY:
            b.is_null = atom
        if b.eq is not None and not b.eq:
            b.empty = True
    return out


# -- paths ------------------------------------------------------------------------------------
def _rowkey_path(b: _Bounds) -> RowGet | RowRange | None:
    if b.eq is not None:
        return RowGet(sorted(v for v in b.eq if isinstance(v, bytes) and v))
    start = stop = None
    if b.lo is not None:
        start = b.lo if b.lo_inc else b.lo + b"\x00"
    if b.hi is not None:
        stop = b.hi + b"\x00" if b.hi_inc else b.hi
    if b.like is not None:
        p = b.like if isinstance(b.like, bytes) else b.like.encode()
        if p:
            start = max(start or p, p)
            succ = codec.prefix_successor(p)
            stop = succ if stop is None or (succ is not None and succ < stop) else stop
    if start is None and stop is None:
        return None
    return RowRange(start, stop)


def _null_path(store, spec: IndexSpec, atom: Atom, router: Any) -> IndexLookup | None:
    """IS NULL on an index's first column: its NULL list, when it keeps one (spec.py). Not
    when its cells can expire (spec.expires): a row whose indexed cell expired belongs in the
    list but has no entry there (its entry is still under the value it had)."""
    if spec.null_alias is None or spec.local or spec.expires:
        return None
    rng = null_range(spec)
    estimate, exact = count_values(store, spec, rng, router=router)
    return IndexLookup(spec, [rng], estimate, exact, [atom])


def _index_path(store, spec: IndexSpec, cons: dict[bytes, _Bounds], router: Any
                ) -> IndexLookup | None:
    lk = _lookup_path(store, spec, cons, router)
    return lk if lk is None or not spec.expires else _candidates_only(lk)


def _candidates_only(lk: IndexLookup) -> IndexLookup:
    """The lookup of an index whose cells can expire (a TTL: spec.expires) answers no atom:
    an entry outlives its expired cell, so each row found is fetched and checked against the
    whole conjunct (_needs_fetch), and its counts are estimates, never exact (no answer is
    taken from them). Rows are never missed: expiry only turns a cell into NULL, so a row
    matching a value or range now has the entry it was given for that value; IS NULL, which
    expiry can make true, is not looked up in the NULL list (_null_path)."""
    lk.used = []
    counter = lk.counter
    if counter is None:
        lk.exact_estimate = False
    else:
        lk.counter = lambda: (counter()[0], False)
    return lk


def _lookup_path(store, spec: IndexSpec, cons: dict[bytes, _Bounds], router: Any
                 ) -> IndexLookup | None:
    first = cons.get(spec.columns[0])
    if first is not None and first.is_null is not None:
        return _null_path(store, spec, first.is_null, router)
    eq_lists: list[list] = []
    used: list[Atom] = []
    tail: _Bounds | None = None
    for col in spec.columns:
        b = cons.get(col)
        if b is None:
            break
        if b.eq is not None:
            eq_lists.append(sorted(b.eq))
            if b.lo is None and b.hi is None and b.like is None:
                used += b.atoms
            else:  # the key ranges hold the equal values only: bounds stay residual
                used += [a for a in b.atoms if isinstance(a, (In, IsNotNull))
                         or (isinstance(a, Compare) and a.op == "=")]
            continue
        if b.lo is not None or b.hi is not None or b.like is not None:
            tail = b
            used += b.atoms
        elif b.atoms:  # IS NOT NULL alone: every entry qualifies
            tail = b
            used += b.atoms
        break
    if not eq_lists and tail is None:
        return None
    combos = 1
    for vals in eq_lists:
        combos *= len(vals)
    merge = combos > MAX_POINTS
    if merge and (spec.local or tail is not None or combos > MAX_MERGED_POINTS
                  or len(eq_lists) != len(spec.columns)):
        return None
    ranges = []
    if merge:  # every point a full value: keys built in one pass (a long IN list)
        if len(eq_lists) == 1:
            t0, alias, enc = spec.types[0], spec.alias, codec.encode_key
            keys = [alias + enc(t0, v) for v in eq_lists[0]]
        else:
            keys = list(map(spec.prefix_key, itertools.product(*eq_lists)))
        succ, n = codec.prefix_successor, len(spec.types)
        ranges = [KeyRange(k, succ(k), n, len(k)) for k in keys]
    for eq in (() if merge else itertools.product(*eq_lists)):
        if tail is None:
            ranges.append(key_range(spec, list(eq)))
        elif tail.lo is None and tail.hi is None and tail.like is None:
            ranges.append(key_range(spec, list(eq), not_null=True))
        elif tail.like is not None and tail.lo is None and tail.hi is None:
            ranges.append(key_range(spec, list(eq), like_prefix=tail.like))
        else:
            ranges.append(key_range(spec, list(eq), tail.lo, tail.hi, tail.lo_inc,
                                           tail.hi_inc))
            if tail.like is not None:  # keep the LIKE as a residual; the range is a superset
                used = [a for a in used if not isinstance(a, Like)]
    if spec.local:  # route once: the estimate reads counts in the visited regions only
        route = plan_route(store, spec, ranges, router)
        estimate, exact = count_routed(store, spec, ranges, route)
        return IndexLookup(spec, ranges, estimate, exact, used, route=route)
    if merge:  # every range is one full value: their counts in one multi-get
        estimate, exact = count_points(store, spec, [r.start for r in ranges])
        return IndexLookup(spec, sorted(ranges, key=lambda r: r.start), estimate, exact, used,
                           method="merge")
    def count() -> tuple[int, bool]:
        estimate, exact = 0, True
        for rng in ranges:
            n, ex = count_values(store, spec, rng, router=router)
            estimate += n
            exact &= ex
        return estimate, exact

    return IndexLookup(spec, ranges, 0, False, used, counter=count)


def _signature(cons: dict[bytes, _Bounds]) -> tuple:
    """What of a conjunct's constraints decides which index lookups exist, the atoms each
    answers and which ones dominate (_lookup_path, _undominated), without their values: per
    column, which bounds it has, how many equal values, and the kinds of its atoms."""
    return tuple((col, None if b.eq is None else len(b.eq), b.lo is None, b.hi is None,
                  b.like is None, b.is_null is None,
                  tuple((type(a), getattr(a, "op", None)) for a in b.atoms),
                  len(set(b.atoms)))
                 for col, b in cons.items())


def _strong_first(lookups: list[IndexLookup]) -> list[IndexLookup]:
    """An eventually consistent index (spec.lags) is left out where a strong one answers at
    least the same atoms: whoever keeps both wants the answer that never lags."""
    strong = [set(lk.used) for lk in lookups if not lk.spec.lags]
    return [lk for lk in lookups
            if not lk.spec.lags or not any(set(lk.used) <= used for used in strong)]


def _choose(store, conjunct: tuple[Atom, ...], types, specs: list[IndexSpec],
            range_method: str, cached: bool, router: Any, hints: dict | None = None
            ) -> Path | None:
    cons = _constraints(conjunct, types)
    if any(b.empty for b in cons.values()):
        return RowGet([])
    if ROWKEY in cons:
        path = _rowkey_path(cons[ROWKEY])
        if isinstance(path, RowGet):
            return path
        hints = None  # a rowkey range against the lookup is chosen by counts
    else:
        path = None
    # a statement shape planned before with constraints of this signature, where one lookup
    # was left and chosen without counts: the same one is, whatever the values (plan_query)
    sig = _signature(cons) if hints is not None else None
    hinted = hints.get(sig) if hints is not None else None
    if any(s.where is not None for s in specs):  # partial indexes: those the conjunct implies
        specs = [s for s in specs if s.where is None or partial.implied(conjunct, s, types)]
        if hinted is not None and not any(s is hinted for s in specs):
            hinted = None
    lookups = [lk for lk in (_index_path(store, s, cons, router)
                             for s in (specs if hinted is None else [hinted]))
               if lk is not None]
    if len(lookups) > 1:
        lookups = _strong_first(_undominated(lookups))
    if hints is not None and hinted is None and len(lookups) == 1 and len(hints) < 64:
        hints[sig] = lookups[0].spec
    # cost: rows, plus the regions a local lookup visits; ties go to the global index. A lone
    # candidate needs no counts (they pick a plan, never change an answer): none are read
    if len(lookups) > 1:
        lookups.sort(key=lambda lk: (lk.cost, lk.spec.local, not lk.exact_estimate,
                                     -len(lk.used)))
    if not lookups:
        return path
    for lk in lookups:
        if lk.spec.where is not None:  # atoms equal to the predicate's hold for every entry
            lk.used = list(dict.fromkeys(lk.used + partial.answered(conjunct, lk.spec, types)))
    best = lookups[0]
    if isinstance(path, RowRange) and best.counted().estimate > 10_000:
        return path
    for lk in lookups:
        if lk.spec.local or lk.method == "merge" or lk.spec.lags:
            # a local lookup scans each region it visits; a merge is one scan; an eventual
            # index's value table is not kept with its entries (a walk would miss values)
            continue
        if range_method == "walk" or (range_method == "auto" and _walk_pays(lk, cached)):
            lk.method = "walk"
    # Intersect when reading a second index's entries costs less than fetching the rows the
    # first one alone would bring (an entry read is ~10x cheaper than a row fetch).
    others = [lk for lk in lookups[1:] if set(lk.spec.columns[:1]) != set(best.spec.columns[:1])]
    chosen = [best]
    answered = set(best.used)
    for lk in others:
        # a lookup answering only atoms already answered (by_ip next to by_ip_port on the same
        # f.ip = x) cannot narrow the intersection: skip it instead of reading it twice
        if len(chosen) < 3 and lk.estimate < 5 * best.estimate and not set(lk.used) <= answered:
            chosen.append(lk)
            answered |= set(lk.used)
    if len(chosen) > 1 and best.estimate > 20:
        return Intersect(chosen)
    return best


def _undominated(lookups: list[IndexLookup]) -> list[IndexLookup]:
    """The lookups no other one dominates: a global point lookup answering every atom another
    global point lookup answers, and more, finds a subset of its rows (its exact count is no
    greater, the sort below would put it first, and the other could not narrow it in an
    Intersect, answering nothing more), so the other is dropped before any count is read
    (`f.city = 'Oslo' AND f.grp = ?` on indexes (city, grp) and (grp): no count at all)."""
    def plain(lk: IndexLookup) -> bool:
        return (not lk.spec.local and lk.method == "scan" and not lk.spec.expires
                and all(is_point(lk.spec, r) for r in lk.ranges))

    keep = []
    for lk in lookups:
        used = set(lk.used)
        if plain(lk) and any(o is not lk and plain(o) and used < set(o.used) for o in lookups):
            continue
        keep.append(lk)
    return keep


def _walk_pays(lk: IndexLookup, cached: bool) -> bool:
    """The paper's range flow (value table, then a point lookup per value, in parallel) pays
    off when a hot cache answers the point lookups and there is more than one: a range, or
    several points; without a cache the ordered index scan reads the same entries with fewer
    seeks, and one point is one lookup either way."""
    return cached and (len(lk.ranges) > 1 or not is_point(lk.spec, lk.ranges[0]))


def _answered(path: Path) -> set[Atom]:
    if isinstance(path, (IndexLookup, Intersect, TextLookup)):
        return set(path.used)
    return set()


def plan_query(select: Select, conjuncts: list[tuple[Atom, ...]] | None, store,
               types: Mapping[bytes, codec.ColumnType], specs: list[IndexSpec],
               range_method: str = "auto", where: Any = None, cached: bool = False,
               router: Any = None, hints: dict | None = None) -> Plan:
    """Choose access paths for a normalized query (conjuncts None: no WHERE); `router`: the
    index manager's, routing local-index lookups to the regions that may hold a value.
    `hints`: a dict kept with the statement's shape (valid only while `specs` are the same),
    where the index a conjunct's constraints leave alone is remembered by their signature,
    so planning the shape again with other values builds that one lookup only."""
    columns = list(select.columns) if select.columns is not None else None
    if conjuncts is None:
        return Plan(select, [], columns, full_scan=True, where=where)
    steps = []
    text_specs = [s for s in specs if s.kind]  # full-text indexes: CONTAINS only
    if text_specs:
        specs = [s for s in specs if not s.kind]
    for conj in conjuncts:
        path = _choose(store, conj, types, specs, range_method, cached, router, hints)
        if text_specs:
            path = _prefer_text(store, conj, text_specs, path)
        if path is None:
            nulls = [s.name for s in specs if s.expires and s.null_alias is not None
                     and any(isinstance(a, IsNull) and a.column.name == s.columns[0]
                             for a in conj)]
            return Plan(select, [], columns, full_scan=True, where=where,
                        notes=[f"no rowkey or index path for {_atoms(conj)}"] + [
                            f"NULL list of index {n} not used: its column has a TTL, and a "
                            "row whose cell expired is NULL there without an entry"
                            for n in nulls])
        answered = _answered(path)
        residual = [a for a in conj if a not in answered]
        steps.append(Step(conj, path, residual, _needs_fetch(path, residual, columns)))
    return Plan(select, steps, columns, where=where, notes=_ttl_notes(steps))


def _prefer_text(store, conj: tuple[Atom, ...], specs: list[IndexSpec], path: Path | None
                 ) -> Path | None:
    """The conjunct's text lookup (query/textsearch.py) when it has one and the path the
    other rules chose (None: a full scan) does not read fewer rows by the counts; rowkey
    gets always win."""
    if isinstance(path, RowGet):
        return path
    text = textsearch.text_path(store, conj, specs)
    if text is None:
        return path
    if isinstance(path, IndexLookup) and path.counted().estimate <= text.estimate:
        return path
    if isinstance(path, Intersect) and \
            min(lk.counted().estimate for lk in path.lookups) <= text.estimate:
        return path
    return text


def _ttl_notes(steps: list[Step]) -> list[str]:
    """EXPLAIN's word on indexes of a table with a TTL (spec.expires), once per index."""
    names = dict.fromkeys(lk.spec.name for step in steps for lk in (
        step.path.lookups if isinstance(step.path, Intersect) else [step.path])
        if isinstance(lk, IndexLookup) and lk.spec.expires)
    return [TTL_NOTE.format(name) for name in names]


TTL_NOTE = ("index {} holds cells with a TTL: its entries and value-table counts outlive "
            "expired cells, so it finds candidate rows only (each fetched and checked; no "
            "covered answer, no count taken as exact)")


def _needs_fetch(path: Path, residual: list[Atom], columns: list[bytes] | None) -> bool:
    if not isinstance(path, IndexLookup) or columns is None or path.spec.expires:
        return True  # an expiring index's covered values may have expired (_candidates_only)
    have = set(path.spec.covering) | {ROWKEY}
    need = set(columns) | {a.column.name for a in residual}
    return not need <= have

