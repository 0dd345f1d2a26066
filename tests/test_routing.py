"""SCBF routing of local-index lookups: filters exact under puts, deletes and splits (never a
false negative), persisted with a generation counter and rebuilt when missing or stale, and
EXPLAIN showing the regions visited and skipped.

The routing tests run on both backends. The persistence tests (db_path: save on close, load on
open, a crash losing the save, read-only opens) are about one writer process owning an embedded
store and its +1 generation counter; on a shared HBase store the generation is random and the
filters reload whenever another client changed them (tests/test_hbase_local.py)."""

from __future__ import annotations

import random
import re

import pytest

import hibase
from hibase.index import local
from hibase.index.lookup import key_range


@pytest.fixture(autouse=True)
def _client_upkeep(request):
    """SCBF routing filters are kept by the client's own index upkeep: on real HBase, where
    hibase's coprocessor would keep the indexes (and no filters), they are made client-kept
    (server_upkeep=0)."""
    if "backend" in request.fixturenames:
        b = request.getfixturevalue("backend")
        if b.kind == "hbase":
            b.url += "&server_upkeep=0"


def _table(db, rows: int = 600, seed: int = 0, split_size: int = 2500, backend=None):
    if backend is None:  # embedded-only tests
        db.create_table("t", {"f": {}}, columns={"f:a": "int", "f:u": "string"},
                        split_size=split_size)
    else:
        backend.create_table(db, "t", {"f": {}}, columns={"f:a": "int", "f:u": "string"},
                             split_size=split_size)
    t = db.table("t")
    db.create_index("t", "lu", ["f:u"], covering=["f:a"], local=True)
    rng = random.Random(seed)
    with t.batch(batch_size=40) as b:  # small batches: the embedded store splits as they land
        for i in range(rows):
            b.put(b"r%05d" % rng.randrange(rows * 3),
                  {b"f:u": b"u%d" % rng.randrange(rows // 3), b"f:a": b"%d" % i})
    if backend is not None:
        backend.settle("t")  # [hbase]: the splits a size policy would have made
    return t


def _exact(db, table: str = "t") -> None:
    """Every (region, value) with rows is in that region's filter, and the filters hold no
    more values than the regions do."""
    router = db.indexer.router
    st = router.state(table)
    regions = {r.start: r for r in db.store.regions(table)}
    counts = local.region_counts(db.store, table)
    for start, by_alias in counts.items():
        r = regions[start]  # no counts under a region prefix that is gone
        for alias, values in by_alias.items():
            f = st.filters[(r.id, alias)]
            assert all(v in f for v, n in values.items() if n > 0)
            assert all(n > 0 for n in values.values())
            assert len(f) == len(values)
    report = router.check(table)
    assert report["false_negatives"] == 0 and report["stale_items"] == 0, report


def test_filters_exact_under_puts_deletes_and_splits(backend, db):
    t = _table(db, backend=backend)
    assert len(t.regions()) > 4
    _exact(db)
    rng = random.Random(5)
    rows = [r for r, _ in t.scan()]
    for row in rng.sample(rows, 250):  # values leave regions: counts drop to zero
        if rng.random() < 0.5:
            t.delete(row)
        else:
            t.put(row, {b"f:u": b"moved%d" % rng.randrange(20)})
    _exact(db)
    for _ in range(6):
        backend.split("t", b"r%05d" % rng.randrange(1800))
    with t.batch(batch_size=20) as b:  # and back in, with splits caused by the load
        for i in range(200):
            b.put(b"s%05d" % i, {b"f:u": b"u%d" % (i % 50), b"f:a": b"1"})
    _exact(db)
    assert db.verify_index("t", "lu")["ok"]
    # counts per region are exact after deletes: the sum over regions is the global count
    values = [d.get(b"f:u") for _, d in t.scan()]
    for v in ("u1", "moved3", "u199", "absent"):
        assert len(list(t.where(f"f.u = '{v}'"))) == values.count(v.encode())


def test_point_lookups_visit_only_regions_that_may_hold_the_value(backend, db):
    t = _table(db, rows=900, backend=backend)
    spec = db.indexer.catalog.get("t", "lu")
    regions = db.store.regions("t")
    assert len(regions) >= 6
    skipped_total = 0
    rows_of: dict[bytes, list[bytes]] = {}  # value -> its rows, from one scan
    for row, d in t.scan():
        rows_of.setdefault(d.get(b"f:u"), []).append(row)
    for v in [b"u%d" % i for i in range(0, 300, 7)] + [b"nope%d" % i for i in range(20)]:
        want = rows_of.get(v, [])
        holders = {r.start for r in regions if any(r.contains(row) for row in want)}
        routes: list = []
        rows = list(local.scan_entries(db.store, spec, [key_range(spec, [v.decode()])],
                                       db.indexer.router, routes))
        visited = {r.start for r in routes[0].regions}
        assert holders <= visited  # never a false negative
        skipped_total += routes[0].skipped_by_filter + routes[0].skipped_empty
        assert sorted(r for r, _ in rows) == want
    assert skipped_total > 0
    # without routing every region is visited (hindex), with the same rows
    db.indexer.router.enabled = False
    routes = []
    list(local.scan_entries(db.store, spec, [key_range(spec, ["u3"])], db.indexer.router, routes))
    assert len(routes[0].regions) == len(regions) and routes[0].skipped_by_filter == 0


def _servers_exact(db, table: str = "t", alias: bytes | None = None) -> dict:
    """Every value a region holds is in the filter of the server holding that region (never a
    false negative at the server level); the per-server filters."""
    router = db.indexer.router
    regions = db.store.regions(table)
    alias = alias or db.indexer.catalog.get(table, "lu").alias
    filters, placement = router.server_filters(table, alias, regions)
    by_start = {r.start: r for r in regions}
    for start, by_alias in local.region_counts(db.store, table).items():
        f = filters[placement[by_start[start].id]]
        assert all(v in f for v, n in by_alias.get(alias, {}).items() if n > 0)
    return filters


def test_server_filters_stay_exact_and_route_as_the_paper(backend, db):
    """One filter per region server (SPEC §3's global level): built from the per-region
    counts, kept by the same commit events, rebuilt after splits; level="server" visits every
    region of the servers whose filter may hold the value, with the same rows."""
    t = _table(db, rows=900, split_size=1 << 30, backend=backend)  # splits made below only
    for row in (b"r00500", b"r01000", b"r01500", b"r02000"):
        backend.split("t", row)
    router = db.indexer.router
    spec = db.indexer.catalog.get("t", "lu")
    servers = set(db.store.servers("t").values())
    assert servers and all(isinstance(s, str) and s for s in servers)
    first = _servers_exact(db)
    assert set(first) == servers
    rng = random.Random(9)
    rows = [r for r, _ in t.scan()]
    for row in rng.sample(rows, 200):  # kept by commit events: the same view, changed
        if rng.random() < 0.5:
            t.delete(row)
        else:
            t.put(row, {b"f:u": b"srv%d" % rng.randrange(30)})
    again = _servers_exact(db)
    if not db.store.capabilities.shared:  # the same filters, changed by the writes' events
        assert again is first  # (a shared store reloads what another writer changed)
    backend.split("t", b"r00900")
    t.put(b"r00901", {b"f:u": b"after-split", b"f:a": b"1"})
    assert _servers_exact(db) is not first  # rebuilt for the daughters
    rows_of: dict[bytes, list[bytes]] = {}
    for row, d in t.scan():
        rows_of.setdefault(d.get(b"f:u"), []).append(row)
    try:
        for v in [b"u%d" % i for i in range(0, 300, 11)] + [b"srv3", b"after-split", b"none"]:
            got = {}
            for level in ("region", "server"):
                router.level = level
                routes: list = []
                got[level] = sorted(r for r, _ in local.scan_entries(
                    db.store, spec, [key_range(spec, [v.decode()])], router, routes))
                if level == "server":
                    chosen, holding = routes[0].servers
                    assert chosen <= holding <= len(servers)
                    assert "region server(s) by their SCBF" in routes[0].describe()
                else:
                    assert routes[0].servers is None
            assert got["region"] == got["server"] == sorted(rows_of.get(v, []))
    finally:
        router.level = "region"
    with pytest.raises(ValueError, match="routing level"):
        router.level = "rack"


def test_explain_shows_regions_visited_and_skipped(backend, db):
    t = _table(db, rows=600, backend=backend)
    n = len(t.regions())
    plan = t.explain("f.u = 'never-there'")
    m = re.search(r"visits (\d+) of (\d+) region\(s\), (\d+) skipped by SCBF routing", plan)
    assert m, plan
    assert int(m.group(2)) == n and int(m.group(1)) + int(m.group(3)) == n
    assert int(m.group(1)) <= 1  # an absent value: at most a false positive
    u5 = [row for row, d in t.scan() if d.get(b"f:u") == b"u5"]
    holders = {r["start_key"] for r in t.regions()
               if any(r["start_key"] <= row and (not r["end_key"] or row < r["end_key"])
                      for row in u5)}
    plan = t.explain("f.u = 'u5'")
    m = re.search(r"visits (\d+) of (\d+) region", plan)
    assert len(holders) <= int(m.group(1)) <= len(holders) + 1, plan
    assert "every region" in t.explain("f.u > 'u5'")
    db.indexer.router.enabled = False
    assert f"visits {n} of {n} region(s), routing off: every region" in t.explain("f.u = 'u5'")
    sql_plan = db.explain("SELECT f.a FROM t WHERE f.u = 'u5'")
    assert "LOCAL INDEX lu" in sql_plan and "COVERED by index" in sql_plan


def test_filters_saved_on_close_and_loaded_on_open(db_path):
    db = hibase.connect(db_path)
    _table(db)
    before = db.indexer.router.check("t")
    db.close()
    db = hibase.connect(db_path)
    try:
        report = db.indexer.router.check("t")
        assert report["source"] == "loaded" and report["saved"]
        assert report["false_negatives"] == 0 and report["values"] == before["values"]
        assert report["generation"] == before["generation"]
        _exact(db)
        # the first write after a save bumps the generation, in the write's own batch
        db.table("t").put(b"zz", {b"f:u": b"fresh"})
        after = db.indexer.router.check("t")
        assert after["generation"] == before["generation"] + 1 and not after["saved"]
        assert [r for r, _ in db.table("t").where("f.u = 'fresh'")] == [b"zz"]
        regions = len(db.store.regions("t"))
    finally:
        db.store.close()  # a crash: that write's filter change is never saved
    db = hibase.connect(db_path)
    try:
        assert len(db.store.regions("t")) == regions  # no split hid the staleness
        report = db.indexer.router.check("t")
        assert report["source"] == "rebuilt" and report["false_negatives"] == 0
        assert [r for r, _ in db.table("t").where("f.u = 'fresh'")] == [b"zz"]
    finally:
        db.close()


def test_stale_or_missing_filters_are_rebuilt_on_open(db_path):
    db = hibase.connect(db_path)
    t = _table(db)
    db.close()  # saved
    db = hibase.connect(db_path)
    t = db.table("t")
    for i in range(150):  # new values and splits after the save ...
        t.put(b"n%04d" % i, {b"f:u": b"late%d" % i})
    db.split("t", b"n0075")
    db.store.close()  # ... then a crash: the filters are never saved
    db = hibase.connect(db_path)
    try:
        report = db.indexer.router.check("t")
        assert report["source"] == "rebuilt" and report["false_negatives"] == 0
        _exact(db)
        assert [r for r, _ in db.table("t").where("f.u = 'late7'")] == [b"n0007"]
    finally:
        db.close()
    # same regions, same generation, but the saved filters are gone: rebuilt
    db = hibase.connect(db_path)
    lrt = local.routing_table("t")
    db.store.kv_delete_range(lrt, b"f", b"g")
    db.store.kv_delete_range(lrt, b"s", b"t")
    db.store.close()
    db = hibase.connect(db_path)
    try:
        assert db.indexer.router.check("t")["source"] == "rebuilt"
        _exact(db)
    finally:
        db.close()


def test_filters_follow_a_split_without_a_prior_load(db_path):
    """A split is the first thing after open: the daughters' filters are built in the split,
    the generation bump rides in the split's batch, and a crash after it rebuilds."""
    db = hibase.connect(db_path)
    _table(db)
    db.close()
    db = hibase.connect(db_path)
    assert not db.indexer.router.loaded("t")
    assert db.split("t", b"r00900")
    _exact(db)
    gen = db.indexer.router.check("t")["generation"]
    db.store.close()
    db = hibase.connect(db_path)
    try:
        report = db.indexer.router.check("t")
        assert report["generation"] == gen and report["source"] == "rebuilt"
        _exact(db)
    finally:
        db.close()


def test_read_only_open_routes_with_rebuilt_or_saved_filters(db_path):
    db = hibase.connect(db_path)
    _table(db)
    db.close()
    ro = hibase.connect(db_path, read_only=True)
    try:
        t = ro.table("t")
        assert ro.indexer.router.check("t")["source"] == "loaded"
        want = sorted(r for r, d in t.scan() if d.get(b"f:u") == b"u9")
        assert sorted(r for r, _ in t.where("f.u = 'u9'")) == want
    finally:
        ro.close()


def test_bench_local_cli_small(tmp_path):
    import json

    from click.testing import CliRunner

    from hibase.cli import cli
    result = CliRunner().invoke(cli, ["bench", "local", "--rows", "3000", "--regions", "4",
                                      "--queries", "2", "--json", "--no-progress",
                                      "--workdir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["regions"] == 4 and report["write"]["local"]["regions"] == 4
    assert all(q["same_rows"] for q in report["queries"])
    assert report["filters"]["false_negatives"] == 0
    assert all(report["local_indexes_verified"].values())
    absent = report["queries"][0]
    assert absent["rows"] == 0 and absent["local_all_regions"]["regions_visited"] == 4
    assert absent["local_scbf"]["regions_visited"] < 1 and absent["global"]["regions_visited"] == 1
    # per-server filters (one server here): an absent value visits no server, a present one
    # the server holding it, never one without a match
    assert report["servers"]["count"] == 1
    assert absent["local_scbf_servers"]["servers_visited"] < 1
    assert absent["local_all_regions"]["servers_visited"] == 1
    assert absent["local_all_regions"]["servers_without_match"] == 1
    for q in report["queries"][1:]:
        assert q["local_scbf_servers"]["servers_visited"] == q["servers_holding_rows"] == 1
        assert q["local_scbf_servers"]["servers_without_match"] == 0


def test_stacks_repack_or_grow_and_stay_exact(backend, db):
    """Many values entering one region: with repack (the default) the stack is rebuilt as one
    bigger filter; without, it grows as the paper's scalable SCBF. Exact either way."""
    db.create_table("t", {"f": {}}, columns={"f:u": "string"})
    t = db.table("t")
    db.create_index("t", "lu", ["f:u"], local=True)
    router = db.indexer.router
    router.initial_counters = 512  # ~35 values per filter at P = 0.001
    # batches of 10: a filter fills (and is repacked or stacked) many times over each phase
    with t.batch(batch_size=10) as b:
        for i in range(300):
            b.put(b"a%04d" % i, {b"f:u": b"v%d" % i})
    st = router.state("t")
    (f,) = st.filters.values()
    assert len(f.filters) == 1 and f.counters > 512 and len(f) == 300
    _exact(db)
    router.repack = False
    with t.batch(batch_size=10) as b:
        for i in range(300, 900):
            b.put(b"a%04d" % i, {b"f:u": b"v%d" % i})
    (f,) = router.state("t").filters.values()
    assert len(f.filters) > 1 and len(f) == 900
    with t.batch(batch_size=10) as b:
        for i in range(0, 900, 2):
            b.delete(b"a%04d" % i)
    assert router.check("t")["false_negatives"] == 0
    spec = db.indexer.catalog.get("t", "lu")
    (f,) = router.state("t").filters.values()
    assert all(spec.value_key([f"v{i}"]) in f for i in range(1, 900, 2))
    assert len(f) <= 450 + f.stale_removes  # removes left undone only as stale positives
    assert db.verify_index("t", "lu")["ok"]


def test_verify_judges_each_local_index_alone_while_another_builds(backend, db):
    """verify_index of a ready local index while a second local index of the same table is
    mid-build (its per-region counts written, its filters not yet): no false negatives are
    charged to the ready one (issue 15)."""
    t = _table(db, rows=300, backend=backend)
    assert len(t.regions()) > 2
    reports = []

    def mid_build(done: int, total: int) -> None:
        if 0 < done < total and not reports:
            reports.append(db.verify_index("t", "lu"))

    db.create_index("t", "la", ["f:a"], local=True, progress=mid_build)
    assert reports, "the build reported no progress between its first and last region"
    report = reports[0]
    assert report["ok"] and report["routing"]["false_negatives"] == 0, report
    after = db.verify_index("t", "la")
    assert after["ok"] and after["routing"]["false_negatives"] == 0, after


def test_filter_bytes_round_trip_keeps_the_fill_of_every_slice():
    """Filters load by whole-buffer arithmetic (not a Python step per counter): the per-slice
    fill after from_bytes equals the live one, at every counter width."""
    from hibase.index.scbf import CountingBloomFilter, ScalableSCBF, SplitCountingBloomFilter
    rng = random.Random(1)
    for cls in (SplitCountingBloomFilter, CountingBloomFilter):
        for bits in range(1, 9):
            k = rng.randint(1, 6)
            f = cls(rng.randint(k, 3000), k, bits, seed=rng.randint(0, 99))
            for _ in range(rng.randint(0, 2000)):
                f.add(b"x%d" % rng.randint(0, 5000))
            for _ in range(rng.randint(0, 300)):
                f.remove(b"x%d" % rng.randint(0, 5000))
            g = cls.from_bytes(f.to_bytes())
            assert g._nonzero == f._nonzero and g.fill_ratio() == f.fill_ratio()
            assert g.to_bytes() == f.to_bytes()
    s = ScalableSCBF(500, 0.01)
    for i in range(3000):
        s.add(b"v%d" % i)
    t = ScalableSCBF.from_bytes(s.to_bytes())
    assert [f._nonzero for f in t.filters] == [f._nonzero for f in s.filters]


def test_reopen_decodes_only_the_filters_used_and_saves_the_rest_unchanged(db_path):
    """Reopening decodes a routing filter on first use (issue 15, item 6: decoding all of them
    made the first put after a reopen of thousands of regions take seconds); one put decodes
    only its region's filter, and the untouched ones are saved back byte for byte."""
    from hibase.index.local import routing_table
    from hibase.index.scbf import ScalableSCBF

    db = hibase.connect(db_path)
    _table(db)
    db.close()

    def saved(path):
        d = hibase.connect(path, read_only=True)
        try:
            return dict(d.store.kv_scan(routing_table("t"), b"f", b"g"))
        finally:
            d.close()

    first = saved(db_path)
    db = hibase.connect(db_path)
    try:
        router = db.indexer.router
        db.table("t").put(b"zz", {b"f:u": b"fresh"})
        filters = router.state("t").filters
        decoded = [k for k in filters.keys() if not isinstance(dict.__getitem__(filters, k),
                                                              bytes)]
        assert 1 <= len(decoded) < len(filters) and len(filters) > 4
        # every filter, decoded now, answers as the one saved
        for (rid, alias), blob in ((k, dict.__getitem__(filters, k)) for k in filters.keys()):
            if isinstance(blob, bytes):
                assert filters[(rid, alias)].to_bytes() == ScalableSCBF.from_bytes(
                    blob).to_bytes()
        _exact(db)
        assert [r for r, _ in db.table("t").where("f.u = 'fresh'")] == [b"zz"]
    finally:
        db.close()
    second = saved(db_path)
    assert first.keys() == second.keys()
    changed = [k for k in first if first[k] != second[k]]
    assert len(changed) == 1  # only the region the put went to
