"""Key-value tables of the HBase backend (index entries, value tables, routing filters): the
HBase table `hibase_kv<name>`, one family `v` (1 version), one column `v:v`. Index tables
(global `__idx__`, local `__lidx__`) store verified / unverified values (hbase.py's docstring);
their reads resolve unverified entries through the index layer's hooks."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ... import errors
from .. import cells as C

__all__ = ["HBaseKeyValueTables", "KV_PREFIX", "VERIFIED", "UNVERIFIED", "is_index"]

KV_PREFIX = "hibase_kv"
VERIFIED, UNVERIFIED = b"\x01", b"\x00"
_KV_COL = b"v:v"
_META_COL = b"m:v"
META_TABLE = "hibase_meta"
_SCAN_CHUNK = 1000
# rows per multi-get when many rows are fetched: chunks go out in parallel (store.parallel)
_FETCH_CHUNK = 250
# index tables (global, local): values carry the verified / unverified status
_INDEX_KV, _LOCAL_KV = "__idx__", "__lidx__"


def is_index(name: str) -> bool:
    return name.startswith(_INDEX_KV) or name.startswith(_LOCAL_KV)


class _HBaseRangeReader:
    """kv_reader's answer on HBase: each range is its own bounded scanner (stop row set,
    scanner caching), streamed in chunks; nothing past a range's stop is read. HBase reads are
    no snapshot across calls (callers that need one check `layout_token` around them)."""

    __slots__ = ("_store", "_name")

    def __init__(self, store: Any, name: str):
        self._store, self._name = store, name

    def scan(self, start: bytes, stop: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        return self._store.kv_scan(self._name, start, stop)


class HBaseKeyValueTables:
    """Mixed into HBaseStore, which provides _call, _get_raw, _scan_raw, _meta_put,
    _create_hbase_table, _drop_hbase_table, _check_writable, _kv, _lock, _raw, index_hooks."""

    _kv: set
    _lock: Any
    _raw: Any
    index_hooks: Any
    T: Any

    @staticmethod
    def _kv_hbase(name: str) -> bytes:
        return (KV_PREFIX + name).encode()

    def _kv_check(self, name: str) -> None:
        if name not in self._kv:
            # another client may have created it since we opened
            if not self._get_raw(META_TABLE, [b"kv/" + name.encode()], [_META_COL])[0]:
                raise errors.TableNotFound(f"no key-value table {name!r}")
            self._kv.add(name)

    def kv_tables(self) -> list[str]:
        return sorted(self._kv)

    def create_kv(self, name: str) -> None:
        with self._lock:
            self._check_writable()
            if name in self._kv:
                return
            try:
                self._create_hbase_table(KV_PREFIX + name, {b"v": 1})
            except errors.TableExists:
                pass
            self._meta_put(b"kv/" + name.encode(), b"")
            self._kv.add(name)

    def drop_kv(self, name: str) -> None:
        with self._lock:
            self._check_writable()
            if name not in self._kv:
                return
            self._drop_hbase_table(KV_PREFIX + name)
            self._meta_put(b"kv/" + name.encode(), None)
            self._kv.discard(name)

    def kv_handle(self, name: str) -> Any:
        """What split listeners pass to their batch: the key-value table's name here."""
        return name

    def _kv_write(self, writes: list[tuple[str, bytes, bytes | None]]) -> None:
        T = self.T
        by_name: dict[str, list] = {}
        for name, key, value in writes:
            self._kv_check(name)
            m = T.Mutation(column=_KV_COL, isDelete=True) if value is None else \
                T.Mutation(column=_KV_COL, value=value, isDelete=False)
            by_name.setdefault(name, []).append(T.BatchMutation(row=key, mutations=[m]))
        calls = []
        for name, batches in by_name.items():
            # one key once per call: HBase applies a mutateRows' puts before its deletes
            seen: dict[bytes, Any] = {}
            for b in batches:
                seen[b.row] = b
            batches = list(seen.values())
            calls += [(self._kv_hbase(name), batches[i:i + _SCAN_CHUNK])
                      for i in range(0, len(batches), _SCAN_CHUNK)]
        # distinct keys per table: every table's chunks in flight together
        self.parallel(lambda c: self._call("mutateRows", c[0], c[1], {}), calls)

    @contextmanager
    def raw_index(self) -> Iterator[None]:
        """Within this block, this thread's index reads return stored entries as they are
        (an unverified entry's value is 0x00 + ..., never equal to a covered-values payload):
        what verify / repair compares."""
        prev = getattr(self._raw, "on", False)
        self._raw.on = True
        try:
            yield
        finally:
            self._raw.on = prev

    def _decode_index(self, name: str, items: list[tuple[bytes, bytes]]
                      ) -> list[tuple[bytes, bytes]]:
        """Verified entries as they are; unverified ones resolved against the data rows."""
        if getattr(self._raw, "on", False):
            return [(k, v[1:] if v[:1] == VERIFIED else v) for k, v in items]
        pending = [(i, k, C.unpack(v[1:])[0]) for i, (k, v) in enumerate(items)
                   if v[:1] != VERIFIED]
        if not pending:
            return [(k, v[1:]) for k, v in items]
        resolved = self.index_hooks.resolve(name, [(k, row) for _, k, row in pending]) \
            if self.index_hooks is not None else [None] * len(pending)
        fixed = {i: payload for (i, _, _), payload in zip(pending, resolved)}
        out = []
        for i, (k, v) in enumerate(items):
            if i in fixed:
                if fixed[i] is not None:
                    out.append((k, fixed[i]))
            else:
                out.append((k, v[1:]))
        return out

    def kv_get(self, name: str, keys: list[bytes]) -> list[bytes | None]:
        self._kv_check(name)
        got = self._get_raw(KV_PREFIX + name, list(keys), [_KV_COL])
        values = [cells[_KV_COL][1] if _KV_COL in cells else None for cells in got]
        if not is_index(name):
            return values
        present = [(k, v) for k, v in zip(keys, values) if v is not None]
        decoded = dict(self._decode_index(name, present))
        return [decoded.get(k) for k in keys]

    def kv_reader(self, name: str) -> _HBaseRangeReader:
        """Bounded range scans of a key-value table (one scanner per range asked for)."""
        self._kv_check(name)
        return _HBaseRangeReader(self, name)

    def kv_delete_range(self, name: str, start: bytes, stop: bytes | None) -> None:
        with self._lock:
            self._check_writable()
            self._kv_check(name)
            keys = [k for k, _ in self._scan_raw(KV_PREFIX + name, start or None, stop,
                                                 [_KV_COL])]
            self._kv_write([(name, k, None) for k in keys])

    def kv_scan(self, name: str, start: bytes | None = None, stop: bytes | None = None,
                reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) for start <= key < stop, ascending (or descending from stop)."""
        self._kv_check(name)
        table = KV_PREFIX + name
        if reverse:
            # HBase's reversed scan starts at its (inclusive) start row: skip `stop` itself
            # and end at the first key below `start`
            def down() -> Iterator[tuple[bytes, dict]]:
                for k, c in self._scan_raw(table, stop, None, [_KV_COL], reverse=True):
                    if start is not None and k < start:
                        return
                    if stop is None or k < stop:
                        yield k, c
            it = down()
        else:
            it = self._scan_raw(table, start or None, stop, [_KV_COL])
        index = is_index(name)
        chunk: list = []
        for key, cells in it:
            if _KV_COL not in cells:
                continue
            if not index:
                yield key, cells[_KV_COL][1]
                continue
            chunk.append((key, cells[_KV_COL][1]))
            if len(chunk) >= 256:
                yield from self._decode_index(name, chunk)
                chunk = []
        if chunk:
            yield from self._decode_index(name, chunk)
