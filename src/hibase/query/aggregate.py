"""Aggregates, GROUP BY, HAVING, DISTINCT, ORDER BY and OFFSET over a planned WHERE (the
sorting, top-k and index order walk of ORDER BY run in order.py).

Four ways, chosen in this order and named by EXPLAIN:

- VALUE TABLE: aggregates over index columns whose WHERE one global index answers exactly
  (no residual) are computed from the value table's (value, row count) pairs: no index entry
  or row is read. Without WHERE this holds for aggregates of the index's first column that
  ignore NULLs (its NULL rows have no entry): MIN, MAX, COUNT, SUM, AVG of that column. A
  count met unsettled at run time (a write between its phases, or a writer that died there:
  store.base.count_settled) makes the WHERE's plan stream the rows instead.
- INDEX ENDS: MIN / MAX of an indexed column without WHERE read one entry from each end of
  the index.
- INDEX ORDER WALK: ``ORDER BY col [DESC] LIMIT k`` on an indexed column walks the index in
  order (backwards for DESC) and stops after k rows, fetching and re-checking each row against
  the whole WHERE; used when the rows cannot have NULL in col before the others (a WHERE that
  implies col IS NOT NULL, or NULLS LAST).
- STREAM: the WHERE's plan streams its rows (covered by an index when it can) into an
  aggregate that keeps one accumulator per group, or a top-k heap for ORDER BY ... LIMIT k.

Result rows of aggregate / GROUP BY / DISTINCT queries are tuples of values decoded by the
columns' declared types (None for NULL), in select-list order. Plain queries with ORDER BY or
OFFSET keep the (rowkey, {column: raw value}) shape.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable, Iterator

from .. import codec
from ..errors import QueryPlanError
from ..index import KeyRange, null_range, scan_entry_keys, walk_values
from .ast import (
    ROWKEY, SQL_TYPE_NAMES, Agg, Column, HavingCompare, IsNull, OrderItem, Select,
    group_columns, walk,
)
from .cast import column_type
from .columns import usable_specs
from .evaluate import cell_value, three_valued
from .execute import execute
from .normalize import coerce_literal, untyped_use
from .order import ordered_rows, top
from .plan import IndexLookup, Plan
from .prepare import check_columns, prepare, types_of

__all__ = ["run", "explain"]

_NUMERIC = frozenset({"byte", "short", "int", "long", "float", "double", "decimal"})
_COUNT_STAR = Agg("COUNT")


@dataclasses.dataclass
class _Shaped:
    """How one query is answered: ``how`` is value-table, index-ends, index-walk or stream."""

    select: Select
    how: str
    base: Plan | None  # the WHERE's plan (stream, and for its ranges the others)
    conjuncts: Any
    spec: Any = None
    # value table: KeyRanges; index walk: (KeyRange, reverse)
    ranges: list = dataclasses.field(default_factory=list)
    nulls_after: bool = False  # index walk: rows with NULL in the column may follow the walk
    count: int | None = None  # value table: COUNT(*) alone, the plan's exact count of the rows
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def plan(self) -> Plan:
        """The WHERE's plan, which every shape but index-ends (it reads no rows) has."""
        if self.base is None:
            raise AssertionError(f"the {self.how} answer has no plan for its rows")
        return self.base


def _exprs(select: Select) -> list:
    """Every column / aggregate the query computes: select list, ORDER BY, HAVING."""
    out = list(select.items or ())
    out += [o.expr for o in select.order_by if o.expr not in out]
    out += [n.expr for n in walk(select.having) if isinstance(n, HavingCompare)
            and n.expr not in out]
    return out


def _columns_of(exprs: Iterable) -> list[bytes]:
    cols = []
    for e in exprs:
        c = e if isinstance(e, Column) else e.column
        if c is not None and c.name != ROWKEY and c.name not in cols:
            cols.append(c.name)
    return cols


def _check_typed(select: Select, types) -> None:
    """Refuse what would order or add up an undeclared column's bytes (b"996" > b"1000"):
    SUM / AVG of a non-numeric column, MIN / MAX / ORDER BY of an undeclared one, a HAVING
    comparison of one with a number. CAST gives such a column a type."""
    for e in _exprs(select):
        if not isinstance(e, Agg) or e.column is None:
            continue
        t = column_type(e.column, types)
        if e.func in ("SUM", "AVG") and (e.column.is_rowkey or t is None
                                         or t.name not in _NUMERIC):
            what = "undeclared" if t is None else SQL_TYPE_NAMES[t.name]
            raise QueryPlanError(f"{e.func} needs a numeric column; {e.column} is {what}"
                                 + ("" if t is not None else
                                    f": write {e.func}(CAST({e.column.sql} AS DOUBLE))"))
        if e.func in ("MIN", "MAX") and t is None and not e.column.is_rowkey:
            raise untyped_use(e.column, e.func)
    for o in select.order_by:
        col = o.expr if isinstance(o.expr, Column) else None
        if col is not None and not col.is_rowkey and column_type(col, types) is None:
            raise untyped_use(col, "ORDER BY")
    for n in walk(select.having):
        if isinstance(n, HavingCompare) and isinstance(n.expr, Column):
            coerce_literal(n.expr, n.value, types)  # raises for a number on an undeclared column


def _prepare(select: Select, store, indexer, range_method: str, full_scan: bool) -> _Shaped:
    check_columns(select, store, indexer)
    types = types_of(select, store)
    _check_typed(select, types)
    if select.aggregate:
        exprs = _exprs(select)
        for o in select.order_by:
            if isinstance(o.expr, Column) and o.expr not in _group_cols(select):
                raise QueryPlanError(f"ORDER BY {o.expr} must be a GROUP BY column or an "
                                     "aggregate in an aggregate query")
        base_cols: tuple[bytes, ...] | None = tuple(_columns_of(exprs))
    else:
        if any(isinstance(o.expr, Agg) for o in select.order_by):
            raise QueryPlanError("ORDER BY an aggregate needs an aggregate query")
        base_cols = select.columns
        if base_cols is not None:
            base_cols = tuple(dict.fromkeys(base_cols + tuple(_columns_of(
                o.expr for o in select.order_by))))
    base_select = select.with_(
        columns=base_cols, items=None, group_by=(), having=None, order_by=(),
        offset=None, distinct=False, limit=None, explain=False)
    base, conjuncts = prepare(base_select, store, indexer, range_method, full_scan)
    if full_scan:
        return _Shaped(select, "stream", base, conjuncts)
    specs = [s for s in usable_specs(indexer.ready(select.table), select.casts, types)
             if not s.local and not s.kind]  # a text index keeps tokens, not values
    if _casts_values(select):  # a cast's values are not those an index or the value table keeps
        return _Shaped(select, "stream", base, conjuncts)
    # an index whose cells can expire (a TTL: spec.expires) answers neither from its value
    # table (counts of expired cells stay) nor from its order (a row whose cell expired is
    # still at its old place, not among the NULLs): the rows stream
    expiring = [s.name for s in specs if s.expires]
    specs = [s for s in specs if not s.expires]
    if expiring:
        base.notes.append(TTL_STREAM.format(", ".join(expiring)))
    # nor does an eventually consistent one the region servers keep: its counts are not kept
    # with its entries, and its order may lag behind the rows
    lagging = [s.name for s in specs if s.lags]
    specs = [s for s in specs if not s.lags]
    if lagging:
        base.notes.append(LAG_STREAM.format(", ".join(lagging)))
    # a partial index (issue 43) holds only the rows its predicate keeps: its value table,
    # ends and order answer only through the lookup the planner chose for the whole condition
    # (which implies the predicate)
    specs = [s for s in specs if s.where is None or (
        not base.full_scan and len(base.steps) == 1
        and isinstance(base.steps[0].path, IndexLookup) and base.steps[0].path.spec.name == s.name)]
    if select.aggregate:
        shaped = _index_ends(select, specs) or _value_table(select, base, conjuncts, specs)
    else:
        shaped = _index_walk(select, base, conjuncts, specs)
    return shaped or _Shaped(select, "stream", base, conjuncts)


def _casts_values(select: Select) -> bool:
    """Does the select list, GROUP BY, HAVING or ORDER BY read a CAST of a column?"""
    cols = [e if isinstance(e, Column) else e.column for e in _exprs(select)]
    return any(c is not None and c.cast is not None for c in cols + list(select.group_by))


LAG_STREAM = ("value table, index ends and index order of {} not used (eventually consistent: "
              "they may lag behind the rows); the rows are streamed")
TTL_STREAM = ("value table, index ends and index order of {} not used (cells with a TTL: "
              "counts and entries outlive expired cells); the rows are streamed")


def _group_cols(select: Select) -> tuple[Column, ...]:
    return group_columns(select)


def _value_table(select: Select, base: Plan, conjuncts, specs) -> _Shaped | None:
    exprs = _exprs(select)
    cols = set(_columns_of(exprs))
    if any(isinstance(e, Column) and e.is_rowkey for e in exprs) or any(
            isinstance(e, Agg) and e.column is not None and e.column.is_rowkey for e in exprs):
        return None
    if select.where is None:
        # a NULL list: every row has one entry, counted in the value table; its entries keep
        # no later column (all NULL), so only the first column's values can be read from it
        for spec in specs:
            if spec.null_alias is not None and cols <= {spec.columns[0]}:
                return _Shaped(select, "value-table", base, conjuncts, spec,
                               [_full_range(spec), null_range(spec)])
        # without one, rows lacking the first column have no entry: only aggregates of it
        if _group_cols(select) or any(not isinstance(e, Agg) or e.column is None for e in exprs):
            first = _group_cols(select)[:1]
            for spec in specs:
                if first and first[0].name == spec.columns[0] and cols <= set(spec.columns):
                    base.notes.append(
                        f"GROUP BY {first[0]} has a NULL group that index {spec.name} does not "
                        f"hold; WHERE {first[0]} IS NOT NULL answers from its value table")
                    break
            return None
        for spec in specs:
            if cols == {spec.columns[0]}:
                return _Shaped(select, "value-table", base, conjuncts, spec,
                               [_full_range(spec)])
        return None
    if base.full_scan or len(base.steps) != 1:
        return None
    step = base.steps[0]
    lk = step.path
    if not isinstance(lk, IndexLookup) or lk.spec.local or lk.spec.lags or step.residual \
            or set(lk.used) != set(step.conjunct) or not cols <= set(lk.spec.columns):
        return None
    null = lk.spec.null_alias
    if null is not None and not cols <= {lk.spec.columns[0]} and any(
            r.start[:len(null)] == null for r in lk.ranges):
        return None  # NULL-list entries keep no later column
    shaped = _Shaped(select, "value-table", base, conjuncts, lk.spec, list(lk.ranges))
    if lk.exact_estimate and not select.group_by and select.having is None \
            and all(e == _COUNT_STAR for e in exprs):
        shaped.count = lk.estimate  # the value-table counts the planner read: no second read
    return shaped


def _full_range(spec) -> KeyRange:
    """Every entry of the index with a value in its first column (not its NULL list)."""
    return KeyRange(spec.alias, codec.prefix_successor(spec.alias), 0, len(spec.alias))


def _index_ends(select: Select, specs) -> _Shaped | None:
    items = _exprs(select)
    if select.where is not None or _group_cols(select) or not items or any(
            not isinstance(e, Agg) or e.func not in ("MIN", "MAX") for e in items):
        return None
    cols = {e.column.name for e in items}
    for spec in specs:
        if cols == {spec.columns[0]}:
            return _Shaped(select, "index-ends", None, None, spec)
    return None


def _implies_not_null(conjuncts, col: bytes) -> bool:
    return conjuncts is not None and all(
        any(a.column.name == col and not isinstance(a, IsNull) for a in conj)
        for conj in conjuncts)


def _index_walk(select: Select, base: Plan, conjuncts, specs) -> _Shaped | None:
    if len(select.order_by) != 1 or select.limit is None:
        return None
    o = select.order_by[0]
    col = o.expr.name if isinstance(o.expr, Column) else None
    if col is None or col == ROWKEY:
        return None
    not_null = _implies_not_null(conjuncts, col)
    for spec in specs:
        if spec.columns[0] != col:
            continue
        if select.where is None or base.full_scan:
            if spec.null_alias is not None and not not_null:  # NULLs read from the NULL list
                walk = [(_full_range(spec), o.desc)]
                nulls = (null_range(spec), False)
                walk = walk + [nulls] if o.nulls_last else [nulls] + walk
                return _Shaped(select, "index-walk", base, conjuncts, spec, walk)
        if not (o.nulls_last or not_null):
            return _Shaped(select, "stream", base, conjuncts, notes=[
                f"index {spec.name} is in {col.decode()} order, but NULLs come first and have "
                "no entry: write NULLS LAST or a condition on the column to walk it"])
        if select.where is None or base.full_scan:
            return _Shaped(select, "index-walk", base, conjuncts, spec,
                           [(_full_range(spec), o.desc)], nulls_after=not not_null)
        if len(base.steps) == 1 and isinstance(base.steps[0].path, IndexLookup) \
                and base.steps[0].path.spec.name == spec.name:
            ranges = sorted(base.steps[0].path.ranges, key=lambda r: r.start,
                            reverse=o.desc)
            return _Shaped(select, "index-walk", base, conjuncts, spec,
                           [(r, o.desc) for r in ranges])
    return None


# -- running -----------------------------------------------------------------------------------

def run(select: Select, store, indexer, range_method: str = "auto", full_scan: bool = False
        ) -> list:
    shaped = _prepare(select, store, indexer, range_method, full_scan)
    if shaped.how == "stream":  # no index answers it: the region servers may (pushdown.py)
        from . import fast, pushdown
        work = pushdown.routable(select, store, shaped.base)
        if work is not None:
            return pushdown.run(select, store, work, _finish)
        # or the columnar feed (query/fast.py)
        route = fast.routable(select, store, shaped.base)
        if route is not None:
            answer = fast.run(select, store, route)
            if answer is not None:
                return answer
    types = types_of(select, store)
    if not select.aggregate:
        return ordered_rows(shaped, store, indexer, types)
    if shaped.how == "value-table" and shaped.count is not None:
        one = [(shaped.count,) * len(select.items or ())]
        return one[select.offset or 0:][:select.limit]
    rows: Iterator[tuple[bytes | None, dict, int]] | list
    if shaped.how == "value-table":
        pairs = _value_rows(store, shaped)
        # a count unsettled: the WHERE's plan streams the rows
        rows = pairs if pairs is not None else (
            (row, cells, 1) for row, cells in _base_rows(shaped, indexer, types))
    elif shaped.how == "index-ends":
        rows = _end_rows(store, shaped)
    else:
        rows = ((row, cells, 1) for row, cells in _base_rows(shaped, indexer, types))
    return _finish(select, _aggregate(select, rows, types), types)


def _base_rows(shaped: _Shaped, indexer, types) -> Iterator[tuple[bytes, dict]]:
    return execute(shaped.plan, indexer, types, shaped.conjuncts)


def _decoded(spec, vkey: bytes) -> dict:
    values, _ = spec.split_entry(vkey)  # a value key is an entry key without the rowkey
    return {c: v for c, v in zip(spec.columns, values)}


def _value_rows(store, shaped: _Shaped) -> list[tuple[None, dict, int]] | None:
    """(None, {column: decoded value}, row count) per value of the value table in range; None
    when a count is not exact (a write between its phases, or a writer that died there:
    store.base.count_settled), which the rows must answer instead."""
    spec = shaped.spec
    out = []
    for rng in shaped.ranges:
        for vkey, count, settled in walk_values(store, spec, rng):
            if not settled:
                return None
            if count > 0:
                out.append((None, _decoded(spec, vkey), count))
    return out


def _end_rows(store, shaped: _Shaped) -> Iterator[tuple[None, dict, int]]:
    spec = shaped.spec
    stop = codec.prefix_successor(spec.alias)
    for reverse in (False, True):
        for key in scan_entry_keys(store, spec, spec.alias, stop, reverse):
            values, _ = spec.split_entry(key)
            yield None, {spec.columns[0]: values[0]}, 1
            break


class _Acc:
    """One aggregate's running state in one group."""

    __slots__ = ("agg", "n", "total", "best", "seen")

    def __init__(self, agg: Agg):
        self.agg, self.n, self.total, self.best = agg, 0, 0, None
        self.seen: set | None = set() if agg.distinct else None

    def add(self, v: Any, weight: int) -> None:
        agg = self.agg
        if agg.column is None:
            self.n += weight
            return
        if v is None:
            return
        if self.seen is not None:
            if v in self.seen:
                return
            self.seen.add(v)
            weight = 1
        self.n += weight
        f = agg.func
        if f in ("SUM", "AVG"):
            self.total += v * weight
        elif f == "MIN":
            if self.best is None or v < self.best:
                self.best = v
        elif f == "MAX":
            if self.best is None or v > self.best:
                self.best = v

    def result(self) -> Any:
        f = self.agg.func
        if f == "COUNT":
            return self.n
        if self.n == 0:
            return None
        if f in ("MIN", "MAX"):
            return self.best
        v = self.total if f == "SUM" else self.total / self.n
        return None if isinstance(v, float) and math.isnan(v) else v


def _aggregate(select: Select, rows, types) -> list[dict]:
    """One {expr: value} per group (one group when there is no GROUP BY and no DISTINCT)."""
    exprs = _exprs(select)
    aggs = [e for e in exprs if isinstance(e, Agg)]
    keys = _group_cols(select)
    groups: dict[tuple, list[_Acc]] = {}
    for row, cells, weight in rows:
        if row is None:  # value-table rows: already decoded
            key = tuple(cells.get(c.name) for c in keys)
            vals = [None if a.column is None else cells.get(a.column.name) for a in aggs]
        else:
            key = tuple(cell_value(c, row, cells, types) for c in keys)
            vals = [None if a.column is None else cell_value(a.column, row, cells, types)
                    for a in aggs]
        accs = groups.get(key)
        if accs is None:
            accs = groups[key] = [_Acc(a) for a in aggs]
        for acc, v in zip(accs, vals):
            acc.add(v, weight)
    if not groups and not keys:  # an aggregate over no rows is one row (COUNT 0, others NULL)
        groups[()] = [_Acc(a) for a in aggs]
    out = []
    for key, accs in groups.items():
        d: dict = dict(zip(keys, key))
        d.update((a, acc.result()) for a, acc in zip(aggs, accs))
        out.append(d)
    return out


def _having(node, d: dict, types) -> bool | None:
    """HAVING's truth for one group (`d`: its aggregate and grouping values)."""
    if node is None:
        return True
    return three_valued(node, _having_compare, d, types)


def _having_compare(node, d: dict, types) -> bool | None:
    v = d.get(node.expr)
    if v is None:
        return None
    lit = node.value
    if isinstance(node.expr, Column) or (node.expr.func in ("MIN", "MAX")):
        col = node.expr if isinstance(node.expr, Column) else node.expr.column
        lit = coerce_literal(col, lit, types)
    elif isinstance(lit, str):
        raise QueryPlanError(f"HAVING compares {node.expr} (a number) with a string")
    if isinstance(v, (int, float)) != isinstance(lit, (int, float)):
        raise QueryPlanError(f"HAVING cannot compare {node.expr} with {lit!r}")
    return {"=": v == lit, "<>": v != lit, "<": v < lit, "<=": v <= lit, ">": v > lit,
            ">=": v >= lit}[node.op]


def _finish(select: Select, groups: list[dict], types) -> list[tuple]:
    groups = [d for d in groups if _having(select.having, d, types) is True]
    keys = tuple(OrderItem(c) for c in _group_cols(select))
    if keys and select.order_by:  # ties of ORDER BY in group-key order, whichever the path
        groups = top(groups, keys, lambda d: [d.get(o.expr) for o in keys], None, None)
    order = select.order_by or keys  # no ORDER BY: groups by their key, NULLs first
    groups = top(groups, order, lambda d: [d.get(o.expr) for o in order], select.limit,
                  select.offset)
    items = select.items or ()
    return [tuple(d.get(i) for i in items) for d in groups]


# -- EXPLAIN -----------------------------------------------------------------------------------

def explain(select: Select, store, indexer, range_method: str = "auto",
            full_scan: bool = False) -> str:
    shaped = _prepare(select, store, indexer, range_method, full_scan)
    s = select.with_(explain=False)
    lines = [f"PLAN for {s}"]
    if shaped.how == "value-table":
        lines.append(f"  AGGREGATE FROM VALUE TABLE of index {shaped.spec.name} over "
                     f"{len(shaped.ranges)} key range(s): (value, row count) pairs, no index "
                     "entry or row read")
    elif shaped.how == "index-ends":
        lines.append(f"  MIN/MAX FROM INDEX ENDS of index {shaped.spec.name} (one entry per end)")
    elif shaped.how == "index-walk":
        if select.limit is None:
            raise AssertionError("an index walk is chosen only for a query with a LIMIT")
        o = select.order_by[0]
        nulls = [i for i, (r, _) in enumerate(shaped.ranges)
                 if shaped.spec.null_alias is not None and r.start == shaped.spec.null_alias]
        lines.append(f"  INDEX ORDER WALK of index {shaped.spec.name} "
                     f"{'backwards ' if o.desc else ''}over {len(shaped.ranges)} key range(s)"
                     + ("" if not nulls else " (NULL list first" if nulls[0] == 0
                        else " (NULL list last") + (")" if nulls else "") + ", "
                     f"stops after {(select.offset or 0) + select.limit} row(s) (no sort); "
                     "each row FETCHED and checked against the whole WHERE"
                     + ("; then rows with NULL by the plan below if too few" if
                        shaped.nulls_after else ""))
    else:
        from . import fast, pushdown
        route = fast.routable(select, store, shaped.base) if shaped.how == "stream" else None
        work = pushdown.routable(select, store, shaped.base) if shaped.how == "stream" \
            else None
        why = pushdown.unavailable(select, store, shaped.base) if shaped.how == "stream" \
            else None
        if why is not None:
            shaped.notes.append(why)
        if work is not None:
            lines += pushdown.describe(work, store)
            lines.append("  (below: the lean plan, taken with scan_pushdown=0)")
        elif route is not None:
            lines += fast.describe(route)
            lines.append("  (below: the lean plan, taken when the feed has NaN in a floating "
                         "column)")
        lines += shaped.plan.explain().splitlines()[1:]
        if select.aggregate:
            lines.append("  STREAMING AGGREGATE of those rows (one accumulator per group)")
        if select.having is not None:
            lines.append(f"  HAVING {select.having}")
        if select.order_by:
            lines.append("  SORT by " + ", ".join(map(str, select.order_by))
                         + (f" (top {(select.offset or 0) + select.limit} kept)"
                            if select.limit is not None else ""))
    if select.having is not None and shaped.how != "stream":
        lines.append(f"  HAVING {select.having}")
    if select.offset is not None:
        lines.append(f"  OFFSET {select.offset}")
    if select.limit is not None:
        lines.append(f"  LIMIT {select.limit}")
    lines += [f"  NOTE {n}" for n in shaped.notes]
    return "\n".join(lines)
