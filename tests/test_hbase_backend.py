"""What only the HBase backend (hibase.connect("thrift://...")) has, against the Thrift1 gateway
over an embedded store: URL options, Thrift1's limits, plain happybase (not hibase's client) on
the same gateway as hibase, and Phoenix's verified write protocol under writers killed between
steps. Everything the two backends share runs on both in the other modules (conftest's
`backend` fixture)."""

from __future__ import annotations

import time

import happybase
import pytest

import hibase
from backends import TIMEOUT_MS, Backend
from hibase import errors
from hibase.index import verified
from hibase.server.thrift import ThriftServer
from hibase.store.hbase import HBaseStore, parse_url
from test_index_build import _flights


@pytest.fixture
def hbase(thrift_backend):
    """The thrift Backend: hbase.connect() opens another client of the same gateway."""
    return thrift_backend


# -- HBase backend only ------------------------------------------------------------------------
def test_url_options(tmp_path):
    assert parse_url("thrift://h") == {"host": "h", "port": 9090, "transport": "buffered",
                                       "protocol": "binary", "timeout": 30000, "pool_size": 8,
                                       "retries": 3, "deadline_ms": 60000,
                                       "region_check_ms": 1000,
                                       "catalog_lease_ms": 1000, "prefix": "",
                                       "thrift2_port": None, "tls": False, "tls_ca": None,
                                       "token": None, "server_upkeep": True,
                                       "scan_pushdown": True}
    assert parse_url("thrift://h?scan_pushdown=0")["scan_pushdown"] is False
    assert parse_url("thrift://h?prefix=t1")["prefix"] == "t1"
    # TLS: thrifts:// or tls=1 (hibase serve --tls-cert), a private CA, the gateway's token
    assert parse_url("thrifts://h")["tls"] and parse_url("thrift://h?tls=1")["tls"]
    o = parse_url("thrifts://h:9443?tls_ca=/ca.pem&token=s3")
    assert (o["port"], o["tls_ca"], o["token"]) == (9443, "/ca.pem", "s3")
    assert parse_url("thrift://h:9090?thrift2_port=9095")["thrift2_port"] == 9095
    o = parse_url("thrift://127.0.0.1:9091?transport=framed&protocol=compact&timeout=5000")
    assert (o["port"], o["transport"], o["protocol"], o["timeout"]) == (
        9091, "framed", "compact", 5000)
    for bad in ("thrift://h?transport=http", "thrift://h?protocol=json", "thrift://h?x=1",
                "thrift://h?timeout=0", "thrift://h/path", "thrift://h?region_check_ms=-1",
                "thrift://h?deadline_ms=-1",
                "thrift://h?catalog_lease_ms=-5", "thrift://h?prefix=a:b",
                "thrift://h?thrift2_port=0", "thrift://h?thrift2_port=70000",
                "thrift://h?thrift2_port=x", "thrift://h?tls=yes", "thrifts://h?tls=0",
                "thrift://h?tls_ca=/ca.pem", "http://h"):
        with pytest.raises(errors.InvalidArgument):
            parse_url(bad)
    with pytest.raises(errors.BackendUnavailable):
        hibase.connect("redis://h:6379")
    b = Backend("thrift", tmp_path / "framed", transport="framed", protocol="compact")
    try:
        db = hibase.connect(b.url + "&transport=framed&protocol=compact")
        db.create_table("t", {"f": {}})
        db.table("t").put(b"r", {b"f:a": b"1"})
        assert db.table("t").row(b"r") == {b"f:a": b"1"}
        db.close()
    finally:
        b.close()


def test_unreachable_gateway_fails_clearly(tmp_path):
    b = Backend("thrift", tmp_path / "store")
    db = hibase.connect(b.url + "&retries=1")
    db.create_table("t", {"f": {}})
    b.close()  # the gateway goes away
    with pytest.raises(errors.BackendUnavailable):
        db.table("t").row(b"r")
    db.close()
    with pytest.raises(errors.BackendUnavailable):
        hibase.connect(b.url)


def test_thrift1_limits(hbase):
    """Thrift1 has no split call: regions are HBase's to split; compaction is asked for."""
    db = hbase.connect()
    _flights(db, 9)
    with pytest.raises(errors.BackendError, match="no split"):
        db.split("flights", b"k005")
    assert isinstance(db.store, HBaseStore)
    db.compact_table("flights")
    assert db.table("flights").row(b"k001")[b"f:dest"] == b"SFO"


def test_plain_happybase_reads_what_hibase_wrote(hbase):
    db = hbase.connect()
    t = _flights(db, 12)
    db.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    host, port = hbase.server.address
    hb = happybase.Connection(host, port, timeout=TIMEOUT_MS)
    try:
        assert b"flights" in hb.tables() and b"hibase_meta" in hb.tables()
        assert hb.table("flights").row(b"k004") == t.row(b"k004")
        assert [k for k, _ in hb.table("flights").scan()] == [k for k, _ in t.scan()]
        # and hibase reads what happybase writes through the same gateway (not indexed: index
        # upkeep is hibase's client-side, as HBase without coprocessors)
        hb.table("flights").put(b"k100", {b"f:dest": b"IAH"})
        assert t.row(b"k100") == {b"f:dest": b"IAH"}
        idx = hb.table("hibase_kv__idx__flights")
        entries = [cells[b"v:v"] for _, cells in idx.scan(columns=[b"v:v"])]
        assert len(entries) == 12 and {e[:1] for e in entries} == {b"\x01"}  # verified
        # the value counts: family c of the same table, one cell per writer, summed
        counts = [sum(int.from_bytes(v, "big", signed=True) for v in cells.values())
                  for _, cells in idx.scan(columns=[b"c"])]
        assert counts == [4, 4, 4]  # IAH, JFK, SFO
    finally:
        hb.close()


def test_hibase_and_plain_happybase_read_alike(hbase):
    """Made by hibase (its catalog lists only its own tables), written by plain happybase
    (versions, deletes, counters, a batch), then read through the same gateway by happybase and
    by hibase's HBase backend with the same calls: the same answers."""
    db = hbase.connect()
    db.create_table("w", {"f": {"max_versions": 3}, "g": {"max_versions": 1}})
    t = db.table("w")
    hb = happybase.Connection(*hbase.address, timeout=TIMEOUT_MS)
    try:
        ht = hb.table("w")
        for ts in (10, 20, 30):
            ht.put(b"a", {b"f:x": b"x%d" % ts, b"g:y": b"y%d" % ts}, timestamp=ts)
        with ht.batch(batch_size=7) as b:
            for i in range(40):
                b.put(b"r\x00%02d" % i if i % 5 == 0 else b"r%02d" % i,
                      {b"f:n": b"%d" % i, b"g:e": b"even"} if i % 2 == 0 else {b"f:n": b"%d" % i})
            b.delete(b"r07")
        ht.delete(b"a", columns=[b"f:x"], timestamp=10)
        ht.counter_inc(b"c", b"f:hits", 5)
        assert t.families() == ht.families()
        assert t.regions() == ht.regions()
        calls = [
            lambda x: x.row(b"a"),
            lambda x: x.row(b"a", columns=[b"g"], include_timestamp=True),
            lambda x: x.row(b"a", timestamp=25),
            lambda x: x.cells(b"a", b"f:x", versions=5, include_timestamp=True),
            lambda x: x.rows([b"r03", b"missing", b"r\x0010", b"a"]),
            lambda x: x.counter_get(b"c", b"f:hits"),
            lambda x: list(x.scan()),
            lambda x: list(x.scan(row_start=b"r05", row_stop=b"r20", columns=[b"f:n"])),
            lambda x: list(x.scan(row_prefix=b"r\x00")),
            lambda x: list(x.scan(reverse=True, limit=9)),
            lambda x: list(x.scan(filter=b"SingleColumnValueFilter('g', 'e', =, 'binary:even')",
                                  batch_size=3)),
            lambda x: list(x.scan(timestamp=25, include_timestamp=True)),
        ]
        for n, call in enumerate(calls):
            assert call(t) == call(ht), n
    finally:
        hb.close()


def _truth(t, value):
    return sorted(k for k, cells in t.scan() if cells.get(b"f:dest") == value.encode())


@pytest.mark.parametrize("step", ["index", "data"])
@pytest.mark.parametrize("change", ["insert", "update", "delete", "covered"])
def test_writer_killed_between_steps(hbase, step, change):
    """Phoenix's protocol: a writer dying after the index step or after the data step leaves
    no wrong answer to any reader (a fresh client, and the writer's own connection), and
    verify --repair cleans what it left."""
    writer = hbase.connect()
    t = _flights(writer, 30)
    writer.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    # warm the writer's hot cache on the values involved
    for v in ("IAH", "SFO", "XXX"):
        t.where(f"f.dest = '{v}'", columns=[b"f:carrier"])
    writer.store.faults.arm(step)
    with pytest.raises(errors.BackendError, match="fault injection"):
        if change == "insert":
            t.put(b"new", {b"f:dest": b"XXX", b"f:carrier": b"N"})
        elif change == "update":
            t.put(b"k000", {b"f:dest": b"SFO"})  # IAH -> SFO
        elif change == "delete":
            t.delete(b"k003")  # an IAH row
        else:
            t.put(b"k006", {b"f:carrier": b"NEW"})  # IAH, covered value only
    writer.store.faults.arm(None)
    reader = hbase.connect()
    rt = reader.table("flights")
    for conn in (reader, writer):
        ct = conn.table("flights")
        for v in ("IAH", "SFO", "XXX"):
            got = conn.sql(f"SELECT f.carrier FROM flights WHERE f.dest = '{v}'")
            assert sorted(k for k, _ in got) == _truth(rt, v), (conn, v)
            assert dict(got) == {k: {b"f:carrier": d[b"f:carrier"]}
                                 for k, d in rt.rows([k for k, _ in got])}
            assert sorted(k for k, _ in ct.where(f"f.dest >= '{v}'")) == sorted(
                k for k, c in rt.scan() if c[b"f:dest"] >= v.encode())
            # answered from the value table's counts when they are exact
            assert conn.sql(f"SELECT COUNT(*) FROM flights WHERE f.dest = '{v}'") == [
                (len(_truth(rt, v)),)], (conn, v)
        assert conn.sql("SELECT MIN(f.dest), MAX(f.dest), COUNT(f.dest) FROM flights") == [
            (min(c[b"f:dest"] for _, c in rt.scan()).decode(),
             max(c[b"f:dest"] for _, c in rt.scan()).decode(), len(list(rt.scan())))]
    report = reader.verify_index("flights", "by_dest")
    assert not report["ok"]  # leftovers: unverified entries (and counts)
    assert reader.verify_index("flights", "by_dest", repair=True)["repaired"]
    assert reader.verify_index("flights", "by_dest")["ok"]
    for v in ("IAH", "SFO", "XXX"):
        got = reader.sql(f"SELECT * FROM flights WHERE f.dest = '{v}'")
        assert sorted(k for k, _ in got) == _truth(rt, v)
    # the writer carries on normally
    # (the reader's in-process cache does not see another client's writes: several clients
    # share a Redis cache, or run without one, as this third client)
    t.put(b"k001", {b"f:dest": b"XXX"})
    other = hbase.connect(cache_policy=None)
    for conn in (writer, other):
        assert b"k001" in {k for k, _ in conn.sql("SELECT * FROM flights WHERE f.dest = 'XXX'")}
    assert writer.verify_index("flights", "by_dest")["ok"]


def test_unverified_entries_are_resolved_not_trusted(hbase):
    """Index step done, data step not: the new value's entry is unverified and its data row
    disagrees, so it is skipped; the old value's entry (marked unverified) still matches the
    data row, so it is answered, with covered values read from the data row."""
    db = hbase.connect(cache_policy=None)
    t = _flights(db, 6)
    db.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    db.store.faults.arm("index")
    with pytest.raises(errors.BackendError):
        t.put(b"k000", {b"f:dest": b"XXX", b"f:carrier": b"Z"})
    db.store.faults.arm(None)
    # as readers take the entries (index/verified.py resolves unverified ones), and as stored
    raw = dict(verified.scan(db.store, "__idx__flights", db.indexer.specs("flights")))
    stored = dict(db.store.kv_scan("__idx__flights"))
    unverified = [k for k, v in stored.items() if v[:1] == b"\x00"]
    assert len(unverified) == 2  # k000 under IAH (old) and under XXX (new)
    assert len(raw) == len(stored) - 1  # the XXX one is skipped
    assert db.sql("SELECT f.carrier FROM flights WHERE f.dest = 'IAH'") == [
        (b"k000", {b"f:carrier": b"C0"}), (b"k003", {b"f:carrier": b"C3"})]
    assert db.sql("SELECT * FROM flights WHERE f.dest = 'XXX'") == []


def test_clients_sharing_a_redis_cache(hbase):
    """The cluster shape: two clients of one HBase sharing the hot cache in Redis; one's writes
    patch the sets the other reads, and a writer stopped mid-write drops the table's sets."""
    from servers import start_redis

    redis = start_redis()
    try:
        a = hbase.connect(cache=redis.url)
        b = hbase.connect(cache=redis.url)
        t = _flights(a, 12)
        a.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
        q = "SELECT f.carrier FROM flights WHERE f.dest = 'IAH'"
        assert b.sql(q) == a.sql(q) == b.sql(q)
        assert b.cache_stats()["hits"] >= 1
        t.put(b"k000", {b"f:dest": b"SFO"})
        assert b"k000" not in {k for k, _ in b.sql(q)}
        a.store.faults.arm("data")
        with pytest.raises(errors.BackendError):
            t.put(b"k003", {b"f:dest": b"SFO"})
        a.store.faults.arm(None)
        assert b"k003" not in {k for k, _ in b.sql(q)}
        assert sorted(k for k, _ in b.sql(q)) == _truth(b.table("flights"), "IAH")
    finally:
        redis.close()


def test_clients_see_each_others_indexes(hbase):
    """A client connected before another creates (or drops) an index maintains and uses it."""
    a = hbase.connect(cache_policy=None)
    t = _flights(a, 9)
    b = hbase.connect(cache_policy=None)
    bt = b.table("flights")
    a.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    bt.put(b"k000", {b"f:dest": b"XXX"})
    bt.put(b"k050", {b"f:dest": b"XXX", b"f:carrier": b"Q"})
    assert "INDEX by_dest" in b.explain("SELECT * FROM flights WHERE f.dest = 'XXX'")
    for conn in (a, b):
        assert conn.sql("SELECT f.carrier FROM flights WHERE f.dest = 'XXX'") == [
            (b"k000", {b"f:carrier": b"C0"}), (b"k050", {b"f:carrier": b"Q"})]
    assert a.verify_index("flights", "by_dest")["ok"]
    a.drop_index("flights", "by_dest")
    assert "FULL TABLE SCAN" in b.explain("SELECT * FROM flights WHERE f.dest = 'XXX'")
    bt.put(b"k001", {b"f:dest": b"XXX"})
    assert t.row(b"k001")[b"f:dest"] == b"XXX"


def test_cli_on_thrift_url_after_a_stopped_writer(hbase):
    """A writer stopped after the index step: `hibase query` on the URL answers right and
    `hibase index verify --repair` cleans the leftovers (the CLI's other commands run on both
    backends in test_cli_index)."""
    import json

    from click.testing import CliRunner

    from hibase.cli import cli

    db = hbase.connect(cache_policy=None)
    t = _flights(db, 9)
    db.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    db.store.faults.arm("index")
    with pytest.raises(errors.BackendError):
        t.put(b"k000", {b"f:dest": b"XXX"})
    runner = CliRunner()
    out = runner.invoke(cli, ["query", hbase.url, "--json",
                              "SELECT ROWKEY, f.carrier FROM flights WHERE f.dest = 'IAH'"])
    assert out.exit_code == 0, out.output
    assert [json.loads(line)["ROWKEY"] for line in out.output.splitlines()
            if line.startswith("{")] == ["k000", "k003", "k006"]
    report = db.verify_index("flights", "by_dest")
    # XXX's count grew, IAH's did not shrink: both left pending by the stopped writer
    assert not report["ok"] and report["bad_counts"] == report["pending_counts"] == 2, report
    out = runner.invoke(cli, ["index", "verify", hbase.url, "flights", "by_dest"])
    assert "wrong value-table counts 2 (2 pending: a write in flight or stopped" in out.output
    out = runner.invoke(cli, ["index", "verify", hbase.url, "flights", "by_dest", "--repair"])
    assert "repaired" in out.output.lower(), out.output
    report = db.verify_index("flights", "by_dest")
    assert report["ok"] and report["pending_counts"] == 0, report


_KILLED_WRITER = r"""
import os, signal, sys
import hibase
db = hibase.connect(sys.argv[1], cache_policy=None)
store, step = db.store, sys.argv[2]
send = store._send
def die(*_):
    os.kill(os.getpid(), signal.SIGKILL)
if step == "index":  # killed after the index step, before the data row
    store._send = die
else:  # killed after the data row, before the entries are marked verified
    store._send = lambda prepared: (send(prepared), die())
t = db.table("flights")
t.put(b"k000", {b"f:dest": b"SFO", b"f:carrier": b"K"})
"""


@pytest.mark.parametrize("step", ["index", "data"])
def test_writer_process_killed_between_steps(hbase, step):
    """A real writer process SIGKILLed between the protocol's steps; readers stay right."""
    import signal
    import subprocess
    import sys

    db = hbase.connect(cache_policy=None)
    t = _flights(db, 12)
    db.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, hbase.url, step],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    moved = step == "data"
    assert (t.row(b"k000")[b"f:dest"] == b"SFO") == moved
    for v in ("IAH", "SFO"):
        got = db.sql(f"SELECT f.carrier FROM flights WHERE f.dest = '{v}'")
        assert sorted(k for k, _ in got) == _truth(t, v)
        assert dict(got) == {k: {b"f:carrier": d[b"f:carrier"]}
                             for k, d in t.rows([k for k, _ in got])}
    assert not db.verify_index("flights", "by_dest")["ok"]
    db.verify_index("flights", "by_dest", repair=True)
    assert db.verify_index("flights", "by_dest")["ok"]


def test_regions_are_hbase_regions(hbase):
    """Regions come from HBase (here: the gateway's store, split there) with their region
    server; builds over them in worker processes are in test_index_build (both backends)."""
    db = hbase.connect()
    t = _flights(db, 90)
    hbase.gateway_db.split("flights", b"k030")
    hbase.gateway_db.split("flights", b"k060")
    regions = t.regions()
    assert [r["start_key"] for r in regions] == [b"", b"k030", b"k060"]
    host, port = hbase.address
    assert all(r["server_name"] == host.encode() and r["port"] == port for r in regions)
    assert regions == [dict(r, server_name=host.encode(), port=port)
                       for r in hbase.gateway_db.table("flights").regions()]


def test_transport_errors_are_retried(tmp_path):
    """The gateway restarts under a connected client: pooled connections are broken, the next
    calls reconnect and retry instead of failing."""
    gateway_db = hibase.connect(str(tmp_path / "gateway"))
    server = ThriftServer(gateway_db, port=0).__enter__()
    host, port = server.address
    db = hibase.connect(f"thrift://{host}:{port}?timeout=5000&pool_size=2&retries=5")
    try:
        db.create_table("t", {"f": {}}, columns={"f:a": "string"})
        t = db.table("t")
        t.put(b"r1", {b"f:a": b"x"})
        db.create_index("t", "ia", ["f:a"])
        server.__exit__(None, None, None)
        server = ThriftServer(gateway_db, port=port).__enter__()
        t.put(b"r2", {b"f:a": b"x"})
        assert [k for k, _ in t.scan()] == [b"r1", b"r2"]
        assert sorted(k for k, _ in t.where("f.a = 'x'")) == [b"r1", b"r2"]
    finally:
        db.close()
        server.__exit__(None, None, None)
        gateway_db.close()


def test_transient_hbase_errors_are_retried_within_the_deadline():
    """What HBase's Thrift server answers while a dead region server's regions wait for the
    master (NotServingRegionException, RetriesExhausted...) is sent again with backoff until
    deadline_ms; other errors at once, and an increment never (it may have been applied).
    tests/test_torture_regionservers.py kills real region servers."""
    import contextlib
    import types

    import Hbase_thrift
    from hibase.store.hbase.rpc import Rpc, transient

    moving = ("org.apache.hadoop.hbase.client.RetriesExhaustedException: Failed after "
              "attempts=16, exceptions:\n...\nCaused by: org.apache.hadoop.hbase."
              "NotServingRegionException: t,,1.abc. is not online on localhost,16020,1")
    assert transient(moving) and transient(b"java.net.ConnectException: Connection refused")
    assert not transient("org.apache.hadoop.hbase.TableNotFoundException: t")
    assert not transient("org.apache.hadoop.hbase.DoNotRetryIOException: bad filter")

    class Client:
        def __init__(self, fails: int, message: str):
            self.fails, self.message, self.calls = fails, message, 0

        def __getattr__(self, method):
            def call(*args):
                self.calls += 1
                if self.calls <= self.fails:
                    raise Hbase_thrift.IOError(message=self.message)
                return []
            return call

    def Store(client, deadline_s):
        """The store's Rpc over a scripted client (HBase cannot be made to answer these
        errors on cue; the region server kill tests see them for real)."""
        conn = types.SimpleNamespace(client=client)
        pool = types.SimpleNamespace(connection=lambda timeout: contextlib.nullcontext(conn))
        opts = {"host": "h", "port": 1, "timeout": 1000, "retries": 3,
                "deadline_ms": deadline_s * 1000}
        rpc = Rpc(opts, Hbase_thrift, pool, None, b"")
        rpc.client = client
        return rpc

    s = Store(Client(4, moving), deadline_s=10)
    assert s.call("getRows", b"t", [b"r"], {}) == [] and s.client.calls == 5 and s.retried == 4
    s = Store(Client(100, moving), deadline_s=0.5)
    t0 = time.monotonic()
    with pytest.raises(errors.BackendUnavailable, match="deadline_ms"):
        s.call("getRows", b"t", [b"r"], {})
    assert 0.3 < time.monotonic() - t0 < 2
    s = Store(Client(1, "org.apache.hadoop.hbase.TableNotFoundException: t"), deadline_s=10)
    with pytest.raises(errors.TableNotFound):
        s.call("getRows", b"t", [b"r"], {})
    s = Store(Client(1, moving), deadline_s=10)
    with pytest.raises(errors.BackendError):
        s.call("atomicIncrement", b"t", b"r", b"f:c", 1)
    assert s.client.calls == 1


def test_index_recreated_by_another_client_is_not_served_from_a_stale_cache(hbase):
    a = hbase.connect()
    t = _flights(a, 9)
    a.create_index("flights", "by_dest", ["f:dest"])
    b = hbase.connect()  # its own in-process cache
    q = "SELECT * FROM flights WHERE f.dest = 'IAH'"
    assert len(b.sql(q)) == len(b.sql(q)) == 3 and b.cache_stats()["hits"] >= 1
    # a's writes never patch b's in-process cache (clients share a Redis cache for that), but
    # a catalog change seen by b drops b's cached sets of the table
    a.drop_index("flights", "by_dest")
    t.put(b"k000", {b"f:dest": b"SFO"})
    a.create_index("flights", "by_dest", ["f:dest"])  # same name, same alias
    assert sorted(k for k, _ in b.sql(q)) == [b"k003", b"k006"]


def test_fault_points_are_named():
    """A misspelt fault step is refused rather than never firing."""
    from hibase.store.faults import Faults
    faults = Faults()
    with pytest.raises(errors.InvalidArgument, match="unknown fault step"):
        faults.arm("indexx")
    faults.arm("data")
    faults.reached("index")  # not armed for it: nothing happens
    with pytest.raises(errors.BackendError, match="fault injection"):
        faults.reached("data")


def test_an_existing_hbase_table_is_recorded_and_indexed(hb):
    """create_table(existing=True) records a table that HBase already holds, made and written
    by plain happybase (another program): its rows stay as they are, indexes build on them and
    answer exactly (issue 29, item 3)."""
    import happybase

    name = hb.hbase_name("orders")
    raw = happybase.Connection(*hb.address, timeout=60_000)
    try:
        raw.create_table(name, {"d": {"max_versions": 2}, "x": {}})
        t = raw.table(name)
        rows = {b"o%03d" % i: {b"d:city": [b"NY", b"SF", b"LA"][i % 3],
                                b"d:total": str(i * 1.5).encode(), b"x:note": b"n"}
                for i in range(60)}
        with t.batch() as b:
            for k, v in rows.items():
                b.put(k, v)
        db = hb.connect()
        with pytest.raises(errors.SchemaError, match="has no family 'zz'"):
            db.create_table("orders", ["zz"], existing=True)
        with pytest.raises(errors.ValueTypeError, match="not a long"):
            db.create_table("orders", ["d"], columns={"d:total": "long"}, existing=True)
        assert b"orders" not in db.tables()  # the refused declaration recorded nothing
        db.create_table("orders", ["d"], columns={"d:total": "double", "d:city": "string"},
                        existing=True)
        with pytest.raises(errors.TableExists):
            db.create_table("orders", ["d"], existing=True)
        fams = db.table("orders").families()
        assert set(fams) == {b"d", b"x"} and fams[b"d"]["max_versions"] == 2  # HBase's
        assert dict(db.table("orders").rows([b"o001"])) == {b"o001": rows[b"o001"]}
        db.create_index("orders", "by_city", ["d:city"], covering=["d:total"])
        got = db.sql("SELECT COUNT(*) FROM orders WHERE d.city = 'NY' AND d.total > 30")
        assert got == [(sum(1 for i in range(60) if i % 3 == 0 and i * 1.5 > 30),)]
        assert "by_city" in db.explain("SELECT * FROM orders WHERE d.city = 'NY'")
        assert db.verify_index("orders", "by_city")["ok"]
        db.delete_table("orders", disable=True)
    finally:
        raw.close()


def test_existing_is_refused_on_the_embedded_store(tmp_path):
    db = hibase.connect(str(tmp_path / "s"))
    with pytest.raises(errors.InvalidArgument, match="HBase already holds"):
        db.create_table("t", ["f"], existing=True)
    db.close()


def test_cluster_site_properties_go_into_hbase_site_and_are_kept(tmp_path):
    """HBaseCluster(site=...) writes the properties over hibase's own into hbase-site.xml
    (the test session's cluster asks for a 20 ms client pause this way) and records them, so
    a later HBaseCluster(DIR) starts with them again."""
    from hibase.cluster import HBaseCluster
    c = HBaseCluster(tmp_path, redis_nodes=0, site={"hbase.client.pause": 20,
                                                     "hbase.hregion.memstore.mslab.enabled":
                                                     "true"})
    c._write_conf()
    c._save_state({})
    conf = (tmp_path / "conf" / "hbase-site.xml").read_text()
    assert "<name>hbase.client.pause</name><value>20</value>" in conf.replace("\n", "").replace(
        " ", "")
    assert conf.count("hbase.hregion.memstore.mslab.enabled") == 1  # over hibase's own "false"
    # hibase's own: region open/close calls sent after 10 ms, not batched for 150 ms
    assert "hbase.procedure.remote.dispatcher.delay.msec" in conf
    assert HBaseCluster(tmp_path).site == {"hbase.client.pause": 20,
                                           "hbase.hregion.memstore.mslab.enabled": "true"}
