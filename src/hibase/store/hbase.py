"""The HBase backend: hibase's store interface over a real HBase, through its Thrift1 gateway
(happybase's connection pool and the `Hbase.thrift` IDL it ships).

    store = HBaseStore("thrift://host:9090?transport=framed&protocol=compact&timeout=5000")

Layout in HBase:
- a user table is an HBase table of the same name with the same families;
- the catalog (schemas with declared column types, index definitions, meta keys, the list of
  key-value tables) lives in the HBase table `hibase_meta` (family `m`, column `m:v`), rows
  `table/<name>`, `meta/<key>`, `kv/<name>`;
- a key-value table (global or local index, value table) `<name>` is the HBase table
  `hibase_kv<name>` (e.g. `hibase_kv__idx__flights`), one family `v` (1 version), column `v:v`
  (hbase_kv.py);
- local-index rows are keyed by the region layout recorded in meta `regions/<table>`, which
  follows HBase's splits (hbase_layout.py).

Write consistency across tables (Phoenix's strongly consistent global indexes, PHOENIX-5156):
index rows (global and local) and the data row are separate RPCs here, so `commit(prepared,
kv_writes)` runs three phases: (1) every touched index entry is written *unverified* (new
entries, and old ones about to go) with its user rowkey, value counts that grow are written; (2)
the data mutations; (3) new entries are rewritten *verified* with their covered values, old ones
deleted, counts that reach zero removed. A stored index value is `0x01 + covered values`
(verified) or `0x00 + msgpack([rowkey])` (unverified). Readers (kv_scan / kv_get of an index
table) hand every unverified entry to the index layer's resolver, which re-reads the data row:
the entry is used (with covered values from the data row) if the row still produces it, skipped
otherwise. Readers never repair (a repair racing a live writer could undo its phase 3);
`verify_index(repair=True)` sees the raw entries (`raw_index()`) and rewrites or deletes
leftovers. `faults.arm("index")` or `("data")` raises after that phase (tests kill a writer
between steps with it).

What Thrift1 cannot do, and how this backend copes:
- no region split call and no split notification: `split()` raises BackendError; HBase's own
  splits are found by comparing its regions with the recorded layout (`follow_splits`), and the
  split listeners then run with their writes ordered puts, layout switch, deletes;
- no alter table: a table's families are fixed at creation (local-index rows live in their
  own key-value table, so an index never needs a new family);
- no server-side coprocessors or row locks: index upkeep is client-side; `write_lock()` is a
  process-local lock, so writers in *different* processes to the same rows are not serialized
  (as Phoenix without its coprocessors); the verified protocol keeps readers right meanwhile;
- reads are HBase's (the server applies max versions, TTL, delete markers); `row_states`
  computes the value after pending mutations by merging them over the stored versions with
  hibase's merge (a later delete marker hides older-written cells; a put after a delete in the
  same batch stays visible, HBase 2's "new version behavior").
"""

from __future__ import annotations

import bisect
import json
import os
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator
from urllib.parse import parse_qs, urlsplit

from .. import errors
from . import cells as C
from .api import BaseStore, Capabilities
from .faults import Faults
from .base import Mutation, Region, SplitListener, now_ms
from .hbase_kv import (_FETCH_CHUNK, _META_COL, _SCAN_CHUNK, KV_PREFIX, META_TABLE,
                       UNVERIFIED, VERIFIED, HBaseKeyValueTables, is_index)
from .hbase_layout import Layouts
from .schema import FOREVER, TableSchema, split_column

__all__ = ["HBaseStore", "parse_url", "META_TABLE", "KV_PREFIX"]

# how long index definitions are trusted without asking HBase (parse_url's catalog_lease_ms)
DEFAULT_LEASE_MS = 1000


def parse_url(url: str) -> dict:
    """thrift://host[:port][?transport=buffered|framed&protocol=binary|compact&timeout=ms
    &pool_size=n&retries=n&region_check_ms=n&catalog_lease_ms=n&prefix=name] -> happybase
    connection options and ours (region_check_ms: how often local-index work asks HBase for its
    regions, 0 = always; catalog_lease_ms: how long index definitions read from the catalog are
    trusted before a query or write checks them again, one get; 0 = before every query and
    write; prefix: every HBase table of this store, the catalog included, is named
    `<prefix>_<table>`, so several hibase stores share one HBase without seeing each other)."""
    parts = urlsplit(url)
    if parts.scheme != "thrift":
        raise errors.InvalidArgument(f"not a thrift:// URL: {url!r}")
    if parts.path not in ("", "/"):
        raise errors.InvalidArgument(f"a thrift:// URL has no path, got {parts.path!r}")
    q = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    known = {"transport", "protocol", "timeout", "pool_size", "retries", "region_check_ms",
             "catalog_lease_ms", "prefix"}
    unknown = sorted(set(q) - known)
    if unknown:
        raise errors.InvalidArgument(f"unknown thrift:// option(s) {unknown}; known: "
                                     f"{sorted(known)}")
    transport = q.get("transport", "buffered")
    protocol = q.get("protocol", "binary")
    if transport not in ("buffered", "framed"):
        raise errors.InvalidArgument(f"transport must be buffered or framed, not {transport!r}")
    if protocol not in ("binary", "compact"):
        raise errors.InvalidArgument(f"protocol must be binary or compact, not {protocol!r}")
    try:
        timeout = int(q.get("timeout", "30000"))
        pool_size = int(q.get("pool_size", "8"))
        retries = int(q.get("retries", "3"))
        region_check_ms = int(q.get("region_check_ms", "1000"))
        catalog_lease_ms = int(q.get("catalog_lease_ms", str(DEFAULT_LEASE_MS)))
        port = parts.port or 9090
    except ValueError as exc:
        raise errors.InvalidArgument(f"bad thrift:// URL {url!r}: {exc}") from None
    if timeout <= 0 or pool_size < 1 or retries < 0 or region_check_ms < 0 or \
            catalog_lease_ms < 0:
        raise errors.InvalidArgument(
            "timeout and pool_size must be >= 1, retries, region_check_ms and "
            "catalog_lease_ms >= 0")
    prefix = q.get("prefix", "")
    if prefix and not prefix.replace("_", "").replace("-", "").replace(".", "").isalnum():
        raise errors.InvalidArgument(f"prefix must be letters, digits, _ - or ., not {prefix!r}")
    return {"host": parts.hostname or "127.0.0.1", "port": port, "transport": transport,
            "protocol": protocol, "timeout": timeout, "pool_size": pool_size,
            "retries": retries, "region_check_ms": region_check_ms,
            "catalog_lease_ms": catalog_lease_ms, "prefix": prefix}


# Thrift1 calls whose first argument is not a table name (the prefix is not added to it)
_NO_TABLE_ARG = frozenset({"getTableNames", "scannerGet", "scannerGetList", "scannerClose"})


def _start(region: Region) -> bytes:
    return region.start


class _HTable:
    """An open table: schema, families (`fams`, keyed like the embedded store's) and regions
    (asked from HBase on use)."""

    def __init__(self, store: "HBaseStore", schema: TableSchema):
        self.store = store
        self.schema = schema
        self.fams = {f: None for f in schema.families}

    @property
    def regions(self) -> list[Region]:
        return self.store.regions(self.schema.name)

    def region_of(self, row: bytes) -> Region:
        regions = self.regions
        i = bisect.bisect_right(regions, row, key=_start) - 1
        if i < 0:
            raise errors.BackendError(f"no region of {self.schema.name!r} holds {row!r}")
        return regions[i]


class HBaseStore(HBaseKeyValueTables, BaseStore):
    """hibase's store interface over HBase through Thrift1 (happybase)."""

    # many clients, regions split by HBase, index rows and data rows in separate calls, and
    # reads that see each row as of its own read
    capabilities = Capabilities(shared=True, follows_splits=True, verified_index_writes=True,
                                snapshot_reads=False)

    def __init__(self, url: str, *, create: bool = True, read_only: bool = False, **_: Any):
        import happybase  # imported here: the embedded store works without it
        import Hbase_thrift  # loaded by happybase

        self.path = url
        self.read_only = read_only
        self.opts = parse_url(url)
        self.T = Hbase_thrift
        self._lock = threading.RLock()
        self._split_listeners: list[SplitListener] = []
        self._tables: dict[str, _HTable] = {}
        self._kv: set[str] = set()
        self._meta: dict[bytes, bytes] = {}
        self._gen = b""
        self._closed = False
        self._raw = threading.local()
        # every Thrift call, by method (call_stats): what the round-trip budget is pinned on
        self._calls: dict[str, int] = {}
        self._calls_lock = threading.Lock()
        self.lease_s = self.opts["catalog_lease_ms"] / 1000
        self._checked_at = -1e18  # monotonic time of the last catalog generation check
        self.index_hooks: Any = None  # set by the index layer: row_of / resolve
        # tests stop a writer between its calls (store/faults.py); inert unless armed
        self.faults = Faults()
        self.retries = self.opts["retries"]
        self._last_auto = 0  # the highest timestamp prepare() gave a mutation
        self._after_delete = 0  # above the last timestamp prepare() gave a delete
        self.layouts = Layouts(self, self.opts["region_check_ms"] / 1000)
        o = self.opts
        self._prefix = (o["prefix"] + "_").encode() if o["prefix"] else b""
        try:
            self._pool = happybase.ConnectionPool(
                o["pool_size"], host=o["host"], port=o["port"], timeout=o["timeout"],
                transport=o["transport"], protocol=o["protocol"])
        except Exception as exc:
            raise errors.BackendUnavailable(
                f"cannot reach the HBase Thrift gateway at {o['host']}:{o['port']}: "
                f"{exc}") from None
        self._load_catalog(create)

    # -- RPC ---------------------------------------------------------------------------------
    def _call(self, method: str, *args: Any, retry: bool = True) -> Any:
        """One Thrift call on a pooled connection; transport errors are retried (every write
        of this store is idempotent: puts carry explicit timestamps), IDL errors mapped.
        retry=False: a transport error raises _Transport at once (scanner gets)."""
        from thriftpy2.transport import TTransportException

        if self._closed:
            raise errors.BackendUnavailable("the store is closed")
        T = self.T
        if self._prefix and method not in _NO_TABLE_ARG:
            args = (self._prefix + args[0], *args[1:])
        delay = 0.05
        for attempt in range(self.retries + 1):
            with self._calls_lock:
                self._calls[method] = self._calls.get(method, 0) + 1
            try:
                with self._pool.connection(timeout=self.opts["timeout"] / 1000) as conn:
                    return getattr(conn.client, method)(*args)
            except T.IllegalArgument as exc:
                raise errors.InvalidArgument(_one_line(exc.message)) from None
            except T.AlreadyExists as exc:
                raise errors.TableExists(exc.message) from None
            except T.IOError as exc:
                raise _map_io_error(_one_line(exc.message)) from None
            except (TTransportException, socket.error, EOFError) as exc:
                if not retry:
                    raise _Transport(str(exc)) from None
                if attempt == self.retries:
                    raise errors.BackendUnavailable(
                        f"HBase Thrift gateway {self.opts['host']}:{self.opts['port']}: "
                        f"{exc} (after {self.retries} retries)") from None
                time.sleep(delay)
                delay *= 2
            except Exception as exc:
                if type(exc).__name__ == "NoConnectionsAvailable":
                    raise errors.BackendUnavailable(str(exc)) from None
                raise

    def call_stats(self) -> dict[str, int]:
        """Thrift calls made so far by this store, by method (retries count again)."""
        with self._calls_lock:
            return dict(self._calls)

    def parallel(self, fn: Any, items: list) -> list:
        """fn(item) for every item, on the connection pool's connections at once (at most
        pool_size in flight), results in order: independent reads or writes overlap their
        round trips."""
        if len(items) <= 1:
            return [fn(x) for x in items]
        return list(_pool(self.opts["pool_size"]).map(fn, items))

    # -- catalog -----------------------------------------------------------------------------
    def _hbase_tables(self) -> set[str]:
        p = self._prefix
        return {n[len(p):].decode() for n in self._call("getTableNames") if n.startswith(p)}

    def _load_catalog(self, create: bool) -> None:
        if META_TABLE not in self._hbase_tables():
            if not create or self.read_only:
                raise errors.BackendUnavailable(
                    f"no hibase catalog ({META_TABLE}) in HBase at {self.path}")
            try:
                self._create_hbase_table(META_TABLE, {b"m": 1})
            except errors.TableExists:
                pass  # another client made it meanwhile
        for key, value in self._scan_raw(META_TABLE, None, None, [_META_COL]):
            v = value[_META_COL][1]
            if key.startswith(b"table/"):
                schema = TableSchema.from_json(json.loads(v))
                self._tables[schema.name] = _HTable(self, schema)
            elif key.startswith(b"kv/"):
                self._kv.add(key[3:].decode())
            elif key.startswith(b"meta/"):
                self._meta[key[5:]] = v
            elif key == b"gen":
                self._gen = v

    def _meta_put(self, key: bytes, value: bytes | None) -> None:
        M = self.T.Mutation
        if value is None:
            self._call("deleteAllRow", META_TABLE.encode(), key, {})
        else:
            self._call("mutateRow", META_TABLE.encode(), key,
                       [M(column=_META_COL, value=value, isDelete=False)], {})

    def _create_hbase_table(self, name: str, families: dict[bytes, Any]) -> None:
        CD = self.T.ColumnDescriptor
        cds = []
        for fam, fo in families.items():
            if isinstance(fo, int):
                cds.append(CD(name=fam + b":", maxVersions=fo))
                continue
            cds.append(CD(name=fam + b":", maxVersions=fo.max_versions,
                          compression=fo.compression, inMemory=fo.in_memory,
                          bloomFilterType=fo.bloom_filter_type,
                          bloomFilterVectorSize=fo.bloom_filter_vector_size,
                          bloomFilterNbHashes=fo.bloom_filter_nb_hashes,
                          blockCacheEnabled=fo.block_cache_enabled,
                          timeToLive=fo.time_to_live if fo.time_to_live != FOREVER else -1))
        self._call("createTable", name.encode(), cds)

    def _drop_hbase_table(self, name: str) -> None:
        try:
            if self._call("isTableEnabled", name.encode()):
                self._call("disableTable", name.encode())
            self._call("deleteTable", name.encode())
        except errors.TableNotFound:
            pass

    def table(self, name: str) -> _HTable:
        if self._closed:
            raise errors.BackendUnavailable("the store is closed")
        t = self._tables.get(name)
        if t is None:
            # another client may have created it since we opened
            raw = self._get_raw(META_TABLE, [b"table/" + name.encode()], [_META_COL])[0]
            if not raw:
                raise errors.TableNotFound(f"no table {name!r}")
            schema = TableSchema.from_json(json.loads(raw[_META_COL][1]))
            t = self._tables[name] = _HTable(self, schema)
        return t

    def tables(self, internal: bool = False) -> list[str]:
        """The catalog's tables, re-read (one scan): other clients create and drop tables too.
        HBase tables made outside hibase (no catalog entry, no declared types) are not listed."""
        if not self._closed:
            names = set()
            for key, value in self._scan_raw(META_TABLE, b"table/", b"table0", [_META_COL]):
                name = key[6:].decode()
                names.add(name)
                if name not in self._tables:
                    schema = TableSchema.from_json(json.loads(value[_META_COL][1]))
                    self._tables[name] = _HTable(self, schema)
            for name in set(self._tables) - names:
                del self._tables[name]
        return sorted(n for n in self._tables if internal or not n.startswith("__"))

    def schema(self, name: str) -> TableSchema:
        return self.table(name).schema

    def _check_writable(self) -> None:
        if self.read_only:
            raise errors.BackendError("the store was opened read-only")
        if self._closed:
            raise errors.BackendUnavailable("the store is closed")

    def create_table(self, schema: TableSchema) -> None:
        with self._lock:
            self._check_writable()
            if schema.name in self._tables or schema.name == META_TABLE or \
                    schema.name.startswith(KV_PREFIX):
                raise errors.TableExists(f"table {schema.name!r} already exists")
            self._create_hbase_table(schema.name, schema.families)
            self._meta_put(b"table/" + schema.name.encode(),
                           json.dumps(schema.to_json()).encode())
            self._tables[schema.name] = _HTable(self, schema)

    def save_schema(self, schema: TableSchema) -> None:
        """Persist a changed schema; the enabled flag is HBase's own (enable/disableTable)."""
        with self._lock:
            self._check_writable()
            t = self.table(schema.name)
            name = schema.name.encode()
            if bool(self._call("isTableEnabled", name)) != schema.enabled:
                self._call("enableTable" if schema.enabled else "disableTable", name)
            t.schema = schema
            self._meta_put(b"table/" + name, json.dumps(schema.to_json()).encode())

    def drop_table(self, name: str) -> None:
        with self._lock:
            self._check_writable()
            self.table(name)
            self._drop_hbase_table(name)
            self.layouts.forget(name)
            self._meta_put(b"table/" + name.encode(), None)
            del self._tables[name]

    def put_meta(self, key: bytes, value: bytes | None) -> None:
        with self._lock:
            self._check_writable()
            self._meta_put(b"meta/" + key, value)
            self._gen = os.urandom(8).hex().encode()
            self._meta_put(b"gen", self._gen)
            if value is None:
                self._meta.pop(key, None)
            else:
                self._meta[key] = value

    def meta_changed(self, force: bool = False) -> bool:
        """Whether another client changed the catalog's meta keys (index definitions) since
        this store last read them; if so they are re-read. One get of the `gen` row, which
        put_meta rewrites on every change, at most once per catalog lease (unless `force`):
        within the lease the definitions read last are trusted (catalog changes wait the
        lease out before they rely on every client seeing them: `wait_lease`)."""
        now = time.monotonic()
        if not force and now - self._checked_at < self.lease_s:
            return False
        self._checked_at = now
        got = self._get_raw(META_TABLE, [b"gen"], [_META_COL])[0]
        gen = got[_META_COL][1] if got else b""
        if gen == self._gen:
            return False
        self._reload_meta()
        self._gen = gen
        return True

    def _reload_meta(self) -> None:
        """Re-read every meta key (one scan), leaving the generation to meta_changed."""
        meta = {}
        for key, value in self._scan_raw(META_TABLE, b"meta/", b"meta0", [_META_COL]):
            meta[key[5:]] = value[_META_COL][1]
        self._meta = meta

    def wait_lease(self) -> None:
        """Sleep one catalog lease: after a catalog change, every other client has re-read
        the index definitions (or been told by a fresh check) by the time this returns."""
        if self.lease_s > 0:
            time.sleep(self.lease_s + 0.05)

    def meta_value(self, key: bytes) -> bytes | None:
        """One meta key as last read (meta_changed re-reads them)."""
        return self._meta.get(key)

    def meta_items(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        for key in sorted(self._meta):
            if key.startswith(prefix):
                yield key, self._meta[key]

    # -- raw reads ---------------------------------------------------------------------------
    @staticmethod
    def _thrift_columns(columns: list[bytes] | None) -> list[bytes] | None:
        """hibase column names -> Thrift's: a family is b"f" (b"f:" is the empty qualifier)."""
        if columns is None:
            return None
        out = []
        for col in columns:
            fam, qual = split_column(col)
            out.append(fam if not qual else col)
        return list(dict.fromkeys(out))

    @staticmethod
    def _cells(result: Any) -> dict[bytes, tuple[int, bytes]]:
        cols = result.columns
        if cols:
            return {c: (cell.timestamp, cell.value) for c, cell in cols.items()}
        if result.sortedColumns:
            return {tc.columnName: (tc.cell.timestamp, tc.cell.value)
                    for tc in result.sortedColumns}
        return {}

    def _get_raw(self, table: str, rows: list[bytes], columns: list[bytes] | None,
                 ts: int | None = None) -> list[dict[bytes, tuple[int, bytes]]]:
        """Newest cell (ts, value) per column of each row ({} if absent), in `rows` order."""
        if not rows:
            return []
        name = table.encode()
        cols = self._thrift_columns(columns)
        if ts is None:
            if cols is None:
                results = self._call("getRows", name, rows, {})
            else:
                results = self._call("getRowsWithColumns", name, rows, cols, {})
        else:
            results = self._call("getRowsWithColumnsTs", name, rows, cols or [], ts, {})
        by_row = {r.row: self._cells(r) for r in results}
        return [by_row.get(r, {}) for r in rows]

    def _scan_raw(self, table: str, start: bytes | None, stop: bytes | None,
                  columns: list[bytes] | None, ts: int | None = None, reverse: bool = False,
                  chunk: int = _SCAN_CHUNK) -> Iterator[tuple[bytes, dict]]:
        """(row, {column: (ts, value)}) in [start, stop) (reverse: from start down to stop),
        streamed from one scanner (scanner caching = `chunk` rows per scannerGetList, only the
        named columns): open + one get per chunk + close. A get is never retried on the same
        scanner (a lost answer would skip its rows): a chunk that fails on the transport opens
        a new scanner from where it was."""
        name = table.encode()
        cols = self._thrift_columns(columns)
        cursor, skip = start, None
        reopens = 0
        while True:
            scan = self.T.TScan(startRow=cursor or b"", stopRow=stop or b"", columns=cols,
                                caching=chunk, reversed=reverse or None, timestamp=ts)
            sid = self._call("scannerOpenWithScan", name, scan, {})
            broken = False
            try:
                while True:
                    want = chunk + (1 if skip is not None else 0)
                    try:
                        results = self._call("scannerGetList", sid, want, retry=False)
                    except _Transport:
                        broken = True  # reopen from the cursor (rows so far were yielded)
                        break
                    for r in results:
                        if skip is not None and r.row == skip:
                            continue
                        yield r.row, self._cells(r)
                    if len(results) < want:
                        return
                    last = results[-1].row
                    if reverse:
                        cursor, skip = last, last  # reversed start is inclusive: skip it
                    else:
                        cursor, skip = last + b"\x00", None
            finally:
                try:
                    self._call("scannerClose", sid, retry=not broken)
                except errors.HibaseError:
                    pass
            reopens += 1
            if reopens > self.retries:
                raise errors.BackendUnavailable(
                    f"HBase Thrift gateway {self.opts['host']}:{self.opts['port']}: scanner of "
                    f"{table!r} kept failing (after {self.retries} reopens)")

    # -- reads -------------------------------------------------------------------------------
    def _versions(self, table: str, row: bytes, columns: list[bytes], ts: int | None,
                  versions: int) -> dict[bytes, list]:
        """Every version (newest first, at most `versions`) of each named column."""
        out = {}
        name = table.encode()
        versions = min(versions, (1 << 31) - 1)  # an i32 in the IDL
        for col in columns:
            if ts is None:
                got = self._call("getVer", name, row, col, versions, {})
            else:
                got = self._call("getVerTs", name, row, col, ts, versions, {})
            if got:
                out[col] = sorted(((c.timestamp, c.value) for c in got), reverse=True)
        return out

    def read_row(self, table: str, row: bytes, columns: list[bytes] | None = None,
                 timestamp: int | None = None, versions: int = 1) -> dict[bytes, list]:
        """{b"f:q": [(ts, value), ...newest first]} of one row; {} when absent."""
        self.table(table)
        latest = self._get_raw(table, [row], columns, timestamp)[0]
        if versions <= 1 or not latest:
            return {c: [tv] for c, tv in latest.items()}
        return self._versions(table, row, list(latest), timestamp, versions)

    def read_latest(self, table: str, row: bytes, columns: list[bytes] | None = None,
                    with_ts: bool = True) -> dict:
        cells = self.read_latest_many(table, [row], columns)[0]
        return cells if with_ts else {c: tv[1] for c, tv in cells.items()}

    def read_latest_many(self, table: str, rows: list[bytes], columns: list[bytes] | None = None,
                         with_ts: bool = True) -> list[dict]:
        self.table(table)
        # one multi-get per chunk, the chunks in flight together on the connection pool
        out: list[dict] = []
        for got in self.parallel(lambda part: self._get_raw(table, part, columns),
                                 [rows[i:i + _FETCH_CHUNK]
                                  for i in range(0, len(rows), _FETCH_CHUNK)]):
            out += got
        return out if with_ts else [{c: tv[1] for c, tv in cells.items()} for cells in out]

    def scan_latest(self, table: str, start: bytes | None = None, stop: bytes | None = None,
                    columns: list[bytes] | None = None, reverse: bool = False,
                    with_ts: bool = True) -> Iterator[tuple[bytes, dict]]:
        self.table(table)
        for row, cells in self._scan_raw(table, start, stop, columns, None, reverse):
            if cells:
                yield row, (cells if with_ts else {c: tv[1] for c, tv in cells.items()})

    def scan(self, table: str, start: bytes | None = None, stop: bytes | None = None,
             columns: list[bytes] | None = None, timestamp: int | None = None,
             versions: int = 1, reverse: bool = False) -> Iterator[tuple[bytes, dict]]:
        self.table(table)
        for row, cells in self._scan_raw(table, start, stop, columns, timestamp, reverse):
            if not cells:
                continue
            if versions > 1:  # Thrift1 scanners return the newest version only
                yield row, self._versions(table, row, list(cells), timestamp, versions)
            else:
                yield row, {c: [tv] for c, tv in cells.items()}

    # -- writes ------------------------------------------------------------------------------
    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """A process-local lock: read-modify-writes of this process are atomic with respect to
        each other. Thrift1 has no row locks, so writers in other processes are not serialized
        (as Phoenix without server-side coprocessors); the verified protocol protects readers."""
        with self._lock:
            yield

    def apply(self, mutations: list[Mutation]) -> None:
        if mutations:
            with self._lock:
                self.commit(self.prepare(mutations))

    def prepare(self, mutations: list[Mutation]) -> list[tuple[Any, Mutation, list]]:
        """(table, mutation with its timestamp fixed, segments): segments in the embedded
        store's format, so the layers above compute before / after states the same way."""
        # Real HBase masks every put whose timestamp is not above a delete marker's, even one
        # written after the marker, and its Thrift1 server applies a batch's puts before its
        # deletes. So deletes without a timestamp are sent with one at or above every
        # timestamp this store gave so far, and later puts get one above it: the order of the
        # calls then decides, as the segments below (and the embedded store) assume.
        now = now_ms()
        out = []
        for m in mutations:
            t = self.table(m.table)
            if m.kind == "put":
                if m.ts is None:
                    ts = max(now, self._after_delete)
                    self._last_auto = max(self._last_auto, ts)
                else:
                    ts = m.ts
                m = m._replace(ts=ts)
                segments = list(C.mutation_segments(t.fams, m, ts))
            else:
                segments = list(C.mutation_segments(t.fams, m, m.ts))
                if m.ts is None:
                    ts = max(now, self._last_auto)
                    m = m._replace(ts=ts)
                    self._last_auto, self._after_delete = ts, ts + 1
            out.append((t, m, segments))
        return out

    def row_states(self, table: str, row: bytes, columns: list[bytes],
                   pending: dict[bytes, list[bytes]]) -> tuple[dict, dict]:
        return self.row_states_many(table, [(row, pending)], columns)[0]

    def row_states_many(self, table: str, items: list[tuple[bytes, dict[bytes, list[bytes]]]],
                        columns: list[bytes] | None) -> list[tuple[dict, dict]]:
        """Newest values of `columns` (None: every column) before and after pending segments
        (per family, newest first): the stored versions are read from HBase (newest only,
        unless a pending delete names a timestamp: then every version, which that delete may
        uncover), folded into one segment, and the pending segments merged over it."""
        by_fam: dict[bytes, set[bytes] | None] = {}
        if columns is None:
            by_fam = dict.fromkeys(self.schema(table).families)
        for col in columns or ():
            by_fam.setdefault(col[:col.index(b":")], set()).add(col)  # type: ignore[union-attr]
        rows = [row for row, _ in items]
        stored = self.read_latest_many(table, rows, columns)
        out = []
        for (row, pending), latest in zip(items, stored):
            before = dict(latest)
            if _deletes_with_ts(pending):
                cells = {c: vs for c, vs in self._versions(
                    table, row, list(latest) if columns is None else columns, None,
                    1 << 30).items()}
            else:
                cells = {c: [tv] for c, tv in latest.items()}
            after: dict = {}
            for fam, cols in by_fam.items():
                wanted = None if cols is None else frozenset(cols)
                mine = {c: vs for c, vs in cells.items() if (
                    c in wanted if wanted is not None else c.startswith(fam + b":"))}
                base = C.fold(mine, 1 << 30, -1) if mine else None
                segs = list(pending.get(fam, ())) + ([base] if base else [])
                if segs:
                    after.update(C.merge_latest(segs, wanted))
            out.append((before, after))
        return out

    def _send(self, prepared: list[tuple[Any, Mutation, list]]) -> None:
        """Data mutations, in order; consecutive ones of one kind, table and timestamp go in
        one mutateRows(Ts) call."""
        T = self.T
        groups: list[tuple[tuple, list]] = []
        for t, m, _ in prepared:
            key = (m.kind, m.table, m.ts)
            if groups and groups[-1][0] == key:
                groups[-1][1].append((t, m))
            else:
                groups.append((key, [(t, m)]))
        for (kind, table, ts), ms in groups:
            batches = []
            for t, m in ms:
                if kind == "put":
                    muts = [T.Mutation(column=c, value=v, isDelete=False)
                            for c, v in m.data.items()]
                else:
                    targets = list(t.schema.families) if m.data is None else \
                        self._thrift_columns(m.data)
                    muts = [T.Mutation(column=c, isDelete=True) for c in targets]
                batches.append(T.BatchMutation(row=m.row, mutations=muts))
            name = table.encode()
            parts = [batches[i:i + _SCAN_CHUNK] for i in range(0, len(batches), _SCAN_CHUNK)]

            def send(part: list, name: bytes = name, ts: int | None = ts) -> None:
                if ts is None:
                    self._call("mutateRows", name, part, {})
                else:
                    self._call("mutateRowsTs", name, part, ts, {})

            if len({b.row for b in batches}) == len(batches):
                self.parallel(send, parts)  # distinct rows: chunks in flight together
            else:
                for part in parts:  # a row twice at one timestamp: the later must land last
                    send(part)

    def commit(self, prepared: list[tuple[Any, Mutation, list]],
               kv_writes: list[tuple[str, bytes, bytes | None]] = ()) -> None:  # type: ignore[assignment]
        """Write data mutations and key-value writes. With data mutations, index entries
        follow the verified protocol (module docstring); without, writes go straight."""
        with self._lock:
            self._check_writable()
            if not prepared:
                self._kv_write([(n, k, (VERIFIED + v if v is not None and is_index(n) else v))
                                for n, k, v in kv_writes])
                return
            phase1, phase3 = [], []
            hooks = self.index_hooks
            for name, key, value in kv_writes:
                if is_index(name):
                    row = hooks.row_of(name, key) if hooks is not None else None
                    if row is None:
                        raise errors.BackendError(
                            f"cannot tell the rowkey of index entry {key!r} of {name!r}")
                    phase1.append((name, key, UNVERIFIED + C.pack([row])))
                    phase3.append((name, key, None if value is None else VERIFIED + value))
                elif value is None:
                    phase3.append((name, key, None))  # counts reaching 0 go last
                else:
                    phase1.append((name, key, value))
            self._kv_write(phase1)
            self.faults.reached("index")
            self._send(prepared)
            self.faults.reached("data")
            self._kv_write(phase3)

    # -- regions, maintenance ----------------------------------------------------------------
    def regions(self, table: str) -> list[Region]:
        """The region layout local indexes follow (hbase_layout.py): HBase's regions as last
        followed. `follow_splits` catches up with splits HBase made since."""
        self.table(table)
        return self.layouts.regions(table)

    def follow_splits(self, table: str, force: bool = False) -> int:
        """Apply the splits HBase made since the layout was recorded (throttled by
        region_check_ms unless `force`): local rows move as on the embedded store."""
        self.table(table)
        return self.layouts.follow(table, force)

    def forget_layout(self, table: str) -> None:
        """The table's last local index is gone: stop recording a layout for it."""
        with self._lock:
            self._check_writable()
            self.layouts.forget(table)

    def layout_token(self, table: str) -> bytes:
        """The recorded layout of `table` as stored now (one get; b"" when none): equal tokens
        before and after a read mean no split was applied in between, by any client."""
        stored = self.layouts.stored(table)
        if stored != (self._meta.get(b"regions/" + table.encode()) or b""):
            # another client switched the layout within this client's catalog lease: read
            # it now, so the scan this token guards follows the layout HBase holds
            self._reload_meta()
        return stored

    def add_split_listener(self, listener: SplitListener) -> None:
        """Run `listener(table, parent, left, right, batch)` for every split follow_splits
        finds; its batch writes are applied as puts, layout switch, deletes."""
        self._split_listeners.append(listener)

    def split(self, table: str, row: bytes | None = None) -> bool:
        raise errors.BackendError(
            "HBase's Thrift1 gateway has no split call: split regions with the HBase shell "
            f"(split '{table}'{', ' + repr(row.decode(errors='replace')) if row else ''}) "
            "or let HBase split them by size")

    def compact(self, table: str) -> int:
        """HBase's major compaction (asynchronous in HBase); returns 0 (rows folded unknown)."""
        self._check_writable()
        self.table(table)
        self._call("majorCompact", table.encode())
        return 0

    def flush(self) -> None:
        """Nothing to do: HBase flushes its MemStores itself."""

    def disk_size(self) -> int:
        """Unknown through Thrift1 (HBase's own metrics have it): 0."""
        return 0

    def family_handle(self, table: str, family: bytes) -> Any:
        raise errors.BackendError("family handles (split batches) do not exist on HBase")

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            q = self._pool._queue
            while True:
                try:
                    conn = q.get_nowait()
                except Exception:
                    break
                try:
                    conn.close()
                except Exception:
                    pass


class _Transport(errors.BackendUnavailable):
    """A transport error of a call made with retry=False."""


_POOLS: dict[int, Any] = {}
_POOLS_LOCK = threading.Lock()


def _pool(size: int) -> Any:
    """A thread pool per pool size, shared by the stores of a process (threads are reused,
    the Thrift connections they use come from each store's own pool)."""
    from concurrent.futures import ThreadPoolExecutor

    with _POOLS_LOCK:
        pool = _POOLS.get(size)
        if pool is None:
            pool = _POOLS[size] = ThreadPoolExecutor(max_workers=size,
                                                     thread_name_prefix="hibase-hbase")
        return pool


def _deletes_with_ts(pending: dict[bytes, list[bytes]]) -> bool:
    for segs in pending.values():
        for raw in segs:
            seg = C.unpack(raw)
            if seg[0] in (C.DELETE_COLUMNS, C.DELETE_FAMILY) and seg[1] != C.ALL_VERSIONS:
                return True
    return False


def _one_line(message: Any) -> str:
    """A Thrift error's message as one line: real HBase sends the Java stack trace too."""
    if isinstance(message, bytes):  # thriftpy2 hands the messages over as bytes
        message = message.decode("utf-8", "replace")
    return (message or "").strip().split("\n", 1)[0].strip()


def _map_io_error(message: str | bytes) -> errors.HibaseError:
    message = _one_line(message)
    msg = message or "HBase error"
    low = msg.lower()
    if "no table" in low or "tablenotfound" in low or "not found" in low and "table" in low:
        return errors.TableNotFound(msg)
    if "disabled" in low:
        return errors.TableDisabled(msg)
    if "already exists" in low:
        return errors.TableExists(msg)
    if "family" in low and ("no " in low or "not" in low or "unknown" in low):
        return errors.FamilyNotFound(msg)
    return errors.BackendError(msg)
