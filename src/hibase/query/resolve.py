"""Column names written without a family, resolved against the table's schema.

Phoenix lets a statement name a column by its qualifier alone when that is unambiguous, and
the PRIMARY KEY column by its name. The parser keeps such names as written (``Select.bare``,
with their positions); ``resolve`` maps each to the rowkey (``ROWKEY``) when it is the
schema's rowkey name, else to the one declared column of that qualifier, else to the default
family's column (``0:name``, Phoenix's default family ``0``, or the table's only family).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..codec import SQL_TYPE_NAMES
from ..errors import ColumnNotFound, QueryPlanError, QuerySyntaxError
from .ast import ROWKEY, Column, Select

__all__ = ["resolve", "resolve_casts", "resolve_name", "declared", "DEFAULT_FAMILY"]

DEFAULT_FAMILY = b"0"
"""Phoenix's default column family: where CREATE TABLE puts a column written without one."""


def resolve_name(name: str, schema: Any, position: int | None = None) -> bytes:
    """The column (``b"f:q"``) or ``ROWKEY`` a bare name stands for in ``schema``'s table;
    QuerySyntaxError (at ``position``) when it names none or several."""
    if "." in name and ":" not in name:  # "f.a" quoted as one identifier (SQLAlchemy)
        family, _, qualifier = name.partition(".")
        if family and qualifier:
            return f"{family}:{qualifier}".encode("utf-8")
    rowkey = schema.rowkey
    if rowkey is not None and (name == rowkey or name.lower() == rowkey.lower()):
        return ROWKEY
    raw = name.encode("utf-8")
    for exact in (True, False):
        found = [c for c in schema.columns
                 if (c.partition(b":")[2] == raw if exact
                     else c.partition(b":")[2].lower() == raw.lower())]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise QuerySyntaxError(
                f"column {name!r} is ambiguous ({', '.join(c.decode() for c in found)}); "
                "write family.qualifier", position)
    families = list(schema.families)
    if schema.rowkey is not None or schema.rowkey_generated:  # made by CREATE TABLE: declared
        where = "" if position is None else f" (at position {position})"
        raise ColumnNotFound(f"table {schema.name!r} has no column {name!r}{where}")
    if DEFAULT_FAMILY in schema.families:
        return DEFAULT_FAMILY + b":" + raw
    if len(families) == 1:
        return families[0] + b":" + raw
    raise QuerySyntaxError(f"column {name!r} needs a family: write family.qualifier", position)


def _map(node: Any, fn: Callable[[Column], Column]) -> Any:
    """``node`` (a tree of dataclasses and tuples) with every Column replaced by fn(column)."""
    if isinstance(node, Column):
        return fn(node)
    if isinstance(node, tuple):
        return tuple(_map(x, fn) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {}
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            m = _map(v, fn)
            if m is not v:
                changes[f.name] = m
        return dataclasses.replace(node, **changes) if changes else node
    return node


def _map_select(select: Select, fn: Callable[[Column], Column]) -> Select:
    return select.with_(where=_map(select.where, fn), items=_map(select.items, fn),
                        group_by=_map(select.group_by, fn), having=_map(select.having, fn),
                        order_by=_map(select.order_by, fn))


def resolve(select: Select, schema: Any) -> Select:
    """``select`` with its bare names (``Select.bare``) replaced by what they stand for, and
    its casts resolved (``resolve_casts``)."""
    return resolve_casts(_resolve_bare(select, schema), schema)


def declared(select: Select, schema: Any) -> Any:
    """The column types ``select`` may name: the table's declared columns and the statement's
    dynamic ones (``FROM t (f.extra VARCHAR)``); a dynamic column that redeclares one of the
    table's with another type is refused."""
    if not select.dynamic:
        return schema.columns
    out = dict(schema.columns)
    for name, t in select.dynamic:
        have = out.setdefault(name, t)
        if have != t:
            raise QueryPlanError(f"{Column(name).sql} is declared {SQL_TYPE_NAMES[have.name]} in "
                                 f"{schema.name}; a dynamic column cannot make it "
                                 f"{SQL_TYPE_NAMES[t.name]} (CAST it instead)")
    return out


def resolve_casts(select: Select, schema: Any) -> Select:
    """What each CAST of ``select`` means with ``schema``'s declared types.

    A cast of an undeclared column reads its bytes as the type: when the statement reads it
    through casts to one type, that type is the column's for the whole statement (as before
    casts were values: an index built with the type answers); a cast to its own declared type
    changes nothing. Both become plain columns. Any other cast of a declared column stays a
    value of its own (Column.cast), so the column's other uses read it as declared."""
    if not select.casts:
        return select
    types = declared(select, schema)
    override: dict[bytes, Any] = {}
    plain: set[tuple[bytes, Any]] = set()
    for name, t in select.casts:
        have = types.get(name)
        if have is None:
            first = override.setdefault(name, t)
            if first != t:
                col = Column(name).sql
                raise QueryPlanError(
                    f"{col} has no declared type and is CAST to both {SQL_TYPE_NAMES[first.name]}"
                    f" and {SQL_TYPE_NAMES[t.name]}; declare its type (hibase alter-table DIR "
                    f"TABLE -c {Column(name)}=TYPE) to cast it several ways")
            plain.add((name, t))
        elif have.name == t.name:
            plain.add((name, t))

    def fn(c: Column) -> Column:
        return Column(c.name) if c.cast is not None and (c.name, c.cast) in plain else c

    keys = {Column(n, t).key: n for n, t in plain}
    computed: dict[Column, None] = dict.fromkeys(select.computed)
    for n, t in select.casts:
        c = Column(n, t)
        if (n, t) not in plain and select.columns is not None and c.key in select.columns:
            computed[c] = None
    out = _map_select(select, fn)
    columns = select.columns
    if columns is not None:
        columns = tuple(dict.fromkeys(keys.get(c, c) for c in columns))
    names = select.names
    if names is not None:
        names = tuple(keys.get(c, c) for c in names)
    return out.with_(columns=columns, names=names, casts=tuple(override.items()),
                     computed=tuple(computed))


def _resolve_bare(select: Select, schema: Any) -> Select:
    if not select.bare:
        return select
    names: dict[bytes, bytes] = {}
    for name, position in select.bare:
        names[name.encode("utf-8")] = resolve_name(name, schema, position)

    def col(c: bytes) -> bytes:
        return names.get(c, c)

    columns = None
    if select.columns is not None:
        columns = tuple(dict.fromkeys(c for c in map(col, select.columns) if c != ROWKEY))
    def fn(c: Column) -> Column:
        return Column(col(c.name), c.cast) if c.name in names else c

    # a cast's key in the select list names the column as written: rewritten with it
    renamed = {Column(n, t).key: Column(col(n), t).key for n, t in select.casts if n in names}
    columns = None if columns is None else tuple(renamed.get(c, c) for c in columns)
    return _map_select(select, fn).with_(
        columns=columns,
        names=None if select.names is None else tuple(renamed.get(c, col(c))
                                                      for c in select.names),
        casts=tuple((col(c), t) for c, t in select.casts),
        bare=())
