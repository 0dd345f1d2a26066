"""Tests of the split counting Bloom filter, its scalable stack, the plain CBF, the exact overflow
tails, and a smoke run of the SCBF benchmark."""

from __future__ import annotations

import doctest
import json
import math
from collections import Counter
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hibase.index.scbf as scbf_mod
from hibase.errors import InvalidArgument
from hibase.index.scbf import (
    CountingBloomFilter, ScalableSCBF, SplitCountingBloomFilter, binomial_tail,
    optimal_parameters, poisson_tail,
)

FILTERS = [SplitCountingBloomFilter, CountingBloomFilter]


def test_doctests() -> None:
    assert doctest.testmod(scbf_mod).failed == 0


@pytest.mark.parametrize("fpr, k, m, n", [
    (1e-3, 10, 36_864, 25_639), (1e-4, 14, 26_331, 19_229),
    (1e-5, 17, 21_684, 15_383), (1e-6, 20, 18_432, 12_819),
])
def test_table1_parameters(fpr: float, k: int, m: int, n: int) -> None:
    f = SplitCountingBloomFilter.optimal(368_640, fpr)
    assert (f.k, f.m, f.capacity) == (k, m, n)
    assert optimal_parameters(368_640, fpr) == (k, m, n)
    assert f.counters == 368_640 and f.counter_bits == 4 and f.overflows == 0 and len(f) == 0
    assert f.nbytes == 368_640 // k * k * 4 // 8 + 1


def test_k_is_exact_at_powers_of_two() -> None:
    assert optimal_parameters(1000, 2.0 ** -10)[0] == 10
    assert optimal_parameters(1000, 0.5)[0] == 1


@pytest.mark.parametrize("cls", FILTERS)
def test_basic_membership_and_str_items(cls: type) -> None:
    f = cls(1000, 5)
    f.add("héllo")
    assert "héllo" in f and "héllo".encode() in f and bytearray(b"h\xc3\xa9llo") in f
    assert len(f) == 1 and 0 < f.fill_ratio() <= 5 / 1000
    assert f.remove(b"h\xc3\xa9llo") and "héllo" not in f and len(f) == 0
    assert f.fill_ratio() == 0.0


def test_scbf_maps_hash_i_into_slice_i() -> None:
    f = SplitCountingBloomFilter(1003, 7)          # m = 143, 2 counters unused
    assert f.m == 143 and f.size == 1001
    for i in range(200):
        pos = f.positions(b"%d" % i)
        assert [p // f.m for p in pos] == list(range(7))


ops = st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=150)


@pytest.mark.parametrize("cls", FILTERS)
@pytest.mark.parametrize("bits", [1, 2, 4])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, seed=st.integers(0, 2**64 - 1))
def test_no_false_negatives_under_adds_and_removes(cls: type, bits: int, ops: list,
                                                   seed: int) -> None:
    # A tiny filter so counters collide and saturate often.
    f = cls(60, 3, counter_bits=bits, seed=seed)
    model: Counter[bytes] = Counter()
    for is_add, key in ops:
        item = b"k%d" % key
        if is_add or not model[item]:
            f.add(item)
            model[item] += 1
        else:                                   # only remove what is there (the contract)
            assert f.remove(item)
            model[item] -= 1
        assert all(x in f for x, c in model.items() if c)
        assert len(f) == sum(model.values())
    hist = f.histogram()
    assert len(hist) == 1 << bits and sum(hist) == f.size


@pytest.mark.parametrize("cls", FILTERS)
def test_one_bit_counters_saturate_and_stick(cls: type) -> None:
    f = cls(100, 4, counter_bits=1)
    for _ in range(5):
        f.add(b"x")
    pos = set(f.positions(b"x"))
    hits = len(f.positions(b"x"))
    assert f.overflows == 5 * hits - len(pos)  # first hit of each counter lands, the rest are lost
    for _ in range(7):                          # more removes than adds: nothing goes below 0
        assert f.remove(b"x")
        assert b"x" in f
    assert all(f.counter(p) == 1 for p in pos) and len(f) == 0


@pytest.mark.parametrize("cls", FILTERS)
def test_two_bit_saturation_keeps_other_items(cls: type) -> None:
    f = cls(40, 2, counter_bits=2, seed=7)
    for _ in range(5):
        f.add(b"a")
    pos = f.positions(b"a")
    assert all(f.counter(p) == 3 for p in pos)
    assert f.overflows == 5 * len(pos) - 3 * len(set(pos))
    f.add(b"b")
    for _ in range(5):
        assert f.remove(b"a")
    assert b"b" in f
    assert all(f.counter(p) == 3 for p in pos)  # saturated counters are never decremented


@pytest.mark.parametrize("cls", FILTERS)
def test_remove_of_absent_item_changes_nothing(cls: type) -> None:
    f = cls(1000, 4, counter_bits=3)
    f.add(b"present")
    before = f.to_bytes()
    absent = next(b"a%d" % i for i in range(1000) if b"a%d" % i not in f)
    assert f.remove(absent) is False
    assert f.to_bytes() == before and len(f) == 1


@pytest.mark.parametrize("cls", FILTERS)
def test_measured_fpr_near_target(cls: type) -> None:
    f = cls.optimal(20_000, 0.01, seed=3)
    assert (f.k, f.capacity) == (7, 2086)
    for i in range(f.capacity):
        f.add(b"in%d" % i)
    assert all(b"in%d" % i in f for i in range(f.capacity))
    probes = 20_000
    rate = sum(b"out%d" % i in f for i in range(probes)) / probes
    # Expect ~200 false positives (sd ~14); the bound is generous.
    assert 0.006 < rate < 0.015
    assert 0.49 < f.fill_ratio() < 0.55   # k = 7 > log2(100) puts the fill above 1/2
    assert abs(f.estimated_fpr() - 0.01) < 0.002


def test_scalable_grows_at_half_fill_without_false_negatives() -> None:
    s = ScalableSCBF(2000, 0.01, growth=2, seed=5)
    assert s.expected_fpr() == pytest.approx(0.01)
    items = [b"item%d" % i for i in range(2500)]
    for item in items:
        d = len(s.filters)
        fills = [f.fill_ratio() for f in s.filters]
        s.add(item)
        if len(s.filters) > d:
            assert all(x >= 0.5 for x in fills)          # grew only when every filter was full
        else:
            assert any(x < 0.5 for x in fills)
    assert len(s.filters) >= 3 and len(s) == len(items)
    sizes = [f.counters for f in s.filters]
    assert sizes == [2000 * 2 ** i for i in range(len(sizes))]
    assert all(f.fill_ratio() >= 0.5 for f in s.filters[:-1])
    assert all(item in s for item in items)
    assert s.expected_fpr() == pytest.approx(1 - 0.99 ** len(s.filters))
    assert s.capacity == sum(f.capacity for f in s.filters)


def test_scalable_removes_keep_no_false_negatives() -> None:
    # P = 1e-6 makes the wrong-filter removal of the caveat below (p ~ d * P a remove) negligible.
    s = ScalableSCBF(2000, 1e-6, seed=5)
    items = [b"item%d" % i for i in range(1500)]
    for item in items:
        s.add(item)
    assert len(s.filters) >= 4
    for item in items[::2]:
        assert s.remove(item)
    assert all(item in s for item in items[1::2]) and len(s) == len(items) // 2
    absent = next(b"x%d" % i for i in range(10_000) if b"x%d" % i not in s)
    assert s.remove(absent) is False and len(s) == len(items) // 2


def test_scalable_remove_leaves_a_stale_positive_when_several_filters_report() -> None:
    s = ScalableSCBF(200, 0.25, growth=1, seed=1)
    i = 0
    while len(s.filters) < 2:
        s.add(b"%d" % i)
        i += 1
    newer = [b"n%d" % j for j in range(20)]
    for item in newer:
        s.add(item)
    old, new = s.filters
    victim = next(b"%d" % j for j in range(i - 1) if b"%d" % j in new)  # lives in `old`
    before = (old.to_bytes(), new.to_bytes())
    assert s.remove(victim)  # accepted, but neither filter is touched
    assert (old.to_bytes(), new.to_bytes()) == before and s.stale_removes == 1
    assert victim in s  # a stale positive ...
    assert all(item in s for item in newer)  # ... never a false negative
    # an item only one filter reports is really removed
    alone = next(x for x in newer if x in new and x not in old)
    n_new = len(new)
    assert s.remove(alone) and len(new) == n_new - 1


def test_scalable_remove_never_false_negative_at_high_fpr() -> None:
    # P = 0.2 with many small filters: several filters report most items, the old rule (newest
    # reporting filter) lost items here; the safe rule never does.
    import random
    rng = random.Random(3)
    s = ScalableSCBF(64, 0.2, growth=1, seed=2)
    live: dict[bytes, int] = {}
    for step in range(3000):
        item = b"v%d" % rng.randrange(300)
        if live.get(item) and rng.random() < 0.5:
            live[item] -= 1
            assert s.remove(item)
        else:
            live[item] = live.get(item, 0) + 1
            s.add(item)
        if step % 50 == 0:
            assert all(x in s for x, n in live.items() if n), step
    assert all(x in s for x, n in live.items() if n)


def test_scalable_identical_filters_with_growth_one() -> None:
    s = ScalableSCBF(500, 0.05, growth=1)
    for i in range(800):
        s.add(b"%d" % i)
    assert len(s.filters) > 1 and {f.counters for f in s.filters} == {500}


@pytest.mark.parametrize("cls", FILTERS)
def test_persistence_round_trip(cls: type) -> None:
    f = cls.optimal(5000, 0.02, counter_bits=3, seed=99)
    for i in range(300):
        f.add(b"%d" % i)
    f.add(b"0")
    f.remove(b"1")
    g = cls.from_bytes(f.to_bytes())
    assert g.to_bytes() == f.to_bytes()
    for attr in ("k", "m", "capacity", "counters", "counter_bits", "overflows", "seed", "fpr"):
        assert getattr(g, attr) == getattr(f, attr)
    assert len(g) == len(f) and g.fill_ratio() == f.fill_ratio()
    assert g.estimated_fpr() == f.estimated_fpr()
    assert all((b"%d" % i in g) == (b"%d" % i in f) for i in range(2000))
    g.add(b"new")
    assert b"new" in g


def test_persistence_rejects_bad_data() -> None:
    f = SplitCountingBloomFilter(100, 3)
    data = f.to_bytes()
    with pytest.raises(InvalidArgument):
        CountingBloomFilter.from_bytes(data)                # wrong kind
    for bad in (b"", data[:10], data[:-1], b"XXXX" + data[4:], data + b"\x00"):
        with pytest.raises(InvalidArgument):
            SplitCountingBloomFilter.from_bytes(bad)
    with pytest.raises(InvalidArgument):
        ScalableSCBF.from_bytes(data)


def test_scalable_persistence_round_trip() -> None:
    s = ScalableSCBF(400, 0.01, counter_bits=4, growth=1.5, seed=11)
    for i in range(700):
        s.add(b"%d" % i)
    t = ScalableSCBF.from_bytes(s.to_bytes())
    assert t.to_bytes() == s.to_bytes()
    assert len(t.filters) == len(s.filters) > 1 and len(t) == 700
    assert (t.growth, t.fpr, t.counter_bits, t.seed) == (1.5, 0.01, 4, 11)
    assert all(b"%d" % i in t for i in range(700))
    with pytest.raises(InvalidArgument):
        ScalableSCBF.from_bytes(s.to_bytes()[:-3])


@pytest.mark.parametrize("make", [
    lambda: SplitCountingBloomFilter(0, 1),
    lambda: SplitCountingBloomFilter(10, 0),
    lambda: SplitCountingBloomFilter(3, 4),
    lambda: SplitCountingBloomFilter(100, 3, counter_bits=0),
    lambda: SplitCountingBloomFilter(100, 3, counter_bits=9),
    lambda: SplitCountingBloomFilter(100, 3, seed=-1),
    lambda: SplitCountingBloomFilter(100.0, 3),
    lambda: SplitCountingBloomFilter(True, 1),
    lambda: CountingBloomFilter(100, 0),
    lambda: SplitCountingBloomFilter.optimal(100, 0.0),
    lambda: SplitCountingBloomFilter.optimal(100, 1.0),
    lambda: SplitCountingBloomFilter.optimal(100, 1.5),
    lambda: SplitCountingBloomFilter.optimal(100, "0.1"),
    lambda: SplitCountingBloomFilter.optimal(5, 1e-6),       # k = 20 > 5 counters
    lambda: ScalableSCBF(100, 0.01, growth=0.5),
    lambda: ScalableSCBF(100, 0.01, counter_bits=12),
    lambda: ScalableSCBF(0, 0.01),
    lambda: SplitCountingBloomFilter(100, 3).add(12345),
    lambda: 3.5 in CountingBloomFilter(100, 3),
    lambda: poisson_tail(-1),
    lambda: poisson_tail(2, -1),
    lambda: binomial_tail(2, 10, 1.5),
])
def test_invalid_arguments(make) -> None:
    with pytest.raises(InvalidArgument):
        make()
    assert issubclass(InvalidArgument, ValueError)


def test_poisson_tail_hand_values() -> None:
    with localcontext() as ctx:
        ctx.prec = 60
        ln2 = Decimal(2).ln()
        assert abs(poisson_tail(2) - (1 - (1 + ln2) / 2)) < Decimal("1e-48")
        ctx.prec = 120                                      # 1 - head needs > 41 digits
        ln2 = Decimal(2).ln()
        exact32 = 1 - sum(ln2 ** i / math.factorial(i) for i in range(32)) / 2
    assert str(poisson_tail(2))[:12] == "0.1534264097"
    assert poisson_tail(0) == 1 and poisson_tail(1) == Decimal("0.5")
    assert abs(poisson_tail(32) / exact32 - 1) < Decimal("1e-40")
    assert float(poisson_tail(32)) == pytest.approx(1.5646832451488e-41, rel=1e-12)
    assert float(poisson_tail(3, 2.0)) == pytest.approx(1 - math.exp(-2) * 5, rel=1e-14)
    assert poisson_tail(5, 0) == 0
    # the bound (e ln2 / j)^j holds at every width
    for j in (2, 4, 8, 16, 32):
        assert float(poisson_tail(j)) < (math.e * math.log(2) / j) ** j


def test_binomial_tail_hand_values() -> None:
    assert binomial_tail(1, 2, Fraction(1, 2)) == Decimal("0.75")
    assert binomial_tail(2, 2, 0.5) == Decimal("0.25")
    assert binomial_tail(0, 10, 0.1) == 1 and binomial_tail(11, 10, 0.1) == 0
    assert float(binomial_tail(3, 10, 0.1)) == pytest.approx(
        1 - sum(math.comb(10, i) * 0.1 ** i * 0.9 ** (10 - i) for i in range(3)), rel=1e-12)
    # large n, small p -> Poisson with the same mean
    lam = Fraction(25_552, 36_864)
    assert float(binomial_tail(4, 25_552, Fraction(1, 36_864))) == pytest.approx(
        float(poisson_tail(4, lam)), rel=2e-3)


def test_bench_smoke() -> None:
    from hibase_bench.scbf import run
    r = run(probes=20_000, overflow_seeds=1)
    json.dumps(r)
    assert all(row["matches"] for row in r["table1"]["rows"])
    fp = r["false_positives"]
    assert fp["probes"] == 20_000 and fp["items"] == 25_639
    for name in ("scbf", "cbf"):
        assert 0.0002 < fp[name]["rate"] < 0.003 and fp[name]["overflows"] == 0
    tails = r["overflow_tails"]["rows"]
    assert [row["counter_bits"] for row in tails] == [1, 2, 3, 4, 5]
    assert all(row["paper_scbf_flag"] for row in tails)
    assert [row["paper_cbf_flag"] for row in tails] == [False, False, False, True, None]
    assert tails[0]["exact"] == pytest.approx(0.1534264097)
    for row in tails:
        assert row["paper_formula_ln2_over_j_pow_j_over_sqrt_2pi_j"] == pytest.approx(
            row["paper_scbf"], rel=3e-3)
    sim = r["overflow_simulation"]["rows"]
    assert [row["counter_bits"] for row in sim] == [1, 2, 3]
    for row in sim:
        for name in ("scbf", "cbf"):
            assert row[name]["events_match_loads"]
    assert 0.97 < sim[0]["scbf"]["mean_over_expected"] < 1.03
    assert 0.85 < sim[1]["cbf"]["mean_over_expected"] < 1.15
    assert r["findings"]
