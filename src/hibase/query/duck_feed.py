"""A hibase table read by hibase's own scan into a typed DuckDB view (hibase.query.duck).

``lean_select`` is the plain query the lean path runs for one ``TableUse``: the columns the
statement reads (all for a ``*``) and the conjuncts pushed down to it, so indexes, rowkey
ranges and the native scan do the filtering. ``register`` turns its rows into typed columns
(a pandas DataFrame of nullable arrays) and makes them a view named after the table: the
rowkey as ``ROWKEY``, each column as ``"family:qualifier"`` with its declared type
(``DUCK_TYPES``: long -> BIGINT, double -> DOUBLE, string -> VARCHAR, date -> DATE, decimal(p,s)
-> DECIMAL(p,s), plain decimal -> DECIMAL(38, s) with the scale its values need, or DOUBLE past
38 digits, ...). A cell that does
not read as its declared type is NULL, as on the lean path; an undeclared column is VARCHAR
when all its cells are UTF-8 text, else BLOB; the rowkey is VARCHAR when declared so, else
BLOB.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from .. import codec
from ..errors import ValueTypeError
from .ast import ROWKEY, Select
from .params import bind
from .duck_bind import ROWKEY_NAME, TableUse
from .parse import parse_select
from .resolve import resolve

__all__ = ["DUCK_TYPES", "lean_select", "view_columns", "register", "feedable",
           "register_feed"]

DUCK_TYPES = {"byte": "TINYINT", "short": "SMALLINT", "int": "INTEGER", "long": "BIGINT",
              "float": "FLOAT", "double": "DOUBLE", "string": "VARCHAR", "char": "VARCHAR",
              "bytes": "BLOB", "date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP",
              "boolean": "BOOLEAN", "decimal": "DECIMAL(38,10)"}
"""Each hibase column type as DuckDB's (a DECIMAL's: see decimal_type)."""

_NUMPY = {"TINYINT": "int8", "SMALLINT": "int16", "INTEGER": "int32", "BIGINT": "int64",
          "FLOAT": "float32", "DOUBLE": "float64"}


_PARAM = re.compile(r":(hibase_p\d+)\b")
_FEED_KINDS = frozenset({"byte", "short", "int", "long", "float", "double", "string"})


def lean_select(use: TableUse, table: str, values: Mapping[str, Any] | None = None,
                pushdown: bool = True) -> Select:
    """The lean path's query for ``use`` on hibase table ``table`` (its full name), the
    statement's parameters ``values`` bound into its pushed-down condition."""
    cond = use.pushdown() if pushdown else None
    select = parse_select("SELECT * FROM t" + (f" WHERE {cond}" if cond else ""))
    columns = None if use.star else tuple(sorted(c for c in use.columns if c != ROWKEY))
    # names: an SQL select list, so prepare checks each column is the table's (a misspelt
    # column in an engine statement must fail as in a lean one, never read as NULL)
    select = resolve(select.with_(table=table, columns=columns, names=columns), use.schema)
    names = set(_PARAM.findall(cond or ""))
    return bind(select, {n: (values or {})[n] for n in names}) if names else select


def view_columns(use: TableUse, found: Iterable[bytes] = ()) -> list[bytes]:
    """The view's columns in order: the rowkey, the declared columns (schema order), then the
    undeclared ones by name; for a ``*`` every declared one and those ``found`` in the rows."""
    schema = use.schema
    wanted = set(use.columns) | (set(schema.columns) | set(found) if use.star else set())
    head = [ROWKEY] if ROWKEY in use.columns or (use.star and not schema.rowkey_generated) \
        else []
    declared = [c for c in schema.columns if c in wanted]
    rest = sorted(c for c in wanted if c != ROWKEY and c not in schema.columns)
    return head + declared + rest


def duck_type(use: TableUse, column: bytes, values: list | None = None) -> str:
    """A view column's DuckDB type (``values``: the undeclared column's cells, if read)."""
    schema = use.schema
    if column == ROWKEY:
        t = schema.rowkey_type
        return "VARCHAR" if t is not None and t.name == "string" else "BLOB"
    t = schema.columns.get(column)
    if t is not None:
        return decimal_type(t, values) if t.name == "decimal" else DUCK_TYPES[t.name]
    if values is None:
        return "VARCHAR"
    try:
        for v in values:
            if v is not None:
                v.decode("utf-8")
    except UnicodeDecodeError:
        return "BLOB"
    return "VARCHAR"


def decimal_type(t: codec.ColumnType, values: list | None = None) -> str:
    """DuckDB's type for a DECIMAL column: DECIMAL(p,s) as declared; for a plain DECIMAL
    (``values``: its decoded values, when read) DECIMAL(38, s) with the largest scale among
    them, or DOUBLE when their digits do not fit 38."""
    if t.precision is not None:
        return f"DECIMAL({t.precision},{t.scale})"
    if values is None:
        return DUCK_TYPES["decimal"]
    whole = scale = 0
    for v in values:
        if v is not None:
            _, digits, exp = v.as_tuple()
            scale = max(scale, -exp)
            whole = max(whole, len(digits) + exp)
    return f"DECIMAL(38,{scale})" if whole + scale <= 38 else "DOUBLE"


def _decoded(use: TableUse, column: bytes, rows: list[tuple[bytes, dict]]) -> tuple[list, str]:
    """One column's values (decoded by its declared type) and its DuckDB type."""
    if column == ROWKEY:
        keys = [k for k, _ in rows]
        kind = duck_type(use, ROWKEY)
        if kind == "VARCHAR":
            return [k.decode("utf-8", "replace") for k in keys], kind
        return keys, kind
    raw = [cells.get(column) for _, cells in rows]
    t = use.schema.columns.get(column)
    if t is None:
        kind = duck_type(use, column, raw)
        return ([None if v is None else v.decode("utf-8") for v in raw] if kind == "VARCHAR"
                else raw), kind
    decode = codec.decode_cell
    out: list[Any] = []
    for v in raw:
        if v is None:
            out.append(None)
            continue
        try:
            out.append(decode(t, v))
        except ValueTypeError:  # a cell that does not read as its type is NULL
            out.append(None)
    return out, decimal_type(t, out) if t.name == "decimal" else DUCK_TYPES[t.name]


def _array(values: list, kind: str) -> Any:
    """A pandas column of ``values`` (None for NULL) holding DuckDB type ``kind``."""
    import numpy as np
    import pandas as pd  # type: ignore[import-untyped]

    n = len(values)
    dtype = _NUMPY.get(kind)
    if dtype is None:
        return np.array(values, dtype=object) if n else np.empty(0, dtype=object)
    mask = np.fromiter((v is None or v != v for v in values), bool, n)
    data = np.fromiter((0 if m else v for v, m in zip(values, mask)), dtype, n)
    if dtype.startswith("float"):
        return pd.arrays.FloatingArray(data, mask)
    return pd.arrays.IntegerArray(data, mask)


def register(con: Any, use: TableUse, rows: list[tuple[bytes, dict]], index: int
             ) -> dict[str, str]:
    """Make ``rows`` (the lean path's (rowkey, {column: cell})) the view ``use.name`` on
    DuckDB connection ``con``; returns the view's {column name: DuckDB type}."""
    import pandas as pd

    found = {c for _, cells in rows for c in cells} if use.star else ()
    columns = view_columns(use, found)
    frame, types = {}, {}
    for i, column in enumerate(columns):
        values, kind = _decoded(use, column, rows)
        frame[f"c{i}"] = _array(values, kind)
        types[_name(column)] = kind
    source = f"__hibase_{index}"
    con.register(source, pd.DataFrame(frame, index=None) if frame else
                 pd.DataFrame({"c": [0] * len(rows)}))
    items = ", ".join(f'CAST(c{i} AS {types[_name(c)]}) AS {_quoted(_name(c))}'
                      for i, c in enumerate(columns)) or "NULL AS __hibase_none"
    con.execute(f"CREATE TEMP VIEW {_quoted(use.name)} AS SELECT {items} FROM {source}")
    return types


def _name(column: bytes) -> str:
    return ROWKEY_NAME if column == ROWKEY else column.decode("utf-8")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def feedable(use: TableUse) -> bool:
    """Whether ``use`` can be read from the columnar feed: declared numbers and unbounded
    strings only (no rowkey, no ``*``: the feed's keys are not decoded in bulk)."""
    if use.star or not use.columns:
        return False
    for c in use.columns:
        t = use.schema.columns.get(c)
        if c == ROWKEY or t is None or t.name not in _FEED_KINDS or (
                t.name == "string" and t.length is not None):
            return False
    return True


def register_feed(con: Any, use: TableUse, feed: Any, index: int) -> dict[str, str]:
    """``register`` for a ``feedable`` use read from a ``columnar.Feed`` (all the table's
    rows: DuckDB applies the conditions); NaN is NULL, as ``_array`` makes it."""
    import numpy as np
    import pandas as pd

    columns = view_columns(use)
    frame, types = {}, {}
    for i, column in enumerate(columns):
        t = use.schema.columns[column]
        kind = DUCK_TYPES[t.name]
        values, null, _bad = feed.column(column, t)
        dtype = _NUMPY.get(kind)
        if dtype is None:
            arr: Any = values
        elif dtype.startswith("float"):
            data = values.astype(dtype)
            arr = pd.arrays.FloatingArray(data, null | np.isnan(data))
        else:
            arr = pd.arrays.IntegerArray(values.astype(dtype), null.copy())
        frame[f"c{i}"] = arr
        types[_name(column)] = kind
    df = pd.DataFrame(frame)
    live = feed.live()
    if live is not None:
        df = df[live]
    source = f"__hibase_{index}"
    con.register(source, df)
    items = ", ".join(f'CAST(c{i} AS {types[_name(c)]}) AS {_quoted(_name(c))}'
                      for i, c in enumerate(columns))
    con.execute(f"CREATE TEMP VIEW {_quoted(use.name)} AS SELECT {items} FROM {source}")
    return types
