"""Partial indexes at create time (issue 43): a predicate compiled for the index spec.

The predicate is compiled with the pushed-scan compiler (pushdown.Work.cond), so the region
servers' IndexWhere.java and index/partial.py evaluate it as the pushed scans do; what that
format cannot say (functions, CAST, ROWKEY, undeclared or unpushable columns, placeholders) is
refused with a SchemaError saying why.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import SchemaError
from .ast import Param, Select, walk

__all__ = ["compile_where"]


def compile_where(sql: str, select: Select, schema: Any, types: Mapping) -> dict:
    """The spec's ``where`` for the predicate ``sql`` (``select``: a statement on the index's
    table with the predicate as its WHERE, names resolved); SchemaError when the predicate is
    not one index upkeep can evaluate exactly, on the client and in the region servers."""
    from .pushdown import Work, _No

    where = select.where
    why = ("a partial index's WHERE may only compare declared columns with literals (=, <>, <, "
           "<=, >, >=, BETWEEN, IN, LIKE 'prefix%', IS [NOT] NULL) combined with AND, OR, NOT")
    if where is None:
        raise SchemaError("a partial index needs a WHERE condition")
    if any(isinstance(v, Param) for n in walk(where)
           for v in (getattr(n, "value", None), getattr(n, "low", None),
                     getattr(n, "high", None), *getattr(n, "values", ()))):
        raise SchemaError(f"cannot index WHERE {sql}: a parameter (?) has no value when "
                          "rows are indexed; write the literal")
    if select.casts or select.computed:
        raise SchemaError(f"cannot index WHERE {sql}: {why} (no CAST)")
    for n in walk(where):
        col = getattr(n, "column", None)
        if col is not None and not col.is_rowkey and col.name not in schema.columns:
            raise SchemaError(f"cannot index WHERE {sql}: {col.sql} is not a declared column "
                              "(a partial index's predicate reads declared columns only)")
    w = Work(select, schema, types)
    try:
        tree = w.cond(where)
    except (_No, KeyError):
        raise SchemaError(f"cannot index WHERE {sql}: {why}; of the column types, VARCHAR(n), "
                          "CHAR, VARBINARY and DECIMAL without a scale are not supported, "
                          "nor ROWKEY") from None
    return {"sql": sql.strip(), "cols": [[c.hex(), str(schema.columns[c])] for c in w.cols],
            "where": tree}
