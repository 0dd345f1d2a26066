"""Background upkeep of the embedded store, HBase's automatic flushes and compactions in small:
once writes have stopped for IDLE_S seconds, one daemon thread per writable store

* flushes every column family's memtable, so the write-ahead log (which holds every write since
  the last flush: 64 MB of WAL for 165 KB of live data after 200,000 small updates) is deleted;
* compacts, per column family, the key range its deletes touched since the last upkeep when
  those deletes are at least half its estimated live keys (row folds and index upkeep delete
  keys; RocksDB keeps each as a tombstone, and the data it hides, until a compaction rewrites
  them at the bottom level: the compaction is told to rewrite it, or RocksDB would move a
  flushed file down whole, tombstones included). Large stores with few deletes are left to RocksDB's own compactions, which
  also pick SST files dense with tombstones (the deletion collector in EmbeddedStore._options).

The thread never takes the store's write lock (writes go on while it works); close() and
dropping a column family wait for it through _maint_lock (lock order: _lock, then _maint_lock).
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from typing import Any

import rocksdict as rd

from .rocks import mapped

__all__ = ["Maintenance", "IDLE_S"]

IDLE_S = 1.0  # seconds without writes before the upkeep runs
POLL_S = 0.25


def _bottom_too() -> rd.CompactOptions:
    """Compaction options that rewrite the bottom level too: without them RocksDB moves a
    flushed file down whole (a trivial move), tombstones and what they hide included."""
    co = rd.CompactOptions()
    co.set_bottommost_level_compaction(rd.BottommostLevelCompaction.force_optimized())
    return co


_running: "weakref.WeakSet[Maintenance]" = weakref.WeakSet()  # stores with an upkeep thread


@atexit.register
def _stop_all() -> None:
    """At exit, let a running upkeep finish before the interpreter (and RocksDB) goes away."""
    for store in list(_running):
        store._stop_maintenance()
        with store._maint_lock:
            pass


def _loop(ref: Any, stop: threading.Event) -> None:
    while not stop.wait(POLL_S):
        store = ref()
        if store is None:
            return
        try:
            store._maybe_maintain()
        except Exception:  # the store was closed meanwhile, a full disk...: writes report it
            pass
        del store


class Maintenance:
    """Mixed into EmbeddedStore, which provides _db, _tables, _kv and read_only."""

    def _init_maintenance(self) -> None:
        self._maint_lock = threading.Lock()
        self._maint_stop = threading.Event()
        self._maint_thread: threading.Thread | None = None
        self._dirty = False  # writes since the last upkeep
        self._last_write = 0.0
        self._upkeeps = 0
        # id(column family handle) -> [Rdict view, deletes, lowest key, highest key]
        self._deleted: dict[int, list] = {}

    def _note_writes(self, deleted: dict[int, list]) -> None:
        """Called by commit (under the write lock) after a batch is written; `deleted` as
        _deleted, for this batch."""
        self._last_write = time.monotonic()
        self._dirty = True
        for hid, (view, n, lo, hi) in deleted.items():
            cur = self._deleted.get(hid)
            if cur is None:
                self._deleted[hid] = [view, n, lo, hi]
            else:
                cur[1] += n
                if lo < cur[2]:
                    cur[2] = lo
                if hi > cur[3]:
                    cur[3] = hi
        if self._maint_thread is None and not self.read_only:  # type: ignore[attr-defined]
            self._maint_thread = threading.Thread(
                target=_loop, args=(weakref.ref(self), self._maint_stop),
                name=f"hibase-upkeep-{id(self):x}", daemon=True)
            self._maint_thread.start()
            _running.add(self)

    def _maybe_maintain(self) -> None:
        if self._dirty and time.monotonic() - self._last_write >= IDLE_S:
            self._maintain()

    @mapped  # a failure (full disk...) is recorded as the store's first fatal error: the
    # writes RocksDB then refuses report it, not a bare "previous error"
    def _maintain(self) -> None:
        """Flush every memtable, then compact the ranges dense with deletes (see the module
        docstring)."""
        with self._maint_lock:
            db = self._db  # type: ignore[attr-defined]
            if db is None:
                return
            self._dirty = False
            deleted, self._deleted = self._deleted, {}
            views = [v for t in list(self._tables.values())  # type: ignore[attr-defined]
                     for v, _, _ in list(t.fams.values())]
            views += [v for v, _ in list(self._kv.values())]  # type: ignore[attr-defined]
            db.flush()
            for view in views:
                view.flush()
            live = {id(v) for v in views}
            for view, n, lo, hi in deleted.values():
                if id(view) not in live:  # dropped meanwhile
                    continue
                keys = view.property_int_value("rocksdb.estimate-num-keys") or 0
                if n * 2 >= keys:
                    view.compact_range(lo, hi, _bottom_too())
            self._upkeeps += 1

    def wait_maintenance(self, timeout: float = 60.0) -> bool:
        """Wait until the background upkeep has run after the last write (it runs IDLE_S after
        writes stop); False on timeout. For benchmarks and tests."""
        end = time.monotonic() + timeout
        while self._dirty and self._db is not None:  # type: ignore[attr-defined]
            if time.monotonic() >= end:
                return False
            time.sleep(0.05)
        with self._maint_lock:  # one running now has finished
            return True

    def _stop_maintenance(self) -> None:
        self._maint_stop.set()
