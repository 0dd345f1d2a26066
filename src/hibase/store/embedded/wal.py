"""RocksDB's write-ahead log read back record by record (for `hibase check`), to find a tail
that is not a whole record: what a power cut leaves when the OS had not yet written the last
writes of a store opened with durability="process".

RocksDB opens such a log quietly (tolerate_corrupted_tail_records: the incomplete tail is a
write that never finished), so a cut tail reads as a store with fewer rows and no error; this
is the one place that says so. The format (RocksDB's db/log_format.h): 32 KiB blocks of
records, each a 7-byte header (masked crc32c of the type, [log number] and payload; payload
length, 2 bytes little endian; type) and its payload; a batch too big for the rest of a block
is split into FIRST, MIDDLE... LAST fragments; a block's last < 7 bytes are zero padding. The
recyclable types (5-8, 11, 131) add the low 32 bits of the log's number to the header (11
bytes); a recycled log's old records, of another number, mark its end.
"""

from __future__ import annotations

import os
import re
from typing import Any

import crc32c

__all__ = ["wal_problems", "scan_log"]

BLOCK = 32768
_MASK_DELTA = 0xA282EAD8
_LOG = re.compile(r"^(\d+)\.log$")
_RECYCLABLE = frozenset({5, 6, 7, 8, 11, 131})
_FULL, _FIRST, _MIDDLE, _LAST = (1, 5), (2, 6), (3, 7), (4, 8)
_KNOWN = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 130, 131})


def _unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def scan_log(data: bytes, number: int) -> tuple[int, str | None]:
    """(offset, problem) of the log `data` (log number `number`): problem None when it ends
    on a whole record (offset: its end), else what is wrong at `offset`."""
    view = memoryview(data)
    pos, size = 0, len(data)
    batch_at: int | None = None  # where the unfinished FIRST... fragments began
    while pos < size:
        left = BLOCK - pos % BLOCK
        if left < 7:  # a block's trailer: zero padding
            pos += left
            continue
        if size - pos < 7:
            return pos, f"ends inside a record header ({size - pos} of 7 bytes)"
        masked = int.from_bytes(data[pos:pos + 4], "little")
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        if kind == 0 and length == 0 and masked == 0:  # preallocated space: no more records
            if data[pos:].strip(b"\0"):
                return pos, "zeros followed by data where a record header should be"
            break
        header = 11 if kind in _RECYCLABLE else 7
        if size - pos < header:
            return pos, f"ends inside a record header ({size - pos} of {header} bytes)"
        if header == 11 and int.from_bytes(data[pos + 7:pos + 11], "little") != number & 0xFFFFFFFF:
            break  # a recycled log's previous contents: the end of this log's records
        if kind not in _KNOWN and not kind & 0x80:
            return pos, f"a record of unknown type {kind}"
        end = pos + header + length
        if end > size:
            return pos, (f"ends inside a record ({size - pos - header} of {length} payload bytes "
                         "written)")
        if left < header + length:
            return pos, f"a record of {length} bytes overruns its 32 KiB block"
        crc = crc32c.crc32c(view[pos + 6:pos + 7] if header == 7 else view[pos + 6:pos + 11])
        if crc32c.crc32c(view[pos + header:end], crc) != _unmask(masked):
            return pos, f"a record whose checksum does not match ({length} payload bytes)"
        if kind in _FIRST:
            batch_at = pos
        elif kind in _FULL:
            batch_at = None
        elif kind in _MIDDLE or kind in _LAST:
            if batch_at is None:
                return pos, "a batch's middle or last fragment without its first"
            if kind in _LAST:
                batch_at = None
        pos = end
    if batch_at is not None:
        return batch_at, "ends inside a batch split across blocks (its last fragment is missing)"
    return pos, None


def wal_problems(folder: str) -> list[dict[str, Any]]:
    """{"file", "problem"} for each write-ahead log (*.log) of the store in `folder` that does
    not end on a whole record, naming the byte where the damage starts. Only meaningful while
    no process writes the store (a live writer's log may be mid-record)."""
    out = []
    for name in sorted(os.listdir(folder)):
        m = _LOG.match(name)
        if not m:
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:  # deleted meanwhile (obsolete once its memtable flushed)
            continue
        pos, problem = scan_log(data, int(m.group(1)))
        if problem is not None:
            out.append({"file": path, "offset": pos, "problem": (
                f"write-ahead log {name} does not end on a whole record: at byte {pos} of "
                f"{len(data)}, {problem} (a torn tail: the writes from there on were not all "
                "written, as after a power cut before an fsync; opening the store for writing "
                "drops them without a word)")})
    return out
