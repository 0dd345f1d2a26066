"""The one exception hierarchy of hibase: every error a caller can meet derives from HibaseError.

    HibaseError
    ├── BackendError            the storage engine or a server failed
    │   ├── BackendUnavailable  cannot reach / open the backend
    │   │   ├── StoreLocked     another process holds the store folder for writing
    │   │   └── MissingExtra    a part of hibase whose packages are not installed (has .extra)
    │   ├── StoreFull           no space left on the store's device (has .path)
    │   ├── StoreReadOnly       the store, or a file it must write, is read-only (has .path)
    │   └── StoreCorrupted      a store file fails its checksum, is truncated or missing (.path)
    ├── NotFound
    │   ├── TableNotFound
    │   ├── FamilyNotFound
    │   ├── ColumnNotFound
    │   └── IndexNotFound
    ├── TableDisabled           the table is disabled (enable_table() it first)
    ├── AlreadyExists
    │   ├── TableExists
    │   ├── IndexExists
    │   └── RowExists           INSERT of a rowkey that exists (hibase.dbapi: IntegrityError)
    ├── InvalidArgument         bad argument shape or value (also a ValueError)
    │   ├── ArgumentTypeError   an argument of the wrong type (also a TypeError, as happybase)
    │   ├── InvalidRowKey       empty, too long, not bytes
    │   ├── SchemaError         bad table / family / column / index definition
    │   └── ValueTypeError      a cell value that does not parse as its column's declared type
    ├── FilterError             HBase filter-language string rejected
    │   ├── FilterSyntaxError   malformed string (has .position)
    │   └── UnsupportedFilter   a filter hibase does not implement (has .name)
    └── QueryError
        ├── QuerySyntaxError    malformed SQL (has .position)
        └── QueryPlanError      well-formed SQL hibase cannot answer
            └── NeedsEngine     beyond the lean path: Connection runs it on DuckDB instead

CellTypeWarning (a UserWarning, not an error): cells another writer stored that do not parse
as their column's declared type were read as NULL (has .count and .examples).
"""

from __future__ import annotations

__all__ = [
    "HibaseError", "BackendError", "BackendUnavailable", "StoreLocked", "MissingExtra",
    "StoreFull", "StoreReadOnly", "StoreCorrupted",
    "NotFound", "TableNotFound", "FamilyNotFound", "ColumnNotFound", "IndexNotFound",
    "TableDisabled", "AlreadyExists", "TableExists", "IndexExists", "RowExists",
    "InvalidArgument", "ArgumentTypeError", "InvalidRowKey", "SchemaError", "ValueTypeError",
    "CellTypeWarning",
    "FilterError", "FilterSyntaxError", "UnsupportedFilter",
    "QueryError", "QuerySyntaxError", "QueryPlanError", "NeedsEngine",
]


class HibaseError(Exception):
    """Base of every error raised by hibase."""


class BackendError(HibaseError):
    """The storage engine or a remote server failed."""


class BackendUnavailable(BackendError):
    """The backend cannot be reached or opened."""


class MissingExtra(BackendUnavailable):
    """A part of hibase whose packages are not installed: `extra` names the pip extra
    (``pip install 'hibase[hbase]'``)."""

    def __init__(self, message: str, extra: str):
        super().__init__(message)
        self.extra = extra


class StoreLocked(BackendUnavailable):
    """Another process has the store folder open for writing."""


class _StoreFileError(BackendError):
    """A store failure tied to one file; `path` names it (or the store folder)."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


class StoreFull(_StoreFileError):
    """The device holding the store is full: the write failed and wrote nothing."""


class StoreReadOnly(_StoreFileError):
    """The store was opened read-only, or a file or folder it must write is not writable."""


class StoreCorrupted(_StoreFileError):
    """A store file fails its checksum, is truncated or is missing: data cannot be trusted."""


class NotFound(HibaseError, KeyError):
    """A named object does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class TableNotFound(NotFound):
    pass


class FamilyNotFound(NotFound):
    pass


class ColumnNotFound(NotFound):
    pass


class IndexNotFound(NotFound):
    pass


class TableDisabled(HibaseError):
    """The table is disabled: HBase refuses reads and writes until it is enabled again."""


class AlreadyExists(HibaseError):
    pass


class TableExists(AlreadyExists):
    pass


class IndexExists(AlreadyExists):
    pass


class RowExists(AlreadyExists):
    """INSERT of a row whose rowkey exists already (or that the statement gives twice):
    nothing was written (hibase.dbapi: IntegrityError)."""


class InvalidArgument(HibaseError, ValueError):
    """An argument has the wrong shape or value; nothing was written."""


class ArgumentTypeError(InvalidArgument, TypeError):
    """An argument of the wrong type (a TypeError too, where happybase raises one)."""


class InvalidRowKey(InvalidArgument):
    pass


class SchemaError(InvalidArgument):
    pass


class ValueTypeError(InvalidArgument):
    """A value does not parse as its column's declared type."""


class FilterError(InvalidArgument):
    pass


class FilterSyntaxError(FilterError):
    """A malformed filter string; `position` is the 0-based offset of the problem."""

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message if position is None else f"{message} (at position {position})")
        self.position = position


class UnsupportedFilter(FilterError):
    """A well-formed filter that hibase does not implement."""

    def __init__(self, name: str):
        super().__init__(
            f"unsupported filter {name!r}; supported: PrefixFilter, KeyOnlyFilter, "
            "FirstKeyOnlyFilter, ColumnPrefixFilter, PageFilter, SingleColumnValueFilter")
        self.name = name


class QueryError(HibaseError):
    pass


class QuerySyntaxError(QueryError, InvalidArgument):
    """Malformed SQL; `position` is the 0-based offset (or None when unknown)."""

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message if position is None else f"{message} (at position {position})")
        self.position = position


class QueryPlanError(QueryError):
    pass


class CellTypeWarning(UserWarning):
    """Cells that do not parse as their column's declared type (written by a client that
    skips hibase's checks, e.g. plain happybase) were read as NULL, as queries and indexes
    treat them. `count`: how many; `examples`: the first few as (row, column) bytes pairs."""

    def __init__(self, message: str, count: int = 0,
                 examples: tuple[tuple[bytes, bytes], ...] = ()):
        super().__init__(message)
        self.count = count
        self.examples = examples


class NeedsEngine(QueryPlanError):
    """A well-formed SELECT the lean query path does not answer (a function, arithmetic, a
    join, a subquery, UNION, ...): raised by ``hibase.query.parse``, and caught by
    ``Connection.sql`` / ``execute``, which run the statement on the SQL engine
    (``hibase.query.duck``) instead. Callers of the parser alone see it as a QueryPlanError."""
