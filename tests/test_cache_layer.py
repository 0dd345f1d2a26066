"""The hot-index cache behind Table.where: connect options, hit / miss accounting, policy
choice, coherence with writes (also under threads and racing fills); on both store backends,
with the cache in process and in Redis."""

from __future__ import annotations

import random
import threading

import pytest
from cache_helpers import found, make_db, oracle
from servers import start_redis

from hibase.cache import HotCache
from hibase.cluster.local import free_port
from hibase.errors import BackendUnavailable, InvalidArgument
from hibase.index import lookup as lookup_module


@pytest.fixture(scope="module")
def redis_server():
    server = start_redis()
    yield server
    server.close()


@pytest.fixture(params=["memory", "redis"])
def cache_spec(request):
    """Every cache test runs on the in-process cache and on a real Redis node."""
    if request.param == "memory":
        return "memory"
    server = request.getfixturevalue("redis_server")
    import redis
    redis.Redis.from_url(server.url).flushall()
    return server.url




@pytest.fixture(scope="module")
def cache_store(module_backend):
    """make_db's table in a store shared by the module's tests that only read it (each opens
    its own connection, whose cache starts empty); no connection is left open."""
    db, _ = make_db(module_backend)
    db.close()
    return module_backend


def _reader(backend, **options):
    """A new connection to `backend` with connect() `options`, and its table t."""
    db = backend.connect(**options)
    return db, db.table("t")


# -- options -----------------------------------------------------------------------------------

def test_default_is_memory_window_heat(module_backend):
    with module_backend.connect() as db:
        assert isinstance(db.cache, HotCache)
        stats = db.cache_stats()
        assert stats["backend"] == "memory" and stats["policy"] == "window-heat"
        assert stats["capacity"] == 100_000
        for field in ("hits", "misses", "hit_ratio", "evictions", "sets", "records"):
            assert stats[field] == 0


@pytest.mark.parametrize("policy", ["lru", "hotscore-per-record", "hotscore", "window-heat"])
def test_policy_choice(cache_store, policy):
    db, t = _reader(cache_store, cache_policy=policy, cache_capacity=500)
    with db:
        assert found(t, "f.a = 1") == oracle(t, 1)
        assert found(t, "f.a = 1") == oracle(t, 1)
        stats = db.cache_stats()
        assert stats["policy"] == policy and stats["capacity"] == 500
        assert (stats["hits"], stats["misses"], stats["sets"], stats["records"]) == (1, 1, 1, 10)


def test_no_cache(cache_store):
    db, t = _reader(cache_store, cache_policy=None)
    with db:
        assert db.cache is None and db.indexer.cache is None
        assert found(t, "f.a = 2") == oracle(t, 2)
        assert db.cache_stats()["backend"] is None
        assert "WALK" not in t.explain("f.a BETWEEN 1 AND 3")


@pytest.mark.parametrize("options", [
    {"cache_policy": "fifo"}, {"cache_policy": 3}, {"cache_capacity": 0},
    {"cache_capacity": -5}, {"cache_capacity": True}, {"cache_capacity": "10"},
    {"hotscore_alpha": 1.5}, {"hotscore_alpha": "x"}, {"count_period": 0},
    {"cache_policy": "lru", "hotscore_alpha": 0.3}, {"cache_policy": "lru", "count_period": 10},
    {"cache": "bogus://x"}, {"cache": 5}, {"cache": ""},
    {"cache_policy": None, "cache_capacity": 10},
    {"cache": "zk://127.0.0.1:1/x", "cache_capacity": 10},
    {"cache": "zk://127.0.0.1:1/x", "cache_policy": "lru"},
    {"cache": "redis://host:notaport"}, {"cache": "zk://nohostport"},
])
def test_invalid_options(module_backend, options):
    """(One store per module and backend: a refused connect opens nothing.)"""
    with pytest.raises(InvalidArgument):
        module_backend.connect(**options)


def test_unreachable_servers_at_connect(module_backend):
    port = free_port()
    with pytest.raises(BackendUnavailable, match="cannot reach any Redis cache node"):
        module_backend.connect(cache=f"redis://127.0.0.1:{port}")
    with pytest.raises(BackendUnavailable, match="ZooKeeper"):
        module_backend.connect(cache=f"zk://127.0.0.1:{port}/hibase")


# -- hits and misses ---------------------------------------------------------------------------

def test_hits_answer_without_the_store(cache_store, cache_spec, monkeypatch):
    db, t = _reader(cache_store, cache=cache_spec)
    with db:
        want = oracle(t, 3)
        assert found(t, "f.a = 3") == want
        assert (db.cache_stats()["hits"], db.cache_stats()["misses"]) == (0, 1)

        def no_index_reads(*args, **kwargs):
            raise AssertionError("a hit must not read the persistent index")
        monkeypatch.setattr(lookup_module, "entries_for_value", no_index_reads)
        got = list(t.where("f.a = 3", columns=[b"f:b"]))
        assert sorted(k for k, _ in got) == want
        assert all(d == {b"f:b": b"b%d" % int(k[1:])} for k, d in got)
        stats = db.cache_stats()
        assert (stats["hits"], stats["misses"], stats["hit_ratio"]) == (1, 1, 0.5)


def test_range_walk_is_answered_per_value(cache_store, cache_spec):
    db, t = _reader(cache_store, cache=cache_spec)
    with db:
        assert "WALK" in t.explain("f.a BETWEEN 1 AND 4")
        want = sorted(sum((oracle(t, v) for v in range(1, 5)), []))
        assert found(t, "f.a BETWEEN 1 AND 4") == want
        assert db.cache_stats()["misses"] == 4
        assert found(t, "f.a BETWEEN 1 AND 4") == want
        assert found(t, "f.a = 2") == oracle(t, 2)
        stats = db.cache_stats()
        assert (stats["hits"], stats["misses"], stats["sets"]) == (5, 4, 4)


def test_hotscore_keeps_hot_sets_that_lru_loses(backend):
    """Five hot sets queried every round, two one-off sets between rounds: LRU (6 sets fit)
    always evicts the hot set it needs next; hotscore keeps the hot ones after warm-up."""
    ratios = {}
    for policy in ("lru", "hotscore"):
        opts = {"count_period": 14, "hotscore_alpha": 0.5} if policy == "hotscore" else {}
        db = backend.connect(cache_policy=policy, cache_capacity=60, **opts)
        db.create_table(policy, {"f": {}}, columns={"f:a": "int"})
        t = db.table(policy)
        with t.batch() as b:
            for v in list(range(5)) + list(range(100, 160)):
                for j in range(10):
                    b.put(b"v%03d-%d" % (v, j), {b"f:a": b"%d" % v})
        db.create_index(policy, "by_a", ["f:a"])
        scan = iter(range(100, 160))
        for _ in range(30):
            for v in [0, 1, 2, 3, 4, next(scan, 100), next(scan, 101)]:
                assert len(list(t.where(f"f.a = {v}"))) == 10
        ratios[policy] = db.cache_stats()["hit_ratio"]
        assert db.cache_stats()["records"] <= 60
        db.close()
    assert ratios["lru"] < 0.05
    assert ratios["hotscore"] > 0.6


# -- coherence with writes ---------------------------------------------------------------------

def test_writes_patch_cached_sets(backend, cache_spec):
    db, t = make_db(backend, cache=cache_spec)
    with db:
        for v in range(6):
            assert found(t, f"f.a = {v}") == oracle(t, v)
        misses = db.cache_stats()["misses"]
        t.put(b"r001", {b"f:a": b"2"})  # moves from 1 to 2
        t.put(b"r002", {b"f:b": b"changed"})  # covered column of a cached row
        t.delete(b"r003")  # leaves 3
        t.delete(b"r004", columns=[b"f:a"])  # no index value any more
        t.put(b"new1", {b"f:a": b"5", b"f:b": b"n"})
        with t.batch() as b:  # several rows, one batch
            b.put(b"r006", {b"f:a": b"1"})
            b.put(b"r007", {b"f:a": b"1"})
        for v in range(6):
            assert found(t, f"f.a = {v}") == oracle(t, v), v
        assert dict(t.where("f.a = 2", columns=[b"f:b"]))[b"r002"] == {b"f:b": b"changed"}
        if not db.indexer.shared:
            assert db.cache_stats()["misses"] == misses  # every set stayed cached and exact
        # a store other processes write (HBase, the gateway): every write moves the table's
        # index write version (by hibase's coprocessor, or by this client for the indexes it
        # keeps), so the sets cached before it are misses after it, here as in every other
        # process (tests/test_cache_coherence.py); the answers above stay exact either way


def test_a_set_emptied_by_writes_stays_exact(backend, cache_spec):
    db, t = make_db(backend, cache=cache_spec)
    with db:
        assert len(found(t, "f.a = 4")) == 10
        for row in oracle(t, 4):
            t.put(row, {b"f:a": b"40"})
        assert found(t, "f.a = 4") == []
        spec = db.indexer.catalog.get("t", "by_a")
        empty = spec.value_key([77])  # an empty set is cached too
        assert db.cache.read(spec, empty, lambda: []) == []
        before = db.cache_stats()["hits"]
        assert db.cache.read(spec, empty, lambda: pytest.fail("should be a hit")) == []
        assert db.cache_stats()["hits"] == before + 1


def test_fill_racing_a_write_is_not_stored(backend, cache_spec):
    """The loader reads the index, then a write moves a row into the value before the fill:
    the stale load must not be cached."""
    db, t = make_db(backend, cache=cache_spec)
    with db:
        spec = db.indexer.catalog.get("t", "by_a")
        vkey = spec.value_key([2])

        def racing_loader():
            entries = lookup_module.entries_for_value(db.store, spec, vkey)
            t.put(b"r001", {b"f:a": b"2"})  # commits and patches while the load is in hand
            return entries

        tag = db.indexer.cache_tag(spec)
        stale = db.cache.read(spec, vkey, racing_loader, tag)
        assert b"r001" not in [row for row, _ in stale]
        assert found(t, "f.a = 2") == oracle(t, 2)
        assert b"r001" in found(t, "f.a = 2")
        if spec.server:  # kept by HBase's coprocessor: the write moved the table's version,
            # so the stale set, stored under the version before, is never an answer
            assert db.indexer.cache_tag(spec) != tag
        else:  # kept by this client: its write voided the fill
            assert db.cache_stats()["refused_fills"] >= 1


def test_index_drop_and_rebuild_invalidate(backend, cache_spec):
    db, t = make_db(backend, cache=cache_spec)
    with db:
        assert found(t, "f.a = 1") == oracle(t, 1)
        db.drop_index("t", "by_a")
        db.create_index("t", "by_b", ["f:b"], covering=["f:a"])  # reuses the alias
        assert found(t, "f.b = 'b7'") == [b"r007"]
        db.create_index("t", "by_a", ["f:a"], covering=["f:b"])
        assert found(t, "f.a = 1") == oracle(t, 1)
        db.build_index("t", "by_a")
        assert found(t, "f.a = 1") == oracle(t, 1)
        assert db.cache_stats()["sets"] >= 1


def test_threads_writing_and_querying_agree_with_the_oracle(backend, cache_spec):
    """Writers move their own rows between values and check each write is visible at once;
    readers query points and ranges; a small capacity keeps the policy admitting and evicting.
    At the end every value's answer equals a full scan."""
    db, t = make_db(backend, rows=80, values=8, cache=cache_spec, cache_capacity=40,
                    count_period=25)
    errors: list = []
    stop = threading.Event()

    def writer(n):
        rng = random.Random(n)
        mine = [b"r%03d" % i for i in range(n, 80, 2)]
        try:
            for _ in range(60):
                row = rng.choice(mine)
                old = int(t.row(row, [b"f:a"])[b"f:a"])
                new = rng.randrange(8)
                t.put(row, {b"f:a": b"%d" % new})
                if row not in found(t, f"f.a = {new}"):
                    errors.append(f"{row!r} missing from {new} right after the write")
                if old != new and row in found(t, f"f.a = {old}"):
                    errors.append(f"{row!r} still in {old} after moving to {new}")
        except Exception as exc:  # pragma: no cover
            errors.append(repr(exc))

    def reader(n):
        rng = random.Random(100 + n)
        try:
            while not stop.is_set():
                v = rng.randrange(8)
                for row in found(t, f"f.a BETWEEN {v} AND {min(v + 2, 7)}"):
                    assert row.startswith(b"r")
        except Exception as exc:  # pragma: no cover
            errors.append(repr(exc))

    with db:
        writers = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
        readers = [threading.Thread(target=reader, args=(n,)) for n in range(3)]
        for th in writers + readers:
            th.start()
        for th in writers:
            th.join()
        stop.set()
        for th in readers:
            th.join()
        assert errors == []
        for v in range(8):
            assert found(t, f"f.a = {v}") == oracle(t, v)
        stats = db.cache_stats()
        assert stats["hits"] > 0 and stats["records"] <= 40


def test_module_examples():
    import doctest

    from hibase.cache import backend, ring
    for module in (backend, ring):
        assert doctest.testmod(module).failed == 0
