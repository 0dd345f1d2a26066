"""The Thrift2 calls the gateway serves (THBaseService's `getScannerResults`: open a scanner,
read up to n rows, close it, in one call), answered through the Thrift1 handler's scanner so
both interfaces read rows, columns, time ranges and filters the same way."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .. import errors
from .thrift1_handler import Handler

__all__ = ["Thrift2Handler"]


class Thrift2Handler:
    """THBaseService over a Thrift1 Handler (names and arguments as HBase's Thrift2 IDL)."""

    def __init__(self, handler: Handler, idl2: ModuleType) -> None:
        self.h = handler
        self.t = idl2

    def createTable(self, desc: Any, splitKeys: Any = None) -> None:
        """A table made as Thrift1's createTable makes it, then split at `splitKeys` (what a
        salted table's pre-split asks: store/hbase/thrift2.py create_presplit)."""
        if desc is None or desc.tableName is None or not desc.columns:
            raise errors.InvalidArgument("createTable needs a table name and column families")
        compression = getattr(self.t.TCompressionAlgorithm, "_VALUES_TO_NAMES", {})
        bloom = getattr(self.t.TBloomFilterType, "_VALUES_TO_NAMES", {})
        cds = [self.h.t.ColumnDescriptor(
            name=cd.name + b":", maxVersions=cd.maxVersions or 1,
            compression=compression.get(cd.compressionType, "NONE"),
            inMemory=bool(cd.inMemory), bloomFilterType=bloom.get(cd.bloomnFilterType, "NONE"),
            blockCacheEnabled=cd.blockCacheEnabled is not False, timeToLive=cd.timeToLive)
            for cd in desc.columns]
        self.h.createTable(desc.tableName.qualifier, cds)
        name = self.h._name(desc.tableName.qualifier)
        for key in sorted(splitKeys or ()):
            self.h.store.split(name, key)

    def getScannerResults(self, table: Any, tscan: Any, numRows: Any = 1) -> list:
        if tscan is None:
            raise errors.InvalidArgument("getScannerResults needs a TScan")
        if tscan.maxVersions not in (None, 1):
            raise errors.InvalidArgument("this gateway's scans return the newest version "
                                         "only (maxVersions 1)")
        ts = None
        tr = tscan.timeRange
        if tr is not None:
            if tr.minStamp not in (None, 0):
                raise errors.InvalidArgument("this gateway's scans take time ranges from 0")
            ts = tr.maxStamp
        columns = None
        if tscan.columns is not None:
            columns = [c.family if c.qualifier is None else c.family + b":" + c.qualifier
                       for c in tscan.columns]
        n = numRows if numRows is not None else 1
        if tscan.limit is not None and tscan.limit > 0:
            n = min(n, tscan.limit)
        if n < 1:
            return []
        sid = self.h._open(table, tscan.startRow, tscan.stopRow, columns, ts,
                           tscan.filterString, None, False, bool(tscan.reversed))
        try:
            rows = self.h._scanner(sid).take(n)
        finally:
            self.h.scannerClose(sid)
        T = self.t
        return [T.TResult(row=r.row, columnValues=[
            T.TColumnValue(family=col.partition(b":")[0], qualifier=col.partition(b":")[2],
                           value=cell.value, timestamp=cell.timestamp)
            for col, cell in r.columns.items()]) for r in rows]  # HBase's column order

    # the server's life-cycle calls (Thrift2 scanners live within one call: nothing to sweep)
    def sweep_scanners(self) -> int:
        return self.h.sweep_scanners()

    def close_scanners(self) -> None:
        self.h.close_scanners()
