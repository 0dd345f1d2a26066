"""Connection: a hibase store opened as happybase's Connection (same signatures, same return
shapes), with the index manager and the hot cache wired in; `connect` opens one. Every write of
every Table passes through `Connection.mutate`."""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from . import codec, errors
from .cache.config import DEFAULT_CACHE, DEFAULT_POLICY, open_cache
from .index.distributed import BuildJob, build_distributed
from .index.manager import IndexManager
from . import sql as sqlexec
from .query import engine
from .query.ast import Select
from .query.lift import Lifted
from .query.resolve import resolve
from .store.api import Store
from .store.backends import open_store
from .store.base import Mutation
from .store.schema import TableSchema, check_row, check_table_name
from .table import Table

__all__ = ["Connection", "connect"]

_EXPLAIN = re.compile(r"\s*EXPLAIN\b", re.IGNORECASE)
_SELECT = re.compile(r"\s*SELECT\b", re.IGNORECASE)


def _bind_shape(shape: Select, values: tuple) -> tuple:
    """A parsed shape with its literals bound, as compared with the text's own parse: the
    tree, and the select list's names as written (not part of a Select's equality)."""
    bound = engine.bind(shape, values)
    return bound, bound.names, bound.labels, tuple(n for n, _ in bound.bare)


def connect(path: str, *, create: bool = True, read_only: bool = False,
            durability: str | None = None, sync: bool | None = None,
            table_prefix: str | None = None, table_prefix_separator: str = "_",
            cache: str | None = DEFAULT_CACHE, cache_policy: str | None = DEFAULT_POLICY,
            cache_capacity: int | None = None, hotscore_alpha: float | None = None,
            count_period: int | None = None, max_statement: int = engine.MAX_STATEMENT,
            cache_staleness_ms: int = 0, **options: Any) -> "Connection":
    """Open (creating if missing) the store at `path`: a folder for the embedded store, or
    "thrift://host:9090[?transport=framed&protocol=compact&timeout=ms&pool_size=n&retries=n
    &catalog_lease_ms=n&thrift2_port=n]" for HBase through its Thrift1 gateway (thrifts://, or
    tls=1 with tls_ca=FILE: over TLS, e.g. to `hibase serve --tls-cert`)
    (hibase.store.hbase; thrift2_port: HBase's Thrift2 server, which answers an index lookup's
    short scan in one call instead of three).
    `db.stats()` counts the store's round trips.

    The hot-index cache (hibase.cache.config): `cache` is "memory" (in process, the default),
    "redis://host:port[,redis://...]" (Redis nodes on a consistent-hash ring) or
    "zk://host:port/path" (nodes registered in ZooKeeper by `hibase cache-node`);
    `cache_policy` "window-heat" (default), "hotscore" (the paper's, as published),
    "hotscore-per-record", "lru" or None (no cache);
    `cache_capacity` in records (index entries; default 100,000); `hotscore_alpha` and
    `count_period` tune the heat (window-heat, hotscore). `db.cache_stats()` reports hits, misses, evictions...
    On HBase, sets of indexes the region servers keep (hibase's coprocessor: every writer's puts
    change them) answer only while the table's server write version is the one read at the
    lookup (one get per lookup), so every answer reflects every acknowledged write, whoever wrote;
    `cache_staleness_ms=n` (opt-in, default 0) trusts a version read less than n ms ago instead:
    a hot hit then makes no HBase call, and may miss other programs' writes of the last n ms.

    `create` (default True) makes a missing embedded store, else BackendUnavailable; `read_only`
    opens alongside a writer and refuses writes; `durability` says what an acknowledged write
    survives: "process" (the default; the WAL reaches the OS before a write returns, so the
    process's death, kill -9 included, loses nothing) or "fsync" (the WAL is also fsynced before
    a write returns, so a power cut loses nothing; concurrent writers share fsyncs: group
    commit); `sync=True` is the older spelling of durability="fsync"; `table_prefix` +
    `table_prefix_separator` name tables as happybase does ("app" + "_" + name);
    `max_statement` is the longest SQL statement or condition accepted, in UTF-8 bytes (default
    1 MiB; a longer one is a QuerySyntaxError before parsing). Unknown options raise
    InvalidArgument."""
    if not isinstance(path, str) or not path:
        raise errors.InvalidArgument("connect() needs a store path such as 'data/'")
    thrift = path.startswith(("thrift://", "thrifts://"))
    if "://" in path and not thrift:
        scheme = path.split("://", 1)[0]
        raise errors.BackendUnavailable(
            f"backend {scheme!r} is not available; use a folder path for the embedded store "
            "or thrift://host:9090 for HBase")
    if options:
        raise errors.InvalidArgument(f"unknown connect() option(s): {sorted(options)}")
    if not isinstance(max_statement, int) or isinstance(max_statement, bool) \
            or max_statement < 1:
        raise errors.InvalidArgument("max_statement must be a positive int (bytes)")
    if not isinstance(cache_staleness_ms, int) or isinstance(cache_staleness_ms, bool) \
            or cache_staleness_ms < 0:
        raise errors.InvalidArgument("cache_staleness_ms must be an int >= 0 (milliseconds)")
    hot = open_cache(cache, cache_policy, cache_capacity, hotscore_alpha, count_period)
    try:
        store = open_store(path, create=create, read_only=read_only, durability=durability,
                           sync=sync)
    except BaseException:
        if hot is not None:
            hot.close()
        raise
    db = Connection(store, table_prefix=table_prefix,
                    table_prefix_separator=table_prefix_separator, cache=hot,
                    cache_staleness_ms=cache_staleness_ms)
    db.max_statement = max_statement
    return db


def _shown(b: bytes) -> str:
    """Bytes of a row or value as a short quoted text for messages."""
    r = repr(b.decode("utf-8", "backslashreplace"))
    return r if len(r) <= 60 else r[:56] + "...'"


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
                 table_prefix_separator: str = "_", cache: Any = None,
                 cache_staleness_ms: int = 0):
        self.store = store
        self.cache = cache  # hibase.cache.HotCache or None
        self.indexer = IndexManager(store, cache, cache_staleness_ms)
        self.table_prefix = table_prefix
        self.table_prefix_separator = table_prefix_separator
        self._statements: dict[str, Select] = {}  # sql() text -> parsed query (immutable)
        self._lifted = Lifted()  # SELECT texts with literals: their shapes with ? (query/lift)
        self.max_statement = engine.MAX_STATEMENT  # longest statement accepted (UTF-8 bytes)

    # -- happybase.Connection ----------------------------------------------------------------
    def _full(self, name: str | bytes, use_prefix: bool = True) -> str:
        name = _name(name)
        if use_prefix and self.table_prefix:
            return f"{self.table_prefix}{self.table_prefix_separator}{name}"
        return name

    def table(self, name: str | bytes, use_prefix: bool = True) -> "Table":
        """The table `name` (str or bytes; the connection's table_prefix is added unless
        use_prefix=False) as a Table. Raises TableNotFound if it does not exist."""
        full = self._full(name, use_prefix)
        self.store.schema(full)  # unknown table: a clear error now, not at first use
        return Table(full.encode(), self)

    def tables(self) -> list[bytes]:
        """The names (bytes) of the tables, without the connection's table_prefix (only tables
        carrying it are listed when one is set)."""
        names = self.store.tables()
        if self.table_prefix:
            p = self.table_prefix + self.table_prefix_separator
            names = [n[len(p):] for n in names if n.startswith(p)]
        return [n.encode() for n in names]

    def create_table(self, name: str | bytes, families: Mapping[Any, Any],
                     columns: Mapping[Any, str] | None = None,
                     split_size: int | None = None, existing: bool = False, *,
                     rowkey: str | None = None, rowkey_type: Any = None,
                     rowkey_generated: bool = False, salt_buckets: int | None = None) -> None:
        """Create a table; `columns` declares types ({"f:delay": "double"}), checked on put.
        `rowkey` names the rowkey column for SQL (CREATE TABLE's PRIMARY KEY; `rowkey_type`
        "string" or "bytes"); `rowkey_generated` makes SQL UPSERTs generate rowkeys (a table
        created without PRIMARY KEY).

        existing=True records instead a table that HBase already holds (written by other
        programs), leaving its rows as they are, so indexes can be made on it: the schema
        has every family HBase has, with HBase's options (reads show what HBase holds);
        `families` names the ones the caller expects, each checked to exist (a list, or
        empty), and `columns` is declared as declare_columns() does it, every stored cell
        checked first. TableNotFound if HBase has no such table; the embedded store holds
        none (InvalidArgument).

        salt_buckets=N (1 to 256) makes a salted table: each row is stored under a hash byte
        of its rowkey mod N followed by the rowkey (store/salted.py), in N regions from the
        start, so rowkeys that grow in time spread their writes; every API shows and orders
        the rowkeys as given."""
        full = self._full(name)
        check_table_name(full)
        if not existing:
            self.store.create_table(TableSchema.build(full, families, columns, split_size,
                                                      rowkey=rowkey, rowkey_type=rowkey_type,
                                                      rowkey_generated=rowkey_generated,
                                                      salt_buckets=salt_buckets))
            return
        if salt_buckets is not None:
            raise errors.InvalidArgument("salt_buckets: an existing table's rowkeys are stored "
                                         "as its writers wrote them (create a new salted table "
                                         "and load it)")
        if split_size is not None:
            raise errors.InvalidArgument("split_size: HBase splits an existing table itself")
        have = self.store.existing_families(full)
        wanted = [f.decode() if isinstance(f, bytes) else str(f) for f in families]
        wanted = [f[:-1] if f.endswith(":") else f for f in wanted]
        if isinstance(families, Mapping) and any(families.values()):
            raise errors.SchemaError("existing=True takes each family's options from HBase; "
                                     "give the family names only")
        missing = [f for f in wanted if f.encode() not in have]
        if missing:
            raise errors.SchemaError(
                f"HBase table {full!r} has no family {missing[0]!r} (it has: "
                f"{', '.join(sorted(f.decode() for f in have))})")
        if rowkey_generated:
            raise errors.InvalidArgument("rowkey_generated: an existing table's rowkeys are its "
                                         "writers'")
        self.store.record_table(TableSchema.build(full, {f.decode(): o for f, o in have.items()},
                                                  rowkey=rowkey, rowkey_type=rowkey_type))
        if columns:
            try:
                self.declare_columns(full, columns)
            except BaseException:
                self.store.forget_table(full)
                raise

    def declare_columns(self, table: str | bytes, columns: Mapping[Any, Any]) -> dict:
        """Declare the types of columns of an existing table (``{"f:alt": "long"}``, the types
        create_table's `columns` takes), or change them; from then on puts are checked and
        queries compare their values by type.

        Every stored cell of those columns is checked first, every version its family keeps
        (reads with versions= return older versions, and deleting the newest version of a cell
        makes the one before it current, to be indexed and compared by the type): the
        first cell that does not parse, in rowkey order, refuses the whole call with
        ValueTypeError naming its row, column and value (``row 'k42': f.alt = 'abc' is not a
        long``) and nothing changes. A column declared with another type may change when its
        cells all parse as the new type, unless an index has it among its indexed columns (its
        keys are encoded by the old type): SchemaError naming the index; drop the index, declare,
        create it again. Covered columns may change (the index keeps their raw cells). Writers
        of this connection wait during the check; on HBase other clients' writes are not held
        back (Thrift1 has no table lock), so declare before they write.

        Returns ``{"columns": {"f:alt": "long", ...} (the ones that changed), "rows": rows
        checked, "cells": cells checked}``."""
        full = self._full(table)
        schema = self.store.schema(full)
        if not isinstance(columns, Mapping) or not columns:
            raise errors.SchemaError("columns must be a non-empty dict such as {'f:alt': 'long'}")
        wanted = TableSchema.build(full, {f.decode(): None for f in schema.families}, columns,
                                   internal=True).columns  # checks names, families, types
        with self.store.write_lock():
            schema = self.store.schema(full)
            changes = {c: t for c, t in wanted.items() if schema.columns.get(c) != t}
            result: dict[str, Any] = {
                "columns": {c.decode(): str(t) for c, t in changes.items()}, "rows": 0,
                "cells": 0}
            if not changes:
                return result
            for spec in self.indexer.specs(full, fresh=True):  # other clients' indexes too
                for col in spec.columns:
                    if col in changes:
                        raise errors.SchemaError(
                            f"column {col.decode()} is indexed by {spec.name!r} as "
                            f"{schema.columns[col]}; drop the index first (its keys are "
                            f"encoded by that type), then declare {changes[col]} and create "
                            "it again")
            versions = max(schema.families[c.partition(b":")[0]].max_versions for c in changes)
            for row, cells in self.store.scan(full, columns=list(changes), versions=versions):
                result["rows"] += 1
                for col, stored in cells.items():
                    ctype = changes.get(col)
                    if ctype is None:
                        continue
                    for i, (ts, raw) in enumerate(stored):
                        result["cells"] += 1
                        try:
                            codec.validate_cell(ctype, raw)
                        except errors.ValueTypeError:
                            older = (f" (an older version, timestamp {ts}, which a delete of the "
                                     "newer ones brings back)") if i else ""
                            article = "an" if ctype.name[0] in "aeiou" else "a"
                            raise errors.ValueTypeError(
                                f"row {_shown(row)}: {codec.column_text(col)} = {_shown(raw)}{older} is "
                                f"not {article} {ctype}; nothing declared") from None
            self.store.save_schema(TableSchema(schema.name, schema.families,
                                               {**schema.columns, **changes},
                                               schema.split_size, schema.enabled,
                                               rowkey=schema.rowkey,
                                               rowkey_type=schema.rowkey_type,
                                               rowkey_generated=schema.rowkey_generated))
        return result

    def delete_table(self, name: str | bytes, disable: bool = False,
                     keep_data: bool = False) -> None:
        """Delete table `name` (str or bytes, prefixed as table()) with its rows and indexes.
        As in happybase an enabled table must be disabled first: disable=True does it.
        keep_data=True (HBase backend) only unregisters it: its indexes go, the HBase table
        and its rows stay for the programs that write it (record it again with existing=True).
        Raises TableNotFound, or InvalidArgument when it is enabled and disable is False."""
        full = self._full(name)
        schema = self.store.schema(full)
        if keep_data:
            self.indexer.drop_table(full)
            self.store.forget_table(full)
            return
        if schema.enabled and not disable:
            raise errors.InvalidArgument(
                f"table {full!r} is enabled; pass disable=True (or disable_table first), "
                "as HBase requires")
        self.indexer.drop_table(full)
        self.store.drop_table(full)

    def enable_table(self, name: str | bytes) -> None:
        """Enable table `name` (str or bytes): its data calls work again."""
        self._set_enabled(name, True)

    def disable_table(self, name: str | bytes) -> None:
        """Disable table `name` (str or bytes): data calls on it fail until enable_table."""
        self._set_enabled(name, False)

    def is_table_enabled(self, name: str | bytes) -> bool:
        """Whether table `name` (str or bytes) is enabled (bool)."""
        return self.store.schema(self._full(name)).enabled

    def _set_enabled(self, name: str | bytes, flag: bool) -> None:
        schema = self.store.schema(self._full(name))
        was, schema.enabled = schema.enabled, flag
        try:
            self.store.save_schema(schema)
        except BaseException:  # not saved (a read-only folder...): the table stays as it was
            schema.enabled = was
            raise

    def compact_table(self, name: str | bytes, major: bool = False) -> None:
        """Compact table `name` (str or bytes): fold each row's segments and drop what
        deletes, versions and TTLs hide (major is accepted for happybase; every compaction
        here is major)."""
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
        calls = self.store.call_stats()
        return {"backend": self.store.kind,
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
                     progress: Any = None, build: bool = True,
                     job: BuildJob | None = None, consistency: str = "strong",
                     uncovered: bool = False, where: str | None = None,
                     kind: str = "") -> dict:
        """Create an index on declared `columns` (a composite index answers any prefix of
        them), carrying `covering` columns, and build it from the table's rows. local=True makes
        a local (per-region) index: its rows live with each region's data and lookups visit the
        regions its routing filters cannot rule out. build=False (SQL's CREATE INDEX ... ASYNC)
        leaves it "building": writes maintain it, queries do not use it until build_index.
        job: build it on a distributed engine instead (HBase only; index/distributed.py),
        e.g. `job=hibase.cluster.mapreduce.MapReduceJob()`, one map task per region; the
        job's report is the returned dict's "build". consistency="eventual" (HBase with
        hibase's coprocessor): a write records its row once for all such indexes and the
        region server updates their entries shortly after (`index_lag` says how many rows
        wait); queries read the entries as they are, so they may miss a fresh write.
        uncovered=True (Phoenix's CREATE UNCOVERED INDEX): entries carry no values (no
        `covering`) and a write stores each one once, the cheapest upkeep on HBase; queries
        read the rows it finds (and check them against it there).
        where="f.status = 'open'" makes a partial index: only rows for which the condition is
        TRUE have entries, and a query uses it only when its condition implies this one.
        kind="text": a full-text index on one VARCHAR column (an entry per word; queried by
        CONTAINS(f.body, 'quick fox'), docs/sql.md)."""
        pred = None if where is None else self._index_where(table, where)
        if job is not None and pred is not None:
            raise errors.SchemaError("a partial index (where=) is built by hibase itself; "
                                     "the distributed build (job=) does not evaluate predicates")
        if job is not None and build:
            job.check(self.store)  # refused before the index is defined
            full = self._full(table)
            spec = self.indexer.create(full, name, columns, covering or (), local, build=False,
                                       consistency=consistency, uncovered=uncovered,
                                       where=pred, kind=kind)
            stats = build_distributed(self.indexer, full, name, job, progress=progress)
            return {**self.indexer.catalog.get(full, name).describe(), "build": stats}
        spec = self.indexer.create(self._full(table), name, columns, covering or (), local,
                                   processes, progress, build, consistency, uncovered, pred,
                                   kind)
        return spec.describe()

    def _index_where(self, table: str | bytes, where: str) -> dict:
        """A partial index's predicate compiled for its spec (query/partial.py)."""
        from .query.parse import parse_select
        from .query.partial_create import compile_where

        if not isinstance(where, str) or not where.strip():
            raise errors.SchemaError("where= must be an SQL condition, e.g. \"f.status = 'open'\"")
        schema = self.store.schema(self._full(table))
        try:
            select = resolve(parse_select(f"SELECT * FROM t WHERE {where}"), schema)
        except errors.QueryError as e:
            raise errors.SchemaError(f"cannot index WHERE {where}: {e}") from None
        return compile_where(where, select, schema, schema.columns)

    def index_lag(self, table: str | bytes, name: str) -> dict:
        """How far index `name` of `table` is behind the rows: {"pending": changed rows the
        region servers have not applied to it yet, "oldest_s": the oldest one's age in
        seconds (None when none waits), "consistency"}. Always 0 pending for a strongly
        consistent index, and for any index the clients keep."""
        return self.indexer.lag(self._full(table), name)

    def drop_index(self, table: str | bytes, name: str) -> None:
        """Drop index `name` (str) of `table` (str or bytes): its entries, value counts and
        routing filters go; queries stop using it. Raises IndexNotFound if it does not exist."""
        self.indexer.drop(self._full(table), name)

    def indexes(self, table: str | bytes) -> list[dict]:
        """The indexes of `table` (str or bytes) as dicts: name, table, columns, types,
        covering, local, state (building / ready / stale), alias (hex), null_list."""
        full = self._full(table)
        self.store.schema(full)
        return [s.describe() for s in self.indexer.specs(full)]

    def bulk_load(self, table: str | bytes, processes: int | None = None,
                  progress: Any = None) -> Any:
        """A context manager for big loads: index upkeep is suspended inside the block and the
        table's indexes are rebuilt at its end (`with db.bulk_load("t"): ...puts...`)."""
        return self.indexer.bulk(self._full(table), processes, progress)

    def build_index(self, table: str | bytes, name: str, processes: int | None = None,
                    progress: Any = None, job: BuildJob | None = None) -> dict:
        """Rebuild an index from the table (writes wait meanwhile). job: on a distributed
        engine instead (see create_index); the stats then hold the job's report under
        "job"."""
        if job is not None:
            if self.indexer.catalog.get(self._full(table), name).where is not None:
                raise errors.SchemaError(f"index {name!r} is partial: it is built by hibase "
                                         "itself (no job=); the distributed build does not "
                                         "evaluate predicates")
            return build_distributed(self.indexer, self._full(table), name, job,
                                     progress=progress)
        return self.indexer.build(self._full(table), name, processes, progress)

    def sql(self, statement: str, params: Any = None, range_method: str = "auto",
            full_scan: bool = False, raw: bool = False) -> list | int | None:
        """Run one SQL statement in Phoenix's spelling (family.qualifier, ROWKEY or the table's
        PRIMARY KEY name, a column's bare qualifier when unambiguous).

        SELECT: `SELECT ... FROM t [WHERE ...] [GROUP BY ...] [HAVING ...] [ORDER BY ...]
        [LIMIT n] [OFFSET m]`; plain queries return a list of (rowkey, {column: value}) with
        each declared column's value decoded by its type (int, float, str; CAST types too) and
        undeclared columns as stored bytes, the rowkey a str when the table declares it VARCHAR
        (as execute() and DB-API give it), else bytes (raw=True: every value as stored bytes,
        the shape before issue 28); queries with aggregates (COUNT, SUM, MIN, MAX, AVG), GROUP BY or
        DISTINCT return a list of tuples of values decoded by the columns' types (None for
        NULL), in select-list order. A cell that does not parse as its declared type (written
        by a client that skips hibase's checks) is None, as queries and indexes treat it, and
        a hibase.errors.CellTypeWarning says how many and names the first few (row, column). A
        SELECT beyond the lean path (functions, arithmetic, CASE, JOIN, subqueries, UNION,
        GROUP BY an expression, ...) runs on DuckDB over hibase's scans (hibase.query.duck) and
        returns tuples too. `EXPLAIN SELECT ...` (and EXPLAIN DELETE / UPSERT ... SELECT)
        returns rows too, a 1-tuple per plan line; `db.explain(statement)` returns the plan as
        one str.

        DML returns the number of rows written: `UPSERT INTO t (cols) VALUES (...), ...`,
        `UPSERT INTO t (cols) SELECT ...`, `INSERT INTO t ...` (VALUES or SELECT, as UPSERT but
        a rowkey that exists already or comes twice is errors.RowExists and nothing is
        written), `UPDATE t SET col = expr, ... [WHERE ...] [LIMIT n]` and `DELETE FROM t
        [WHERE ...] [LIMIT n]` (rows found by the SELECT planner, indexes included). DDL returns None: `CREATE TABLE [IF NOT EXISTS]
        t (k VARCHAR PRIMARY KEY, f.a INTEGER, ...) [VERSIONS=1, TTL=..., ...]`, `DROP TABLE
        [IF EXISTS] t`, `CREATE [LOCAL] INDEX [IF NOT EXISTS] n ON t (cols) [INCLUDE (cols)]
        [ASYNC]`, `DROP INDEX [IF EXISTS] n ON t`, `ALTER INDEX n ON t REBUILD`
        (hibase.query.statements; executed by hibase.sql).

        `params` binds `?` placeholders from a list/tuple or `:name` ones from a dict
        (`db.sql("SELECT * FROM t WHERE f.x = ?", (3,))`); values are never put into the text.
        `range_method` as in Table.where. full_scan=True ignores rowkey and index paths and
        evaluates the condition over a full table scan: the same rows, the baseline the
        indexes are measured against."""
        if not isinstance(statement, str):
            raise errors.InvalidArgument("sql() takes the statement as a str")
        if isinstance(params, str) and range_method == "auto" and params in engine.RANGE_METHODS:
            raise errors.InvalidArgument("sql()'s second argument is params; pass "
                                         "range_method= by name")
        select = self._statements.get(statement)
        if select is None and params is None and _SELECT.match(statement):
            # literals in the text: its shape with ? is parsed once, the literals bound
            lifted = self._lifted.get(statement, self._parse_shape, _bind_shape,
                                      self._parse_text)
            if lifted is not None:
                statement, params = lifted
                select = self._statements.get(statement)
        if select is None:  # parsed once per text, its table name resolved once
            parsed = sqlexec.parse(self, statement)
            if not isinstance(parsed, Select):
                result = sqlexec.execute(self, parsed, params, self._full, range_method,
                                         full_scan)
                if result.kind == "ddl":
                    self._statements.clear()  # bare names may resolve otherwise now
                    self._lifted.clear()
                    return None
                if result.kind in ("explain", "select"):  # select: on the SQL engine
                    return result.rows
                return result.rowcount
            select = parsed.with_(table=self._full(parsed.table))
            if len(self._statements) >= 1024:
                self._statements.clear()
            self._statements[statement] = select
        if select.bare or select.casts:
            select = resolve(select, self.store.schema(select.table))
        if select.explain:
            text = engine.explain(select, self.store, self.indexer, range_method, full_scan,
                                  params)
            return [(line,) for line in text.splitlines()]
        # planned by the statement's shape: a repeated one (any values) skips every step
        # before the plan (query/prepare.py shape_of)
        rows, shape = engine.select_rows(select, self.store, self.indexer, range_method,
                                         full_scan, params)
        if raw:
            return rows
        schema = self.store.schema(select.table)
        if select.aggregate:
            return sqlexec.decode_keys(schema, select, rows)
        if shape is None:
            types = engine.types_of(engine.bind(select, params), self.store)
            decoders = None
        else:
            types, decoders = shape.types, shape.cell_decoders()
        if types:
            bad = codec.BadCells()
            rows = sqlexec.decode_rows(rows, types, bad, decoders)
            sqlexec.warn_bad_cells(bad)
        if sqlexec.text_key(schema):  # a VARCHAR rowkey is str, as in execute() and DB-API
            try:
                rows = [(key.decode("utf-8"), cells) for key, cells in rows]
            except UnicodeDecodeError:  # a key written by another client: bytes, alone
                rows = [(sqlexec.decode_key(schema, key), cells) for key, cells in rows]
        return rows

    def _parse_shape(self, text: str) -> Any:
        parsed = sqlexec.parse(self, text)
        if not isinstance(parsed, Select):
            raise errors.InvalidArgument("not a plain SELECT")
        return parsed

    def _parse_text(self, text: str) -> tuple:
        parsed = self._parse_shape(text)
        return parsed, parsed.names, parsed.labels, tuple(n for n, _ in parsed.bare)

    def explain(self, statement: str, params: Any = None, range_method: str = "auto",
                full_scan: bool = False) -> str:
        """The plan of a SELECT, DELETE or UPSERT ... SELECT as text (with or without the
        leading EXPLAIN); what `db.sql("EXPLAIN ...")` returns as rows, one per line."""
        if not isinstance(statement, str):
            raise errors.InvalidArgument("explain() takes the statement as a str")
        if not _EXPLAIN.match(statement):
            statement = "EXPLAIN " + statement
        result = self.execute(statement, params, range_method, full_scan)
        return result.text or ""

    def execute(self, statement: str, params: Any = None, range_method: str = "auto",
                full_scan: bool = False) -> "sqlexec.Result":
        """Run one SQL statement (as sql()) and return a hibase.sql.Result: `kind` ("select",
        "explain", "ddl", "dml"), `description` ([(label, type)]), `rows` (tuples in
        select-list order, values decoded by the declared types; SELECT *: the rowkey first
        under its PRIMARY KEY name or ROWKEY, then the declared columns in schema order, then
        undeclared ones by name, as bytes), `rowcount` and `bad_cells` (cells read as None
        because they do not parse as their declared type: also a CellTypeWarning, as sql()).
        hibase.dbapi's cursors run on it."""
        if not isinstance(statement, str):
            raise errors.InvalidArgument("execute() takes the statement as a str")
        result = sqlexec.execute(self, sqlexec.parse(self, statement), params, self._full,
                                 range_method, full_scan)
        if result.kind == "ddl":
            self._statements.clear()
            self._lifted.clear()
        sqlexec.warn_bad_cells(result.bad_cells)
        return result

    def execute_many(self, statement: str, seq_of_params: Any) -> "sqlexec.Result":
        """Run one statement once per parameter set; an UPSERT ... VALUES writes all the rows
        in one batch. Returns the Result with the total rowcount (rows of the last run)."""
        if not isinstance(statement, str):
            raise errors.InvalidArgument("execute_many() takes the statement as a str")
        result = sqlexec.execute_many(self, sqlexec.parse(self, statement), seq_of_params,
                                      self._full)
        if result.kind == "ddl":
            self._statements.clear()
            self._lifted.clear()
        return result

    def verify_index(self, table: str | bytes, name: str, repair: bool = False) -> dict:
        """Compare an index with the table; with repair, fix missing / extra entries."""
        return self.indexer.verify(self._full(table), name, repair)
