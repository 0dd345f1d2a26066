"""A SQLAlchemy 2 dialect for hibase, over hibase.dbapi (needs ``pip install hibase[sqlalchemy]``).

    from sqlalchemy import create_engine, text
    engine = create_engine("hibase:///data")                     # an embedded store folder
    engine = create_engine("hibase+thrift://hbase-thrift:9090")  # HBase through Thrift1
    with engine.connect() as conn:
        conn.execute(text("SELECT k, f.a FROM t WHERE f.a > :x"), {"x": 3}).all()

Registered by entry point (``sqlalchemy.dialects``: ``hibase``, ``hibase.thrift``). What it
does: ``text()`` statements as they are; Core SELECTs of one table (columns written without
their table name, LIMIT/OFFSET as literals) and INSERTs compiled to Phoenix's UPSERT; CREATE
TABLE / INDEX and DROP from Table and Index objects (types mapped to Phoenix's names: Integer
-> INTEGER, BigInteger -> BIGINT, Float -> DOUBLE, Numeric(p, s) -> DECIMAL(p, s), String/Text
-> VARCHAR, LargeBinary -> VARBINARY, Boolean -> BOOLEAN, Date -> DATE, Time -> TIME,
DateTime -> TIMESTAMP); reflection of tables (the PRIMARY KEY column, the declared
columns: a column of the default family ``0`` by its qualifier, others as ``"f.q"``) and
indexes. So ``pandas.read_sql`` and ``DataFrame.to_sql`` work (to_sql's table has no primary
key: hibase makes a rowkey per row, which ``SELECT *`` does not show). There are no
transactions: statements are applied when executed; commit does nothing and rollback is
ignored (SQLAlchemy rolls back every connection it returns to its pool).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import types as sqltypes
from sqlalchemy.engine import default
from sqlalchemy.schema import Index
from sqlalchemy.sql import compiler

from . import dbapi as _dbapi

if TYPE_CHECKING:  # the shapes SQLAlchemy's Dialect declares for what these methods return
    from sqlalchemy.engine.interfaces import (
        IsolationLevel, ReflectedColumn, ReflectedIndex, ReflectedPrimaryKeyConstraint,
    )

__all__ = ["HibaseDialect", "HibaseThriftDialect"]

_TYPES = {
    "byte": sqltypes.SmallInteger, "short": sqltypes.SMALLINT, "int": sqltypes.INTEGER,
    "long": sqltypes.BIGINT, "float": sqltypes.FLOAT, "double": sqltypes.DOUBLE,
    "string": sqltypes.VARCHAR, "char": sqltypes.CHAR, "bytes": sqltypes.VARBINARY,
    "date": sqltypes.DATE, "time": sqltypes.TIME, "timestamp": sqltypes.TIMESTAMP,
    "boolean": sqltypes.BOOLEAN, "decimal": sqltypes.DECIMAL,
}


class HibaseCompiler(compiler.SQLCompiler):
    """Phoenix's spelling: UPSERT for INSERT, bare column names, literal LIMIT / OFFSET."""

    def visit_insert(self, insert_stmt: Any, visited_bindparam: Any = None,
                     visiting_cte: Any = None, **kw: Any) -> str:
        # passed on only when given, as **kw did (SQLAlchemy 2.0's releases differ in them)
        if visited_bindparam is not None:
            kw["visited_bindparam"] = visited_bindparam
        if visiting_cte is not None:
            kw["visiting_cte"] = visiting_cte
        text = super().visit_insert(insert_stmt, **kw)
        return "UPSERT" + text[len("INSERT"):] if text.startswith("INSERT") else text

    def visit_column(self, column: Any, add_to_result_map: Any = None,
                     include_table: bool = True, result_map_targets: tuple[Any, ...] = (),
                     ambiguous_table_name_map: Any = None, **kw: Any) -> str:
        # hibase reads "t.a" as family t, qualifier a: one table per statement, no prefix
        if result_map_targets:  # passed on only when given, as **kw did
            kw["result_map_targets"] = result_map_targets
        if ambiguous_table_name_map is not None:
            kw["ambiguous_table_name_map"] = ambiguous_table_name_map
        return super().visit_column(column, add_to_result_map=add_to_result_map,
                                    include_table=False, **kw)

    def limit_clause(self, select: Any, **kw: Any) -> str:
        kw = {**kw, "literal_binds": True}
        text = ""
        if select._limit_clause is not None:
            text += "\n LIMIT " + self.process(select._limit_clause, **kw)
        if select._offset_clause is not None:
            text += "\n OFFSET " + self.process(select._offset_clause, **kw)
        return text


class HibaseDDLCompiler(compiler.DDLCompiler):
    def visit_create_index(self, create: Any, include_schema: Any = False,
                           include_table_schema: Any = True, **kw: Any) -> str:
        # the schema flags are DDLCompiler's; hibase tables have no schema to include
        index = create.element
        prep = self.preparer
        local = index.dialect_options["hibase"].get("local")
        include = index.dialect_options["hibase"].get("include") or ()
        text = "CREATE LOCAL INDEX " if local else "CREATE INDEX "
        if create.if_not_exists:
            text += "IF NOT EXISTS "
        self._verify_index_table(index)
        text += (f"{self._prepared_index_name(index)} ON "
                 f"{prep.format_table(index.table)} ("
                 + ", ".join(prep.quote(c.name) for c in index.columns) + ")")
        if include:
            text += " INCLUDE (" + ", ".join(prep.quote(str(c)) for c in include) + ")"
        return text

    def visit_drop_index(self, drop: Any, **kw: Any) -> str:
        index = drop.element
        return (f"DROP INDEX {'IF EXISTS ' if drop.if_exists else ''}"
                f"{self.preparer.quote(index.name)} ON {self.preparer.format_table(index.table)}")

    def get_column_specification(self, column: Any, **kw: Any) -> str:
        spec = (self.preparer.format_column(column) + " "
                + self.dialect.type_compiler_instance.process(column.type,
                                                              type_expression=column))
        if column.primary_key and len(column.table.primary_key.columns) == 1:
            spec += " PRIMARY KEY"
        return spec

    def visit_primary_key_constraint(self, constraint: Any, **kw: Any) -> str:
        return ""  # written on the column (the rowkey is one column)

    def visit_foreign_key_constraint(self, constraint: Any, **kw: Any) -> str:
        return ""

    def visit_unique_constraint(self, constraint: Any, **kw: Any) -> str:
        return ""

    def visit_check_constraint(self, constraint: Any, **kw: Any) -> str:
        return ""


class HibaseTypeCompiler(compiler.GenericTypeCompiler):
    def visit_BOOLEAN(self, type_: Any, **kw: Any) -> str:
        return "BOOLEAN"

    def visit_DATETIME(self, type_: Any, **kw: Any) -> str:
        return "TIMESTAMP"

    def visit_TIMESTAMP(self, type_: Any, **kw: Any) -> str:
        return "TIMESTAMP"

    def visit_FLOAT(self, type_: Any, **kw: Any) -> str:
        return "DOUBLE"

    def visit_REAL(self, type_: Any, **kw: Any) -> str:
        return "FLOAT"

    def visit_DOUBLE(self, type_: Any, **kw: Any) -> str:
        return "DOUBLE"

    def visit_DOUBLE_PRECISION(self, type_: Any, **kw: Any) -> str:
        return "DOUBLE"

    def visit_NUMERIC(self, type_: Any, **kw: Any) -> str:
        return self.visit_DECIMAL(type_, **kw)

    def visit_DECIMAL(self, type_: Any, **kw: Any) -> str:
        if type_.precision is None:
            return "DECIMAL"
        return f"DECIMAL({type_.precision},{type_.scale or 0})"

    def visit_TEXT(self, type_: Any, **kw: Any) -> str:
        return "VARCHAR"

    def visit_CLOB(self, type_: Any, **kw: Any) -> str:
        return "VARCHAR"

    def visit_VARCHAR(self, type_: Any, **kw: Any) -> str:
        return "VARCHAR"

    def visit_NVARCHAR(self, type_: Any, **kw: Any) -> str:
        return "VARCHAR"

    def visit_BLOB(self, type_: Any, **kw: Any) -> str:
        return "VARBINARY"

    def visit_BINARY(self, type_: Any, **kw: Any) -> str:
        return "VARBINARY"

    def visit_VARBINARY(self, type_: Any, **kw: Any) -> str:
        return "VARBINARY"


class HibaseIdentifierPreparer(compiler.IdentifierPreparer):
    """Identifiers quoted "like this", as Phoenix does (IdentifierPreparer's default quote)."""


class HibaseExecutionContext(default.DefaultExecutionContext):
    pass


def _db(connection: Any) -> Any:
    """The hibase Connection under a SQLAlchemy Connection."""
    return connection.connection.dbapi_connection.db


class HibaseDialect(default.DefaultDialect):
    """hibase:///path (an embedded store folder; hibase:////abs/path)."""

    name = "hibase"
    driver = "embedded"
    paramstyle = "qmark"
    positional = True
    supports_statement_cache = True
    supports_alter = False
    supports_sequences = False
    supports_native_boolean = True
    supports_native_decimal = True
    supports_default_values = False
    supports_default_metavalue = False
    supports_empty_insert = False
    supports_multivalues_insert = True
    supports_comments = False
    postfetch_lastrowid = False
    implicit_returning = False
    insert_returning = update_returning = delete_returning = False
    supports_simple_order_by_label = False
    statement_compiler = HibaseCompiler
    ddl_compiler = HibaseDDLCompiler
    type_compiler_cls = HibaseTypeCompiler
    preparer = HibaseIdentifierPreparer
    execution_ctx_cls = HibaseExecutionContext
    construct_arguments = [
        (Index, {"local": False, "include": None}),
    ]

    @classmethod
    def import_dbapi(cls) -> Any:
        return _dbapi

    def create_connect_args(self, url: Any) -> tuple[list, dict]:
        # no folder (hibase://, with creator=): connect() says what is missing if it is called
        return [url.database], {k: _option(v) for k, v in url.query.items()}

    # -- no transactions -------------------------------------------------------------------------
    def do_begin(self, dbapi_connection: Any) -> None:
        pass

    def do_rollback(self, dbapi_connection: Any) -> None:
        pass  # writes are applied at execute; nothing to undo (pool resets call this)

    def do_commit(self, dbapi_connection: Any) -> None:
        dbapi_connection.commit()

    def get_isolation_level(self, dbapi_connection: Any) -> IsolationLevel:
        return "AUTOCOMMIT"

    def get_isolation_level_values(self, dbapi_connection: Any) -> list[IsolationLevel]:
        return ["AUTOCOMMIT"]

    def set_isolation_level(self, dbapi_connection: Any, level: str) -> None:
        if level != "AUTOCOMMIT":
            raise _dbapi.NotSupportedError("hibase has no transactions (AUTOCOMMIT only)")

    def do_ping(self, dbapi_connection: Any) -> bool:
        return not dbapi_connection.closed

    # -- reflection ------------------------------------------------------------------------------
    def get_schema_names(self, connection: Any, **kw: Any) -> list[str]:
        return []

    def get_table_names(self, connection: Any, schema: str | None = None,
                        **kw: Any) -> list[str]:
        return sorted(n.decode() for n in _db(connection).tables())

    def get_view_names(self, connection: Any, schema: str | None = None,
                       **kw: Any) -> list[str]:
        return []

    def has_table(self, connection: Any, table_name: str, schema: str | None = None,
                  **kw: Any) -> bool:
        return table_name.encode() in _db(connection).tables()

    def _schema(self, connection: Any, table_name: str) -> Any:
        db = _db(connection)
        if table_name.encode() not in db.tables():
            from sqlalchemy.exc import NoSuchTableError
            raise NoSuchTableError(table_name)
        return db.table(table_name).schema

    def get_columns(self, connection: Any, table_name: str, schema: str | None = None,
                    **kw: Any) -> list[ReflectedColumn]:
        from .sql import label
        s = self._schema(connection, table_name)
        out: list[ReflectedColumn] = []
        if not s.rowkey_generated:
            rtype = sqltypes.VARCHAR() if s.rowkey_type is not None and \
                s.rowkey_type.name == "string" else sqltypes.VARBINARY()
            out.append({"name": s.rowkey or "ROWKEY", "type": rtype, "nullable": False,
                        "default": None, "autoincrement": False})
        for col, t in s.columns.items():
            if t.precision is not None:
                sa_type: Any = sqltypes.DECIMAL(t.precision, t.scale)
            else:
                sa_type = _TYPES[t.name]() if t.length is None else (
                    sqltypes.CHAR if t.fixed else sqltypes.VARCHAR)(t.length)  # CHAR(3)
            out.append({"name": label(col, s), "type": sa_type, "nullable": True,
                        "default": None, "autoincrement": False})
        return out

    def get_pk_constraint(self, connection: Any, table_name: str, schema: str | None = None,
                          **kw: Any) -> ReflectedPrimaryKeyConstraint:
        s = self._schema(connection, table_name)
        cols = [] if s.rowkey_generated else [s.rowkey or "ROWKEY"]
        return {"constrained_columns": cols, "name": None}

    def get_foreign_keys(self, connection: Any, table_name: str, schema: str | None = None,
                         **kw: Any) -> list:
        return []

    def get_unique_constraints(self, connection: Any, table_name: str,
                               schema: str | None = None, **kw: Any) -> list:
        return []

    def get_check_constraints(self, connection: Any, table_name: str,
                              schema: str | None = None, **kw: Any) -> list:
        return []

    def get_indexes(self, connection: Any, table_name: str, schema: str | None = None,
                    **kw: Any) -> list[ReflectedIndex]:
        from .sql import label
        s = self._schema(connection, table_name)
        out: list[ReflectedIndex] = []
        for spec in _db(connection).indexes(table_name):
            out.append({
                "name": spec["name"],
                "column_names": [label(c.encode(), s) for c in spec["columns"]],
                "unique": False,
                "include_columns": [label(c.encode(), s) for c in spec["covering"]],
                "dialect_options": {"hibase_local": spec["local"],
                                    "hibase_include": [label(c.encode(), s)
                                                       for c in spec["covering"]]},
            })
        return out


def _option(value: Any) -> Any:
    """A URL query value as connect() wants it (numbers as ints, none as None)."""
    if isinstance(value, (tuple, list)):
        value = value[-1]
    if value.lower() in ("none", "null"):
        return None
    if value.isdigit():
        return int(value)
    return value


class HibaseThriftDialect(HibaseDialect):
    """hibase+thrift://host:port[?options]: HBase through its Thrift1 gateway."""

    driver = "thrift"
    supports_statement_cache = True

    def create_connect_args(self, url: Any) -> tuple[list, dict]:
        hibase_options = {"cache", "cache_policy", "cache_capacity", "max_statement"}
        query = {k: v for k, v in url.query.items() if k not in hibase_options}
        options = {k: _option(v) for k, v in url.query.items() if k in hibase_options}
        target = f"thrift://{url.host}:{url.port or 9090}"
        if query:
            target += "?" + "&".join(f"{k}={v if isinstance(v, str) else v[-1]}"
                                     for k, v in query.items())
        return [target], options
