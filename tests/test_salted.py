"""Salted tables (create_table(salt_buckets=N), SALT_BUCKETS=N): rows stored under a hash
byte of the rowkey, invisible to every API. A property test against a brute-force model (a
dict of rowkey -> row) on every backend; the regions from the start; the stored layout a
plain HBase writer must follow (the salt byte, store/salted.py's hash)."""

from __future__ import annotations

import itertools
import os

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from hibase import errors
from hibase.store.salted import salt_byte, salted_key
from servers import in_ci

ROWS = [b"2026-%02d" % i for i in range(10)] + [b"a", b"ab", b"b\x00", b"b\xff", b"\xff\x01"]
VALUES = {
    b"f:a": st.integers(-3, 3).map(lambda v: str(v).encode()),
    b"f:s": st.sampled_from([b"x", b"y", b"zz"]),
}
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(ROWS), st.fixed_dictionaries({}, optional=VALUES)),
    st.tuples(st.just("delete"), st.sampled_from(ROWS),
              st.one_of(st.none(), st.just([b"f:a"]))),
), min_size=1, max_size=30)
BOUNDS = st.one_of(st.none(), st.sampled_from(ROWS + [b"", b"2026-05x", b"c"]))
_tables = itertools.count()


def _model_apply(model: dict, kind: str, row: bytes, arg) -> None:
    if kind == "put":
        if arg:
            model.setdefault(row, {}).update(arg)
    elif arg is None:
        model.pop(row, None)
    elif row in model:
        for c in arg:
            model[row].pop(c, None)
        if not model[row]:
            del model[row]


def _expected_scan(model, start, stop, prefix, reverse):
    keys = sorted(model, reverse=reverse)
    if prefix is not None:
        return [k for k in keys if k.startswith(prefix)]
    if reverse:
        return [k for k in keys if (not start or k <= start) and (not stop or k > stop)]
    return [k for k in keys if (not start or k >= start) and (not stop or k < stop)]


@pytest.mark.hbase_examples(3)  # each example makes a pre-split table on HBase (~7 s)
@settings(max_examples=int(os.environ.get("HIBASE_PROPERTY_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS, buckets=st.sampled_from([1, 3, 8]), start=BOUNDS, stop=BOUNDS,
       prefix=st.one_of(st.none(), st.sampled_from([b"2026-0", b"b", b"a", b"q"])),
       limit=st.one_of(st.none(), st.integers(1, 5)), reverse=st.booleans(),
       value=st.integers(-3, 3))
def test_salted_table_equals_brute_force(db, ops, buckets, start, stop, prefix, limit, reverse,
                                         value):
    """Random puts, updates and deletes, then scans (start/stop/prefix/limit/reverse), gets,
    where() and SQL through an index: each what the model says, in rowkey order."""
    name = f"s{next(_tables)}"
    db.create_table(name, {"f": {"max_versions": 1}}, columns={"f:a": "int"},
                    salt_buckets=buckets)
    try:
        db.create_index(name, "ia", ["f:a"], covering=["f:s"])
        t = db.table(name)
        model: dict[bytes, dict] = {}
        for kind, row, arg in ops:
            if kind == "put":
                if arg:
                    t.put(row, arg)
            else:
                t.delete(row, arg)
            _model_apply(model, kind, row, arg)
        if prefix is not None:
            got = [k for k, _ in t.scan(row_prefix=prefix, limit=limit, reverse=reverse)]
        else:
            got = [k for k, _ in t.scan(row_start=start, row_stop=stop, limit=limit,
                                         reverse=reverse)]
        want = _expected_scan(model, start, stop, prefix, reverse)
        if not (prefix is None and start and start == stop):  # a get of that row: not a range
            assert got == want[:limit] if limit else got == want, (start, stop, prefix)
        assert dict(t.scan()) == model
        assert {k: t.row(k) for k in ROWS} == {k: model.get(k, {}) for k in ROWS}
        assert dict(t.rows(ROWS)) == model
        hits = sorted(k for k, v in model.items() if v.get(b"f:a") == str(value).encode())
        assert [k for k, _ in t.where(f"f.a = {value}")] == hits
        assert [k for k, _ in t.where(f"f.a = {value}", columns=[b"f:s"])] == hits
        rows = db.sql(f"SELECT ROWKEY, f.s FROM {name} WHERE f.a = ? ORDER BY ROWKEY", (value,))
        assert [r[0] for r in rows] == hits
        ge = sorted(k for k, v in model.items() if b"f:a" in v and int(v[b"f:a"]) >= value)
        assert sorted(k for k, _ in t.where(f"f.a >= {value}")) == ge
        assert db.verify_index(name, "ia")["ok"]
    finally:
        db.delete_table(name, disable=True)


def _spec_bucket(row: bytes, n: int) -> int:
    """The documented hash, written out with numpy's 32-bit ints (wrapping as Java's)."""
    import numpy as np
    with np.errstate(over="ignore"):
        h = np.int32(1)
        for b in row:
            h = np.int32(np.int32(31) * h + np.int32(np.int8(np.uint8(b))))
        u = np.uint32(h.view(np.uint32))
        u ^= u >> np.uint32(16)
        u = np.uint32(u * np.uint32(0x85EBCA6B))
        u ^= u >> np.uint32(13)
        u = np.uint32(u * np.uint32(0xC2B2AE35))
        u ^= u >> np.uint32(16)
    h = int(u.view(np.int32))
    return abs(h - int(h / n) * n)  # Java's remainder: the sign of the dividend


def test_hash_is_the_documented_one():
    """Arrays.hashCode over signed bytes, murmur3's finalizer, |h % N|: what Salt.java does
    (the golden vectors check Java against the same answers)."""
    for row in [b"a", b"\xff", b"\x80" * 6, b"\x00\xad", b"2026-11-28T10:11:52Z#42",
                bytes(range(256))]:
        for n in (1, 2, 7, 8, 13, 256):
            assert salt_byte(row, n) == _spec_bucket(row, n), (row, n)
    assert (salt_byte(b"a", 7), salt_byte(b"\xff", 8), salt_byte(b"\x00\xad", 256)) == (1, 3, 255)
    assert salted_key(b"k", 1) == b"\x00k"


def test_time_ordered_keys_spread_evenly():
    """A millisecond timestamp and a sequence growing together (the polynomial hash alone put
    every such key in one bucket of 8)."""
    from collections import Counter
    keys = [b"%013d#%06d" % (1_764_000_000_000 + i, i) for i in range(8000)]
    counts = Counter(salt_byte(k, 8) for k in keys)
    assert len(counts) == 8 and min(counts.values()) > 800


def test_regions_from_the_start(db):
    db.create_table("ev", {"f": {}}, salt_buckets=8)
    starts = sorted(r.start for r in db.store.regions("ev"))
    if db.store.kind == "hbase":  # HBase's own regions, pre-split by bucket
        starts = sorted(db.store.servers("ev"))
    assert starts == [b""] + [bytes((b,)) for b in range(1, 8)]
    t = db.table("ev")
    for i in range(40):
        t.put(b"2026-11-28T10:%02d" % i, {b"f:x": b"1"})
    used = {db.store.inner.region_of("ev", salted_key(k, 8)).start for k, _ in t.scan()}
    assert len(used) > 1  # time-ordered keys spread over the buckets
    assert [k for k, _ in t.scan(limit=3)] == [b"2026-11-28T10:%02d" % i for i in range(3)]


def test_sql_and_errors(db):
    db.sql("CREATE TABLE ev (id VARCHAR PRIMARY KEY, f.n BIGINT, f.m BIGINT) SALT_BUCKETS = 4")
    assert db.table("ev").schema.salt_buckets == 4
    db.sql("UPSERT INTO ev (id, f.n) VALUES ('b', 2)")
    db.sql("UPSERT INTO ev (id, f.n) VALUES ('a', 1)")
    db.sql("CREATE INDEX by_n ON ev (f.n)")
    assert [r[0] for r in db.sql("SELECT id FROM ev WHERE f.n >= 1 ORDER BY id")] == ["a", "b"]
    assert [r[0] for r in db.sql("SELECT id FROM ev")] == ["a", "b"]
    plan = db.explain("SELECT id FROM ev WHERE f.m = 3")
    assert "FULL TABLE SCAN" in plan
    if db.store.capabilities.pushed_scans:  # HBase: the ScanObserver would see salted keys
        assert "salted table's rows are read by this client" in plan, plan
    with pytest.raises(errors.SchemaError, match="1 to 256"):
        db.sql("CREATE TABLE e2 (id VARCHAR PRIMARY KEY, f.n BIGINT) SALT_BUCKETS = 300")
    with pytest.raises(errors.SchemaError, match="salted"):
        db.create_index("ev", "loc", ["f:n"], local=True)
    with pytest.raises(errors.SchemaError, match="salt_buckets"):
        db.create_table("e3", {"f": {}}, salt_buckets=0)


def test_cli_create_table_salt_buckets(tmp_path):
    from click.testing import CliRunner

    import hibase
    from hibase.cli import cli
    store = str(tmp_path / "s")
    out = CliRunner().invoke(cli, ["create-table", store, "ev", "-f", "f", "--salt-buckets", "5"])
    assert out.exit_code == 0, out.output
    db = hibase.connect(store)
    try:
        assert db.table("ev").schema.salt_buckets == 5
        assert len(db.store.regions("ev")) == 5
    finally:
        db.close()
    bad = CliRunner().invoke(cli, ["create-table", store, "e2", "-f", "f", "--salt-buckets", "0"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_plain_hbase_writer_adds_the_salt_byte(backend):
    """A happybase writer (no hibase) puts the stored key itself: salt byte + rowkey. With
    hibase's coprocessor in the region server its row is indexed under the user rowkey."""
    if backend.kind != "hbase":
        pytest.skip("a plain HBase writer needs real HBase (the coprocessor keeps its index)")
    import happybase

    db = backend.connect()
    db.create_table("ev", {"f": {}}, columns={"f:a": "int"}, salt_buckets=8)
    db.create_index("ev", "ia", ["f:a"])
    _needs_coprocessor(db, "ev")
    opts = db.store.rpc.opts
    hb = happybase.Connection(opts["host"], opts["port"], autoconnect=True)
    try:
        row = b"2026-11-28T10:11:52Z#42"
        hb.table(db.store.hbase_name(db._full("ev"))).put(salted_key(row, 8), {b"f:a": b"7"})
    finally:
        hb.close()
    assert [k for k, _ in db.table("ev").where("f.a = 7")] == [row]
    assert db.table("ev").row(row) == {b"f:a": b"7"}
    assert db.verify_index("ev", "ia")["ok"]


def test_dump_and_restore_keep_the_salting(tmp_path):
    """A dump holds user rowkeys and the table's salt buckets; the restored table is salted
    the same (its regions, its index) and answers the same."""
    import io

    import hibase
    from hibase.dump import dump, restore
    db = hibase.connect(str(tmp_path / "a"))
    db.create_table("ev", {"f": {}}, columns={"f:a": "int"}, salt_buckets=4)
    db.create_index("ev", "ia", ["f:a"])
    for i in range(30):
        db.table("ev").put(b"k%02d" % i, {b"f:a": str(i % 3).encode()})
    buf = io.StringIO()
    dump(db, buf)
    db.close()
    assert '"salt_buckets":4' in buf.getvalue() and '{"row":"k00",' in buf.getvalue()
    db2 = hibase.connect(str(tmp_path / "b"))
    try:
        restore(db2, io.StringIO(buf.getvalue()))
        t = db2.table("ev")
        assert t.schema.salt_buckets == 4 and len(db2.store.regions("ev")) == 4
        assert [k for k, _ in t.scan()] == [b"k%02d" % i for i in range(30)]
        assert sorted(k for k, _ in t.where("f.a = 1")) == [b"k%02d" % i for i in range(1, 30, 3)]
        assert db2.verify_index("ev", "ia")["ok"]
    finally:
        db2.close()


def test_index_built_over_existing_rows(db):
    """An index made after the rows (the batch build; on HBase the coprocessor's rebuild of
    each stored row) carries user rowkeys and answers in rowkey order."""
    db.create_table("ev", {"f": {}}, columns={"f:a": "int"}, salt_buckets=5)
    t = db.table("ev")
    for i in range(60):
        t.put(b"2026-11-28T10:%02d" % i, {b"f:a": str(i % 4).encode(), b"f:s": b"s%d" % i})
    db.create_index("ev", "ia", ["f:a"], covering=["f:s"])
    want = [b"2026-11-28T10:%02d" % i for i in range(60) if i % 4 == 2]
    assert [k for k, _ in t.where("f.a = 2")] == want
    assert [k for k, v in t.where("f.a = 2", columns=[b"f:s"])] == want
    assert db.verify_index("ev", "ia")["ok"]
    db.sql("DELETE FROM ev WHERE f.a = 2")
    assert [k for k, _ in t.where("f.a = 2")] == [] and len(list(t.scan())) == 45
    assert db.verify_index("ev", "ia")["ok"]


def test_eventual_index_of_a_salted_table(backend):
    """On HBase the coprocessor's change records hold stored rows; the entries it applies
    later carry user rowkeys (ChangeConsumer strips the byte)."""
    if backend.kind != "hbase":
        pytest.skip("eventual indexes are kept by the coprocessor on real HBase")
    from servers import wait_until
    db = backend.connect()
    db.create_table("ev", {"f": {}}, columns={"f:a": "int"}, salt_buckets=4)
    db.create_index("ev", "ia", ["f:a"], consistency="eventual")
    _needs_coprocessor(db, "ev")
    t = db.table("ev")
    for i in range(40):
        t.put(b"k%02d" % i, {b"f:a": str(i % 3).encode()})
    t.delete(b"k01")
    wait_until(lambda: db.index_lag("ev", "ia")["pending"] == 0, timeout=60, step=0.2)
    assert [k for k, _ in t.where("f.a = 1")] == [b"k%02d" % i for i in range(4, 40, 3)]
    assert db.verify_index("ev", "ia")["ok"]


def test_a_patched_call_of_the_wrapped_store_is_its_own(db):
    """Replacing one of the store's calls on the object callers hold (as tests count reads
    with monkeypatch) replaces it there, without looping through the backend, and deleting
    it restores the wrapper's own (store/salted.py's SaltedStore)."""
    store = db.store
    real = store.read_latest_many
    seen = []

    def counting(*a, **k):
        seen.append(a[0])
        return real(*a, **k)

    store.read_latest_many = counting
    db.create_table("p", {"f": {}}, salt_buckets=4)
    db.table("p").put(b"r1", {b"f:a": b"1"})
    assert store.read_latest_many("p", [b"r1"], None)[0] is not None and seen == ["p"]
    del store.read_latest_many
    assert store.read_latest_many("p", [b"r1"], None)[0] is not None and seen == ["p"]


def test_a_patched_backend_call_reaches_the_backend(db):
    """A call the wrapper only hands on (the backend's own, which the backend also makes
    internally) replaced on the store the caller holds is replaced in the backend: a test
    stopping a writer by patching such a call (test_hbase_backend's killed writer) stops it."""
    store = db.store
    store.schema  # the wrapper holds a copy of the backend's method once it was asked for
    real = store.schema
    seen = []

    def counting(*a, **k):
        seen.append(a[0])
        return real(*a, **k)

    store.schema = counting
    db.create_table("q", {"f": {}})
    assert store.inner.schema is counting
    store.inner.schema("q")
    assert "q" in seen
    del store.schema
    assert store.schema("q").name == "q"


def _needs_coprocessor(db, table: str) -> None:
    """The region servers keep `table`'s indexes (hibase's coprocessor): a failure in CI,
    where the session HBase must run it, else a skip."""
    if not db.store.server_upkeep(db._full(table)):
        if in_ci():
            pytest.fail("CI's session HBase must run hibase's coprocessor")
        pytest.skip("hibase's coprocessor is not loaded on this cluster")
