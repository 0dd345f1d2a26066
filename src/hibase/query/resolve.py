"""Column names written without a family, resolved against the table's schema.

Phoenix lets a statement name a column by its qualifier alone when that is unambiguous, and
the PRIMARY KEY column by its name. The parser keeps such names as written (``Select.bare``,
with their positions); ``resolve`` maps each to the rowkey (``ROWKEY``) when it is the
schema's rowkey name, else to the one declared column of that qualifier, else to the default
family's column (``0:name``, Phoenix's default family ``0``, or the table's only family).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import ColumnNotFound, QuerySyntaxError
from .ast import ROWKEY, Column, Select

__all__ = ["resolve", "resolve_name", "DEFAULT_FAMILY"]

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


def _map(node: Any, names: dict[bytes, bytes]) -> Any:
    if isinstance(node, Column):
        return Column(names.get(node.name, node.name))
    if isinstance(node, tuple):
        return tuple(_map(x, names) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {}
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            m = _map(v, names)
            if m is not v:
                changes[f.name] = m
        return dataclasses.replace(node, **changes) if changes else node
    return node


def resolve(select: Select, schema: Any) -> Select:
    """``select`` with its bare names (``Select.bare``) replaced by what they stand for."""
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
    return select.with_(
        columns=columns,
        names=None if select.names is None else tuple(map(col, select.names)),
        where=_map(select.where, names),
        items=_map(select.items, names),
        group_by=_map(select.group_by, names),
        having=_map(select.having, names),
        order_by=_map(select.order_by, names),
        casts=tuple((col(c), t) for c, t in select.casts),
        bare=())
