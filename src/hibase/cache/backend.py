"""Where cached sets live: the backend interface and the in-process backend.

A cached set is one index value's whole inverted list, ``{user rowkey: covered values}``, under
the key ``table 0x00 alias | encoded value`` (:func:`cache_key`). A backend only stores, patches
and drops sets; which sets belong in the cache is the policy's business (cache/layer.py runs it,
or for ``zk://`` the cache-node services do).

Coherence with this client's own writes rests on *tokens*. ``get`` returns with a miss a token naming the key's write version;
``patch`` (a write's index changes) bumps the version of every key it touches, cached or not;
``fill`` stores a loaded set only while the version still equals the token. A load that raced a
write is therefore never stored, and a write whose patch lands after a fill updates the stored set.

Coherence with writes this client never sees (other programs' puts, kept by hibase's coprocessor
inside HBase) rests on *tags*: a set is stored with the tag its reader passed (the table's server
write version, read from HBase at the lookup: index/manager.py), and ``get`` answers only a set
stored under the same tag; a set stored under another tag is a miss (and is overwritten by the
fill that follows).

>>> b = MemoryBackend()
>>> miss = b.get(b"k")
>>> miss.entries is None
True
>>> b.fill(b"k", miss.token, [(b"r1", [b"x"])], STORE)
True
>>> b.get(b"k").entries
[(b'r1', [b'x'])]
>>> stale = b.get(b"j").token
>>> b.patch({b"j": [(b"r2", [b"y"])]})   # a write touches j while its set is being loaded
{}
>>> b.fill(b"j", stale, [], STORE)       # the load may predate the write: not stored
False
"""

from __future__ import annotations

import zlib
from typing import Any, Iterable, Iterator, NamedTuple

import msgpack

__all__ = [
    "Lookup", "Backend", "MemoryBackend", "cache_key", "table_prefix", "STORE", "SKIP", "NODE",
    "pack_entry", "unpack_entry", "Ops",
]

# fill() modes: the client's policy admitted the set / did not / the cache node decides
STORE, SKIP, NODE = "store", "skip", "node"

# {key: [(rowkey, covered values, or None to remove the row)]}
Ops = dict[bytes, list[tuple[bytes, Any]]]


def table_prefix(table: str) -> bytes:
    """The key prefix shared by every cached set of `table` (table names never hold 0x00)."""
    return table.encode() + b"\x00"


def cache_key(table: str, vkey: bytes) -> bytes:
    """The cache key of one index value: ``table 0x00 alias | encoded value(s)``."""
    return table.encode() + b"\x00" + vkey


_pack = msgpack.Packer(use_bin_type=True).pack
_CRC = 4


def pack_entry(row: bytes, covered: list) -> bytes:
    """A set member as stored remotely: CRC-32 of (rowkey, payload), then msgpack(covered)."""
    body = _pack(covered)
    return zlib.crc32(body, zlib.crc32(row)).to_bytes(_CRC, "big") + body


def unpack_entry(row: bytes, raw: bytes) -> list:
    """Inverse of pack_entry; ValueError when the bytes are not ours."""
    body = raw[_CRC:]
    if len(raw) < _CRC + 1 or zlib.crc32(body, zlib.crc32(row)).to_bytes(_CRC, "big") != raw[:_CRC]:
        raise ValueError("checksum mismatch")
    try:
        covered = msgpack.unpackb(body)
    except Exception as exc:  # msgpack raises several unrelated types
        raise ValueError(f"unparsable entry: {exc}") from None
    if not isinstance(covered, list):
        raise ValueError("entry is not a list")
    return covered


class Lookup(NamedTuple):
    """What ``get`` found: the set (sorted by rowkey) or None, and the fill token of a miss
    (None: do not fill, e.g. the node is down)."""

    entries: list | None
    token: Any = None
    garbage: bool = False  # something not ours sat under the key (it was treated as a miss)


class Backend:
    """Storage of cached sets. ``local`` backends are plain in-process structures that the
    cache layer calls under its own lock; remote ones are thread-safe and do network I/O."""

    name = "base"
    local = False
    node_managed = False  # True when cache-node services run the policy (zk://)

    def get(self, key: bytes, tag: bytes = b"") -> Lookup:
        """`key`'s set if it is stored under `tag`, else a miss with its fill token."""
        raise NotImplementedError

    def fill(self, key: bytes, token: Any, entries: list, mode: str, tag: bytes = b"") -> bool:
        """Store the loaded `entries` as `key`'s set, under `tag`, if `mode` allows and no write
        touched the key since `token` was issued; True if stored."""
        raise NotImplementedError

    def delete(self, keys: Iterable[bytes]) -> None:
        raise NotImplementedError

    def patch(self, ops: Ops) -> dict[bytes, int]:
        """Apply a write's changes to the cached sets among `ops` (others are left alone but
        their versions are bumped); return the new sizes of the patched cached sets."""
        raise NotImplementedError

    def invalidate(self, prefix: bytes = b"") -> None:
        """Drop every set whose key starts with `prefix` and void in-flight fills."""
        raise NotImplementedError

    def keys(self) -> Iterator[bytes]:
        """Keys of the sets stored now (for tests and tools; may be slow remotely)."""
        raise NotImplementedError

    def stats(self) -> dict:
        return {"backend": self.name}

    def close(self) -> None:
        pass


class MemoryBackend(Backend):
    """Sets in a dict of dicts. Not thread-safe by itself: the cache layer holds its lock.

    Versions live in a bounded dict; when it outgrows `max_versions` it is cleared and the
    floor (the version of every key not in the dict) rises above all previous versions, which
    only voids fills in flight at that moment."""

    name = "memory"
    local = True

    def __init__(self, max_versions: int = 100_000) -> None:
        self._sets: dict[bytes, dict[bytes, list]] = {}
        self._tags: dict[bytes, bytes] = {}  # a set's tag, when not b""
        self._unsorted: set[bytes] = set()
        self._versions: dict[bytes, int] = {}
        self._floor = 0
        self._max_versions = max_versions

    def get(self, key: bytes, tag: bytes = b"") -> Lookup:
        members = self._sets.get(key)
        if members is None or self._tags.get(key, b"") != tag:
            return Lookup(None, self._versions.get(key, self._floor))
        if key in self._unsorted:  # a write appended rows: restore rowkey order once
            members = self._sets[key] = dict(sorted(members.items()))
            self._unsorted.discard(key)
        return Lookup(list(members.items()))

    def fill(self, key: bytes, token: Any, entries: list, mode: str, tag: bytes = b"") -> bool:
        if mode != STORE or token is None or self._versions.get(key, self._floor) != token:
            return False
        self._sets[key] = dict(entries)
        if tag:
            self._tags[key] = tag
        else:
            self._tags.pop(key, None)
        self._unsorted.discard(key)
        return True

    def delete(self, keys: Iterable[bytes]) -> None:
        for key in keys:
            self._sets.pop(key, None)
            self._tags.pop(key, None)
            self._unsorted.discard(key)

    def _bump(self, key: bytes) -> None:
        versions = self._versions
        versions[key] = versions.get(key, self._floor) + 1
        if len(versions) > self._max_versions:
            self._floor = max(versions.values()) + 1
            versions.clear()

    def patch(self, ops: Ops) -> dict[bytes, int]:
        sizes: dict[bytes, int] = {}
        for key, changes in ops.items():
            self._bump(key)
            members = self._sets.get(key)
            if members is None:
                continue
            for row, covered in changes:
                if covered is None:
                    members.pop(row, None)
                else:
                    if row not in members:
                        self._unsorted.add(key)
                    members[row] = covered
            sizes[key] = len(members)
        return sizes

    def invalidate(self, prefix: bytes = b"") -> None:
        for key in [k for k in self._sets if k.startswith(prefix)]:
            del self._sets[key]
            self._tags.pop(key, None)
            self._unsorted.discard(key)
        self._floor = max([self._floor, *self._versions.values()]) + 1
        self._versions.clear()

    def keys(self) -> Iterator[bytes]:
        return iter(list(self._sets))

    def stats(self) -> dict:
        return {"backend": self.name, "stored_sets": len(self._sets),
                "stored_records": sum(len(s) for s in self._sets.values())}
