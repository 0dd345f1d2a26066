"""The column types one statement reads with: the table's declared types, overridden by the
statement's ``CAST(column AS type)``s, and which indexes can still serve it.

An undeclared column holds bytes whose type hibase does not know; a statement gives it one with
CAST (Phoenix's spelling). A cast re-reads the cell text as the type (a text cell that does not
parse is NULL, like a declared column's bad cell); an index is used only for columns whose cast
type is the one it was built with, so a cast to another type is answered by a scan.
"""

from __future__ import annotations

from typing import Mapping

from ..codec import ColumnType
from ..errors import QueryPlanError
from .ast import SQL_TYPE_NAMES, Casts

__all__ = ["statement_types", "usable_specs"]


def statement_types(casts: Casts, declared: Mapping[bytes, ColumnType]
                    ) -> Mapping[bytes, ColumnType]:
    """``declared`` with each cast column's type replaced by its cast type."""
    if not casts:
        return declared
    out = dict(declared)
    for name, t in casts:
        have = declared.get(name)
        if have is not None and have.binary and have.name != t.name:
            col = name.decode("utf-8", "backslashreplace")
            raise QueryPlanError(f"{col} is declared {have} (Bytes.toBytes cells); CAST to "
                                 f"{SQL_TYPE_NAMES[t.name]} would misread them")
        if have is None or have.name != t.name:
            out[name] = t
    return out


def usable_specs(specs: list, casts: Casts, types: Mapping[bytes, ColumnType]) -> list:
    """The indexes whose columns the statement reads with the types they were built with."""
    if not casts:
        return specs
    return [s for s in specs if all(types.get(c) == t for c, t in zip(s.columns, s.types))]
