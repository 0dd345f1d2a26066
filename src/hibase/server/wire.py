"""Where one Thrift1 call ends in a byte buffer, checked against size caps before anything is
decoded: the gateway reads a whole call this way before a worker thread parses it, so a client
that sends half a call, or claims a 2 GB string, costs a buffer and no thread or allocation.

    scanner = MessageScanner("binary", Limits())
    end = scanner.end(buf)        # bytes of the first complete call in buf
    # raises Incomplete(need) (wait for `need` bytes in all) or WireError (answer it, close)

Covers the binary protocol (strict messages, as thriftpy2 and HBase read them) and the compact
protocol. Nothing is allocated from a length the client claims: lengths are only compared and
skipped over.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Limits", "MessageScanner", "Incomplete", "WireError"]

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")

# binary protocol types -> fixed payload size (None: variable)
_B_STOP, _B_STRING, _B_STRUCT, _B_MAP, _B_SET, _B_LIST = 0, 11, 12, 13, 14, 15
_B_FIXED = {2: 1, 3: 1, 4: 8, 6: 2, 8: 4, 10: 8}
_B_VARIABLE = {_B_STRING, _B_STRUCT, _B_MAP, _B_SET, _B_LIST, 16, 17}  # 16/17: UTF8/UTF16

# compact protocol types
_C_FIXED = {1: 0, 2: 0, 3: 1, 7: 8}  # bool true/false live in the type nibble; byte; double
_C_VARINT = {4, 5, 6}
_C_BINARY, _C_LIST, _C_SET, _C_MAP, _C_STRUCT = 8, 9, 10, 11, 12


@dataclass(frozen=True)
class Limits:
    """Caps on one call: its whole size, any one string, any one list/set/map, nesting."""
    max_message: int = 64 * 1024 * 1024
    max_string: int = 16 * 1024 * 1024
    max_items: int = 1_000_000
    max_depth: int = 64


class Incomplete(Exception):
    """The buffer holds the start of a call; `need` bytes in all before it can end (`name` and
    `seqid` once its header is in)."""

    def __init__(self, need: int, name: str = "", seqid: int = 0):
        super().__init__(need)
        self.need, self.name, self.seqid = need, name, seqid


class WireError(Exception):
    """Not a call this server reads (garbage, a cap exceeded); `name`/`seqid` when the message
    header was read, so the error can answer the call."""

    def __init__(self, message: str, name: str = "", seqid: int = 0):
        super().__init__(message)
        self.name, self.seqid = name, seqid


class MessageScanner:
    """Finds the end of the first call in a buffer, for one protocol, under `limits`."""

    def __init__(self, protocol: str, limits: Limits):
        if protocol not in ("binary", "compact"):
            raise ValueError(f"unknown protocol {protocol!r}")
        self.protocol, self.limits = protocol, limits

    def end(self, buf: bytes | bytearray | memoryview) -> int:
        """Offset just past the first complete call in `buf` (raises Incomplete or WireError)."""
        scan = _Binary(buf, self.limits) if self.protocol == "binary" else _Compact(buf,
                                                                                self.limits)
        return scan.message()


class _Scan:
    def __init__(self, buf: bytes | bytearray | memoryview, limits: Limits):
        self.buf, self.n, self.pos, self.limits = buf, len(buf), 0, limits
        self.name, self.seqid = "", 0

    def need(self, size: int) -> int:
        """Advance over `size` bytes; their start offset."""
        at, end = self.pos, self.pos + size
        if end > self.limits.max_message:
            raise self.error(f"call larger than the {self.limits.max_message}-byte cap")
        if end > self.n:
            raise Incomplete(end, self.name, self.seqid)
        self.pos = end
        return at

    def error(self, message: str) -> WireError:
        return WireError(message, self.name, self.seqid)

    def string_len(self, size: int) -> None:
        if size < 0:
            raise self.error(f"negative length {size}")
        if size > self.limits.max_string:
            raise self.error(f"string of {size} bytes over the {self.limits.max_string}-byte cap")
        self.need(size)

    def items(self, count: int) -> None:
        if count < 0:
            raise self.error(f"negative size {count}")
        if count > self.limits.max_items:
            raise self.error(f"collection of {count} items over the {self.limits.max_items} cap")

    def deeper(self, depth: int) -> int:
        if depth >= self.limits.max_depth:
            raise self.error(f"nesting deeper than {self.limits.max_depth}")
        return depth + 1


class _Binary(_Scan):
    def i32(self) -> int:
        return _I32.unpack_from(self.buf, self.need(4))[0]

    def byte(self) -> int:
        return self.buf[self.need(1)]

    def message(self) -> int:
        version = self.i32()
        if version >= 0 or (version & 0xFFFF0000) != 0x80010000:  # strict
            raise self.error("not a strict binary-protocol call "
                             f"(header {version & 0xFFFFFFFF:#x})")
        size = self.i32()
        self.string_len(size)
        raw = bytes(self.buf[self.pos - size:self.pos])
        try:
            self.name = raw.decode()
        except UnicodeDecodeError:
            raise self.error("method name is not UTF-8") from None
        self.seqid = self.i32()
        self.value(_B_STRUCT, 0)
        return self.pos

    def value(self, ttype: int, depth: int) -> None:
        fixed = _B_FIXED.get(ttype)
        if fixed is not None:
            self.need(fixed)
        elif ttype in (_B_STRING, 16, 17):
            self.string_len(self.i32())
        elif ttype == _B_STRUCT:
            depth = self.deeper(depth)
            while True:
                ftype = self.byte()
                if ftype == _B_STOP:
                    return
                self.need(2)
                self.value(self.check(ftype), depth)
        elif ttype == _B_MAP:
            depth = self.deeper(depth)
            ktype, vtype, count = self.check(self.byte()), self.check(self.byte()), self.i32()
            self.items(count)
            self.elements(ktype, count, depth, vtype)
        elif ttype in (_B_SET, _B_LIST):
            depth = self.deeper(depth)
            etype, count = self.check(self.byte()), self.i32()
            self.items(count)
            self.elements(etype, count, depth)
        else:
            raise self.error(f"unknown type {ttype}")

    def elements(self, etype: int, count: int, depth: int, vtype: int | None = None) -> None:
        fk, fv = _B_FIXED.get(etype), (_B_FIXED.get(vtype) if vtype is not None else 0)
        if fk is not None and fv is not None:
            self.need(count * (fk + fv))
            return
        for _ in range(count):
            self.value(etype, depth)
            if vtype is not None:
                self.value(vtype, depth)

    def check(self, ttype: int) -> int:
        if ttype not in _B_FIXED and ttype not in _B_VARIABLE:
            raise self.error(f"unknown type {ttype}")
        return ttype


class _Compact(_Scan):
    def byte(self) -> int:
        return self.buf[self.need(1)]

    def varint(self) -> int:
        result = shift = 0
        for _ in range(10):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        raise self.error("varint longer than 10 bytes")

    def message(self) -> int:
        if self.byte() != 0x82:
            raise self.error("not a compact-protocol call (bad protocol id)")
        if self.byte() & 0x1F != 1:
            raise self.error("unsupported compact-protocol version")
        self.seqid = self.varint()
        size = self.varint()
        self.string_len(size)
        try:
            self.name = bytes(self.buf[self.pos - size:self.pos]).decode()
        except UnicodeDecodeError:
            raise self.error("method name is not UTF-8") from None
        self.value(_C_STRUCT, 0)
        return self.pos

    def value(self, ctype: int, depth: int) -> None:
        if ctype in _C_FIXED:
            self.need(_C_FIXED[ctype])
        elif ctype in _C_VARINT:
            self.varint()
        elif ctype == _C_BINARY:
            self.string_len(self.varint())
        elif ctype == _C_STRUCT:
            depth = self.deeper(depth)
            while True:
                head = self.byte()
                if head == 0:
                    return
                if not head >> 4:
                    self.varint()  # a field id given in full
                self.value(head & 0x0F, depth)
        elif ctype in (_C_LIST, _C_SET):
            depth = self.deeper(depth)
            head = self.byte()
            count = head >> 4
            if count == 15:
                count = self.varint()
            self.items(count)
            etype = head & 0x0F
            if etype in (1, 2):
                self.need(count)  # bools in a list take a byte each
            else:
                for _ in range(count):
                    self.value(etype, depth)
        elif ctype == _C_MAP:
            depth = self.deeper(depth)
            count = self.varint()
            self.items(count)
            if count:
                kv = self.byte()
                for _ in range(count):
                    for t in (kv >> 4, kv & 0x0F):
                        if t in (1, 2):
                            self.need(1)
                        else:
                            self.value(t, depth)
        else:
            raise self.error(f"unknown type {ctype}")
