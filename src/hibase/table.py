"""Table and Batch: happybase's Table and Batch (same signatures, same return shapes) over a
hibase store, plus secondary-index queries (`where`, `explain`); writes go through the
Connection's one write path."""

from __future__ import annotations

import struct
from collections import OrderedDict
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol

from . import errors
from .query import engine
from .query.ast import Select
from .query.lift import Lifted
from .query.hbase_filter import compile_filter
from .index.manager import IndexManager
from .store.api import Store
from .store.base import Mutation
from .store.schema import TableSchema, check_row, split_column

__all__ = ["Table", "Batch", "Host"]


class Host(Protocol):
    """What a Table needs of the Connection that made it (hibase.Connection is one): named
    here, so that table.py, below connection.py, does not import it."""

    @property
    def store(self) -> Store: ...

    @property
    def indexer(self) -> IndexManager: ...

    @property
    def max_statement(self) -> int: ...

    def mutate(self, mutations: list[Mutation]) -> None: ...

    def read_modify_write(self, table: str, row: bytes, columns: list[bytes],
                          change: Callable[[dict], tuple[list[Mutation], Any]]) -> Any: ...

_LONG = struct.Struct(">q")


def _data(cells: dict[bytes, tuple[int, bytes]], include_timestamp: bool) -> dict:
    """happybase's row shape from {column: (ts, value)}."""
    if include_timestamp:
        return {c: (tv[1], tv[0]) for c, tv in cells.items()}
    return {c: tv[1] for c, tv in cells.items()}


_LIFTED = Lifted()  # where() conditions' shapes (they depend on the text alone)


def _bind_where(parsed: tuple, values: tuple) -> tuple:
    node, casts = parsed
    return engine.bind(Select("", None, node, None, casts=casts), values).where, casts


class Table:
    """One table, with happybase.Table's methods."""

    def __init__(self, name: bytes, connection: Host):
        self.name = name
        self.connection = connection
        self._name = name.decode()
        self._store = connection.store

    def __repr__(self) -> str:
        return f"<hibase.Table name={self.name!r}>"

    @property
    def schema(self) -> TableSchema:
        """The table's TableSchema: families with their options and declared column types."""
        return self._store.schema(self._name)

    def families(self) -> dict[bytes, dict]:
        """{family: descriptor dict} as happybase's families() returns (max_versions,
        compression, time_to_live, ... with HBase's default values)."""
        return {f: o.descriptor(f) for f, o in self.schema.families.items()}

    def regions(self) -> list[dict]:
        """The table's regions as happybase's regions() returns them: dicts with start_key,
        end_key, id, name, version, server_name and port."""
        return [r.info() for r in self._store.regions(self._name)]

    def _enabled_schema(self) -> TableSchema:
        """The schema, after checking the table is enabled (HBase refuses disabled tables)."""
        schema = self._store.schema(self._name)
        if not schema.enabled:
            raise errors.TableDisabled(
                f"table {self._name!r} is disabled; enable_table() it to read or write")
        return schema

    # -- reads -------------------------------------------------------------------------------
    def _columns(self, columns: Any) -> list[bytes] | None:
        return self._enabled_schema().check_columns(columns)

    def row(self, row: bytes, columns: Iterable[bytes] | None = None,
            timestamp: int | None = None, include_timestamp: bool = False) -> dict:
        """The newest cells of `row` (bytes) as {column: value}; {} if the row has none.
        columns: only these (b"f:q" columns or b"f" families); timestamp: only versions
        strictly older than it; include_timestamp: values as (value, timestamp) pairs."""
        check_row(row)
        _check_ts(timestamp)
        cols = self._columns(columns)
        if timestamp is None:
            if not include_timestamp:
                return self._store.read_latest(self._name, row, cols, with_ts=False)
            return _data(self._store.read_latest(self._name, row, cols), True)
        cells = self._store.read_row(self._name, row, cols, timestamp)
        return _data({c: vs[0] for c, vs in cells.items()}, include_timestamp)

    def rows(self, rows: Iterable[bytes], columns: Iterable[bytes] | None = None,
             timestamp: int | None = None, include_timestamp: bool = False) -> list:
        """[(rowkey, {column: value})] of the given rowkeys (a list of bytes), in the order
        asked, leaving out rows that have no cells; columns, timestamp and
        include_timestamp as in row()."""
        if isinstance(rows, (bytes, str)) or not hasattr(rows, "__iter__"):
            raise errors.ArgumentTypeError("rows() takes a list of rowkeys")
        rows = [check_row(r) for r in rows]
        _check_ts(timestamp)
        cols = self._columns(columns)
        if timestamp is None:
            found = self._store.read_latest_many(self._name, rows, cols,
                                                 with_ts=include_timestamp)
            if not include_timestamp:
                return [(r, cells) for r, cells in zip(rows, found) if cells]
        else:
            found = [{c: vs[0] for c, vs in self._store.read_row(self._name, r, cols,
                                                                 timestamp).items()}
                     for r in rows]
        return [(r, _data(cells, include_timestamp)) for r, cells in zip(rows, found) if cells]

    def cells(self, row: bytes, column: bytes, versions: int | None = None,
              timestamp: int | None = None, include_timestamp: bool = False) -> list:
        """The versions of one cell (`row`, `column` as b"f:q"), newest first: up to
        `versions` of them (None: all kept), only those older than `timestamp` if given;
        values, or (value, timestamp) pairs with include_timestamp."""
        check_row(row)
        _check_ts(timestamp)
        if versions is None:
            versions = 1 << 31
        elif not isinstance(versions, int) or versions < 1:
            raise errors.InvalidArgument("'versions' parameter must be a number at least 1")
        cols = self._columns([column])
        got = self._store.read_row(self._name, row, cols, timestamp, versions).get(column, [])
        if include_timestamp:
            return [(v, ts) for ts, v in got]
        return [v for _, v in got]

    def scan(self, row_start: bytes | None = None, row_stop: bytes | None = None,
             row_prefix: bytes | None = None, columns: Iterable[bytes] | None = None,
             filter: str | bytes | None = None, timestamp: int | None = None,
             include_timestamp: bool = False, batch_size: int = 1000,
             scan_batching: int | None = None, limit: int | None = None,
             sorted_columns: bool = False, reverse: bool = False) -> Iterator[tuple[bytes, dict]]:
        """Rows in key order as (rowkey, data); happybase's arguments and checks."""
        _check_count("batch_size", batch_size)
        if limit is not None:
            _check_count("limit", limit)
        if scan_batching is not None:
            _check_count("scan_batching", scan_batching)
        _check_ts(timestamp)
        for arg in (row_start, row_stop, row_prefix):
            if arg is not None and not isinstance(arg, bytes):
                raise errors.InvalidArgument(f"row bounds must be bytes, not {type(arg).__name__}")
        if row_prefix is not None:
            if row_start is not None or row_stop is not None:
                raise errors.InvalidArgument(
                    "'row_prefix' cannot be combined with 'row_start' or 'row_stop'")
            row_start, row_stop = _prefix_range(row_prefix, reverse)
        if row_start and row_start == row_stop:
            # real HBase (Scan.setStopRow, which Thrift1 uses): equal start and stop rows make
            # a get of that row (reversed or not), not an empty range
            row_stop, reverse = row_start + b"\x00", False
        cols = self._columns(columns)
        rf = compile_filter(filter) if filter is not None else None
        if rf is not None and rf.prefix is not None and row_start is None and row_stop is None:
            row_start, row_stop = _prefix_range(rf.prefix, reverse)
        if rf is not None and rf.limit is not None:
            limit = rf.limit if limit is None else min(limit, rf.limit)
        return self._scan(row_start or None, row_stop or None, cols, rf, timestamp,
                          include_timestamp, limit, sorted_columns, reverse,
                          row_prefix if row_prefix is not None else None)

    def _scan(self, start, stop, cols, rf, timestamp, include_timestamp, limit, sorted_columns,
              reverse, prefix) -> Iterator[tuple[bytes, dict]]:
        n = 0
        want_ts = include_timestamp
        if timestamp is None:
            source = self._store.scan_latest(self._name, start, stop, cols, reverse,
                                             with_ts=want_ts)
        else:
            source = ((row, {c: vs[0] if want_ts else vs[0][1] for c, vs in cells.items()})
                      for row, cells in self._store.scan(self._name, start, stop, cols,
                                                         timestamp, reverse=reverse))
        for row, cells in source:
            if prefix is not None and not row.startswith(prefix):
                if reverse:
                    continue
                break
            if rf is not None:
                values = rf.apply(row, {c: tv[1] for c, tv in cells.items()} if want_ts
                                  else cells)
                if values is None:
                    continue
                data = {c: (v, cells[c][0]) for c, v in values.items()} if want_ts else values
            else:
                data = {c: (tv[1], tv[0]) for c, tv in cells.items()} if want_ts else cells
            if sorted_columns:
                data = OrderedDict(sorted(data.items()))
            yield row, data
            n += 1
            if limit is not None and n >= limit:
                return

    # -- queries -----------------------------------------------------------------------------
    def where(self, condition: str, columns: Iterable[bytes] | None = None,
              limit: int | None = None, range_method: str = "auto", full_scan: bool = False,
              params: Any = None) -> Iterator[tuple[bytes, dict]]:
        """Rows matching an SQL condition (`"f.dest = 'IAH' AND f.delay > 10"`), answered through
        the secondary indexes when they apply; `columns` limits the columns returned; `params`
        binds `?` (list/tuple) or `:name` (dict) placeholders (`where("f.dest = ?",
        params=["IAH"])`); `limit` stops after that many rows. full_scan=True evaluates the
        condition over a full table scan instead (the baseline). `range_method` ("auto", "scan" or "walk") is how a range
        on an index is read: "scan" the index entries in order, "walk" the value table and look
        each value up (through the hot cache), "auto" picks by the value counts.
        Returns an iterator of (rowkey, {column: value}); raises QuerySyntaxError on a condition
        it cannot parse and InvalidArgument on bad arguments."""
        select, params = self._select(condition, columns, limit, params)
        return engine.run(select, self._store, self.connection.indexer, range_method, full_scan,
                          params)

    def explain(self, condition: str, columns: Iterable[bytes] | None = None,
                limit: int | None = None, range_method: str = "auto",
                full_scan: bool = False, params: Any = None) -> str:
        """The plan where() would follow for the same `condition`, `columns`, `limit`,
        `range_method`, `full_scan` and `params`, as text (access paths, index lookups,
        regions visited, what is covered): nothing is read but value counts."""
        select, params = self._select(condition, columns, limit, params)
        return engine.prepare(select, self._store, self.connection.indexer,
                              range_method, full_scan, params)[0].explain()

    def _select(self, condition: str, columns: Any, limit: Any, params: Any = None
                ) -> tuple[Select, Any]:
        """The statement of a condition, unbound (planned by its shape), and its values."""
        if not isinstance(condition, str):
            raise errors.InvalidArgument("where() takes the condition as a str")
        self._enabled_schema()
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                                  or limit < 0):
            raise errors.InvalidArgument("'limit' must be an int >= 0")
        checked = None if columns is None else self._columns(columns)
        cols = None if checked is None else tuple(checked)
        engine.check_size(condition, self.connection.max_statement)
        if params is None:  # literals in the condition: its shape with ? parsed once (lift.py)
            lifted = _LIFTED.get(condition, engine.parse_where, _bind_where)
            if lifted is not None:
                condition, params = lifted
        node, casts = engine.parse_where(condition) if condition.strip() else (None, ())
        return Select(self._name, cols, node, limit, casts=casts), params

    # -- writes ------------------------------------------------------------------------------
    def put(self, row: bytes, data: Mapping[bytes, bytes], timestamp: int | None = None,
            wal: bool = True) -> None:
        """Store `data` ({b"f:q": value}) in `row`; nothing is written if any part is invalid."""
        _check_ts(timestamp)
        self._enabled_schema().check_put(row, data)
        if data:
            self.connection.mutate([Mutation("put", self._name, row, dict(data), timestamp)])

    def delete(self, row: bytes, columns: Iterable[bytes] | None = None,
               timestamp: int | None = None, wal: bool = True) -> None:
        """Delete the row, or the given columns / families, up to `timestamp` if given."""
        _check_ts(timestamp)
        check_row(row)
        cols = self._columns(columns)
        self.connection.mutate([Mutation("delete", self._name, row, cols, timestamp)])

    def batch(self, timestamp: int | None = None, batch_size: int | None = None,
              transaction: bool = False, wal: bool = True) -> "Batch":
        """A Batch of puts and deletes sent together (as a context manager, on exit; or by
        send()). timestamp: every put's timestamp (None: now); batch_size: send every that
        many mutations; transaction: on an exception in the with-block nothing is sent;
        wal: accepted for happybase (every write goes through the store's log)."""
        return Batch(self, timestamp, batch_size, transaction, wal)

    # -- counters (8-byte big-endian signed, as HBase's atomic increment) ------------------------
    def counter_get(self, row: bytes, column: bytes) -> int:
        """The 64-bit counter in `column` of `row` (0 if absent), read atomically."""
        return self.counter_inc(row, column, 0)

    def counter_set(self, row: bytes, column: bytes, value: int = 0) -> None:
        """Set the 64-bit counter in `column` of `row` to `value` (an int)."""
        self._check_counter(column, value)
        self.put(row, {column: _LONG.pack(value)})

    def counter_inc(self, row: bytes, column: bytes, value: int = 1) -> int:
        """Add `value` (an int, default 1) to the 64-bit counter in `column` of `row`
        atomically and return the new value. Raises InvalidArgument if the cell is not an
        8-byte counter or the sum would overflow 64 bits."""
        self._check_counter(column, value)
        check_row(row)
        self._columns([column])

        def add(cells: dict) -> tuple[list[Mutation], int]:
            got = cells.get(column)
            current = 0
            if got:
                raw = got[0][1]
                if len(raw) != 8:
                    raise errors.InvalidArgument(
                        f"cannot increment {column!r}: its value is {len(raw)} bytes, not a "
                        "64-bit counter")
                current = _LONG.unpack(raw)[0]
            new = current + value
            if not -(1 << 63) <= new < (1 << 63):
                raise errors.InvalidArgument(f"counter {column!r} would overflow 64 bits")
            put = Mutation("put", self._name, row, {column: _LONG.pack(new)}, None)
            return ([put] if value != 0 else []), new

        return self.connection.read_modify_write(self._name, row, [column], add)

    def counter_dec(self, row: bytes, column: bytes, value: int = 1) -> int:
        """Subtract `value` (default 1) from the counter; returns the new value."""
        return self.counter_inc(row, column, -value)

    def _check_counter(self, column: bytes, value: Any) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise errors.InvalidArgument(f"counter value must be an int, not {value!r}")
        if not -(1 << 63) <= value < (1 << 63):
            raise errors.InvalidArgument(f"counter value {value} does not fit in 64 bits")
        _, qual = split_column(column)
        ctype = self.schema.columns.get(column)
        if qual is None:
            raise errors.InvalidArgument(f"counter needs 'family:qualifier', got {column!r}")
        if ctype is not None and str(ctype) != "long binary":
            raise errors.SchemaError(
                f"column {column.decode()!r} is declared {ctype}; counters need 'long binary'")


def _check_count(name: str, value: Any) -> None:
    """A count argument (batch_size, limit...): an int >= 1."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise errors.ArgumentTypeError(f"{name!r} must be an int, not {type(value).__name__}")
    if value < 1:
        raise errors.InvalidArgument(f"{name!r} must be >= 1")


def _check_ts(timestamp: Any) -> None:
    """A cell timestamp is a Java long of milliseconds: 0 <= ts < 2**63."""
    if timestamp is not None and (not isinstance(timestamp, int) or isinstance(timestamp, bool)
                                  or not 0 <= timestamp < (1 << 63)):
        raise errors.InvalidArgument(
            f"timestamp must be an int of milliseconds in [0, 2**63), not {timestamp!r}")


def _prefix_range(prefix: bytes, reverse: bool) -> tuple[bytes | None, bytes | None]:
    """Scan bounds covering exactly the rows that start with `prefix`."""
    stop = prefix.rstrip(b"\xff")
    successor = stop[:-1] + bytes([stop[-1] + 1]) if stop else None
    if reverse:
        # from the last row with the prefix down to (excluding) the row before it; rows equal to
        # the successor itself are filtered by the caller's prefix check
        return successor, (prefix[:-1] + bytes([prefix[-1] - 1]) + b"\xff" * 64
                           if prefix and prefix[-1] > 0 else None)
    return prefix or None, successor


class Batch:
    """Buffered puts and deletes, sent together; happybase.Batch's behaviour."""

    def __init__(self, table: Table, timestamp: int | None = None, batch_size: int | None = None,
                 transaction: bool = False, wal: bool = True):
        if batch_size is not None:
            if transaction:
                raise errors.ArgumentTypeError(
                    "'transaction' cannot be used when 'batch_size' is specified")
            _check_count("batch_size", batch_size)
        _check_ts(timestamp)
        self._table = table
        self._timestamp = timestamp
        self._batch_size = batch_size
        self._transaction = transaction
        self._mutations: list[Mutation] = []
        self._count = 0

    def put(self, row: bytes, data: Mapping[bytes, bytes], wal: bool | None = None) -> None:
        """Add a put of `data` ({b"f:q": value}) to `row`, checked now (an invalid put raises
        here and is not added); sent with the batch."""
        self._table._enabled_schema().check_put(row, data)
        if data:
            self._add(Mutation("put", self._table._name, row, dict(data), self._timestamp),
                      len(data))

    def delete(self, row: bytes, columns: Iterable[bytes] | None = None,
               wal: bool | None = None) -> None:
        """Add a delete of `row` (columns: only these b"f:q" columns or b"f" families; None:
        the whole row); sent with the batch."""
        check_row(row)
        cols = self._table._columns(columns)
        self._add(Mutation("delete", self._table._name, row, cols, self._timestamp),
                  len(cols) if cols else 1)

    def _add(self, mutation: Mutation, count: int) -> None:
        self._mutations.append(mutation)
        self._count += count
        if self._batch_size is not None and self._count >= self._batch_size:
            self.send()

    def send(self) -> None:
        """Write everything buffered so far, atomically."""
        if self._mutations:
            mutations, self._mutations, self._count = self._mutations, [], 0
            self._table.connection.mutate(mutations)

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._transaction and exc_type is not None:
            return  # a transaction sends nothing when its block raised
        self.send()
