"""The HBase backend: hibase's store interface over a real HBase, through its Thrift1 gateway
(happybase's connection pool and the `Hbase.thrift` IDL it ships).

    store = HBaseStore("thrift://host:9090?transport=framed&protocol=compact&timeout=5000")

Layout in HBase:
- a user table is an HBase table of the same name with the same families;
- the catalog (schemas with declared column types, index definitions, meta keys, the list of
  key-value tables) lives in the HBase table `hibase_meta` (family `m`, column `m:v`), rows
  `table/<name>`, `meta/<key>`, `kv/<name>`;
- a key-value table (index entries, counts, routing filters: the index layer's) `<name>` is
  the HBase table `hibase_kv<name>`, family `v` (1 version), column `v:v`, values as written;
  a table of counts (`create_kv(name, counts_in=home)`) lives in family `c` of its home's
  HBase table, one cell per writer, added up on read (kv.py);
- local-index rows are keyed by the region layout recorded in meta `regions/<table>`, which
  follows HBase's splits (layout.py).

Write consistency across tables: key-value writes and data rows are separate RPCs here
(`Capabilities.verified_index_writes`), so the index layer commits a write's index entries and
data rows in phases, Phoenix's verified / unverified protocol (index/commit.py), and resolves
unverified entries on read (index/verified.py); `commit(staged, kv_writes)` writes the
key-value writes, then the data rows. `faults.arm("index")` or `("data")` makes the index
layer's writer stop after that phase (tests kill a writer between steps with it).

What Thrift1 cannot do, and how this backend copes:
- no region split call and no split notification: `split()` raises BackendError; HBase's own
  splits are found by comparing its regions with the recorded layout (`follow_splits`), and the
  split listeners then run with their writes ordered puts, layout switch, deletes;
- no alter table: a table's families are fixed at creation (local-index rows live in their
  own key-value table, so an index never needs a new family);
- no server-side coprocessors or row locks: index upkeep is client-side; `write_lock()` is a
  process-local lock, so writers in *different* processes to the same rows are not serialized
  (as Phoenix without its coprocessors); the verified protocol keeps readers right meanwhile;
- reads are HBase's (the server applies max versions, TTL, delete markers); `stage(...).rows`
  computes the value after pending mutations by merging them over the stored versions with
  hibase's merge (a later delete marker hides older-written cells; a put after a delete in the
  same batch stays visible, HBase 2's "new version behavior").
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import threading
import time
from typing import Any, Iterator

from ... import errors
from ..api import BaseStore, Capabilities
from ..faults import Faults
from ..base import Region, SplitListener
from .kv import (_FETCH_CHUNK, META_COL, KV_PREFIX, META_TABLE, HBaseKeyValueTables)
from .layout import Layouts
from . import pushed
from ..schema import FOREVER, TableSchema

from .gateway import client_tls_context, tls_pool
from .rpc import Rpc
from .thrift2 import Thrift2Pool, create_presplit
from .url import parse_url
from .writes import Writes

__all__ = ["HBaseStore"]


def _start(region: Region) -> bytes:
    return region.start


class _HTable:
    """An open table: its schema, and its regions
    (asked from HBase on use)."""

    def __init__(self, store: "HBaseStore", schema: TableSchema):
        self.store = store
        self.schema = schema

    @property
    def regions(self) -> list[Region]:
        return self.store.regions(self.schema.name)

    def region_of(self, row: bytes) -> Region:
        regions = self.regions
        i = bisect.bisect_right(regions, row, key=_start) - 1
        if i < 0:
            raise errors.BackendError(f"no region of {self.schema.name!r} holds {row!r}")
        return regions[i]


def _text(value: str | bytes) -> str:
    """A Thrift string field (bytes: responses are not decoded) as str."""
    return value.decode() if isinstance(value, bytes) else value


class HBaseStore(HBaseKeyValueTables, Writes, BaseStore):
    """hibase's store interface over HBase through Thrift1 (happybase)."""

    # many clients, regions split by HBase, index rows and data rows in separate calls, and
    # reads that see each row as of its own read
    capabilities = Capabilities(shared=True, follows_splits=True, verified_index_writes=True,
                                snapshot_reads=False, server_index_upkeep=True,
                                local_files=False, pushed_scans=True)
    kind = "hbase"

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
        self._server_kept: set[str] = set()  # tables hibase's coprocessor runs on (seen)
        self._pushdown: dict[str, bool] = {}  # table -> does the ScanObserver run on it
        # per table: (monotonic time of the last check, the version row's value then)
        self._index_versions: dict[str, tuple[float, bytes]] = {}
        self._kv: dict[str, str | None] = {}
        self._meta: dict[bytes, bytes] = {}
        self._gen = b""
        self._closed = False
        self.lease_s = self.opts["catalog_lease_ms"] / 1000
        self._checked_at = -1e18  # monotonic time of the last catalog generation check
        # tests stop a writer between its calls (store/faults.py); inert unless armed
        self.faults = Faults()
        self._last_auto = 0  # the highest timestamp prepare() gave a mutation
        self._after_delete = 0  # above the last timestamp prepare() gave a delete
        self.layouts = Layouts(self, self.opts["region_check_ms"] / 1000)
        o = self.opts
        prefix = (o["prefix"] + "_").encode() if o["prefix"] else b""
        self._tls = None
        try:
            if o["tls"]:  # thrifts:// (hibase serve --tls-cert, or HBase's thrift -ssl)
                self._tls = client_tls_context(o["tls_ca"])
                pool = tls_pool(
                    o["pool_size"], self._tls, host=o["host"], port=o["port"],
                    timeout=o["timeout"], transport=o["transport"], protocol=o["protocol"])
            else:
                pool = happybase.ConnectionPool(
                    o["pool_size"], host=o["host"], port=o["port"], timeout=o["timeout"],
                    transport=o["transport"], protocol=o["protocol"])
        except Exception as exc:
            raise errors.BackendUnavailable(
                f"cannot reach the HBase Thrift gateway at {o['host']}:{o['port']}"
                f"{' over TLS' if o['tls'] else ''}: {exc}") from None
        t2 = None if o["thrift2_port"] is None else Thrift2Pool(
            o["host"], o["thrift2_port"], o["pool_size"], o["timeout"], o["transport"],
            o["protocol"], ssl_context=self._tls)
        # every call to HBase goes through this one object (counted, retried, errors mapped)
        self.rpc = Rpc(o, Hbase_thrift, pool, t2, prefix)
        self._new_writer()  # this store's own value-count cell (kv.py)
        self._load_catalog(create)

    # -- catalog -----------------------------------------------------------------------------
    def _hbase_tables(self) -> set[str]:
        p = self.rpc.prefix
        return {n[len(p):].decode() for n in self.rpc.call("getTableNames") if n.startswith(p)}

    def _load_catalog(self, create: bool) -> None:
        hbase_tables = self._hbase_tables()
        if META_TABLE not in hbase_tables:
            if not create or self.read_only:
                raise errors.BackendUnavailable(self._no_catalog_message(hbase_tables))
            try:
                self._create_hbase_table(META_TABLE, {b"m": 1})
            except errors.TableExists:
                pass  # another client made it meanwhile
        # all but the coprocessor's rows inc/<region> (one per region it ever opened)
        rows = itertools.chain(self.rpc.scan_raw(META_TABLE, None, b"inc/", [META_COL]),
                               self.rpc.scan_raw(META_TABLE, b"inc0", None, [META_COL]))
        for key, value in rows:
            v = value[META_COL][1]
            if key.startswith(b"table/"):
                schema = TableSchema.from_json(json.loads(v))
                self._tables[schema.name] = _HTable(self, schema)
            elif key.startswith(b"kv/"):
                self._kv[key[3:].decode()] = v.decode() or None
            elif key.startswith(b"meta/"):
                self._meta[key[5:]] = v
            elif key == b"gen":
                self._gen = v

    def _no_catalog_message(self, hbase_tables: set[str]) -> str:
        """Why a store cannot open without a catalog, and what to do: an HBase with tables
        of its own (`hbase_tables`) needs one of them recorded first."""
        found = sorted(hbase_tables)
        msg = f"no hibase catalog ({META_TABLE}) in HBase at {self.path}: hibase has not " \
            "recorded a table there yet"
        if found:
            shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
            msg += (f". HBase holds {len(found)} table(s) ({shown}): record one with "
                    f"`hibase create-table URL TABLE -f FAMILY ... --existing`, which makes the "
                    f"catalog")
        return msg

    def _meta_put(self, key: bytes, value: bytes | None) -> None:
        M = self.T.Mutation
        if value is None:
            self.rpc.call("deleteAllRow", META_TABLE.encode(), key, {})
        else:
            self.rpc.call("mutateRow", META_TABLE.encode(), key,
                       [M(column=META_COL, value=value, isDelete=False)], {})

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
        self.rpc.call("createTable", name.encode(), cds)

    def _drop_hbase_table(self, name: str) -> None:
        try:
            if self.rpc.call("isTableEnabled", name.encode()):
                self.rpc.call("disableTable", name.encode())
            self.rpc.call("deleteTable", name.encode())
        except errors.TableNotFound:
            pass

    def table(self, name: str) -> _HTable:
        if self._closed:
            raise errors.BackendUnavailable("the store is closed")
        t = self._tables.get(name)
        if t is None:
            # another client may have created it since we opened
            raw = self.rpc.get_raw(META_TABLE, [b"table/" + name.encode()], [META_COL])[0]
            if not raw:
                if name in self._hbase_tables():  # one more call, on the error path only
                    raise errors.TableNotFound(
                        f"no table {name!r} in hibase's catalog, but HBase holds a table "
                        f"{name!r}: record it (its families, rowkey and column types) with "
                        f"`hibase create-table URL {name} -f FAMILY ... --existing` "
                        f"(Connection.create_table(..., existing=True))")
                raise errors.TableNotFound(f"no table {name!r}")
            schema = TableSchema.from_json(json.loads(raw[META_COL][1]))
            t = self._tables[name] = _HTable(self, schema)
        return t

    def region_of(self, table: str, row: bytes) -> Region:
        """The region of `table` holding `row` (in the recorded layout)."""
        return self.table(table).region_of(row)

    def tables(self, internal: bool = False) -> list[str]:
        """The catalog's tables, re-read (one scan): other clients create and drop tables too.
        HBase tables made outside hibase (no catalog entry, no declared types) are not listed."""
        if not self._closed:
            names = set()
            for key, value in self.rpc.scan_raw(META_TABLE, b"table/", b"table0", [META_COL]):
                name = key[6:].decode()
                names.add(name)
                if name not in self._tables:
                    schema = TableSchema.from_json(json.loads(value[META_COL][1]))
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
            if schema.salt_buckets > 1:  # pre-split: a region per salt bucket
                create_presplit(self, schema.name, schema.families,
                                [bytes((b,)) for b in range(1, schema.salt_buckets)])
            else:
                self._create_hbase_table(schema.name, schema.families)
            self._meta_put(b"table/" + schema.name.encode(),
                           json.dumps(schema.to_json()).encode())
            self._tables[schema.name] = _HTable(self, schema)

    def existing_families(self, name: str) -> dict[bytes, dict[str, Any]]:
        """The column families of HBase table `name` with their options, read from HBase
        (getColumnDescriptors); TableNotFound if HBase has no such table."""
        if name == META_TABLE or name.startswith(KV_PREFIX):
            raise errors.InvalidArgument(f"{name!r} is one of hibase's own tables")
        if name not in self._hbase_tables():
            raise errors.TableNotFound(f"HBase has no table {name!r}")
        out: dict[bytes, dict[str, Any]] = {}
        for fam, cd in self.rpc.call("getColumnDescriptors", name.encode()).items():
            out[fam.rstrip(b":")] = {
                "max_versions": cd.maxVersions, "compression": _text(cd.compression).upper(),
                "in_memory": bool(cd.inMemory), "bloom_filter_type": _text(cd.bloomFilterType),
                "bloom_filter_vector_size": cd.bloomFilterVectorSize,
                "bloom_filter_nb_hashes": cd.bloomFilterNbHashes,
                "block_cache_enabled": bool(cd.blockCacheEnabled),
                "time_to_live": cd.timeToLive}
        return out

    def record_table(self, schema: TableSchema) -> None:
        """Add an HBase table hibase did not create to the catalog; its rows stay untouched."""
        with self._lock:
            self._check_writable()
            if schema.name in self._tables or self.rpc.get_raw(
                    META_TABLE, [b"table/" + schema.name.encode()], [META_COL])[0]:
                raise errors.TableExists(f"table {schema.name!r} is already a hibase table")
            self._meta_put(b"table/" + schema.name.encode(),
                           json.dumps(schema.to_json()).encode())
            self._tables[schema.name] = _HTable(self, schema)

    def forget_table(self, name: str) -> None:
        with self._lock:
            self._check_writable()
            self.table(name)
            self._unrecord(name, self._incarnation_rows(name))  # the HBase table stays

    def save_schema(self, schema: TableSchema) -> None:
        """Persist a changed schema; the enabled flag is HBase's own (enable/disableTable)."""
        with self._lock:
            self._check_writable()
            t = self.table(schema.name)
            name = schema.name.encode()
            if bool(self.rpc.call("isTableEnabled", name)) != schema.enabled:
                self.rpc.call("enableTable" if schema.enabled else "disableTable", name)
            t.schema = schema
            self._meta_put(b"table/" + name, json.dumps(schema.to_json()).encode())

    def drop_table(self, name: str) -> None:
        with self._lock:
            self._check_writable()
            self.table(name)
            incarnations = self._incarnation_rows(name)
            self._drop_hbase_table(name)
            self._unrecord(name, incarnations)  # after the drop: see _unrecord

    def _unrecord(self, name: str, incarnations: list[bytes]) -> None:
        """Everything the catalog and this store hold of table `name`: its row, the
        coprocessor's marker and version rows (a table made again under this name may be one it
        does not run on) and its regions' rows inc/<region> (read before a drop, deleted after
        it: a region's clean close writes its mark there)."""
        self.layouts.forget(name)
        for row in (b"copro/" + name.encode(), b"ver/" + name.encode(), *incarnations):
            self._meta_put(row, None)
        self._server_kept.discard(name)
        self._index_versions.pop(name, None)
        self._meta_put(b"table/" + name.encode(), None)
        self._tables.pop(name, None)

    def _incarnation_rows(self, name: str) -> list[bytes]:
        """The catalog rows inc/<encoded region name> of the table's regions, when the
        coprocessor ran on it (its marker row copro/<table> exists)."""
        if not self.rpc.get_raw(META_TABLE, [b"copro/" + name.encode()], [META_COL])[0]:
            return []
        regions = self.rpc.call("getTableRegions", name.encode())
        # a region's name is table,start,id.<encoded name>.
        return [b"inc/" + r.name.split(b".")[-2] for r in regions]

    def server_upkeep(self, table: str) -> bool:
        """Whether hibase's region-server coprocessor (hibase.coprocessor) runs on
        `table`, so it can keep the table's indexes. Its regions write the marker row
        `copro/<table>` into the catalog when they first meet the table; a one-row get
        carrying the attribute hibase.probe makes a region look now. Two calls, asked when an
        index is made (the answer is kept in the index definition); False when the URL says
        server_upkeep=0."""
        if not self.opts["server_upkeep"]:
            return False
        if table in self._server_kept:
            return True
        self.table(table)
        try:
            self.rpc.call("getRowWithColumns", table.encode(), b"\x00hibase-probe", [],
                       {b"hibase.probe": b"1"})
        except errors.HibaseError:
            return False
        got = self.rpc.get_raw(META_TABLE, [b"copro/" + table.encode()], [META_COL])[0]
        if not got:
            return False
        self._server_kept.add(table)
        return True

    def scan_pushdown(self, table: str) -> bool:
        """Whether hibase's ScanObserver runs on `table`'s regions, so filters, partial
        aggregates and top-k run there (pushed.probe: one Thrift2 scan of an empty range,
        asked once per table and store; False without a Thrift2 server or with
        scan_pushdown=0 in the URL)."""
        if not self.opts["scan_pushdown"] or self.rpc.t2 is None:
            return False
        known = self._pushdown.get(table)
        if known is None:
            fams = list(self.table(table).schema.families) or [b"f"]
            known = self._pushdown[table] = pushed.probe(self, table, fams[0])
        return known

    def pushed_scan(self, table: str, work: bytes, columns: list[bytes] | None,
                    first_key_only: bool = False) -> tuple[int, list[tuple[bytes, dict]]]:
        """Run `work` (query/pushdown.py's JSON) in every region of `table`: (regions, the
        rows they returned, in key order)."""
        self.table(table)
        return pushed.run(self, table, work, columns, first_key_only)

    def drain_server_writes(self, table: str) -> None:
        """A get carrying the attribute hibase.drain on each of `table`'s regions (HBase's,
        as they are now): each returns once every write batch its coprocessor began before it
        has finished, and later batches read the index definitions afresh. A rebuild of a
        server-kept index drains after making it stale (no batch that read it as kept writes
        after the clear) and after making it building (every write that did not keep it has
        landed before the build reads rows); a catalog lease alone does not cover a batch
        still in flight (issue 37 item 5)."""
        self.table(table)
        for r in self.layouts.live(table):
            self.rpc.call("getRowWithColumns", table.encode(), r.start or b"\x00", [],
                          {b"hibase.drain": b"1"})

    def index_version(self, table: str, max_age_s: float = 0.0) -> bytes:
        """The write version of `table`'s index sets: the catalog row `ver/<table>` (random
        bytes), which hibase's coprocessor rewrites after every write batch that changed the
        indexes it keeps, before the batch is acknowledged (and a client after each write
        that changed the indexes it keeps: bump_index_version). One get, unless a version read less than
        `max_age_s` ago is at hand (a user's opt-in bounded staleness: cache_staleness_ms).
        Hot-cache sets of those indexes are stored under it and answer only while it holds
        (cache/backend.py, tags), so no reader trusts a set from before a write it could see."""
        if max_age_s > 0:
            last = self._index_versions.get(table)
            if last is not None and time.monotonic() - last[0] < max_age_s:
                return last[1]
        now = time.monotonic()  # taken before the read: the version is at least this fresh
        got = self.rpc.get_raw(META_TABLE, [b"ver/" + table.encode()], [META_COL])[0]
        version = got[META_COL][1] if got else b""
        self._index_versions[table] = (now, version)
        return version

    def bump_index_version(self, table: str) -> None:
        """This client changed index sets of `table` that other processes may have cached:
        rewrite `ver/<table>` (one put), after the changes landed."""
        self._check_writable()
        self._meta_put(b"ver/" + table.encode(), os.urandom(8))
        self._index_versions.pop(table, None)

    def forget_index_version(self, table: str) -> None:
        """This client wrote `table` (the coprocessor moved its version): the next
        index_version reads it again, whatever staleness was allowed."""
        self._index_versions.pop(table, None)

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
        got = self.rpc.get_raw(META_TABLE, [b"gen"], [META_COL])[0]
        gen = got[META_COL][1] if got else b""
        if gen == self._gen:
            return False
        self._reload_meta()
        self._gen = gen
        # an index may have been dropped and made again, its counts with it: what this
        # store's count cell held is unknown now (kv.py)
        self._new_writer()
        return True

    def _reload_meta(self) -> None:
        """Re-read every meta key (one scan), leaving the generation to meta_changed."""
        meta = {}
        for key, value in self.rpc.scan_raw(META_TABLE, b"meta/", b"meta0", [META_COL]):
            meta[key[5:]] = value[META_COL][1]
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

    # -- reads -------------------------------------------------------------------------------
    def _versions(self, table: str, row: bytes, columns: list[bytes], ts: int | None,
                  versions: int) -> dict[bytes, list]:
        """Every version (newest first, at most `versions`) of each named column."""
        out = {}
        name = table.encode()
        versions = min(versions, (1 << 31) - 1)  # an i32 in the IDL
        for col in columns:
            if ts is None:
                got = self.rpc.call("getVer", name, row, col, versions, {})
            else:
                got = self.rpc.call("getVerTs", name, row, col, ts, versions, {})
            if got:
                out[col] = sorted(((c.timestamp, c.value) for c in got), reverse=True)
        return out

    def read_row(self, table: str, row: bytes, columns: list[bytes] | None = None,
                 timestamp: int | None = None, versions: int = 1) -> dict[bytes, list]:
        """{b"f:q": [(ts, value), ...newest first]} of one row; {} when absent."""
        self.table(table)
        latest = self.rpc.get_raw(table, [row], columns, timestamp)[0]
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
        for got in self.rpc.parallel(lambda part: self.rpc.get_raw(table, part, columns),
                                 [rows[i:i + _FETCH_CHUNK]
                                  for i in range(0, len(rows), _FETCH_CHUNK)]):
            out += got
        return out if with_ts else [{c: tv[1] for c, tv in cells.items()} for cells in out]

    def scan_latest(self, table: str, start: bytes | None = None, stop: bytes | None = None,
                    columns: list[bytes] | None = None, reverse: bool = False,
                    with_ts: bool = True) -> Iterator[tuple[bytes, dict]]:
        self.table(table)
        for row, cells in self.rpc.scan_raw(table, start, stop, columns, None, reverse):
            if cells:
                yield row, (cells if with_ts else {c: tv[1] for c, tv in cells.items()})

    def scan(self, table: str, start: bytes | None = None, stop: bytes | None = None,
             columns: list[bytes] | None = None, timestamp: int | None = None,
             versions: int = 1, reverse: bool = False) -> Iterator[tuple[bytes, dict]]:
        self.table(table)
        for row, cells in self.rpc.scan_raw(table, start, stop, columns, timestamp, reverse):
            if not cells:
                continue
            if versions > 1:  # Thrift1 scanners return the newest version only
                yield row, self._versions(table, row, list(cells), timestamp, versions)
            else:
                yield row, {c: [tv] for c, tv in cells.items()}

    # -- regions, maintenance ----------------------------------------------------------------
    def regions(self, table: str) -> list[Region]:
        """The region layout local indexes follow (layout.py): HBase's regions as last
        followed. `follow_splits` catches up with splits HBase made since."""
        self.table(table)
        regions: list[Region] = list(self.layouts.regions(table))
        return regions

    def servers(self, table: str) -> dict[bytes, str]:
        """Start key -> "host:port" of the region server holding each of HBase's regions of
        `table` now (one getTableRegions call; the regions as HBase has them, not the
        recorded layout)."""
        self.table(table)
        return {r.start: f"{r.server.decode(errors='replace')}:{r.port}"
                for r in self.layouts.live(table)}

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
            f"(split '{table}'{', ' + repr(row.decode(errors='replace')) if row else ''}; "
            "on a local `hibase cluster`, `hibase cluster shell DIR` runs it and `hibase split "
            "URL TABLE` splits through its Admin API) or let HBase split them by size")

    def compact(self, table: str) -> int:
        """HBase's major compaction (asynchronous in HBase); returns 0 (rows folded unknown)."""
        self._check_writable()
        self.table(table)
        self.rpc.call("majorCompact", table.encode())
        return 0

    def flush(self) -> None:
        """Nothing to do: HBase flushes its MemStores itself."""

    def disk_size(self) -> int:
        """Unknown through Thrift1 (HBase's own metrics have it): 0."""
        return 0

    def call_stats(self) -> dict[str, int]:
        """Thrift calls made so far by this store, by method (retries count again)."""
        return self.rpc.call_stats()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def retried(self) -> int:
        """Calls retried so far (transient errors and timeouts within deadline_ms)."""
        return self.rpc.retried

    def hbase_name(self, name: str, kv: bool = False) -> str:
        """The HBase table holding hibase table `name` (kv=True: key-value table `name`), the
        store's prefix included: what a job outside this process (MapReduce) addresses."""
        return self.rpc.prefix.decode() + (self._kv_hbase(name) if kv else name)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = self.rpc.closed = True
            if self.rpc.t2 is not None:
                self.rpc.t2.close()
            q = self.rpc.pool._queue
            while True:
                try:
                    conn = q.get_nowait()
                except Exception:
                    break
                try:
                    conn.close()
                except Exception:
                    pass
