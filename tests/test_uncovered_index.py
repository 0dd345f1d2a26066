"""Uncovered indexes (Phoenix's CREATE UNCOVERED INDEX; IndexSpec.uncovered): entries carry no
values and a write stores each new entry once, in its final form, with no unverified mark and
no verified rewrite; readers on the verified protocol's stores check every entry against its
data row. Compared with a brute-force model on every backend (client-kept on [thrift], kept
by the region server's coprocessor on [hbase]), and what a writer stopped between its steps
or another program's put leaves."""

from __future__ import annotations

import os

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from hibase import errors
from hibase.index import verified
from hibase.index.spec import index_table

COLUMNS = {"f:a": "int", "f:b": "string", "g:c": "int"}
VALUES = [1, 2, 3]
# a small table and few examples on the HBase-protocol backends (each write is a round trip)
EXAMPLES = {"embedded": 40, "thrift": 8, "hbase": 6}


@pytest.fixture
def t(db):
    db.create_table("t", {"f": {}, "g": {}}, columns=COLUMNS)
    db.create_index("t", "by_a", ["f:a"], uncovered=True)
    db.create_index("t", "by_ab", ["f:a", "f:b"], uncovered=True)
    return db.table("t")


def test_definition(db, t):
    spec = db.indexer.catalog.get("t", "by_a")
    assert spec.uncovered and spec.covering == []
    assert {i["name"]: i["uncovered"] for i in db.indexes("t")} == {"by_a": True, "by_ab": True}
    with pytest.raises(errors.SchemaError, match="uncovered: its entries carry no values"):
        db.create_index("t", "bad", ["f:a"], covering=["f:b"], uncovered=True)
    with pytest.raises(errors.SchemaError, match="uncovered must be True or False"):
        db.create_index("t", "bad", ["f:a"], uncovered="yes")
    assert [i["name"] for i in db.indexes("t")] == ["by_a", "by_ab"]  # nothing half made


def test_sql_ddl_and_explain(db):
    db.sql("CREATE TABLE s (k VARCHAR PRIMARY KEY, f.a INTEGER, f.b VARCHAR)")
    db.sql("UPSERT INTO s VALUES ('r1', 1, 'x')")
    db.sql("UPSERT INTO s VALUES ('r2', 2, 'y')")
    db.sql("CREATE UNCOVERED INDEX s_a ON s (f.a)")
    assert db.indexes("s")[0]["uncovered"] is True
    plan = db.explain("SELECT f.b FROM s WHERE f.a = 2")
    assert "INDEX s_a" in plan and "FULL TABLE SCAN" not in plan
    assert db.sql("SELECT f.b FROM s WHERE f.a = 2") == [("r2", {b"f:b": "y"})]
    with pytest.raises(errors.QuerySyntaxError, match="UNCOVERED INDEX includes no columns"):
        db.sql("CREATE UNCOVERED INDEX s_b ON s (f.a) INCLUDE (f.b)")


def _answer(db, where: str) -> list[bytes]:
    return sorted(r for r, _ in db.sql(f"SELECT * FROM t WHERE {where}"))


_op = st.tuples(st.sampled_from(["put_a", "put_b", "put_c", "del_a", "del_row"]),
                st.integers(0, 5), st.sampled_from(VALUES), st.sampled_from(["x", "y"]))


def test_property_matches_a_model(backend, db, t):
    """Random puts, updates and deletes of indexed and other cells; every lookup, range and
    count through the uncovered indexes equals the model's; verify finds nothing wrong."""
    examples = int(os.environ.get("HIBASE_PROPERTY_EXAMPLES", EXAMPLES[backend.kind]))

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(_op, max_size=14))
    def run(ops):
        for row, _ in list(t.scan()):
            t.delete(row)
        model: dict[bytes, dict[bytes, bytes]] = {}
        for op, i, a, b in ops:
            row = b"r%d" % i
            if op == "del_row":
                t.delete(row)
                model.pop(row, None)
                continue
            if op == "del_a":
                t.delete(row, columns=[b"f:a"])
                if row in model:
                    model[row].pop(b"f:a", None)
                    if not model[row]:
                        del model[row]
                continue
            col, val = {"put_a": (b"f:a", str(a)), "put_b": (b"f:b", b),
                        "put_c": (b"g:c", str(a))}[op]
            t.put(row, {col: val.encode()})
            model.setdefault(row, {})[col] = val.encode()
        for a in VALUES:
            want = sorted(r for r, c in model.items() if c.get(b"f:a") == str(a).encode())
            assert _answer(db, f"f.a = {a}") == want
            assert db.sql(f"SELECT COUNT(*) FROM t WHERE f.a = {a}") == [(len(want),)]
            for b in ("x", "y"):
                assert _answer(db, f"f.a = {a} AND f.b = '{b}'") == sorted(
                    r for r in want if model[r].get(b"f:b") == b.encode())
        assert _answer(db, "f.a >= 2") == sorted(
            r for r, c in model.items() if int(c.get(b"f:a", b"0")) >= 2)
        for name in ("by_a", "by_ab"):
            assert db.verify_index("t", name)["ok"], name

    run()


def test_entries_are_written_once_in_final_form(hb):
    """On the HBase protocol's stores (the client's three phases on [thrift], the region
    server's on [hbase]) an uncovered entry is stored verified with no values: nothing is left
    unverified for recovery or verify to resolve."""
    db = hb.connect(cache_policy=None)
    db.create_table("t", {"f": {}, "g": {}}, columns=COLUMNS)
    db.create_index("t", "by_a", ["f:a"], uncovered=True)
    t = db.table("t")
    t.put(b"r1", {b"f:a": b"1", b"f:b": b"x"})
    t.put(b"r1", {b"f:a": b"2"})  # moves r1: its old entry goes
    t.put(b"r2", {b"f:a": b"2"})
    stored = dict(db.store.kv_scan(index_table("t")))
    spec = db.indexer.catalog.get("t", "by_a")
    entries = {spec.split_entry(k)[1]: v for k, v in stored.items()
               if k[:2] == spec.alias}
    assert sorted(entries) == [b"r1", b"r2"]
    assert set(entries.values()) == {verified.VERIFIED + b"\x90"}  # msgpack([]) = 0x90
    assert _answer(db, "f.a = 2") == [b"r1", b"r2"] and _answer(db, "f.a = 1") == []


def test_writer_stopped_before_its_data_leaves_no_wrong_answer(thrift_backend):
    """The client writes an uncovered entry in its final form before the data: a writer that
    stops after that step leaves an entry its row does not produce, which readers skip (they
    check every uncovered entry), and verify --repair deletes."""
    db = thrift_backend.connect(cache_policy=None)
    db.create_table("t", {"f": {}, "g": {}}, columns=COLUMNS)
    db.create_index("t", "by_a", ["f:a"], uncovered=True)
    t = db.table("t")
    t.put(b"r1", {b"f:a": b"1"})
    db.store.faults.arm("index")
    with pytest.raises(errors.BackendError, match="fault injection"):
        t.put(b"r1", {b"f:a": b"2"})
    db.store.faults.arm(None)
    assert _answer(db, "f.a = 2") == []  # the new entry is there, its row says 1
    assert _answer(db, "f.a = 1") == [b"r1"]  # the old entry was not touched
    assert not db.verify_index("t", "by_a")["ok"]
    assert db.verify_index("t", "by_a", repair=True)["repaired"]
    assert db.verify_index("t", "by_a")["ok"]


def test_another_programs_put_is_found(backend, db, t):
    """A put hibase did not make (plain happybase on [hbase]: the coprocessor keeps the index;
    elsewhere such a write bypasses every index, so there is nothing to check)."""
    if backend.kind != "hbase":
        pytest.skip("only real HBase's coprocessor keeps indexes on writes hibase did not make")
    t.put(b"r1", {b"f:a": b"1"})
    backend.foreign_put(db, "t", b"r2", {b"f:a": b"1", b"f:b": b"z"})
    backend.foreign_put(db, "t", b"r1", {b"f:a": b"3"})
    assert _answer(db, "f.a = 1") == [b"r2"]
    assert _answer(db, "f.a = 3") == [b"r1"]
    assert _answer(db, "f.a = 1 AND f.b = 'z'") == [b"r2"]
    assert db.verify_index("t", "by_ab")["ok"]
