"""Value counts of the HBase backend written by several clients at once: each client adds its
deltas to its own cell of a count row (store/hbase/kv.py), so no client's update is lost to
another's, whichever order their calls land in. Runs on every HBase-protocol backend kind
(the gateway; real HBase where that kind exists)."""

from __future__ import annotations

import threading

import happybase
import pytest

import hibase
from backends import TIMEOUT_MS
from hibase.store.hbase.gateway import hello

VALUES = [b"v%d" % i for i in range(4)]


def _client(hb):
    db = hibase.connect(hb.url, cache_policy=None)
    hb.opened.append(db)
    return db


def _writer(db, prefix: bytes, rounds: int, errors: list, midway=None) -> None:
    """Rows of its own, values shared with the other writer: inserts, value moves, deletes."""
    t = db.table("t")
    try:
        for r in range(rounds):
            for i in range(8):
                row = prefix + b"%02d" % i
                t.put(row, {b"f:a": VALUES[(i + r) % 4], b"f:b": VALUES[(i * r) % 4]})
            t.delete(prefix + b"%02d" % (r % 8))
            if midway is not None and r == rounds // 2:
                midway()
    except Exception as exc:  # handed to the test's thread
        errors.append(exc)


def _run(*jobs) -> None:
    errors: list = []
    threads = [threading.Thread(target=_writer, args=(*job[:3], errors, *job[3:]))
               for job in jobs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def _check(db) -> None:
    """Every index verifies, and COUNT(*) answered from the value table (global) and the
    per-region counts (local) equals a full scan's."""
    for name in ("by_a", "lb"):
        assert db.verify_index("t", name)["ok"], name
    for col in ("a", "b"):
        for v in VALUES:
            want = len(list(db.table("t").where(f"f.{col} = '{v.decode()}'",
                                                full_scan=True)))
            sql = f"SELECT COUNT(*) FROM t WHERE f.{col} = '{v.decode()}'"
            assert db.sql(sql) == [(want,)], (col, v)


def test_clients_writing_the_same_values_at_once_keep_exact_counts(hb):
    admin = _client(hb)
    admin.create_table("t", {"f": {}}, columns={"f:a": "string", "f:b": "string"})
    admin.create_index("t", "by_a", ["f:a"])
    admin.create_index("t", "lb", ["f:b"], local=True)
    a, b = _client(hb), _client(hb)
    # a starts a new count cell half way (as after a failed write): its old cell keeps counting
    _run((a, b"a", 12, a.store._new_writer), (b, b"b", 12))
    _check(admin)
    # b drops the indexes (their HBase tables go with the last) and makes them again: a,
    # writing on, must not add to counts it held in the dropped tables
    b.drop_index("t", "by_a")
    b.drop_index("t", "lb")
    b.create_index("t", "by_a", ["f:a"])
    b.create_index("t", "lb", ["f:b"], local=True)
    _run((a, b"a", 6), (b, b"c", 6))
    _check(admin)


def test_calls_landing_late_change_no_answer(hb, request):
    """A call hibase gave up on (its socket timed out while a region was away) may still be
    applied by HBase's Thrift server later, after the writer's next calls: a stale count
    total must not replace a later one (it did: COUNT(*) answered from the value table was
    wrong after a region server was killed), a phase 1 must not turn a verified entry back
    to unverified, a phase 3 must not put back an entry a later write deleted. Replayed
    here: every write call is sent a second time after all of them landed, newest first,
    as late calls do. Client-side upkeep (on real HBase hibase's coprocessor would keep the
    index: no index call to replay)."""
    if hb.kind == "thrift":
        # hibase's gateway stores hibase's tables in the embedded store, whose deletes follow
        # HBase's NEW_VERSION_BEHAVIOR (a delete hides only what was written before it; see
        # test_store_matches_reference_model) and whose key-value tables keep no timestamps:
        # an older put landing after a delete brings the cells back, where HBase's default
        # masks it
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "the gateway's deletes hide only what was written before them (HBase's "
            "NEW_VERSION_BEHAVIOR), so a late older put comes back")))
    db = hibase.connect(hb.url + "&server_upkeep=0", cache_policy=None)  # as test_routing
    hb.opened.append(db)
    db.create_table("t", {"f": {}}, columns={"f:a": "string"})
    db.create_index("t", "by_a", ["f:a"])
    t = db.table("t")
    t.put(b"r00", {b"f:a": b"v0"})  # the catalog read and the first count cell
    rpc = db.store.rpc
    sent: list[tuple] = []
    real = rpc.call

    def recording(method, *args, **kw):
        if method.startswith("mutateRows"):
            sent.append((method, args, kw))
        return real(method, *args, **kw)

    rpc.call = recording
    try:
        for i in range(1, 6):
            t.put(b"r%02d" % i, {b"f:a": b"v0"})
        t.put(b"r01", {b"f:a": b"v1"})
        t.put(b"r02", {b"f:a": b"v1"})
        t.put(b"r01", {b"f:a": b"v0"})  # back: its v1 entry deleted after it was verified
        t.delete(b"r03")
    finally:
        rpc.call = real
    counts = [args for method, args, _ in sent if method == "mutateRowsTs" and
              any(m.column.startswith(b"c:") for b in args[1] for m in b.mutations)]
    # each write's counts in its phase 1 (grown, marked pending) and 3 (shrunk, unmarked)
    assert len(counts) == 18, sent
    assert all(method == "mutateRowsTs" for method, _, _ in sent), sent
    for method, args, kw in reversed(sent):  # the latest first: every other one lands late
        real(method, *args, **kw)
    truth = {"v0": [b"r00", b"r01", b"r04", b"r05"], "v1": [b"r02"]}
    for value, rows in truth.items():
        assert db.sql(f"SELECT COUNT(*) FROM t WHERE f.a = '{value}'") == [(len(rows),)], value
        assert sorted(k for k, _ in t.where(f"f.a = '{value}'")) == rows, value
    report = db.verify_index("t", "by_a")
    assert report["ok"], report


def test_counts_are_cells_of_the_index_table(hb):
    """What plain HBase holds: a value table has no HBase table of its own; its counts are
    family c of the index table's rows keyed by the value key, one cell per writer."""
    db = _client(hb)
    db.create_table("t", {"f": {}}, columns={"f:a": "string", "f:b": "string"})
    db.create_index("t", "by_a", ["f:a"])
    t = db.table("t")
    for i in range(12):
        t.put(b"r%02d" % i, {b"f:a": VALUES[i % 3]})
    conn = happybase.Connection(*hb.address, timeout=TIMEOUT_MS)
    try:
        tables = {n.decode() for n in conn.tables()}
        assert hb.hbase_name("hibase_kv__idx__t") in tables
        assert not any("__val__" in n for n in tables)
        idx = conn.table(hb.hbase_name("hibase_kv__idx__t"))
        counts = [sum(int.from_bytes(v, "big", signed=True) for v in cells.values())
                  for _, cells in idx.scan(columns=[b"c"])]
        assert counts == [4, 4, 4]
        assert len(list(idx.scan(columns=[b"v:v"]))) == 12
    finally:
        conn.close()


def test_an_index_table_of_the_old_layout_is_refused_clearly(hb):
    """Index tables made before counts moved into them have no family c: writing counts there
    says what to do, not HBase's missing-family error."""
    db = _client(hb)
    db.create_table("t", {"f": {}}, columns={"f:a": "string"})
    db.table("t").put(b"r1", {b"f:a": b"x"})
    conn = happybase.Connection(*hb.address, timeout=TIMEOUT_MS)
    try:
        if hb.kind == "thrift":  # hibase's gateway keeps its tables from non-hibase clients
            assert hello(conn)
        conn.create_table(hb.hbase_name("hibase_kv__idx__t"), {"v": {"max_versions": 1}})
    finally:
        conn.close()
    with pytest.raises(hibase.errors.BackendError, match="older hibase.*create them again"):
        db.create_index("t", "by_a", ["f:a"])


def test_value_tables_an_older_hibase_recorded_find_their_counts(hb):
    """An older hibase recorded a value table (kv/__val__t) with no home: it knew by name that
    the counts live in the index table. A client of today must still read them there, or
    COUNT(*) from the value table answers 0 (the catalog states each home at open)."""
    db = _client(hb)
    db.create_table("t", {"f": {}}, columns={"f:a": "string", "f:b": "string"})
    db.create_index("t", "by_a", ["f:a"])
    db.create_index("t", "lb", ["f:b"], local=True)
    t = db.table("t")
    for i in range(12):
        t.put(b"r%02d" % i, {b"f:a": VALUES[i % 3], b"f:b": VALUES[i % 2]})
    for name in ("__val__t", "__lval__t"):  # what the older code wrote
        db.store._meta_put(b"kv/" + name.encode(), b"")
    db.close()
    old = _client(hb)
    try:
        assert old.sql("SELECT COUNT(*) FROM t WHERE f.a = '%s'" % VALUES[0].decode()) == [(4,)]
        assert old.sql("SELECT COUNT(*) FROM t WHERE f.b = '%s'" % VALUES[1].decode()) == [(6,)]
        old.table("t").put(b"r99", {b"f:a": VALUES[0], b"f:b": VALUES[1]})
        _check(old)
    finally:
        old.close()
    again = _client(hb)  # the home was written back: the next client reads it as recorded
    try:
        assert again.store._kv["__val__t"] == "__idx__t"
        _check(again)
    finally:
        again.close()
