"""Durability and concurrency: acknowledged writes survive kill -9, one writer process per
folder (others get StoreLocked or open read-only), many threads in one connection.

Embedded-only (`embedded_db` / `db_path`): kill -9 against RocksDB's WAL, its LOCK file
(StoreLocked) and read-only folder opens are properties of the embedded store's folder; on HBase
they are HBase's. The thread and closed-connection tests take `db`: both backends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import hibase
from hibase import errors

PY = sys.executable


def run_py(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-c", textwrap.dedent(code), *args], capture_output=True,
                          text=True, timeout=timeout)


WRITER = """
import sys, hibase
db = hibase.connect(sys.argv[1])
t = db.table("t")
i = 0
while True:
    key = b"k%07d" % i
    if i % 3 == 2:
        with t.batch() as b:   # a batch of rows: acknowledged when the block exits
            b.put(key, {b"f:a": key, b"g:b": key})
            b.put(key + b"-2", {b"f:a": key})
    else:
        t.put(key, {b"f:a": key, b"g:b": key})
    t.counter_inc(b"counter", b"f:n")
    print(i, flush=True)      # i is acknowledged: the put and the increment returned
    i += 1
"""


def test_acknowledged_writes_survive_kill_9(db_path):
    with hibase.connect(db_path) as db:
        db.create_table("t", {"f": {}, "g": {}})
    proc = subprocess.Popen([PY, "-c", textwrap.dedent(WRITER), db_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acked = []
    try:
        deadline = time.monotonic() + 30
        while len(acked) < 400 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(int(line))
        os.kill(proc.pid, signal.SIGKILL)  # mid-stream: the writer is still writing
        proc.wait(30)
        rest, err = proc.stdout.read(), proc.stderr.read()  # (through readline's buffer)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    acked += [int(x) for x in rest.split()]  # printed before it died: acknowledged too
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 400, err
    with hibase.connect(db_path) as db:
        t = db.table("t")
        for i in acked:
            key = b"k%07d" % i
            assert t.row(key) == {b"f:a": key, b"g:b": key}, i
            if i % 3 == 2:
                assert t.row(key + b"-2") == {b"f:a": key}
        n = t.counter_get(b"counter", b"f:n")
        assert len(acked) <= n <= len(acked) + 1
        # whatever the kill interrupted is all there or not there at all
        for key, data in t.scan(columns=[b"f:a", b"g:b"]):
            if key != b"counter" and not key.endswith(b"-2"):
                assert data == {b"f:a": key, b"g:b": key}
        t.put(b"after", {b"f:a": b"1"})  # and the store is writable again
        assert t.row(b"after") == {b"f:a": b"1"}


def test_second_process_gets_store_locked(embedded_db):
    embedded_db.create_table("t", {"f": {}})
    embedded_db.table("t").put(b"r", {b"f:a": b"1"})
    got = run_py("""
        import sys, hibase
        try:
            hibase.connect(sys.argv[1])
        except hibase.errors.StoreLocked as exc:
            print("StoreLocked", isinstance(exc, hibase.errors.BackendUnavailable), exc)
        """, embedded_db.store.path)
    assert got.stdout.startswith("StoreLocked True"), got.stdout + got.stderr
    assert "read_only=True" in got.stdout  # the message says what to do
    # the holder is unaffected
    embedded_db.table("t").put(b"r2", {b"f:a": b"2"})
    assert [k for k, _ in embedded_db.table("t").scan()] == [b"r", b"r2"]


def test_same_process_second_open_is_store_locked(embedded_db, db_path):
    with pytest.raises(errors.StoreLocked):
        hibase.connect(db_path)


def test_read_only_opens_alongside_a_writer(embedded_db):
    # RocksDB's read-only open takes no lock: it reads the data as of its opening
    embedded_db.create_table("t", {"f": {}, "g": {}})
    t = embedded_db.table("t")
    for i in range(50):
        t.put(b"r%02d" % i, {b"f:a": b"%d" % i, b"g:b": b"x"})
    got = run_py("""
        import sys, hibase
        db = hibase.connect(sys.argv[1], read_only=True)
        t = db.table("t")
        print(len(list(t.scan())), t.row(b"r07")[b"f:a"].decode(), db.tables())
        try:
            t.put(b"x", {b"f:a": b"1"})
        except hibase.errors.BackendError as exc:
            print("refused")
        db.close()
        """, embedded_db.store.path)
    assert got.stdout.split("\n")[:2] == ["50 7 [b't']", "refused"], got.stdout + got.stderr
    t.put(b"r99", {b"f:a": b"still writable"})
    assert t.row(b"r99") == {b"f:a": b"still writable"}


def test_read_only_store_refuses_every_write(db_path):
    with hibase.connect(db_path) as db:
        db.create_table("t", {"f": {}})
        t = db.table("t")
        for i in range(embedded_compact_after() + 2):
            t.put(b"r", {b"f:a": b"%d" % i})
    with hibase.connect(db_path, read_only=True) as db:
        t = db.table("t")
        assert t.row(b"r") == {b"f:a": b"%d" % (embedded_compact_after() + 1)}  # no fold
        for call in (lambda: t.put(b"r", {b"f:a": b"1"}), lambda: t.delete(b"r"),
                     lambda: t.counter_inc(b"r", b"f:n"), lambda: db.compact_table("t"),
                     lambda: db.create_table("u", {"f": {}}), lambda: db.split("t")):
            with pytest.raises(errors.BackendError):
                call()


def test_read_only_of_missing_store(tmp_path):
    with pytest.raises(errors.BackendUnavailable):
        hibase.connect(str(tmp_path / "nothing"), read_only=True)
    assert not (tmp_path / "nothing").exists()


def embedded_compact_after() -> int:
    from hibase.store import embedded
    return embedded.COMPACT_AFTER


def test_many_threads(backend, db):
    """Writers, readers and counters in threads sharing one connection: no torn row, no lost
    increment. Fewer increments on thrift, where each is a round trip through the gateway
    (the same interleavings, at a fifth of the count: 300 cost 30 s there)."""
    db.create_table("t", {"f": {"max_versions": 1}, "g": {"max_versions": 1}})
    t = db.table("t")
    rows = [b"row%d" % i for i in range(8)]
    for r in rows:
        t.put(r, {b"f:a": b"0", b"f:b": b"0", b"g:c": b"0"})
    stop = threading.Event()
    failures: list[str] = []
    n_writers, n_counters, incs = 4, 4, 300 if backend.kind == "embedded" else 60

    def writer(w):
        i = 0
        while not stop.is_set():
            v = b"%d-%d" % (w, i)
            t.put(rows[i % len(rows)], {b"f:a": v, b"f:b": v, b"g:c": v})  # two families
            if i % 10 == 0:
                with t.batch() as b:
                    b.put(rows[(i + 1) % len(rows)], {b"f:a": v, b"f:b": v})
                    b.put(rows[(i + 1) % len(rows)], {b"g:c": v})
            i += 1

    def reader():
        while not stop.is_set():
            for r in rows:
                data = t.row(r)
                if len(data) != 3 or len(set(data.values())) != 1:
                    failures.append(f"torn row {r!r}: {data}")
            for r, data in t.scan():
                if r in rows and (len(data) != 3 or len(set(data.values())) != 1):
                    failures.append(f"torn scanned row {r!r}: {data}")
            for r, data in t.rows(rows, columns=[b"f:a", b"g:c"]):
                if len(set(data.values())) != 1:
                    failures.append(f"torn rows() {r!r}: {data}")

    def counter(c):
        for _ in range(incs):
            t.counter_inc(b"counters", b"f:n")
            t.counter_inc(b"counters", b"g:%d" % c, 2)
        t.counter_dec(b"counters", b"f:n", 0)

    def guard(fn, *a):
        def run():
            try:
                fn(*a)
            except Exception as exc:  # pragma: no cover - reported below
                failures.append(repr(exc))
        return run

    threads = [threading.Thread(target=guard(writer, w)) for w in range(n_writers)]
    threads += [threading.Thread(target=guard(reader)) for _ in range(3)]
    counters = [threading.Thread(target=guard(counter, c)) for c in range(n_counters)]
    for th in threads + counters:
        th.start()
    for th in counters:
        th.join(60)
    stop.set()
    for th in threads:
        th.join(60)
    assert not failures, failures[:5]
    assert t.counter_get(b"counters", b"f:n") == n_counters * incs
    for c in range(n_counters):
        assert t.counter_get(b"counters", b"g:%d" % c) == 2 * incs
    for r in rows:
        data = t.row(r)
        assert len(data) == 3 and len(set(data.values())) == 1


def test_a_scan_stream_reads_the_store_as_of_its_making(tmp_path):
    """A multi-family scan makes one stream per family together, under the write lock, so all
    see the same writes; a stream that opened its RocksDB iterator at its first read instead
    let a write land between two families' iterators: test_many_threads saw torn scanned rows
    ({f:a 2-393, f:b 2-393, g:c 0-489}) once in a CI run."""
    from rocksdict import Rdict

    from hibase.store.embedded.rocks import checked_items

    d = Rdict(str(tmp_path / "r"))
    try:
        d[b"a"] = b"1"
        forward, backward = checked_items(d), checked_items(d, None, True)
        d[b"b"] = b"2"
        assert list(forward) == [(b"a", b"1")]
        assert list(backward) == [(b"a", b"1")]
    finally:
        d.close()


def test_store_path_problems_are_clear_errors(tmp_path):
    (tmp_path / "file").write_bytes(b"not a folder")
    for path in (tmp_path / "file", tmp_path / "file" / "sub"):
        with pytest.raises(errors.BackendUnavailable):
            hibase.connect(str(path))
    with pytest.raises(errors.BackendUnavailable):
        hibase.connect(str(tmp_path / "missing"), create=False)
    with pytest.raises(errors.InvalidArgument):
        hibase.connect("")


def test_closed_store_is_a_clear_error(db):
    db.create_table("t", {"f": {}})
    t = db.table("t")
    db.close()
    for call in (lambda: t.row(b"r"), lambda: t.put(b"r", {b"f:a": b"1"}),
                 lambda: list(t.scan()), lambda: db.table("t")):
        with pytest.raises(errors.BackendUnavailable):
            call()
    db.close()  # twice is fine


def test_read_only_sees_the_store_as_of_its_opening(embedded_db, db_path):
    embedded_db.create_table("t", {"f": {}})
    t = embedded_db.table("t")
    t.put(b"a", {b"f:x": b"1"})
    with hibase.connect(db_path, read_only=True) as ro:
        t.put(b"b", {b"f:x": b"2"})  # after the read-only open: not visible to it
        assert [k for k, _ in ro.table("t").scan()] == [b"a"]
    with hibase.connect(db_path, read_only=True) as ro:  # reopen to catch up
        assert [k for k, _ in ro.table("t").scan()] == [b"a", b"b"]


# -- durability levels (issue 24) ------------------------------------------------------------

def test_durability_levels_and_the_sync_alias(db_path):
    for kwargs, level in [({}, "process"), ({"durability": "process"}, "process"),
                          ({"durability": "fsync"}, "fsync"), ({"sync": True}, "fsync"),
                          ({"sync": False}, "process"),
                          ({"sync": True, "durability": "fsync"}, "fsync")]:
        with hibase.connect(db_path, **kwargs) as db:
            assert db.store.durability == level, kwargs
    for kwargs in [{"durability": "power"}, {"durability": True}, {"sync": "yes"},
                   {"sync": True, "durability": "process"}]:
        with pytest.raises(errors.InvalidArgument):
            hibase.connect(db_path, **kwargs)
    with hibase.connect(db_path, durability="fsync") as db:  # no folder lock left by the above
        db.create_table("t", {"f": {}})
        db.table("t").put(b"r", {b"f:a": b"1"})
    with hibase.connect(db_path) as db:
        assert db.table("t").row(b"r") == {b"f:a": b"1"}


def test_fsync_group_commit_shares_one_fsync(db_path):
    """durability="fsync": a writer is acknowledged only after an fsync that began after its
    write; writers that wrote while an fsync ran share the next one (group commit): here one
    fsync is held until two more writers have written, and three writes take two fsyncs."""
    db = hibase.connect(db_path, durability="fsync")
    db.create_table("t", {"f": {}})
    t = db.table("t")
    s0 = db.store._sequence()
    t.put(b"warm", {b"f:a": b"1"})
    per_put = db.store._sequence() - s0  # RocksDB sequence numbers one put takes
    lock = db.store._lock
    real, started, release = lock._sync_wal, threading.Event(), threading.Event()
    synced_at: list[int] = []

    def held_sync():
        synced_at.append(db.store._sequence())
        if len(synced_at) == 1:
            started.set()
            assert release.wait(30)
        real()

    lock._sync_wal = held_sync
    fsyncs, acked = lock.fsyncs, lock.acknowledged
    done: list[str] = []

    def put(name):
        t.put(name.encode(), {b"f:a": b"1"})
        done.append(name)

    first = threading.Thread(target=put, args=("a",))
    first.start()
    assert started.wait(30)  # a's fsync is under way (and held)
    before = db.store._sequence()
    others = [threading.Thread(target=put, args=(n,)) for n in ("b", "c")]
    for th in others:
        th.start()
    deadline = time.monotonic() + 30  # b and c have written and wait for an fsync
    while db.store._sequence() < before + 2 * per_put and time.monotonic() < deadline:
        time.sleep(0.005)
    assert done == []  # nobody is acknowledged before its fsync
    release.set()
    for th in [first, *others]:
        th.join(30)
    assert sorted(done) == ["a", "b", "c"]
    assert lock.fsyncs - fsyncs == 2 and lock.acknowledged - acked == 3
    with db.store.write_lock():  # a holder that writes nothing waits for no fsync
        db.table("t").row(b"a")
    assert lock.fsyncs - fsyncs == 2
    assert synced_at[1] == before + 2 * per_put  # the second fsync began after b's and c's writes
    db.close()
    with hibase.connect(db_path) as db:
        assert sorted(k for k, _ in db.table("t").scan()) == [b"a", b"b", b"c", b"warm"]
