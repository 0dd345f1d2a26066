"""Lean statements no index answers, run inside HBase's region servers (issue 39).

When a statement's plan is one full table scan and the store's regions run hibase's
ScanObserver (``store.scan_pushdown``), the statement is described as JSON work (version 1,
below) that rides in each region scan; each region filters its rows, projects them, keeps one
partial aggregate per group or its k best rows, and returns only that. Here the regions'
answers are merged into the lean path's own shapes: aggregate rows finished by
``aggregate._finish`` (HAVING, ORDER BY, LIMIT), plain rows sorted by ``order.top``.

Only what keeps the lean answers exactly is pushed (``None``: the lean path runs): declared
BYTE/SHORT/INT/LONG, FLOAT, DOUBLE, DECIMAL(p, s), DATE, TIME, TIMESTAMP, BOOLEAN and VARCHAR
columns without CAST (a cell is read as its order-preserving key, so comparisons, MIN / MAX,
GROUP BY and ORDER BY compare keys, which order as the values do, and a key decodes to the
value this client shows; missing, malformed and NaN cells are NULL as in
evaluate.cell_value). Not pushed: VARCHAR(n), CHAR, VARBINARY, a plain DECIMAL (each cell
keeps its own exponent, 1.50 and 1.5, which the normalised key does not), CAST anywhere
(query/cast.py's conversions have no Java twin checked against it yet). Literals must be of
the column's kind (no 2.5 against an integer column; a FLOAT column's literal is the float32
coerce_literal rounds it to); comparisons, BETWEEN, IN, LIKE 'prefix%', IS [NOT] NULL, AND /
OR / NOT; COUNT(*), COUNT, MIN, MAX, no DISTINCT aggregate; SUM and AVG of integer columns
and of DECIMAL(p, s) with p <= 18 (this client adds decimals in Python's default 28-digit
context, exact below 10^10 values of 18 digits, so partial sums give its answer exactly; a
wider DECIMAL could round differently by order). SUM / AVG of FLOAT and DOUBLE stay with this
client: it adds floats one by one in rowkey order, and regions adding their own rows first
round differently (their totals may differ in the last bits).

Bad cells: this client tells (CellTypeWarning, codec.BadCells) the cells it shows that do not
parse as their type. Rows and top-k work return the matched rows' cells as stored, so the
cells shown are decoded, and told, here, exactly as on the lean path; cells read only by the
WHERE, an aggregate or an ORDER BY are NULL on both paths and told on neither.

The work (one JSON object in the scan attribute ``hibase.scan``)::

    {"v": 1, "mode": "rows" | "agg" | "top", "fam": hex (family of the cells made there),
     "cols": [[hex name, type], ...],          # the columns below refer to by index
     "where": null | ["and"|"or", [e...]] | ["not", e] | ["cmp", op, i, hex key]
              | ["in", i, [hex key...]] | ["like"|"notlike", i, hex prefix]
              | ["isnull"|"notnull", i] | ["true"] | ["false"] | ["unknown"],
     "out": null (every cell) | [i...],        # rows / top: the cells returned
     "group": [i...], "aggs": [["count"] | ["count"|"sum"|"min"|"max", i], ...],
     "order": [[i, desc, nulls_last], ...], "k": n}

An ``agg`` region answers one row whose cell ``<fam>:\\x00hibase.agg`` holds
``{"v": 1, "rows": scanned, "groups": [[[hex key | null, ...], [state, ...]], ...]}``
(count: n; sum: [total (a number, or its digits past 64 bits), n], for a DECIMAL(p, s) the
total of its values times 10^s, an integer; min / max: hex key | null). ``cols`` types are
codec.ColumnType's str() ("long", "int binary", "decimal(10,2)", "timestamp").
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import struct
from typing import Any

from .. import codec
from ..errors import HibaseError
from .ast import (
    Agg, And, Between, Column, Compare, FalseNode, HavingCompare, In, IsNotNull, IsNull, Like,
    Not, NotLike, Or, Select, TrueNode, UnknownNode, group_columns, walk,
)
from .evaluate import cell_value, evaluate
from .normalize import coerce_literal
from .plan import Plan
from .scan import project

__all__ = ["routable", "run", "describe", "unavailable", "ENABLED"]

ENABLED = True
"""False: every statement is read by this client (tests compare the two)."""

_INTS = {"byte": 1, "short": 2, "int": 4, "long": 8}
# the literal's Python type each pushed kind compares with as its keys do (ints: int)
_LITERAL = {"double": float, "float": float, "string": str, "date": dt.date,
            "time": dt.time, "timestamp": dt.datetime, "boolean": bool,
            "decimal": decimal.Decimal}
SUM_DECIMAL_PRECISION = 18
"""SUM / AVG of a DECIMAL(p, s) is pushed down for p <= 18: this client adds the values in
Python's default decimal context (28 digits), exact for fewer than 10^10 such values in any
order, so the regions' exact partial sums (unscaled integers) give its answer exactly."""
_AGG_QUALIFIER = b"\x00hibase.agg"
_ROW_QUALIFIER = b"\x00hibase.row"


class _No(Exception):
    """The statement is not pushed down (this client reads the rows)."""


class Work:
    """A statement described for the regions, and how to merge what they return."""

    def __init__(self, select: Select, schema: Any, types: Any):
        self.select = select
        self.schema = schema
        self.types = types
        self.cols: list[bytes] = []
        self.spec: dict[str, Any] = {}
        self.aggs: list[Agg] = []
        self.groups: tuple = ()
        self.read_whole_rows = False  # rows lacking every named column still count
        self.why = ""

    def col(self, c: Column) -> int:
        if c.cast is not None or c.is_rowkey:
            raise _No
        t = self.schema.columns.get(c.name)
        if t is None or not pushable(t):
            raise _No
        if c.name not in self.cols:
            self.cols.append(c.name)
        return self.cols.index(c.name)

    def key(self, c: Column, v: Any) -> str:
        """The literal as the hex of its key in the column's type; _No when the column's
        values would not compare with it as keys do."""
        t = self.schema.columns[c.name]
        try:
            v = coerce_literal(c, v, self.types)
        except HibaseError:
            raise _No from None
        if t.name in _INTS:
            bits = 8 * _INTS[t.name]
            if type(v) is not int or not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
                raise _No
        elif t.name in ("double", "float"):
            if type(v) is int and float(v) == v:
                v = float(v)
            if type(v) is not float or math.isnan(v):
                raise _No
            if t.name == "float":  # as a FLOAT's key only when the literal is a float32
                try:
                    if struct.unpack(">f", struct.pack(">f", v))[0] != v:
                        raise _No
                except OverflowError:
                    raise _No from None
        elif type(v) is not _LITERAL[t.name] or (
                isinstance(v, decimal.Decimal) and not v.is_finite()) or (
                isinstance(v, (dt.time, dt.datetime)) and v.tzinfo is not None):
            raise _No
        try:
            return codec.encode_key(t, v).hex()
        except HibaseError:
            raise _No from None

    def cond(self, n: Any) -> list:
        if isinstance(n, Compare):
            return ["cmp", n.op, self.col(n.column), self.key(n.column, n.value)]
        if isinstance(n, Between):
            i = self.col(n.column)
            return ["and", [["cmp", ">=", i, self.key(n.column, n.low)],
                            ["cmp", "<=", i, self.key(n.column, n.high)]]]
        if isinstance(n, In):
            i = self.col(n.column)
            if not n.values:
                return ["false"]  # as evaluate: an empty IN is FALSE, also for NULL
            return ["in", i, [self.key(n.column, v) for v in n.values]]
        if isinstance(n, (Like, NotLike)):
            i = self.col(n.column)
            if self.schema.columns[n.column.name].name != "string" \
                    or not isinstance(n.prefix, str):
                raise _No
            return ["like" if isinstance(n, Like) else "notlike", i,
                    n.prefix.encode("utf-8").hex()]
        if isinstance(n, IsNull):
            return ["isnull", self.col(n.column)]
        if isinstance(n, IsNotNull):
            return ["notnull", self.col(n.column)]
        if isinstance(n, And):
            return ["and", [self.cond(x) for x in n.items]]
        if isinstance(n, Or):
            return ["or", [self.cond(x) for x in n.items]]
        if isinstance(n, Not):
            return ["not", self.cond(n.item)]
        if isinstance(n, TrueNode):
            return ["true"]
        if isinstance(n, FalseNode):
            return ["false"]
        if isinstance(n, UnknownNode):
            return ["unknown"]
        raise _No

    def columns(self) -> list[bytes] | None:
        """The columns the scan reads: the named ones, or (None) whole rows when a row
        lacking all of them still counts."""
        if self.read_whole_rows or not self.cols or (
                self.spec["mode"] != "agg" and self.spec["out"] is None):
            return None
        return list(self.cols)

    def first_key_only(self) -> bool:
        """Nothing but the rows' existence is read (COUNT(*) alone)."""
        return not self.cols and (self.spec["mode"] == "agg" or self.spec["out"] == [])


def pushable(t: Any) -> bool:
    """Is a column of type ``t`` read in the regions as this client reads it? Its cells' keys
    must order as its values compare and decode to the values this client shows: so no
    VARCHAR(n) / CHAR / VARBINARY, and a DECIMAL only with its scale declared (a plain
    DECIMAL keeps each cell's own exponent, 1.50 and 1.5, which its normalised key does not)."""
    if t.name in _INTS or t.name in ("double", "float", "date", "time", "timestamp",
                                     "boolean"):
        return True
    if t.name == "string":
        return t.length is None
    return t.name == "decimal" and t.scale is not None


def summable(t: Any) -> bool:
    """SUM / AVG of the type gives this client's answer exactly from partial sums."""
    return t.name in _INTS or (t.name == "decimal" and t.scale is not None
                               and t.precision <= SUM_DECIMAL_PRECISION)


def _exprs(select: Select) -> list:
    """Every column / aggregate the query computes: select list, ORDER BY, HAVING (as
    aggregate._exprs)."""
    out = list(select.items or ())
    out += [o.expr for o in select.order_by if o.expr not in out]
    out += [n.expr for n in walk(select.having) if isinstance(n, HavingCompare)
            and n.expr not in out]
    return out


def _empty_row_counts(select: Select, types) -> bool:
    """Does a row with none of the named columns pass the WHERE (all its values NULL)?"""
    return evaluate(select.where, b"", {}, types) is True


def translate(select: Select, schema: Any, types: Any) -> Work | None:
    """The work for ``select``, or None when the lean path must read it."""
    w = Work(select, schema, types)
    try:
        where = None if select.where is None else w.cond(select.where)
        fam = next(iter(schema.families), b"f")
        spec: dict[str, Any] = {"v": 1, "fam": fam.hex(), "where": where}
        empty_counts = _empty_row_counts(select, types)
        if select.aggregate:
            w.groups = tuple(group_columns(select))
            for e in _exprs(select):
                if isinstance(e, Column):
                    if e not in w.groups:
                        raise _No
                    continue
                if not isinstance(e, Agg) or e.distinct or e.func not in (
                        "COUNT", "SUM", "AVG", "MIN", "MAX"):
                    raise _No
                if e not in w.aggs:
                    w.aggs.append(e)
            spec["group"] = [w.col(g) for g in w.groups]
            aggs: list[list] = []
            for a in w.aggs:
                if a.column is None:
                    aggs.append(["count"])
                    continue
                i = w.col(a.column)
                if a.func in ("SUM", "AVG"):
                    if not summable(schema.columns[a.column.name]):
                        raise _No  # a floating sum depends on the order of its additions
                    aggs.append(["sum", i])
                else:
                    aggs.append([a.func.lower(), i])
            spec["aggs"] = aggs
            spec["mode"] = "agg"
            # a row with every named column NULL still makes COUNT(*) or the NULL group
            w.read_whole_rows = empty_counts and (
                bool(w.groups) or any(a.column is None for a in w.aggs))
        else:
            if select.where is None and not select.order_by:
                return None  # a plain read of every row: nothing for the regions to do
            out: list[int] | None = None
            if select.columns is not None:
                out = [w.col(Column(c)) for c in select.columns]
            order = []
            for o in select.order_by:
                if not isinstance(o.expr, Column):
                    raise _No
                order.append([w.col(o.expr), o.desc, o.nulls_last])
            if out is not None:
                out = sorted(set(out) | {i for i, _, _ in order})
            spec["out"] = out
            spec["order"] = order
            if select.order_by and select.limit is not None:
                spec["mode"] = "top"
                spec["k"] = (select.offset or 0) + select.limit
            else:
                spec["mode"] = "rows"
            w.read_whole_rows = empty_counts
        spec["cols"] = [[c.hex(), str(schema.columns[c])] for c in w.cols]
        w.spec = spec
    except (_No, KeyError):
        return None
    return w


def unavailable(select: Select, store: Any, plan: Plan | None) -> str | None:
    """Why a full scan on a store that could push it down is read by this client (EXPLAIN),
    or None when it is pushed down or the store has no such path."""
    from .fast import full_scan_plan

    if not store.capabilities.pushed_scans or not full_scan_plan(plan):
        return None
    if store.schema(select.table).salt_buckets:
        return ("not pushed down: a salted table's rows are read by this client (the "
                "ScanObserver would answer with stored, salted rowkeys)")
    if not store.scan_pushdown(select.table):
        return ("not pushed down: hibase's ScanObserver does not answer for this table "
                "(not loaded on its region servers, no Thrift2 server in the URL, or "
                "scan_pushdown=0); every row is read by this client")
    return None


def routable(select: Select, store: Any, plan: Plan | None) -> Work | None:
    """The work when ``select`` (planned as ``plan``) runs in the region servers, else None."""
    from .fast import full_scan_plan

    if not ENABLED or not store.capabilities.pushed_scans or not full_scan_plan(plan) \
            or select.computed or select.dynamic or select.casts:
        return None
    if not store.scan_pushdown(select.table):
        return None
    from .prepare import types_of
    return translate(select, store.schema(select.table), types_of(select, store))


def describe(work: Work, store: Any) -> list[str]:
    """EXPLAIN's lines for pushed-down work."""
    regions = len(store.servers(work.select.table))
    mode = work.spec["mode"]
    what = {"rows": "filter and projection", "agg": "filter and partial aggregate per group",
            "top": f"filter and top {work.spec.get('k')} per region"}[mode]
    cols = ", ".join(c.decode("utf-8", "backslashreplace") for c in work.cols) or "(none)"
    return [f"  PUSHED DOWN to the region servers' ScanObserver ({what}) over "
            f"{regions} region(s) in parallel; columns "
            f"{cols}" + ("; whole rows read" if work.read_whole_rows else ""),
            f"  MERGED in this client (v1 work: {json.dumps(work.spec, sort_keys=True)})"]


def run(select: Select, store: Any, work: Work, finish: Any = None) -> list:
    """The answer in the lean path's shape: tuples for aggregate queries (the merged groups
    handed to ``finish``, aggregate._finish: HAVING, ORDER BY, LIMIT), (rowkey, cells) for
    plain ones."""
    _, rows = store.pushed_scan(select.table, json.dumps(work.spec).encode(), work.columns(),
                                work.first_key_only())
    if work.spec["mode"] == "agg":
        return finish(select, _merge_aggregates(work, rows), work.types)
    from .order import top

    marker = next(iter(work.schema.families), b"f") + b":" + _ROW_QUALIFIER
    types = work.types
    cols = list(select.columns) if select.columns is not None else None
    got = []
    for row, cells in rows:
        cells.pop(marker, None)
        got.append((row, cells))
    if not select.order_by:
        skip = select.offset or 0
        got = got[skip:] if select.limit is None else got[skip:skip + select.limit]
        return [(row, project(cells, cols)) for row, cells in got]
    keys = [o.expr for o in select.order_by if isinstance(o.expr, Column)]
    items = [(row, cells, [cell_value(c, row, cells, types) for c in keys])
             for row, cells in got]
    kept = top(items, select.order_by, lambda it: it[2], select.limit, select.offset)
    return [(row, project(cells, cols)) for row, cells, _ in kept]


def _merge_aggregates(work: Work, rows: list) -> list[dict]:
    """One {expr: value} per group from the regions' partial states."""
    fam = next(iter(work.schema.families), b"f")
    column = fam + b":" + _AGG_QUALIFIER
    merged: dict[tuple, list] = {}
    funcs = [a[0] for a in work.spec["aggs"]]
    for _, cells in rows:
        raw = cells.get(column)
        if raw is None:
            raise HibaseError("a region answered a pushed-down aggregate without its partial "
                              "state (is hibase's ScanObserver on every region server?)")
        part = json.loads(raw)
        if part.get("v") != 1:
            raise HibaseError(f"a region answered work version {part.get('v')}, not 1")
        for keys, states in part["groups"]:
            key = tuple(keys)
            acc = merged.get(key)
            if acc is None:
                merged[key] = [_state(f, s) for f, s in zip(funcs, states)]
                continue
            for i, (f, s) in enumerate(zip(funcs, states)):
                acc[i] = _combine(f, acc[i], _state(f, s))
    if not merged and not work.groups:  # an aggregate over no rows: COUNT 0, the others NULL
        merged[()] = [_state(f, None) for f in funcs]
    group_types = [work.schema.columns[g.name] for g in work.groups]
    agg_types = [None if a.column is None else work.schema.columns[a.column.name]
                 for a in work.aggs]
    out = []
    for key, acc in merged.items():
        d: dict = {g: None if k is None else codec.decode_key(t, bytes.fromhex(k))[0]
                   for g, t, k in zip(work.groups, group_types, key)}
        for a, t, state in zip(work.aggs, agg_types, acc):
            d[a] = _result(a, t, state)
        out.append(d)
    return out


def _state(f: str, s: Any) -> Any:
    """A region's state as Python values: count n, sum (total, n), min / max key or None."""
    if f == "count":
        return 0 if s is None else int(s)
    if f == "sum":
        return (0, 0) if s is None else (int(s[0]), int(s[1]))
    return None if s is None else bytes.fromhex(s)


def _combine(f: str, a: Any, b: Any) -> Any:
    if f == "count":
        return a + b
    if f == "sum":
        return (a[0] + b[0], a[1] + b[1])
    if a is None or b is None:
        return a if b is None else b
    return min(a, b) if f == "min" else max(a, b)


def _result(a: Agg, t: Any, state: Any) -> Any:
    """As aggregate._Acc.result: COUNT n; SUM / AVG / MIN / MAX None over no value."""
    if a.func == "COUNT":
        return state
    if a.func in ("SUM", "AVG"):
        total, n = state
        if n == 0:
            return None
        if t.name == "decimal":  # the unscaled sum at the column's scale, as 0 + d1 + d2 ...
            total = decimal.Decimal(total).scaleb(-t.scale)
        return total if a.func == "SUM" else total / n
    return None if state is None else codec.decode_key(t, state)[0]
