"""Issue 37, items 1-2: the hot cache answers what HBase shows after every acknowledged write,
whoever wrote it and whichever process reads (on the session's real HBase, hibase's
IndexObserver loaded).

Before: with a shared Redis cache, a process that started after a plain happybase put kept
answering from sets cached before it (it compared the table's write version with one it had
never read); the in-process cache, on by default for thrift://, hid other clients' writes for a
catalog lease. Now a set is stored under the table's index write version (the catalog row
ver/<table>, rewritten by the coprocessor after each write batch that changed the indexes it
keeps, before the batch is acknowledged) and answers only while that row still holds it.

Each test drives a plain happybase writer and reader processes (long-running ones, plus new
ones started after a write) and counts answers that differ from a model of the table: 0 stale
answers in every write/read pair (PAIRS), with the cache answering many of the reads (hits
counted).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

import happybase
import pytest

import hibase
from servers import cluster_url as _url
from servers import coprocessor_cluster, start_redis

# 2,000 pairs per mode ran for the check (HIBASE_COHERENCE_PAIRS=2000, ~2 min each on a
# quiet machine); the default run keeps a share of that
PAIRS = int(os.environ.get("HIBASE_COHERENCE_PAIRS", "300"))
VALUES = [f"v{i:02d}" for i in range(12)]
ROWS = [f"r{i:03d}".encode() for i in range(120)]

READER = r"""
import json, sys
import hibase
url, cache, staleness = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = hibase.connect(url, cache=cache, **({"cache_staleness_ms": staleness} if staleness else {}))
q = "SELECT d.note FROM t WHERE d.city = ?"
print("ready", flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req == "stats":
        print(json.dumps(db.cache_stats()), flush=True)
        continue
    rows = db.sql(q, [req])
    print(json.dumps(sorted([k.decode(), v.get(b"d:note")] for k, v in rows)), flush=True)
"""

_n = [0]


@pytest.fixture
def hbase(request):
    return coprocessor_cluster(request)


def _prefix() -> str:
    _n[0] += 1
    return f"coh{int(time.time()) % 100000}x{_n[0]}"


class Reader:
    """A reader process holding one hibase connection (and its cache) across requests."""

    def __init__(self, url: str, cache: str, staleness: int = 0) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        self.proc = subprocess.Popen([sys.executable, "-c", READER, url, cache, str(staleness)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        assert self.proc.stdout.readline().strip() == "ready"

    def ask(self, req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the reader process died"
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _setup(cluster):
    prefix = _prefix()
    url = _url(cluster, prefix)
    db = hibase.connect(url, cache_policy=None)
    db.create_table("t", {"d": {"max_versions": 1}},
                    columns={"d:city": "string", "d:note": "string"})
    db.create_index("t", "by_city", ["d:city"], covering=["d:note"])
    assert all(s.server for s in db.indexer.specs("t"))
    conn = happybase.Connection("127.0.0.1", cluster.thrift_port, timeout=60_000)
    raw = conn.table(f"{prefix}_t")
    model: dict[bytes, tuple[str, str]] = {}
    rnd = random.Random(37)
    with raw.batch() as b:
        for row in ROWS:
            model[row] = (rnd.choice(VALUES), f"n{rnd.randrange(1000)}")
            b.put(row, {b"d:city": model[row][0].encode(), b"d:note": model[row][1].encode()})
    return db, url, conn, raw, model


def _truth(model, value):
    return sorted([k.decode(), note] for k, (city, note) in model.items() if city == value)


def _pairs(raw, model, readers, new_reader, pairs: int, seed: int) -> tuple[int, int]:
    """`pairs` plain writes, each followed by reads from the readers (round robin) of the value
    the row left and the one it entered, twice (the second read of a value is the cache's
    chance to hit); every 100th pair also asks a process started after the write. Returns
    (reads, stale answers)."""
    rnd = random.Random(seed)
    reads = stale = 0
    for i in range(pairs):
        row = rnd.choice(ROWS)
        old = model.get(row, (None, None))[0]
        if rnd.random() < 0.1 and row in model:
            raw.delete(row)
            del model[row]
            new = None
        else:
            new = rnd.choice(VALUES)
            note = f"n{rnd.randrange(1000)}"
            raw.put(row, {b"d:city": new.encode(), b"d:note": note.encode()})
            model[row] = (new, note)
        values = [v for v in (old, new) if v is not None]
        if i % 100 == 99:  # a process started after the write asks first
            fresh = new_reader()
            try:
                for value in values:
                    reads += 1
                    stale += fresh.ask(value) != _truth(model, value)
            finally:
                fresh.close()
        reader = readers[i % len(readers)]
        for value in values * 2:
            reads += 1
            stale += reader.ask(value) != _truth(model, value)
    return reads, stale


@pytest.mark.parametrize("mode", ["redis", "memory"])
def test_no_stale_answer_after_plain_writes(hbase, mode):
    """Two long-running reader processes (and a new one every 100 pairs) share two Redis nodes
    (mode redis) or each keep their own in-process cache (mode memory)."""
    servers = [start_redis(), start_redis()] if mode == "redis" else []
    try:
        cache = ",".join(s.url for s in servers) if servers else "memory"
        db, url, conn, raw, model = _setup(hbase)
        # readers with the default catalog lease (1 s), as users run them
        url = url.replace("catalog_lease_ms=0", "catalog_lease_ms=1000")
        readers = [Reader(url, cache), Reader(url, cache)]
        try:
            # warm: every value's set cached by both readers
            for reader in readers:
                for value in VALUES:
                    assert reader.ask(value) == _truth(model, value)
            reads, stale = _pairs(raw, model, readers, lambda: Reader(url, cache), PAIRS, 1)
            stats = [r.ask("stats") for r in readers]
        finally:
            for r in readers:
                r.close()
        assert stale == 0, f"{stale} stale answers in {reads} reads"
        hits = sum(s["hits"] for s in stats)
        assert hits >= reads // 4, stats  # the cache did answer: the check is not vacuous
        assert db.verify_index("t", "by_city")["ok"]
    finally:
        for s in servers:
            s.close()
        try:
            conn.close()
        except NameError:
            pass


def test_a_hit_reads_the_version_once_and_staleness_is_opt_in(hbase):
    """A hot hit on a server-kept index costs one HBase get (the version) and nothing else by
    default; with cache_staleness_ms it costs no HBase call, and EXPLAIN says which."""
    db, url, conn, raw, model = _setup(hbase)
    try:
        q = "SELECT d.note FROM t WHERE d.city = 'v03'"
        # a catalog lease as in production: the definitions' check (one get a lease) is not
        # part of the count below
        leased = url.replace("catalog_lease_ms=0", "catalog_lease_ms=600000")
        strict = hibase.connect(leased)
        lax = hibase.connect(leased, cache_staleness_ms=60_000)
        for c in (strict, lax):
            c.sql(q)  # a miss: cached now
            c.sql(q)
            assert c.cache_stats()["hits"] == 1
        assert "read at the lookup" in strict.explain(q)
        assert "for up to 60000 ms" in lax.explain(q)
        calls = _store_calls(strict, q)
        assert sum(calls.values()) == 1, calls  # the version row's get
        assert _store_calls(lax, q) == {}
        # the lax reader may miss a plain write for its staleness; the strict one never does
        raw.put(b"r000", {b"d:city": b"v03", b"d:note": b"fresh"})
        assert [b"r000", "fresh"] in [[k, v[b"d:note"]] for k, v in strict.sql(q)]
    finally:
        conn.close()


def _store_calls(db, q) -> dict:
    """The store round trips one run of `q` makes (db.stats() counts them per call name)."""
    before = dict(db.stats()["store_calls"])
    db.sql(q)
    after = db.stats()["store_calls"]
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def test_client_kept_index_seen_by_another_process_cache(hbase):
    """Without the coprocessor (server_upkeep=0: hibase's client keeps the index), one hibase
    client's write moves the version too, so another client's in-process cache answers it at
    once (before: stale until that client's catalog lease)."""
    prefix = _prefix()
    url = _url(hbase, prefix, server_upkeep=0)
    a = hibase.connect(url)
    a.create_table("t", {"d": {}}, columns={"d:city": "string", "d:note": "string"})
    a.create_index("t", "by_city", ["d:city"], covering=["d:note"])
    assert not any(s.server for s in a.indexer.specs("t"))
    b = hibase.connect(url)
    q = "SELECT d.note FROM t WHERE d.city = 'x'"
    ta = a.table("t")
    for i in range(30):
        ta.put(b"r1", {b"d:city": b"x", b"d:note": str(i).encode()})
        assert b.sql(q) == [(b"r1", {b"d:note": str(i)})]
        assert b.sql(q) == [(b"r1", {b"d:note": str(i)})]  # a hit, same answer
    ta.delete(b"r1")
    assert b.sql(q) == []
    assert b.cache_stats()["hits"] >= 30
