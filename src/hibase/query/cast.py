"""``CAST(column AS type)``: a column's value converted to another type, and which statements
keep their casts as values of their own.

Semantics are those Phoenix and SQLite share: a number cast to an integer type is truncated
toward zero (``CAST(30.9 AS BIGINT)`` is 30, ``CAST(-2.5 AS INTEGER)`` -2), a number cast to a
string is its text (``30``, ``30.5``), a string cast to a number is parsed (``' 42 '`` is 42,
``'2.5'`` cast to an integer type 2). Where they differ, Phoenix wins: a string that is not a
number, or a value outside the target type's range, is an error naming the value (SQLite reads
``'abc'`` as 0 and clamps), never a silent NULL or wrong number.

An undeclared column holds bytes of no known type; a CAST of one is a *reading* of its text as
the type (a cell that does not parse is NULL, as a declared column's bad cell is), and when a
statement reads such a column only through casts to one type, the cast is the column's type for
the whole statement, so an index built with that type still answers (``resolve_casts``).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from decimal import Decimal
from typing import Any, Mapping

from ..codec import (
    SQL_TYPE_NAMES, ColumnType, decode_cell, encode_cell, parse_timestamp,
)
from ..errors import QueryPlanError, ValueTypeError
from .ast import Column

__all__ = ["convert", "column_type", "result_type", "INT_RANGES"]

INT_RANGES = {"byte": (-(1 << 7), (1 << 7) - 1), "short": (-(1 << 15), (1 << 15) - 1),
              "int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}
_FLOAT_MAX = 3.4028234663852886e38


def column_type(column: Column, types: Mapping[bytes, ColumnType] | None) -> ColumnType | None:
    """The type a column reference's values have in a statement: its cast's, else the
    statement's type for the column (None for the rowkey and undeclared columns)."""
    if column.cast is not None:
        return column.cast
    if column.is_rowkey or not types:
        return None
    return types.get(column.name)


def result_type(column: Column) -> ColumnType:
    """The type of a cast's values in a result row: the target type, as text cells (a cast of a
    binary column is not binary)."""
    if column.cast is None:
        raise ValueError(f"{column} is not a CAST")
    return dataclasses.replace(column.cast, binary=False)


def _fail(value: Any, target: ColumnType, why: str) -> ValueTypeError:
    shown = repr(value) if not isinstance(value, bytes) else repr(value)[1:]
    return ValueTypeError(f"CAST({shown} AS {SQL_TYPE_NAMES[target.name]}): {why}")


def _number(text: str, value: Any, target: ColumnType) -> int | float:
    s = text.strip()
    try:
        return int(s)
    except ValueError:
        pass
    try:
        f = float(s)
    except ValueError:
        raise _fail(value, target, "not a number") from None
    if f != f or s.lower().lstrip("+-") in ("inf", "infinity", "nan"):
        raise _fail(value, target, "not a number")
    return f


_KINDS = (("boolean", bool), ("timestamp", datetime.datetime), ("date", datetime.date),
          ("time", datetime.time), ("decimal", Decimal))
"""The column type whose text cell a Python value of the class is written as."""


def _text(value: Any) -> str:
    for kind, cls in _KINDS:
        if isinstance(value, cls):
            return encode_cell(ColumnType(kind), value).decode("ascii")
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e16:
            return f"{value:.1f}"  # 30.0, as SQLite and Phoenix print it
        return repr(value)
    return str(value)


def convert(value: Any, source: ColumnType | None, target: ColumnType) -> Any:
    """``value`` (decoded by ``source``; bytes for an undeclared column) as ``target``'s value
    type; None stays None. ValueTypeError for a value the target cannot hold."""
    if value is None:
        return None
    name = target.name
    if source is None and isinstance(value, (bytes, bytearray)):
        try:  # an undeclared column's bytes: read as the type, NULL if they do not parse
            v = decode_cell(ColumnType(name), bytes(value))
        except ValueTypeError:
            return None
        return None if v != v else v
    if isinstance(value, (bytes, bytearray)):
        if name == "bytes":
            return bytes(value)
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _fail(value, target, "not UTF-8 text") from None
    if name in _NEW:
        return _new(value, target)
    if isinstance(value, (datetime.date, datetime.time)):
        if name in ("string", "char"):
            return _text(value)
        raise _fail(value, target, f"a {type(value).__name__} is not a number")
    if isinstance(value, bool) and name in INT_RANGES:
        return int(value)
    if name in INT_RANGES:
        if isinstance(value, str):
            value = _number(value, value, target)
        if isinstance(value, float):
            if math.isinf(value):
                raise _fail(value, target, "out of range")
            n = int(value)  # truncates toward zero
        else:
            n = int(value)
        lo, hi = INT_RANGES[name]
        if not lo <= n <= hi:
            raise _fail(value, target, f"out of {SQL_TYPE_NAMES[name]}'s range")
        return n
    if name in ("double", "float"):
        f = float(_number(value, value, target) if isinstance(value, str) else value)
        if name == "float" and abs(f) > _FLOAT_MAX:
            raise _fail(value, target, "out of FLOAT's range")
        return f
    if name in ("string", "char"):
        text = _text(value)
        if name == "char" and len(text) != 1:
            raise _fail(value, target, "CHAR holds one character")
        return text
    if name == "bytes":
        return _text(value).encode("utf-8")
    raise QueryPlanError(f"CAST to {SQL_TYPE_NAMES.get(name, name)} is not supported")


_NEW = frozenset(("date", "time", "timestamp", "decimal", "boolean"))


def _new(value: Any, target: ColumnType) -> Any:
    """CAST to DATE, TIME, TIMESTAMP, DECIMAL or BOOLEAN: a string is read as the type's text
    (a DATE also takes a timestamp's text, keeping its date, as DuckDB does); a TIMESTAMP
    gives its date or time; a number its BOOLEAN (non-zero is TRUE) or DECIMAL (rounded half
    up to the scale)."""
    name = target.name
    if isinstance(value, str):
        text = value.strip()
        if name == "date" and len(text) > 10:
            value = text  # read below as a timestamp, then its date
        else:
            try:
                return decode_cell(dataclasses.replace(target, binary=False),
                                   text.encode("utf-8"))
            except ValueTypeError:
                if name != "date":
                    raise _fail(value, target, f"not a {SQL_TYPE_NAMES[name]}") from None
                value = text
        try:
            value = parse_timestamp(value)
        except ValueError:
            raise _fail(value, target, f"not a {SQL_TYPE_NAMES[name]}") from None
    if name == "boolean":
        if isinstance(value, (bool, int, float, Decimal)):
            return bool(value)
        raise _fail(value, target, "not a BOOLEAN")
    if name == "decimal" and isinstance(value, bool):
        value = int(value)
    if name in ("date", "time") and isinstance(value, datetime.datetime):
        value = value.date() if name == "date" else value.time()
    try:
        return decode_cell(dataclasses.replace(target, binary=False),
                           encode_cell(dataclasses.replace(target, binary=False), value))
    except ValueTypeError as e:
        raise _fail(value, target, str(e).rpartition(": ")[2]) from None
