"""Tables with a TTL (issue 37, item 3: "hibase answers what HBase shows").

HBase expires a cell once its timestamp is older than its family's TTL; the index entries and
the value-table counts written for that cell do not expire by themselves. Before this, 50 rows
with a 6 s TTL were gone from a scan 10 s later while COUNT(*) still answered 50, an indexed
WHERE returned rows that no longer exist and verify reported every entry as extra.

Each test writes rows whose cells are already close to expiry (explicit timestamps just inside
the TTL), waits for them to expire, and checks every indexed kind of answer against a full scan
of the table at that moment (full_scan=True: the same query without any index or value table):
COUNT(*), point / range / covered / IN lookups, a composite index, GROUP BY and MIN / MAX /
ORDER BY on indexed columns, IS NULL, and verify. HBase's TTL is per cell, so rows whose
indexed cell expired while others live, and the reverse, are in the data too.

On [hbase] every test runs twice: indexes kept by hibase's coprocessor in the region servers
(the session cluster loads it) and kept by the client (server_upkeep=0)."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from hibase.cli import cli
from hibase.codec import prefix_successor
from hibase.index.spec import index_table

TTL = 3  # seconds; rows meant to expire are written 1.5 s in the past, so they go in 1.5 s
# (a put must reach HBase before its cells expire: 0.4 s was too short on a loaded machine)
COLUMNS = {"f:state": "string", "f:n": "int", "f:note": "string"}


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture(params=["default", "client"])
def upkeep(request, backend):
    """Who keeps the indexes: the backend's default ("default": the coprocessor on [hbase],
    the client elsewhere) or, on [hbase], the client ("client": server_upkeep=0)."""
    if backend.kind != "hbase" and request.param == "client":
        pytest.skip("the client keeps this backend's indexes: the [default] run is this test")
    return request.param


@pytest.fixture
def ttl_db(backend, upkeep):
    """A Connection on the run's backend; client-kept indexes on [hbase] for upkeep=client."""
    if backend.kind == "hbase" and upkeep == "client":
        backend.url += "&server_upkeep=0"  # as tests/test_routing.py
    return backend.connect()


def _make(db) -> None:
    """Table t (family f with the TTL, family g without) and its indexes: by_state (covering
    f:note, with a NULL list), by_n, composite by_state_n."""
    db.create_table("t", {"f": {"time_to_live": TTL, "max_versions": 1}, "g": {}},
                    columns=COLUMNS)
    db.create_index("t", "by_state", ["f:state"], covering=["f:note"])
    db.create_index("t", "by_n", ["f:n"])
    db.create_index("t", "by_state_n", ["f:state", "f:n"])


def _write(db) -> None:
    """20 rows that expire soon (r00-r19), 10 that live on (r20-r29), and rows whose cells
    expire one by one (HBase's TTL is per cell); returns when the soon ones have expired.
    Each row's cells that expire are its last write, 1.5 s before they expire, so every
    write happens before any expiry (the orphan test covers writes after one)."""
    t = db.table("t")
    # cells meant to live are stamped a minute ahead, so however long the queries take on
    # real HBase, nothing but the old cells expires during the test
    new = now_ms() + 60_000
    for i in range(20, 30):
        t.put(b"r%02d" % i, _row(i), timestamp=new)
    t.put(b"s1", {b"f:n": b"100"}, timestamp=new)
    t.put(b"s2", {b"f:state": b"open", b"f:n": b"101"}, timestamp=new)
    t.put(b"s3", {b"f:state": b"open"}, timestamp=new)
    t.put(b"s4", {b"g:x": b"kept"}, timestamp=new)
    for i in range(20):
        t.put(b"r%02d" % i, _row(i), timestamp=_soon())
    # the indexed cell expires, another cell of the row lives on: the row exists, state NULL
    t.put(b"s1", {b"f:state": b"open", b"f:note": b"old note"}, timestamp=_soon())
    # the covered cell expires, the indexed one lives: found, with no note
    t.put(b"s2", {b"f:note": b"gone"}, timestamp=_soon())
    # the composite's second column expires: (open, NULL) now
    t.put(b"s3", {b"f:n": b"7"}, timestamp=_soon())
    # every f cell expires, a cell of g (no TTL) keeps the row: in the NULL list of by_state
    last = _soon()
    t.put(b"s4", {b"f:state": b"closed", b"f:n": b"8"}, timestamp=last)
    _wait_expiry(last)


def _row(i: int) -> dict[bytes, bytes]:
    return {b"f:state": b"open" if i % 2 else b"closed", b"f:n": b"%d" % i,
            b"f:note": b"note%d" % i}


def _soon() -> int:
    """A timestamp whose cells expire 1.5 s from now."""
    return now_ms() - TTL * 1000 + 1500


def _wait_expiry(ts: int) -> None:
    """Sleep until cells stamped `ts` have expired."""
    wait = ts + TTL * 1000 + 150 - now_ms()
    if wait > 0:
        time.sleep(wait / 1000)


QUERIES = [
    "SELECT COUNT(*) FROM t",
    "SELECT COUNT(*) FROM t WHERE f.state = 'open'",
    "SELECT COUNT(f.state) FROM t",
    "SELECT ROWKEY, f.state, f.n FROM t WHERE f.state = 'open'",            # point
    "SELECT ROWKEY FROM t WHERE f.n >= 5 AND f.n < 40",                     # range
    "SELECT ROWKEY, f.note FROM t WHERE f.state = 'open'",                  # covered
    "SELECT ROWKEY FROM t WHERE f.state IN ('open', 'closed')",             # IN
    "SELECT ROWKEY FROM t WHERE f.n IN (3, 7, 8, 21, 22, 100)",             # IN, many points
    "SELECT ROWKEY FROM t WHERE f.state = 'open' AND f.n = 7",              # composite
    "SELECT ROWKEY FROM t WHERE f.state = 'open' AND f.n > 20",
    "SELECT ROWKEY FROM t WHERE f.state IS NULL",                           # NULL list
    "SELECT f.state, COUNT(*) FROM t GROUP BY f.state",
    "SELECT f.state, COUNT(*), SUM(f.n) FROM t WHERE f.state = 'open' GROUP BY f.state",
    "SELECT MIN(f.n), MAX(f.n) FROM t",
    "SELECT ROWKEY FROM t ORDER BY f.n LIMIT 3",
    "SELECT ROWKEY FROM t ORDER BY f.n DESC NULLS LAST LIMIT 3",
    "SELECT DISTINCT f.state FROM t",
]


def _answer(db, q: str, **kw) -> list:
    return sorted(db.sql(q, **kw), key=repr) if "ORDER BY" not in q else db.sql(q, **kw)


def _scan_rows(db) -> list[bytes]:
    return [row for row, _ in db.table("t").scan()]


def test_expired_rows_leave_every_indexed_answer(ttl_db, backend):
    """After expiry every query answers what a full scan of the table shows (COUNT(*) 14, not
    34; the expired rows' entries and counts are not answers), and verify finds no difference
    (the entries of expired cells are not counted as extra; `hibase index verify` says OK and
    what the TTL left)."""
    db = ttl_db
    _make(db)
    _write(db)
    live = _scan_rows(db)
    assert live == [b"r%02d" % i for i in range(20, 30)] + [b"s1", b"s2", b"s3", b"s4"]
    for q in QUERIES:
        assert _answer(db, q) == _answer(db, q, full_scan=True), q
    assert _scan_rows(db) == live  # nothing else expired meanwhile
    assert db.sql("SELECT COUNT(*) FROM t") == [(14,)]
    assert db.sql("SELECT COUNT(*) FROM t WHERE f.state = 'open'") == [(7,)]  # 5 r's, s2, s3
    assert sorted(db.sql("SELECT ROWKEY, f.note FROM t WHERE f.state = 'open'")) == [
        *[(b"r%02d" % i, {b"f:note": f"note{i}"}) for i in range(21, 30, 2)],
        (b"s2", {}), (b"s3", {})]
    assert sorted(r for r, _ in db.sql("SELECT * FROM t WHERE f.state IS NULL")) == [
        b"s1", b"s4"]
    for name in ("by_state", "by_n", "by_state_n"):
        report = db.verify_index("t", name)
        assert report["ok"], report
        assert (report["missing"], report["extra"], report["wrong_covered"],
                report["bad_counts"]) == (0, 0, 0, 0), report
        assert report["expired"] > 0 and report["entries"] == {
            "by_state": 14, "by_n": 14, "by_state_n": 14}[name], report
    db.close()  # the embedded store has one writer: the command opens it (read-only)
    r = CliRunner().invoke(cli, ["index", "verify", backend.url, "t", "by_state"])
    assert r.exit_code == 0, r.output
    assert "14 expected entries; OK" in r.output, r.output
    assert "TTL: 23 row(s) with entries of expired cells" in r.output, r.output


def test_writes_after_expiry_leave_no_wrong_answer(ttl_db):
    """A write to a row after some of its cells expired: upkeep reads the row as it is now and
    no longer sees the entry of the expired value, which stays behind (an orphan), and a value
    written again after its cell expired is counted twice. Neither is an answer (rows are
    checked, counts not used) and verify reports both as expiry's, not as differences."""
    db = ttl_db
    _make(db)
    t = db.table("t")
    last = _soon()
    t.put(b"o1", {b"f:state": b"open", b"f:n": b"1"}, timestamp=last)
    t.put(b"o2", {b"f:state": b"open", b"f:n": b"2"}, timestamp=last)
    t.put(b"o3", {b"f:state": b"closed", b"f:n": b"3"}, timestamp=last)
    _wait_expiry(last)
    new = now_ms() + 60_000
    t.put(b"o1", {b"f:note": b"after"}, timestamp=new)       # NULL state now: orphan 'open'
    t.put(b"o2", {b"f:state": b"open"}, timestamp=new)       # 'open' again: counted twice
    t.put(b"o3", {b"f:state": b"open", b"f:n": b"3"}, timestamp=new)  # orphan 'closed'
    assert _scan_rows(db) == [b"o1", b"o2", b"o3"]
    for q in QUERIES:
        assert _answer(db, q) == _answer(db, q, full_scan=True), q
    assert sorted(db.sql("SELECT f.state, COUNT(*) FROM t GROUP BY f.state"), key=repr) == [
        ("open", 2), (None, 1)]
    assert db.sql("SELECT COUNT(*) FROM t WHERE f.state = 'open'") == [(2,)]
    for name in ("by_state", "by_n", "by_state_n"):
        report = db.verify_index("t", name)
        assert report["ok"], report
    report = db.verify_index("t", "by_state", repair=True)
    # o1's entry outlived its state (the embedded store's upkeep reads expired cells as
    # the row's old values, HBase's does not: there o3's 'closed' entry is orphaned too)
    assert report["ok"] and report["repaired"] and report["expired"] >= 1, report
    after = db.verify_index("t", "by_state")
    assert (after["expired"], after["stale_counts"]) == (0, 0), after


def test_local_index_after_expiry(ttl_db):
    """A local index (per-region entries and counts) answers what a scan shows too: its
    entries are candidates and its verify reports expiry apart."""
    db = ttl_db
    db.create_table("t", {"f": {"time_to_live": TTL, "max_versions": 1}, "g": {}},
                    columns=COLUMNS)
    db.create_index("t", "loc_state", ["f:state"], covering=["f:note"], local=True)
    _write(db)
    for q in ("SELECT ROWKEY, f.note FROM t WHERE f.state = 'open'",
              "SELECT COUNT(*) FROM t WHERE f.state IN ('open', 'closed')",
              "SELECT f.state, COUNT(*) FROM t WHERE f.state = 'closed' GROUP BY f.state"):
        assert "LOCAL INDEX loc_state" in db.explain(q), db.explain(q)
        assert _answer(db, q) == _answer(db, q, full_scan=True), q
    assert db.sql("SELECT COUNT(*) FROM t WHERE f.state = 'open'") == [(7,)]
    report = db.verify_index("t", "loc_state")
    assert report["ok"] and report["expired"] > 0, report


def test_explain_says_counts_and_entries_are_checked(ttl_db):
    """EXPLAIN of a table with a TTL says why rows are fetched and counted: the index only
    finds candidates (its entries may outlive their cells) and the value table is not used."""
    db = ttl_db
    _make(db)
    plan = db.explain("SELECT ROWKEY, f.note FROM t WHERE f.state = 'open'")
    assert "INDEX by_state" in plan and "FETCH rows from table" in plan
    assert "COVERED" not in plan
    assert "NOTE index by_state holds cells with a TTL" in plan, plan
    assert "answers candidates (TTL" in plan, plan
    plan = db.explain("SELECT COUNT(*) FROM t WHERE f.state = 'open'")
    assert "value table, index ends and index order of by_state" in plan, plan
    assert "STREAMING AGGREGATE" in plan, plan
    plan = db.explain("SELECT * FROM t WHERE f.state IS NULL")
    assert "FULL TABLE SCAN" in plan and "NULL list of index by_state not used" in plan, plan


def test_repair_drops_expired_entries_and_counts(ttl_db):
    """verify --repair removes what expired (entries and their counts), so the index does not
    keep growing with dead entries; answers are the same before and after."""
    db = ttl_db
    _make(db)
    _write(db)
    before = {q: _answer(db, q) for q in QUERIES}
    report = db.verify_index("t", "by_state", repair=True)
    # r00-r19, s1 (state), s2 (note), s4 (every f cell); s3's by_state entry is as it was
    # (only its f:n expired, which by_state does not hold)
    assert report["ok"] and report["expired"] == 23 and report["repaired"], report
    spec = db.indexer.catalog.get("t", "by_state")
    rows = sorted(spec.split_entry(k)[1] for alias in spec.aliases
                  for k, _ in db.store.kv_scan(index_table(spec.table), alias,
                                               prefix_successor(alias)))
    assert rows == sorted(_scan_rows(db))  # one entry per live row (NULL list included)
    assert db.verify_index("t", "by_state")["expired"] == 0
    for q in QUERIES:
        assert _answer(db, q) == before[q], q


def test_existing_reports_the_ttl(backend, tmp_path):
    """`hibase create-table URL T --existing` on a table whose family has a TTL says so, and
    what hibase does about it."""
    if backend.kind == "embedded":
        pytest.skip("--existing records HBase tables")
    import happybase
    host, port = backend.address if backend.kind == "thrift" else (
        "127.0.0.1", backend.cluster.thrift_port)
    raw = happybase.Connection(host, port, timeout=60_000)
    try:
        raw.create_table(backend.hbase_name("legacy"), {"f": {"time_to_live": 2}, "g": {}})
    finally:
        raw.close()
    r = CliRunner().invoke(cli, ["create-table", backend.url, "legacy", "--existing"])
    assert r.exit_code == 0, r.output
    assert "Recorded existing table 'legacy'" in r.output
    assert "family f expires cells after 2 s (TTL)" in r.output, r.output
    assert "family g" not in r.output, r.output  # no TTL: nothing to say
    assert "value table" in r.output, r.output  # what hibase does about it
