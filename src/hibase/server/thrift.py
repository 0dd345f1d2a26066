"""HBase's Thrift1 gateway over a hibase store: happybase (and any Thrift1 client) talks to an
embedded store exactly as it talks to HBase's own `hbase thrift` server.

    from hibase.server.thrift import ThriftServer
    with ThriftServer("data/", port=9090) as server:     # listening once the block starts
        ...                                             # happybase.Connection("127.0.0.1", 9090)
    # or, blocking until SIGTERM / Ctrl-C:  serve("data/", port=9090)

The interface is the Hbase.thrift IDL happybase ships, loaded with thriftpy2 at run time; the
calls themselves (HBase's semantics, call by call) are in thrift_handler.Handler.

Errors come back as the IDL's exceptions carrying hibase's message: InvalidArgument (bad shape or
value) as IllegalArgument where the call declares it, a table that already exists as
AlreadyExists on createTable, anything else as IOError.

One thread per client connection (at most `workers`; more clients wait in the listen backlog),
scanners are numbered per server, closed by scannerClose or dropped after `scanner_timeout`
seconds unused. stop() (SIGTERM under serve()) stops accepting, lets running calls finish, closes
the connections and scanners, then closes the store when the server opened it.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from types import ModuleType
from typing import Any, Callable

from .. import errors
from ..client import Connection, connect
from .thrift_handler import LATEST_TIMESTAMP, Handler, load_idl

__all__ = ["ThriftServer", "Handler", "serve", "load_idl", "DEFAULT_PORT", "TRANSPORTS",
           "PROTOCOLS", "LATEST_TIMESTAMP"]

log = logging.getLogger(__name__)

DEFAULT_PORT = 9090
TRANSPORTS = ("buffered", "framed")
PROTOCOLS = ("binary", "compact")


# -- errors on the wire ------------------------------------------------------------------------

def _make_processor(idl: ModuleType, handler: Handler) -> Any:
    from thriftpy2.thrift import TApplicationException, TProcessor

    class Processor(TProcessor):
        """thriftpy2's processor, but every failure answers the call: hibase errors become the
        IDL exceptions the call declares, unexpected ones a TApplicationException."""

        def process(self, iprot: Any, oprot: Any) -> None:
            api, seqid, result, call = self.process_in(iprot)
            if isinstance(result, TApplicationException):
                return self.send_exception(oprot, api, result, seqid)
            try:
                result.success = call()
            except TApplicationException as exc:
                return self.send_exception(oprot, api, exc, seqid)
            except Exception as exc:
                if not self._declared(exc, result):
                    log.exception("%s failed", api)
                    return self.send_exception(oprot, api, TApplicationException(
                        TApplicationException.INTERNAL_ERROR,
                        f"{type(exc).__name__}: {exc}"), seqid)
            if not result.oneway:
                self.send_result(oprot, api, result, seqid)

        @staticmethod
        def _declared(exc: Exception, result: Any) -> bool:
            slots = {spec[2].__name__: spec[1] for k, spec in result.thrift_spec.items()
                     if spec[1] != "success" and len(spec) > 2 and isinstance(spec[2], type)}
            if isinstance(exc, (idl.IOError, idl.IllegalArgument, idl.AlreadyExists)):
                kind, err = type(exc).__name__, exc
                if kind not in slots:
                    kind, err = "IOError", idl.IOError(message=exc.message)
            else:
                message = str(exc) or type(exc).__name__
                if isinstance(exc, errors.TableExists) and "AlreadyExists" in slots:
                    kind = "AlreadyExists"
                elif isinstance(exc, errors.InvalidArgument) and "IllegalArgument" in slots:
                    kind = "IllegalArgument"
                else:
                    kind = "IOError"
                    if not isinstance(exc, errors.HibaseError):
                        log.exception("unexpected error")
                        message = f"{type(exc).__name__}: {message}"
                err = getattr(idl, kind)(message=message)
            if kind not in slots:
                return False
            setattr(result, slots[kind], err)
            return True

    return Processor(idl.Hbase, handler)


# -- the server --------------------------------------------------------------------------------

class ThriftServer:
    """The gateway: a listening socket, one thread per client connection, one Handler.

    `store` is a store folder (opened here and closed by stop()) or an open Connection (left
    open). Port 0 picks a free port; `address` tells which once started."""

    def __init__(self, store: str | os.PathLike | Connection, host: str = "127.0.0.1",
                 port: int = DEFAULT_PORT, transport: str = "buffered", protocol: str = "binary",
                 workers: int = 128, scanner_timeout: float = 600.0, backlog: int = 128):
        if transport not in TRANSPORTS:
            raise errors.InvalidArgument(f"transport must be one of {TRANSPORTS}, not "
                                         f"{transport!r}")
        if protocol not in PROTOCOLS:
            raise errors.InvalidArgument(f"protocol must be one of {PROTOCOLS}, not "
                                         f"{protocol!r}")
        if not isinstance(workers, int) or workers < 1:
            raise errors.InvalidArgument("workers must be an int >= 1")
        if not isinstance(port, int) or not 0 <= port < 65536:
            raise errors.InvalidArgument(f"port must be in [0, 65535], not {port!r}")
        if not scanner_timeout or scanner_timeout <= 0:
            raise errors.InvalidArgument("scanner_timeout must be seconds > 0")
        self.idl = load_idl()
        if isinstance(store, Connection):
            if store.table_prefix:
                raise errors.InvalidArgument(
                    "serve a Connection without table_prefix (Thrift clients add their own)")
            self.connection, self._owns_store = store, False
        elif isinstance(store, (str, os.PathLike)):
            self.connection, self._owns_store = connect(os.fspath(store)), True
        else:
            raise errors.InvalidArgument(
                f"serve a store folder or a Connection, not {type(store).__name__}")
        self.host, self.port = host, port
        self.transport, self.protocol = transport, protocol
        self.workers, self.backlog = workers, backlog
        self.handler = Handler(self.connection, self.idl, scanner_timeout)
        self._processor = _make_processor(self.idl, self.handler)
        self._trans_factory, self._proto_factory = _factories(transport, protocol)
        self._sock: socket.socket | None = None
        self._slots = threading.BoundedSemaphore(workers)
        self._clients: dict[socket.socket, threading.Thread] = {}
        self._clients_lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._acceptor: threading.Thread | None = None

    # -- life cycle --------------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the server listens on (the real port when started with port 0)."""
        return self.host, self.port

    def start(self) -> "ThriftServer":
        """Bind, listen and start accepting in a background thread."""
        if self._acceptor is not None:
            return self
        if self._stopping.is_set():
            raise errors.BackendError("the server was stopped")
        try:
            infos = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)
            family, _, _, _, addr = infos[0]
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(self.backlog)
        except OSError as exc:
            self._close_store()
            raise errors.BackendUnavailable(
                f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from None
        sock.settimeout(0.2)
        self._sock = sock
        self.port = sock.getsockname()[1]
        self.handler.server_name = self.host.encode()
        self.handler.server_port = self.port
        self._acceptor = threading.Thread(target=self._accept_loop, name="hibase-thrift-accept",
                                          daemon=True)
        self._acceptor.start()
        log.info("HBase Thrift1 gateway on %s:%d (%s, %s)", self.host, self.port,
                 self.transport, self.protocol)
        return self

    def serve_forever(self) -> None:
        """Start if needed and block until stop() (from another thread or a signal handler)."""
        self.start()
        try:
            while not self._stopping.wait(0.5):
                pass
        finally:
            self.stop()

    def request_stop(self) -> None:
        """Ask serve_forever() to stop (safe in a signal handler)."""
        self._stopping.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop accepting, let running calls finish, close client connections and scanners,
        and close the store if this server opened it. Idempotent."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            self._stopping.set()
            if self._sock is not None:
                try:  # wakes an accept() in progress at once (Linux: EINVAL), not at its timeout
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            if self._acceptor is not None and self._acceptor is not threading.current_thread():
                self._acceptor.join(timeout)
            if self._sock is not None:
                self._sock.close()
            with self._clients_lock:
                clients = list(self._clients.items())
            for sock, _ in clients:
                try:  # wakes a thread waiting for the next call; a running call still answers
                    sock.shutdown(socket.SHUT_RD)
                except OSError:
                    pass
            deadline = time.monotonic() + timeout
            for _, thread in clients:
                thread.join(max(0.0, deadline - time.monotonic()))
            busy = [t.name for _, t in clients if t.is_alive()]
            self.handler.close_scanners()
            if busy:
                log.warning("%d connection(s) still busy after %.0f s; store left open",
                            len(busy), timeout)
            else:
                self._close_store()
            self._stopped.set()
            log.info("HBase Thrift1 gateway on %s:%d stopped", self.host, self.port)

    def _close_store(self) -> None:
        if self._owns_store:
            self.connection.close()

    def __enter__(self) -> "ThriftServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- connections -------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        sock = self._sock
        assert sock is not None
        last_sweep = time.monotonic()
        while not self._stopping.is_set():
            now = time.monotonic()
            if now - last_sweep >= 1.0:
                last_sweep = now
                self.handler.sweep_scanners()
            if not self._slots.acquire(timeout=0.2):
                continue  # every worker busy: clients wait in the backlog
            try:
                client, peer = sock.accept()
            except (socket.timeout, BlockingIOError):
                self._slots.release()
                continue
            except OSError:
                self._slots.release()
                if self._stopping.is_set():
                    break
                log.exception("accept failed")
                time.sleep(0.1)
                continue
            client.settimeout(None)
            if client.family in (socket.AF_INET, socket.AF_INET6):
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            thread = threading.Thread(target=self._serve_client, args=(client, peer),
                                      name=f"hibase-thrift-{peer}", daemon=True)
            with self._clients_lock:
                self._clients[client] = thread
            thread.start()

    def _serve_client(self, client: socket.socket, peer: Any) -> None:
        from thriftpy2.transport import TSocket, TTransportException

        trans = self._trans_factory.get_transport(TSocket(sock=client))
        prot = self._proto_factory.get_protocol(trans)
        try:
            while not self._stopping.is_set():
                self._processor.process(prot, prot)
        except (TTransportException, EOFError, OSError):
            pass  # the client went away (or stop() shut the socket)
        except Exception:
            log.exception("connection from %s failed", peer)
        finally:
            try:
                trans.close()
            except Exception:  # pragma: no cover
                pass
            with self._clients_lock:
                self._clients.pop(client, None)
            self._slots.release()


def _factories(transport: str, protocol: str) -> tuple[Any, Any]:
    from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
    from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory

    trans = TFramedTransportFactory() if transport == "framed" else TBufferedTransportFactory()
    proto = TCompactProtocolFactory() if protocol == "compact" else TBinaryProtocolFactory()
    return trans, proto


def serve(store: str | os.PathLike | Connection, host: str = "127.0.0.1",
          port: int = DEFAULT_PORT, transport: str = "buffered", protocol: str = "binary",
          workers: int = 128, scanner_timeout: float = 600.0,
          ready: Callable[[ThriftServer], Any] | None = None) -> None:
    """Serve `store` over HBase's Thrift1 interface until SIGTERM or Ctrl-C (or until another
    thread calls stop() on the server handed to `ready`), then shut down cleanly."""
    server = ThriftServer(store, host, port, transport, protocol, workers, scanner_timeout)
    previous: dict[int, Any] = {}
    in_main = threading.current_thread() is threading.main_thread()
    try:
        server.start()
        if in_main:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda *_: server.request_stop())
        if ready is not None:
            ready(server)
        server.serve_forever()
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
