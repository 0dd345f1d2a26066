"""The HBase backend (hibase.connect("thrift://...")) against the Thrift1 gateway over an
embedded store, next to the embedded backend: the same test bodies on both (a parametrized
fixture), plus what only the HBase backend has: URL options, Thrift1's limits, plain happybase
reading what hibase wrote, and Phoenix's verified protocol under a writer killed between steps.
"""

from __future__ import annotations

import itertools
import os
import struct

import happybase
import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import hibase
from hibase import errors
from hibase.server.thrift import ThriftServer
from hibase.store.hbase import HBaseStore, parse_url

from test_query_property import COLUMNS, apply_ops, brute_force, conditions, ops

TIMEOUT_MS = 10_000


class Backend:
    """A way to open connections to one store: embedded (a folder) or thrift (a gateway)."""

    def __init__(self, kind: str, tmp_path, **gateway_kw):
        self.kind = kind
        self.path = str(tmp_path / "store")
        self.server = None
        self.gateway_db = None
        self.opened: list = []
        if kind == "thrift":
            self.gateway_db = hibase.connect(str(tmp_path / "gateway"))
            self.server = ThriftServer(self.gateway_db, port=0, **gateway_kw).__enter__()
            host, port = self.server.address
            self.url = f"thrift://{host}:{port}?timeout={TIMEOUT_MS}"
        else:
            self.url = self.path

    def connect(self, **kw) -> hibase.Connection:
        db = hibase.connect(self.url, **kw)
        self.opened.append(db)
        return db

    def close(self) -> None:
        for db in self.opened:
            if not db.store.closed:
                db.close()
        if self.server is not None:
            self.server.__exit__(None, None, None)
            self.gateway_db.close()


@pytest.fixture(params=["embedded", "thrift"])
def backend(request, tmp_path):
    b = Backend(request.param, tmp_path)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def hbase(tmp_path):
    b = Backend("thrift", tmp_path)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def db(backend):
    return backend.connect()


@pytest.fixture
def table(db):
    db.create_table("t", {"f": {}, "g": {"max_versions": 1}})
    return db.table("t")


# -- the store through the happybase API ----------------------------------------------------------
def test_put_row_rows_scan(table):
    table.put(b"r1", {b"f:a": b"1", b"f:b": b"x", b"g:c": b"y"})
    table.put(b"r2", {b"f:a": b"2"})
    table.put(b"r\x00", {b"f:a": b"z"})
    assert table.row(b"r1") == {b"f:a": b"1", b"f:b": b"x", b"g:c": b"y"}
    assert table.row(b"r1", columns=[b"f:a", b"g"]) == {b"f:a": b"1", b"g:c": b"y"}
    assert table.row(b"nope") == {}
    assert table.rows([b"r2", b"nope", b"r1"], columns=[b"f:a"]) == [
        (b"r2", {b"f:a": b"2"}), (b"r1", {b"f:a": b"1"})]
    assert [k for k, _ in table.scan()] == [b"r\x00", b"r1", b"r2"]
    assert [k for k, _ in table.scan(row_start=b"r1")] == [b"r1", b"r2"]
    assert [k for k, _ in table.scan(row_stop=b"r2")] == [b"r\x00", b"r1"]
    assert [k for k, _ in table.scan(row_prefix=b"r1")] == [b"r1"]
    assert [k for k, _ in table.scan(reverse=True)] == [b"r2", b"r1", b"r\x00"]
    assert [k for k, _ in table.scan(limit=2)] == [b"r\x00", b"r1"]
    assert list(table.scan(columns=[b"g"])) == [(b"r1", {b"g:c": b"y"})]
    assert list(table.scan(filter=b"SingleColumnValueFilter('f', 'a', =, 'binary:2')")) == [
        (b"r2", {b"f:a": b"2"})]


def test_many_rows_scan_in_chunks(table):
    with table.batch() as b:
        for i in range(2500):
            b.put(b"k%05d" % i, {b"f:a": b"%d" % i})
    keys = [k for k, _ in table.scan()]
    assert keys == [b"k%05d" % i for i in range(2500)]
    rev = [k for k, _ in table.scan(reverse=True)]
    assert rev == keys[::-1]
    assert len(table.rows(keys[::7])) == len(keys[::7])


def test_delete_and_versions(table):
    table.put(b"r", {b"f:a": b"v1"}, timestamp=10)
    table.put(b"r", {b"f:a": b"v2"}, timestamp=20)
    table.put(b"r", {b"f:a": b"v3", b"f:b": b"b", b"g:c": b"c"}, timestamp=30)
    assert table.cells(b"r", b"f:a") == [b"v3", b"v2", b"v1"]
    assert table.cells(b"r", b"f:a", versions=2, include_timestamp=True) == [
        (b"v3", 30), (b"v2", 20)]
    assert table.row(b"r", timestamp=25) == {b"f:a": b"v2"}
    assert table.row(b"r", include_timestamp=True)[b"f:a"] == (b"v3", 30)
    table.delete(b"r", columns=[b"f:a"], timestamp=20)  # versions <= 20
    assert table.cells(b"r", b"f:a") == [b"v3"]
    table.delete(b"r", columns=[b"f:b"])
    assert table.row(b"r") == {b"f:a": b"v3", b"g:c": b"c"}
    table.delete(b"r", columns=[b"g"])
    assert table.row(b"r") == {b"f:a": b"v3"}
    table.delete(b"r")
    assert table.row(b"r") == {}
    assert list(table.scan()) == []


def test_batch_counters_families_regions(db, table):
    with table.batch(timestamp=5) as b:
        b.put(b"a", {b"f:x": b"1"})
        b.put(b"b", {b"f:x": b"2"})
        b.delete(b"a")
    assert [k for k, _ in table.scan()] == [b"b"]
    assert table.row(b"b", include_timestamp=True) == {b"f:x": (b"2", 5)}
    with pytest.raises(ValueError):
        with table.batch(transaction=True) as b:
            b.put(b"c", {b"f:x": b"3"})
            raise ValueError
    assert table.row(b"c") == {}
    assert table.counter_inc(b"n", b"f:c") == 1
    assert table.counter_inc(b"n", b"f:c", 10) == 11
    assert table.counter_dec(b"n", b"f:c", 2) == 9
    assert table.counter_get(b"n", b"f:c") == 9
    assert table.row(b"n")[b"f:c"] == struct.pack(">q", 9)
    fams = table.families()
    assert set(fams) == {b"f", b"g"} and fams[b"g"]["max_versions"] == 1
    regions = table.regions()
    assert len(regions) == 1 and regions[0]["start_key"] == b"" and regions[0]["end_key"] == b""
    assert db.tables() == [b"t"]
    db.disable_table("t")
    assert not db.is_table_enabled("t")
    with pytest.raises(errors.TableDisabled):
        table.row(b"b")
    db.enable_table("t")
    assert table.row(b"b") == {b"f:x": b"2"}
    db.delete_table("t", disable=True)
    assert db.tables() == []
    with pytest.raises(errors.TableNotFound):
        db.table("t")


def test_reopen_sees_catalog(backend):
    db = backend.connect()
    db.create_table("t", {"f": {}}, columns={"f:n": "int"})
    db.table("t").put(b"r", {b"f:n": b"5"})
    db.create_index("t", "by_n", ["f:n"])
    db.close()
    db2 = backend.connect()
    assert db2.tables() == [b"t"]
    assert db2.table("t").schema.columns[b"f:n"].name == "int"
    assert [i["name"] for i in db2.indexes("t")] == ["by_n"]
    assert db2.sql("SELECT * FROM t WHERE f.n = 5") == [(b"r", {b"f:n": b"5"})]
    with pytest.raises(errors.ValueTypeError):
        db2.table("t").put(b"r", {b"f:n": b"x"})


# -- indexes and SQL ---------------------------------------------------------------------------
def _flights(db, n=60):
    db.create_table("flights", {"f": {}}, columns={"f:delay": "double", "f:dest": "string"})
    t = db.table("flights")
    with t.batch() as b:
        for i in range(n):
            b.put(b"k%03d" % i, {b"f:dest": [b"IAH", b"SFO", b"JFK"][i % 3],
                                 b"f:delay": str(i).encode(), b"f:carrier": b"C%d" % (i % 7)})
    return t


def test_index_create_query_verify(db):
    t = _flights(db)
    spec = db.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    assert spec["state"] == "ready"
    db.create_index("flights", "by_delay", ["f:delay"])
    got = sorted(k for k, _ in t.where("f.dest = 'IAH'"))
    assert got == [b"k%03d" % i for i in range(0, 60, 3)]
    got = t.where("f.dest = 'SFO' AND f.delay BETWEEN 10 AND 20", columns=[b"f:carrier"])
    assert sorted(got) == [(b"k%03d" % i, {b"f:carrier": b"C%d" % (i % 7)})
                           for i in (10, 13, 16, 19)]
    t.put(b"k000", {b"f:dest": b"SFO"})
    t.delete(b"k003")
    assert b"k000" not in {k for k, _ in t.where("f.dest = 'IAH'")}
    assert b"k003" not in {k for k, _ in t.where("f.dest = 'IAH'")}
    assert b"k000" in {k for k, _ in t.where("f.dest = 'SFO'")}
    for name in ("by_dest", "by_delay"):
        assert db.verify_index("flights", name)["ok"]
    assert db.build_index("flights", "by_dest")["rows_indexed"] == 59
    db.drop_index("flights", "by_delay")
    assert [i["name"] for i in db.indexes("flights")] == ["by_dest"]
    assert sorted(k for k, _ in t.where("f.delay > 57")) == [b"k058", b"k059"]


def test_sql_and_explain(db):
    _flights(db)
    db.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    rows = db.sql("SELECT f.carrier FROM flights WHERE f.dest = 'JFK' AND f.delay > 50 LIMIT 5")
    assert rows == [(b"k%03d" % i, {b"f:carrier": b"C%d" % (i % 7)}) for i in (53, 56, 59)]
    plan = db.sql("EXPLAIN SELECT f.carrier FROM flights WHERE f.dest = 'JFK'")
    assert "INDEX by_dest" in plan and "COVERED" in plan
    assert "FULL TABLE SCAN" in db.sql("EXPLAIN SELECT * FROM flights WHERE f.delay = 3")
    assert db.sql("SELECT * FROM flights WHERE ROWKEY = 'k001'") == [
        (b"k001", {b"f:dest": b"SFO", b"f:delay": b"1", b"f:carrier": b"C1"})]
    assert db.sql("SELECT * FROM flights WHERE f.dest = 'IAH'", full_scan=True) == \
        db.sql("SELECT * FROM flights WHERE f.dest = 'IAH'")


_example = itertools.count()


@settings(max_examples=int(os.environ.get("HIBASE_HBASE_PROPERTY_EXAMPLES", "12")),
          deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                HealthCheck.too_slow])
@given(ops=ops, conds=st.lists(conditions, min_size=1, max_size=3),
       method=st.sampled_from(["auto", "scan", "walk"]))
def test_queries_equal_brute_force(db, ops, conds, method):
    """The property test of test_query_property on a smaller scale, on both backends (one
    store per backend, a fresh table per example)."""
    name = f"p{next(_example)}"
    db.create_table(name, {"f": {"max_versions": 2}, "g": {}}, columns=COLUMNS)
    table = db.table(name)
    db.create_index(name, "ia", ["f:a"], covering=["f:b"])
    db.create_index(name, "ibc", ["f:b", "f:c"])
    db.create_index(name, "id", ["g:d"], covering=["f:a", "f:c"])
    apply_ops(table, ops)
    types = table.schema.columns
    for cond in conds:
        expected = brute_force(table, cond, types)
        got = [row for row, _ in table.where(cond, range_method=method)]
        assert sorted(got) == expected, (cond, table.explain(cond))
        assert len(got) == len(set(got)), cond
    for index in ("ia", "ibc", "id"):
        assert db.verify_index(name, index)["ok"]


# -- HBase backend only ------------------------------------------------------------------------
def test_url_options(tmp_path):
    assert parse_url("thrift://h") == {"host": "h", "port": 9090, "transport": "buffered",
                                       "protocol": "binary", "timeout": 30000, "pool_size": 8,
                                       "retries": 3}
    o = parse_url("thrift://127.0.0.1:9091?transport=framed&protocol=compact&timeout=5000")
    assert (o["port"], o["transport"], o["protocol"], o["timeout"]) == (
        9091, "framed", "compact", 5000)
    for bad in ("thrift://h?transport=http", "thrift://h?protocol=json", "thrift://h?x=1",
                "thrift://h?timeout=0", "thrift://h/path"):
        with pytest.raises(errors.InvalidArgument):
            parse_url(bad)
    with pytest.raises(errors.BackendUnavailable):
        hibase.connect("redis://h:6379")
    b = Backend("thrift", tmp_path, transport="framed", protocol="compact")
    try:
        db = hibase.connect(b.url + "&transport=framed&protocol=compact")
        db.create_table("t", {"f": {}})
        db.table("t").put(b"r", {b"f:a": b"1"})
        assert db.table("t").row(b"r") == {b"f:a": b"1"}
        db.close()
    finally:
        b.close()


def test_unreachable_gateway_fails_clearly(tmp_path):
    b = Backend("thrift", tmp_path)
    db = hibase.connect(b.url + "&retries=1")
    db.create_table("t", {"f": {}})
    b.close()  # the gateway goes away
    with pytest.raises(errors.BackendUnavailable):
        db.table("t").row(b"r")
    db.close()
    with pytest.raises(errors.BackendUnavailable):
        hibase.connect(b.url)


def test_thrift1_limits(hbase):
    db = hbase.connect()
    _flights(db, 9)
    with pytest.raises(errors.SchemaError, match="Thrift1"):
        db.create_index("flights", "loc", ["f:dest"], local=True)
    assert db.indexes("flights") == []
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
        # and hibase reads (and indexes) what happybase writes through the same gateway
        hb.table("flights").put(b"k100", {b"f:dest": b"IAH"})
        assert t.row(b"k100") == {b"f:dest": b"IAH"}
        assert hb.table("hibase_kv__idx__flights").scan().__next__()[1][b"v:v"][:1] == b"\x01"
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
    writer.store.fail_after = step
    with pytest.raises(errors.BackendError, match="fault injection"):
        if change == "insert":
            t.put(b"new", {b"f:dest": b"XXX", b"f:carrier": b"N"})
        elif change == "update":
            t.put(b"k000", {b"f:dest": b"SFO"})  # IAH -> SFO
        elif change == "delete":
            t.delete(b"k003")  # an IAH row
        else:
            t.put(b"k006", {b"f:carrier": b"NEW"})  # IAH, covered value only
    writer.store.fail_after = None
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
    db.store.fail_after = "index"
    with pytest.raises(errors.BackendError):
        t.put(b"k000", {b"f:dest": b"XXX", b"f:carrier": b"Z"})
    db.store.fail_after = None
    raw = dict(db.store.kv_scan("__idx__flights"))
    with db.store.raw_index():
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
        a.store.fail_after = "data"
        with pytest.raises(errors.BackendError):
            t.put(b"k003", {b"f:dest": b"SFO"})
        a.store.fail_after = None
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
    assert "INDEX by_dest" in b.sql("EXPLAIN SELECT * FROM flights WHERE f.dest = 'XXX'")
    for conn in (a, b):
        assert conn.sql("SELECT f.carrier FROM flights WHERE f.dest = 'XXX'") == [
            (b"k000", {b"f:carrier": b"C0"}), (b"k050", {b"f:carrier": b"Q"})]
    assert a.verify_index("flights", "by_dest")["ok"]
    a.drop_index("flights", "by_dest")
    assert "FULL TABLE SCAN" in b.sql("EXPLAIN SELECT * FROM flights WHERE f.dest = 'XXX'")
    bt.put(b"k001", {b"f:dest": b"XXX"})
    assert t.row(b"k001")[b"f:dest"] == b"XXX"


def test_cli_on_thrift_url(hbase):
    """The command line takes a thrift:// URL where it takes a store folder."""
    import json

    from click.testing import CliRunner

    from hibase.cli import cli

    db = hbase.connect(cache_policy=None)
    t = _flights(db, 9)
    db.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"])
    db.store.fail_after = "index"
    with pytest.raises(errors.BackendError):
        t.put(b"k000", {b"f:dest": b"XXX"})
    runner = CliRunner()
    out = runner.invoke(cli, ["query", hbase.url, "--json",
                              "SELECT f.carrier FROM flights WHERE f.dest = 'IAH'"])
    assert out.exit_code == 0, out.output
    assert [json.loads(line)["row"] for line in out.output.splitlines()
            if line.startswith("{")] == ["k000", "k003", "k006"]
    assert not db.verify_index("flights", "by_dest")["ok"]
    out = runner.invoke(cli, ["index", "verify", hbase.url, "flights", "by_dest", "--repair"])
    assert "repaired" in out.output.lower(), out.output
    assert db.verify_index("flights", "by_dest")["ok"]


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


def test_parallel_build_over_hbase_regions(hbase):
    """Regions come from HBase (here: the gateway's store, split there); a build with worker
    processes reads them through Thrift and equals the serial build."""
    import warnings

    db = hbase.connect()
    t = _flights(db, 90)
    hbase.gateway_db.split("flights", b"k030")
    hbase.gateway_db.split("flights", b"k060")
    regions = t.regions()
    assert [r["start_key"] for r in regions] == [b"", b"k030", b"k060"]
    host, port = hbase.server.address
    assert all(r["server_name"] == host.encode() and r["port"] == port for r in regions)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to an in-process build
        built = db.create_index("flights", "by_dest", ["f:dest"], covering=["f:carrier"],
                                processes=2)
    assert built["state"] == "ready"
    assert db.verify_index("flights", "by_dest")["ok"]
    assert sorted(k for k, _ in t.where("f.dest = 'JFK'")) == [b"k%03d" % i
                                                               for i in range(2, 90, 3)]


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
