"""The layout W-TinyLFU (Einziger, Friedman, Manes; Caffeine) gave its cache, which window-heat
(window_heat.py) and the bench's W-TinyLFU peer (hibase_bench/cache_peers.py) share: an LRU
*window* that every miss enters, then a *main* region, a segmented LRU (probation; protected
once hit there, at most ``PROTECTED`` of the main region). Sets pushed out of the window are
candidates for the main region; who stays is the subclass's admission rule (``_evict``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator
from itertools import chain

from .policy import Policy, _cost

__all__ = ["WindowedSLRUPolicy"]


class WindowedSLRUPolicy(Policy):
    """Window + segmented LRU bookkeeping (see the module docstring); `window_max` is the
    window's size in records (subclasses may change it). Subclasses write ``_access`` and
    ``_evict`` with :meth:`_touch`, :meth:`_store` and :meth:`_window_overflow`."""

    PROTECTED = 0.8  # share of the main region that sets hit there may hold

    def __init__(self, capacity: int, window_max: int) -> None:
        super().__init__(capacity)
        self.window_max = window_max
        self._window: OrderedDict[Hashable, None] = OrderedDict()  # least recent first
        self._probation: OrderedDict[Hashable, None] = OrderedDict()
        self._protected: OrderedDict[Hashable, None] = OrderedDict()
        self._window_records = self._protected_records = 0

    @property
    def segments(self) -> dict:
        """Keys per region, least recently used first (for tests and tools)."""
        return {"window": list(self._window), "probation": list(self._probation),
                "protected": list(self._protected)}

    @property
    def fill_limit(self) -> int:
        return self.capacity

    def _touch(self, key: Hashable) -> None:
        """A hit: most recent in its region; a probation set moves up to protected."""
        if key in self._window:
            self._window.move_to_end(key)
        elif key in self._protected:
            self._protected.move_to_end(key)
        else:
            del self._probation[key]
            self._protected[key] = None
            self._protected_records += _cost(self._cached[key])
            self._demote()

    def _demote(self) -> None:
        """Protected sets past the protected share go back to probation (most recent end)."""
        limit = self.PROTECTED * (self.capacity - self.window_max)
        while self._protected_records > limit and len(self._protected) > 1:
            old, _ = self._protected.popitem(last=False)
            self._protected_records -= _cost(self._cached[old])
            self._probation[old] = None

    def _window_overflow(self) -> list:
        """Move the window's least recent sets past `window_max` to probation; return them
        (the candidates, oldest first)."""
        candidates = []
        while self._window_records > self.window_max and self._window:
            key, _ = self._window.popitem(last=False)
            self._window_records -= _cost(self._cached[key])
            self._probation[key] = None
            candidates.append(key)
        return candidates

    def _store(self, key: Hashable, size: int) -> None:
        super()._store(key, size)
        self._window[key] = None
        self._window_records += _cost(size)

    def _drop(self, key: Hashable) -> None:
        cost = _cost(self._cached[key])
        if key in self._window:
            del self._window[key]
            self._window_records -= cost
        elif key in self._protected:
            del self._protected[key]
            self._protected_records -= cost
        else:
            del self._probation[key]
        super()._drop(key)

    def _resize_cached(self, key: Hashable, size: int) -> list:
        delta = _cost(size) - _cost(self._cached[key])
        if key in self._window:
            self._window_records += delta
        elif key in self._protected:
            self._protected_records += delta
        return super()._resize_cached(key, size)

    def _victim_order(self) -> Iterable[Hashable]:
        return chain(list(self._probation), list(self._protected), list(self._window))

    def _main_order(self) -> Iterator[Hashable]:
        """The main region, probation then protected, least recently used first."""
        yield from self._probation
        yield from self._protected
