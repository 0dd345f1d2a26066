"""The predicate tree that SQL and ``Table.where()`` conditions parse into.

Nodes are frozen, hashable dataclasses, so plans and results can be cached by condition, and
each prints in a compact SQL-like form used by EXPLAIN: ``(f:dest = 'IAH' AND f:delay > 10)``.

Columns are named by their HBase bytes, ``b"family:qualifier"``; the rowkey is the column named
``ROWKEY`` (``b"ROWKEY"``), which no real column can collide with since real names contain ``:``.
Literals are int / float / str as parsed; ``normalize.typed`` converts them to the column's value
type (bytes for the rowkey and for undeclared columns).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterator, Union

from ..codec import SQL_TYPE_NAMES, ColumnType, sql_literal, sql_type_name

__all__ = [
    "ROWKEY", "Value", "Column", "Compare", "Between", "In", "Like", "NotLike", "IsNull",
    "Contains", "NotContains",
    "IsNotNull", "And", "Or", "Not", "TrueNode", "FalseNode", "TRUE", "FALSE", "Atom", "Node",
    "UnknownNode", "UNKNOWN",
    "Select", "COMPARE_OPS", "NEGATED_OP", "FLIPPED_OP", "format_value",
    "Agg", "OrderItem", "HavingCompare", "Param", "AGG_FUNCS", "SQL_TYPE_NAMES", "Casts",
    "walk", "map_children", "group_columns",
]

ROWKEY = b"ROWKEY"
"""The name of the rowkey pseudo-column (``Column(ROWKEY)``); it compares as raw bytes."""

Value = Union[int, float, str, bytes, bool, datetime.date, datetime.time, Decimal]
"""A literal: a number, 'string', X'bytes', TRUE / FALSE, DATE / TIME / TIMESTAMP '...' (a
datetime.datetime is a TIMESTAMP) or an exact DECIMAL."""

COMPARE_OPS = ("=", "<>", "<", "<=", ">", ">=")
NEGATED_OP = {"=": "<>", "<>": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
"""NOT (c op v) <=> c NEGATED_OP[op] v, also under three-valued logic (both UNKNOWN on NULL)."""
FLIPPED_OP = {"=": "=", "<>": "<>", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
"""v op c <=> c FLIPPED_OP[op] v."""


Casts = tuple[tuple[bytes, ColumnType], ...]
"""A statement's ``CAST(column AS type)``s: (column name, type) pairs, one per column."""


def format_value(v: Value) -> str:
    """A literal as SQL text: 'it''s' for str, X'00ff' for bytes, the number for numbers."""
    if isinstance(v, Param):
        return str(v)
    if isinstance(v, (bool, datetime.date, datetime.time, Decimal)):
        return sql_literal(v, 1 << 30)
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, (bytes, bytearray)):  # text shown as text, other bytes as hex
        try:
            text = bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and text.isprintable():
            return format_value(text)
        return "X'" + bytes(v).hex().upper() + "'"
    return repr(v)


@dataclass(frozen=True)
class Column:
    """A column reference: ``b"family:qualifier"``, or ``ROWKEY`` for the rowkey; with
    ``cast``, ``CAST(column AS type)``: the column's value converted to that type
    (``query.cast.convert``), a value of its own beside the column's other uses."""

    name: bytes
    cast: ColumnType | None = None

    @property
    def is_rowkey(self) -> bool:
        return self.name == ROWKEY and self.cast is None

    @property
    def key(self) -> bytes:
        """The name of this value in a result row: the column's name, or for a cast its SQL
        text (``b"CAST(t:age AS BIGINT)"``, which no stored column can be named: those hold
        a ``:`` before any parenthesis)."""
        return self.name if self.cast is None else str(self).encode("utf-8")

    @property
    def sql(self) -> str:
        """The column as SQL writes it: ``family.qualifier`` (ROWKEY as is)."""
        return str(self).replace(":", ".", 1)

    def __str__(self) -> str:
        name = self.name.decode("utf-8", "backslashreplace")
        if self.cast is None:
            return name
        return f"CAST({name} AS {sql_type_name(self.cast)})"


@dataclass(frozen=True)
class Compare:
    """``column op value`` with op one of ``= <> < <= > >=``."""

    column: Column
    op: str
    value: Value

    def __post_init__(self) -> None:
        if self.op not in NEGATED_OP:
            raise ValueError(f"unknown comparison operator {self.op!r}")

    def __str__(self) -> str:
        return f"{self.column} {self.op} {format_value(self.value)}"


@dataclass(frozen=True)
class Between:
    """``column BETWEEN low AND high`` (inclusive); normalize desugars it into two Compares."""

    column: Column
    low: Value
    high: Value

    def __str__(self) -> str:
        return f"{self.column} BETWEEN {format_value(self.low)} AND {format_value(self.high)}"


@dataclass(frozen=True)
class In:
    """``column IN (values...)``; kept as one atom (a multi-point lookup for the planner)."""

    column: Column
    values: tuple[Value, ...]

    def __str__(self) -> str:
        return f"{self.column} IN ({', '.join(map(format_value, self.values))})"


@dataclass(frozen=True)
class Like:
    """``column LIKE 'prefix%'``: only prefix patterns are supported (prefix may be empty)."""

    column: Column
    prefix: str | bytes

    def __str__(self) -> str:
        return f"{self.column} LIKE {_pattern(self.prefix)}"


@dataclass(frozen=True)
class NotLike:
    """``column NOT LIKE 'prefix%'``: an atom of its own, so NOT never survives normalization."""

    column: Column
    prefix: str | bytes

    def __str__(self) -> str:
        return f"{self.column} NOT LIKE {_pattern(self.prefix)}"


@dataclass(frozen=True)
class Contains:
    """``CONTAINS(column, 'quick fox')``: the column's text holds the query's words (all of
    them; ``OR`` between alternatives, ``word*`` a prefix), by index/text.py's tokenizer, the
    same with or without a text index. UNKNOWN on NULL, as LIKE."""

    column: Column
    query: str

    def __str__(self) -> str:
        return f"CONTAINS({self.column}, {format_value(self.query)})"


@dataclass(frozen=True)
class NotContains:
    """``NOT CONTAINS(column, '...')``: an atom of its own, as NotLike."""

    column: Column
    query: str

    def __str__(self) -> str:
        return f"NOT CONTAINS({self.column}, {format_value(self.query)})"


def _pattern(prefix: str | bytes) -> str:
    return format_value(prefix + "%" if isinstance(prefix, str) else prefix + b"%")


@dataclass(frozen=True)
class IsNull:
    """``column IS NULL``: the cell is missing (or does not decode as its declared type)."""

    column: Column

    def __str__(self) -> str:
        return f"{self.column} IS NULL"


@dataclass(frozen=True)
class IsNotNull:
    """``column IS NOT NULL``."""

    column: Column

    def __str__(self) -> str:
        return f"{self.column} IS NOT NULL"


@dataclass(frozen=True)
class And:
    items: tuple["Node", ...]

    def __str__(self) -> str:
        return _join(" AND ", self.items, "TRUE")


@dataclass(frozen=True)
class Or:
    items: tuple["Node", ...]

    def __str__(self) -> str:
        return _join(" OR ", self.items, "FALSE")


def _join(sep: str, items: tuple["Node", ...], empty: str) -> str:
    if not items:
        return empty
    if len(items) == 1:
        return str(items[0])
    return "(" + sep.join(map(str, items)) + ")"


@dataclass(frozen=True)
class Not:
    item: "Node"

    def __str__(self) -> str:
        s = str(self.item)
        return f"NOT {s}" if s.startswith("(") or s.startswith("NOT ") else f"NOT ({s})"


@dataclass(frozen=True)
class TrueNode:
    def __str__(self) -> str:
        return "TRUE"


@dataclass(frozen=True)
class FalseNode:
    def __str__(self) -> str:
        return "FALSE"


@dataclass(frozen=True)
class UnknownNode:
    """SQL's UNKNOWN: what ``NULL`` makes of an IN list's member (``x IN (1, NULL)`` is
    ``x = 1 OR UNKNOWN``, never FALSE; its NOT never TRUE). No row matches it."""

    def __str__(self) -> str:
        return "UNKNOWN"


TRUE = TrueNode()
FALSE = FalseNode()
UNKNOWN = UnknownNode()


def walk(node: Any) -> Iterator[Any]:
    """Every node of a condition or HAVING tree, the AND / OR / NOT nodes and the atoms under
    them, parents before children; None (no condition) has none. The one walk of the tree."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        yield n
        if isinstance(n, (And, Or)):
            stack.extend(reversed(n.items))
        elif isinstance(n, Not):
            stack.append(n.item)


def map_children(node: Any, fn: Callable[[Any], Any]) -> Any:
    """``node`` with ``fn`` applied to each child of an AND / OR / NOT; an atom unchanged."""
    if isinstance(node, (And, Or)):
        return type(node)(tuple(fn(i) for i in node.items))
    if isinstance(node, Not):
        return Not(fn(node.item))
    return node


@dataclass(frozen=True)
class Param:
    """A ``?`` (numbered from 0 in text order) or ``:name`` placeholder, bound by
    ``params.bind`` before planning; never a literal spliced into the text."""

    index: int | None = None
    name: str | None = None

    def __str__(self) -> str:
        return "?" if self.name is None else f":{self.name}"


AGG_FUNCS = ("COUNT", "SUM", "MIN", "MAX", "AVG")


@dataclass(frozen=True)
class Agg:
    """An aggregate of the select list: ``COUNT(*)`` (column None), ``F([DISTINCT] col)``."""

    func: str
    column: Column | None = None
    distinct: bool = False

    def __str__(self) -> str:
        arg = "*" if self.column is None else str(self.column)
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{arg})"


@dataclass(frozen=True)
class OrderItem:
    """``ORDER BY expr [ASC|DESC] [NULLS FIRST|LAST]``; NULLs come first unless NULLS LAST
    is written, in either direction (Phoenix's default)."""

    expr: "Column | Agg"
    desc: bool = False
    nulls_last: bool = False

    def __str__(self) -> str:
        return (f"{self.expr}{' DESC' if self.desc else ''}"
                f"{' NULLS LAST' if self.nulls_last else ''}")


@dataclass(frozen=True)
class HavingCompare:
    """A HAVING atom: ``aggregate-or-group-column op literal``."""

    expr: "Column | Agg"
    op: str
    value: Value

    def __str__(self) -> str:
        return f"{self.expr} {self.op} {format_value(self.value)}"


Atom = Union[Compare, In, Like, NotLike, IsNull, IsNotNull, Contains, NotContains]
"""What a normalized conjunct is made of (no Between, And, Or, Not, TRUE, FALSE)."""
Node = Union[Atom, Between, And, Or, Not, TrueNode, FalseNode, UnknownNode, HavingCompare]
"""A condition tree: a WHERE condition's atoms, or a HAVING condition's HavingCompares,
combined by And / Or / Not (the two trees share those nodes)."""


@dataclass(frozen=True)
class Select:
    """A parsed ``[EXPLAIN] SELECT``; ``columns`` None means ``*``, ``()`` means keys only.

    Aggregate queries (an aggregate, GROUP BY or DISTINCT) carry their select list in
    ``items`` (columns and Agg, in order) and ``columns`` is None; plain queries keep
    ``items`` None."""

    table: str
    columns: tuple[bytes, ...] | None = None
    where: Node | None = None
    limit: int | None = None
    explain: bool = False
    items: tuple["Column | Agg", ...] | None = None
    group_by: tuple[Column, ...] = ()
    having: Node | None = None
    order_by: tuple[OrderItem, ...] = ()
    offset: int | None = None
    distinct: bool = False
    casts: Casts = ()
    """CAST pairs (column, type): as parsed, every cast of the statement; after
    ``resolve.resolve``, only the undeclared columns read as a type for the whole statement
    (the other casts are Column.cast values)."""
    dynamic: Casts = ()
    """Phoenix's dynamic columns, ``FROM t (f.extra VARCHAR)``: (column, type) pairs declared
    for this statement beside the table's own."""
    computed: tuple[Column, ...] = ()
    """Plain queries, after ``resolve.resolve``: the casts of the select list, each a value of
    the result rows under its ``Column.key``, computed from the fetched column."""
    names: tuple[bytes, ...] | None = field(default=None, compare=False)
    """Plain queries: the select list as written, in order (ROWKEY and repeats kept; None for
    ``*``), for callers that return rows as tuples (hibase.dbapi)."""
    bare: tuple[tuple[str, "int | None"], ...] = field(default=(), compare=False)
    labels: tuple["str | None", ...] = field(default=(), compare=False)
    """The select list's aliases (``f.a AS x``), None where there is none: the names
    hibase.dbapi's description gives the result columns."""
    """Column names written without a family (``k``, ``a``) and their positions: resolved
    against the table's schema (``resolve.resolve``: the rowkey's name, or a column of that
    qualifier) before planning."""

    def with_(self, **changes: object) -> "Select":
        """A copy with some fields changed (dataclasses.replace without its per-call field
        introspection: this runs on every query)."""
        d: dict[str, object] = {
            "table": self.table, "columns": self.columns, "where": self.where,
            "limit": self.limit, "explain": self.explain, "items": self.items,
            "group_by": self.group_by, "having": self.having, "order_by": self.order_by,
            "offset": self.offset, "distinct": self.distinct, "casts": self.casts,
            "computed": self.computed, "dynamic": self.dynamic, "names": self.names, "bare": self.bare, "labels": self.labels}
        d.update(changes)
        return Select(**d)  # type: ignore[arg-type]  # each change has its field's type

    @property
    def aggregate(self) -> bool:
        """Does the query return computed rows (tuples) rather than stored rows?"""
        return self.items is not None

    def __str__(self) -> str:
        if self.items is not None:
            cols = ", ".join(map(str, self.items))
        else:
            cols = "*" if self.columns is None else (
                ", ".join(c.decode("utf-8", "backslashreplace") for c in self.columns)
                or "ROWKEY")
        s = f"SELECT {'DISTINCT ' if self.distinct else ''}{cols} FROM {self.table}"
        if self.where is not None:
            s += f" WHERE {self.where}"
        if self.group_by:
            s += " GROUP BY " + ", ".join(map(str, self.group_by))
        if self.having is not None:
            s += f" HAVING {self.having}"
        if self.order_by:
            s += " ORDER BY " + ", ".join(map(str, self.order_by))
        if self.limit is not None:
            s += f" LIMIT {self.limit}"
        if self.offset is not None:
            s += f" OFFSET {self.offset}"
        if self.casts:
            s += " -- " + ", ".join(f"CAST({c.decode('utf-8', 'backslashreplace')} AS "
                                    f"{SQL_TYPE_NAMES[t.name]})" for c, t in self.casts)
        return "EXPLAIN " + s if self.explain else s


def group_columns(select: "Select") -> tuple:
    """The columns a statement groups by: its GROUP BY, or every column of a DISTINCT select
    list without aggregates (DISTINCT groups them), else none."""
    if select.group_by:
        return select.group_by
    items = select.items or ()
    columns = [i for i in items if isinstance(i, Column)]
    if select.distinct and len(columns) == len(items):
        return tuple(dict.fromkeys(columns))
    return ()
