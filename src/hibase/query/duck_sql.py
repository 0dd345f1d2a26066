"""Phoenix's SQL read by sqlglot and written for DuckDB, keeping Phoenix's semantics where the
two engines differ (hibase.query.duck runs the result).

Rules, in order, each pinned by tests/test_sql_engine.py:

1. **NULL order**: Phoenix sorts NULLs first in ascending and in descending order unless
   ``NULLS LAST`` is written; DuckDB sorts them last. Every ORDER BY key without a written
   NULLS FIRST / LAST gets NULLS FIRST (``nulls_first``, at parse time).
2. **Integer division truncates**: ``7 / 2`` is 3 and ``-7 / 2`` is -3 in Phoenix; DuckDB's
   ``/`` gives a DOUBLE. The statement is read as a typed-division dialect, its types
   annotated from the views' columns (``to_duckdb``), and sqlglot writes an integer division
   of integers as DuckDB's truncating form.
3. **CAST to an integer type truncates**: ``CAST(2.7 AS INTEGER)`` is 2 and of -2.7 is -2 in
   Phoenix (Java's narrowing); DuckDB rounds (3, -3). A cast of a DOUBLE / FLOAT / DECIMAL
   operand to an integer type becomes ``CAST(TRUNC(x) AS type)``.
4. **Phoenix's TO_DATE, TO_TIMESTAMP, TO_TIME** (DuckDB has none of them by these names or
   meanings): ``TO_DATE(s)`` is ``CAST(CAST(s AS TIMESTAMP) AS DATE)``, and with a Java
   date format, ``TO_DATE(s, 'yyyy-MM-dd HH:mm')``, DuckDB's ``strptime`` with the format
   translated (``_java_format``: yyyy, yy, MM, dd, HH, mm, ss, SSS; quoted text kept).
"""

from __future__ import annotations

import re
import threading
from typing import Any, Mapping, cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.schema import MappingSchema

from ..errors import QueryPlanError, QuerySyntaxError
from .parse import _Dialect

__all__ = ["Phoenix", "read", "to_duckdb"]


class Phoenix(_Dialect):
    """The lean parser's dialect (``X'..'`` binary literals) where ``/`` of two integers is an
    integer division, as in Phoenix."""

    TYPED_DIVISION = True


class _NullsLarge(Phoenix):
    """The same with the opposite default NULL placement: a key whose ``nulls_first`` differs
    between the two parses was written without NULLS FIRST / LAST."""

    NULL_ORDERING = "nulls_are_large"


_NULLS = re.compile(r"\bNULLS\s+(FIRST|LAST)\b", re.IGNORECASE)


def read(sql: str) -> exp.Expression:
    """Parse one statement; every ORDER BY key without a written NULLS FIRST / LAST is given
    NULLS FIRST (rule 1)."""
    tree = _parse(sql, Phoenix)
    ordered = list(tree.find_all(exp.Ordered))
    written = [False] * len(ordered)
    if ordered and _NULLS.search(sql):
        other = list(_parse(sql, _NullsLarge).find_all(exp.Ordered))
        if len(other) == len(ordered):
            written = [bool(a.args.get("nulls_first")) == bool(b.args.get("nulls_first"))
                       for a, b in zip(ordered, other)]
    for o, w in zip(ordered, written):
        if not w:
            o.set("nulls_first", True)
    return tree


def _parse(sql: str, dialect: type[sqlglot.Dialect]) -> exp.Expression:
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (ParseError, TokenError) as e:
        raise QuerySyntaxError(str(e).splitlines()[0]) from None
    if tree is None:  # pragma: no cover - the lean parser refused an empty statement first
        raise QuerySyntaxError("empty query", 0)
    return cast(exp.Expression, tree)


def to_duckdb(tree: exp.Expression, views: Mapping[str, Mapping[str, str]]) -> str:
    """``tree`` (its tables and columns bound to the views, hibase.query.duck_bind) as
    DuckDB's SQL; ``views`` gives each view's {column: DuckDB type} (rules 2 and 3)."""
    schema = MappingSchema({name: dict(cols) for name, cols in views.items()},
                           dialect="duckdb", normalize=False)
    try:
        for node in list(tree.find_all(exp.Contains)):  # CONTAINS: hibase's, not DuckDB's
            node.replace(exp.Anonymous(this=CONTAINS_UDF,
                                       expressions=[node.this.copy(), node.expression.copy()]))
        for fn in list(tree.find_all(exp.Anonymous)):
            target = _TO_TYPES.get(str(fn.name).upper())
            if target is not None:
                fn.replace(_to_type(fn, target))
        annotate_types(tree, schema=schema, dialect="duckdb")
        for cast in list(tree.find_all(exp.Cast)):
            to = cast.args.get("to")
            if isinstance(to, exp.DataType) and to.is_type(*exp.DataType.INTEGER_TYPES) \
                    and cast.this.is_type(*exp.DataType.REAL_TYPES):
                cast.this.replace(exp.func("TRUNC", cast.this.copy()))
        return tree.sql(dialect="duckdb")
    except SqlglotError as e:
        raise QueryPlanError(f"cannot write the statement for the SQL engine: {e}") from None


CONTAINS_UDF = "hibase_contains"


def _contains(text: str, query: str) -> bool:
    """CONTAINS(column, query) for DuckDB (NULLs never reach it: DuckDB answers NULL)."""
    from ..index import contains_text
    return bool(contains_text(text, query))


_TO_TYPES = {"TO_DATE": "DATE", "TO_TIMESTAMP": "TIMESTAMP", "TO_TIME": "TIME"}


def _to_type(fn: exp.Anonymous, target: str) -> exp.Expression:
    """Phoenix's TO_DATE / TO_TIMESTAMP / TO_TIME(text[, Java format]) as DuckDB's (rule 4)."""
    args = fn.expressions
    if not 1 <= len(args) <= 2:
        raise QueryPlanError(f"{fn.name.upper()} takes a string and an optional format")
    if len(args) == 1:
        value: exp.Expression = exp.cast(args[0].copy(), "TIMESTAMP")
    else:
        fmt = args[1]
        if not (isinstance(fmt, exp.Literal) and fmt.is_string):
            raise QueryPlanError(f"{fn.name.upper()}'s format must be a string literal")
        value = cast(exp.Expression, exp.func("strptime", args[0].copy(),
                                              exp.Literal.string(_java_format(fmt.this))))
    return exp.cast(value, target) if target != "TIMESTAMP" else value


_JAVA = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"),
         ("mm", "%M"), ("ss", "%S"), ("SSS", "%g"), ("%", "%%")]


def _java_format(fmt: str) -> str:
    """A Java SimpleDateFormat pattern (the common letters) as strptime's."""
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] == "'":  # 'quoted' literal text; '' is a quote
            end = fmt.find("'", i + 1)
            out.append("'" if end == i + 1 else fmt[i + 1:end if end > 0 else len(fmt)])
            i = len(fmt) if end < 0 else end + 1
            continue
        for java, c in _JAVA:
            if fmt.startswith(java, i):
                out.append(c)
                i += len(java)
                break
        else:
            if fmt[i].isalpha():
                raise QueryPlanError(f"date format letter {fmt[i]!r} is not supported "
                                     "(yyyy, yy, MM, dd, HH, mm, ss, SSS)")
            out.append(fmt[i])
            i += 1
    return "".join(out)


_lock = threading.Lock()
_db: list = []


def database() -> Any:
    """The process's in-memory DuckDB database, made at the first engine statement (opening
    one costs ~80 ms; a connection to it, ``cursor()``, well under 1 ms). Each run works on a
    connection of its own, whose views and registered frames (temporary, per connection) no
    other run sees."""
    if not _db:
        import duckdb

        with _lock:
            if not _db:
                db = duckdb.connect(":memory:")
                # CONTAINS with hibase's tokenizer (DuckDB's contains() is a substring test)
                db.create_function(CONTAINS_UDF, _contains, ["VARCHAR", "VARCHAR"], "BOOLEAN")
                _db.append(db)
    return _db[0]
