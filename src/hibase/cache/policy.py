"""Cache replacement policies for hot index sets: HiBase's hotscore, LRU as the paper's baseline,
no cache, and an offline Belady ceiling, all deciding membership only (storage lives elsewhere).

A policy sees every lookup of a set (one index value's whole inverted list) with its size in
records and answers with a :class:`Decision`: was it a hit, should the caller store it now, which
keys must it drop now. Capacity is counted in records; an empty set is charged one record (its key
still takes room), so ``records`` is the charged total.

>>> lru = LRUPolicy(4)
>>> lru.access("a", 2)
Decision(hit=False, admit=True, evict=[])
>>> lru.access("b", 1), lru.access("a", 2).hit
(Decision(hit=False, admit=True, evict=[]), True)
>>> lru.access("c", 2)          # "b" is least recently used
Decision(hit=False, admit=True, evict=['b'])
>>> simulate(NoCache(), [("a", 1), ("a", 1)])["hit_ratio"]
0.0
"""

from __future__ import annotations

import heapq
from collections import Counter, OrderedDict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from hibase.errors import InvalidArgument

__all__ = [
    "Decision", "Policy", "LRUPolicy", "HotscorePolicy", "HotscorePerRecordPolicy", "NoCache",
    "belady_hit_ratio", "simulate", "POLICY_NAMES", "NO_KEY", "record_cost",
]

POLICY_NAMES = ("window-heat", "hotscore", "hotscore-per-record", "lru", "none")
_NO_KEY = object()  # sentinel: "exclude nothing" (None may be a real key)


class Decision(NamedTuple):
    """What the caller does after one access."""

    hit: bool  # the key was cached before this access
    admit: bool  # store this set now (only ever True on a miss)
    evict: list  # keys to drop from storage now


def _cost(size: int) -> int:
    """Records a set is charged: its size, but at least one."""
    return size if size > 0 else 1


# for policies written elsewhere against the same contract (hibase_bench.cache_peers)
NO_KEY = _NO_KEY
record_cost = _cost


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


class Policy:
    """Base of every policy: membership, record accounting and statistics.

    Subclasses override :meth:`_access` (decide admission and victims on a lookup) and
    :meth:`_victim_order` (which cached keys go first when room is needed); a few hooks more
    where they keep extra state.
    """

    name = "base"

    def __init__(self, capacity: int) -> None:
        self.capacity = _check_int("capacity", capacity, 0)
        self._cached: OrderedDict[Hashable, int] = OrderedDict()  # key -> size in records
        self._records = 0
        self._hits = self._misses = self._evictions = self._admissions = 0
        self._record_hits = self._record_misses = 0

    # ---- public interface -------------------------------------------------------------------
    def access(self, key: Hashable, size: int) -> Decision:
        """Account one lookup of `key`, whose set has `size` records now; see :class:`Decision`."""
        size = _check_int("size", size, 0)
        hit = key in self._cached
        if hit:
            self._hits += 1
            self._record_hits += size
        else:
            self._misses += 1
            self._record_misses += size
        admit, evict = self._access(key, size, hit)
        self._admissions += admit
        self._evictions += len(evict)
        return Decision(hit, admit, evict)

    def resize(self, key: Hashable, size: int) -> list:
        """A write made `key`'s set `size` records; return keys to evict (the resized one only if
        it alone exceeds the capacity). Unknown keys are ignored."""
        size = _check_int("size", size, 0)
        self._note_size(key, size)
        if key not in self._cached:
            return []
        evict = self._resize_cached(key, size)
        self._evictions += len(evict)
        return evict

    def discard(self, key: Hashable) -> None:
        """The caller dropped `key`'s set (node lost, invalidation); not counted as an eviction."""
        if key in self._cached:
            self._drop(key)

    def pending_admissions(self) -> list:
        """Keys the policy wants stored but whose data is not in hand; none for most policies."""
        return []

    @property
    def reserved(self) -> int:
        """Records held back for pending admissions (0 for policies without any)."""
        return 0

    @property
    def fill_limit(self) -> int:
        """The largest set (records) a cache node may store on a miss before its policy has
        replayed the access (cache/node.py): policies that decide at every miss trim a loser
        right after; 0 for those that admit only what they chose earlier (hotscore)."""
        return 0

    def admit_pending(self, key: Hashable, size: int) -> Decision:
        """The caller loaded a pending key eagerly; admit says whether to store it."""
        _check_int("size", size, 0)
        return Decision(key in self._cached, False, [])

    def __contains__(self, key: object) -> bool:
        return key in self._cached

    def __len__(self) -> int:
        return len(self._cached)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(list(self._cached))

    @property
    def records(self) -> int:
        """Records currently cached (charged, see the module docstring)."""
        return self._records

    @property
    def stats(self) -> dict:
        accesses = self._hits + self._misses
        record_accesses = self._record_hits + self._record_misses
        return {
            "policy": self.name, "capacity": self.capacity, "accesses": accesses,
            "hits": self._hits, "misses": self._misses,
            "evictions": self._evictions, "admissions": self._admissions,
            "hit_ratio": self._hits / accesses if accesses else 0.0,
            "record_hits": self._record_hits, "record_misses": self._record_misses,
            "record_hit_ratio": self._record_hits / record_accesses if record_accesses else 0.0,
            "sets": len(self._cached), "records": self._records,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(capacity={self.capacity}, records={self._records})"

    # ---- for subclasses ---------------------------------------------------------------------
    def _access(self, key: Hashable, size: int, hit: bool) -> tuple[bool, list]:
        raise NotImplementedError

    def _victim_order(self) -> Iterable[Hashable]:
        """Cached keys, first to go first."""
        return iter(self._cached)

    def _note_size(self, key: Hashable, size: int) -> None:
        """Hook: a set's size changed by a write."""

    def _store(self, key: Hashable, size: int) -> None:
        self._cached[key] = size
        self._records += _cost(size)

    def _drop(self, key: Hashable) -> None:
        self._records -= _cost(self._cached.pop(key))

    def _make_room(self, need: int, exclude: object = _NO_KEY) -> list:
        """Drop victims (never `exclude`) until `need` more records fit; return them."""
        over = self._records + need - self.capacity
        victims: list = []
        if over <= 0:
            return victims
        for victim in self._victim_order():
            if victim == exclude:
                continue
            victims.append(victim)
            over -= _cost(self._cached[victim])
            if over <= 0:
                break
        for victim in victims:
            self._drop(victim)
        return victims

    def _resize_cached(self, key: Hashable, size: int) -> list:
        self._records += _cost(size) - _cost(self._cached[key])
        self._cached[key] = size
        if _cost(size) > self.capacity:
            self._drop(key)
            return [key]
        return self._make_room(0, exclude=key)


class NoCache(Policy):
    """Capacity 0: every access is a miss and nothing is ever admitted."""

    name = "none"

    def __init__(self) -> None:
        super().__init__(0)

    def _access(self, key: Hashable, size: int, hit: bool) -> tuple[bool, list]:
        return False, []


class LRUPolicy(Policy):
    """Least recently used, by records: on a miss, evict the least recently used sets until the
    new one fits; a set bigger than the capacity is never admitted."""

    name = "lru"

    @property
    def fill_limit(self) -> int:
        return self.capacity

    def _access(self, key: Hashable, size: int, hit: bool) -> tuple[bool, list]:
        if hit:
            self._cached.move_to_end(key)
            evict = self._resize_cached(key, size) if self._cached[key] != size else []
            return False, evict
        if _cost(size) > self.capacity:
            return False, []
        evict = self._make_room(_cost(size))
        self._store(key, size)
        return True, evict


class HotscorePolicy(Policy):
    """HiBase's heat-accumulation policy (SPEC §1), capacity in records.

    * During a period of `count_period` accesses only visits are counted. While the cache has
      room for an accessed set (capacity minus cached records minus the room reserved for pending
      sets, below) the set is admitted at once (warm-up, like LRU); once it does not fit, a miss
      is just a miss: no eviction happens during a period except to absorb a write's growth.
    * When the access count reaches `count_period` (the access that reaches it is counted first),
      every set seen so far, cached or not, is rescored
      ``score_n = alpha * visitCount / count_period + (1 - alpha) * score_{n-1}``
      (visitCount 0 if not visited this period). Entries that fall below `epsilon` and are neither
      cached nor visited this period leave the score table, so it stays bounded.
    * Sets are walked in descending score (ties: cached first, then first seen); sets bigger than
      the whole capacity are skipped (they can never be cached). Each set is taken while it fits
      in the capacity; at the first that does not fit the walk **stops** (the paper's score
      threshold: everything scoring above it is cached). With ``fill_gaps=True`` the walk
      **skips** that set and continues, filling gaps with smaller, cooler sets.
    * Cached sets not taken are evicted (returned by that access). Taken sets not cached are
      *pending*: their data is not in hand, so they are listed by :meth:`pending_admissions` and
      their records reserved. If the access that ends the period is a miss on a taken set it is
      admitted at once (its data is in hand). Otherwise a pending set is admitted lazily on its
      next access (``Decision(hit=False, admit=True)``), or eagerly when the caller loads it and
      calls :meth:`admit_pending`. A pending set is never a hit before it is stored.
    * A set's size is the one seen at its last access (or resize).
    """

    name = "hotscore"

    def __init__(self, capacity: int, alpha: float = 0.5, count_period: int = 1000, *,
                 fill_gaps: bool = False, epsilon: float = 1e-9) -> None:
        super().__init__(capacity)
        for name, value, top in (("alpha", alpha, 1.0), ("epsilon", epsilon, float("inf"))):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0 <= value <= top:
                raise InvalidArgument(f"{name} must be a number in [0, {top}], got {value!r}")
        self.alpha, self.epsilon = float(alpha), float(epsilon)
        self.count_period = _check_int("count_period", count_period, 1)
        self.fill_gaps = bool(fill_gaps)
        self._scores: dict[Hashable, float] = {}  # score after the last period end
        self._visits: Counter[Hashable] = Counter()  # visits in the current period
        self._sizes: dict[Hashable, int] = {}  # last known size of every set in either table
        self._pending: dict[Hashable, int] = {}  # chosen, not stored: key -> reserved records
        self._reserved = 0
        self._count = 0  # accesses in the current period
        self._periods = 0

    # ---- ranking: the one method a variant overrides -----------------------------------------
    def _rank(self, score: float, size: int) -> float:
        return score

    def _rank_of(self, key: Hashable) -> float:
        return self._rank(self._scores.get(key, 0.0), self._sizes.get(key, 0))

    def _victim_order(self) -> Iterable[Hashable]:
        return sorted(self._cached, key=lambda k: (self._rank_of(k), self._visits[k]))

    # ---- public extras ----------------------------------------------------------------------
    @property
    def scores(self) -> dict:
        """Scores after the last period end (a copy)."""
        return dict(self._scores)

    @property
    def period_position(self) -> int:
        """Accesses counted in the current period."""
        return self._count

    def pending_admissions(self) -> list:
        """Sets the last period end chose but that are not stored yet, hottest first."""
        return list(self._pending)

    @property
    def reserved(self) -> int:
        return self._reserved

    def admit_pending(self, key: Hashable, size: int) -> Decision:
        size = _check_int("size", size, 0)
        if key not in self._pending:
            return Decision(key in self._cached, False, [])
        self._sizes[key] = size
        admit, evict = self._admit_pending(key, size)
        self._admissions += admit
        self._evictions += len(evict)
        return Decision(False, admit, evict)

    @property
    def stats(self) -> dict:
        return {**super().stats, "periods": self._periods, "pending": len(self._pending),
                "scored": len(self._scores)}

    # ---- mechanics --------------------------------------------------------------------------
    def _note_size(self, key: Hashable, size: int) -> None:
        if key in self._sizes:
            self._sizes[key] = size
        if key in self._pending:
            self._reserved += _cost(size) - self._pending[key]
            self._pending[key] = _cost(size)

    def _admit_pending(self, key: Hashable, size: int) -> tuple[bool, list]:
        self._reserved -= self._pending.pop(key)
        if _cost(size) > self.capacity:
            return False, []
        self._store(key, size)
        return True, self._make_room(0, exclude=key)

    def _access(self, key: Hashable, size: int, hit: bool) -> tuple[bool, list]:
        self._visits[key] += 1
        self._sizes[key] = size
        self._count += 1
        admit, evict = False, []
        if hit:
            if self._cached[key] != size:
                evict = self._resize_cached(key, size)
        elif key in self._pending:
            admit, evict = self._admit_pending(key, size)
        elif _cost(size) <= self.capacity - self._records - self._reserved:
            self._store(key, size)
            admit = True
        if self._count >= self.count_period:
            ended = self._end_period()
            if admit and key in ended:  # admitted and dropped in one access: nothing to do
                ended.remove(key)
                admit = False
            evict += ended
            if key in self._pending:  # chosen, and its data is in hand right now
                more_admit, more = self._admit_pending(key, size)
                admit = admit or more_admit
                evict += more
        return admit, evict

    def _end_period(self) -> list:
        """Rescore, keep the top sets up to the capacity, return the evicted keys."""
        a, period, eps = self.alpha, self.count_period, self.epsilon
        scores: dict[Hashable, float] = {}
        for key in [*self._scores, *(k for k in self._visits if k not in self._scores)]:
            visits = self._visits.get(key, 0)
            score = a * visits / period + (1 - a) * self._scores.get(key, 0.0)
            if score < eps and not visits and key not in self._cached:
                continue
            scores[key] = score
        self._scores = scores
        sizes = self._sizes = {k: self._sizes[k] for k in scores}
        rank, cached = self._rank, self._cached
        ranked = sorted((-rank(score, sizes[key]), key not in cached, i, key)
                        for i, (key, score) in enumerate(scores.items()))
        chosen: dict[Hashable, None] = {}
        taken = 0
        for *_, key in ranked:
            cost = _cost(sizes[key])
            if cost > self.capacity:
                continue
            if taken + cost <= self.capacity:
                chosen[key] = None
                taken += cost
            elif not self.fill_gaps:
                break
        evicted = [k for k in self._victim_order() if k not in chosen]
        for key in evicted:
            self._drop(key)
        self._pending = {k: _cost(self._sizes[k]) for k in chosen if k not in self._cached}
        self._reserved = sum(self._pending.values())
        self._visits.clear()
        self._count = 0
        self._periods += 1
        return evicted


class HotscorePerRecordPolicy(HotscorePolicy):
    """Hotscore ranked by heat per record, ``score / size`` (GDSF-like): many small hot sets win
    over one big set of the same score. Scores themselves are computed exactly as in hotscore."""

    name = "hotscore-per-record"

    def _rank(self, score: float, size: int) -> float:
        return score / _cost(size)


def simulate(policy: Policy, trace: Iterable[tuple[Hashable, int]], *,
             eager: bool = False) -> dict:
    """Replay `(key, size)` accesses through ``policy.access`` and return ``policy.stats``.

    With ``eager=True`` pending admissions are loaded right after each access (at the size the
    trace last showed); the default is lazy admission on the next access."""
    last_size: dict[Hashable, int] = {}
    for key, size in trace:
        policy.access(key, size)
        if eager:
            last_size[key] = size
            for pending in policy.pending_admissions():
                if pending in last_size:
                    policy.admit_pending(pending, last_size[pending])
    return policy.stats


class _Fenwick:
    """Prefix sums over positions 0..n-1 (records cached by next-use position)."""

    def __init__(self, n: int) -> None:
        self._tree = [0] * (n + 1)

    def add(self, pos: int, delta: int) -> None:
        pos += 1
        while pos < len(self._tree):
            self._tree[pos] += delta
            pos += pos & -pos

    def prefix(self, pos: int) -> int:
        """Sum over positions < pos."""
        total = 0
        while pos > 0:
            total += self._tree[pos]
            pos -= pos & -pos
        return total


def belady_hit_ratio(trace: Sequence[tuple[Hashable, int]], capacity: int) -> dict:
    """Offline ceiling for a trace: Belady's MIN with bypass, generalized to sizes.

    On a hit the set's next use is updated (and, if it grew past the capacity, the sets used
    farthest in the future, itself included, are dropped). On a miss the set is admitted only if
    it fits in the capacity, is used again, and the room it needs can be freed from sets whose
    next use is strictly later than its own; those sets are evicted farthest-first. With equal
    sizes this is exactly optimal; with different sizes exact optimality is NP-hard, and this is
    the standard size-aware MIN heuristic: a ceiling *estimate*, not a proven bound. Runs in
    O(n log n): next uses are precomputed, victims come from a heap with lazy deletion, and a
    Fenwick tree over next-use positions says at once whether enough later-used records exist.

    Returns hits, misses, hit_ratio (by accesses) and record_hit_ratio (by records).
    """
    capacity = _check_int("capacity", capacity, 0)
    n = len(trace)
    never = n  # next-use position of a last access
    next_use = [never] * n
    seen: dict[Hashable, int] = {}
    for i in range(n - 1, -1, -1):
        key, size = trace[i]
        _check_int("size", size, 0)
        next_use[i] = seen.get(key, never)
        seen[key] = i
    cached: dict[Hashable, tuple[int, int]] = {}  # key -> (next use, size)
    heap: list[tuple[int, int, Hashable]] = []  # (-next use, tiebreak, key), lazy deletion
    later = _Fenwick(n + 1)  # charged records of cached sets by next-use position
    records = hits = record_hits = record_total = 0

    def drop(key: Hashable) -> None:
        nonlocal records
        nu, size = cached.pop(key)
        later.add(nu, -_cost(size))
        records -= _cost(size)

    def put(key: Hashable, nu: int, size: int, i: int) -> None:
        nonlocal records
        cached[key] = (nu, size)
        later.add(nu, _cost(size))
        records += _cost(size)
        heapq.heappush(heap, (-nu, i, key))

    def evict_farthest(room: int) -> None:
        while records + room > capacity:
            neg_nu, _, key = heapq.heappop(heap)
            if key in cached and cached[key][0] == -neg_nu:
                drop(key)

    for i, (key, size) in enumerate(trace):
        record_total += size
        nu = next_use[i]
        if key in cached:
            hits += 1
            record_hits += size
            drop(key)
            put(key, nu, size, i)
            evict_farthest(0)
            continue
        cost = _cost(size)
        if nu == never or cost > capacity:
            continue
        need = records + cost - capacity
        if need > 0 and records - later.prefix(nu + 1) < need:
            continue  # it would displace a set needed sooner than itself: bypass
        evict_farthest(cost)
        put(key, nu, size, i)
    return {
        "accesses": n, "hits": hits, "misses": n - hits,
        "hit_ratio": hits / n if n else 0.0,
        "record_hits": record_hits, "record_misses": record_total - record_hits,
        "record_hit_ratio": record_hits / record_total if record_total else 0.0,
    }
