"""Executing SQL statements: SELECT through the query engine, DDL and DML through the
Connection's public API (so every write takes the one write path and keeps the indexes exact).

Statements are parsed in ``query/statements.py`` (SELECT in ``query/parse.py``); this module
sits above query/ and below connection.py, which calls it from ``Connection.sql`` (and
``hibase.dbapi`` from its cursors). It holds no state: the Connection is passed in.

Results (``Result``): ``kind`` is "select", "explain", "ddl" or "dml"; ``description`` the
result columns as (label, type) with type a ``ColumnType`` (a declared column), ``None`` (an
undeclared column's bytes), ``"rowkey"`` or ``"number"`` (COUNT / SUM / AVG); ``rows`` tuples in
that order; ``rowcount`` the rows written (DML), returned (SELECT) or -1 (DDL); ``bad_cells``
(a codec.BadCells) the cells a SELECT read as NULL because they do not parse as their type.
"""

from __future__ import annotations

import functools

import datetime
import itertools
import os
import time
from dataclasses import dataclass, field
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from . import codec, errors
from .query import duck, engine
from .query.ast import ROWKEY, Agg, Column, Param, Select
from .query.resolve import DEFAULT_FAMILY, resolve, resolve_name
from .query.statements import (
    AlterIndex, CreateIndex, CreateTable, Delete, Describe, DropIndex, DropTable, ShowTables,
    Statement, Update, Upsert, is_select, parse_statement,
)
from .index.manager import IndexManager
from .store.api import Store
from .store.schema import FOREVER

__all__ = ["Database", "Result", "execute", "execute_many", "parse", "label", "decode_row",
           "decode_key", "decode_keys", "text_key", "generated_rowkey", "result_columns", "warn_bad_cells", "describe_rows", "user_tables"]


class Rows(Protocol):
    """What a DML statement needs of a table (hibase.Table is one): its rows by key, and a
    batch that writes them as one."""

    def rows(self, rows: Iterable[bytes]) -> list: ...

    def batch(self) -> AbstractContextManager[Any]: ...


class Database(Protocol):
    """What statements need of the Connection they run on (hibase.Connection is one): its store
    and indexes to read through, and its public API for every write and DDL. Named here, so
    that sql.py, below connection.py, does not import it."""

    @property
    def store(self) -> Store: ...

    @property
    def indexer(self) -> IndexManager: ...

    @property
    def max_statement(self) -> int: ...

    def table(self, name: str | bytes, use_prefix: bool = True) -> Rows: ...

    def tables(self) -> list[bytes]: ...

    def create_table(self, name: str | bytes, families: Mapping[Any, Any],
                     columns: Mapping[Any, str] | None = None,
                     split_size: int | None = None, existing: bool = False, *,
                     rowkey: str | None = None, rowkey_type: Any = None,
                     rowkey_generated: bool = False, salt_buckets: int | None = None
                     ) -> None: ...

    def delete_table(self, name: str | bytes, disable: bool = False) -> None: ...

    def create_index(self, table: str | bytes, name: str, columns: Any,
                     covering: Any = None, local: bool = False, processes: int | None = None,
                     progress: Any = None, build: bool = True, *,
                     consistency: str = "strong", uncovered: bool = False,
                     where: str | None = None, kind: str = "") -> dict: ...

    def drop_index(self, table: str | bytes, name: str) -> None: ...

    def build_index(self, table: str | bytes, name: str) -> dict: ...


@dataclass
class Result:
    kind: str
    description: list[tuple[str, Any]] | None = None
    rows: list[tuple] = field(default_factory=list)
    rowcount: int = -1
    verb: str = "written"  # DML: what happened to the rowcount's rows ("written", "deleted")
    records: list | None = None  # SELECT: the engine's rows ((rowkey, {col: raw}) or tuples)
    select: Select | None = None
    text: str | None = None  # EXPLAIN: the plan as text
    # SELECT: cells read as NULL because they do not parse as their declared type
    bad_cells: codec.BadCells = field(default_factory=codec.BadCells)

    def selected(self) -> tuple[Select, list]:
        """A SELECT result's statement and the engine's rows (an EXPLAIN result has neither)."""
        if self.select is None or self.records is None:
            raise AssertionError(f"a {self.kind} result has no rows")
        return self.select, self.records


def parse(db: Database, sql: str) -> "Statement | duck.EngineStatement":
    """The statement of ``sql`` (cached by text). A SELECT the lean path refuses as beyond it
    (errors.NeedsEngine: a function, a join, ...) is planned for the SQL engine instead."""
    try:
        return parse_statement(sql, db.max_statement)
    except errors.NeedsEngine as refusal:
        if not is_select(sql):
            raise
        return duck.plan(sql, str(refusal))


def label(col: bytes, schema: Any) -> str:
    """A result column's name: the rowkey's declared name (or ROWKEY), a default-family
    column's qualifier, else family.qualifier."""
    if col == ROWKEY:
        return schema.rowkey or "ROWKEY"
    fam, _, qual = col.partition(b":")
    if fam == DEFAULT_FAMILY:
        return qual.decode("utf-8", "backslashreplace")
    return f"{fam.decode('utf-8', 'backslashreplace')}.{qual.decode('utf-8', 'backslashreplace')}"


def _decode(t: Any, raw: bytes | None, bad: codec.BadCells | None = None, row: bytes = b"",
            column: bytes = b"") -> Any:
    if raw is None or t is None:
        return raw
    try:
        return codec.decode_cell(t, raw)
    except errors.ValueTypeError:  # a cell that does not read as its (cast) type is NULL
        if bad is not None:
            bad.add(row, column)
        return None


def decode_key(schema: Any, key: bytes) -> Any:
    """A rowkey as results give it: str for a VARCHAR rowkey (bytes when not UTF-8), else the
    stored bytes (VARBINARY or undeclared)."""
    if text_key(schema):
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            return key
    return key


def text_key(schema: Any) -> bool:
    """Whether the table declares its rowkey VARCHAR, so results give it as str."""
    return schema.rowkey_type is not None and schema.rowkey_type.name == "string"


def decode_keys(schema: Any, select: Select, rows: list) -> list:
    """An aggregate query's rows with the rowkey (selected, or its MIN / MAX) decoded as
    decode_key does, so every result gives a VARCHAR rowkey as str."""
    at = {i for i, item in enumerate(select.items or ()) if _item_type(item, {}) == "rowkey"}
    if not at or not text_key(schema):
        return rows
    return [tuple(decode_key(schema, v) if i in at and type(v) is bytes else v
                  for i, v in enumerate(r)) for r in rows]


def decode_row(cells: Mapping[bytes, bytes], types: Mapping[bytes, Any],
               bad: codec.BadCells | None = None, row: bytes = b"") -> dict:
    """{column: value} with each declared column's cell decoded (undeclared stay bytes); a
    cell that does not parse as its type is None, counted in `bad` (as `row`) when given."""
    return {c: _decode(types.get(c), v, bad, row, c) for c, v in cells.items()}


def decode_rows(rows: list, types: Mapping[bytes, Any], bad: codec.BadCells | None = None,
                decoders: Mapping[bytes, Any] | None = None) -> list:
    """[(key, decode_row(cells, types, bad, key))] for many rows: each declared column's
    decoder looked up once for all of them (or given: `decoders`, {column: decode(bytes)} for
    every typed column of `types`), a row holding anything else (an undeclared column, a cell
    that does not parse, a value that is not bytes) decoded by decode_row."""
    decs = decoders if decoders is not None else {
        c: functools.partial(codec.cell_decoder(t), t) for c, t in types.items()
        if t is not None}
    out = []
    for key, cells in rows:
        try:
            out.append((key, {c: decs[c](v) for c, v in cells.items() if type(v) is bytes
                              or _not_bytes()}))
        except Exception:
            out.append((key, decode_row(cells, types, bad, key)))
    return out


def _not_bytes() -> bool:
    raise TypeError("not bytes")


def warn_bad_cells(bad: codec.BadCells | None, stacklevel: int = 3) -> None:
    """Tell the caller, as a CellTypeWarning, that cells were read as NULL because they do
    not parse as their declared types (their count and the first few rows and columns)."""
    if bad:
        import warnings
        warnings.warn(errors.CellTypeWarning(bad.message(), bad.count, tuple(bad.examples)),
                      stacklevel=stacklevel)


# -- SELECT ------------------------------------------------------------------------------------

def _prepared(db: Database, select: Select, full: Callable[[str], str]) -> tuple[Select, Any]:
    select = select.with_(table=full(select.table))
    schema = db.store.schema(select.table)
    return resolve(select, schema), schema


def run_select(db: Database, select: Select, params: Any, full: Callable[[str], str],
               range_method: str = "auto", full_scan: bool = False) -> Result:
    select, schema = _prepared(db, select, full)
    if select.explain:
        text = engine.explain(select, db.store, db.indexer, range_method, full_scan, params)
        return Result("explain", [("PLAN", None)], [(line,) for line in text.splitlines()],
                      -1, text=text)
    records, shape = engine.select_rows(select, db.store, db.indexer, range_method, full_scan,
                                        params)
    select = engine.bind(select, params)
    types = engine.types_of(select, db.store) if shape is None else shape.types
    result = Result("select", records=records, select=select, rowcount=len(records))
    labels = select.labels
    if select.items is not None:  # an aggregate query
        result.description = [(_item_label(i, schema), _item_type(i, types))
                              for i in select.items]
        result.description = _aliased(result.description, labels)
        result.rows = decode_keys(schema, select, records)
        return result
    names = result_columns(select, schema, records)
    result.description = [(label(c, schema), "rowkey" if c == ROWKEY else types.get(c))
                          for c in names]
    if select.names is not None:
        result.description = _aliased(result.description, labels)
    decoders = [None if c == ROWKEY else types.get(c) for c in names]
    rows = []
    bad = result.bad_cells
    for key, cells in records:
        rows.append(tuple(decode_key(schema, key) if c == ROWKEY else
                          _decode(t, cells.get(c), bad, key, c)
                          for c, t in zip(names, decoders)))
    result.rows = rows
    return result


def result_columns(select: Select, schema: Any, records: list) -> tuple[bytes, ...]:
    """A plain SELECT's result columns in order (ROWKEY for the rowkey): the select list as
    written, repeats kept; for ``*`` the rowkey (unless generated), the declared columns in
    schema order, then the undeclared ones found in ``records`` by name. One rule for
    Result.description and ``hibase query``'s header."""
    if select.names is not None:
        return select.names
    names = (() if schema.rowkey_generated else (ROWKEY,)) + tuple(schema.columns)
    seen = set(names)
    return names + tuple(sorted({c for _, cells in records for c in cells if c not in seen}))


def _aliased(description: list, labels: tuple) -> list:
    if not labels or len(labels) != len(description):
        return description
    return [(a or name, t) for (name, t), a in zip(description, labels)]


def _item_label(item: Any, schema: Any) -> str:
    if isinstance(item, Column):
        return label(item.name, schema)
    if item.column is None:
        return str(item)
    inner = label(item.column.name, schema)
    return f"{item.func}({'DISTINCT ' if item.distinct else ''}{inner})"


def _item_type(item: Any, types: Mapping[bytes, Any]) -> Any:
    if isinstance(item, Column):
        return "rowkey" if item.is_rowkey else types.get(item.name)
    if isinstance(item, Agg) and item.func in ("MIN", "MAX") and item.column is not None:
        return "rowkey" if item.column.is_rowkey else types.get(item.column.name)
    return "number"


def run_engine(db: Database, stmt: duck.EngineStatement, params: Any, full: Callable[[str], str],
               range_method: str = "auto", full_scan: bool = False) -> Result:
    """A SELECT on the SQL engine (hibase.query.duck): rows as tuples, described as the lean
    path describes its columns (a hibase column by its label and declared type, an expression
    by its alias or text and the type DuckDB gives it)."""
    if stmt.explain:
        text = duck.explain(stmt, params, db.store, db.indexer, full, range_method, full_scan)
        return Result("explain", [("PLAN", None)], [(line,) for line in text.splitlines()],
                      -1, text=text)
    answer = duck.run(stmt, params, db.store, db.indexer, full, range_method, full_scan)
    description = []
    for name, use, column, kind in answer.columns:
        schema = use.schema if use is not None else None
        if name is None:
            name = label(column, schema) if column is not None and schema is not None else (
                "ROWKEY" if column == ROWKEY else (column or b"").decode("utf-8", "replace")
                .replace(":", ".", 1))
        if column == ROWKEY:
            t: Any = "rowkey"
        elif schema is not None and column in schema.columns:
            t = schema.columns[column]
        else:
            t = _ENGINE_TYPES.get(kind.split("(")[0], "number" if kind != "BLOB" else None)
        description.append((name, t))
    return Result("select", description, answer.rows, len(answer.rows), records=answer.rows)


_ENGINE_TYPES: dict[str, Any] = {
    "TINYINT": codec.ColumnType("long"), "SMALLINT": codec.ColumnType("long"),
    "INTEGER": codec.ColumnType("long"), "BIGINT": codec.ColumnType("long"),
    "FLOAT": codec.ColumnType("double"), "DOUBLE": codec.ColumnType("double"),
    "DECIMAL": codec.ColumnType("decimal"), "VARCHAR": codec.ColumnType("string"),
    "DATE": codec.ColumnType("date"), "TIME": codec.ColumnType("time"),
    "TIMESTAMP": codec.ColumnType("timestamp"), "BOOLEAN": codec.ColumnType("boolean")}
"""DuckDB's result types as hibase's (others: "number", BLOB: None, bytes)."""


# -- parameters of UPSERT VALUES ---------------------------------------------------------------

def _value(v: Any, what: str) -> Any:
    if type(v) is int or type(v) is str:  # the common case, first
        return v
    if v is None or isinstance(v, (str, bytes, bool, datetime.date, datetime.time, Decimal)):
        return v  # a bool is 1 / 0 for a number column (_cell)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return None if v != v else v  # NaN is NULL (pandas' missing value)
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    try:  # numpy scalars and other numbers
        import numbers
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, numbers.Real):
            f = float(v)
            return None if f != f else f
    except Exception:  # pragma: no cover
        pass
    if type(v).__name__ == "bool_":  # numpy.bool_
        return bool(v)
    raise errors.InvalidArgument(f"parameter {what} must be int, float, str, bytes, bool, date, "
                                 f"time, datetime, Decimal or None, not {type(v).__name__}")


def _bind_rows(stmt: Upsert, params: Any) -> list[tuple]:
    return _bind(stmt.rows, params)


def _bind(rows: Sequence[tuple], params: Any) -> list[tuple]:
    """``rows`` of literals and Params with the Params' values from ``params``."""
    # (Params by identity: hashing the dataclass per value cost ~6% of an indexed load)
    found = [v for r in rows for v in r if type(v) is Param]
    if not found:
        if params:
            raise errors.InvalidArgument(f"the statement has no parameters but {len(params)} "
                                         "value(s) were given")
        return list(rows)
    if params is None:
        raise errors.InvalidArgument("the statement has parameters but no values were given")
    if found[0].name is not None:
        if not isinstance(params, Mapping):
            raise errors.InvalidArgument("named parameters (:name) take a dict of values")
        names = {p.name for p in found if p.name is not None}  # the parser refuses mixing
        missing = sorted(names - set(params))
        if missing:
            raise errors.InvalidArgument("no value for parameter(s) "
                                         + ", ".join(":" + str(m) for m in missing))
        extra = sorted(set(params) - names)
        if extra:
            raise errors.InvalidArgument(f"unknown parameter(s) {', '.join(map(str, extra))}")
        values = {id(p): _value(params[p.name], f":{p.name}") for p in found
                  if p.name is not None}
    else:
        if type(params) is not tuple and type(params) is not list and (
                isinstance(params, (Mapping, str, bytes)) or not isinstance(params, Sequence)):
            raise errors.InvalidArgument("? parameters take a list or tuple of values")
        if len(params) != len(found):
            raise errors.InvalidArgument(f"the statement has {len(found)} ? parameter(s) but "
                                         f"{len(params)} value(s) were given")
        values = {id(p): _value(params[p.index], str(p.index + 1))
                  for p in found if p.index is not None}
    return [tuple(values[id(v)] if type(v) is Param else v for v in r) for r in rows]


# -- writes ------------------------------------------------------------------------------------

_counter = itertools.count()


def generated_rowkey() -> bytes:
    """A unique rowkey for a table without PRIMARY KEY: time, process and a counter (rows
    written later by one process sort later)."""
    return b"%016x%06x%08x" % (time.time_ns(), os.getpid() & 0xFFFFFF,
                               next(_counter) & 0xFFFFFFFF)


def _targets(schema: Any, columns: tuple[bytes, ...] | None) -> list[bytes]:
    if columns is None:
        return ([] if schema.rowkey_generated else [ROWKEY]) + list(schema.columns)
    out = []
    for c in columns:
        col = c if (c == ROWKEY or b":" in c) else resolve_name(c.decode("utf-8"), schema)
        if col != ROWKEY and col.partition(b":")[0] not in schema.families:
            raise errors.ColumnNotFound(
                f"table {schema.name!r} has no column {col.decode(errors='replace')!r} "
                f"(families: {', '.join(f.decode() for f in schema.families)})")
        if col in out:
            raise errors.InvalidArgument(f"column {label(col, schema)!r} is given twice")
        out.append(col)
    return out


def _key_bytes(schema: Any, v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (int, float)):
        return str(v).encode()
    raise errors.InvalidArgument(f"a rowkey cannot be {type(v).__name__}")


_INTS = ("byte", "short", "int", "long")


def _whole(t: Any, v: float) -> bytes:
    """An integer column's cell for a float: 7.0 as 7; 7.5, inf and NaN refused."""
    why = "out of range" if v - v != 0.0 and v == v else "not a whole number (an integer " \
        "column does not round)"
    if v.is_integer():
        try:
            return codec.encode_cell(t, int(v))
        except errors.ValueTypeError:
            why = "out of range"
    raise errors.ValueTypeError(f"invalid {codec.sql_type_name(t)} value "
                                f"{codec.sql_literal(v)}: {why}")


def _cell(schema: Any, col: bytes, v: Any) -> bytes:
    """A value (literal or parameter) as the column's cell. A whole float (7.0, e.g. from
    pandas or JSON) is written to an integer column as the integer it is, as SQL assigns a
    number to an INTEGER; a fractional one (7.5) is refused, not rounded."""
    t = schema.columns.get(col)
    if isinstance(v, bool) and (t is None or t.name != "boolean"):
        v = int(v)  # TRUE is 1 in a number column (SQLAlchemy's Boolean on an old table)
    elif t is not None and t.name == "string" and isinstance(v, _TEXT_CLASSES):
        # as sqlite3 keeps a date in a text column (pandas makes a Decimal column VARCHAR)
        v = codec.iso_text(v) if not isinstance(v, Decimal) else format(v, "f")
    if t is not None:
        try:
            if type(v) is float and t.name in _INTS:
                return _whole(t, v)
            return codec.encode_cell(t, v)
        except errors.ValueTypeError as exc:
            raise errors.ValueTypeError(f"column {label(col, schema)}: {exc}") from None
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    for kind, cls in _TEXT_KINDS:  # as a declared column's text cell would hold it
        if isinstance(v, cls):
            return codec.encode_cell(codec.ColumnType(kind), v)
    return repr(v).encode() if isinstance(v, float) else str(v).encode()


_TEXT_KINDS = (("timestamp", datetime.datetime), ("date", datetime.date),
               ("time", datetime.time), ("decimal", Decimal))
_TEXT_CLASSES = (datetime.date, datetime.time, Decimal)


def _write(db: Database, table: str, schema: Any, targets: list[bytes], rows: list[tuple],
           insert: bool = False) -> int:
    """Write ``rows`` (values for ``targets``) in one batch; ``insert``: refuse, with
    errors.RowExists and nothing written, a rowkey that has cells already or comes twice."""
    if ROWKEY not in targets and not schema.rowkey_generated:
        raise errors.InvalidArgument(
            f"{'INSERT' if insert else 'UPSERT'} INTO {table} needs the rowkey column "
            f"({schema.rowkey or 'ROWKEY'}) among its columns")
    k = targets.index(ROWKEY) if ROWKEY in targets else None
    writes = []
    for row in rows:
        if len(row) != len(targets):
            raise errors.InvalidArgument(f"{len(row)} values for {len(targets)} columns")
        if k is None:
            key = generated_rowkey()
        else:
            if row[k] is None:
                raise errors.InvalidArgument(f"the rowkey ({schema.rowkey or 'ROWKEY'}) cannot "
                                             "be NULL")
            key = _key_bytes(schema, row[k])
        cells, nulls = {}, []
        for col, v in zip(targets, row):
            if col == ROWKEY:
                continue
            if v is None:
                nulls.append(col)
            else:
                cells[col] = _cell(schema, col, v)
        writes.append((key, cells, nulls))
    t = db.table(table, use_prefix=False)
    if insert and k is not None:
        with db.store.write_lock():  # the check and the write, as one (Connection.mutate
            _check_new(t, schema, [key for key, _, _ in writes])  # takes it again)
            _send(t, writes)
    else:
        _send(t, writes)
    return len(writes)


def _send(t: Rows, writes: list[tuple[bytes, dict, list]]) -> None:
    with t.batch() as b:  # one atomic write with the index upkeep (Connection.mutate)
        for key, cells, nulls in writes:
            if cells:
                b.put(key, cells)
            if nulls:
                b.delete(key, columns=nulls)


def _check_new(t: Rows, schema: Any, keys: list[bytes]) -> None:
    """Refuse (errors.RowExists) a rowkey given twice or that has cells already. Run under
    the store's writer lock with the write that follows, so no writer of this process comes
    between (the embedded store has one writing process; on HBase, as Phoenix without its
    coprocessors, a writer in another process is not serialized: hibase has no
    transactions)."""
    seen: set[bytes] = set()
    for key in keys:
        if key in seen:
            raise errors.RowExists(f"INSERT gives rowkey {_shown(schema, key)} twice; nothing "
                                   "was written")
        seen.add(key)
    found = t.rows(keys) if keys else []
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise errors.RowExists(f"a row with rowkey {_shown(schema, found[0][0])} exists "
                               f"already{more}: INSERT adds new rows (UPSERT, or UPDATE, "
                               "changes existing ones); nothing was written")


def _shown(schema: Any, key: bytes) -> str:
    name = schema.rowkey or "ROWKEY"
    return f"{name} = {codec.sql_literal(decode_key(schema, key))}"


def _upsert(db: Database, stmt: Upsert, params: Any, full: Callable[[str], str],
            range_method: str, full_scan: bool) -> Result:
    table = full(stmt.table)
    schema = db.store.schema(table)
    targets = _targets(schema, stmt.columns)
    if stmt.query is not None:  # the SELECT runs on the SQL engine: its rows are values
        inner = run_engine(db, duck.plan(("EXPLAIN " if stmt.explain else "") + stmt.query,
                                         stmt.refusal), params, full, range_method, full_scan)
        if stmt.explain:
            return _explained(f"{stmt.verb} INTO {stmt.table} SELECT", inner)
        rows = [tuple(_engine_value(v) for v in row) for row in inner.rows]
        if rows and len(rows[0]) != len(targets):
            raise errors.InvalidArgument(f"the SELECT returns {len(rows[0])} columns for "
                                         f"{len(targets)}")
    elif stmt.select is None:
        rows = _bind_rows(stmt, params)
    else:
        inner = run_select(db, stmt.select.with_(explain=stmt.explain), params, full,
                           range_method, full_scan)
        if stmt.explain:
            return _explained(f"{stmt.verb} INTO {stmt.table} SELECT", inner)
        select, records = inner.selected()
        src = db.store.schema(select.table)
        if select.aggregate:
            rows = list(inner.rows)
        else:  # plain rows: the cells' bytes as stored (declared targets check them)
            names = select.names
            if names is None:
                names = (() if src.rowkey_generated else (ROWKEY,)) + tuple(src.columns)
            rows = [tuple(key if c == ROWKEY else cells.get(c) for c in names)
                    for key, cells in records]
        if rows and len(rows[0]) != len(targets):
            raise errors.InvalidArgument(f"the SELECT returns {len(rows[0])} columns for "
                                         f"{len(targets)}")
    n = _write(db, table, schema, targets, rows, stmt.insert)
    return Result("dml", rowcount=n)


def _engine_value(v: Any) -> Any:
    """A value the SQL engine computed, as a cell is written: a bool as 1 / 0, a date or time
    as its ISO text (hibase has no date types yet), the rest as it is."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat(" ") if isinstance(v, datetime.datetime) else v.isoformat()
    return v


def _update(db: Database, stmt: Update, params: Any, full: Callable[[str], str],
            range_method: str, full_scan: bool) -> Result:
    """UPDATE: the rows (and, unless the new values are all literals or parameters, the
    values) from a SELECT on the normal query path, written back through the one write
    path (the indexes kept)."""
    table = full(stmt.table)
    schema = db.store.schema(table)
    targets = _targets(schema, stmt.columns)
    if ROWKEY in targets:
        name = schema.rowkey or "ROWKEY"
        raise errors.InvalidArgument(f"UPDATE cannot change the rowkey ({name}): DELETE the "
                                     "row and INSERT it under the new one")
    values: tuple | None = None
    if stmt.values is not None:
        set_params, params = _split_params(stmt, params)
        if not stmt.explain:  # EXPLAIN shows how the rows are found: the values may be unbound
            values = _bind([stmt.values], set_params)[0]
    explain = "EXPLAIN " if stmt.explain else ""
    if stmt.select is None:
        assert stmt.query is not None
        inner = run_engine(db, duck.plan(explain + stmt.query, stmt.refusal), params, full,
                           range_method, full_scan)
        if not stmt.explain:
            found = [(k if isinstance(k, bytes) else str(k).encode("utf-8"),
                      tuple(_engine_value(v) for v in rest)) for k, *rest in inner.rows]
    else:
        inner = run_select(db, stmt.select.with_(explain=stmt.explain), params, full,
                           range_method, full_scan)
        if not stmt.explain:
            _, records = inner.selected()
            found = [(key, row[1:]) for (key, _), row in zip(records, inner.rows)]
    if stmt.explain:
        return _explained(f"UPDATE {stmt.table} (rows found by the plan below)", inner)
    rows = [(key,) + (values if values is not None else new) for key, new in found]
    n = _write(db, table, schema, [ROWKEY] + targets, rows) if rows else 0
    return Result("dml", rowcount=n)


def _split_params(stmt: Update, params: Any) -> tuple[Any, Any]:
    """An UPDATE's parameters as (those of its SET values, those of its WHERE)."""
    assert stmt.values is not None
    used = [v for v in stmt.values if isinstance(v, Param)]
    if params is None or not used:
        return None, params
    if used[0].name is not None:
        if not isinstance(params, Mapping):
            raise errors.InvalidArgument("named parameters (:name) take a dict of values")
        names = {p.name for p in used}
        unknown = sorted(set(params) - names - set(stmt.where_params))
        if unknown:
            raise errors.InvalidArgument(f"unknown parameter(s) {', '.join(map(str, unknown))}")
        where = {k: v for k, v in params.items() if k in stmt.where_params}
        return {k: v for k, v in params.items() if k in names}, where or None
    if isinstance(params, (Mapping, str, bytes)) or not isinstance(params, Sequence):
        raise errors.InvalidArgument("? parameters take a list or tuple of values")
    return list(params[:len(used)]), list(params[len(used):]) or None


def _explained(head: str, inner: Result) -> Result:
    lines = [head] + ["    " + line for line in (inner.text or "").splitlines()]
    return Result("explain", [("PLAN", None)], [(line,) for line in lines], -1,
                  text="\n".join(lines))


def _delete(db: Database, stmt: Delete, params: Any, full: Callable[[str], str],
            range_method: str, full_scan: bool) -> Result:
    if stmt.select is None:  # the condition runs on the SQL engine
        assert stmt.query is not None
        inner = run_engine(db, duck.plan(("EXPLAIN " if stmt.explain else "") + stmt.query,
                                         stmt.refusal), params, full, range_method, full_scan)
        table = full(stmt.table)
        keys = [k if isinstance(k, bytes) else str(k).encode("utf-8") for (k,) in inner.rows]
    else:
        inner = run_select(db, stmt.select.with_(explain=stmt.explain), params, full,
                           range_method, full_scan)
        if not stmt.explain:
            select, records = inner.selected()
            table, keys = select.table, [key for key, _ in records]
    if stmt.explain:
        return _explained(f"DELETE FROM {stmt.table} (rows found by the plan below)", inner)
    t = db.table(table, use_prefix=False)
    with t.batch() as b:
        for key in keys:
            b.delete(key)
    return Result("dml", rowcount=len(keys), verb="deleted")


# -- SHOW TABLES, DESCRIBE ---------------------------------------------------------------------

_TEXT = codec.ColumnType("string")


def user_tables(db: Database) -> list[str]:
    """The table names SHOW TABLES and `hibase tables` list: an embedded store's copy of the
    catalog `hibase serve` publishes for thrift:// clients (hibase_meta, hibase_kv*) left out."""
    names = [n.decode() for n in db.tables()]
    if db.store.kind == "embedded":
        names = [n for n in names if n != "hibase_meta" and not n.startswith("hibase_kv")]
    return names


def describe_rows(schema: Any) -> list[tuple[str, str, str]]:
    """(COLUMN, TYPE, NOTE) rows of a table: its rowkey (unless generated), its declared
    columns (family.qualifier, their SQL types) and each family without a declared column
    (family.*, undeclared: VARBINARY cells)."""
    rows = []
    if not schema.rowkey_generated:
        rows.append((schema.rowkey or "ROWKEY", "VARCHAR" if schema.rowkey_type and
                     schema.rowkey_type.name == "string" else "VARBINARY", "rowkey"))
    for col, t in schema.columns.items():
        rows.append((codec.column_text(col), codec.sql_type_name(t), ""))
    for fam in schema.families:
        if not any(c.startswith(fam + b":") for c in schema.columns):
            rows.append((fam.decode("utf-8", "backslashreplace") + ".*", "VARBINARY",
                         "undeclared"))
    return rows


def _show(db: Database, stmt: "ShowTables | Describe", full: Callable[[str], str]) -> Result:
    if isinstance(stmt, ShowTables):
        names = [(n,) for n in user_tables(db)]
        return Result("select", [("TABLE_NAME", _TEXT)], names, len(names))
    rows = describe_rows(db.store.schema(full(stmt.table)))
    return Result("select", [("COLUMN_NAME", _TEXT), ("TYPE_NAME", _TEXT), ("NOTE", _TEXT)],
                  rows, len(rows))


# -- DDL ---------------------------------------------------------------------------------------

_FAMILY_OPTIONS = {"VERSIONS": "max_versions", "TTL": "time_to_live",
                   "COMPRESSION": "compression", "BLOOMFILTER": "bloom_filter_type",
                   "IN_MEMORY": "in_memory", "BLOCKCACHE": "block_cache_enabled"}


def _create_table(db: Database, stmt: CreateTable) -> None:
    columns: dict[str, str] = {}
    families: dict[str, dict] = {}
    for c in stmt.columns:
        name = c.name if b":" in c.name else DEFAULT_FAMILY + b":" + c.name
        families.setdefault(name.partition(b":")[0].decode(), {"max_versions": 1})
        columns[name.decode()] = str(c.type)
    if not families:
        families[DEFAULT_FAMILY.decode()] = {"max_versions": 1}
    split_size = salt_buckets = None
    for key, value in stmt.options:
        fam, _, opt = key.rpartition(".")
        if opt == "SPLIT_SIZE":
            if not isinstance(value, int):
                raise errors.SchemaError("SPLIT_SIZE takes a number of bytes")
            split_size = value
            continue
        if opt == "SALT_BUCKETS":
            if fam or not isinstance(value, int) or isinstance(value, bool):
                raise errors.SchemaError("SALT_BUCKETS takes a number of buckets (1 to 256), for "
                                         "the whole table")
            salt_buckets = value
            continue
        if opt == "TTL" and value == "FOREVER":
            value = FOREVER
        if fam and fam not in families:
            raise errors.SchemaError(f"option {key}: the table has no family {fam!r}")
        for f in ([fam] if fam else list(families)):
            families[f][_FAMILY_OPTIONS[opt]] = value
    try:
        db.create_table(stmt.table, families, columns=columns, split_size=split_size,
                        rowkey=stmt.rowkey, rowkey_type=stmt.rowkey_type,
                        rowkey_generated=stmt.rowkey is None, salt_buckets=salt_buckets)
    except errors.TableExists:
        if not stmt.if_not_exists:
            raise


def _ddl(db: Database, stmt: Any, full: Callable[[str], str]) -> Result:
    if isinstance(stmt, CreateTable):
        _create_table(db, stmt)
    elif isinstance(stmt, DropTable):
        try:
            db.delete_table(stmt.table, disable=True)
        except errors.TableNotFound:
            if not stmt.if_exists:
                raise
    elif isinstance(stmt, CreateIndex):
        schema = db.store.schema(full(stmt.table))

        def col(c: bytes) -> bytes:
            c = c if b":" in c else resolve_name(c.decode("utf-8"), schema)
            if c == ROWKEY:
                raise errors.SchemaError("the rowkey is indexed by itself; index other columns")
            return c
        try:
            db.create_index(stmt.table, stmt.name, [col(c) for c in stmt.columns],
                            covering=[col(c) for c in stmt.include] or None,
                            local=stmt.local, build=not stmt.async_,
                            consistency=stmt.consistency, uncovered=stmt.uncovered,
                            where=stmt.where, kind=stmt.kind)
        except errors.IndexExists:
            if not stmt.if_not_exists:
                raise
    elif isinstance(stmt, DropIndex):
        try:
            db.drop_index(stmt.table, stmt.name)
        except errors.IndexNotFound:
            if not stmt.if_exists:
                raise
    elif isinstance(stmt, AlterIndex):
        try:
            db.build_index(stmt.table, stmt.name)
        except errors.IndexNotFound:
            if not stmt.if_exists:
                raise
    return Result("ddl")


def execute_many(db: Database, statement: "Statement | duck.EngineStatement", seq_of_params: Any,
                 full: Callable[[str], str]) -> Result:
    """``execute`` once per parameter set; UPSERT ... VALUES binds every set first and writes
    all rows in one batch (nothing is written if one set is wrong)."""
    if isinstance(seq_of_params, (str, bytes, Mapping)):
        raise errors.InvalidArgument("executemany takes a sequence of parameter sets")
    if isinstance(statement, Upsert) and statement.select is None:
        table = full(statement.table)
        schema = db.store.schema(table)
        targets = _targets(schema, statement.columns)
        rows = [r for params in seq_of_params for r in _bind_rows(statement, params)]
        return Result("dml", rowcount=_write(db, table, schema, targets, rows, statement.insert)
                      if rows else 0)
    result, total = Result("dml", rowcount=0), 0
    for params in seq_of_params:
        result = execute(db, statement, params, full)
        total += max(result.rowcount, 0)
    if result.kind == "dml":
        result.rowcount = total
    return result


def execute(db: Database, statement: "Statement | duck.EngineStatement", params: Any,
            full: Callable[[str], str],
            range_method: str = "auto", full_scan: bool = False) -> Result:
    """Run a parsed statement on Connection ``db`` (``full`` adds its table prefix)."""
    if isinstance(statement, Select):
        return run_select(db, statement, params, full, range_method, full_scan)
    if isinstance(statement, duck.EngineStatement):
        return run_engine(db, statement, params, full, range_method, full_scan)
    if isinstance(statement, Upsert):
        return _upsert(db, statement, params, full, range_method, full_scan)
    if isinstance(statement, Delete):
        return _delete(db, statement, params, full, range_method, full_scan)
    if isinstance(statement, Update):
        return _update(db, statement, params, full, range_method, full_scan)
    if isinstance(statement, (ShowTables, Describe)):
        if params:
            raise errors.InvalidArgument("SHOW TABLES and DESCRIBE take no parameters")
        return _show(db, statement, full)
    if params:
        raise errors.InvalidArgument("DDL statements take no parameters")
    return _ddl(db, statement, full)
