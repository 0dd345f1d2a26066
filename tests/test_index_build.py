"""Index creation, queries through indexes, batch build over regions in worker processes,
interrupted builds, verify and repair, bulk loads; on both backends."""

from __future__ import annotations

import warnings

import pytest

from hibase import codec

from hibase.index import verified
from hibase.index.spec import BUILDING


def _table(backend, db, rows=3000):
    """Table t over several regions: the embedded store splits it by size as it grows; HBase
    splits its own regions, so on thrift the gateway's store splits it at the same rows."""
    db.create_table("t", {"f": {}}, columns={"f:a": "int", "f:s": "string"},
                    split_size=16 * 1024)
    t = db.table("t")
    with t.batch(batch_size=500) as b:
        for i in range(rows):
            b.put(b"r%05d" % i, {b"f:a": str(i % 37).encode(), b"f:s": b"s%d" % (i % 11),
                                 b"f:x": b"x"})
    if backend.remote:
        for i in range(rows // 6, rows, rows // 6):
            backend.split("t", b"r%05d" % i)
    assert len(t.regions()) > (4 if rows >= 3000 else 1)
    return t


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
    plan = db.explain("SELECT f.carrier FROM flights WHERE f.dest = 'JFK'")
    assert "INDEX by_dest" in plan and "COVERED" in plan
    assert "FULL TABLE SCAN" in db.explain("SELECT * FROM flights WHERE f.delay = 3")
    assert db.sql("SELECT * FROM flights WHERE ROWKEY = 'k001'") == [
        (b"k001", {b"f:dest": "SFO", b"f:delay": 1.0, b"f:carrier": b"C1"})]  # declared: typed
    assert db.sql("SELECT * FROM flights WHERE f.dest = 'IAH'", full_scan=True) == \
        db.sql("SELECT * FROM flights WHERE f.dest = 'IAH'")


def test_parallel_build_in_worker_processes_equals_serial(backend, db):
    t = _table(backend, db)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a worker falling back to in-process would warn
        info = db.create_index("t", "ia", ["f:a", "f:s"], covering=["f:x"], processes=2)
    assert info["state"] == "ready"
    assert db.verify_index("t", "ia")["ok"]
    parallel = db.sql("SELECT f.x FROM t WHERE f.a = 5")
    db.build_index("t", "ia", processes=1)
    assert db.sql("SELECT f.x FROM t WHERE f.a = 5") == parallel
    assert sorted(r for r, _ in parallel) == sorted(
        r for r, d in t.scan() if d[b"f:a"] == b"5")


def test_interrupted_build_is_not_used_and_rerun_repairs(backend, db):
    t = _table(backend, db, 500)
    db.create_index("t", "ia", ["f:a"])
    spec = db.indexer.catalog.get("t", "ia")
    # an interrupted build leaves the index "building" with partial contents
    db.indexer.catalog.set_state(spec, BUILDING)
    db.indexer.catalog.clear(spec)
    assert "INDEX ia" not in t.explain("f.a = 3")
    assert len(list(t.where("f.a = 3"))) == len([1 for _, d in t.scan() if d[b"f:a"] == b"3"])
    db.build_index("t", "ia")
    assert "INDEX ia" in t.explain("f.a = 3")
    assert db.verify_index("t", "ia")["ok"]


def test_verify_reports_and_repairs_damage(backend, db):
    _table(backend, db, 300)
    db.create_index("t", "ia", ["f:a"])
    spec = db.indexer.catalog.get("t", "ia")
    entries = list(db.store.kv_scan("__idx__t", spec.alias))
    db.store.commit([], [("__idx__t", entries[0][0], None),
                         ("__idx__t", spec.entry_key([999], b"ghost"),
                          verified.stored(db.store, b"\x90"))])
    report = db.verify_index("t", "ia")
    assert not report["ok"] and report["missing"] == 1 and report["extra"] == 1
    assert report["examples"]["extra"] == [b"ghost"]
    assert db.verify_index("t", "ia", repair=True)["repaired"]
    assert db.verify_index("t", "ia")["ok"]


def test_bulk_load_suspends_upkeep_then_rebuilds(db):
    db.create_table("t", {"f": {}}, columns={"f:a": "int"})
    t = db.table("t")
    t.put(b"r0", {b"f:a": b"1"})
    db.create_index("t", "ia", ["f:a"])
    db.create_index("t", "la", ["f:a"], local=True)
    with db.bulk_load("t") as names:
        assert sorted(names) == ["ia", "la"]
        assert {i["state"] for i in db.indexes("t")} == {"stale"}
        for i in range(1, 200):
            t.put(b"r%03d" % i, {b"f:a": str(i % 5).encode()})
        assert "INDEX" not in t.explain("f.a = 1")  # stale indexes are not used...
        assert len(list(t.where("f.a = 1"))) == 41  # ...and answers stay exact
        spec = db.indexer.catalog.get("t", "ia")
        assert len(list(db.store.kv_scan("__idx__t", spec.alias))) == 1  # upkeep was off
    assert {i["state"] for i in db.indexes("t")} == {"ready"}
    assert db.verify_index("t", "ia")["ok"] and db.verify_index("t", "la")["ok"]
    assert "INDEX" in t.explain("f.a = 1")
    assert len(list(t.where("f.a = 1"))) == 41


def test_cli_load_bulk(backend, tmp_path):
    from click.testing import CliRunner

    from hibase.cli import cli

    store = backend.url
    db = backend.connect()
    db.create_table("t", {"f": {}}, columns={"f:a": "int"})
    db.create_index("t", "ia", ["f:a"])
    db.close()
    src = tmp_path / "in.csv"
    src.write_text("id,a\n" + "".join(f"k{i},{i % 3}\n" for i in range(300)))
    result = CliRunner().invoke(cli, ["load", store, "t", str(src), "--rowkey-column", "id",
                                      "-f", "f", "--bulk", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "Rebuilt 1 index(es): ia." in result.output
    db = backend.connect()
    assert db.verify_index("t", "ia")["ok"]
    assert len(db.sql("SELECT * FROM t WHERE f.a = 2")) == 100
    db.close()


@pytest.mark.parametrize("processes", [1, 2])
def test_bulk_rebuild_of_several_indexes_equals_row_by_row_upkeep(embedded_db, processes):
    """A bulk load's rebuild reads the table once for all its indexes (build_indexes), in
    worker processes over regions or in this one: every index ends with the entries and
    counts the upkeep of row-by-row writes gives, and answers the same."""
    db = embedded_db
    indexes = [("ia", ["f:a"], None), ("ibc", ["f:b", "f:c"], ["f:d"]), ("ic", ["f:c"], None)]
    rows = {b"r%04d" % i: {b"f:a": b"%d" % (i % 7), b"f:b": b"%d" % (i % 3),
                           b"f:c": b"c%d" % (i % 11), b"f:d": b"%d" % i}
            for i in range(600)}
    for i in range(0, 600, 9):  # some rows without an indexed cell (NULL lists)
        del rows[b"r%04d" % i][b"f:a"]
        del rows[b"r%04d" % i][b"f:c"]
    for name in ("rowwise", "bulk"):
        db.create_table(name, {"f": {}}, columns={"f:a": "int", "f:b": "int",
                                                  "f:c": "string", "f:d": "int"})
        for idx, cols, include in indexes:
            db.create_index(name, idx, cols, covering=include)
    t = db.table("rowwise")
    for key, cells in rows.items():
        t.put(key, cells)
    b = db.table("bulk")
    b.put(b"r0001", {b"f:a": b"99"})  # overwritten by the load
    db.split("bulk", b"r0300")
    with db.bulk_load("bulk", processes=processes) as names:
        assert sorted(names) == ["ia", "ibc", "ic"]
        with b.batch() as batch:
            for key, cells in rows.items():
                batch.put(key, cells)
    assert {i["state"] for i in db.indexes("bulk")} == {"ready"}
    for idx, _, _ in indexes:
        assert db.verify_index("bulk", idx)["ok"]
        want, got = (db.indexer.catalog.get(n, idx) for n in ("rowwise", "bulk"))
        for kv in ("__idx__", "__val__"):
            for a_alias, b_alias in zip(want.aliases, got.aliases):
                assert [(k[len(a_alias):], v) for k, v in db.store.kv_scan(
                    kv + "rowwise", a_alias, codec.prefix_successor(a_alias))] == \
                    [(k[len(b_alias):], v) for k, v in db.store.kv_scan(
                        kv + "bulk", b_alias, codec.prefix_successor(b_alias))]
    for where in ("f.a = 3", "f.a IS NULL", "f.b = 2 AND f.c = 'c4'", "f.c = 'c10'",
                  "f.c IS NULL"):
        assert "INDEX" in b.explain(where), where
        assert list(b.where(where)) == list(t.where(where)), where
