"""The Redis backend against real redis-server processes: ring placement, one round trip per
hit, node loss and return, missed writes, garbage under our keys; on both store backends."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from cache_helpers import found, make_node_db, oracle
from servers import start_redis, wait_until

from hibase.cache.redis_backend import DATA, FORMAT
from hibase.cache.ring import Ring
from hibase.cluster.local import free_port


@pytest.fixture(scope="module")
def servers():
    started = [start_redis() for _ in range(3)]
    yield started
    for s in started:
        s.close()


@pytest.fixture
def nodes(servers):
    for s in servers:
        if not s.running:
            s.start()
        redis.Redis.from_url(s.url).flushall()
    return servers


def spec_of(nodes):
    return ",".join(s.url for s in nodes)


def test_ring_moves_only_the_lost_nodes_keys():
    keys = [b"t\x00\x00\x01%d" % i for i in range(3000)]
    three = Ring(["redis://a:1/0", "redis://b:1/0", "redis://c:1/0"])
    two = Ring(["redis://a:1/0", "redis://b:1/0"])
    owner = {k: three.node_for(k) for k in keys}
    assert {n: list(owner.values()).count(n) > 700 for n in three.nodes} == dict.fromkeys(
        three.nodes, True)
    for k in keys:
        if owner[k] != "redis://c:1/0":
            assert two.node_for(k) == owner[k]  # only c's keys move
        assert three.node_for(k) == owner[k]  # deterministic


def test_sets_live_on_their_ring_node(backend, nodes):
    db, t = make_node_db(backend, spec_of(nodes))
    with db:
        for v in range(20):
            assert found(t, f"f.a = {v}") == oracle(t, v)
        backend = db.cache.backend
        keys = list(backend.keys())
        assert len(keys) == 20
        holders = set()
        for key in keys:
            url = backend.where(key)
            holders.add(url)
            assert redis.Redis.from_url(url).exists(DATA + key)
            others = [s.url for s in nodes if s.url != url]
            assert not any(redis.Redis.from_url(u).exists(DATA + key) for u in others)
        assert len(holders) >= 2


def test_a_hit_is_one_round_trip(backend, nodes):
    db, t = make_node_db(backend, spec_of(nodes))
    with db:
        found(t, "f.a = 7")
        clients = [redis.Redis.from_url(s.url) for s in nodes]
        for c in clients:
            c.config_resetstat()
        assert found(t, "f.a = 7") == oracle(t, 7)
        calls = {}
        for c in clients:
            for name, st in c.info("commandstats").items():
                if name not in ("cmdstat_info", "cmdstat_config|resetstat"):
                    calls[name] = calls.get(name, 0) + st["calls"]
        # one EVALSHA; the rest ran inside its script (commandstats counts those too)
        assert calls.pop("cmdstat_evalsha") == 1
        assert set(calls) <= {"cmdstat_get", "cmdstat_type", "cmdstat_hget", "cmdstat_hgetall"}
        assert db.cache_stats()["hits"] == 1


def test_a_node_killed_mid_workload_costs_misses_not_errors(backend, nodes):
    db, t = make_node_db(backend, spec_of(nodes[:2]))
    want = {v: oracle(t, v) for v in range(20)}
    errors: list = []
    stop = threading.Event()

    def query(n):
        try:
            while not stop.is_set():
                for v in range(n, 20, 3):
                    if found(t, f"f.a = {v}") != want[v]:
                        errors.append(f"wrong answer for {v}")
        except Exception as exc:  # pragma: no cover
            errors.append(repr(exc))

    with db:
        threads = [threading.Thread(target=query, args=(n,)) for n in range(3)]
        for th in threads:
            th.start()
        time.sleep(0.3)
        nodes[0].kill()
        time.sleep(0.5)
        stop.set()
        for th in threads:
            th.join()
        assert errors == []
        node_info = {n["url"]: n for n in db.cache_stats()["nodes"]}
        assert node_info[nodes[0].url]["failures"] >= 1
        misses = db.cache_stats()["misses"]
        for v in range(20):
            assert found(t, f"f.a = {v}") == want[v]
        assert db.cache_stats()["misses"] > misses  # the dead node's sets are misses now
        nodes[0].start()
        time.sleep(db.cache.backend.retry_after + 0.1)
        for v in range(20):
            assert found(t, f"f.a = {v}") == want[v]
        hits = db.cache_stats()["hits"]
        for v in range(20):
            assert found(t, f"f.a = {v}") == want[v]
        assert db.cache_stats()["hits"] == hits + 20  # the node is back in use


def test_writes_missed_while_a_node_hung_are_purged_before_reuse(backend, nodes):
    """A node that stops answering (CLIENT PAUSE) but keeps its data must not serve a set that
    a write could not patch meanwhile."""
    db, t = make_node_db(backend, spec_of(nodes[:1]))
    with db:
        assert found(t, "f.a = 3") == oracle(t, 3)
        admin = redis.Redis.from_url(nodes[0].url)
        admin.client_pause(1500, all=True)
        assert found(t, "f.a = 3") == oracle(t, 3)  # times out: a miss
        t.put(b"r003", {b"f:a": b"4"})  # cannot be patched: remembered
        assert found(t, "f.a = 3") == oracle(t, 3)
        time.sleep(1.6)
        assert b"r003" not in found(t, "f.a = 3")
        assert found(t, "f.a = 3") == oracle(t, 3)
        assert found(t, "f.a = 4") == oracle(t, 4)


@pytest.mark.parametrize("garbage", ["string", "list", "no marker", "bad checksum",
                                     "unparsable", "wrong marker"])
def test_garbage_under_our_keys_is_a_miss_and_is_replaced(backend, nodes, garbage):
    db, t = make_node_db(backend, spec_of(nodes[:1]))
    with db:
        assert found(t, "f.a = 5") == oracle(t, 5)
        (key,) = [k for k in db.cache.backend.keys()]
        c = redis.Redis.from_url(nodes[0].url)
        raw = DATA + key
        if garbage == "string":
            c.delete(raw)
            c.set(raw, b"junk")
        elif garbage == "list":
            c.delete(raw)
            c.rpush(raw, b"junk")
        elif garbage == "no marker":
            c.hdel(raw, b"")
        elif garbage == "wrong marker":
            c.hset(raw, b"", b"someone-else/9")
        elif garbage == "bad checksum":
            c.hset(raw, b"r005", b"\x00\x00\x00\x00\x91\xa1x")
        else:
            c.hset(raw, b"r999", b"\xff")
        assert found(t, "f.a = 5") == oracle(t, 5)
        stats = db.cache_stats()
        assert stats["garbage"] == 1 and stats["hits"] == 0
        assert c.type(raw) == b"hash" and c.hget(raw, b"") == FORMAT  # overwritten by the fill
        assert found(t, "f.a = 5") == oracle(t, 5)
        assert db.cache_stats()["hits"] == 1


def test_a_write_to_a_garbage_key_deletes_it(backend, nodes):
    db, t = make_node_db(backend, spec_of(nodes[:1]))
    with db:
        found(t, "f.a = 6")
        (key,) = list(db.cache.backend.keys())
        c = redis.Redis.from_url(nodes[0].url)
        c.hdel(DATA + key, b"")
        t.put(b"r006", {b"f:b": b"x"})
        if not db.indexer.catalog.get("t", "by_a").server:
            assert not c.exists(DATA + key)  # the write's patch found it and deleted it
        # (kept by HBase's coprocessor, the write patches nothing here: the read below finds
        # the garbage, counts it and overwrites it)
        assert found(t, "f.a = 6") == oracle(t, 6)
        assert c.hget(DATA + key, b"").startswith(FORMAT)


def test_flushed_node_refills(backend, nodes):
    db, t = make_node_db(backend, spec_of(nodes))
    with db:
        for v in range(20):
            found(t, f"f.a = {v}")
        for s in nodes:
            redis.Redis.from_url(s.url).flushall()
        for v in range(20):
            assert found(t, f"f.a = {v}") == oracle(t, v)
        wait_until(lambda: len(list(db.cache.backend.keys())) == 20)


def test_some_nodes_unreachable_at_connect(backend, nodes):
    dead = f"redis://127.0.0.1:{free_port()}"
    db, t = make_node_db(backend, f"{nodes[0].url},{dead}")
    with db:
        for v in range(20):
            assert found(t, f"f.a = {v}") == oracle(t, v)
        assert db.cache_stats()["hits"] == 0
        for v in range(20):
            assert found(t, f"f.a = {v}") == oracle(t, v)
        assert db.cache_stats()["hits"] > 0
