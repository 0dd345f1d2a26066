"""What hibase's Thrift gateway (`hibase serve --thrift`) and hibase's own HBase backend share
beyond HBase's IDL: the names hibase owns, the hello call that tells the gateway a connection is
hibase's backend, and TLS client sockets (thrifts:// URLs).

Reserved names. The HBase backend keeps its catalog (`hibase_meta`) and its key-value tables
(`hibase_kv__idx__t`, `hibase_kv__lidx__t`...) as ordinary HBase tables; the embedded store's
own key-value tables start with `__`. A gateway refuses createTable, deleteTable, enable- and
disableTable and every write of such a table to a connection that has not said hello, with an
IOError naming the table and containing RESERVED_MARK.

Hello. `hibaseHello(token)` is one call beside the Hbase service (not in HBase's IDL): the
gateway answers true and trusts that TCP connection from then on when the token matches its
`--token` (any token when it has none), false otherwise. The HBase backend says it lazily: only
when a call comes back refused with RESERVED_MARK does it say hello on that connection and send
the call again, so real HBase (which never refuses that way) never sees the call.
"""

from __future__ import annotations

import io
import re
import ssl
import threading
from types import ModuleType
from typing import Any

__all__ = ["is_reserved", "RESERVED_MARK", "load_hello_idl", "hello", "client_tls_context",
           "tls_pool"]

# what a refusal of a reserved name says (the backend's cue to say hello and try again)
RESERVED_MARK = "is reserved for hibase clients"

_MARKERS = ("hibase_meta", "hibase_kv")
# the layers above name their key-value tables `__kind__<table>` (index entries, value counts...)
_KIND_MARK = re.compile(r"__[a-z]+__")


def is_reserved(name: str | bytes) -> bool:
    """Whether `name` is a table hibase owns: its catalog and key-value tables on HBase (with
    or without a URL prefix: `app_hibase_meta`), any name starting `hibase_` or `__` (the
    embedded store's internal tables), or containing a key-value table's kind marker
    (`__kind__`, as the index layer's tables have)."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name.startswith(("hibase_", "__")) or any(m in name for m in _MARKERS) \
        or _KIND_MARK.search(name) is not None


_HELLO_IDL = """
service HibaseGateway {
  /* true: this connection is trusted with hibase's tables (token: the gateway's --token) */
  bool hibaseHello(1: binary token)
}
"""
_hello_lock = threading.Lock()
_hello_idl: ModuleType | None = None


def load_hello_idl() -> ModuleType:
    """The hello service's IDL (one call), loaded once with thriftpy2."""
    global _hello_idl
    with _hello_lock:
        if _hello_idl is None:
            import thriftpy2

            _hello_idl = thriftpy2.load_fp(io.StringIO(_HELLO_IDL), "hibase_gateway_thrift")
        return _hello_idl


def hello(conn: Any, token: str | bytes | None = None, protocol: str = "binary") -> bool:
    """Say hello on an open happybase Connection (its current TCP connection; `protocol` the
    one it was opened with): True when the gateway trusts it with hibase's tables from now on.
    Real HBase answers with an unknown method error (thriftpy2's TApplicationException)."""
    from happybase.connection import THRIFT_PROTOCOLS
    from thriftpy2.thrift import TClient

    if isinstance(token, str):
        token = token.encode()
    conn.open()
    proto = THRIFT_PROTOCOLS[protocol](conn.transport, decode_response=False)
    client = TClient(load_hello_idl().HibaseGateway, proto)
    return bool(client.hibaseHello(token or b""))


def client_tls_context(cafile: str | None = None) -> ssl.SSLContext:
    """A client's TLS context: TLS 1.2 or newer, the server's certificate verified against
    `cafile` (PEM; the system's CAs without it) and its name checked against the host."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def tls_pool(size: int, context: ssl.SSLContext, **kwargs: Any) -> Any:
    """A happybase ConnectionPool whose connections speak TLS (thriftpy2's TSSLSocket with
    `context`); `kwargs` as happybase.ConnectionPool's."""
    import happybase
    from happybase.connection import Connection
    from thriftpy2.thrift import TClient
    from thriftpy2.transport import TSSLSocket, TTransportException

    import Hbase_thrift  # loaded by happybase

    class Socket(TSSLSocket):
        def open(self) -> None:  # thriftpy2's TSocket.open, but a failed handshake says why
            self._init_sock()
            sock = self.sock
            try:
                if self.connect_timeout:
                    sock.settimeout(self.connect_timeout)
                sock.connect((self.host, self.port))
                if self.socket_timeout:
                    sock.settimeout(self.socket_timeout)
            except (ssl.SSLError, ssl.CertificateError) as exc:
                self.close()
                why = getattr(exc, "verify_message", None) or getattr(exc, "reason", None) \
                    or exc
                raise TTransportException(
                    type=TTransportException.NOT_OPEN,
                    message=f"TLS handshake with {self.host}:{self.port} failed: {why} "
                            f"({exc})") from None
            except OSError:
                self.close()
                raise TTransportException(
                    type=TTransportException.NOT_OPEN,
                    message=f"Could not connect to {(self.host, self.port)}") from None

    class TLSConnection(Connection):
        def _refresh_thrift_client(self) -> None:
            sock = Socket(host=self.host, port=self.port, socket_timeout=self.timeout,
                          ssl_context=context)
            self.transport = self._transport_class(sock)
            protocol = self._protocol_class(self.transport, decode_response=False)
            self.client = TClient(Hbase_thrift.Hbase, protocol)

    class TLSConnectionPool(happybase.ConnectionPool):
        def __init__(self, size: int, **kw: Any) -> None:  # happybase's, with TLSConnection
            import queue

            self._lock = threading.Lock()
            self._queue: queue.LifoQueue[Any] = queue.LifoQueue(maxsize=size)
            self._thread_connections = threading.local()
            kw["autoconnect"] = False
            for _ in range(size):
                self._queue.put(TLSConnection(**kw))
            with self.connection():  # the first connects now: a bad host or CA fails here
                pass

    return TLSConnectionPool(size, **kwargs)
