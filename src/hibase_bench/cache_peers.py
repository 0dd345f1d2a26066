"""Two published policies as peers for the scenario table of ``hibase bench cache``: S3-FIFO
and W-TinyLFU, small and written for clarity, on the same :class:`Policy` contract as hibase's
own (capacity in records, a set charged its size, at least one record).

* **S3-FIFO** (Yang et al., SOSP 2023; libCacheSim's defaults): a small FIFO of 10% of the
  capacity that every new set enters, a main FIFO (a 2-bit CLOCK: a set hit there is
  re-inserted with its count minus one instead of leaving), and a ghost FIFO of keys recently
  dropped from the small FIFO (as many records as 90% of the capacity). A set leaving the small
  FIFO moves to the main one if it was hit there, else to the ghost; a miss on a ghost key goes
  straight to the main FIFO.
* **W-TinyLFU** (Einziger, Friedman, Manes, 2017; Caffeine's static layout): an LRU window of
  1% of the capacity, then a segmented LRU main region (probation; protected once hit, 80% of
  the main region). A set pushed out of the window enters only if its frequency beats the
  probation victim's. Frequencies are 4-bit counters (at most 15) halved every ``10 x
  capacity`` accesses (Caffeine's sample size, by weight); an exact table stands in for the
  count-min sketch (the sketch only approximates it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable
from itertools import chain

from hibase.cache.policy import NO_KEY as _NO_KEY
from hibase.cache.policy import Policy
from hibase.cache.policy import record_cost as _cost
from hibase.cache.segmented import WindowedSLRUPolicy

__all__ = ["S3FIFOPolicy", "WTinyLFUPolicy", "PEERS"]


class S3FIFOPolicy(Policy):
    """S3-FIFO: small FIFO, main 2-bit CLOCK, ghost (see the module docstring)."""

    name = "s3-fifo"
    SMALL = 0.1
    GHOST = 0.9

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self._small: OrderedDict[Hashable, None] = OrderedDict()  # oldest first
        self._main: OrderedDict[Hashable, None] = OrderedDict()
        self._ghost: OrderedDict[Hashable, int] = OrderedDict()  # key -> records
        self._freq: dict[Hashable, int] = {}
        self._small_records = self._ghost_records = 0

    @property
    def fill_limit(self) -> int:
        return self.capacity

    def _access(self, key: Hashable, size: int, hit: bool) -> tuple[bool, list]:
        if hit:
            self._freq[key] = min(3, self._freq[key] + 1)
            evict = self._resize_cached(key, size) if self._cached[key] != size else []
            return False, evict
        if _cost(size) > self.capacity:
            return False, []
        to_main = key in self._ghost
        if to_main:
            self._ghost_records -= self._ghost.pop(key)
        evict = self._make_room(_cost(size))
        self._store(key, size)
        self._freq[key] = 0
        if to_main:
            self._main[key] = None
        else:
            self._small[key] = None
            self._small_records += _cost(size)
        return True, evict

    def _make_room(self, need: int, exclude: object = _NO_KEY) -> list:
        """Evict until `need` more records fit (`exclude`, a set just resized, stays)."""
        evicted: list = []
        while self._records + need > self.capacity and (self._small or self._main):
            if self._small and (self._small_records >= self.SMALL * self.capacity
                                or not self._main):
                key = next(iter(self._small))
                self._small_records -= _cost(self._cached[key])
                del self._small[key]
                if self._freq[key] >= 1 or key == exclude:
                    self._freq[key] = 0
                    self._main[key] = None
                    continue
                self._ghost[key] = _cost(self._cached[key])
                self._ghost_records += self._ghost[key]
                while self._ghost_records > self.GHOST * self.capacity:
                    self._ghost_records -= self._ghost.popitem(last=False)[1]
            else:
                key = next(iter(self._main))
                del self._main[key]
                if self._freq[key] >= 1 or key == exclude:
                    self._freq[key] = max(0, self._freq[key] - 1)
                    self._main[key] = None
                    if key == exclude and len(self._main) == 1 and not self._small:
                        break
                    continue
            self._forget(key)
            evicted.append(key)
        return evicted

    def _forget(self, key: Hashable) -> None:
        del self._freq[key]
        self._records -= _cost(self._cached.pop(key))

    def _drop(self, key: Hashable) -> None:  # discard, or a set grown past the capacity
        if key in self._small:
            del self._small[key]
            self._small_records -= _cost(self._cached[key])
        else:
            self._main.pop(key, None)
        self._forget(key)

    def _resize_cached(self, key: Hashable, size: int) -> list:
        if key in self._small:
            self._small_records += _cost(size) - _cost(self._cached[key])
        return super()._resize_cached(key, size)

    def _victim_order(self) -> Iterable[Hashable]:
        return chain(list(self._small), list(self._main))


class WTinyLFUPolicy(WindowedSLRUPolicy):
    """W-TinyLFU with a fixed 1% window (see the module docstring); the window and segmented
    LRU are hibase's (cache/segmented.py, window-heat's layout too), the admission rule is
    TinyLFU's."""

    name = "w-tinylfu"
    WINDOW = 0.01

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, max(1, round(self.WINDOW * capacity)))
        self._freq: dict[Hashable, int] = {}
        self._sample = 10 * max(1, capacity)
        self._seen = 0

    def _count(self, key: Hashable) -> None:
        self._freq[key] = min(15, self._freq.get(key, 0) + 1)
        self._seen += 1
        if self._seen >= self._sample:  # aging: halve every counter, forget the zeros
            self._seen //= 2
            self._freq = {k: f // 2 for k, f in self._freq.items() if f > 1}

    def _access(self, key: Hashable, size: int, hit: bool) -> tuple[bool, list]:
        self._count(key)
        if hit:
            self._touch(key)
            evict = self._resize_cached(key, size) if self._cached[key] != size else []
            return False, evict
        if _cost(size) > self.capacity:
            return False, []
        self._store(key, size)
        evict = self._evict()
        if key in evict:
            evict.remove(key)
            return False, evict
        return True, evict

    def _evict(self) -> list:
        candidates = self._window_overflow()
        evicted = []
        for cand in candidates:  # each candidate duels the probation's LRU for its room
            while self._records > self.capacity and cand in self._cached:
                victim = next((k for k in self._main_order() if k not in candidates), None)
                if victim is None:
                    break
                loser = cand if self._freq.get(cand, 0) <= self._freq.get(victim, 0) \
                    else victim
                self._drop(loser)
                evicted.append(loser)
        if self._records > self.capacity:
            evicted += self._make_room(0)
        return evicted


PEERS: dict[str, type[Policy]] = {"s3-fifo": S3FIFOPolicy, "w-tinylfu": WTinyLFUPolicy}
