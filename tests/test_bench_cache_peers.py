"""The peers of the scenario table (bench/cache_peers.py): S3-FIFO and W-TinyLFU keep the
policy contract (capacity never exceeded, hits exactly what is stored) and behave as their
papers say on small hand-made traces."""

from __future__ import annotations

from test_cache_policy import PolicyContract, hot_and_scan_trace

from hibase.cache.policy import LRUPolicy, simulate
from hibase_bench.cache_peers import PEERS, S3FIFOPolicy, WTinyLFUPolicy


class TestS3FIFO(PolicyContract):
    def make(self, capacity):
        return S3FIFOPolicy(capacity)


class TestWTinyLFU(PolicyContract):
    def make(self, capacity):
        return WTinyLFUPolicy(capacity)


def test_s3fifo_moves_a_set_hit_in_the_small_fifo_to_the_main_one():
    p = S3FIFOPolicy(10)  # small FIFO: 1 record
    for key in "abcdefghij":
        p.access(key, 1)
    p.access("a", 1)  # hit in the small FIFO
    assert p.access("k", 1).evict == ["b"]  # a was hit: it moves on, b (never hit) leaves
    assert "a" in p and "b" not in p
    assert p.access("b", 1).admit  # a ghost: straight into the main FIFO
    assert "b" in p._main


def test_wtinylfu_admits_by_frequency():
    p = WTinyLFUPolicy(100)  # window 1 record
    for key in range(100):
        p.access(key, 1)
    for _ in range(3):
        p.access(5, 1)
    d = p.access("new", 1)  # pushes 99 out of the window: frequency 1 against victim 0's 1
    assert d.admit and d.evict == [99]
    assert all(k in p for k in (0, 5, "new"))


def test_peers_keep_a_hot_set_through_a_scan_and_are_registered():
    assert set(PEERS) == {"s3-fifo", "w-tinylfu"}
    trace = hot_and_scan_trace(0)
    lru = simulate(LRUPolicy(20), trace)["hit_ratio"]
    for cls in PEERS.values():
        assert simulate(cls(20), trace)["hit_ratio"] > lru + 0.2
