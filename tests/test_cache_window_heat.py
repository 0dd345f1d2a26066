"""window-heat, the default cache policy: the shared policy contract, its decisions pinned on
small hand-computed traces (admission duels, heat per record, the recency window, eviction
order, the window's adaptation), its heat equal to hotscore's score, and its hit ratio against
LRU, hotscore and Belady on skewed, shifting and scanning traces."""

from __future__ import annotations

import doctest

import pytest
from test_cache_policy import PolicyContract, hot_and_scan_trace, zipf_trace

from hibase.cache import window_heat as window_heat_module
from hibase.cache.policies import make_policy
from hibase.cache.policy import (Decision, HotscorePolicy, LRUPolicy, belady_hit_ratio,
                                 simulate)
from hibase.cache.window_heat import WindowHeatPolicy
from hibase.errors import InvalidArgument


class TestWindowHeat(PolicyContract):
    def make(self, capacity):
        return WindowHeatPolicy(capacity, count_period=5)  # adapts every 5 accesses


class TestWindowHeatWideFixedWindow(PolicyContract):
    def make(self, capacity):
        return WindowHeatPolicy(capacity, alpha=0.9, count_period=3, window=0.5, adapt=False)


class TestWindowHeatDefaults(PolicyContract):
    def make(self, capacity):
        return make_policy("window-heat", capacity)


# ---- decisions on hand-made traces -----------------------------------------------------------

def test_a_candidate_enters_only_if_hotter_than_its_victim():
    p = WindowHeatPolicy(10, adapt=False)  # window 1 record: a 5-record set passes through
    assert [p.access("A", 5) for _ in range(3)] == [
        Decision(False, True, []), Decision(True, False, []), Decision(True, False, [])]
    assert p.segments == {"window": [], "probation": [], "protected": ["A"]}  # hit: promoted
    assert p.access("B", 5) == Decision(False, True, [])  # room left: no duel
    # C (heat 1) against the coldest per record, B (heat 1, 5 records): a tie keeps B
    assert p.access("C", 5) == Decision(False, False, [])
    assert p.heat("C") == 1.0 and "C" not in p
    # C again: heat 2 x 5 records > B's 1 x 5
    assert p.access("C", 5) == Decision(False, True, ["B"])
    assert p.segments == {"window": [], "probation": ["C"], "protected": ["A"]}


def test_duels_weigh_heat_per_record():
    p = WindowHeatPolicy(10, adapt=False)
    for key, size in [("A", 5)] * 3 + [("B", 5), ("C", 5), ("C", 5)]:
        p.access(key, size)
    assert set(p) == {"A", "C"} and p.records == 10
    # D: 1 record, heat 1 (1 per record) against C: heat 2 over 5 records (0.4 per record).
    # Summed heat would keep C (2 > 1); per record D wins and 4 records are free again.
    assert p.access("D", 1) == Decision(False, True, ["C"])
    assert set(p) == {"A", "D"} and p.records == 6
    # a 9-record set must be as hot as the 9 records it would push out: 1 x 10 < (3 + 3) x 9
    big = WindowHeatPolicy(10, adapt=False)
    for key in "AAABBB":
        big.access(key, 5)
    assert big.segments == {"window": [], "probation": ["A"], "protected": ["B"]}
    assert big.access("E", 9) == Decision(False, False, [])


def test_the_victim_is_the_coldest_per_record_not_the_least_recent():
    p = WindowHeatPolicy(6, adapt=False)  # window 1 record
    for key in "wwxyzuv":  # w: two visits in the window (heat 2), then the LRU of probation
        p.access(key, 1)
    assert p.segments == {"window": ["v"], "probation": ["w", "x", "y", "z", "u"],
                          "protected": []}
    # g enters the window, v leaves it and duels x (heat 1, the coldest): a tie keeps x
    assert p.access("g", 1) == Decision(False, True, ["v"])
    assert p.access("g", 1) == Decision(True, False, [])  # heat 2, in the window
    # h pushes g out: g (heat 2) beats x, the coldest per record, not w, the least recent
    assert p.access("h", 1) == Decision(False, True, ["x"])
    assert p.segments["probation"] == ["w", "y", "z", "u", "g"]


def test_the_victim_is_the_coldest_in_the_whole_main_region():
    """k, the only cold set, is the most recently used in the main region: a pool of the least
    recently used (the policy before issue 44) held only sets of heat 2 and refused X."""
    p = WindowHeatPolicy(12, adapt=False)  # window 1 record
    for key in "aabbccddeeffgghhiijjkz":
        p.access(key, 1)
    assert p.segments["probation"] == list("abcdefghijk") and p.coldest() == "k"
    assert p.access("X", 1) == Decision(False, True, ["z"])  # z (heat 1) ties k: k stays
    assert p.access("X", 1).hit  # heat 2, in the window
    assert p.access("Y", 1) == Decision(False, True, ["k"])  # X (2) beats k (1), not a (2)
    assert "X" in p and p.coldest() == "a"  # heat 2 each now; the least recently used first


def test_the_coldest_is_the_coldest_after_every_period_end():
    """Ranks are scaled so that a set's rank stays put while it is not used; at a period end
    (no visits in the new period yet) the first in rank is the coldest by heat per record."""
    p = WindowHeatPolicy(60, alpha=0.3, count_period=7, adapt=False)
    trace = zipf_trace(5, 3000, 200, max_size=4)
    sizes, checked = dict(trace), 0
    for key, size in trace:
        p.access(key, size)
        main = p.segments["probation"] + p.segments["protected"]
        if p.stats["accesses"] % 7 == 0 and main:
            per_record = {k: p.heat(k) / sizes[k] for k in main}
            assert per_record[p.coldest()] == pytest.approx(min(per_record.values()))
            checked += 1
    assert checked > 300


def test_the_window_serves_a_set_used_again_soon():
    # window 4 records (half of 8): X is hit on its second access, although its heat (2) would
    # lose the duel against A (4); with a 1-record window it is refused twice
    wide = WindowHeatPolicy(8, window=0.5, adapt=False)
    for key in "AAAABBBB":
        wide.access(key, 4)
    assert wide.segments == {"window": ["B"], "probation": ["A"], "protected": []}
    assert wide.access("X", 4) == Decision(False, True, ["B"])  # B leaves the window, loses
    assert wide.access("X", 4) == Decision(True, False, [])
    narrow = WindowHeatPolicy(8, adapt=False)
    for key in "AAAABBBB":
        narrow.access(key, 4)
    assert narrow.segments == {"window": [], "probation": ["A"], "protected": ["B"]}
    assert narrow.access("X", 4) == narrow.access("X", 4) == Decision(False, False, [])


def test_heat_is_hotscores_score():
    trace = [(k, 1) for k in ("AABCABBDAAC" * 7)[:70]]  # exactly 7 periods
    hot = HotscorePolicy(100, alpha=0.3, count_period=10)
    heat = WindowHeatPolicy(100, alpha=0.3, count_period=10, prune=0.0)
    simulate(hot, trace)
    simulate(heat, trace)
    assert hot.stats["periods"] == heat.stats["periods"] == 7
    for key, score in hot.scores.items():
        assert heat.score(key) == pytest.approx(score)
    # mid-period: the decayed history plus this period's visits
    heat.access("A", 1)
    assert heat.heat("A") == pytest.approx(hot.scores["A"] * 10 / 0.3 + 1)


@pytest.mark.parametrize("alpha, periods", [(0.5, 7), (None, 44)])
def test_cold_heat_is_forgotten(alpha, periods):
    p = WindowHeatPolicy(10, count_period=50, **({} if alpha is None else {"alpha": alpha}))
    simulate(p, [(("scan", i), 1) for i in range(20_000)])
    # one visit keeps 1 - alpha every period: below 0.01 after 7 periods (alpha 0.5), 44 (the
    # default, 0.1); pruned once the table doubled
    assert p.stats["tracked"] <= 2 * 50 * (periods + 1)


def test_the_window_grows_when_the_hot_set_keeps_moving():
    """Each period of 20 accesses reads 4 new keys 5 times. From the third period the cache (8
    records) is full: with the 1% window a newcomer loses its duels against the keys of two
    periods ago (heat 5 x 1/2 = 2.5) until its third visit, so 8 of its 20 accesses hit; the
    LRU shadow hits 16. The window grows 8x per period end: 1% -> 8% -> 64% -> 100%
    (at least one record: 1, 1, 5, 8)."""
    p = WindowHeatPolicy(8, alpha=0.5, count_period=20)  # the shadows see every key
    windows, shadow_hits = [], []
    for period in range(7):
        for _ in range(5):
            for i in range(4):
                p.access(period * 4 + i, 1)
        windows.append(p.window_max)
        shadow_hits.append(tuple(s.stats["hits"] for s in p._shadows))
    assert shadow_hits[:4] == [(16, 16), (32, 32), (40, 48), (48, 64)]
    assert windows == [1, 1, 1, 5, 8, 8, 8]
    assert p.share == 1.0


def test_the_window_shrinks_when_heat_pays():
    """36 hot keys and 5 one-off keys per round, capacity 40: LRU evicts each hot key just
    before its turn (no hit at all), the 1% window keeps the hot keys in the main region."""
    p = WindowHeatPolicy(40, count_period=82, window=1.0)
    scan = iter(range(1000, 10_000))
    windows = []
    for _ in range(5):
        for _ in range(2):
            for key in range(36):
                p.access(key, 1)
            for _ in range(5):
                p.access(next(scan), 1)
        windows.append((p.share, p.window_max))
    assert [s.stats["hits"] for s in p._shadows] == [324, 0]
    assert windows == [(0.125, 5), (0.015625, 1), (0.01, 1), (0.01, 1), (0.01, 1)]


def test_fixed_window_and_bad_options():
    p = WindowHeatPolicy(200, window=0.25, adapt=False)
    simulate(p, zipf_trace(1, 3000, 400))
    assert p.window_max == 50
    for options in [{"alpha": 1.5}, {"count_period": 0}, {"window": 2}, {"prune": -1},
                    {"window": "x"}]:
        with pytest.raises(InvalidArgument):
            WindowHeatPolicy(10, **options)
    with pytest.raises(InvalidArgument):
        make_policy("window-heat", 10, fill_gaps=True)
    assert type(make_policy("Window_Heat", 10)) is WindowHeatPolicy
    assert make_policy("window-heat", 10, alpha=0.2, count_period=7).count_period == 7


def test_decisions_do_not_depend_on_the_process():
    """The shadows sample keys by CRC-32, not Python's salted hash: a cache node replaying the
    same lookups in another process takes the same decisions."""
    import subprocess
    import sys
    code = ("from hibase.cache.window_heat import WindowHeatPolicy as W\n"
            "from hibase.cache.policy import simulate\n"
            "import random\n"
            "rng = random.Random(5)\n"
            "t = [(b'k%d' % int(rng.paretovariate(1.0)), rng.randint(1, 9)) for _ in range(20000)]\n"
            "p = W(16000, count_period=500)\n"
            "s = simulate(p, t)\n"
            "print(s['hits'], s['evictions'], p.window_max, p._every)\n")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": seed}, check=True).stdout
            for seed in ("1", "2")}
    assert len(outs) == 1 and outs.pop().split()[-1] == "16"  # 1 key in 16 feeds the shadows


# ---- against the others ---------------------------------------------------------------------

@pytest.mark.parametrize("capacity", [20, 80, 300])
def test_beats_lru_and_stays_under_belady_on_zipf(capacity):
    for seed in range(2):
        trace = zipf_trace(seed, 6000, 800, skew=0.99, max_size=10)
        lru = simulate(LRUPolicy(capacity), trace)["hit_ratio"]
        ours = simulate(WindowHeatPolicy(capacity), trace)["hit_ratio"]
        hot = simulate(HotscorePolicy(capacity), trace)["hit_ratio"]
        ceiling = belady_hit_ratio(trace, capacity)["hit_ratio"]
        assert ceiling >= ours > lru + 0.02 and ours > hot


def test_keeps_a_hot_set_through_a_scan():
    for seed in range(2):
        trace = hot_and_scan_trace(seed)
        lru = simulate(LRUPolicy(20), trace)["hit_ratio"]
        ours = simulate(WindowHeatPolicy(20), trace)["hit_ratio"]
        assert lru < 0.25 and ours > 0.47


@pytest.mark.parametrize("family", ["shift-medium", "shift-fast"])
def test_follows_a_moving_hot_set_like_lru(family):
    from hibase_bench.cache_scenarios import trace
    shifting = trace(family, lookups=12_000, keys=2_000)
    sizes = dict(shifting)
    for ratio in (0.05, 0.2):
        capacity = int(ratio * sum(sizes.values()))
        lru = simulate(LRUPolicy(capacity), shifting)["hit_ratio"]
        ours = simulate(WindowHeatPolicy(capacity), shifting)["hit_ratio"]
        assert ours >= lru - 0.01


def test_doctests():
    assert doctest.testmod(window_heat_module).failed == 0
