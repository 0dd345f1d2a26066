"""Index entries on stores whose index rows and data rows are separate writes (HBase from the
client, `Capabilities.verified_index_writes`): Phoenix's verified / unverified protocol, how
entries are stored and how readers resolve them, for global and local indexes. The writer's
side (three phases) is index/commit.py's.

A stored entry value is `0x01 + covered values` (verified) or `0x00 + msgpack([rowkey])`
(unverified: written before the data row, rewritten verified after). An uncovered index's
entry (IndexSpec.uncovered) is written once, `0x01 + msgpack([])`, before its data row: readers
check every entry of such an index against its row, as they do unverified ones. A reader meeting an
unverified entry re-reads the data row: the entry is answered, with covered values from the
data row, only if the row still produces exactly that entry key. Readers never write (a repair
racing a live writer could undo the writer's last step); `verify_index(repair=True)` reads the
entries as stored (`as_stored`) and cleans leftovers. Index reads in index/ (and the query
layer's, through index/lookup.py) go through `scan`, `get` and `reader` here; on other stores
they are the store's own calls, untouched.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ..store import cells as C
from ..store.api import KVRangeReader, Store
from . import text
from .spec import IndexSpec, index_table, local_table, needed_columns, raw_values, split_key

__all__ = ["VERIFIED", "UNVERIFIED", "is_entry_table", "entry_table_of", "stored", "pending",
           "entry_of", "row_of", "scan", "get", "reader", "as_stored", "decode"]

VERIFIED, UNVERIFIED = b"\x01", b"\x00"
_GLOBAL, _LOCAL = index_table(""), local_table("")  # the tables' name prefixes
_CHUNK = 256  # unverified entries resolved together (one multi-get of their data rows)


def is_entry_table(name: str) -> bool:
    """Whether key-value table `name` holds index entries (global or local)."""
    return name.startswith(_GLOBAL) or name.startswith(_LOCAL)


def entry_table_of(name: str) -> tuple[str, bool] | None:
    """(data table, local?) of an index key-value table's name; None for other tables."""
    if name.startswith(_GLOBAL):
        return name[len(_GLOBAL):], False
    if name.startswith(_LOCAL):
        return name[len(_LOCAL):], True
    return None


def _verified(store: Store) -> bool:
    return store.capabilities.verified_index_writes


def stored(store: Store, payload: bytes) -> bytes:
    """An entry's covered-values payload as written outside the protocol's phases (builds,
    repairs, split moves): verified on stores with the protocol, as it is elsewhere."""
    return VERIFIED + payload if _verified(store) else payload


def pending(row: bytes) -> bytes:
    """An unverified entry's stored value: the user rowkey it stands for."""
    return UNVERIFIED + C.pack([row])


def _spec_of(specs: Iterable[IndexSpec], is_local: bool, key: bytes
             ) -> tuple[IndexSpec | None, bytes]:
    """The index of an entry key among `specs`, and the key without a local entry's region
    prefix."""
    if is_local:
        key = key[split_key(key)[1]:]
    alias = key[:2]
    for spec in specs:
        if spec.local == is_local and (spec.alias == alias or spec.null_alias == alias):
            return spec, key
    return None, key


def entry_of(specs: Iterable[IndexSpec], name: str, key: bytes
             ) -> tuple[IndexSpec, bytes] | None:
    """(index, user rowkey) of entry `key` of index table `name`; None when no spec knows it."""
    split = entry_table_of(name)
    if split is None:
        return None
    spec, key = _spec_of(specs, split[1], key)
    return None if spec is None else (spec, spec.split_entry(key)[1])


def row_of(specs: Iterable[IndexSpec], name: str, key: bytes) -> bytes | None:
    """The user rowkey of entry `key` of index table `name`; None when no spec knows it."""
    found = entry_of(specs, name, key)
    return None if found is None else found[1]


def _resolve(store: Store, name: str, specs: list[IndexSpec],
             entries: list[tuple[bytes, bytes]]) -> list[bytes | None]:
    """For each unverified (entry key, rowkey): the covered-values payload if the data row
    produces that entry now, else None (the entry is skipped)."""
    table, is_local = entry_table_of(name) or ("", False)
    found = [_spec_of(specs, is_local, key) for key, _ in entries]
    known = [s for s, _ in found if s is not None]
    if not known:
        return [None] * len(entries)
    needed = needed_columns(known)  # None: every column (a NULL list needs the whole row)
    rows = list(dict.fromkeys(row for (s, _), (_, row) in zip(found, entries) if s is not None))
    data = dict(zip(rows, store.read_latest_many(table, rows, needed)))
    out: list[bytes | None] = []
    for (spec, key), (_, row) in zip(found, entries):
        if spec is None:
            out.append(None)
            continue
        cells = {c: tv[1] for c, tv in data.get(row, {}).items()}
        if spec.kind:  # a text index: the entry stands while the row has its token
            out.append(C.pack([]) if key[:len(key) - len(row)] in text.token_keys(spec, cells)
                       and key.endswith(row) else None)
            continue
        values = raw_values(spec, cells)
        if values is None or spec.value_key(values) + row != key:
            out.append(None)
        else:
            out.append(C.pack([cells.get(c) for c in spec.covering]))
    return out


def _uncovered(name: str, specs: list[IndexSpec], items: list[tuple[bytes, bytes]]
               ) -> list[tuple[int, bytes, bytes]]:
    """(position, key, rowkey) of each verified entry of an uncovered index among `items`:
    a write stores such an entry once, before its data row lands, so readers check them all
    (IndexSpec.uncovered)."""
    split = entry_table_of(name)
    if split is None:
        return []
    out = []
    for i, (k, v) in enumerate(items):
        if v[:1] == VERIFIED:
            spec, key = _spec_of(specs, split[1], k)
            if spec is not None and spec.uncovered:
                out.append((i, k, spec.split_entry(key)[1]))
    return out


def decode(store: Store, name: str, specs: list[IndexSpec],
           items: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Stored entries of index table `name` as readers take them: verified ones as they are,
    unverified ones resolved against their data rows (skipped unless the row produces them).
    Only for stores with the protocol."""
    pend = [(i, k, C.unpack(v[1:])[0]) for i, (k, v) in enumerate(items) if v[:1] != VERIFIED]
    if any(s.uncovered for s in specs):
        pend += _uncovered(name, specs, items)
    if not pend:
        return [(k, v[1:]) for k, v in items]
    resolved = _resolve(store, name, specs, [(k, row) for _, k, row in pend])
    fixed = {i: payload for (i, _, _), payload in zip(pend, resolved)}
    out = []
    for i, (k, v) in enumerate(items):
        if i in fixed:
            payload = fixed[i]
            if payload is not None:
                out.append((k, payload))
        else:
            out.append((k, v[1:]))
    return out


def _decoded(store: Store, name: str, specs: list[IndexSpec],
             it: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
    chunk: list[tuple[bytes, bytes]] = []
    for item in it:
        chunk.append(item)
        if len(chunk) >= _CHUNK:
            yield from decode(store, name, specs, chunk)
            chunk = []
    if chunk:
        yield from decode(store, name, specs, chunk)


def scan(store: Store, name: str, specs: list[IndexSpec], start: bytes | None = None,
         stop: bytes | None = None, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
    """`store.kv_scan` of index table `name` with entries as readers take them (`specs`: the
    indexes whose entries the range may hold)."""
    it = store.kv_scan(name, start, stop, reverse)
    return _decoded(store, name, specs, it) if _verified(store) else it


def get(store: Store, name: str, specs: list[IndexSpec], keys: list[bytes]
        ) -> list[bytes | None]:
    """`store.kv_get` of index table `name`, entries as readers take them."""
    values = store.kv_get(name, keys)
    if not _verified(store):
        return values
    present = [(k, v) for k, v in zip(keys, values) if v is not None]
    found = dict(decode(store, name, specs, present))
    return [found.get(k) for k in keys]


class _Reader:
    """`reader`'s answer on stores with the protocol: each range decoded as it streams."""

    __slots__ = ("_store", "_name", "_specs", "_it")

    def __init__(self, store: Store, name: str, specs: list[IndexSpec]) -> None:
        self._store, self._name, self._specs = store, name, specs
        self._it = store.kv_reader(name)

    def scan(self, start: bytes, stop: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        return _decoded(self._store, self._name, self._specs, self._it.scan(start, stop))


def reader(store: Store, name: str, specs: list[IndexSpec]) -> KVRangeReader:
    """`store.kv_reader` of index table `name`, entries as readers take them."""
    if not _verified(store):
        return store.kv_reader(name)
    return _Reader(store, name, specs)


def as_stored(store: Store, items: Iterable[tuple[bytes, bytes]]
              ) -> list[tuple[bytes, bytes]]:
    """Entries as verify / repair compare them: a verified entry's payload, an unverified one
    whole (0x00 + ..., never equal to a covered-values payload)."""
    if not _verified(store):
        return list(items)
    return [(k, v[1:] if v[:1] == VERIFIED else v) for k, v in items]
