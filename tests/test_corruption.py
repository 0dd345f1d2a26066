"""Corruption is never silent (issue 15, item 3): real bytes flipped in real SST files and a real
MANIFEST cut short; every read either returns the right data or raises StoreCorrupted naming
the file, and `hibase check` reports it with exit code 1."""

from __future__ import annotations

import glob
import os
import shutil

import pytest
from click.testing import CliRunner

import hibase
from hibase import errors
from hibase.cli import cli
from hibase.store.embedded.rocks import translate

N = 3200


def _value(i: int) -> bytes:
    return b"v%05d-" % i + bytes(range(i % 7, i % 7 + 60))  # ~66 bytes, poorly compressible


def make_store(path: str) -> None:
    """3,200 rows (f:a = i % 50, indexed; f:b a 66-byte value), flushed to table files."""
    with hibase.connect(path) as db:
        db.create_table("t", {"f": {}}, columns={"f:a": "int"})
        db.create_index("t", "by_a", ["f:a"])
        t = db.table("t")
        with t.batch() as b:
            for i in range(N):
                b.put(b"r%05d" % i, {b"f:a": b"%d" % (i % 50), b"f:b": _value(i)})
        db.store.flush()
        for name in db.store.kv_tables():
            db.store._kv[name][0].flush()


def table_files(path: str) -> dict[str, str]:
    """'data' / 'index' / 'catalog' -> the SST file holding that part of the store."""
    with hibase.connect(path, read_only=True) as db:
        live = db.store._db.live_files()
    out = {}
    for f in live:
        start = f["start_key"]
        kind = ("data" if start.startswith(b"r0") else
                "catalog" if start[:3] in (b"kv/", b"met", b"reg", b"tab") else "index")
        if kind not in out or f["size"] > os.path.getsize(out[kind]):
            out[kind] = os.path.join(path, f["name"].lstrip("/"))
    return out


def flip(file: str, at: int, n: int) -> None:
    with open(file, "r+b") as f:
        f.seek(at)
        data = f.read(n)
        f.seek(at)
        f.write(bytes(b ^ 0xFF for b in data))


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "store")
    make_store(path)
    return path


def _check(path: str):
    return CliRunner().invoke(cli, ["check", path])


def test_healthy_store_checks(store):
    got = _check(store)
    assert got.exit_code == 0, got.output
    assert got.output.strip().endswith(": OK")
    assert "index t.by_a: 3,200 entries, exact" in got.output


def test_flipped_block_in_data_file_raises_on_scan_and_row(store):
    sst = table_files(store)["data"]
    flip(sst, os.path.getsize(sst) // 3, 16)
    with hibase.connect(store, read_only=True) as db:
        t = db.table("t")
        seen = 0
        with pytest.raises(errors.StoreCorrupted) as err:
            for _ in t.scan():
                seen += 1
        assert seen < N and err.value.path == sst  # names the file
        assert "\n" not in str(err.value) and "StoreLocked" not in repr(err.value)
        # every row either reads right or raises: never {} for a row that exists
        ok = bad = 0
        for i in range(N):
            try:
                assert t.row(b"r%05d" % i) == {b"f:a": b"%d" % (i % 50), b"f:b": _value(i)}
                ok += 1
            except errors.StoreCorrupted:
                bad += 1
        assert bad > 0 and ok + bad == N
        with pytest.raises(errors.StoreCorrupted):
            list(t.scan(columns=[b"f:b"], filter="SingleColumnValueFilter('f', 'b', =, "
                                                   "'binary:none')"))
        with pytest.raises(errors.StoreCorrupted):  # the index answers, the fetch meets it
            list(db.sql("SELECT * FROM t WHERE f.a >= 0"))
        with pytest.raises(errors.StoreCorrupted):  # no index: the filtered full scan
            list(db.sql("SELECT * FROM t (f.b VARCHAR) WHERE f.b = 'none'"))
        with pytest.raises(errors.StoreCorrupted):
            list(db.sql("SELECT * FROM t WHERE f.a >= 0", full_scan=True))
    got = _check(store)
    assert got.exit_code == 1 and f"PROBLEM {sst}" in got.output, got.output


def test_flipped_bytes_near_the_end_are_corruption_not_lock(store):
    sst = table_files(store)["data"]
    flip(sst, os.path.getsize(sst) - 60, 8)  # index / footer area
    with pytest.raises(errors.StoreCorrupted) as err:
        with hibase.connect(store, read_only=True) as db:
            list(db.table("t").scan())
    assert not isinstance(err.value, errors.StoreLocked)
    assert err.value.path == sst
    assert _check(store).exit_code == 1


def test_flipped_block_in_index_file(store):
    sst = table_files(store)["index"]
    flip(sst, os.path.getsize(sst) // 3, 16)
    with hibase.connect(store, read_only=True) as db:
        with pytest.raises(errors.StoreCorrupted) as err:
            for a in range(50):  # every value of the index: one of them is in the bad block
                rows = list(db.table("t").where(f"f.a = {a}"))
                assert len(rows) == N // 50
        assert err.value.path == sst
    got = _check(store)
    assert got.exit_code == 1 and sst in got.output


def test_truncated_manifest_is_refused_and_nothing_is_deleted(store):
    manifest = glob.glob(os.path.join(store, "MANIFEST-*"))[0]
    size = os.path.getsize(manifest)
    before = sorted(os.listdir(store))
    copy = store + "-orig"
    shutil.copytree(store, copy)
    refused = 0
    for cut in sorted({1, 7, size // 4, size // 3, size // 2, 2 * size // 3, size - 3}):
        shutil.rmtree(store)
        shutil.copytree(copy, store)
        with open(manifest, "r+b") as f:
            f.truncate(cut)
        with pytest.raises(errors.StoreCorrupted) as err:
            hibase.connect(store).close()
        assert err.value.path == manifest and "truncated" in str(err.value)
        assert sorted(os.listdir(store)) == before  # refused before RocksDB deleted anything
        got = _check(store)
        assert got.exit_code == 1 and "truncated" in got.output
        refused += 1
    assert refused >= 6


def test_engine_messages_translate_by_kind(tmp_path):
    """RocksDB's own status strings (as rocksdict raises them) map by code and errno."""
    p = str(tmp_path)
    cases = [
        (f"Corruption: block checksum mismatch: stored(context removed) = 1, computed = 2, "
         f"type = 4  in {p}/000009.sst offset 118155 size 4068", errors.StoreCorrupted,
         f"{p}/000009.sst"),
        (f"IO error: No space left on device: While appending to file: {p}/000004.log: No space "
         "left on device", errors.StoreFull, f"{p}/000004.log"),
        (f"IO error: While open a file for appending: {p}/000023.log: Permission denied",
         errors.StoreReadOnly, f"{p}/000023.log"),
        (f"IO error: While lock file: {p}/LOCK: Resource temporarily unavailable",
         errors.StoreLocked, None),
        (f"IO error: No such file or directory: While open a file for random read: "
         f"{p}/000012.sst: No such file or directory", errors.StoreCorrupted, f"{p}/000012.sst"),
        ("Invalid argument: Column family not found: t/x/f", errors.BackendError, None),
    ]
    for message, kind, path in cases:
        err = translate(Exception(message), p)
        assert type(err) is kind, (message, err)
        if path is not None:
            assert err.path == path
    # a PermissionError from rocksdict's own config file (Rust std::io, no errno attribute)
    assert type(translate(PermissionError("Permission denied (os error 13)"), p)) \
        is errors.StoreReadOnly


def test_damaged_wal_record_fails_the_open_instead_of_dropping_what_follows(tmp_path):
    """Rows still only in the WAL (the writer was killed before any flush): bytes flipped in the
    middle of the log. RocksDB's default recovery would open with the rows before the damage
    and drop the rest without a word (1,500 of 3,000 here); the store refuses to open."""
    import signal
    import subprocess
    import sys
    path = str(tmp_path / "store")
    with hibase.connect(path) as db:
        db.create_table("t", {"f": {}})
    code = ("import sys, hibase\n"
            "db = hibase.connect(sys.argv[1]); t = db.table('t')\n"
            "for i in range(3000): t.put(b'k%05d' % i, {b'f:a': b'v' * 50})\n"
            "print('done', flush=True)\n"
            "import time; time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "done"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    log = max(glob.glob(os.path.join(path, "*.log")), key=os.path.getsize)
    assert os.path.getsize(log) > 100_000  # the rows are in the log, not in table files
    intact = str(tmp_path / "intact")
    shutil.copytree(path, intact)
    flip(log, os.path.getsize(log) // 2, 4)
    with pytest.raises(errors.StoreCorrupted):
        hibase.connect(path).close()
    with hibase.connect(intact) as db:  # the same log undamaged: every row
        assert sum(1 for _ in db.table("t").scan()) == 3000


def test_check_reports_an_inexact_index_on_both_backends(backend):
    """`hibase check` on a folder or a thrift:// URL: OK, then exit 1 once an index entry is
    deleted behind the index's back."""
    from hibase.index.spec import index_table
    db = backend.connect()
    db.create_table("t", {"f": {}}, columns={"f:a": "int"})
    db.create_index("t", "by_a", ["f:a"])
    t = db.table("t")
    for i in range(50):
        t.put(b"r%02d" % i, {b"f:a": b"%d" % (i % 5)})
    db.close()
    got = _check(backend.url)
    assert got.exit_code == 0 and "index t.by_a: 50 entries, exact" in got.output, got.output
    db = backend.connect()
    key, _ = next(iter(db.store.kv_scan(index_table("t"))))
    db.store.commit([], [(index_table("t"), key, None)])
    db.close()
    got = _check(backend.url)
    assert got.exit_code == 1 and "PROBLEM t.by_a: missing 1" in got.output, got.output


def test_check_alongside_a_writer(store):
    """A writer flushing meanwhile changes the folder's files: check says so instead of
    reporting them, and still reads everything through the checksums."""
    import subprocess
    import sys
    code = ("import sys, hibase\n"
            "db = hibase.connect(sys.argv[1]); t = db.table('t')\n"
            "print('open', flush=True)\n"
            "i = 0\n"
            "while True:\n"
            "    t.put(b'w%07d' % i, {b'f:a': b'1'}); i += 1\n"
            "    if i % 500 == 0: db.store.flush()\n")
    proc = subprocess.Popen([sys.executable, "-c", code, store], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "open"
        got = _check(store)
    finally:
        proc.kill()
        proc.wait()
    assert got.exit_code == 0, got.output
    assert f"process {proc.pid} writes to it" in got.output


# -- the write-ahead log's tail (hibase check; issue 24) ---------------------------------------

def _store_in_its_wal(tmp_path) -> tuple[str, str, list[int]]:
    """A copy, taken while its writer has it open, of a store whose rows are only in its
    write-ahead log (as a killed writer leaves it): its folder, its log and the log's size after
    each of its 41 writes (40 single puts, then one 100 KB batch: FIRST, MIDDLE, LAST records)."""
    path, copy = str(tmp_path / "store"), str(tmp_path / "copy")
    sizes = []
    with hibase.connect(path) as db:
        db.create_table("t", {"f": {}})
        t = db.table("t")
        log = max(glob.glob(os.path.join(path, "*.log")))
        for i in range(40):
            t.put(b"r%03d" % i, {b"f:a": b"v" * 300})
            sizes.append(os.path.getsize(log))
        with t.batch() as b:
            for i in range(100):
                b.put(b"big%03d" % i, {b"f:a": bytes(range(256)) * 4})
        sizes.append(os.path.getsize(log))
        shutil.copytree(path, copy)
    os.remove(os.path.join(copy, "LOCK"))
    return copy, os.path.join(copy, os.path.basename(log)), sizes


def _rows(path: str) -> int:
    with hibase.connect(path) as db:
        return sum(1 for _ in db.table("t").scan())


def test_check_reports_a_torn_wal_tail(tmp_path):
    """A log cut inside its last record (what a power cut leaves of writes the OS had not
    written yet) reopens with fewer rows and no error: `hibase check` names the log and the
    byte where the torn record starts, exit code 1. A whole log checks OK."""
    path, log, sizes = _store_in_its_wal(tmp_path)
    assert sizes[-1] > sizes[-2] + 3 * 32768  # the batch spans blocks
    got = _check(path)
    assert got.exit_code == 0 and got.output.strip().endswith(": OK"), got.output
    with open(log, "r+b") as f:
        f.truncate(sizes[38] + 100)  # inside put 39's record
    got = _check(path)
    assert got.exit_code == 1, got.output
    assert (f"PROBLEM {log}: write-ahead log {os.path.basename(log)} does not end on a whole "
            f"record: at byte {sizes[38]} of {sizes[38] + 100}, ends inside a record") \
        in got.output, got.output
    assert _rows(path) == 39  # RocksDB drops the torn record quietly: the report is the warning
    got = _check(path)  # the writable open replayed the log into a new one
    assert got.exit_code == 0, got.output


def test_check_reports_a_batch_cut_between_its_fragments(tmp_path):
    """The 100 KB batch's FIRST fragment fills the rest of a block: cut at that block's end,
    every record left is whole but the batch has no LAST fragment."""
    path, log, sizes = _store_in_its_wal(tmp_path)
    block_end = (sizes[-2] // 32768 + 1) * 32768
    with open(log, "r+b") as f:
        f.truncate(block_end)
    got = _check(path)
    assert got.exit_code == 1, got.output
    assert (f"at byte {sizes[-2]} of {block_end}, ends inside a batch split across blocks"
            in got.output), got.output
    assert _rows(path) == 40


def test_check_reports_a_wal_record_with_a_bad_checksum(tmp_path):
    """The last single put's payload changed on disk (a sector torn half-written): its checksum
    says so."""
    path, log, sizes = _store_in_its_wal(tmp_path)
    with open(log, "r+b") as f:
        f.truncate(sizes[39])
    flip(log, sizes[39] - 20, 4)
    got = _check(path)
    assert got.exit_code == 1, got.output
    assert f"at byte {sizes[38]} of {sizes[39]}, a record whose checksum does not match" \
        in got.output, got.output
