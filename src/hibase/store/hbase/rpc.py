"""The HBase store's Thrift1 calls: one counted, retried call path over a pool of connections,
parallel calls, and the raw row reads and scans everything else is built on. An `Rpc` is made
by HBaseStore from the URL's options and its connection pools and handed to the parts that
talk to HBase (`store.rpc`). With a Thrift2 pool (`t2`, thrift2.py) a scan's first chunk is one
getScannerResults call instead of Thrift1's open + get + close."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Iterator

from ... import errors
from .gateway import RESERVED_MARK, hello
from .thrift2 import cells_of, scan_of
from ..schema import split_column


__all__ = ["Rpc", "SCAN_CHUNK"]

# rows per scanner call, and per batch when a write or a multi-get is cut into parallel calls
SCAN_CHUNK = 1000

# Thrift1 calls whose first argument is not a table name (the prefix is not added to it)
_NO_TABLE_ARG = frozenset({"getTableNames", "scannerGet", "scannerGetList", "scannerClose"})


class _Transport(errors.BackendUnavailable):
    """A transport error (or HBase's transient error) of a call made with retry=False."""


# What HBase's Java client (inside the Thrift server) says while a region is unreachable for a
# while: its server died and the master has not reassigned it yet, it is moving or opening, the
# master is initializing. Not DoNotRetryIOExceptions: worth sending again (until deadline_ms).
_TRANSIENT = ("NotServingRegionException", "RegionMovedException", "RegionOpeningException",
              "RegionServerStoppedException", "RegionServerAbortedException",
              "ServerNotRunningYetException", "PleaseHoldException", "RetriesExhausted",
              "NoServerForRegionException", "RegionTooBusyException", "CallQueueTooBig",
              "CallTimeoutException", "SocketTimeoutException", "ConnectException",
              "Connection refused", "ConnectionClosedException", "ConnectionClosingException",
              "FailedServerException", "StoppedRpcClientException", "OperationTimeoutExceeded")
# Not idempotent: HBase may have applied the first try, so a transient error is not retried.
_ONCE = frozenset({"atomicIncrement", "increment", "incrementRows", "append"})


def transient(message: str | bytes | None) -> bool:
    """Whether an HBase error message (the Java stack trace the Thrift server sends) says the
    region or server is only unreachable for a while (see _TRANSIENT)."""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    text = message or ""
    first = _one_line(text).lower()
    if "tablenotfound" in first or "disabled" in first or "nosuchcolumnfamily" in first:
        return False
    return any(marker in text for marker in _TRANSIENT)


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



class Rpc:
    """Calls to the Thrift server (see the module docstring): `opts` as parse_url gives them,
    `T` the Thrift1 IDL module, `pool` a happybase ConnectionPool (or tls_pool's), `t2` a
    Thrift2Pool or None, `prefix` the URL's table-name prefix (bytes, with its "_")."""

    def __init__(self, opts: dict[str, Any], T: Any, pool: Any, t2: Any, prefix: bytes
                 ) -> None:
        self.opts = opts
        self.T = T
        self.pool = pool
        self.t2 = t2
        self.prefix = prefix
        self.retries: int = opts["retries"]
        self.deadline_s: float = opts["deadline_ms"] / 1000  # how long a call retries
        self.retried = 0  # retries made so far
        self.closed = False  # set by the store's close: every later call refuses
        # every Thrift call, by method (call_stats): what the round-trip budget is pinned on
        self._calls: dict[str, int] = {}
        self._calls_lock = threading.Lock()

    def call(self, method: str, *args: Any, retry: bool = True, thrift2: bool = False) -> Any:
        """One Thrift call on a pooled connection (thrift2: on the Thrift2 server's pool,
        `t2`), IDL errors mapped. Retried with exponential backoff (50 ms doubling, at most
        2 s apart) until `deadline_ms` (URL option, default 60 s) has passed since the first
        try: transport errors (at most `retries` times when the server cannot be reached;
        timeouts, a server that is there but slow, any number of times) and HBase's transient
        errors (a region whose server died and is not reassigned yet, a region moving or
        opening: `transient`).
        Every write of this store is idempotent (puts carry explicit timestamps); increments
        are not retried after a transient error. retry=False: a transport or transient error
        raises _Transport at once (scanner gets: the scan reopens where it was)."""
        from thriftpy2.thrift import TApplicationException
        from thriftpy2.transport import TTransportException

        if self.closed:
            raise errors.BackendUnavailable("the store is closed")
        T = self.T
        if self.prefix and method not in _NO_TABLE_ARG:
            args = (self.prefix + args[0], *args[1:])
        if thrift2:
            io_errors: tuple = (self.t2.idl.TIOError,)
            where = f"HBase Thrift2 server {self.opts['host']}:{self.opts['thrift2_port']}"
        else:
            io_errors = (T.IOError,)
            where = f"HBase Thrift gateway {self.opts['host']}:{self.opts['port']}"
        delay = 0.05
        give_up = time.monotonic() + self.deadline_s
        failures = 0
        while True:
            with self._calls_lock:
                self._calls[method] = self._calls.get(method, 0) + 1
            try:
                if thrift2:
                    return self.t2.call(method, *args)
                with self.pool.connection(timeout=self.opts["timeout"] / 1000) as conn:
                    try:
                        return getattr(conn.client, method)(*args)
                    except T.IOError as exc:
                        if RESERVED_MARK not in _one_line(exc.message):
                            raise
                        # hibase's gateway keeps hibase's tables from other clients: say who
                        # this is on this connection (gateway.py), then send the call again
                        self._hello(conn)
                        return getattr(conn.client, method)(*args)
            except T.IllegalArgument as exc:
                raise errors.InvalidArgument(_one_line(exc.message)) from None
            except T.AlreadyExists as exc:
                raise errors.TableExists(exc.message) from None
            except io_errors as exc:
                # Thrift2 says it: canRetry is "not a DoNotRetryIOException"
                can = getattr(exc, "canRetry", None)
                if (can if can is not None else transient(exc.message)) and \
                        method not in _ONCE:
                    if not retry:
                        raise _Transport(_one_line(exc.message)) from None
                    if time.monotonic() + delay < give_up:
                        self._count_retry(method)
                        time.sleep(delay)
                        delay = min(delay * 2, 2.0)
                        continue
                    raise errors.BackendUnavailable(
                        f"{where}: {_one_line(exc.message)} (still failing after "
                        f"{self.deadline_s:g} s, deadline_ms)") from None
                message = _one_line(exc.message)
                if method not in _NO_TABLE_ARG and args and message.encode() == args[0]:
                    # HBase's TableNotFoundException says only the table's name (Thrift2)
                    raise errors.TableNotFound(f"no table {message!r}") from None
                raise _map_io_error(message) from None
            except TApplicationException as exc:
                if exc.type not in (TApplicationException.UNKNOWN_METHOD,
                                    TApplicationException.WRONG_METHOD_NAME):
                    # e.g. HBase's "Internal error processing getTableRegions" while a region
                    # is in transition: its callers retry (layout.py)
                    raise
                # a method the server does not have: a Thrift2 port where the Thrift1 one
                # belongs, or back
                other = "Thrift1" if thrift2 else "Thrift2"
                raise errors.BackendUnavailable(
                    f"{where} does not understand {method!r}: is it HBase's {other} server? "
                    f"hibase talks to the Thrift1 server (`hbase thrift`) on the URL's port and "
                    f"to the Thrift2 server (`hbase thrift2`) on ?thrift2_port=: "
                    f"thrift://HOST:THRIFT1_PORT?thrift2_port=THRIFT2_PORT (the URL `hibase "
                    f"cluster start` prints holds both)") from None
            except (TTransportException, socket.error, EOFError) as exc:  # timeouts too
                if not retry:
                    raise _Transport(str(exc)) from None
                # a timeout: the server is there but slow (HBase inside it waiting for a
                # region): not one of the `retries`, which count a server out of reach
                slow = isinstance(exc, TimeoutError)
                if (failures == self.retries and not slow) or \
                        time.monotonic() + delay >= give_up:
                    raise errors.BackendUnavailable(
                        f"{where}: {exc or type(exc).__name__} (after {failures} retries; a "
                        f"server out of reach is tried `retries` times, a slow one until "
                        f"`deadline_ms`: URL options)") from None
                failures += not slow
                self._count_retry(method)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
            except Exception as exc:
                if type(exc).__name__ == "NoConnectionsAvailable":
                    raise errors.BackendUnavailable(str(exc)) from None
                raise

    def _count_retry(self, method: str) -> None:
        """Count one retry (`retried`: what the fault tests report)."""
        with self._calls_lock:
            self.retried += 1

    def _hello(self, conn: Any) -> None:
        """Tell hibase's gateway this connection is hibase's backend (with the URL's token)."""
        if not hello(conn, self.opts["token"], self.opts["protocol"]):
            raise errors.BackendError(
                f"hibase gateway {self.opts['host']}:{self.opts['port']} refused this client's "
                "token: give the URL the token the gateway was started with (?token=..., "
                "hibase serve --token)")

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

    @staticmethod
    def thrift_columns(columns: list[bytes] | None) -> list[bytes] | None:
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

    def get_raw(self, table: str, rows: list[bytes], columns: list[bytes] | None,
                 ts: int | None = None) -> list[dict[bytes, tuple[int, bytes]]]:
        """Newest cell (ts, value) per column of each row ({} if absent), in `rows` order."""
        if not rows:
            return []
        name = table.encode()
        cols = self.thrift_columns(columns)
        if ts is None:
            if cols is None:
                results = self.call("getRows", name, rows, {})
            else:
                results = self.call("getRowsWithColumns", name, rows, cols, {})
        else:
            results = self.call("getRowsWithColumnsTs", name, rows, cols or [], ts, {})
        by_row = {r.row: self._cells(r) for r in results}
        return [by_row.get(r, {}) for r in rows]

    def scan_raw(self, table: str, start: bytes | None, stop: bytes | None,
                  columns: list[bytes] | None, ts: int | None = None, reverse: bool = False,
                  chunk: int = SCAN_CHUNK) -> Iterator[tuple[bytes, dict]]:
        """(row, {column: (ts, value)}) in [start, stop) (reverse: from start down to stop),
        streamed from one scanner (scanner caching = `chunk` rows per scannerGetList, only the
        named columns): open + one get per chunk + close. A get is never retried on the same
        scanner (a lost answer would skip its rows): a chunk that fails on the transport opens
        a new scanner from where it was."""
        name = table.encode()
        cols = self.thrift_columns(columns)
        cursor, skip = start, None
        if self.t2 is not None:  # the first chunk in one call; a longer scan goes on below
            scan = scan_of(self.t2.idl, start, stop, cols, ts, reverse, chunk)
            results = self.call("getScannerResults", name, scan, chunk, thrift2=True)
            for r in results:
                yield r.row, cells_of(r)
            if len(results) < chunk:
                return
            last = results[-1].row
            if reverse:
                cursor, skip = last, last
            else:
                cursor = last + b"\x00"
        reopens = 0
        broken_since = None
        while True:
            scan = self.T.TScan(startRow=cursor or b"", stopRow=stop or b"", columns=cols,
                                caching=chunk, reversed=reverse or None, timestamp=ts)
            sid = self.call("scannerOpenWithScan", name, scan, {})
            broken = False
            try:
                while True:
                    want = chunk + (1 if skip is not None else 0)
                    try:
                        results = self.call("scannerGetList", sid, want, retry=False)
                    except _Transport:
                        broken = True  # reopen from the cursor (rows so far were yielded)
                        if broken_since is None:
                            broken_since = time.monotonic()
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
                    self.call("scannerClose", sid, retry=not broken)
                except errors.HibaseError:
                    pass
            reopens += 1
            self._count_retry("scannerOpenWithScan")
            time.sleep(min(0.05 * 2 ** min(reopens, 6), 2.0))
            if reopens > self.retries and time.monotonic() - broken_since > self.deadline_s:
                raise errors.BackendUnavailable(
                    f"HBase Thrift gateway {self.opts['host']}:{self.opts['port']}: scanner of "
                    f"{table!r} kept failing (after {reopens - 1} reopens in "
                    f"{self.deadline_s:g} s, deadline_ms)")
