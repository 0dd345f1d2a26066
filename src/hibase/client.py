"""Connection and Table: happybase's API (same signatures, same return shapes) over a hibase
store, the facade through which every read, write and query passes."""

from __future__ import annotations


import struct
from collections import OrderedDict
from typing import Any, Callable, Iterable, Iterator, Mapping

from . import errors
from .cache.config import DEFAULT_CACHE, DEFAULT_POLICY, open_cache
from .index.manager import IndexManager
from .query import engine
from .query.ast import Select
from .store.base import Mutation
from .store.api import Store, open_store
from .query.hbase_filter import compile_filter
from .store.schema import TableSchema, check_row, check_table_name, split_column

__all__ = ["Connection", "Table", "Batch", "connect"]

_LONG = struct.Struct(">q")


def connect(path: str, *, create: bool = True, read_only: bool = False, sync: bool = False,
            table_prefix: str | None = None, table_prefix_separator: str = "_",
            cache: str | None = DEFAULT_CACHE, cache_policy: str | None = DEFAULT_POLICY,
            cache_capacity: int | None = None, hotscore_alpha: float | None = None,
            count_period: int | None = None, **options: Any) -> "Connection":
    """Open (creating if missing) the store at `path`: a folder for the embedded store, or
    "thrift://host:9090[?transport=framed&protocol=compact&timeout=ms&pool_size=n&retries=n
    &catalog_lease_ms=n]" for HBase through its Thrift1 gateway (hibase.store.hbase).
    `db.stats()` counts the store's round trips.

    The hot-index cache (hibase.cache.config): `cache` is "memory" (in process, the default),
    "redis://host:port[,redis://...]" (Redis nodes on a consistent-hash ring) or
    "zk://host:port/path" (nodes registered in ZooKeeper by `hibase cache-node`);
    `cache_policy` "window-heat" (default), "hotscore" (the paper's, as published),
    "hotscore-per-record", "lru" or None (no cache);
    `cache_capacity` in records (index entries; default 100,000); `hotscore_alpha` and
    `count_period` tune the heat (window-heat, hotscore). `db.cache_stats()` reports hits, misses, evictions..."""
    if not isinstance(path, str) or not path:
        raise errors.InvalidArgument("connect() needs a store path such as 'data/'")
    thrift = path.startswith("thrift://")
    if "://" in path and not thrift:
        scheme = path.split("://", 1)[0]
        raise errors.BackendUnavailable(
            f"backend {scheme!r} is not available; use a folder path for the embedded store "
            "or thrift://host:9090 for HBase")
    if options:
        raise errors.InvalidArgument(f"unknown connect() option(s): {sorted(options)}")
    hot = open_cache(cache, cache_policy, cache_capacity, hotscore_alpha, count_period)
    try:
        store = open_store(path, create=create, read_only=read_only, sync=sync)
    except BaseException:
        if hot is not None:
            hot.close()
        raise
    return Connection(store, table_prefix=table_prefix,
                      table_prefix_separator=table_prefix_separator, cache=hot)


def _name(name: str | bytes) -> str:
    if isinstance(name, bytes):
        name = name.decode("utf-8", errors="replace")
    if not isinstance(name, str):
        raise errors.InvalidArgument(f"table name must be str or bytes, not {type(name).__name__}")
    if not name.isprintable() or any("\ud800" <= c <= "\udfff" for c in name):
        raise errors.InvalidArgument(f"table name {name!r} must be printable text")
    return name


class Connection:
    """A connection to one store, shaped like happybase.Connection."""

    def __init__(self, store: Store, table_prefix: str | None = None,
                 table_prefix_separator: str = "_", cache: Any = None):
        self.store = store
        self.cache = cache  # hibase.cache.HotCache or None
        self.indexer = IndexManager(store, cache)
        self.table_prefix = table_prefix
        self.table_prefix_separator = table_prefix_separator
        self._statements: dict[str, Select] = {}  # sql() text -> parsed query (immutable)

    # -- happybase.Connection ----------------------------------------------------------------
    def _full(self, name: str | bytes, use_prefix: bool = True) -> str:
        name = _name(name)
        if use_prefix and self.table_prefix:
            return f"{self.table_prefix}{self.table_prefix_separator}{name}"
        return name

    def table(self, name: str | bytes, use_prefix: bool = True) -> "Table":
        full = self._full(name, use_prefix)
        self.store.table(full)  # unknown table: a clear error now, not at first use
        return Table(full.encode(), self)

    def tables(self) -> list[bytes]:
        names = self.store.tables()
        if self.table_prefix:
            p = self.table_prefix + self.table_prefix_separator
            names = [n[len(p):] for n in names if n.startswith(p)]
        return [n.encode() for n in names]

    def create_table(self, name: str | bytes, families: Mapping[Any, Any],
                     columns: Mapping[Any, str] | None = None,
                     split_size: int | None = None) -> None:
        """Create a table; `columns` declares types ({"f:delay": "double"}), checked on put."""
        full = self._full(name)
        check_table_name(full)
        self.store.create_table(TableSchema.build(full, families, columns, split_size))

    def delete_table(self, name: str | bytes, disable: bool = False) -> None:
        full = self._full(name)
        schema = self.store.schema(full)
        if schema.enabled and not disable:
            raise errors.InvalidArgument(
                f"table {full!r} is enabled; pass disable=True (or disable_table first), "
                "as HBase requires")
        self.indexer.drop_table(full)
        self.store.drop_table(full)

    def enable_table(self, name: str | bytes) -> None:
        self._set_enabled(name, True)

    def disable_table(self, name: str | bytes) -> None:
        self._set_enabled(name, False)

    def is_table_enabled(self, name: str | bytes) -> bool:
        return self.store.schema(self._full(name)).enabled

    def _set_enabled(self, name: str | bytes, flag: bool) -> None:
        schema = self.store.schema(self._full(name))
        schema.enabled = flag
        self.store.save_schema(schema)

    def compact_table(self, name: str | bytes, major: bool = False) -> None:
        self.store.compact(self._full(name))

    def open(self) -> None:
        """happybase parity: the embedded store is open from connect() on."""

    def close(self) -> None:
        """Close the cache and the store even when saving state fails (a full disk...): the
        first failure is raised after everything is closed."""
        try:
            if not self.store.closed:
                self.indexer.close()  # routing filters of local indexes are saved on close
        finally:
            try:
                if self.cache is not None:
                    self.cache.close()
            finally:
                self.store.close()

    def cache_stats(self) -> dict:
        """The hot-index cache's counters: hits, misses, hit_ratio, evictions, sets, records
        (and backend / policy details); zeros with backend None when there is no cache."""
        if self.cache is None:
            return {"backend": None, "policy": None, "hits": 0, "misses": 0, "hit_ratio": 0.0,
                    "evictions": 0, "sets": 0, "records": 0}
        return self.cache.stats()

    def stats(self) -> dict:
        """Counters for tests and benchmarks: `store_calls` (the HBase backend's Thrift calls
        by method since connect, retries included; {} on the embedded store, which makes
        none), `store_calls_total`, and `cache` (cache_stats()). Compare two readings to
        count the round trips of an operation."""
        calls_of = getattr(self.store, "call_stats", None)
        calls = calls_of() if calls_of is not None else {}
        return {"backend": "hbase" if calls_of is not None else "embedded",
                "store_calls": calls, "store_calls_total": sum(calls.values()),
                "cache": self.cache_stats()}

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- beyond happybase ----------------------------------------------------------------------
    def split(self, table: str | bytes, row: bytes | None = None) -> bool:
        """Split the region holding `row` at `row` (or every region at its middle)."""
        if row is not None:
            check_row(row)
        return self.store.split(self._full(table), row)

    def mutate(self, mutations: list[Mutation]) -> None:
        """Apply `mutations` (hibase.store.base.Mutation: a put or delete of one row each, of
        tables by their full names) with their index rows and value counts in one atomic batch:
        the one write path every Table call and the Thrift gateway take. Nothing is written if
        one mutation is invalid."""
        self.indexer.write(mutations)

    def read_modify_write(self, table: str, row: bytes, columns: list[bytes],
                          change: Callable[[dict], tuple[list[Mutation], Any]]) -> Any:
        """Atomic against every writer of this connection: read `columns` of `row` in table
        `table` (full name) as {column: [(timestamp, value), ...]}, newest first; call
        `change(cells)`, which returns (mutations, result); apply the mutations; return
        result. Counters, append and check-and-put are built on it."""
        with self.store.write_lock():
            cells = self.store.read_row(table, row, columns) if columns else {}
            mutations, result = change(cells)
            if mutations:
                self.mutate(mutations)
            return result

    # -- secondary indexes ---------------------------------------------------------------------
    def create_index(self, table: str | bytes, name: str, columns: Any,
                     covering: Any = None, local: bool = False, processes: int | None = None,
                     progress: Any = None) -> dict:
        """Create an index on declared `columns` (a composite index answers any prefix of
        them), carrying `covering` columns, and build it from the table's rows. local=True makes
        a local (per-region) index: its rows live with each region's data and lookups visit the
        regions its routing filters cannot rule out."""
        spec = self.indexer.create(self._full(table), name, columns, covering or (), local,
                                   processes, progress)
        return spec.describe()

    def drop_index(self, table: str | bytes, name: str) -> None:
        self.indexer.drop(self._full(table), name)

    def indexes(self, table: str | bytes) -> list[dict]:
        full = self._full(table)
        self.store.table(full)
        return [s.describe() for s in self.indexer.specs(full)]

    def bulk_load(self, table: str | bytes, processes: int | None = None,
                  progress: Any = None) -> Any:
        """A context manager for big loads: index upkeep is suspended inside the block and the
        table's indexes are rebuilt at its end (`with db.bulk_load("t"): ...puts...`)."""
        return self.indexer.bulk(self._full(table), processes, progress)

    def build_index(self, table: str | bytes, name: str, processes: int | None = None,
                    progress: Any = None) -> dict:
        """Rebuild an index from the table (writes wait meanwhile)."""
        return self.indexer.build(self._full(table), name, processes, progress)

    def sql(self, statement: str, params: Any = None, range_method: str = "auto",
            full_scan: bool = False) -> list | str:
        """Run `SELECT ... FROM t [WHERE ...] [GROUP BY ...] [HAVING ...] [ORDER BY ...]
        [LIMIT n] [OFFSET m]` (Phoenix's spelling: family.qualifier, ROWKEY); `EXPLAIN SELECT
        ...` returns the plan as text.

        Plain queries return a list of (rowkey, {column: raw value}); queries with aggregates
        (COUNT, SUM, MIN, MAX, AVG), GROUP BY or DISTINCT return a list of tuples of values
        decoded by the columns' types (None for NULL), in select-list order.
        `params` binds `?` placeholders from a list/tuple or `:name` ones from a dict
        (`db.sql("SELECT * FROM t WHERE f.x = ?", (3,))`); values are never put into the text.
        full_scan=True ignores rowkey and index paths and evaluates the condition over a full
        table scan: the same rows, the baseline the indexes are measured against."""
        if not isinstance(statement, str):
            raise errors.InvalidArgument("sql() takes the statement as a str")
        if isinstance(params, str) and range_method == "auto" and params in engine.RANGE_METHODS:
            raise errors.InvalidArgument("sql()'s second argument is params; pass "
                                         "range_method= by name")
        select = self._statements.get(statement)
        if select is None:  # parsed once per text, its table name resolved once
            select = engine.parse_select(statement)
            select = select.with_(table=self._full(select.table))
            if len(self._statements) >= 1024:
                self._statements.clear()
            self._statements[statement] = select
        select = engine.bind(select, params)
        if select.explain:
            return engine.explain(select, self.store, self.indexer, range_method, full_scan)
        return engine.run_select(select, self.store, self.indexer, range_method, full_scan)

    def verify_index(self, table: str | bytes, name: str, repair: bool = False) -> dict:
        """Compare an index with the table; with repair, fix missing / extra entries."""
        return self.indexer.verify(self._full(table), name, repair)


def _data(cells: dict[bytes, tuple[int, bytes]], include_timestamp: bool) -> dict:
    """happybase's row shape from {column: (ts, value)}."""
    if include_timestamp:
        return {c: (tv[1], tv[0]) for c, tv in cells.items()}
    return {c: tv[1] for c, tv in cells.items()}


class Table:
    """One table, with happybase.Table's methods."""

    def __init__(self, name: bytes, connection: Connection):
        self.name = name
        self.connection = connection
        self._name = name.decode()
        self._store = connection.store

    def __repr__(self) -> str:
        return f"<hibase.Table name={self.name!r}>"

    @property
    def schema(self) -> TableSchema:
        return self._store.schema(self._name)

    def families(self) -> dict[bytes, dict]:
        return {f: o.descriptor(f) for f, o in self.schema.families.items()}

    def regions(self) -> list[dict]:
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
        params=["IAH"])`). full_scan=True evaluates the condition over a full table scan
        instead (the baseline)."""
        select = self._select(condition, columns, limit, params)
        return engine.run(select, self._store, self.connection.indexer, range_method, full_scan)

    def explain(self, condition: str, columns: Iterable[bytes] | None = None,
                limit: int | None = None, range_method: str = "auto",
                full_scan: bool = False, params: Any = None) -> str:
        """The plan where() would follow, as text."""
        select = self._select(condition, columns, limit, params)
        return engine.prepare(select, self._store, self.connection.indexer,
                              range_method, full_scan)[0].explain()

    def _select(self, condition: str, columns: Any, limit: Any, params: Any = None) -> Select:
        if not isinstance(condition, str):
            raise errors.InvalidArgument("where() takes the condition as a str")
        self._enabled_schema()
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise errors.InvalidArgument("'limit' must be an int >= 1")
        cols = None if columns is None else tuple(self._columns(columns))  # type: ignore[arg-type]
        node = engine.parse_condition(condition) if condition.strip() else None
        return engine.bind(Select(self._name, cols, node, limit), params)

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
        return Batch(self, timestamp, batch_size, transaction, wal)

    # -- counters (8-byte big-endian signed, as HBase's atomic increment) ------------------------
    def counter_get(self, row: bytes, column: bytes) -> int:
        return self.counter_inc(row, column, 0)

    def counter_set(self, row: bytes, column: bytes, value: int = 0) -> None:
        self._check_counter(column, value)
        self.put(row, {column: _LONG.pack(value)})

    def counter_inc(self, row: bytes, column: bytes, value: int = 1) -> int:
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
        self._table._enabled_schema().check_put(row, data)
        if data:
            self._add(Mutation("put", self._table._name, row, dict(data), self._timestamp),
                      len(data))

    def delete(self, row: bytes, columns: Iterable[bytes] | None = None,
               wal: bool | None = None) -> None:
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
