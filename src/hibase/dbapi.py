"""hibase as a PEP 249 (DB-API 2.0) database: ``connect``, Connection, Cursor, type objects and
exceptions, over ``hibase.Connection.execute`` (SQL in Phoenix's spelling: SELECT, UPSERT,
INSERT, UPDATE, DELETE, CREATE/DROP TABLE and INDEX, ALTER INDEX ... REBUILD).

    import hibase.dbapi
    with hibase.dbapi.connect("data/") as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.a INTEGER, f.b VARCHAR)")
        cur.executemany("UPSERT INTO t (k, f.a, f.b) VALUES (?, ?, ?)", [("x", 1, "one")])
        cur.execute("SELECT k, f.a FROM t WHERE f.a >= ?", (1,))
        cur.fetchall()          # [('x', 1)]

What it promises:

- ``paramstyle`` is "qmark" (``?``); ``:name`` with a dict works too (named).
- ``INSERT INTO t ... VALUES / SELECT`` refuses a rowkey that exists already (or comes twice)
  with IntegrityError, writing nothing; ``UPSERT`` writes over it. A table created without a
  PRIMARY KEY (``CREATE TABLE t (name VARCHAR(20))``) has a generated rowkey, as SQLite's
  tables have a rowid: each INSERT adds rows, ``SELECT *`` leaves the key out.
- Writes are applied when ``execute`` returns (each statement in one atomic batch with its
  index rows); there are no transactions: ``commit()`` does nothing, ``rollback()`` raises
  NotSupportedError (nothing can be undone).
- ``threadsafety`` is 1: threads may share the module, not connections (a hibase
  Connection's statement cache and the embedded store's iterators are not guarded for
  concurrent use).
- Rows are tuples in select-list order; ``SELECT *`` gives the rowkey first (under the
  table's PRIMARY KEY name, else ROWKEY; not shown for a table created without one), then the
  declared columns in schema order, then undeclared columns by name. Values are decoded by
  the declared types (int, float, str, bytes; None for NULL); undeclared columns are bytes;
  the rowkey is str when declared VARCHAR, else bytes.
- ``description`` has the 7 PEP 249 items (name, type_code, None x 5); type codes are
  Phoenix's type names ("INTEGER", "VARCHAR", "DOUBLE", "VARBINARY" for undeclared bytes,
  "ROWKEY" for the rowkey, "NUMBER" for COUNT/SUM/AVG), equal to STRING, BINARY, NUMBER, ROWID.
- Errors: every hibase error leaves a cursor as an instance of both its hibase class and the
  PEP 249 class it maps to (``except hibase.dbapi.ProgrammingError`` catches a
  ``QuerySyntaxError``, which keeps its ``.position``): syntax, planning, unknown tables /
  columns / indexes, wrong parameters -> ProgrammingError; values that do not fit their
  column's type, bad rowkeys -> DataError; existing tables / indexes -> IntegrityError;
  backend failures, disabled tables -> OperationalError; corrupted stores -> InternalError.
  Using a closed connection or cursor, closing a connection twice, and fetching when the last
  statement gave no rows (or none ran yet) raise ProgrammingError, as PEP 249 asks an Error.
- ``Date``, ``Time``, ``Timestamp`` and their ``...FromTicks`` forms make ``datetime`` values
  (PEP 249's constructors). Parameters may be ``datetime.date`` / ``time`` / ``datetime``,
  ``decimal.Decimal`` and ``bool``, for DATE, TIME, TIMESTAMP, DECIMAL and BOOLEAN columns (a
  date or time for a VARCHAR column is its ISO 8601 text, ``'2002-12-25 13:45:30'``, as
  sqlite3 stores it; a bool for a number column 1 or 0); such columns read back as those
  Python types. ``DATETIME`` compares equal to the type codes DATE, TIME and TIMESTAMP,
  ``NUMBER`` to DECIMAL (and BOOLEAN).
- ``nextset`` is not defined (PEP 249 makes it optional: hibase has no stored procedures nor
  statements with several result sets); ``setinputsizes`` / ``setoutputsize`` are the
  documented no-ops; ``callproc`` is not defined.
"""

from __future__ import annotations

import datetime
import functools
import time
from typing import Any, Iterator, Sequence, cast

from . import errors as _errors
from .codec import SQL_TYPE_NAMES
from .connection import Connection as _HConnection
from .connection import connect as _connect

__all__ = [
    "apilevel", "threadsafety", "paramstyle", "connect", "Connection", "Cursor",
    "Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    "STRING", "BINARY", "NUMBER", "DATETIME", "ROWID", "Binary",
    "Date", "Time", "Timestamp", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks",
]

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"


# -- exceptions ----------------------------------------------------------------------------------

class Warning(Exception):  # noqa: A001 - PEP 249's name
    """PEP 249 Warning (hibase raises none; Cursor.messages lists it with the message of
    cells read as NULL because they do not parse as their declared type)."""


class Error(Exception):
    """Base of PEP 249's errors."""


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


_MAP: list[tuple[type, type]] = [  # most specific first
    (_errors.ValueTypeError, DataError),
    (_errors.InvalidRowKey, DataError),
    (_errors.AlreadyExists, IntegrityError),
    (_errors.StoreCorrupted, InternalError),
    (_errors.BackendError, OperationalError),
    (_errors.TableDisabled, OperationalError),
    (_errors.QueryError, ProgrammingError),
    (_errors.NotFound, ProgrammingError),
    (_errors.FilterError, ProgrammingError),
    (_errors.InvalidArgument, ProgrammingError),
    (_errors.HibaseError, DatabaseError),
]


@functools.lru_cache(maxsize=None)
def _mapped_class(hibase_cls: type) -> type[_errors.HibaseError]:
    """A subclass of both ``hibase_cls`` and its PEP 249 class (made once per class)."""
    pep = next(p for h, p in _MAP if issubclass(hibase_cls, h))
    # type() makes a subclass of its bases, hibase_cls among them: mypy sees only `type`
    return cast(type[_errors.HibaseError],
                type(hibase_cls.__name__, (hibase_cls, pep), {"__module__": __name__}))


def _mapped(exc: _errors.HibaseError) -> BaseException:
    """``exc`` as an instance of its own class and of its PEP 249 class."""
    kind: type = type(exc)  # as `type`: mypy finds type[X] not Hashable (python/mypy#20409)
    cls = _mapped_class(kind)
    out = cls.__new__(cls)
    out.args = exc.args
    out.__dict__.update(exc.__dict__)
    return out


def _run(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except _errors.HibaseError as exc:
        raise _mapped(exc).with_traceback(exc.__traceback__) from exc


# -- type objects --------------------------------------------------------------------------------

class _TypeObject:
    def __init__(self, *codes: str):
        self.codes = frozenset(codes)

    def __eq__(self, other: object) -> bool:
        return other in self.codes

    def __ne__(self, other: object) -> bool:
        return other not in self.codes

    def __hash__(self) -> int:
        return hash(self.codes)

    def __repr__(self) -> str:
        return f"<type object {sorted(self.codes)}>"


STRING = _TypeObject("VARCHAR", "CHAR", "PLAN")
BINARY = _TypeObject("VARBINARY")
NUMBER = _TypeObject("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "NUMBER",
                     "DECIMAL", "BOOLEAN")
DATETIME = _TypeObject("DATE", "TIME", "TIMESTAMP")
ROWID = _TypeObject("ROWKEY")


def Binary(value: Any) -> bytes:  # noqa: N802 - PEP 249's name
    return bytes(value)


Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802 - PEP 249's names
    """The local date of ``ticks`` (seconds since the epoch, as time.time())."""
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802
    """The local time of day of ``ticks``."""
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802
    """The local date and time of ``ticks``."""
    return Timestamp(*time.localtime(ticks)[:6])


def _param(v: Any) -> Any:
    """A parameter as hibase takes it (dates, times, Decimals and bools as they are)."""
    return v


def _params(p: Any) -> Any:
    if p is None:
        return None
    if isinstance(p, dict):
        return {k: _param(v) for k, v in p.items()}
    if not isinstance(p, (list, tuple)):
        p = list(p)
    return [_param(v) for v in p]


def _type_code(t: Any) -> str:
    if t == "rowkey":
        return "ROWKEY"
    if t == "number":
        return "NUMBER"
    if t is None:
        return "VARBINARY"
    if isinstance(t, str):  # EXPLAIN's plan lines
        return t.upper()
    return SQL_TYPE_NAMES[t.name]  # DECIMAL(10,2) is DECIMAL: type codes are type names


# -- connection and cursor -----------------------------------------------------------------------

def connect(path_or_url: Any, **options: Any) -> "Connection":
    """A DB-API connection to the store at ``path_or_url`` (a folder, or thrift://host:port),
    opened by ``hibase.connect(path_or_url, **options)``; or over an open hibase Connection
    (which close() then leaves open)."""
    if isinstance(path_or_url, _HConnection):
        return Connection(path_or_url, owned=False)
    return Connection(_run(lambda: _connect(path_or_url, **options)), owned=True)


class Connection:
    """PEP 249 Connection over a hibase Connection (``.db``)."""

    Warning, Error, InterfaceError, DatabaseError = Warning, Error, InterfaceError, DatabaseError
    DataError, OperationalError, IntegrityError = DataError, OperationalError, IntegrityError
    InternalError, ProgrammingError = InternalError, ProgrammingError
    NotSupportedError = NotSupportedError

    def __init__(self, db: _HConnection, owned: bool = True):
        self.db = db
        self._owned = owned
        self.closed = False

    def _check(self) -> None:
        if self.closed:
            raise ProgrammingError("the connection is closed")

    def cursor(self) -> "Cursor":
        self._check()
        return Cursor(self)

    def commit(self) -> None:
        """Nothing to do: every statement is applied when execute() returns."""
        self._check()

    def rollback(self) -> None:
        """Raises NotSupportedError: statements are applied when executed; nothing can be
        undone."""
        self._check()
        raise NotSupportedError("hibase has no transactions: every statement is applied when "
                                "execute() returns, so there is nothing to roll back")

    def close(self) -> None:
        """Close the connection (and the hibase Connection when connect() opened it); a
        second close() raises ProgrammingError, as the DB-API compliance suite expects."""
        self._check()
        self.closed = True
        if self._owned:
            _run(self.db.close)

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.closed:
            self.close()


class Cursor:
    """PEP 249 Cursor: execute / executemany, then fetch rows as tuples."""

    def __init__(self, connection: Connection):
        self.connection = connection
        self.arraysize = 1
        self.description: list[tuple] | None = None
        self.rowcount = -1
        self.lastrowid = None
        self._rows: list[tuple] | None = None  # None: the last statement gave no result set
        self._pos = 0
        self._executed = False
        self.closed = False
        self.messages: list[tuple[type, str]] = []  # PEP 249 extension, see _take

    def _check(self) -> None:
        if self.closed:
            raise ProgrammingError("the cursor is closed")
        self.connection._check()

    def _take(self, result: Any) -> None:
        if result.description is not None and result.kind in ("select", "explain"):
            self.description = [(name, _type_code(t if result.kind == "select" else "PLAN"),
                                 None, None, None, None, None)
                                for name, t in result.description]
        else:
            self.description = None
        self._rows = list(result.rows) if self.description is not None else None
        self._pos = 0
        self.rowcount = result.rowcount
        # PEP 249's optional .messages: cells read as NULL (not of their declared type); the
        # statement also issued a hibase.errors.CellTypeWarning
        self.messages = [(Warning, result.bad_cells.message())] if result.bad_cells else []

    def execute(self, operation: str, parameters: Any = None) -> "Cursor":
        """Run one statement; ``?`` parameters from a sequence, ``:name`` ones from a dict."""
        self._check()
        self._rows, self.description, self.rowcount = None, None, -1
        self._executed = True
        self._take(_run(self.connection.db.execute, operation, _params(parameters) or None))
        return self

    def executemany(self, operation: str, seq_of_parameters: Any) -> "Cursor":
        """Run one statement per parameter set (UPSERT VALUES: all rows in one batch)."""
        self._check()
        self._rows, self.description, self.rowcount = None, None, -1
        self._executed = True
        seq = [_params(p) for p in seq_of_parameters]
        self._take(_run(self.connection.db.execute_many, operation, seq))
        self.description = None
        self._rows = None
        return self

    def _result(self) -> list[tuple]:
        self._check()
        if self._rows is None:
            raise ProgrammingError("no rows to fetch: the last statement gave no result set"
                                   if self._executed else
                                   "no rows to fetch: execute a statement first")
        return self._rows

    def fetchone(self) -> tuple | None:
        rows = self._result()
        if self._pos >= len(rows):
            return None
        row = rows[self._pos]
        self._pos += 1
        return row

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        rows = self._result()
        n = self.arraysize if size is None else size
        out = rows[self._pos:self._pos + n]
        self._pos += len(out)
        return out

    def fetchall(self) -> list[tuple]:
        rows = self._result()
        out = rows[self._pos:]
        self._pos = len(rows)
        return out

    def __iter__(self) -> Iterator[tuple]:
        while True:
            row = self.fetchone()
            if row is None:
                return
            yield row

    def setinputsizes(self, sizes: Sequence[Any]) -> None:
        """Accepted and ignored (PEP 249)."""

    def setoutputsize(self, size: int, column: int | None = None) -> None:
        """Accepted and ignored (PEP 249)."""

    def close(self) -> None:
        self.closed = True
        self._rows = None

    def __enter__(self) -> "Cursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
