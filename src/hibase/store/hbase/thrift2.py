"""HBase's Thrift2 interface, for the one call Thrift1 lacks: `getScannerResults` opens a
scanner, reads up to n rows and closes it in one round trip (Thrift1 needs open + get + close).
HBase serves Thrift2 from its own server process (`hbase thrift2`); a thrift:// URL names its
port with `thrift2_port=`. The IDL is the subset in thrift2.thrift (HBase 2.6's field ids)."""

from __future__ import annotations

import os
import queue
import threading
from types import ModuleType
from typing import Any

__all__ = ["load_idl2", "Thrift2Pool", "scan_of", "cells_of", "create_presplit"]

_IDL_MODULE = "hibase_thrift2"
_lock = threading.Lock()
_idl: ModuleType | None = None


def load_idl2() -> ModuleType:
    """The Thrift2 subset (structs, exceptions, THBaseService), loaded once with thriftpy2."""
    global _idl
    with _lock:
        if _idl is None:
            import thriftpy2

            path = os.path.join(os.path.dirname(__file__), "thrift2.thrift")
            _idl = thriftpy2.load(path, module_name=_IDL_MODULE + "_thrift")
        return _idl


def scan_of(idl: ModuleType, start: bytes | None, stop: bytes | None,
            columns: list[bytes] | None, ts: int | None, reverse: bool, rows: int) -> Any:
    """The TScan of a bounded scan: Thrift1-style column names (b"f" a whole family, b"f:q"
    one column), newest version only, cells older than `ts` when given."""
    cols = None
    if columns is not None:
        cols = []
        for c in columns:
            fam, sep, qual = c.partition(b":")
            cols.append(idl.TColumn(family=fam, qualifier=qual if sep else None))
    return idl.TScan(startRow=start or b"", stopRow=stop or b"", columns=cols, caching=rows,
                     maxVersions=1, reversed=reverse or None,
                     timeRange=None if ts is None else idl.TTimeRange(minStamp=0, maxStamp=ts))


def cells_of(result: Any) -> dict[bytes, tuple[int, bytes]]:
    """{b"f:q": (ts, value)} of one TResult."""
    return {cv.family + b":" + cv.qualifier: (cv.timestamp, cv.value)
            for cv in result.columnValues}


class Thrift2Pool:
    """Up to `size` Thrift2 client connections, opened on demand and reused; a client whose
    call failed on the transport is dropped instead of returned."""

    def __init__(self, host: str, port: int, size: int, timeout_ms: int,
                 transport: str = "buffered", protocol: str = "binary",
                 ssl_context: Any = None) -> None:
        self.host, self.port, self.timeout_ms = host, port, timeout_ms
        self.ssl_context = ssl_context  # TLS (thrifts:// URLs) when given
        self.transport, self.protocol = transport, protocol
        self.idl = load_idl2()
        self._free: queue.LifoQueue = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)
        self._closed = False

    def _connect(self) -> Any:
        from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
        from thriftpy2.rpc import make_client
        from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory

        trans = (TFramedTransportFactory() if self.transport == "framed"
                 else TBufferedTransportFactory())
        proto = (TCompactProtocolFactory(decode_response=False) if self.protocol == "compact"
                 else TBinaryProtocolFactory(decode_response=False))
        return make_client(self.idl.THBaseService, self.host, self.port,
                           timeout=self.timeout_ms, trans_factory=trans, proto_factory=proto,
                           ssl_context=self.ssl_context)

    def call(self, method: str, *args: Any) -> Any:
        """One call on a pooled client; transport errors propagate (the caller retries)."""
        if not self._slots.acquire(timeout=self.timeout_ms / 1000):
            raise TimeoutError(f"no Thrift2 connection to {self.host}:{self.port} was free")
        try:
            try:
                client = self._free.get_nowait()
            except queue.Empty:
                client = self._connect()
            try:
                result = getattr(client, method)(*args)
            except self.idl.TIOError:
                self._free.put(client)  # an answer: the connection is fine
                raise
            except BaseException:
                client.close()
                raise
            self._free.put(client)
            return result
        finally:
            self._slots.release()

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._free.get_nowait().close()
            except queue.Empty:
                return
            except Exception:
                pass


def create_presplit(store: Any, name: str, families: dict[bytes, Any],
                    split_keys: list[bytes]) -> None:
    """Create HBase table `name` (the store's prefix added) with its first regions split at
    `split_keys`, through the Thrift2 server (Thrift1's createTable takes no split keys).
    Without a Thrift2 server in the URL (thrift2_port=) the table starts as one region and
    HBase splits it by size, as any table."""
    from ... import errors
    from ..schema import FOREVER

    t2 = store.rpc.t2
    if t2 is None:
        store._create_hbase_table(name, families)
        return
    idl = t2.idl
    cds = [idl.TColumnFamilyDescriptor(
        name=fam, maxVersions=fo.max_versions, inMemory=fo.in_memory,
        compressionType=getattr(idl.TCompressionAlgorithm, fo.compression),
        bloomnFilterType=getattr(idl.TBloomFilterType, fo.bloom_filter_type),
        blockCacheEnabled=fo.block_cache_enabled,
        timeToLive=fo.time_to_live if fo.time_to_live != FOREVER else FOREVER)
        for fam, fo in families.items()]
    desc = idl.TTableDescriptor(
        tableName=idl.TTableName(ns=b"default", qualifier=store.rpc.prefix + name.encode()),
        columns=cds)
    try:
        t2.call("createTable", desc, split_keys)
    except idl.TIOError as exc:
        msg = exc.message if isinstance(exc.message, str) else (exc.message or b"").decode()
        if "TableExistsException" in msg:
            raise errors.TableExists(f"table {name!r} already exists in HBase") from None
        raise errors.BackendError(f"HBase could not create {name!r}: {msg.splitlines()[0]}"
                                  ) from None
