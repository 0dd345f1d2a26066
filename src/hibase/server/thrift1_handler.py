"""The Hbase service's calls (the Thrift1 IDL happybase ships) over a hibase Connection, call by
call as HBase's ThriftHBaseServiceHandler does them; hibase.server.thrift puts it on the network.

Column names without ':' name a family, `f:q` a column and `f:` the empty qualifier (HBase >=
0.96); `...Ts` reads see versions with timestamp < ts and deletes remove versions <= ts
(LATEST_TIMESTAMP: "now" for writes, no bound for reads); mutateRow applies its deletes then its
puts, mutateRows every put then every delete; rows with no cells never come back; data calls on
a disabled table fail. Writes go through the Connection, so secondary indexes stay exact.
Methods raise hibase errors; the server turns them into the IDL's exceptions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from types import ModuleType
from typing import Any, Callable, Iterator, NamedTuple

from .. import errors
from ..connection import Connection
from ..table import Table
from ..store.base import LATEST_TIMESTAMP, Mutation, Region, now_ms
from ..store.schema import FOREVER, TableSchema, check_row, split_column

__all__ = ["Handler"]

log = logging.getLogger(__name__)

# -- small helpers -----------------------------------------------------------------------------

def _col_key(column: bytes) -> tuple[bytes, bytes]:
    """HBase's cell order: by family, then qualifier (not the bytes of b"f:q")."""
    family, _, qualifier = column.partition(b":")
    return family, qualifier


def _text(value: Any, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if not isinstance(value, bytes):
        raise errors.InvalidArgument(f"{what} is missing")
    return value


def _read_ts(ts: Any) -> int | None:
    """A read's upper time bound (versions with timestamp < ts); None for no bound."""
    if ts is None or ts == LATEST_TIMESTAMP:
        return None
    if ts < 0:
        raise errors.InvalidArgument(f"timestamp must not be negative, got {ts}")
    return ts


def _write_ts(ts: Any) -> int | None:
    """A write's timestamp; None (the server's clock, LATEST_TIMESTAMP in HBase) for "now"."""
    return _read_ts(ts)


# -- the handler: one method per IDL call ------------------------------------------------------

class _Columns(NamedTuple):
    """Columns to ask the store for, and which of the cells it returns to keep (None: all)."""

    read: list[bytes] | None
    keep: Callable[[bytes], bool] | None


def _keep(cells: dict[bytes, list], keep: Callable[[bytes], bool] | None) -> dict[bytes, list]:
    return cells if keep is None else {c: vs for c, vs in cells.items() if keep(c)}


_END = object()


class _Scanner:
    """An open scanner: a generator of TRowResults, used by one call at a time. The first
    result is read at open, so the scan sees the store as of scannerOpen (and a failure to
    start reading is the open's error)."""

    __slots__ = ("results", "pending", "lock", "last_used", "table")

    def __init__(self, results: Iterator[Any], table: str):
        self.results = results
        self.pending = next(results, _END)
        self.lock = threading.Lock()
        self.last_used = time.monotonic()
        self.table = table

    def take(self, n: int) -> list:
        with self.lock:
            self.last_used = time.monotonic()
            out: list = []
            if self.pending is not None:  # the result read at open (or _END: none)
                if self.pending is _END:
                    return out
                out.append(self.pending)
                self.pending = None
            if len(out) < n:
                for item in self.results:
                    out.append(item)
                    if len(out) >= n:
                        break
            self.last_used = time.monotonic()
            return out

    def close(self) -> None:
        with self.lock:
            close = getattr(self.results, "close", None)
            if close is not None:
                close()


class Handler:
    """The Hbase service's calls over one hibase Connection (names and arguments as the IDL)."""

    def __init__(self, connection: Connection, idl: ModuleType, scanner_timeout: float = 600.0,
                 server_name: bytes = b"127.0.0.1", server_port: int = 0):
        self.connection = connection
        self.store = connection.store
        self.t = idl
        self.scanner_timeout = scanner_timeout
        self.server_name = server_name
        self.server_port = server_port
        self._scanners: dict[int, _Scanner] = {}
        self._scanner_lock = threading.Lock()
        self._next_scanner = 0

    # -- tables ------------------------------------------------------------------------------
    def _name(self, table: Any) -> str:
        raw = _text(table, "table name")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise errors.TableNotFound(f"no table {raw!r}") from None

    def _schema(self, table: Any, enabled: bool = True) -> tuple[str, TableSchema]:
        """(name, schema) of an existing table; data calls need it enabled, as in HBase."""
        name = self._name(table)
        schema = self.store.schema(name)
        if enabled and not schema.enabled:
            raise errors.TableDisabled(f"table {name!r} is disabled; enableTable to use it")
        return name, schema

    def getTableNames(self) -> list[bytes]:
        return [n.encode() for n in self.store.tables()]

    def createTable(self, tableName: Any, columnFamilies: Any) -> None:
        name = self._name(tableName)
        if name in self.store.tables(internal=True):
            raise errors.TableExists(f"table {name!r} already exists")
        families: dict[str, dict] = {}
        for cd in columnFamilies or ():
            raw = _text(cd.name, "column family name")
            family = raw.split(b":", 1)[0]
            if not family:
                raise errors.SchemaError("column family name is empty")
            try:
                fname = family.decode("utf-8")
            except UnicodeDecodeError:
                raise errors.SchemaError(f"column family name {family!r} is not UTF-8") from None
            if fname in families:
                raise errors.SchemaError(f"family {fname!r} given twice")
            ttl = cd.timeToLive
            families[fname] = {
                "max_versions": cd.maxVersions,
                "compression": (cd.compression or "NONE"),
                "in_memory": bool(cd.inMemory),
                "bloom_filter_type": (cd.bloomFilterType or "NONE"),
                "bloom_filter_vector_size": cd.bloomFilterVectorSize or 0,
                "bloom_filter_nb_hashes": cd.bloomFilterNbHashes or 0,
                "block_cache_enabled": bool(cd.blockCacheEnabled),
                "time_to_live": FOREVER if ttl is None or ttl <= 0 else ttl,
            }
        if not families:
            raise errors.SchemaError(f"table {name!r} needs at least one column family")
        self.connection.create_table(name, families)

    def deleteTable(self, tableName: Any) -> None:
        name, schema = self._schema(tableName, enabled=False)
        if schema.enabled:
            raise self.t.IOError(
                message=f"table {name!r} is enabled; disable it (disableTable) before deleting")
        self._drop_scanners(name)  # their iterators read the families about to go
        self.connection.delete_table(name)

    def enableTable(self, tableName: Any) -> None:
        name, schema = self._schema(tableName, enabled=False)
        if schema.enabled:
            raise self.t.IOError(message=f"table {name!r} is already enabled")
        self.connection.enable_table(name)

    def disableTable(self, tableName: Any) -> None:
        name, schema = self._schema(tableName, enabled=False)
        if not schema.enabled:
            raise self.t.IOError(message=f"table {name!r} is already disabled")
        self.connection.disable_table(name)

    def isTableEnabled(self, tableName: Any) -> bool:
        return self._schema(tableName, enabled=False)[1].enabled

    def compact(self, tableNameOrRegionName: Any) -> None:
        raw = _text(tableNameOrRegionName, "table or region name")
        name = self._name(raw)
        if name not in self.store.tables() and "," in name:  # a region name: "table,start,id."
            name = name.split(",", 1)[0]
        self._schema(name)
        self.connection.compact_table(name, major=True)

    majorCompact = compact

    def getColumnDescriptors(self, tableName: Any) -> dict[bytes, Any]:
        _, schema = self._schema(tableName, enabled=False)
        out = {}
        for family, fo in schema.families.items():
            out[family + b":"] = self.t.ColumnDescriptor(
                name=family + b":", maxVersions=fo.max_versions, compression=fo.compression,
                inMemory=fo.in_memory, bloomFilterType=fo.bloom_filter_type,
                bloomFilterVectorSize=fo.bloom_filter_vector_size,
                bloomFilterNbHashes=fo.bloom_filter_nb_hashes,
                blockCacheEnabled=fo.block_cache_enabled,
                timeToLive=fo.time_to_live)
        return out

    def _region_info(self, region: Region) -> Any:
        info = region.info()
        return self.t.TRegionInfo(
            startKey=info["start_key"], endKey=info["end_key"], id=info["id"],
            name=info["name"], version=info["version"], serverName=self.server_name,
            port=self.server_port)

    def getTableRegions(self, tableName: Any) -> list:
        try:
            name = self._name(tableName)
            regions = self.store.regions(name)
        except errors.TableNotFound:
            return []  # as HBase: an unknown table has no regions
        return [self._region_info(r) for r in regions]

    def getRegionInfo(self, row: Any) -> Any:
        """The region of a meta row key `table,rowkey,...` (HBase looks it up in hbase:meta)."""
        raw = _text(row, "row")
        table, sep, rest = raw.partition(b",")
        key = rest.rpartition(b",")[0] if b"," in rest else rest
        try:
            name = table.decode("utf-8")
            region = self.store.region_of(name, key)
        except (UnicodeDecodeError, errors.TableNotFound):
            raise self.t.IOError(
                message=f"cannot find a region for meta row {raw!r} (write 'table,row,')"
            ) from None
        return self._region_info(region)

    # -- reads -------------------------------------------------------------------------------
    @staticmethod
    def _columns(schema: TableSchema, columns: Any) -> _Columns:
        """What to read for a Thrift column list: b"f" is the family, b"f:q" a column and
        b"f:" the column with the empty qualifier (HBase >= 0.96; hibase's own API reads a
        family there, so the gateway reads the family and keeps only that cell)."""
        if not columns:
            return _Columns(None, None)
        cols = schema.check_columns([_text(c, "column name") for c in columns])
        assert cols is not None
        empty = {c for c in cols if split_column(c)[1] == b""}
        if not empty:
            return _Columns(cols, None)
        families = {c for c in cols if b":" not in c}
        wanted = frozenset(cols)
        # the families read for b"f:" go last: a family named after its columns reads it whole
        return _Columns([c for c in cols if c not in empty] + [c[:-1] for c in empty],
                        lambda c: c in wanted or c[:c.index(b":")] in families)

    def _cells(self, name: str, row: Any, columns: _Columns, ts: int | None,
               versions: int = 1) -> dict[bytes, list]:
        cells = self.store.read_row(name, check_row(_text(row, "row")), columns.read, ts,
                                    versions)
        return _keep(cells, columns.keep)

    def _row_result(self, row: bytes, cells: dict[bytes, list], sort: bool = False) -> Any:
        t = self.t
        items = sorted(cells.items(), key=lambda kv: _col_key(kv[0]))
        if sort:
            return t.TRowResult(row=row, sortedColumns=[
                t.TColumn(columnName=c, cell=t.TCell(value=vs[0][1], timestamp=vs[0][0]))
                for c, vs in items])
        return t.TRowResult(row=row, columns=OrderedDict(
            (c, t.TCell(value=vs[0][1], timestamp=vs[0][0])) for c, vs in items))

    def _tcells(self, cells: dict[bytes, list]) -> list:
        TCell = self.t.TCell
        return [TCell(value=v, timestamp=ts)
                for _, vs in sorted(cells.items(), key=lambda kv: _col_key(kv[0]))
                for ts, v in vs]

    def getVerTs(self, tableName: Any, row: Any, column: Any, timestamp: Any,
                 numVersions: Any, attributes: Any = None) -> list:
        name, schema = self._schema(tableName)
        if numVersions is None or numVersions < 1:
            raise errors.InvalidArgument(f"numVersions must be at least 1, got {numVersions}")
        cols = self._columns(schema, [_text(column, "column")])
        return self._tcells(self._cells(name, row, cols, _read_ts(timestamp), numVersions))

    def get(self, tableName: Any, row: Any, column: Any, attributes: Any = None) -> list:
        return self.getVerTs(tableName, row, column, None, 1)

    def getVer(self, tableName: Any, row: Any, column: Any, numVersions: Any,
               attributes: Any = None) -> list:
        return self.getVerTs(tableName, row, column, None, numVersions)

    def getRowsWithColumnsTs(self, tableName: Any, rows: Any, columns: Any, timestamp: Any,
                             attributes: Any = None) -> list:
        name, schema = self._schema(tableName)
        cols = self._columns(schema, columns)
        ts = _read_ts(timestamp)
        out = []
        for row in rows or ():
            cells = self._cells(name, row, cols, ts)
            if cells:
                out.append(self._row_result(row, cells))
        return out

    def getRowWithColumnsTs(self, tableName: Any, row: Any, columns: Any, timestamp: Any,
                            attributes: Any = None) -> list:
        return self.getRowsWithColumnsTs(tableName, [row], columns, timestamp)

    def getRow(self, tableName: Any, row: Any, attributes: Any = None) -> list:
        return self.getRowsWithColumnsTs(tableName, [row], None, None)

    def getRowWithColumns(self, tableName: Any, row: Any, columns: Any,
                          attributes: Any = None) -> list:
        return self.getRowsWithColumnsTs(tableName, [row], columns, None)

    def getRowTs(self, tableName: Any, row: Any, timestamp: Any, attributes: Any = None) -> list:
        return self.getRowsWithColumnsTs(tableName, [row], None, timestamp)

    def getRows(self, tableName: Any, rows: Any, attributes: Any = None) -> list:
        return self.getRowsWithColumnsTs(tableName, rows, None, None)

    def getRowsWithColumns(self, tableName: Any, rows: Any, columns: Any,
                           attributes: Any = None) -> list:
        return self.getRowsWithColumnsTs(tableName, rows, columns, None)

    def getRowsTs(self, tableName: Any, rows: Any, timestamp: Any,
                  attributes: Any = None) -> list:
        return self.getRowsWithColumnsTs(tableName, rows, None, timestamp)

    def getRowOrBefore(self, tableName: Any, row: Any, family: Any) -> list:
        """The cells of `family` in the last row at or before `row` (HBase 0.9x's call)."""
        name, schema = self._schema(tableName)
        fam = _text(family, "family").split(b":", 1)[0]
        schema.check_family(fam)
        start = check_row(_text(row, "row"))
        for _, cells in self.store.scan(name, start, None, [fam], reverse=True):
            return self._tcells({c: vs[:1] for c, vs in cells.items()})
        return []

    # -- writes ------------------------------------------------------------------------------
    def _row_mutations(self, name: str, schema: TableSchema, row: Any, mutations: Any,
                       ts: int | None, family_put_fails: bool) -> tuple[list, list]:
        """([delete], [put]) Mutations for one row's Thrift Mutation list, as HBase builds
        one Delete and one Put: a delete of b"f" removes the family, of b"f:q" every version
        of the column (versions <= ts with a timestamp); a later put of a column wins."""
        row = check_row(_text(row, "row"))
        deletes: list[bytes] = []
        puts: dict[bytes, bytes] = {}
        for m in mutations or ():
            column = _text(m.column, "mutation column")
            family, qualifier = split_column(column)
            schema.check_family(family)
            if m.isDelete:
                deletes.append(family if qualifier is None else column)
            elif qualifier is None:
                if family_put_fails:
                    raise errors.InvalidArgument(
                        f"put needs 'family:qualifier', got {column!r}")
                log.warning("mutation puts to %r without a qualifier: ignored (HBase only "
                            "deletes a whole family)", column)
            else:
                value = m.value
                puts[column] = b"" if value is None else _text(value, "value")
        if puts:
            schema.check_put(row, puts)  # declared column types
        dels = [Mutation("delete", name, row, deletes, ts)] if deletes else []
        return dels, ([Mutation("put", name, row, puts, ts)] if puts else [])

    def mutateRowTs(self, tableName: Any, row: Any, mutations: Any, timestamp: Any,
                    attributes: Any = None) -> None:
        name, schema = self._schema(tableName)
        dels, puts = self._row_mutations(name, schema, row, mutations, _write_ts(timestamp),
                                         False)
        self.connection.mutate(dels + puts)  # HBase: the Delete, then the Put

    def mutateRow(self, tableName: Any, row: Any, mutations: Any, attributes: Any = None) -> None:
        self.mutateRowTs(tableName, row, mutations, None)

    def mutateRowsTs(self, tableName: Any, rowBatches: Any, timestamp: Any,
                     attributes: Any = None) -> None:
        name, schema = self._schema(tableName)
        ts = _write_ts(timestamp)
        all_dels, all_puts = [], []
        for batch in rowBatches or ():
            dels, puts = self._row_mutations(name, schema, batch.row, batch.mutations, ts, True)
            all_dels += dels
            all_puts += puts
        self.connection.mutate(all_puts + all_dels)  # HBase: every Put, then every Delete

    def mutateRows(self, tableName: Any, rowBatches: Any, attributes: Any = None) -> None:
        self.mutateRowsTs(tableName, rowBatches, None)

    def deleteAllTs(self, tableName: Any, row: Any, column: Any, timestamp: Any,
                    attributes: Any = None) -> None:
        name, schema = self._schema(tableName)
        column = _text(column, "column")
        family, qualifier = split_column(column)
        schema.check_family(family)
        target = family if qualifier is None else column
        self.connection.mutate([Mutation("delete", name, check_row(_text(row, "row")),
                                         [target], _write_ts(timestamp))])

    def deleteAll(self, tableName: Any, row: Any, column: Any, attributes: Any = None) -> None:
        self.deleteAllTs(tableName, row, column, None)

    def deleteAllRowTs(self, tableName: Any, row: Any, timestamp: Any,
                       attributes: Any = None) -> None:
        name, _ = self._schema(tableName)
        self.connection.mutate([Mutation("delete", name, check_row(_text(row, "row")), None,
                                         _write_ts(timestamp))])

    def deleteAllRow(self, tableName: Any, row: Any, attributes: Any = None) -> None:
        self.deleteAllRowTs(tableName, row, None)

    def atomicIncrement(self, tableName: Any, row: Any, column: Any, value: Any) -> int:
        name, _ = self._schema(tableName)
        column = _text(column, "column")
        if b":" not in column:
            column += b":"  # HBase: a family alone increments its empty qualifier
        return Table(name.encode(), self.connection).counter_inc(
            _text(row, "row"), column, value)

    def increment(self, increment: Any) -> None:
        self.atomicIncrement(increment.table, increment.row, increment.column,
                             increment.ammount if increment.ammount is not None else 1)

    def incrementRows(self, increments: Any) -> None:
        for inc in increments or ():
            self.increment(inc)

    def append(self, append: Any) -> list:
        """Append each value to its column's newest value; returns the new cells."""
        name, schema = self._schema(append.table)
        row = check_row(_text(append.row, "row"))
        columns = [_text(c, "column") for c in append.columns or ()]
        values = [_text(v, "value") for v in append.values or ()]
        if len(columns) != len(values):
            raise errors.InvalidArgument("append needs as many values as columns")
        def append_to(current: dict) -> tuple[list[Mutation], tuple[int, dict]]:
            ts = now_ms()
            data: dict = {}
            for col, value in zip(columns, values):
                old = current.get(col)
                data[col] = (data.get(col) or (old[0][1] if old else b"")) + value
            schema.check_put(row, data)
            return ([Mutation("put", name, row, data, ts)] if data else []), (ts, data)

        ts, data = self.connection.read_modify_write(
            name, row, schema.check_columns(columns) or [], append_to)
        return self._tcells({c: [(ts, v)] for c, v in data.items()})

    def checkAndPut(self, tableName: Any, row: Any, column: Any, value: Any, mput: Any,
                    attributes: Any = None) -> bool:
        """Put `mput` if `column`'s newest value equals `value` (None: if it has no value)."""
        name, schema = self._schema(tableName)
        row = check_row(_text(row, "row"))
        column = _text(column, "column")
        if split_column(column)[1] is None:
            column += b":"
        schema.check_columns([column])
        if mput is None or mput.isDelete:
            raise errors.InvalidArgument("checkAndPut needs a put mutation")
        put_col = _text(mput.column, "mutation column")
        data = {put_col: b"" if mput.value is None else _text(mput.value, "value")}
        schema.check_put(row, data)
        expected = None if value is None else _text(value, "value")

        def check(cells: dict) -> tuple[list[Mutation], bool]:
            got = cells.get(column)
            if (got[0][1] if got else None) != expected:
                return [], False
            return [Mutation("put", name, row, data, None)], True

        return self.connection.read_modify_write(name, row, [column], check)

    # -- scanners ----------------------------------------------------------------------------
    def _open(self, tableName: Any, start: Any, stop: Any, columns: Any, timestamp: Any = None,
              filter_string: Any = None, batch: Any = None, sort: bool = False,
              reverse: bool = False, prefix: bytes | None = None) -> int:
        from ..query.hbase_filter import compile_filter

        name, schema = self._schema(tableName)
        cols = self._columns(schema, columns)
        ts = _read_ts(timestamp)
        start = _text(start, "start row") if start is not None else b""
        stop = _text(stop, "stop row") if stop is not None else b""
        if start and start == stop:  # HBase: equal start and stop rows get that one row
            stop, reverse = start + b"\x00", False
        rf = compile_filter(filter_string) if filter_string else None
        if batch is not None and batch < 1:
            batch = None
        scanner = _Scanner(self._results(name, start or None, stop or None, cols, ts, rf,
                                         batch, sort, reverse, prefix), name)
        with self._scanner_lock:
            sid = self._next_scanner
            while sid in self._scanners:
                sid = (sid + 1) & 0x7FFFFFFF
            self._next_scanner = (sid + 1) & 0x7FFFFFFF
            self._scanners[sid] = scanner
        return sid

    def _results(self, name: str, start: bytes | None, stop: bytes | None,
                 cols: _Columns, ts: int | None, rf: Any, batch: int | None,
                 sort: bool, reverse: bool, prefix: bytes | None) -> Iterator[Any]:
        passed = 0
        for row, cells in self.store.scan(name, start, stop, cols.read, ts, reverse=reverse):
            if prefix is not None and not row.startswith(prefix):
                return  # WhileMatchFilter(PrefixFilter): the scan ends at the first other row
            if cols.keep is not None:
                cells = _keep(cells, cols.keep)
                if not cells:
                    continue
            if rf is not None:
                values = rf.apply(row, {c: vs[0][1] for c, vs in cells.items()})
                if values is None:
                    continue
                cells = {c: [(cells[c][0][0], v)] for c, v in values.items() if c in cells}
                passed += 1
            if batch is None:
                yield self._row_result(row, cells, sort)
            else:  # Scan.setBatch: a row's cells in pieces of at most `batch`
                items = sorted(cells.items(), key=lambda kv: _col_key(kv[0]))
                for i in range(0, len(items), batch):
                    yield self._row_result(row, dict(items[i:i + batch]), sort)
            if rf is not None and rf.limit is not None and passed >= rf.limit:
                return

    def scannerOpenWithScan(self, tableName: Any, scan: Any, attributes: Any = None) -> int:
        return self._open(tableName, scan.startRow, scan.stopRow, scan.columns, scan.timestamp,
                          scan.filterString, scan.batchSize, bool(scan.sortColumns),
                          bool(scan.reversed))

    def scannerOpen(self, tableName: Any, startRow: Any, columns: Any,
                    attributes: Any = None) -> int:
        return self._open(tableName, startRow, None, columns)

    def scannerOpenWithStop(self, tableName: Any, startRow: Any, stopRow: Any, columns: Any,
                            attributes: Any = None) -> int:
        return self._open(tableName, startRow, stopRow, columns)

    def scannerOpenWithPrefix(self, tableName: Any, startAndPrefix: Any, columns: Any,
                              attributes: Any = None) -> int:
        prefix = _text(startAndPrefix, "prefix")
        return self._open(tableName, prefix, None, columns, prefix=prefix)

    def scannerOpenTs(self, tableName: Any, startRow: Any, columns: Any, timestamp: Any,
                      attributes: Any = None) -> int:
        return self._open(tableName, startRow, None, columns, timestamp)

    def scannerOpenWithStopTs(self, tableName: Any, startRow: Any, stopRow: Any, columns: Any,
                              timestamp: Any, attributes: Any = None) -> int:
        return self._open(tableName, startRow, stopRow, columns, timestamp)

    def _scanner(self, id: Any) -> _Scanner:
        with self._scanner_lock:
            scanner = self._scanners.get(id)
        if scanner is None:
            raise errors.InvalidArgument("scanner ID is invalid")
        return scanner

    def scannerGetList(self, id: Any, nbRows: Any) -> list:
        scanner = self._scanner(id)
        if nbRows is None or nbRows < 1:
            return []
        return scanner.take(nbRows)

    def scannerGet(self, id: Any) -> list:
        return self.scannerGetList(id, 1)

    def scannerClose(self, id: Any) -> None:
        with self._scanner_lock:
            scanner = self._scanners.pop(id, None)
        if scanner is None:
            raise errors.InvalidArgument("scanner ID is invalid")
        scanner.close()

    def _sweep_locked(self) -> list[_Scanner]:
        if not self._scanners:
            return []
        limit = time.monotonic() - self.scanner_timeout
        idle = [sid for sid, s in self._scanners.items()
                if s.last_used < limit and not s.lock.locked()]
        return [self._scanners.pop(sid) for sid in idle]

    def sweep_scanners(self) -> int:
        """Drop scanners unused for `scanner_timeout` seconds; returns how many."""
        with self._scanner_lock:
            idle = self._sweep_locked()
        for s in idle:
            s.close()
        if idle:
            log.info("dropped %d idle scanner(s)", len(idle))
        return len(idle)

    def _drop_scanners(self, table: str | None = None) -> None:
        with self._scanner_lock:
            ids = [sid for sid, s in self._scanners.items() if table is None or s.table == table]
            dropped = [self._scanners.pop(sid) for sid in ids]
        for s in dropped:
            try:
                s.close()
            except Exception:  # pragma: no cover - a generator already running elsewhere
                log.debug("scanner close failed", exc_info=True)

    def close_scanners(self) -> None:
        self._drop_scanners(None)

    @property
    def open_scanners(self) -> int:
        with self._scanner_lock:
            return len(self._scanners)
