"""The round-trip budget of the HBase backend, pinned as exact counts of the store's Thrift calls
(`db.stats()["store_calls"]`): deterministic, not timing. Runs on every HBase-protocol backend
kind tests/backends.py offers (the gateway; real HBase where that kind exists).

Every budget is taken by a client with a long catalog lease (`catalog_lease_ms`), so index
definitions cost no call per query; tables and indexes are made beforehand by an admin client
without a lease (a definition change waits out its maker's lease). The lease tests check what
another client sees meanwhile."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import hibase

LEASE = "&catalog_lease_ms=60000"


def _connect(hb, lease=LEASE, **options):
    """A client of the backend with a catalog lease (closed at teardown)."""
    db = hibase.connect(hb.url + lease, **options)
    hb.opened.append(db)
    return db


def _calls(db, fn):
    """(Thrift calls by method that fn() made, fn's result)."""
    before = db.stats()["store_calls"]
    result = fn()
    after = db.stats()["store_calls"]
    return {m: n - before.get(m, 0) for m, n in after.items() if n != before.get(m, 0)}, result


def _table(db, n=100):
    """Table t: f:a ten values, f:b seven, f:c 'x' everywhere."""
    db.create_table("t", {"f": {}}, columns={"f:a": "string", "f:b": "string",
                                              "f:c": "string"})
    t = db.table("t")
    with t.batch() as b:
        for i in range(n):
            b.put(b"r%04d" % i, {b"f:a": b"v%d" % (i % 10), b"f:b": b"w%d" % (i % 7),
                                 b"f:c": b"x"})
    return t


def _server_kept(hb) -> bool:
    """Whether indexes made on this backend are kept by hibase's coprocessor (real HBase
    started by `hibase cluster`, which loads it) rather than by the client."""
    return hb.kind == "hbase" and hb.cluster.coprocessor


SCAN = {"getScannerResults": 1}  # a short scan: one Thrift2 call (Thrift1: open, get, close)
# the table's index write version (catalog row ver/<table>), read once per index lookup that
# the hot cache may answer: a set cached before another process's write is never an answer
# (tests/test_cache_coherence.py); cache_staleness_ms=n trades it for answers up to n ms old
VERSION = {"getRowsWithColumns": 1}
THRIFT1_SCAN = {"scannerOpenWithScan": 1, "scannerGetList": 1, "scannerClose": 1}


def test_lookup_budget(hb):
    admin = hb.connect()
    _table(admin)
    admin.create_index("t", "by_a", ["f:a"], covering=["f:b"])
    db = _connect(hb, cache_policy="lru")
    t = db.table("t")
    covered = lambda v: list(t.where(f"f.a = '{v}'", columns=[b"f:b"]))  # noqa: E731
    rows = lambda v: list(t.where(f"f.a = '{v}'"))  # noqa: E731
    covered("v0")  # the first query checks the catalog's generation (then its lease runs)
    calls, got = _calls(db, lambda: covered("v1"))
    assert calls == {**SCAN, **VERSION}  # cold covered: the entries, one short scan, no count
    assert len(got) == 10
    calls, again = _calls(db, lambda: covered("v1"))
    assert calls == VERSION and again == got  # hot covered: the version, nothing else
    calls, got = _calls(db, lambda: covered("nope"))
    assert calls == {**SCAN, **VERSION} and got == []  # cold absent value
    assert _calls(db, lambda: covered("nope"))[0] == VERSION  # the empty set is cached too
    calls, got = _calls(db, lambda: rows("v2"))
    assert calls == {**SCAN, **VERSION, "getRows": 1}  # cold with rows
    calls, again = _calls(db, lambda: rows("v2"))
    assert calls == {**VERSION, "getRows": 1} and again == got  # hot with rows: one multi-get
    assert sorted(got) == sorted(t.where("f.a = 'v2'", full_scan=True))
    # opting into bounded staleness: a hot hit makes no call at all
    lax = _connect(hb, cache_policy="lru", cache_staleness_ms=60_000)
    lt = lax.table("t")
    list(lt.where("f.a = 'v1'", columns=[b"f:b"]))
    calls, again = _calls(lax, lambda: list(lt.where("f.a = 'v1'", columns=[b"f:b"])))
    assert calls == {} and sorted(again) == sorted(got_v1 := covered("v1"))
    assert len(got_v1) == 10
    assert db.stats()["store_calls_total"] == sum(db.stats()["store_calls"].values())


def test_without_thrift2_a_short_scan_is_three_thrift1_calls(hb):
    """A thrift:// URL without thrift2_port (an HBase whose Thrift2 server is not running)
    works the same, each short scan as Thrift1's open, get and close."""
    admin = hb.connect()
    _table(admin)
    admin.create_index("t", "by_a", ["f:a"], covering=["f:b"])
    parts = urlsplit(hb.url + LEASE)
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "thrift2_port"])
    url = urlunsplit(parts._replace(query=query))
    assert "thrift2_port" not in url and "thrift2_port" in hb.url
    db = hibase.connect(url, cache_policy="lru")
    hb.opened.append(db)
    t = db.table("t")
    covered = lambda v: list(t.where(f"f.a = '{v}'", columns=[b"f:b"]))  # noqa: E731
    covered("v0")  # the first query checks the catalog's generation
    calls, got = _calls(db, lambda: covered("v1"))
    assert calls == {**THRIFT1_SCAN, **VERSION} and len(got) == 10
    assert sorted(got) == sorted(t.where("f.a = 'v1'", full_scan=True, columns=[b"f:b"]))


def test_put_budget_does_not_grow_with_indexes(hb):
    admin = hb.connect()
    _table(admin, 20)
    admin.create_index("t", "by_a", ["f:a"], covering=["f:b"])
    admin.create_table("u", {"f": {}}, columns={"f:a": "string", "f:b": "string",
                                                "f:c": "string"})
    for name, col in (("by_a", "f:a"), ("by_b", "f:b"), ("by_c", "f:c")):
        admin.create_index("u", name, [col], covering=["f:a"])
    db = _connect(hb)
    t, u = db.table("t"), db.table("u")
    t.put(b"r0000", {b"f:a": b"v9"})  # the first write checks the catalog's generation
    one, _ = _calls(db, lambda: t.put(b"r001", {b"f:a": b"v3", b"f:b": b"q"}))
    three, _ = _calls(db, lambda: u.put(b"r002", {b"f:a": b"v4", b"f:b": b"q",
                                                  b"f:c": b"y"}))
    moved, _ = _calls(db, lambda: u.put(b"r002", {b"f:a": b"v5", b"f:b": b"p"}))
    # client-side upkeep: old values; unverified entries + grown counts marked pending
    # (counts are deltas in the index's own HBase table: no read; a call of their own
    # beside the entries', in flight together); data; verify marks + old entries gone +
    # counts shrunk and unmarked. Every call a mutateRowsTs (the writer's timestamps). Kept
    # by hibase's coprocessor (real HBase here): the data call alone (test_coprocessor.py).
    # Client-kept: then the table's index write version moves (one mutateRow), so other
    # processes' caches drop sets this write changed
    for calls in (one, three, moved):
        if _server_kept(hb):
            assert calls == {"mutateRowsTs": 1}, calls
            continue
        gets = {m: n for m, n in calls.items() if m.startswith("getRows")}
        assert sum(gets.values()) == 1 and calls == {**gets, "mutateRowsTs": 5,
                                                     "mutateRow": 1}, calls
    assert db.verify_index("t", "by_a")["ok"]
    for name in ("by_a", "by_b", "by_c"):
        assert db.verify_index("u", name)["ok"]


def test_local_lookup_reads_only_the_ranges_asked_for(hb):
    """A local-index lookup scans each visited region's range and stops at its end, however
    many entries follow the value in the local index table."""
    admin = hb.connect()
    _table(admin, 2500)
    admin.create_index("t", "la", ["f:b"], covering=["f:a"], local=True)
    db = _connect(hb)
    t = db.table("t")
    t.where("f.b = 'w6'")  # the first query checks the catalog's generation
    calls, got = _calls(db, lambda: list(t.where("f.b = 'w0'", columns=[b"f:a"])))
    assert sorted(got) == sorted(t.where("f.b = 'w0'", full_scan=True, columns=[b"f:a"]))
    assert len(got) == 358 and "LOCAL INDEX la" in t.explain("f.b = 'w0'", columns=[b"f:a"])
    # one short scan per visited region's range: a single Thrift2 call each, no Thrift1
    # scanner left to read on (the old raw-iterator imitation read the rest of the table)
    assert calls["getScannerResults"] >= 1 and not set(calls) & set(THRIFT1_SCAN), calls


def test_batch_calls_are_per_chunk_not_per_row(hb):
    admin = hb.connect()
    _table(admin, 10)
    for name, col in (("by_a", "f:a"), ("by_b", "f:b"), ("by_c", "f:c")):
        admin.create_index("t", name, [col])
    db = _connect(hb)
    t = db.table("t")
    t.put(b"r0000", {b"f:a": b"v9"})

    def load(prefix, n):
        with t.batch() as b:
            for i in range(n):
                b.put(b"%s%05d" % (prefix, i), {b"f:a": b"v%d" % (i % 10), b"f:b": b"w",
                                                 b"f:c": b"c%d" % i})

    small, _ = _calls(db, lambda: load(b"s", 20))
    medium, _ = _calls(db, lambda: load(b"m", 200))
    assert small == medium  # 10x the rows, the same calls
    big, _ = _calls(db, lambda: load(b"b", 3000))
    # chunks of 250-1000 rows, not a call per row (3,000 rows, 9,000 entries and 3,011
    # counts, these in both phases: about 41)
    assert sum(big.values()) <= 45, big
    assert sorted(t.where("f.b = 'w'")) == sorted(t.where("f.b = 'w'", full_scan=True))
    for name in ("by_a", "by_b", "by_c"):
        assert db.verify_index("t", name)["ok"]


def test_scans_stream_from_one_scanner(hb):
    db = hb.connect()
    t = _table(db, 2500)
    calls, got = _calls(db, lambda: list(t.scan(columns=[b"f:a"])))
    assert len(got) == 2500 and all(set(d) == {b"f:a"} for _, d in got)
    # the first 1000 rows in one Thrift2 call, the rest from one scanner, 1000 rows per get
    # (scanner caching), closed once
    assert calls == {"getScannerResults": 1, "scannerOpenWithScan": 1, "scannerGetList": 2,
                     "scannerClose": 1}
    calls, got = _calls(db, lambda: list(t.scan(limit=5)))
    assert len(got) == 5 and calls == SCAN  # a short scan: no scanner left open


def test_big_index_result_fetches_rows_in_parallel_chunks(hb):
    admin = hb.connect()
    _table(admin, 3000)
    admin.create_index("t", "by_c", ["f:c"])
    db = _connect(hb)
    t = db.table("t")
    list(t.where("f.c = 'none'"))  # the first query checks the catalog's generation
    calls, got = _calls(db, lambda: list(t.where("f.c = 'x'")))
    assert len(got) == 3000
    assert sorted(got) == sorted(t.where("f.c = 'x'", full_scan=True))
    # multi-gets of 16, 64, 256, 1000, 1000, ... rows, each split into <= 250-row chunks
    assert calls["getRows"] == 1 + 1 + 2 + 4 + 4 + 3
    # a row fetched after its entry is re-checked against the whole condition
    t.put(b"r0000", {b"f:c": b"moved"})
    assert b"r0000" not in {k for k, _ in t.where("f.c = 'x'")}


def test_catalog_lease_between_two_clients(hb):
    """A client trusts the index definitions it read for a lease: its queries cost no
    catalog call meanwhile, and a change made by another client waits the lease out before
    relying on it (so no write misses a new index and no query reads a dropped one)."""
    lease = "&catalog_lease_ms=1000"  # 300 ms: 3 queries overran it on a loaded machine
    a_db, b = _connect(hb, lease, cache=None), _connect(hb, lease, cache=None)
    t_a = _table(a_db, 30)
    t_b = b.table("t")
    assert list(t_b.where("f.a = 'v1'"))  # b reads the catalog (no index yet)
    a_db.create_index("t", "by_a", ["f:a"])  # waits one lease before building
    t_b.put(b"late", {b"f:a": b"v1"})  # b has re-read the catalog: it maintains by_a
    assert b"late" in {k for k, _ in t_a.where("f.a = 'v1'")}
    assert a_db.verify_index("t", "by_a")["ok"]
    assert "INDEX by_a" in t_b.explain("f.a = 'v1'")
    # b's first lookup learns the index's key-value table (one get; b's own write taught it
    # that when b kept the index itself, before hibase's coprocessor did)
    list(t_b.where("f.a = 'v1'"))
    calls, _ = _calls(b, lambda: [list(t_b.where("f.a = 'v1'")) for _ in range(3)])
    assert "getRowsWithColumns" not in calls  # no catalog (gen) read per query in the lease
    a_db.drop_index("t", "by_a")  # marked stale, a lease passes, then cleared
    got = sorted(t_b.where("f.a = 'v1'"))
    assert got == sorted(t_b.where("f.a = 'v1'", full_scan=True)) and len(got) == 4


def test_stale_counts_never_change_an_answer(hb):
    """Value counts only choose between plans: a client planning with counts another client
    changes right after still answers like the full scan."""
    admin = hb.connect()
    _table(admin, 40)
    admin.create_index("t", "by_a", ["f:a"])
    admin.create_index("t", "by_b", ["f:b"])
    a, b = _connect(hb, cache=None), _connect(hb, cache=None)
    t_a = a.table("t")
    t_b = b.table("t")
    cond = "f.a = 'new' AND f.b = 'w1'"
    assert list(t_b.where(cond)) == []  # b plans with a count of 0 for 'new'
    for i in range(30):
        t_a.put(b"n%02d" % i, {b"f:a": b"new", b"f:b": b"w1"})
    got = sorted(t_b.where(cond))
    assert len(got) == 30 and got == sorted(t_b.where(cond, full_scan=True))


def test_roundtrips_benchmark_reports_what_it_measured(hb):
    from hibase_bench import roundtrips

    r = roundtrips.measure(hb.url, rows=300, values=30, lookups=5, caches=("memory", "redis"),
                           progress=False, reader_lease_ms=60_000)
    for cache in ("memory", "redis"):  # the in-process cache and a local Redis node
        covered = r["hot_cold"][cache]["covered"]
        # a hot hit: the table's index write version (one get); cold: that and the scan
        assert covered["hot_calls_per_query"] == 1 and 2 <= covered["cold_calls_per_query"] <= 3
        assert r["hot_cold"][cache]["with_rows"]["hot_calls_per_query"] == 2
        lax = r["hot_cold"][cache]["covered_staleness_60s"]  # cache_staleness_ms: no call
        assert lax["hot_calls_per_query"] == 0 and 1 <= lax["cold_calls_per_query"] <= 2
    if _server_kept(hb):  # the coprocessor keeps the indexes: a load costs the same calls
        assert r["load"]["three_indexes"]["calls"] == r["load"]["no_index"]["calls"] > 0
    else:
        assert r["load"]["three_indexes"]["calls"] > r["load"]["no_index"]["calls"] > 0
    assert r["full_scan"]["indexed_speedup"] > 0
    db = hb.connect()
    assert db.tables() == []  # its tables are dropped


def test_local_index_follows_a_split_another_client_applied_within_the_lease(hb):
    """A client trusting its catalog for a lease still reads and writes local-index rows by
    the region layout HBase holds (one get of the layout per local-index query or write)."""
    admin = hb.connect()
    _table(admin, 60)
    admin.create_index("t", "by_a_local", ["f:a"], local=True)
    a = _connect(hb, cache=None)  # long lease
    t_a = a.table("t")
    want = sorted(t_a.where("f.a = 'v1'", full_scan=True))
    assert sorted(t_a.where("f.a = 'v1'")) == want
    # HBase splits; the admin client (opened first) moves the local rows and switches the
    # layout, then `a` follows: it must find the split done, not apply it again
    hb.split("t", b"r0030")
    assert [r.start for r in a.store.regions("t")] == [b"", b"r0030"]
    assert sorted(t_a.where("f.a = 'v1'")) == want
    t_a.put(b"r0045", {b"f:a": b"v1"})
    got = sorted(t_a.where("f.a = 'v1'"))
    assert got == sorted(t_a.where("f.a = 'v1'", full_scan=True)) and len(got) == len(want) + 1
    assert admin.verify_index("t", "by_a_local")["ok"]
