"""The gateway under hostile or careless clients (issue 15, item 4): idle sockets, half-sent
calls, garbage, claimed lengths of gigabytes and connection floods must not lock out a normal
happybase client, and each gets a Thrift error (where it sent a call) and a closed connection."""

from __future__ import annotations

import logging
import re
import socket
import struct
import subprocess
import sys
import time

import happybase
import pytest
from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
from thriftpy2.thrift import TApplicationException, TMessageType
from thriftpy2.transport import TMemoryBuffer

from hibase.server import wire
from hibase.server.thrift import ThriftServer, load_idl

TIMEOUT_MS = 20_000


@pytest.fixture
def db(embedded_db):
    return embedded_db


def _raw(server: ThriftServer) -> socket.socket:
    return socket.create_connection(server.address, timeout=20)


def _read_all(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (20 s socket timeout)."""
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out
        out += chunk


def _reply_error(data: bytes, framed: bool = False) -> tuple[str, int, str]:
    """(method name, seqid, message) of a TApplicationException reply."""
    if framed:
        (size,) = struct.unpack(">i", data[:4])
        data = data[4:4 + size]
    prot = TBinaryProtocolFactory().get_protocol(TMemoryBuffer(data))
    name, mtype, seqid = prot.read_message_begin()
    assert mtype == TMessageType.EXCEPTION
    exc = TApplicationException()
    prot.read_struct(exc)
    return name, seqid, exc.message


def _call(name: str, args: object, seqid: int = 1, compact: bool = False) -> bytes:
    """A real Thrift1 call as a client encodes it."""
    trans = TMemoryBuffer()
    prot = (TCompactProtocolFactory() if compact else TBinaryProtocolFactory()).get_protocol(trans)
    prot.write_message_begin(name, TMessageType.CALL, seqid)
    prot.write_struct(args)
    prot.write_message_end()
    return trans.getvalue()


def _get_row_args(row: bytes = b"r", table: bytes = b"t"):
    idl = load_idl()
    return idl.Hbase.getRow_args(tableName=table, row=row, attributes={})


def _mutate_rows_args(n: int):
    idl = load_idl()
    batches = [idl.BatchMutation(row=b"r%05d" % i,
                                 mutations=[idl.Mutation(column=b"f:a", value=b"x" * 10)])
               for i in range(n)]
    return idl.Hbase.mutateRows_args(tableName=b"t", rowBatches=batches, attributes={})


def _happybase(server: ThriftServer, **kw) -> happybase.Connection:
    host, port = server.address
    return happybase.Connection(host, port, timeout=TIMEOUT_MS, **kw)


# -- the message scanner -----------------------------------------------------------------------

@pytest.mark.parametrize("compact", [False, True])
def test_scanner_finds_the_end_of_real_calls_and_waits_on_every_prefix(compact):
    protocol = "compact" if compact else "binary"
    scanner = wire.MessageScanner(protocol, wire.Limits())
    for args, name in [(_get_row_args(), "getRow"), (_mutate_rows_args(50), "mutateRows")]:
        call = _call(name, args, seqid=7, compact=compact)
        assert scanner.end(call + b"next call") == len(call)
        for cut in range(len(call)):
            with pytest.raises(wire.Incomplete) as info:
                scanner.end(call[:cut])
            assert cut < info.value.need <= len(call)


def test_scanner_caps_answer_without_allocating():
    scanner = wire.MessageScanner("binary", wire.Limits(max_string=1000, max_items=10,
                                                        max_message=100_000))
    header = struct.pack(">iI", -0x7FFEFFFF, 6) + b"getRow" + struct.pack(">i", 9)
    huge = header + bytes([11]) + struct.pack(">hi", 1, 2**31 - 1)  # a 2 GB tableName
    with pytest.raises(wire.WireError, match="over the 1000-byte cap") as info:
        scanner.end(huge)
    assert (info.value.name, info.value.seqid) == ("getRow", 9)
    with pytest.raises(wire.WireError, match="over the 10 cap"):
        scanner.end(_call("mutateRows", _mutate_rows_args(11)))
    with pytest.raises(wire.WireError, match="not a strict binary-protocol call"):
        scanner.end(b"GET / HTTP/1.1\r\n\r\n")
    with pytest.raises(wire.WireError, match="call larger than"):
        wire.MessageScanner("binary", wire.Limits(max_message=200)).end(
            _call("mutateRows", _mutate_rows_args(10)))
    deep = header + bytes([12]) + struct.pack(">h", 1) + (bytes([12]) + struct.pack(">h", 1)) * 80
    with pytest.raises(wire.WireError, match="nesting deeper"):
        scanner.end(deep)


# -- the server --------------------------------------------------------------------------------

def test_idle_connection_is_closed_after_the_idle_timeout(db):
    with ThriftServer(db, port=0, idle_timeout=0.5) as server:
        s = _raw(server)
        start = time.monotonic()
        assert _read_all(s) == b""  # closed by the server, nothing sent
        assert time.monotonic() - start >= 0.5
        s.close()
        hb = _happybase(server)  # an active client is not closed by the same clock
        hb.create_table("t", {"f": {}})
        for _ in range(3):
            time.sleep(0.3)
            assert hb.tables() == [b"t"]
        hb.close()


@pytest.mark.parametrize("framed", [False, True])
def test_oversized_call_gets_an_error_and_a_close(db, framed, caplog):
    kw = {"transport": "framed"} if framed else {}
    with ThriftServer(db, port=0, limits=wire.Limits(max_string=1 << 20), **kw) as server:
        s = _raw(server)
        header = struct.pack(">iI", -0x7FFEFFFF, 6) + b"getRow" + struct.pack(">i", 5)
        body = header + bytes([11]) + struct.pack(">hi", 1, 2**31 - 1)  # claims a 2 GB string
        with caplog.at_level(logging.WARNING, logger="hibase.server.thrift"):
            if framed:
                s.sendall(struct.pack(">i", 2**31 - 1) + body)  # and a 2 GB frame
            else:
                s.sendall(body)
            name, seqid, message = _reply_error(_read_all(s), framed)
        s.close()
        if framed:
            assert "frame of 2147483647 bytes" in message
        else:
            assert (name, seqid) == ("getRow", 5)
            assert "string of 2147483647 bytes over the 1048576-byte cap" in message
        lines = [r for r in caplog.records if r.name == "hibase.server.thrift"]
        assert len(lines) == 1 and lines[0].exc_info is None
        assert "closing connection" in lines[0].getMessage()
        hb = _happybase(server, **kw)  # the server still serves
        assert hb.tables() == []
        hb.close()


def test_garbage_gets_an_error_and_a_close_with_one_log_line(db, caplog):
    with ThriftServer(db, port=0) as server, \
            caplog.at_level(logging.WARNING, logger="hibase.server.thrift"):
        for garbage in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", bytes(range(256)) * 4,
                        b"\x80\x01\x00\x01" + b"\xff" * 64):
            s = _raw(server)
            s.sendall(garbage)
            _, _, message = _reply_error(_read_all(s))
            assert message
            s.close()
        lines = [r for r in caplog.records if r.name == "hibase.server.thrift"]
        assert len(lines) == 3 and all(r.exc_info is None for r in lines)


def test_half_sent_call_is_answered_and_closed_after_the_read_timeout(db):
    with ThriftServer(db, port=0, read_timeout=0.5) as server:
        s = _raw(server)
        call = _call("getRow", _get_row_args(), seqid=3)
        s.sendall(call[:-3])
        name, seqid, message = _reply_error(_read_all(s))
        assert (name, seqid) == ("getRow", 3) and "not complete after 0.5 s" in message
        s.close()


def test_connection_limit_refuses_instead_of_blocking(db):
    with ThriftServer(db, port=0, max_connections=3) as server:
        idle = [_raw(server) for _ in range(3)]
        deadline = time.monotonic() + 20
        while server.connections < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.connections == 3
        extra = _raw(server)
        assert _read_all(extra) == b""  # closed at once, not left in a backlog
        extra.close()
        hb = happybase.Connection(*server.address, timeout=TIMEOUT_MS, autoconnect=False)
        hb.open()
        with pytest.raises(Exception):  # refused: the connection is closed under the call
            hb.tables()
        hb.close()
        idle[0].close()
        while server.connections > 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        hb = _happybase(server)  # a slot is free again
        assert hb.tables() == []
        hb.close()
        for s in idle[1:]:
            s.close()


def test_a_normal_client_is_served_while_hundreds_of_idle_and_half_sent_sockets_are_open(db):
    # the old server ran one thread per connection, at most 128: 130 idle sockets locked out
    # every other client
    with ThriftServer(db, port=0, workers=4) as server:
        idle = [_raw(server) for _ in range(300)]
        slow = []
        call = _call("mutateRows", _mutate_rows_args(20))
        for _ in range(50):  # each sends most of a call, then nothing
            s = _raw(server)
            s.sendall(call[:-1])
            slow.append(s)
        garbage = []
        for i in range(50):  # claimed 2 GB strings and frames of noise
            s = _raw(server)
            s.sendall(struct.pack(">iI", -0x7FFEFFFF, 1) + b"x" + struct.pack(">i", i)
                      + bytes([11]) + struct.pack(">hi", 1, 2**31 - 1))
            garbage.append(s)
        hb = _happybase(server)
        hb.create_table("t", {"f": {}})
        t = hb.table("t")
        for i in range(20):
            t.put(b"r%d" % i, {b"f:a": b"%d" % i})
        assert t.row(b"r7") == {b"f:a": b"7"}
        assert len(list(t.scan())) == 20
        big = {b"f:v": b"y" * 3_000_000}  # a call far larger than one read
        t.put(b"big", big)
        assert t.row(b"big") == big
        hb.close()
        for s in garbage:
            _reply_error(_read_all(s))
        assert server.connections >= 350  # the idle and the slow ones are still open
        for s in idle + slow + garbage:
            s.close()


def test_serve_command_passes_the_limits(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "hibase", "serve", "--thrift", "--port", "0", "--idle-timeout",
         "0.5", "--max-string", "100", str(tmp_path / "s")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        m = re.search(r" on ([\d.]+):(\d+) ", proc.stdout.readline())
        assert m, proc.stderr.read()
        addr = (m.group(1), int(m.group(2)))
        s = socket.create_connection(addr, timeout=20)
        assert s.recv(10) == b""  # idle: closed after 0.5 s
        s.close()
        s = socket.create_connection(addr, timeout=20)
        s.sendall(_call("getRow", _get_row_args(row=b"x" * 101)))
        assert "over the 100-byte cap" in _reply_error(_read_all(s))[2]
        s.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
