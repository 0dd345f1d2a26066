"""The writer lock of a store opened with durability="fsync": group commit.

Every write of the embedded store happens under its one re-entrant writer lock (store.py), and
hibase's keys are numbered by RocksDB's sequence numbers, so RocksDB's own group commit (several
writers in one write group) never forms. Instead a write goes to the WAL (reaching the OS) under
the lock, and the thread's outermost release of the lock fsyncs the WAL *after* letting the next
writer in: while one thread waits for the disk, the others write their batches, and the next
fsync covers them all. A write is acknowledged (its call returns) only once an fsync that began
after it finished; a reader can see it during that wait, before it is durable.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["SyncingLock"]


class SyncingLock:
    """A re-entrant lock (used as `with lock:`) whose outermost release by a thread that wrote
    under it (a reader taking it pays nothing) fsyncs the WAL up to that thread's last write, sharing one fsync with every writer whose
    write came before it began (group commit).

    `sequence()` is the store's latest RocksDB sequence number (0 once closed) and
    `sync_wal()` fsyncs the WAL (raising the store's translated error)."""

    def __init__(self, sequence: Callable[[], int], sync_wal: Callable[[], None]):
        self._lock = threading.RLock()
        self._sync_lock = threading.Lock()  # one fsync at a time; the queue behind it is a group
        self._local = threading.local()
        self._sequence = sequence
        self._sync_wal = sync_wal
        self.synced = sequence()  # everything up to here is on disk (what the open recovered)
        self.fsyncs = 0  # counters for the benchmark: fsyncs made, writers they acknowledged
        self.acknowledged = 0

    def __enter__(self) -> "SyncingLock":
        self._lock.acquire()
        local = self._local
        depth = local.depth = getattr(local, "depth", 0) + 1
        if depth == 1:
            try:
                local.start = self._sequence()
            except BaseException:
                local.depth = 0
                self._lock.release()
                raise
        return self

    def __exit__(self, kind: Any, *exc: Any) -> None:
        local = self._local
        depth = local.depth = local.depth - 1
        if depth:
            self._lock.release()
            return
        try:
            upto = self._sequence()  # above start: this thread wrote (writes take the lock)
        finally:
            self._lock.release()
        if kind is None and upto > local.start and upto > self.synced:
            self.sync(upto)

    def closing(self) -> Any:
        """Held while the store closes: no group fsync is running on its handle meanwhile."""
        return self._sync_lock

    def sync(self, upto: int) -> None:
        """Return once the WAL is fsynced at least up to sequence number `upto`."""
        with self._sync_lock:
            if upto <= self.synced:  # a fsync that began after our write covered it
                self.acknowledged += 1
                return
            covered = self._sequence()  # every write up to here is already in the WAL file
            self._sync_wal()
            self.synced = max(self.synced, covered)
            self.fsyncs += 1
            self.acknowledged += 1
