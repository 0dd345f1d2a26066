"""HBase's Thrift1 gateway over a hibase store: happybase (and any Thrift1 client) talks to an
embedded store exactly as it talks to HBase's own `hbase thrift` server.

    from hibase.server.thrift import ThriftServer
    with ThriftServer("data/", port=9090) as server:     # listening once the block starts
        ...                                             # happybase.Connection("127.0.0.1", 9090)
    # or, blocking until SIGTERM / Ctrl-C:  serve("data/", port=9090)

The interface is the Hbase.thrift IDL happybase ships, loaded with thriftpy2 at run time; the
calls themselves (HBase's semantics, call by call) are in handler.Handler.

Errors come back as the IDL's exceptions carrying hibase's message: InvalidArgument (bad shape or
value) as IllegalArgument where the call declares it, a table that already exists as
AlreadyExists on createTable, anything else as IOError.

Hostile or idle clients cannot lock others out: one loop thread (a selector) accepts and reads
every connection, and a call goes to one of `workers` threads only once all its bytes are in and
within the caps (`limits`: call, string and collection sizes, nesting). A call that breaks a cap
or is not Thrift gets a TApplicationException and its connection is closed (one log line). A
connection idle for `idle_timeout` seconds is closed (HBase's gateway: 60 s), a call not fully
sent within `read_timeout` is answered with an error and closed, and past `max_connections` new
connections are closed at once instead of waiting in a backlog. Scanners are numbered per
server, closed by scannerClose or dropped after `scanner_timeout` seconds unused. stop()
(SIGTERM under serve()) stops accepting, lets running calls finish, closes the connections and
scanners, then closes the store when the server opened it.

Exposing it (policy.py): only clients from `allow` (default loopback) are accepted, others are
closed at accept; `read_only` refuses every write and DDL call with an IOError (and opens the
store read-only); `tls_cert`/`tls_key` wrap every accepted socket in TLS 1.2+ (the handshake
runs in the loop, without blocking it, within `read_timeout`); hibase's own tables (hibase_meta,
index tables) are created, dropped or written only over connections that said hibase's hello
(with `token` when one is set).
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import socket
import ssl
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable

from .. import errors
from ..connection import Connection, connect
from . import wire
from ..store.base import LATEST_TIMESTAMP
from ..store.hbase.gateway import load_hello_idl
from ..store.hbase.thrift2 import load_idl2
from .thrift1_handler import Handler
from .thrift2_handler import Thrift2Handler
from .idl import load_idl
from .policy import DEFAULT_ALLOW, HELLO, Policy

__all__ = ["ThriftServer", "Handler", "serve", "load_idl", "DEFAULT_PORT", "INTERFACES",
           "TRANSPORTS",
           "PROTOCOLS", "LATEST_TIMESTAMP"]

log = logging.getLogger(__name__)

DEFAULT_PORT = 9090
INTERFACES = ("thrift1", "thrift2")
TRANSPORTS = ("buffered", "framed")
PROTOCOLS = ("binary", "compact")


# -- errors on the wire ------------------------------------------------------------------------

def _with_hello(service: Any) -> Any:
    """The Hbase service plus hibase's hello call (store/hbase/gateway.py), which the
    processor answers itself."""
    hello = load_hello_idl().HibaseGateway
    return type(service.__name__, (service,), {
        "thrift_services": list(service.thrift_services) + [HELLO],
        HELLO + "_args": getattr(hello, HELLO + "_args"),
        HELLO + "_result": getattr(hello, HELLO + "_result")})


def _make_processor(service: Any, handler: Any, io_error: Any, illegal: Any = None,
                    exists: Any = None, policy: Policy | None = None,
                    thrift2: bool = False) -> Any:
    """A processor of `service` calling `handler`; `io_error`, `illegal`, `exists`: the IDL's
    IOError / IllegalArgument / AlreadyExists classes (Thrift1's names, or Thrift2's TIOError
    and TIllegalArgument; thriftpy2 makes them when it loads the IDL, so like the service they
    have no static type: each has a `message` field). `policy`: calls it refuses are answered
    with `io_error` before the handler sees them (policy.py); the hello call marks the caller's
    connection trusted."""
    from thriftpy2.thrift import TApplicationException, TProcessor

    declared = tuple(c for c in (io_error, illegal, exists) if c is not None)

    class Processor(TProcessor):
        """thriftpy2's processor, but every failure answers the call: hibase errors become the
        IDL exceptions the call declares, unexpected ones a TApplicationException."""

        def process(self, iprot: Any, oprot: Any, caller: Any = None) -> None:
            api, seqid, result, call, args = self._read(iprot)
            if isinstance(result, TApplicationException):
                return self.send_exception(oprot, api, result, seqid)
            try:
                if api == HELLO:
                    ok = policy is None or policy.hello(args.token)
                    if caller is not None:
                        caller.trusted = ok or caller.trusted
                        if not ok:
                            log.warning("hello with a wrong token from %s", _peer(caller))
                    result.success = ok
                    return self.send_result(oprot, api, result, seqid)
                if policy is not None:
                    why = policy.refusal(api, args, bool(caller and caller.trusted), thrift2)
                    if why is not None:
                        raise io_error(message=why)
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

        def _read(self, iprot: Any) -> tuple:
            """thriftpy2's process_in, keeping the arguments for the policy."""
            from thriftpy2.thrift import TType

            api, _, seqid = iprot.read_message_begin()
            if api not in self._service.thrift_services:
                iprot.skip(TType.STRUCT)
                iprot.read_message_end()
                return api, seqid, TApplicationException(
                    TApplicationException.UNKNOWN_METHOD, f"unknown method {api!r}"), None, None
            args = getattr(self._service, api + "_args")()
            args.read(iprot)
            iprot.read_message_end()
            result = getattr(self._service, api + "_result")()
            names = [item[1] for item in args.thrift_spec.values()]

            def call() -> Any:
                return getattr(self._handler, api)(*(args.__dict__[k] for k in names))

            return api, seqid, result, call, args

        @staticmethod
        def _declared(exc: Exception, result: Any) -> bool:
            slots = {spec[2]: spec[1] for k, spec in result.thrift_spec.items()
                     if spec[1] != "success" and len(spec) > 2 and isinstance(spec[2], type)}
            if isinstance(exc, declared):
                kind, err = type(exc), exc
                if kind not in slots:
                    kind, err = io_error, io_error(message=exc.message)
            else:
                message = str(exc) or type(exc).__name__
                if isinstance(exc, errors.TableExists) and exists in slots:
                    kind = exists
                elif isinstance(exc, errors.InvalidArgument) and illegal in slots:
                    kind = illegal
                else:
                    kind = io_error
                    if not isinstance(exc, errors.HibaseError):
                        log.exception("unexpected error")
                        message = f"{type(exc).__name__}: {message}"
                err = kind(message=message)
            if kind not in slots:
                return False
            setattr(result, slots[kind], err)
            return True

    return Processor(service, handler)


# -- the server --------------------------------------------------------------------------------

class ThriftServer:
    """The gateway: a listening socket, a loop thread reading every connection, `workers`
    threads running complete calls, one Handler.

    `store` is a store folder (opened here and closed by stop()) or an open Connection (left
    open). Port 0 picks a free port; `address` tells which once started. `read_only` refuses
    every write and DDL call (a folder is opened read-only); `allow`: the networks clients may
    connect from (CIDR strings; default loopback; None: any); `token`: what hibase clients'
    hello must carry to write hibase's own tables; `tls_cert`/`tls_key`: PEM files, TLS 1.2+."""

    def __init__(self, store: str | os.PathLike | Connection, host: str = "127.0.0.1",
                 port: int = DEFAULT_PORT, transport: str = "buffered", protocol: str = "binary",
                 workers: int = 32, scanner_timeout: float = 600.0, backlog: int = 1024,
                 idle_timeout: float = 60.0, read_timeout: float = 60.0,
                 max_connections: int = 4096, limits: wire.Limits | None = None,
                 interface: str = "thrift1", read_only: bool = False,
                 allow: Iterable[str] | None = DEFAULT_ALLOW, token: str | None = None,
                 tls_cert: str | os.PathLike | None = None,
                 tls_key: str | os.PathLike | None = None):
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
        for name, value in (("scanner_timeout", scanner_timeout),
                            ("idle_timeout", idle_timeout), ("read_timeout", read_timeout)):
            if not isinstance(value, (int, float)) or value <= 0:
                raise errors.InvalidArgument(f"{name} must be seconds > 0, not {value!r}")
        if not isinstance(max_connections, int) or max_connections < 1:
            raise errors.InvalidArgument("max_connections must be an int >= 1")
        limits = limits or wire.Limits()
        for name in ("max_message", "max_string", "max_items", "max_depth"):
            if not isinstance(getattr(limits, name), int) or getattr(limits, name) < 1:
                raise errors.InvalidArgument(f"{name} must be an int >= 1")
        if interface not in INTERFACES:
            raise errors.InvalidArgument(f"interface must be one of {INTERFACES}, not "
                                         f"{interface!r}")
        self.interface = interface
        self.idl = load_idl()
        try:
            self.policy = Policy(read_only, allow, token)
        except ValueError as exc:
            raise errors.InvalidArgument(str(exc)) from None
        self._tls: ssl.SSLContext | None = None
        if tls_cert is not None or tls_key is not None:
            self._tls = server_tls_context(tls_cert, tls_key)
        if isinstance(store, Connection):
            if store.table_prefix:
                raise errors.InvalidArgument(
                    "serve a Connection without table_prefix (Thrift clients add their own)")
            self.connection, self._owns_store = store, False
        elif isinstance(store, (str, os.PathLike)):
            # read-only: the store too, so this gateway can run beside a writer of it
            self.connection = connect(os.fspath(store), read_only=self.policy.read_only)
            self._owns_store = True
        else:
            raise errors.InvalidArgument(
                f"serve a store folder or a Connection, not {type(store).__name__}")
        self.host, self.port = host, port
        self.transport, self.protocol = transport, protocol
        self.workers, self.backlog = workers, backlog
        self.idle_timeout, self.read_timeout = float(idle_timeout), float(read_timeout)
        self.max_connections, self.limits = max_connections, limits
        self._scanner = wire.MessageScanner(protocol, limits)
        handler = Handler(self.connection, self.idl, scanner_timeout)
        self.handler: Handler | Thrift2Handler = handler
        if interface == "thrift1":
            self._processor = _make_processor(_with_hello(self.idl.Hbase), self.handler,
                                              self.idl.IOError, self.idl.IllegalArgument,
                                              self.idl.AlreadyExists, self.policy)
        else:  # the Thrift2 calls hibase serves, answered through the Thrift1 handler
            idl2 = load_idl2()
            self.handler = Thrift2Handler(handler, idl2)
            self._processor = _make_processor(idl2.THBaseService, self.handler, idl2.TIOError,
                                              idl2.TIllegalArgument, policy=self.policy,
                                              thrift2=True)
        self._trans_factory, self._proto_factory = _factories(transport, protocol)
        self._sock: socket.socket | None = None
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hibase-thrift")
        self._conns: dict[socket.socket, _Conn] = {}
        self._returned: deque[_Conn] = deque()
        self._inflight = 0
        self._inflight_lock = threading.Lock()
        self._refused, self._refused_logged = 0, float("-inf")
        self._denied: dict[str, float] = {}  # address -> when its refusal was last logged
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._acceptor: threading.Thread | None = None
        # serve(thrift2_port=...): the Thrift2 server beside this one, on the same store
        self.thrift2: ThriftServer | None = None

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
            self._pool.shutdown(wait=False)
            for s in (self._sel, self._wake_r, self._wake_w):
                s.close()
            raise errors.BackendUnavailable(
                f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from None
        sock.setblocking(False)
        self._sock = sock
        self._sel.register(sock, selectors.EVENT_READ, _LISTEN)
        self._sel.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self.port = sock.getsockname()[1]
        if isinstance(self.handler, Handler):  # Thrift1's region locations name this server
            self.handler.server_name = self.host.encode()
            self.handler.server_port = self.port
        self._acceptor = threading.Thread(target=self._loop, name="hibase-thrift-loop",
                                          daemon=True)
        self._acceptor.start()
        p = self.policy
        log.info("HBase %s gateway on %s:%d (%s, %s%s%s%s; clients from %s)",
                 self.interface.capitalize(), self.host, self.port, self.transport,
                 self.protocol, ", TLS" if self._tls else "", ", read-only" if p.read_only else "",
                 ", token" if p.token else "",
                 "anywhere" if p.allow is None else " ".join(map(str, p.allow)))
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
            self._wake()
            if self._acceptor is not None and self._acceptor is not threading.current_thread():
                self._acceptor.join(timeout)
            if self._sock is not None:
                self._sock.close()
            deadline = time.monotonic() + timeout
            while self._inflight and time.monotonic() < deadline:  # running calls finish
                time.sleep(0.01)
            busy = self._inflight
            self._pool.shutdown(wait=not busy)
            with self._inflight_lock:
                conns = list(self._conns.values())
            for conn in conns:
                if not conn.busy:
                    self._close(conn)
            self._sel.close()
            self._wake_r.close()
            self._wake_w.close()
            self.handler.close_scanners()
            if busy:
                log.warning("%d call(s) still running after %.0f s; store left open",
                            busy, timeout)
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
    def _loop(self) -> None:
        """The one thread that accepts, reads and times out connections: a call is read here
        until complete (and checked against the caps), then run by a worker; an idle or a
        half-sent connection costs a buffer, never a thread."""
        sel = self._sel
        last_sweep = time.monotonic()
        while not self._stopping.is_set():
            try:
                events = sel.select(timeout=0.2)
            except OSError:  # pragma: no cover - the selector was closed by stop()
                break
            for key, _ in events:
                if key.data is _LISTEN:
                    self._accept()
                elif key.data is _WAKE:
                    try:
                        self._wake_r.recv(4096)
                    except OSError:
                        pass
                else:
                    self._on_readable(key.data)
            while self._returned:
                conn = self._returned.popleft()
                if not conn.closed:
                    conn.busy = False
                    conn.last = time.monotonic()
                    sel.register(conn.sock, selectors.EVENT_READ, conn)
                    self._next_call(conn)
            now = time.monotonic()
            if now - last_sweep >= 1.0:
                last_sweep = now
                self.handler.sweep_scanners()
                self._sweep(now)

    def _accept(self) -> None:
        assert self._sock is not None
        for _ in range(256):  # a burst of clients, without starving the connections already in
            try:
                client, peer = self._sock.accept()
            except (BlockingIOError, socket.timeout):
                return
            except OSError as exc:
                if self._stopping.is_set():
                    return
                log.warning("accept failed: %s", exc.strerror or exc)  # e.g. out of file handles
                time.sleep(0.05)
                return
            if len(self._conns) >= self.max_connections:
                self._refused += 1
                now = time.monotonic()
                if now - self._refused_logged >= 10.0:
                    log.warning("refusing connections: %d open, the limit (%d refused so far)",
                                len(self._conns), self._refused)
                    self._refused_logged = now
                client.close()
                continue
            host = peer[0] if isinstance(peer, tuple) and peer else ""
            if client.family in (socket.AF_INET, socket.AF_INET6) and \
                    not self.policy.allowed(host):
                self._deny(client, host)
                continue
            client.setblocking(False)
            if client.family in (socket.AF_INET, socket.AF_INET6):
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            handshaking = False
            if self._tls is not None:
                try:
                    client = self._tls.wrap_socket(client, server_side=True,
                                                   do_handshake_on_connect=False)
                except OSError as exc:
                    log.warning("closing connection from %s: %s", host, exc)
                    client.close()
                    continue
                handshaking = True
            conn = _Conn(client, peer)
            conn.handshaking = handshaking
            with self._inflight_lock:
                self._conns[client] = conn
            self._sel.register(client, selectors.EVENT_READ, conn)

    def _deny(self, client: socket.socket, host: str) -> None:
        """Close a connection from outside the allow-list before reading anything (one log
        line per address per 10 s)."""
        client.close()
        now = time.monotonic()
        if now - self._denied.get(host, float("-inf")) >= 10.0:
            if len(self._denied) > 10_000:
                self._denied.clear()
            self._denied[host] = now
            log.warning("refused a connection from %s: not in the allowed networks (%s)", host,
                        " ".join(map(str, self.policy.allow or ())))

    def _handshake(self, conn: "_Conn") -> bool:
        """Advance a TLS handshake without blocking; True once done (False: waiting, or failed
        and closed)."""
        sock = conn.sock
        if not isinstance(sock, ssl.SSLSocket):  # a plain socket (handshaking is TLS only)
            return True
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._want_write(conn, False)
            return False
        except ssl.SSLWantWriteError:  # the client is slow to read: wait until it can take more
            self._want_write(conn, True)
            return False
        except (OSError, ValueError) as exc:  # not TLS (a plain client), a bad certificate...
            log.warning("closing connection from %s: TLS handshake failed (%s)", _peer(conn),
                        getattr(exc, "reason", None) or exc)
            self._close(conn)
            return False
        self._want_write(conn, False)
        conn.handshaking = False
        conn.last = time.monotonic()
        return True

    def _want_write(self, conn: "_Conn", on: bool) -> None:
        """Wake for conn when it can be written too (a handshake waiting to send), or not."""
        if conn.want_write != on:
            conn.want_write = on
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0)
            self._sel.modify(conn.sock, events, conn)

    def _on_readable(self, conn: "_Conn") -> None:
        if conn.handshaking and not self._handshake(conn):
            return
        got = 0
        sock = conn.sock
        # TLS: bytes already decrypted wait in the socket, not the selector's view of it
        tls = sock if isinstance(sock, ssl.SSLSocket) else None
        while got < _READ_PER_EVENT or tls is not None and tls.pending():
            try:
                data = conn.sock.recv(_RECV)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                    ssl.SSLWantWriteError):
                break
            except OSError:
                return self._close(conn)
            if not data:
                return self._close(conn)  # the client went away
            if not conn.buf:
                conn.started = time.monotonic()
            conn.buf += data
            got += len(data)
        conn.last = time.monotonic()
        if len(conn.buf) >= conn.need:
            self._next_call(conn)

    def _next_call(self, conn: "_Conn") -> None:
        """Hand the first complete call in conn's buffer to a worker; wait for more bytes if
        it is not all there; answer and close if it is not a call this server reads."""
        if not conn.buf:
            return
        try:
            start, end = self._frame(conn.buf)
        except wire.Incomplete as exc:
            conn.need, conn.call = exc.need, (exc.name, exc.seqid)
            return
        except wire.WireError as exc:
            return self._reject(conn, exc)
        call = bytes(conn.buf[start:end])
        del conn.buf[:end]
        conn.need, conn.started = 0, time.monotonic() if conn.buf else 0.0
        conn.busy = True
        self._sel.unregister(conn.sock)
        with self._inflight_lock:
            self._inflight += 1
        self._pool.submit(self._run_call, conn, call)

    def _frame(self, buf: bytearray) -> tuple[int, int]:
        """(start, end) of the first call in buf, framed or not."""
        if self.transport != "framed":
            return 0, self._scanner.end(buf)
        if len(buf) < 4:
            raise wire.Incomplete(4)
        size = int.from_bytes(buf[:4], "big", signed=True)
        if size <= 0 or size > self.limits.max_message:
            raise wire.WireError(f"frame of {size} bytes outside (0, {self.limits.max_message}]")
        if len(buf) < 4 + size:
            raise wire.Incomplete(4 + size)
        try:
            end = self._scanner.end(memoryview(buf)[4:4 + size])
        except wire.Incomplete:
            raise wire.WireError("frame ends inside its call") from None
        if end != size:
            raise wire.WireError(f"{size - end} stray bytes after the call in its frame")
        return 4, 4 + size

    def _run_call(self, conn: "_Conn", call: bytes) -> None:
        """Worker: run one complete call from memory, send the reply, give the connection back
        to the loop (or close it)."""
        try:
            itrans, otrans = self._buffer(call), self._buffer()
            out_prot = self._proto_factory.get_protocol(otrans)
            try:
                self._processor.process(self._proto_factory.get_protocol(itrans), out_prot,
                                        conn)
            except Exception as exc:  # the call parsed as a message but not as its arguments
                log.warning("closing connection from %s: bad call (%s: %s)", _peer(conn),
                            type(exc).__name__, exc)
                return self._close(conn, from_worker=True)
            self._send(conn, otrans.getvalue())
            if self._stopping.is_set():
                return self._close(conn, from_worker=True)
            self._returned.append(conn)
            self._wake()
        except OSError:
            self._close(conn, from_worker=True)
        finally:
            with self._inflight_lock:
                self._inflight -= 1

    def _send(self, conn: "_Conn", reply: bytes) -> None:
        if self.transport == "framed":
            reply = len(reply).to_bytes(4, "big") + reply
        conn.sock.settimeout(self.read_timeout)  # a client that never reads: not forever
        try:
            conn.sock.sendall(reply)
        finally:
            conn.sock.setblocking(False)

    def _reject(self, conn: "_Conn", exc: wire.WireError) -> None:
        """Answer a call this server will not read with a Thrift error, log one line, close."""
        from thriftpy2.thrift import TApplicationException, TMessageType

        log.warning("closing connection from %s: %s", _peer(conn), exc)
        try:
            otrans = self._buffer()
            prot = self._proto_factory.get_protocol(otrans)
            prot.write_message_begin(exc.name, TMessageType.EXCEPTION, exc.seqid)
            prot.write_struct(TApplicationException(TApplicationException.PROTOCOL_ERROR,
                                                    str(exc)))
            prot.write_message_end()
            otrans.flush()
            reply = otrans.getvalue()
            if self.transport == "framed":
                reply = len(reply).to_bytes(4, "big") + reply
            conn.sock.send(reply)  # best effort, never waits: the connection closes anyway
        except (OSError, Exception):  # noqa: BLE001 - a reply we could not write is no error
            pass
        self._close(conn)

    def _sweep(self, now: float) -> None:
        """Close connections idle past idle_timeout and calls half-sent past read_timeout."""
        with self._inflight_lock:
            conns = list(self._conns.values())
        for conn in conns:
            if conn.busy:
                continue
            if conn.handshaking:
                if now - conn.started > self.read_timeout:
                    log.warning("closing connection from %s: no TLS handshake after %g s",
                                _peer(conn), self.read_timeout)
                    self._close(conn)
            elif conn.buf and now - conn.started > self.read_timeout:
                self._reject(conn, wire.WireError(
                    f"call not complete after {self.read_timeout:g} s", *conn.call))
            elif not conn.buf and now - conn.last > self.idle_timeout:
                log.debug("closing connection from %s: idle %.0f s", _peer(conn),
                          now - conn.last)
                self._close(conn)

    def _close(self, conn: "_Conn", from_worker: bool = False) -> None:
        if conn.closed:
            return
        conn.closed = True
        if not from_worker and not conn.busy:
            try:
                self._sel.unregister(conn.sock)
            except (KeyError, ValueError, OSError):
                pass
        try:
            conn.sock.close()
        except OSError:  # pragma: no cover
            pass
        with self._inflight_lock:  # the loop and the workers both close
            self._conns.pop(conn.sock, None)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # the pipe is full: the loop is awake anyway
            pass

    def _buffer(self, data: bytes | None = None) -> Any:
        from thriftpy2.transport import TMemoryBuffer

        if self.protocol == "binary":
            from thriftpy2.transport import TCyMemoryBuffer
            return TCyMemoryBuffer(data) if data is not None else TCyMemoryBuffer()
        return TMemoryBuffer(data) if data is not None else TMemoryBuffer()

    @property
    def connections(self) -> int:
        """Client connections open now."""
        return len(self._conns)


_LISTEN, _WAKE = object(), object()
_RECV = 256 * 1024
_READ_PER_EVENT = 4 * 1024 * 1024  # then let other connections have a turn


class _Conn:
    """One client connection: its socket, the bytes of a call not yet complete, its clock."""
    __slots__ = ("sock", "peer", "buf", "need", "call", "started", "last", "busy", "closed",
                 "handshaking", "want_write", "trusted")

    def __init__(self, sock: socket.socket, peer: Any):
        self.sock, self.peer = sock, peer
        self.buf = bytearray()
        self.need = 0
        self.call: tuple[str, int] = ("", 0)  # name and seqid of a call partly read
        self.started = self.last = time.monotonic()
        self.busy = self.closed = False
        self.handshaking = False  # TLS: the handshake is not done yet
        self.want_write = False  # ... and waits to send (registered for EVENT_WRITE too)
        self.trusted = False  # said hello: may write hibase's own tables (policy.py)


def _peer(conn: _Conn) -> str:
    p = conn.peer
    return f"{p[0]}:{p[1]}" if isinstance(p, tuple) and len(p) >= 2 else str(p)


def server_tls_context(cert: str | os.PathLike | None,
                       key: str | os.PathLike | None) -> ssl.SSLContext:
    """The gateway's TLS context: TLS 1.2 or newer, its certificate chain (PEM) and key."""
    if cert is None or key is None:
        raise errors.InvalidArgument("TLS needs both a certificate and its key (tls_cert, "
                                     "tls_key)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(os.fspath(cert), os.fspath(key))
    except (OSError, ssl.SSLError) as exc:
        raise errors.InvalidArgument(
            f"cannot load the TLS certificate {os.fspath(cert)!r} and key "
            f"{os.fspath(key)!r}: {getattr(exc, 'strerror', None) or exc}") from None
    return ctx


def _factories(transport: str, protocol: str) -> tuple[Any, Any]:
    from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
    from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory

    trans = TFramedTransportFactory() if transport == "framed" else TBufferedTransportFactory()
    proto = TCompactProtocolFactory() if protocol == "compact" else TBinaryProtocolFactory()
    return trans, proto


def serve(store: str | os.PathLike | Connection, host: str = "127.0.0.1",
          port: int = DEFAULT_PORT, transport: str = "buffered", protocol: str = "binary",
          workers: int = 32, scanner_timeout: float = 600.0,
          ready: Callable[[ThriftServer], Any] | None = None, thrift2_port: int | None = None,
          **options: Any) -> None:
    """Serve `store` over HBase's Thrift1 interface until SIGTERM or Ctrl-C (or until another
    thread calls stop() on the server handed to `ready`), then shut down cleanly. With
    `thrift2_port` the Thrift2 side (one-call short scans) listens there too, on the same
    store (the server handed to `ready` has it as `.thrift2`). `options`: ThriftServer's
    idle_timeout, read_timeout, max_connections, limits, backlog, read_only, allow, token,
    tls_cert, tls_key (both servers)."""
    owned = None
    if thrift2_port is not None and not isinstance(store, Connection):
        # one store, both servers
        store = owned = connect(os.fspath(store), read_only=bool(options.get("read_only")))
    server2 = None
    previous: dict[signal.Signals, Any] = {}
    in_main = threading.current_thread() is threading.main_thread()
    try:
        server = ThriftServer(store, host, port, transport, protocol, workers, scanner_timeout,
                              **options)
        if thrift2_port is not None:
            server2 = ThriftServer(store, host, thrift2_port, transport, protocol, workers,
                                   scanner_timeout, interface="thrift2", **options)
        server.thrift2 = server2
        try:
            server.start()
            if server2 is not None:
                server2.start()
            if in_main:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    previous[sig] = signal.signal(sig, lambda *_: server.request_stop())
            if ready is not None:
                ready(server)
            server.serve_forever()
        finally:
            if server2 is not None:
                server2.stop()
            server.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        if owned is not None:
            owned.close()
