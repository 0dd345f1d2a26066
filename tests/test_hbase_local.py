"""Local indexes on the HBase backend, where regions split on the server and Thrift1 tells no
client: the recorded layout follows HBase's splits (store/hbase/layout.py), a split stopped
half way is finished by the next client, and SCBF routing stays exact when another client
changes the filters. Here "HBase" is the Thrift1 gateway; its store splits on request
(gateway_db.split), as HBase splits by size or from its shell."""

from __future__ import annotations

import random

import pytest

import hibase
from hibase import errors
from hibase.index import local
from hibase.index.lookup import key_range
from hibase.server.thrift import ThriftServer


@pytest.fixture
def gateway(tmp_path):
    """(gateway's embedded connection, thrift:// URL that follows splits on every call)."""
    gateway_db = hibase.connect(str(tmp_path / "gateway"))
    server = ThriftServer(gateway_db, port=0).__enter__()
    try:
        yield gateway_db, "thrift://%s:%d?timeout=10000&region_check_ms=0" % server.address
    finally:
        server.__exit__(None, None, None)
        gateway_db.close()


def _load(db, rows: int = 300, seed: int = 1) -> dict[bytes, int]:
    db.create_table("t", {"f": {}}, columns={"f:a": "int", "f:b": "string"})
    t = db.table("t")
    rng = random.Random(seed)
    model: dict[bytes, int] = {}
    for _ in range(rows):
        row, a = b"r%04d" % rng.randrange(1000), rng.randrange(10)
        t.put(row, {b"f:a": b"%d" % a, b"f:b": b"x"})
        model[row] = a
    db.create_index("t", "la", ["f:a"], covering=["f:b"], local=True)
    return model


def _check(db, model: dict[bytes, int]) -> None:
    t = db.table("t")
    for a in range(10):
        assert sorted(r for r, _ in t.where(f"f.a = {a}")) == \
            sorted(r for r, v in model.items() if v == a)
    assert sorted(r for r, _ in t.where("f.a > 3")) == \
        sorted(r for r, v in model.items() if v > 3)


def test_layout_follows_server_side_splits(gateway):
    """Each split HBase makes is found on the next write or query: the local rows move under
    the new region's start, queries stay exact, verify finds nothing to repair."""
    gw, url = gateway
    db = hibase.connect(url)
    model = _load(db)
    rng = random.Random(2)
    for at in (b"r0500", b"r0200", b"r0800", b"r0201"):
        gw.split("t", at)
        for _ in range(40):
            row, a = b"r%04d" % rng.randrange(1000), rng.randrange(10)
            db.table("t").put(row, {b"f:a": b"%d" % a, b"f:b": b"y"})
            model[row] = a
        _check(db, model)
    assert [r.start for r in db.store.regions("t")] == \
        [b"", b"r0200", b"r0201", b"r0500", b"r0800"]
    report = db.verify_index("t", "la")
    assert report["ok"], report
    assert report["routing"]["false_negatives"] == 0
    plan = db.explain("SELECT * FROM t WHERE f.a = 3")
    assert "of 5 region(s)" in plan
    db.close()


@pytest.mark.parametrize("step", ["split-copy", "split-switch"])
def test_split_stopped_half_way_is_finished_by_the_next_client(gateway, step):
    """A client dies while applying a split (after copying the rows, or after switching the
    layout): meanwhile another client's queries are exact, and its next write finishes it."""
    gw, url = gateway
    db = hibase.connect(url)
    model = _load(db)
    gw.split("t", b"r0500")
    db.store.faults.arm(step)
    with pytest.raises(errors.BackendError, match="fault injection"):
        db.table("t").put(b"r0001", {b"f:a": b"4"})
    reader = hibase.connect(url, read_only=True)  # reads, never finishes the split
    assert reader.store.meta_value(b"split/t") is not None
    _check(reader, model)  # the half-applied split is not seen as a wrong answer
    spec = reader.indexer.catalog.get("t", "la")
    for a in range(10):  # index entries themselves, without the query's de-duplication
        rows = [r for r, _ in local.scan_entries(reader.store, spec, [key_range(spec, [a])],
                                                 reader.indexer.router)]
        assert rows == sorted(r for r, v in model.items() if v == a)
    reader.close()
    other = hibase.connect(url)
    other.table("t").put(b"r0002", {b"f:a": b"6"})
    assert other.store.meta_value(b"split/t") is None
    model[b"r0002"] = 6
    _check(other, model)
    assert other.verify_index("t", "la")["ok"]
    other.close()
    db.store.faults.arm(None)
    db.close()


def test_routing_sees_another_clients_values(gateway):
    """Two clients with routing filters in memory: a value one writes into a region is found
    by the other's routed lookup (the shared generation makes it reload), never skipped."""
    gw, url = gateway
    a = hibase.connect(url)
    model = _load(a)
    gw.split("t", b"r0500")
    b = hibase.connect(url)
    _check(b, model)  # b's filters are loaded now
    a.table("t").put(b"r0900", {b"f:a": b"77", b"f:b": b"new"})
    assert [r for r, _ in b.table("t").where("f.a = 77")] == [b"r0900"]
    b.table("t").delete(b"r0900")
    assert [r for r, _ in a.table("t").where("f.a = 77")] == []
    a.table("t").put(b"r0100", {b"f:a": b"78"})
    assert [r for r, _ in b.table("t").where("f.a = 78")] == [b"r0100"]
    assert a.verify_index("t", "la")["ok"] and b.verify_index("t", "la")["ok"]
    a.close()
    b.close()


def test_local_writes_follow_the_verified_protocol(gateway):
    """Local-index rows are index rows: a writer stopped after the index step leaves entries
    readers check against the data row (no wrong row), and verify --repair cleans them."""
    _, url = gateway
    db = hibase.connect(url)
    model = _load(db)
    db.store.faults.arm("index")
    with pytest.raises(errors.BackendError, match="fault injection"):
        db.table("t").put(b"r0003", {b"f:a": b"55"})
    db.store.faults.arm(None)
    assert [r for r, _ in db.table("t").where("f.a = 55")] == []
    _check(db, model)
    assert not db.verify_index("t", "la")["ok"]
    assert db.verify_index("t", "la", repair=True)["repaired"]
    assert db.verify_index("t", "la")["ok"]
    db.close()


def test_dropping_the_last_local_index_returns_to_hbase_regions(gateway):
    """While a local index exists, regions() is the recorded layout (followed); once the last
    one is dropped, HBase's regions again, splits included."""
    gw, url = gateway
    db = hibase.connect(url)
    model = _load(db)
    gw.split("t", b"r0500")
    _check(db, model)
    assert [r["start_key"] for r in db.table("t").regions()] == [b"", b"r0500"]
    db.drop_index("t", "la")
    assert db.store.meta_value(b"regions/t") is None
    gw.split("t", b"r0300")
    assert [r["start_key"] for r in db.table("t").regions()] == [b"", b"r0300", b"r0500"]
    db.create_index("t", "la", ["f:a"], local=True)  # records the layout again, as it is now
    gw.split("t", b"r0700")
    _check(db, model)
    assert [r.start for r in db.store.regions("t")] == [b"", b"r0300", b"r0500", b"r0700"]
    assert db.verify_index("t", "la")["ok"]
    db.close()
