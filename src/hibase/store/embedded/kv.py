"""Key-value tables of the embedded store: single-version rows written whole, the storage of
index entries and value tables (a RocksDB column family each, `k/<name>`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import rocksdict as rd

from ... import errors
from .rocks import (
    CheckedIter, check_status, checked_items, create_column_family, mapped,
)

__all__ = ["KeyValueTables", "KVRangeReader"]


class KVRangeReader:
    """kv_reader's answer: one RocksDB iterator, pinned at its creation, re-seeked per range."""

    __slots__ = ("_it",)

    def __init__(self, it: Any):
        self._it = it

    def scan(self, start: bytes, stop: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) for start <= key < stop (stop None: to the end), ascending. A scan
        abandoned part-way is simply left: the next one seeks again."""
        it = self._it
        it.seek(start)
        while it.valid():
            key = it.key()
            if stop is not None and key >= stop:
                return
            yield key, it.value()
            it.next()


class KeyValueTables:
    """Mixed into EmbeddedStore, which provides _db, _kv, _lock, _options and _check_writable;
    writes to these tables go through EmbeddedStore.commit(kv_writes=...)."""

    _db: Any
    _kv: dict[str, tuple[Any, Any]]
    _lock: Any

    if TYPE_CHECKING:  # EmbeddedStore's (checked by mypy)
        def _check_writable(self) -> None: ...
        def _options(self) -> Any: ...

    def _kv_handle(self, name: str) -> Any:
        try:
            return self._kv[name][1]
        except KeyError:
            raise errors.TableNotFound(f"no key-value table {name!r}") from None

    def kv_tables(self) -> list[str]:
        return sorted(self._kv)

    @mapped
    def create_kv(self, name: str, counts_in: str | None = None) -> None:
        """A key-value table (`counts_in`, where a backend keeps counts apart: here each
        table holds its own, CountDelta writes resolved in the batch)."""
        with self._lock:
            if name in self._kv:
                return
            self._check_writable()
            create_column_family(self._db, "k/" + name, self._options())
            self._db.put(b"kv/" + name.encode(), b"")
            self._load_kv(name)

    def _load_kv(self, name: str) -> None:
        self._kv[name] = (self._db.get_column_family("k/" + name),
                          self._db.get_column_family_handle("k/" + name))

    @mapped
    def drop_kv(self, name: str) -> None:
        with self._lock:
            self._check_writable()
            if name not in self._kv:
                return
            self._db.delete(b"kv/" + name.encode())
            with self._maint_lock:  # type: ignore[attr-defined]  # not while an upkeep runs
                view, _ = self._kv.pop(name)
                view.close()
                self._db.drop_column_family("k/" + name)

    def _kv_view(self, name: str) -> Any:
        try:
            return self._kv[name][0]
        except KeyError:
            raise errors.TableNotFound(f"no key-value table {name!r}") from None

    @mapped
    def kv_get(self, name: str, keys: list[bytes]) -> list[bytes | None]:
        return self._kv_view(name).get(keys)

    def kv_reader(self, name: str) -> "KVRangeReader":
        """Bounded range scans of a key-value table as of the reader's creation: readers
        created together under the write lock read one instant."""
        return KVRangeReader(CheckedIter(self._kv_view(name).iter(), self.path))  # type: ignore[attr-defined]

    @mapped
    def kv_delete_range(self, name: str, start: bytes, stop: bytes | None) -> None:
        """Delete every key in [start, stop) (stop None: to the end)."""
        with self._lock:
            self._check_writable()
            handle = self._kv_handle(name)
            wb = rd.WriteBatch(raw_mode=True)
            if stop is None:
                for key, _ in self.kv_scan(name, start):
                    wb.delete(key, handle)
            else:
                wb.delete_range(start, stop, handle)
            self._db.write(wb)

    def kv_scan(self, name: str, start: bytes | None = None, stop: bytes | None = None,
                reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) for start <= key < stop, ascending (or descending from stop)."""
        view = self._kv_view(name)
        if reverse:
            it = view.iter()
            if stop is None:
                it.seek_to_last()
            else:
                it.seek_for_prev(stop)
                if it.valid() and it.key() >= stop:
                    it.prev()
            while it.valid():
                key = it.key()
                if start is not None and key < start:
                    return
                yield key, it.value()
                it.prev()
            check_status(it, self.path)  # type: ignore[attr-defined]
            return
        for key, value in checked_items(view, start):
            if stop is not None and key >= stop:
                return
            yield key, value
