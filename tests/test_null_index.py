"""IS NULL answered by a global index's NULL list (index/spec.py): which rows have an entry,
its value-table count, EXPLAIN, upkeep on every write path, the hot cache, build and verify /
repair, on both backends. (The property tests compare IS NULL queries with brute force too.)"""

from __future__ import annotations

import pytest

from hibase.index.spec import decode_count
from hibase.index.spec import IndexSpec, index_table, value_table

COLUMNS = {"f:a": "int", "f:b": "string", "g:c": "int"}


def _null_rows(db, table: str = "t", column: str = "f.a") -> list[bytes]:
    return sorted(r for r, _ in db.sql(f"SELECT * FROM {table} WHERE {column} IS NULL"))


def _null_count(db, spec: IndexSpec) -> int:
    raw = db.store.kv_get(value_table(spec.table), [spec.null_alias])[0]
    return decode_count(raw) if raw else 0


def _null_entries(db, spec: IndexSpec) -> list[bytes]:
    from hibase.codec import prefix_successor
    return [k[2:] for k, _ in db.store.kv_scan(index_table(spec.table), spec.null_alias,
                                                prefix_successor(spec.null_alias))]


@pytest.fixture
def t(db):
    db.create_table("t", {"f": {}, "g": {}}, columns=COLUMNS)
    return db.table("t")


def test_rows_lacking_the_column_are_listed_and_counted(db, t):
    t.put(b"r1", {b"f:a": b"1", b"f:b": b"x"})
    t.put(b"r2", {b"f:b": b"y"})            # lacks f:a in the same family
    t.put(b"r3", {b"g:c": b"5"})            # no cell at all in f's family: still a row
    t.put(b"r4", {b"f:a": b"2"})
    t.put(b"r5", {b"f:a": b"9"})
    t.delete(b"r5")                          # deleted: no row, no entry
    db.create_index("t", "by_a", ["f:a"], covering=["f:b"])
    spec = db.indexer.catalog.get("t", "by_a")
    assert spec.null_alias is not None and spec.null_alias != spec.alias
    assert _null_entries(db, spec) == [b"r2", b"r3"]
    assert _null_count(db, spec) == 2
    plan = db.explain("SELECT * FROM t WHERE f.a IS NULL")
    assert "INDEX by_a (f:a) NULL LIST POINT LOOKUP" in plan
    assert "est. 2 row(s)" in plan and "answers f:a IS NULL" in plan
    assert "FULL TABLE SCAN" not in plan
    assert _null_rows(db) == [b"r2", b"r3"]
    # covered: f.b comes from the entry, no row read
    plan = db.explain("SELECT f.b FROM t WHERE f.a IS NULL")
    assert "COVERED" in plan
    assert sorted(db.sql("SELECT f.b FROM t WHERE f.a IS NULL")) == [
        (b"r2", {b"f:b": "y"}), (b"r3", {})]
    # IS NOT NULL keeps the index's own range, which never reaches the NULL list
    assert sorted(r for r, _ in db.sql("SELECT * FROM t WHERE f.a IS NOT NULL")) == [
        b"r1", b"r4"]


def test_writes_move_rows_in_and_out_of_the_null_list(db, t):
    db.create_index("t", "by_a", ["f:a"], covering=["f:b"])
    spec = db.indexer.catalog.get("t", "by_a")
    t.put(b"r1", {b"g:c": b"1"})
    t.put(b"r2", {b"f:a": b"3", b"g:c": b"2"})
    assert _null_rows(db) == [b"r1"]
    t.delete(b"r2", columns=[b"f:a"])        # loses the column: joins the list
    assert _null_rows(db) == [b"r1", b"r2"]
    t.put(b"r1", {b"f:a": b"4"})             # gains it: leaves the list
    assert _null_rows(db) == [b"r2"]
    t.delete(b"r2", columns=[b"g"])          # still has nothing in f? r2 has no cell left
    assert _null_rows(db) == []
    assert _null_entries(db, spec) == [] and _null_count(db, spec) == 0
    with t.batch() as b:                     # several mutations of one row in one batch
        b.put(b"r3", {b"f:a": b"1"})
        b.delete(b"r3", columns=[b"f:a"])
        b.put(b"r3", {b"f:b": b"z"})
    assert _null_rows(db) == [b"r3"]
    assert sorted(db.sql("SELECT f.b FROM t WHERE f.a IS NULL")) == [(b"r3", {b"f:b": "z"})]
    t.delete(b"r3")
    assert _null_rows(db) == [] and _null_count(db, spec) == 0
    assert db.verify_index("t", "by_a")["ok"]


def test_null_list_with_the_hot_cache(backend):
    db = backend.connect(cache="memory")
    try:
        db.create_table("t", {"f": {}, "g": {}}, columns=COLUMNS)
        t = db.table("t")
        db.create_index("t", "by_a", ["f:a"])
        t.put(b"r1", {b"g:c": b"1"})
        assert _null_rows(db) == [b"r1"]      # fills the cached NULL set
        assert _null_rows(db) == [b"r1"]
        t.put(b"r2", {b"f:b": b"x"})          # patches it
        t.put(b"r1", {b"f:a": b"7"})
        assert _null_rows(db) == [b"r2"]
        assert db.cache_stats()["hits"] >= 1
    finally:
        db.close()


def test_verify_repairs_the_null_list(db, t):
    t.put(b"r1", {b"g:c": b"1"})
    t.put(b"r2", {b"f:a": b"1"})
    db.create_index("t", "by_a", ["f:a"])
    spec = db.indexer.catalog.get("t", "by_a")
    assert db.verify_index("t", "by_a")["ok"]
    # lose the NULL entry and its count behind the index's back
    db.store.commit([], [(index_table("t"), spec.null_alias + b"r1", None),
                         (value_table("t"), spec.null_alias, None)])
    report = db.verify_index("t", "by_a")
    assert not report["ok"] and report["missing"] == 1 and report["bad_counts"] == 1
    assert db.verify_index("t", "by_a", repair=True)["repaired"]
    assert db.verify_index("t", "by_a")["ok"]
    assert _null_rows(db) == [b"r1"]


def test_composite_index_lists_rows_lacking_its_first_column(db, t):
    t.put(b"r1", {b"f:b": b"x"})
    t.put(b"r2", {b"f:a": b"1"})
    db.create_index("t", "ab", ["f:a", "f:b"])
    assert "NULL LIST" in db.explain("SELECT * FROM t WHERE f.a IS NULL AND f.b = 'x'")
    assert [r for r, _ in db.sql("SELECT * FROM t WHERE f.a IS NULL AND f.b = 'x'")] == [b"r1"]
    # IS NULL on a later column is not a NULL-list lookup (a residual on the entries)
    assert "NULL LIST" not in db.explain("SELECT * FROM t WHERE f.b IS NULL")
    db.create_index("t", "by_b", ["f:b"])
    db.drop_index("t", "ab")                 # its NULL list and count go with it
    other = db.indexer.catalog.get("t", "by_b")
    keep = tuple(other.aliases)
    assert all(k.startswith(keep) for k, _ in db.store.kv_scan(index_table("t")))
    assert all(k.startswith(keep) for k, _ in db.store.kv_scan(value_table("t")))


def test_index_without_a_null_list_still_scans(db, t):
    """Indexes made before NULL lists (no null_alias in their definition) answer IS NULL by
    the full scan, as they did."""
    t.put(b"r1", {b"g:c": b"1"})
    db.create_index("t", "by_a", ["f:a"], local=True)  # local indexes keep no NULL list
    assert "FULL TABLE SCAN" in db.explain("SELECT * FROM t WHERE f.a IS NULL")
    assert _null_rows(db) == [b"r1"]
    old = IndexSpec.from_json(b'{"name": "x", "table": "t", "columns": ["f:a"], '
                              b'"types": ["int"], "covering": [], "alias": "0001", '
                              b'"local": false, "state": "ready"}')
    assert old.null_alias is None and old.aliases == [b"\x00\x01"]


@pytest.mark.parametrize("step", ["index", "data"])
@pytest.mark.parametrize("change", ["insert_null", "into_list", "out_of_list", "delete_null"])
def test_null_list_under_a_writer_killed_between_steps(thrift_backend, step, change):
    """HBase's verified protocol covers NULL-list entries too: a writer dying after the index
    step or the data step leaves no wrong IS NULL answer, and verify --repair cleans up."""
    from hibase import errors
    writer = thrift_backend.connect(cache_policy=None)
    writer.create_table("t", {"f": {}, "g": {}}, columns=COLUMNS)
    t = writer.table("t")
    t.put(b"r1", {b"f:a": b"1", b"f:b": b"x"})
    t.put(b"r2", {b"f:b": b"y"})
    t.put(b"r3", {b"g:c": b"3"})
    writer.create_index("t", "by_a", ["f:a"], covering=["f:b"])
    writer.store.faults.arm(step)
    with pytest.raises(errors.BackendError, match="fault injection"):
        if change == "insert_null":
            t.put(b"r4", {b"g:c": b"4"})
        elif change == "into_list":
            t.delete(b"r1", columns=[b"f:a"])
        elif change == "out_of_list":
            t.put(b"r2", {b"f:a": b"2"})
        else:
            t.delete(b"r3")
    writer.store.faults.arm(None)
    reader = thrift_backend.connect(cache_policy=None)
    truth = sorted(k for k, cells in reader.table("t").scan() if b"f:a" not in cells)
    for conn in (reader, writer):
        assert _null_rows(conn) == truth, conn
        got = conn.sql("SELECT f.b FROM t WHERE f.a IS NULL", raw=True)
        assert dict(got) == {k: {c: v for c, v in d.items() if c == b"f:b"}
                             for k, d in reader.table("t").rows([k for k, _ in got])}
    assert not reader.verify_index("t", "by_a")["ok"]  # leftovers: unverified entries
    assert reader.verify_index("t", "by_a", repair=True)["repaired"]
    assert reader.verify_index("t", "by_a")["ok"]
    assert _null_rows(reader) == truth
