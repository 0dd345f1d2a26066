"""window-heat, hibase's default cache policy: hotscore's heat deciding admission at every miss.

The published hotscore (cache/policy.py) ranks sets by a decayed visit count but acts only once
per period: a set that turns hot waits for the period's end, and once the cache is full a miss
is just a miss. window-heat keeps the same heat (a set's hotscore score at the last period end,
counted in visits, i.e. times ``count_period / alpha``, plus its visits since) and decides at
every access, in the shape of W-TinyLFU (Einziger, Friedman, Manes; Caffeine):

* a **window**, an LRU that every miss enters (recency: a set used again soon is served from
  here before it has earned any heat);
* a **main** region, a segmented LRU (probation; protected once hit there, at most 80% of the
  main region). A set pushed out of the window is a *candidate*: it enters the main region only
  if its heat **per record** beats that of the victims it would push out (the coldest per record
  in the whole main region, kept in a heap: choosing among the 8 least recently used instead,
  as before issue 44, kept it at 88-89% of Belady's MIN on static Zipf 0.99 at cache ratios
  0.05-0.1). A set costs its size in records, so a 500-record set must be hotter than the 500
  records it would replace; a loser leaves the cache (the candidate, or the victims);
* an **adaptive window**: two miniature shadow caches (the same policy on a fixed 1-in-k sample
  of the keys with 1/k of the capacity, k <= 16 and at least 1,000 records each: one with the
  smallest window, 1%, one all window, i.e. LRU) see the same accesses; at every period end the
  window climbs by a factor of 8 toward the shadow that hit more in that period (between 1%
  and 100% of the capacity). When
  the hot set keeps moving, recency pays and the window grows; on a stable skewed load it stays
  small and heat decides. (Caffeine's climber compares the real hit ratio of successive samples;
  a moving hot set swings that ratio more than the window does, and it lost 2-4 points to LRU
  here. The paired shadows see the same swings, which cancel.)

>>> p = WindowHeatPolicy(4, adapt=False)   # window 1 record, main region 3
>>> [p.access(k, 1).admit for k in "abcd"]  # room for all four
[True, True, True, True]
>>> p.access("a", 1).hit                    # a: heat 2, promoted to protected
True
>>> p.access("e", 1)                        # d leaves the window, duels b (heat 1 = 1): loses
Decision(hit=False, admit=True, evict=['d'])
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Hashable
from itertools import count
from typing import Any

from hibase.errors import InvalidArgument

from .policy import _NO_KEY, _check_int, _cost
from .segmented import WindowedSLRUPolicy

__all__ = ["WindowHeatPolicy"]

WINDOW_MIN, WINDOW_MAX = 0.01, 1.0  # bounds of the window, shares of the capacity
CLIMB = 8.0  # the window's factor per period end
SAMPLING = 16  # at most 1 key in 16 feeds the shadow caches ...
SHADOW_RECORDS = 1000  # ... and each shadow keeps at least this many records
PRUNE_MIN = 256  # heat entries kept before the first pruning
ALPHA = 0.1  # weight of the last period: heat keeps 90% per period (hotscore's paper: 50%)


def _sampled(key: Hashable, every: int) -> bool:
    """Whether `key` feeds the shadows: a hash stable across processes (not Python's)."""
    raw = key if isinstance(key, bytes) else repr(key).encode()
    return zlib.crc32(raw) % every == 0


def _share(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidArgument(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


class WindowHeatPolicy(WindowedSLRUPolicy):
    """A recency window plus a heat-admitted main region, the window sized by shadow caches
    (see the module docstring). `alpha` and `count_period` are hotscore's: history keeps
    ``1 - alpha`` of its weight at every period end of `count_period` accesses, which is also
    when the window adapts. The default alpha, 0.1, remembers longer than the paper's 0.5: a
    set hit once every few periods, as in a loop, keeps its heat (issue 44, medians of five
    seeds: 0.552 against 0.524 on the loop family at cache ratio 0.3, +0.2 to +0.4 points on
    static Zipf 0.99, +0.3 to +0.9 on the paper's telecom workload, within 0.4 points
    elsewhere); when the hot set moves the shadows widen the window and heat matters less. `window` is the starting share of the capacity; ``adapt=False``
    keeps it fixed. Heat below `prune` is forgotten at period ends once the table has doubled
    since the last pruning (so it stays bounded, at O(1) amortized cost)."""

    name = "window-heat"

    def __init__(self, capacity: int, alpha: float = ALPHA, count_period: int = 1000, *,
                 window: float = WINDOW_MIN, adapt: bool = True, prune: float = 0.01) -> None:
        self.share = min(WINDOW_MAX, max(WINDOW_MIN, _share("window", window)))
        super().__init__(capacity, max(1, min(capacity, round(self.share * capacity))))
        self.alpha = _share("alpha", alpha)
        self.count_period = _check_int("count_period", count_period, 1)
        self.adapt = bool(adapt)
        self.prune = _share("prune", prune)
        self._keep = 1.0 - self.alpha
        # key -> (visits in period p, history: its score at the end of period p - 1, in
        # visits, i.e. hotscore's score x count_period / alpha, p)
        self._heat: dict[Hashable, tuple[float, float, int]] = {}
        self._period = 0
        self._prune_at = PRUNE_MIN
        self._count = 0  # accesses in the current period
        # the main region's sets by heat per record, coldest first: (heat / records, seq, key),
        # stale entries skipped (a set's live entry is the one whose seq _cold_seq holds)
        self._cold: list[tuple[float, int, Hashable]] = []
        self._cold_seq: dict[Hashable, int] = {}
        self._seq = count()
        # heat ranks by (visits x g + history) x g^period, g = 1 / (1 - alpha): a set's rank
        # then stays put while it is not used (its heat decays as fast as everyone's)
        self._growth = 1.0 / self._keep if self._keep > 0 else 0.0
        self._scale = 1.0
        self._shadows: tuple[WindowHeatPolicy, WindowHeatPolicy] | None = None
        self._shadow_hits = (0, 0)
        self._every = 1
        if self.adapt and capacity > 0:
            self._every = max(1, min(SAMPLING, capacity // SHADOW_RECORDS))
            small, period = capacity // self._every, max(1, self.count_period // self._every)
            self._shadows = (
                WindowHeatPolicy(small, alpha, period, window=WINDOW_MIN, adapt=False),
                WindowHeatPolicy(small, alpha, period, window=WINDOW_MAX, adapt=False))

    # ---- heat ---------------------------------------------------------------------------------
    def heat(self, key: Hashable) -> float:
        """`key`'s visits in this period plus its hotscore score at the last period end, in
        visits (``score x count_period / alpha``): each earlier period weighs ``1 - alpha``
        times the next."""
        entry = self._heat.get(key)
        if entry is None:
            return 0.0
        if entry[2] == self._period:
            return entry[0] + entry[1]
        return self._state(key)[1]

    def score(self, key: Hashable) -> float:
        """`key`'s score at the last period end, exactly the published hotscore's."""
        return self.alpha * self._state(key)[1] / self.count_period

    def _state(self, key: Hashable) -> tuple[float, float]:
        """(visits this period, history) of `key`."""
        entry = self._heat.get(key)
        if entry is None:
            return 0.0, 0.0
        visits, history, period = entry
        if period == self._period:
            return visits, history
        return 0.0, self._keep ** (self._period - 1 - period) * (visits + self._keep * history)

    def coldest(self) -> Hashable | None:
        """The main region's coldest set per record (the first victim of a duel), or None."""
        while self._cold:
            _, seq, key = self._cold[0]
            if self._cold_seq.get(key) == seq:
                return key
            heapq.heappop(self._cold)  # stale
        return None

    @property
    def stats(self) -> dict:
        return {**super().stats, "window_max": self.window_max,
                "window_records": self._window_records, "periods": self._period,
                "tracked": len(self._heat)}

    def _bounded(self, share: float) -> int:
        """The window's size in records for a share of the capacity (at least one record)."""
        return max(1, min(self.capacity, round(share * self.capacity)))

    def _tick(self, key: Hashable, size: int) -> None:
        """Count an access: feed the shadows; at a period end decay, prune and adapt."""
        if self._shadows is not None and (self._every == 1 or _sampled(key, self._every)):
            for shadow in self._shadows:
                shadow.access(key, size)
        self._count += 1
        if self._count < self.count_period:
            return
        self._count = 0
        self._period += 1
        if len(self._heat) >= self._prune_at:  # amortized: the table at most doubles
            cached, heat = self._cached, self.heat
            self._heat = {k: e for k, e in self._heat.items()
                          if k in cached or heat(k) >= self.prune}
            self._prune_at = max(PRUNE_MIN, 2 * len(self._heat))
        self._scale *= self._growth
        if not 0 < self._scale < 1e200:  # alpha 1 (no history), or time to renormalize
            self._rebuild_cold()
        if self._shadows is not None:
            self._climb(self._shadows)

    def _rank(self, key: Hashable) -> float:
        """`key`'s heat per record as it will stand from the next period end on, scaled so
        that it does not change while `key` is not used (see ``_growth``)."""
        visits, history = self._state(key)
        if not self._growth:
            return visits / _cost(self._cached[key])
        return (visits * self._growth + history) * self._scale / _cost(self._cached[key])

    def _push_cold(self, key: Hashable) -> None:
        """(Re)rank a main-region set (it was used, resized, or entered the region)."""
        seq = next(self._seq)
        self._cold_seq[key] = seq
        heapq.heappush(self._cold, (self._rank(key), seq, key))

    def _rebuild_cold(self) -> None:
        """Rank the main region afresh (the scale restarts at 1; stale entries go), least
        recently used first among equals."""
        self._scale = 1.0
        self._cold, self._cold_seq = [], {}
        for key in self._main_order():
            seq = next(self._seq)
            self._cold_seq[key] = seq
            self._cold.append((self._rank(key), seq, key))
        heapq.heapify(self._cold)

    def _climb(self, shadows: tuple[WindowHeatPolicy, WindowHeatPolicy]) -> None:
        """The window moves toward the shadow that hit more in the period that ended."""
        hits = tuple(s.stats["hits"] for s in shadows)
        small, lru = (now - before for now, before in zip(hits, self._shadow_hits))
        self._shadow_hits = hits
        if lru > small:
            self.share = min(WINDOW_MAX, self.share * CLIMB)
        elif small > lru:
            self.share = max(WINDOW_MIN, self.share / CLIMB)
        self.window_max = self._bounded(self.share)

    # ---- the Policy hooks ---------------------------------------------------------------------
    def _access(self, key: Hashable, size: int, hit: bool) -> tuple[bool, list]:
        visits, history = self._state(key)
        self._heat[key] = (visits + 1.0, history, self._period)
        self._tick(key, size)
        if hit:
            self._touch(key)
            evict = self._resize_cached(key, size) if self._cached[key] != size else []
            return False, evict + self._evict(keep=key)
        if _cost(size) > self.capacity:
            return False, self._evict()
        self._store(key, size)
        evict = self._evict()
        if key in evict:  # it lost its duel at once: never stored
            evict.remove(key)
            return False, evict
        return True, evict

    def _touch(self, key: Hashable) -> None:
        super()._touch(key)
        if key not in self._window:
            self._push_cold(key)  # its heat grew

    def _drop(self, key: Hashable) -> None:
        self._cold_seq.pop(key, None)
        super()._drop(key)

    def _resize_cached(self, key: Hashable, size: int) -> list:
        evict = super()._resize_cached(key, size)
        if key in self._cold_seq and key in self._cached:
            self._push_cold(key)  # its heat per record changed
        return evict

    # ---- eviction: window overflow, then duels in the main region ----------------------------
    def _evict(self, keep: object = _NO_KEY) -> list:
        """Move window overflow to probation as candidates; while over the capacity each
        candidate duels the main region's victims; return what left."""
        candidates = self._window_overflow()
        for key in candidates:
            self._push_cold(key)
        evicted: list = []
        waiting = set(candidates)
        for cand in candidates:
            waiting.discard(cand)
            over = self._records - self.capacity
            if over <= 0:
                break
            cost = _cost(self._cached[cand])
            need = min(over, cost)  # room for itself; later candidates duel for theirs
            victims, freed, heat = self._victims(need, exclude=waiting | {cand})
            if freed >= need and self.heat(cand) * freed > heat * cost:
                lost = victims
            else:
                lost = [cand]
            for key in lost:
                self._drop(key)
            evicted += lost
        if self._records > self.capacity:  # the window grew, or a resize: plain LRU order
            evicted += self._make_room(0, exclude=keep)
        return evicted

    def _victims(self, need: int, exclude: set) -> tuple[list, int, float]:
        """The main region's coldest sets per record to push out for `need` records (keys,
        their records, their summed heat); all of it if that is not enough."""
        cold, live, cached = self._cold, self._cold_seq, self._cached
        victims, freed, total, taken = [], 0, 0.0, []
        while cold and freed < need:
            entry = heapq.heappop(cold)
            _, seq, key = entry
            if live.get(key) != seq:
                continue  # stale
            taken.append(entry)
            if key in exclude:
                continue
            victims.append(key)
            freed += _cost(cached[key])
            total += self.heat(key)
        for entry in taken:  # the caller drops the losers; the rest keep their rank
            heapq.heappush(cold, entry)
        if len(cold) > 2 * len(live) + 64:
            self._rebuild_cold()
        return victims, freed, total
