"""Cache policies: one contract run against every policy, hotscore pinned on hand-made traces,
and every policy checked against the offline Belady ceiling."""

from __future__ import annotations

import doctest
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hibase.cache import policy as policy_module
from hibase.cache.policies import make_policy
from hibase.cache.policy import (
    Decision, HotscorePerRecordPolicy, HotscorePolicy, LRUPolicy, NoCache, Policy,
    belady_hit_ratio, simulate,
)
from hibase.errors import InvalidArgument


def cost(size: int) -> int:
    return max(size, 1)


def zipf_trace(seed: int, n: int, keys: int, *, skew: float = 1.0, max_size: int = 1) -> list:
    rng = random.Random(seed)
    weights = [1 / (rank + 1) ** skew for rank in range(keys)]
    sizes = {k: rng.randint(1, max_size) for k in range(keys)}
    return [(k, sizes[k]) for k in rng.choices(range(keys), weights, k=n)]


def hot_and_scan_trace(seed: int, n: int = 20_000, hot: int = 20) -> list:
    """Half the accesses go to a stable hot set, half to one-off keys (a scan)."""
    rng = random.Random(seed)
    trace = []
    for i in range(n):
        if rng.random() < 0.5:
            trace.append((("hot", rng.randrange(hot)), 1))
        else:
            trace.append((("scan", i), 1))
    return trace


ops = st.lists(
    st.tuples(st.sampled_from(["access"] * 6 + ["resize", "discard", "load"]),
              st.integers(0, 7), st.integers(0, 6)),
    max_size=60)


class PolicyContract:
    """Run against every policy; subclasses say how to build one."""

    admits = True  # whether the policy ever admits anything

    def make(self, capacity: int) -> Policy:
        raise NotImplementedError

    def test_is_a_policy(self):
        p = self.make(10)
        assert isinstance(p, Policy)
        assert len(p) == 0 and p.records == 0 and "x" not in p

    def test_miss_then_hit_when_admitted(self):
        p = self.make(10)
        first = p.access("a", 1)
        assert isinstance(first, Decision)
        assert first.hit is False and first.evict == []
        assert first.admit is self.admits
        assert ("a" in p) is self.admits
        assert p.access("a", 1).hit is self.admits

    def test_oversize_set_never_admitted(self):
        p = self.make(5)
        for _ in range(12):  # also across hotscore period ends
            d = p.access("big", 6)
            assert d.hit is False and d.admit is False
            p.access("small", 1)
        assert "big" not in p and p.records <= 5

    def test_empty_set_charged_one_record(self):
        p = self.make(2)
        for key in "abc":
            p.access(key, 0)
        assert len(p) <= 2 and p.records == len(p)

    def test_discard(self):
        p = self.make(10)
        p.access("a", 3)
        p.discard("a")
        p.discard("never-seen")
        assert "a" not in p and p.records == 0 and len(p) == 0
        assert p.access("a", 3).hit is False

    def test_resize(self):
        p = self.make(10)
        assert p.access("a", 4).admit and p.access("b", 4).admit
        assert p.resize("b", 6) == [] and p.records == 10
        assert p.resize("b", 7) == ["a"]  # others go, never the resized set
        assert "b" in p and p.records == 7
        assert p.resize("b", 5) == [] and p.records == 5
        assert p.resize("b", 11) == ["b"]  # it alone exceeds the capacity
        assert len(p) == 0 and p.records == 0
        assert p.resize("unknown", 3) == []

    def test_hit_with_grown_size_keeps_capacity(self):
        p = self.make(10)
        p.access("a", 4)
        p.access("b", 4)
        d = p.access("b", 9)
        assert d.hit and d.evict == ["a"] and p.records == 9

    def test_stats(self):
        p = self.make(4)
        for key, size in [("a", 1), ("b", 2), ("a", 1), ("c", 3), ("a", 1), ("d", 9)]:
            p.access(key, size)
        s = p.stats
        assert s["hits"] + s["misses"] == s["accesses"] == 6
        assert s["hit_ratio"] == pytest.approx(s["hits"] / 6)
        assert s["record_hits"] + s["record_misses"] == 17
        assert s["admissions"] - s["evictions"] == len(p) == s["sets"]
        assert s["records"] == p.records
        assert {"hits", "misses", "evictions", "admissions", "hit_ratio"} <= s.keys()
        assert self.make(4).stats["hit_ratio"] == 0.0

    def test_bad_arguments(self):
        p = self.make(4)
        for size in (-1, 1.5, True, "3"):
            with pytest.raises(InvalidArgument):
                p.access("a", size)
            with pytest.raises(InvalidArgument):
                p.resize("a", size)
        assert p.stats["accesses"] == 0

    def test_model(self):
        """A caller that obeys every decision always holds exactly what the policy thinks, and
        the capacity in records holds after every step."""
        # a fresh @given function per policy class: hypothesis wants one executor per test
        @settings(max_examples=100, deadline=None)
        @given(capacity=st.integers(0, 12), ops=ops)
        def run(capacity, ops):
            self.check_model(capacity, ops)

        run()

    def check_model(self, capacity: int, ops: list) -> None:
        p = self.make(capacity)
        stored: dict = {}
        discarded = 0

        def apply(d: Decision, key, size) -> None:
            assert not (d.hit and d.admit)
            if d.hit or d.admit:
                stored[key] = size
            assert not (d.admit and key in d.evict)
            for k in d.evict:
                assert k in stored
                del stored[k]

        accesses = 0
        for kind, key, size in ops:
            if kind == "access":
                before = key in stored
                d = p.access(key, size)
                accesses += 1
                assert d.hit == before
                apply(d, key, size)
            elif kind == "resize":
                if key in stored:
                    stored[key] = size
                evict = p.resize(key, size)
                assert key not in evict or cost(size) > p.capacity
                apply(Decision(False, False, evict), key, size)
            elif kind == "discard":
                discarded += stored.pop(key, None) is not None
                p.discard(key)
            else:
                for k in p.pending_admissions():
                    assert k not in stored
                    apply(p.admit_pending(k, size), k, size)
            assert set(p) == set(stored) and len(p) == len(stored)
            assert p.records == sum(cost(s) for s in stored.values()) <= capacity
        s = p.stats
        assert s["accesses"] == accesses
        assert s["admissions"] - s["evictions"] - discarded == len(stored)


class TestLRUPolicy(PolicyContract):
    def make(self, capacity):
        return LRUPolicy(capacity)

    def test_evicts_least_recently_used_by_records(self):
        p = LRUPolicy(5)
        p.access("a", 2)
        p.access("b", 2)
        p.access("a", 2)
        assert p.access("c", 3) == Decision(False, True, ["b"])
        assert p.access("d", 4) == Decision(False, True, ["a", "c"])


class TestHotscorePolicy(PolicyContract):
    def make(self, capacity):
        return HotscorePolicy(capacity, alpha=0.5, count_period=3)


class TestHotscoreFillGaps(PolicyContract):
    def make(self, capacity):
        return HotscorePolicy(capacity, alpha=1.0, count_period=4, fill_gaps=True)


class TestHotscoreLongPeriod(PolicyContract):
    def make(self, capacity):
        return HotscorePolicy(capacity)


class TestHotscorePerRecordPolicy(PolicyContract):
    def make(self, capacity):
        return HotscorePerRecordPolicy(capacity, alpha=0.3, count_period=2)


class TestNoCache(PolicyContract):
    admits = False

    def make(self, capacity):
        return NoCache()

    def test_resize(self):
        p = NoCache()
        p.access("a", 4)
        assert p.resize("a", 7) == [] and len(p) == 0 and p.records == 0

    def test_hit_with_grown_size_keeps_capacity(self):
        p = NoCache()
        assert p.access("a", 4) == p.access("a", 9) == Decision(False, False, [])
        assert NoCache().capacity == 0


# ---- hotscore, pinned on hand-made traces --------------------------------------------------

def test_warm_up_admits_on_access_while_free_then_a_miss_is_just_a_miss():
    p = HotscorePolicy(4, count_period=100)
    assert p.access("a", 2) == Decision(False, True, [])
    assert p.access("b", 3) == Decision(False, False, [])  # 2 + 3 > 4: no room, no eviction
    assert p.access("c", 1).admit and p.access("d", 1).admit
    assert p.records == 4
    assert p.access("e", 1) == Decision(False, False, [])  # full: nothing admitted mid-period
    assert p.access("a", 2).hit and set(p) == {"a", "c", "d"}


def test_exact_scores_after_two_periods():
    p = HotscorePolicy(100, alpha=0.5, count_period=4)
    for key in "AABC":
        p.access(key, 1)
    # score = 0.5 * visits / 4 + 0.5 * previous
    assert p.scores == {"A": 0.25, "B": 0.125, "C": 0.125}
    assert p.period_position == 0 and p.stats["periods"] == 1
    for key in "ABBD":
        p.access(key, 1)
    assert p.scores == {"A": 0.25, "B": 0.3125, "C": 0.0625, "D": 0.125}
    assert p.stats["periods"] == 2


def test_cold_set_evicted_at_period_end_for_a_newly_hot_one():
    p = HotscorePolicy(2, alpha=0.5, count_period=4)
    for key in "AABB":  # warm-up: A and B admitted
        p.access(key, 1)
    assert set(p) == {"A", "B"} and p.pending_admissions() == []
    for key in "CCC":  # full: C misses without admission
        assert p.access(key, 1) == Decision(False, False, [])
    end = p.access("A", 1)  # 4th access of period 2: A 0.25, B 0.125, C 0.375
    assert end == Decision(True, False, ["B"])
    assert p.scores == {"A": 0.25, "B": 0.125, "C": 0.375}
    assert set(p) == {"A"} and p.pending_admissions() == ["C"]
    assert p.access("B", 1) == Decision(False, False, [])  # room reserved for C
    assert p.access("C", 1) == Decision(False, True, [])  # lazy admission on next access
    assert set(p) == {"A", "C"} and p.pending_admissions() == []


def test_period_end_admits_a_chosen_set_whose_data_is_in_hand():
    p = HotscorePolicy(1, alpha=1.0, count_period=3)
    p.access("A", 1)
    p.access("B", 1)
    assert p.access("B", 1) == Decision(False, True, ["A"])


def test_eager_admission_of_pending_sets():
    p = HotscorePolicy(2, alpha=0.5, count_period=4)
    for key in "AABBCCCA":
        p.access(key, 1)
    assert p.pending_admissions() == ["C"]
    assert p.admit_pending("C", 1) == Decision(False, True, [])
    assert "C" in p and p.pending_admissions() == []
    assert p.admit_pending("C", 1).admit is False  # no longer pending
    assert p.access("C", 1).hit


def threshold_policy(policy_class=HotscorePolicy, **options) -> tuple[Policy, Decision]:
    """Capacity 10: big set X (8 records, 5 visits), small S1..S3 (3 records, 4 visits each),
    tiny T (1 record, 1 visit); the period ends on T's access."""
    p = policy_class(10, alpha=0.5, count_period=18, **options)
    trace = [("X", 8)] * 5 + [("S1", 3)] * 4 + [("S2", 3)] * 4 + [("S3", 3)] * 4
    for key, size in trace:
        p.access(key, size)
    assert set(p) == {"X"}  # warm-up took X; no S fits beside it
    return p, p.access("T", 1)


def test_threshold_stops_at_the_first_set_that_does_not_fit():
    p, end = threshold_policy()
    # walk: X (8) taken, S1 (8 + 3 > 10) stops the walk; T, admitted by warm-up, goes again
    assert end == Decision(False, False, [])
    assert set(p) == {"X"} and p.records == 8 and p.pending_admissions() == []


def test_threshold_fill_gaps_skips_and_continues():
    p, end = threshold_policy(fill_gaps=True)
    assert end == Decision(False, True, [])  # X, skip S1..S3, T
    assert set(p) == {"X", "T"} and p.records == 9


def test_per_record_score_prefers_many_small_hot_sets():
    p, end = threshold_policy(HotscorePerRecordPolicy)
    # heat per record: S 4/3, T 1, X 5/8 -> S1, S2, S3, T fill 10; X is evicted
    assert end == Decision(False, True, ["X"])
    assert set(p) == {"T"} and p.pending_admissions() == ["S1", "S2", "S3"]
    assert p.scores["X"] == pytest.approx(0.5 * 5 / 18)  # scores themselves are hotscore's
    for key in ("S1", "S2", "S3"):
        assert p.access(key, 3).admit
    assert p.records == 10


def test_set_larger_than_capacity_does_not_stop_the_walk():
    p = HotscorePolicy(3, alpha=1.0, count_period=4)
    for key, size in [("huge", 9), ("huge", 9), ("huge", 9), ("a", 1)]:
        p.access(key, size)
    assert set(p) == {"a"}


def test_discard_frees_room_for_warm_up():
    p = HotscorePolicy(2, count_period=100)
    p.access("a", 1)
    p.access("b", 1)
    assert not p.access("c", 1).admit
    p.discard("a")
    assert p.access("c", 1).admit and set(p) == {"b", "c"}


def test_resize_evicts_the_coldest():
    p = HotscorePolicy(6, alpha=1.0, count_period=6)
    for key in ["hot", "hot", "hot", "warm", "warm", "cold"]:
        p.access(key, 2)
    assert p.resize("hot", 4) == ["cold"]
    assert set(p) == {"hot", "warm"}


def test_score_table_stays_bounded():
    p = HotscorePolicy(10, alpha=0.5, count_period=50)
    simulate(p, [(("scan", i), 1) for i in range(10_000)])
    # one visit scores 0.01 and halves every period: below 1e-9 after 24 periods
    assert p.stats["scored"] <= 50 * 25


def test_hotscore_beats_lru_on_a_hot_set_plus_a_scan():
    for seed in range(2):
        trace = hot_and_scan_trace(seed)
        lru = simulate(LRUPolicy(20), trace)["hit_ratio"]
        hot = simulate(HotscorePolicy(20, count_period=1000), trace)["hit_ratio"]
        ceiling = belady_hit_ratio(trace, 20)["hit_ratio"]
        assert lru < 0.25  # one-off keys push the hot sets out
        assert hot > 0.47  # the hot set stays once the first period ends
        assert ceiling >= hot > lru + 0.2


# ---- Belady --------------------------------------------------------------------------------

def test_belady_hand_traces():
    r = belady_hit_ratio([("a", 1), ("b", 1), ("c", 1), ("a", 1), ("b", 1)], 2)
    assert (r["hits"], r["misses"]) == (2, 3)  # c is never used again: bypassed
    r = belady_hit_ratio([("a", 1), ("b", 1), ("c", 1), ("a", 1), ("c", 1), ("b", 1)], 2)
    assert r["hits"] == 2 and r["hit_ratio"] == pytest.approx(2 / 6)
    r = belady_hit_ratio([("big", 4), ("s", 1), ("big", 4), ("s", 1)], 4)
    assert r["hits"] == 1 and r["record_hit_ratio"] == pytest.approx(4 / 10)
    assert belady_hit_ratio([], 3)["hit_ratio"] == 0.0
    assert belady_hit_ratio([("a", 1), ("a", 1)], 0)["hits"] == 0
    with pytest.raises(InvalidArgument):
        belady_hit_ratio([("a", -1)], 3)


ALL_POLICIES = [
    lambda c: LRUPolicy(c),
    lambda c: HotscorePolicy(c, count_period=50),
    lambda c: HotscorePolicy(c, alpha=0.9, count_period=7, fill_gaps=True),
    lambda c: HotscorePerRecordPolicy(c, count_period=50),
    lambda c: NoCache(),
]


@pytest.mark.parametrize("max_size", [1, 5, 20])
@pytest.mark.parametrize("capacity", [5, 20, 80])
def test_belady_is_a_ceiling_on_zipf_traces(max_size, capacity):
    for seed in range(2):
        trace = zipf_trace(seed, 2000, 300, max_size=max_size)
        ceiling = belady_hit_ratio(trace, capacity)["hit_ratio"]
        for build in ALL_POLICIES:
            assert simulate(build(capacity), trace)["hit_ratio"] <= ceiling


@settings(max_examples=50, deadline=None)
@given(trace=st.lists(st.tuples(st.integers(0, 9), st.just(1)), max_size=80),
       capacity=st.integers(0, 6))
def test_belady_is_optimal_for_unit_sizes(trace, capacity):
    ceiling = belady_hit_ratio(trace, capacity)["hits"]
    for build in ALL_POLICIES:
        assert simulate(build(capacity), trace)["hits"] <= ceiling
        assert simulate(build(capacity), trace, eager=True)["hits"] <= ceiling


def test_belady_handles_a_100k_trace():
    trace = zipf_trace(7, 100_000, 20_000, max_size=50)
    r = belady_hit_ratio(trace, 2000)
    assert r["hits"] + r["misses"] == 100_000
    assert simulate(LRUPolicy(2000), trace)["hit_ratio"] < r["hit_ratio"]


# ---- construction ----------------------------------------------------------------------------

def test_make_policy():
    assert type(make_policy("hotscore", 10)) is HotscorePolicy
    assert type(make_policy("hotscore-per-record", 10)) is HotscorePerRecordPolicy
    assert type(make_policy("HotScore_Per_Record", 10)) is HotscorePerRecordPolicy
    assert type(make_policy("lru", 10)) is LRUPolicy
    assert type(make_policy(None, 10)) is NoCache and type(make_policy("none", 10)) is NoCache
    p = make_policy("hotscore", 10, alpha=0.25, count_period=7, fill_gaps=True)
    assert (p.capacity, p.alpha, p.count_period, p.fill_gaps) == (10, 0.25, 7, True)
    for name, options in [("mru", {}), ("lru", {"alpha": 0.5}), ("none", {"alpha": 0.5}),
                          ("hotscore", {"beta": 1})]:
        with pytest.raises(InvalidArgument):
            make_policy(name, 10, **options)


@pytest.mark.parametrize("build", [
    lambda: LRUPolicy(-1), lambda: HotscorePolicy(1.5), lambda: HotscorePolicy(5, alpha=1.5),
    lambda: HotscorePolicy(5, alpha=-0.1), lambda: HotscorePolicy(5, count_period=0),
    lambda: HotscorePolicy(5, epsilon=-1), lambda: make_policy("none", -3),
])
def test_bad_parameters(build):
    with pytest.raises(InvalidArgument):
        build()


def test_simulate_returns_stats():
    s = simulate(LRUPolicy(2), [("a", 1), ("a", 1), ("b", 1)])
    assert (s["hits"], s["misses"], s["admissions"], s["hit_ratio"]) == (1, 2, 2, 1 / 3)


def test_doctests():
    assert doctest.testmod(policy_module).failed == 0
