"""Predicate tree -> disjunctive normal form, as an ordered tuple of rules (tree in, tree out).

The planner gives each conjunct its own access path, so every rule must keep exactly the rows
for which the condition is TRUE under SQL's three-valued logic (a comparison with a missing cell
is UNKNOWN, and so is its negation). ``typed`` converts literals to the columns' value types.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Mapping

from ..codec import ColumnType, value_from_literal
from ..errors import QueryPlanError, ValueTypeError
from .ast import (
    FALSE, NEGATED_OP, TRUE, And, Atom, Between, Column, Compare, FalseNode, In, IsNotNull,
    IsNull, Like, Node, Not, NotLike, Or, TrueNode, UnknownNode, Value, format_value,
    Contains, NotContains,
    map_children,
)

__all__ = [
    "MAX_CONJUNCTS", "Conjunct", "Rule", "RULES", "normalize", "conjuncts", "typed",
    "coerce_literal", "coerce_literals", "coerce_prefix", "desugar_between", "push_not_down", "to_dnf", "simplify",
    "untyped_use",
]

MAX_CONJUNCTS = 256
"""More conjuncts than this in the DNF of a condition raises QueryPlanError."""

Conjunct = tuple[Atom, ...]
Rule = Callable[[Node], Node]
SchemaTypes = Mapping[bytes, ColumnType]
_ATOMS = (Compare, In, Like, NotLike, IsNull, IsNotNull, Contains, NotContains)


# -- literals -------------------------------------------------------------------------------

def _column_type(column: Column, schema_types: SchemaTypes | None) -> ColumnType | None:
    if column.cast is not None:  # CAST(c AS t): its values are t's, as a text column's
        return ColumnType(column.cast.name)
    return None if column.is_rowkey or not schema_types else schema_types.get(column.name)


@lru_cache(maxsize=4096, typed=True)
def _coerce(t: ColumnType | None, value: Value) -> Value:
    if t is not None:
        return value_from_literal(t, value)
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise ValueTypeError(f"cannot compare {value!r} with a byte-string column")


def untyped_use(column: Column, what: str) -> QueryPlanError:
    """The error for a use of an undeclared column (or the rowkey) that needs a type: its bytes
    would be compared as bytes, and b"996" > b"1000"."""
    if column.is_rowkey:
        return QueryPlanError(f"ROWKEY is bytes: {what} would compare bytes; compare it with a "
                              "'string' or X'..' literal")
    return QueryPlanError(
        f"column {column} has no declared type, so {what} would compare its bytes, not its "
        f"values; declare its type (hibase alter-table DIR TABLE -c {column}=long, or "
        f"db.declare_columns(table, {{'{column}': 'long'}})) or write CAST({column.sql} AS BIGINT) "
        "(or DOUBLE, VARCHAR, ...)")


def coerce_literal(column: Column, value: Value, schema_types: SchemaTypes | None) -> Value:
    """The literal as the column's value type (codec.value_from_literal); for the rowkey and for
    undeclared columns, a str literal as its UTF-8 bytes and a bytes literal as it is: what the
    user's literal says the column holds (text or bytes). A number has no such reading (b"996"
    sorts after b"1000"): QueryPlanError, naming the fixes."""
    t = _column_type(column, schema_types)
    if t is None and not isinstance(value, (str, bytes)):
        raise untyped_use(column, f"a comparison with {format_value(value)}")
    return _coerce(t, value)


def coerce_literals(column: Column, values: tuple[Value, ...],
                    schema_types: SchemaTypes | None) -> tuple[Value, ...]:
    """coerce_literal over a list (an IN list), the column's type looked up once; a list whose
    literals are already the column's value kind (ints or floats for an integer column, str
    for string/char) is returned as it is, since coercing them changes nothing."""
    t = _column_type(column, schema_types)
    if t is None:
        for v in values:
            if not isinstance(v, (str, bytes)):
                raise untyped_use(column, f"IN with {format_value(v)}")
    elif values:
        kinds = set(map(type, values))
        if kinds <= _SAME_KIND.get(t.name, frozenset()) and not t.fixed:  # CHAR(n): trimmed
            return tuple(values)
    coerce = _coerce if len(values) <= 64 else _coerce.__wrapped__  # long lists: no LRU churn
    return tuple(coerce(t, v) for v in values)


# value kinds that value_from_literal returns unchanged, per column type (bool is not int here)
_SAME_KIND = {**{n: frozenset((int, float)) for n in ("byte", "short", "int", "long")},
              "string": frozenset((str,)), "char": frozenset((str,))}


def coerce_prefix(column: Column, prefix: str | bytes,
                  schema_types: SchemaTypes | None) -> str | bytes:
    """A LIKE prefix as the column's value type; only string, char and bytes columns qualify."""
    t = _column_type(column, schema_types)
    if t is not None and t.name not in ("string", "char", "bytes"):
        raise ValueTypeError(f"LIKE needs a string, char or bytes column; {column} is {t}")
    if t is not None and t.name != "bytes":
        if not isinstance(prefix, str):
            raise ValueTypeError(f"LIKE on {t} column {column} needs a str pattern")
        return prefix
    # a bytes (or undeclared) column's str / bytes literal coerces to bytes
    return _coerce(t, prefix)  # type: ignore[return-value]


def typed(node: Node, schema_types: SchemaTypes | None) -> Node:
    """Convert every literal to its column's declared type (see coerce_literal).

    A literal of the wrong kind, such as a string for an int column, raises ValueTypeError."""
    def lit(c: Column, v: Value) -> Value:
        return coerce_literal(c, v, schema_types)

    if isinstance(node, Compare):
        return Compare(node.column, node.op, lit(node.column, node.value))
    if isinstance(node, Between):
        return Between(node.column, lit(node.column, node.low), lit(node.column, node.high))
    if isinstance(node, In):
        return In(node.column, tuple(dict.fromkeys(
            coerce_literals(node.column, node.values, schema_types))))
    if isinstance(node, (Like, NotLike)):
        return type(node)(node.column, coerce_prefix(node.column, node.prefix, schema_types))
    if isinstance(node, (Contains, NotContains)):
        _check_contains(node, schema_types)
        return node
    return map_children(node, lambda n: typed(n, schema_types))


def _check_contains(node: Contains | NotContains, schema_types: SchemaTypes | None) -> None:
    """CONTAINS's column holds text (VARCHAR, or undeclared bytes read as UTF-8) and its
    query has a word: clear errors before any row is read."""
    from ..index import parse_text_query as parse_query
    t = _column_type(node.column, schema_types)
    if node.column.is_rowkey or (t is not None and t.name != "string"):
        raise QueryPlanError(f"CONTAINS needs a VARCHAR column, not {node.column}"
                             + (f" ({t})" if t is not None else ""))
    parse_query(node.query)


# -- rules ----------------------------------------------------------------------------------

def desugar_between(node: Node) -> Node:
    """``c BETWEEN lo AND hi`` -> ``(c >= lo AND c <= hi)``."""
    if isinstance(node, Between):
        return And((Compare(node.column, ">=", node.low), Compare(node.column, "<=", node.high)))
    return map_children(node, desugar_between)


def push_not_down(node: Node) -> Node:
    """Move every NOT into the atoms (De Morgan; ``NOT c < 1`` -> ``c >= 1``, ``NOT IN`` -> a
    conjunction of ``<>``, NOT LIKE -> NotLike, NOT IS NULL -> IsNotNull), valid in 3VL."""
    if isinstance(node, Not):
        return _negate(node.item)
    return map_children(node, push_not_down)


def _negate(node: Node) -> Node:
    if isinstance(node, Not):
        return push_not_down(node.item)
    if isinstance(node, And):
        return Or(tuple(_negate(i) for i in node.items))
    if isinstance(node, Or):
        return And(tuple(_negate(i) for i in node.items))
    if isinstance(node, Compare):
        return Compare(node.column, NEGATED_OP[node.op], node.value)
    if isinstance(node, In):
        return And(tuple(Compare(node.column, "<>", v) for v in node.values))
    if isinstance(node, Between):
        return Or((Compare(node.column, "<", node.low), Compare(node.column, ">", node.high)))
    if isinstance(node, Like):
        return NotLike(node.column, node.prefix)
    if isinstance(node, NotLike):
        return Like(node.column, node.prefix)
    if isinstance(node, Contains):
        return NotContains(node.column, node.query)
    if isinstance(node, NotContains):
        return Contains(node.column, node.query)
    if isinstance(node, IsNull):
        return IsNotNull(node.column)
    if isinstance(node, IsNotNull):
        return IsNull(node.column)
    if isinstance(node, TrueNode):
        return FALSE
    if isinstance(node, FalseNode):
        return TRUE
    if isinstance(node, UnknownNode):  # NOT UNKNOWN is UNKNOWN
        return node
    raise TypeError(f"not a condition node: {node!r}")


def to_dnf(node: Node) -> Node:
    """Distribute AND over OR: the result is an Or of Ands of atoms (raises QueryPlanError past
    MAX_CONJUNCTS conjuncts)."""
    return Or(tuple(And(c) for c in _dnf(node)))


def _dnf(node: Node) -> list[Conjunct]:
    if isinstance(node, TrueNode):
        return [()]
    if isinstance(node, (FalseNode, UnknownNode)):
        # NOTs are pushed into the atoms before this (below), so UNKNOWN stands where only
        # AND and OR are above it: the condition is TRUE with it iff TRUE with FALSE there
        return []
    if isinstance(node, (Not, Between)):  # rules applied out of order: do their work here
        return _dnf(push_not_down(desugar_between(node)))
    if isinstance(node, Or):
        out: list[Conjunct] = []
        for item in node.items:
            out.extend(_dnf(item))
            _check_size(len(out))
        return out
    if isinstance(node, And):
        parts = [_dnf(item) for item in node.items]
        if any(not p for p in parts):
            return []
        size = 1
        for p in parts:
            size *= len(p)
            _check_size(size)
        acc: list[Conjunct] = [()]
        for p in parts:
            acc = [a + b for a in acc for b in p]
        return acc
    if isinstance(node, _ATOMS):
        return [(node,)]
    raise TypeError(f"not a condition node: {node!r}")


def _check_size(n: int) -> None:
    if n > MAX_CONJUNCTS:
        raise QueryPlanError(
            f"condition too complex: its disjunctive normal form has more than {MAX_CONJUNCTS} "
            "conjuncts; use IN lists or split the query")


def simplify(node: Node) -> Node:
    """Flatten nested AND/OR, fold TRUE/FALSE, drop duplicates, absorb ``a OR (a AND b)`` -> a,
    one-value IN -> ``=``. Each step holds in three-valued logic."""
    if isinstance(node, (And, Or)):
        kind = type(node)
        unit, zero = (TRUE, FALSE) if kind is And else (FALSE, TRUE)
        items: list[Node] = []
        for item in node.items:
            s = simplify(item)
            for x in (s.items if isinstance(s, kind) else (s,)):
                if x == zero:
                    return zero
                if x != unit and x not in items:
                    items.append(x)
        if kind is Or:
            items = _absorb(items)
        if not items:
            return unit
        return items[0] if len(items) == 1 else kind(tuple(items))
    if isinstance(node, Not):
        s = simplify(node.item)
        if isinstance(s, (TrueNode, FalseNode)):
            return _negate(s)
        return s.item if isinstance(s, Not) else Not(s)
    if isinstance(node, In):
        values = tuple(dict.fromkeys(node.values))
        if not values:
            return FALSE
        return Compare(node.column, "=", values[0]) if len(values) == 1 else In(node.column, values)
    return node


def _absorb(items: list[Node]) -> list[Node]:
    sets = [frozenset(i.items) if isinstance(i, And) else frozenset((i,)) for i in items]
    return [item for j, item in enumerate(items)
            if not any(sets[i] < sets[j] or (sets[i] == sets[j] and i < j)
                       for i in range(len(items)) if i != j)]


RULES: tuple[Rule, ...] = (desugar_between, push_not_down, to_dnf, simplify)


# -- entry point ----------------------------------------------------------------------------

def normalize(node: Node | None, schema_types: SchemaTypes | None = None) -> list[Conjunct]:
    """The condition as a list of conjuncts (tuples of atoms); a row matches iff all atoms of
    some conjunct are TRUE. ``[]`` matches nothing, ``[()]`` everything (also for ``None``).

    With ``schema_types`` (even empty) literals are typed first (see ``typed``); with None they
    stay as parsed and the evaluator converts them when it compares."""
    if node is None:
        return [()]
    if schema_types is not None:
        node = typed(node, schema_types)
    for rule in RULES:
        node = rule(node)
    return conjuncts(node)


def conjuncts(node: Node) -> list[Conjunct]:
    """Read a DNF tree (the output of the rules) as a list of conjuncts."""
    if isinstance(node, TrueNode):
        return [()]
    if isinstance(node, FalseNode):
        return []
    out: list[Conjunct] = []
    for item in (node.items if isinstance(node, Or) else (node,)):
        items = item.items if isinstance(item, And) else (item,)
        atoms = tuple(a for a in items if isinstance(a, _ATOMS))
        if len(atoms) != len(items):
            raise TypeError(f"not in disjunctive normal form: {node}")
        out.append(atoms)
    return out
