"""HBase's Thrift2 `getScannerResults` (open, read n rows, close: one call), spoken raw to the
gateway's Thrift2 side and to real HBase's Thrift2 server, with the same expectations: real
HBase is the reference the gateway answers like."""

from __future__ import annotations

import itertools
import re
import signal
import subprocess
import sys

import happybase
import pytest

from hibase.server.thrift import ThriftServer
from hibase.store.hbase.thrift2 import Thrift2Pool, cells_of, scan_of

_names = itertools.count()


@pytest.fixture(params=["thrift", "hbase"])
def servers(request, embedded_db):
    """(happybase connection, Thrift2 pool, table name) on the gateway or on real HBase."""
    if request.param == "hbase":
        cluster = request.getfixturevalue("hbase_cluster")
        ports = cluster.thrift_port, cluster.thrift2_port
        gateways = []
    else:
        gateways = [ThriftServer(embedded_db, port=0).__enter__(),
                    ThriftServer(embedded_db, port=0, interface="thrift2").__enter__()]
        ports = gateways[0].address[1], gateways[1].address[1]
    conn = happybase.Connection("127.0.0.1", ports[0], timeout=60_000)
    pool = Thrift2Pool("127.0.0.1", ports[1], 2, 60_000)
    name = f"thrift2_{next(_names)}"
    conn.create_table(name, {"f": {}, "g": {}})
    t = conn.table(name)
    for i in range(30):
        t.put(b"r%02d" % i, {b"f:a": b"%d" % i, b"f:b": b"x", b"g:c": b"y"}, timestamp=100 + i)
    t.put(b"r05", {b"f:a": b"new"}, timestamp=1000)  # a newer version of one cell
    try:
        yield conn, pool, name
    finally:
        conn.delete_table(name, disable=True)
        conn.close()
        pool.close()
        for g in reversed(gateways):
            g.__exit__(None, None, None)


def _scan(pool, name, start=None, stop=None, columns=None, ts=None, reverse=False, n=100):
    scan = scan_of(pool.idl, start, stop, columns, ts, reverse, n)
    return [(r.row, cells_of(r)) for r in pool.call("getScannerResults", name.encode(), scan, n)]


def test_get_scanner_results_answers_like_real_hbase(servers):
    conn, pool, name = servers
    rows = _scan(pool, name, b"r03", b"r07")
    assert [r for r, _ in rows] == [b"r03", b"r04", b"r05", b"r06"]
    assert rows[2][1] == {b"f:a": (1000, b"new"), b"f:b": (105, b"x"), b"g:c": (105, b"y")}
    # numRows caps the answer; the scan ends there
    assert [r for r, _ in _scan(pool, name, n=3)] == [b"r00", b"r01", b"r02"]
    # columns: a family (b"g"), one column (b"f:a")
    got = _scan(pool, name, b"r10", b"r12", columns=[b"g", b"f:a"])
    assert got == [(b"r10", {b"f:a": (110, b"10"), b"g:c": (110, b"y")}),
                   (b"r11", {b"f:a": (111, b"11"), b"g:c": (111, b"y")})]
    # a time range [0, ts): the version older than ts, as a Thrift1 scanner with a timestamp
    assert _scan(pool, name, b"r05", b"r06", columns=[b"f:a"], ts=1000) == \
        [(b"r05", {b"f:a": (105, b"5")})]
    # reversed: from the start row down to (not including) the stop row
    assert [r for r, _ in _scan(pool, name, b"r04", b"r01", reverse=True)] == \
        [b"r04", b"r03", b"r02"]
    # an empty range and a missing table
    assert _scan(pool, name, b"zz", None) == []
    with pytest.raises(pool.idl.TIOError):
        _scan(pool, name + "_missing")
    # the same rows as a Thrift1 scanner of the same server
    want = [(k, {c: v for c, v in d.items()}) for k, d in conn.table(name).scan(
        row_start=b"r00", row_stop=b"r30")]
    assert [(r, {c: v for c, (_, v) in cells.items()}) for r, cells in _scan(pool, name)] == want


def test_serve_command_with_a_thrift2_port(tmp_path):
    """`hibase serve --thrift --thrift2-port`: both sides over one store, the URL to use
    printed; a covered lookup through it is one Thrift2 call; SIGTERM stops both."""
    import hibase

    proc = subprocess.Popen(
        [sys.executable, "-m", "hibase", "serve", "--thrift", "--port", "0", "--thrift2-port",
         "0", str(tmp_path / "store")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        proc.stdout.readline()
        m = re.search(r"hibase clients: (thrift://\S+)", proc.stdout.readline())
        assert m, proc.stderr.read()
        url = m.group(1)
        with hibase.connect(url + "&catalog_lease_ms=0") as admin:
            admin.create_table("t", {"f": {}}, columns={"f:a": "string", "f:b": "string"})
            t = admin.table("t")
            for i in range(20):
                t.put(b"r%02d" % i, {b"f:a": b"v%d" % (i % 4), b"f:b": b"w%d" % i})
            admin.create_index("t", "by_a", ["f:a"], covering=["f:b"])
        with hibase.connect(url + "&catalog_lease_ms=60000", cache_policy=None) as db:
            t = db.table("t")
            list(t.where("f.a = 'v0'"))  # the first query checks the catalog's generation
            before = db.stats()["store_calls"]
            got = list(t.where("f.a = 'v1'", columns=[b"f:b"]))
            after = db.stats()["store_calls"]
            assert {k: n - before.get(k, 0) for k, n in after.items()
                    if n != before.get(k, 0)} == {"getScannerResults": 1}
            assert [k for k, _ in got] == [b"r01", b"r05", b"r09", b"r13", b"r17"]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Stopped; store closed." in err
