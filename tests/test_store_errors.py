"""The embedded store's I/O failures arrive as HibaseErrors of their kind (issue 15, item 2):
a full disk is StoreFull, a folder made read-only is StoreReadOnly, each naming the file, with
a one-line message; a read-only folder still opens with read_only=True.

Real conditions, no mocks: a 4 MB tmpfs for the full disk (mounting needs root, which CI has),
and a store owned by an unprivileged user whose folder is chmod-ed read-only while a process of
that user has it open (root ignores file modes, so as root that process runs as `nobody`)."""

from __future__ import annotations

import glob
import grp
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

import hibase
from hibase import errors

PY = sys.executable


@pytest.fixture
def small_disk():
    """A 4 MB tmpfs, half of it a filler file to delete when the test wants room back."""
    if os.geteuid() != 0:
        pytest.skip("mounting a 2 MB tmpfs needs root (CI runs as root)")
    where = tempfile.mkdtemp(prefix="hibase-full-")
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4M", "tmpfs", where],
                         capture_output=True, text=True)
    if got.returncode != 0:
        os.rmdir(where)
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.strip()}")
    with open(os.path.join(where, "filler"), "wb") as f:
        f.write(b"\0" * 2 * 1024 * 1024)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", where], check=False)
        os.rmdir(where)


FILL = """
import sys, hibase
from hibase import errors
db = hibase.connect(sys.argv[1])
db.create_table("t", {"f": {}})
t = db.table("t")
acked = 0
try:
    for i in range(100_000):
        t.put(b"r%06d" % i, {b"f:a": b"%06d" % i + b"x" * 200})
        acked = i + 1
except errors.StoreFull as e:
    assert "\\n" not in str(e) and "no space left" in str(e), str(e)
    print("StoreFull", acked, e.path)
for name, step in [("put", lambda: t.put(b"later", {b"f:a": b"1"})),
                   ("create_table", lambda: db.create_table("u", {"f": {}})),
                   ("row", lambda: t.row(b"r000000")),
                   ("close", db.close)]:
    try:
        got = step()
        print(name, "ok", got == {b"f:a": b"000000" + b"x" * 200} if name == "row" else "")
    except errors.HibaseError as e:
        print(name, type(e).__name__)
import os
os.remove(sys.argv[2])  # room back: the same process opens the store again
with hibase.connect(sys.argv[1]) as again:
    print("reopened", len(list(again.table("t").scan())))
"""


def test_disk_full_is_store_full_and_loses_nothing_acknowledged(small_disk):
    path = os.path.join(small_disk, "store")
    filler = os.path.join(small_disk, "filler")
    got = subprocess.run([PY, "-c", FILL, path, filler], capture_output=True, text=True,
                         timeout=120)
    assert got.returncode == 0, got.stderr  # no bare Exception escaped
    lines = got.stdout.splitlines()
    kind, acked, where = lines[0].split()
    assert kind == "StoreFull" and int(acked) > 1000
    assert where.startswith(path) and where.endswith(".log")  # names the file it was writing
    steps = dict(line.split(" ", 1) for line in lines[1:])
    # a failed close released the folder: the same process reopens it once there is room
    assert steps["reopened"] == acked, steps
    # later writes fail the same way, reads still work, close reports the unflushable data
    assert steps["put"] == "StoreFull" and steps["create_table"] == "StoreFull", steps
    assert steps["row"] == "ok True", steps
    assert steps["close"] in ("StoreFull", "ok "), steps
    with hibase.connect(path) as db:
        t = db.table("t")
        rows = dict(t.scan())
        assert len(rows) == int(acked)  # the failed put wrote nothing, every acknowledged one is
        assert b"r%06d" % int(acked) not in rows and b"later" not in rows
        assert "u" not in db.tables()
        db.create_table("u", {"f": {}})  # the create that failed left nothing in the way
        t.put(b"after", {b"f:a": b"1"})
        assert t.row(b"after") == {b"f:a": b"1"}


# -- a folder that cannot be written ------------------------------------------------------------

def _run_unprivileged(code: str, *args: str) -> subprocess.CompletedProcess:
    """Run `code` with chmod in force: as `nobody` when we are root."""
    drop: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv (util-linux) to drop to nobody")
        group = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
        drop = ["setpriv", "--reuid=nobody", f"--regid={group}", "--clear-groups"]
    return subprocess.run([*drop, PY, "-c", textwrap.dedent(code), *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def user_dir():
    """A folder the unprivileged user owns (pytest's tmp_path is private to root)."""
    where = tempfile.mkdtemp(prefix="hibase-ro-test-")
    os.chmod(where, 0o777)
    try:
        yield where
    finally:
        subprocess.run(["chmod", "-R", "u+w", where], check=False)
        subprocess.run(["rm", "-rf", where], check=False)


MAKE = """
import sys, hibase
db = hibase.connect(sys.argv[1])
db.create_table("t", {"f": {}}, columns={"f:a": "int"})
t = db.table("t")
for i in range(100):
    t.put(b"r%03d" % i, {b"f:a": b"%d" % i})
db.close()
"""

STEPS = """
import os, sys, hibase
from hibase import errors
path = sys.argv[1]

def step(name, fn):
    try:
        fn()
        print(name + "|ok")
    except errors.HibaseError as e:
        assert "\\n" not in str(e)
        print(name + "|" + type(e).__name__, getattr(e, "path", None))
    except BaseException as e:
        print(name + "|ESCAPED", type(e).__name__, e)

os.chmod(path, 0o555)
step("connect", lambda: hibase.connect(path))
ro = hibase.connect(path, read_only=True)
print("read_only rows|%d" % len(list(ro.table("t").scan())), ro.table("t").row(b"r007"))
step("read_only put", lambda: ro.table("t").put(b"x", {b"f:a": b"1"}))
ro.close()
os.chmod(path, 0o755)

db = hibase.connect(path)
t = db.table("t")
os.chmod(path, 0o555)           # read-only while open: every writing call refuses up front
step("create_index", lambda: db.create_index("t", "by_a", ["f:a"]))
step("compact", lambda: db.compact_table("t"))
step("put", lambda: t.put(b"x", {b"f:a": b"1"}))
def batch():
    with t.batch() as b:
        b.put(b"y", {b"f:a": b"2"})
step("batch", batch)
step("delete", lambda: t.delete(b"r001"))
step("counter", lambda: t.counter_inc(b"c", b"f:n"))
step("split", lambda: db.split("t", b"r050"))
step("disable_table", lambda: db.disable_table("t"))
step("create_table", lambda: db.create_table("u", {"f": {}}))
step("delete_table", lambda: db.delete_table("t", disable=True))
step("flush", db.store.flush)
print("rows while read-only|%d" % len(list(t.scan())), db.indexes("t"))
os.chmod(path, 0o755)           # writable again: the store takes writes again
step("put when writable", lambda: t.put(b"z", {b"f:a": b"3"}))
step("create_index when writable", lambda: db.create_index("t", "by_a", ["f:a"]))
step("close", db.close)
"""


def test_read_only_folder(user_dir):
    path = os.path.join(user_dir, "store")
    made = _run_unprivileged(MAKE, path)
    assert made.returncode == 0, made.stderr
    got = _run_unprivileged(STEPS, path)
    assert got.returncode == 0, got.stderr
    out = dict(line.split("|", 1) for line in got.stdout.splitlines())
    assert "ESCAPED" not in got.stdout, got.stdout
    # opening for writing is refused, naming the folder; read_only=True reads every row
    assert out["connect"].startswith("StoreReadOnly " + path), got.stdout
    assert out["read_only rows"] == "100 {b'f:a': b'7'}", got.stdout
    assert out["read_only put"].startswith("StoreReadOnly"), got.stdout
    # made read-only while open: RocksDB's open WAL and MANIFEST would still take a put, an
    # index's column families, a compaction; every writing call refuses up front instead,
    # naming the folder, writes nothing, and the store works again once the folder is writable
    for step in ("create_index", "compact", "put", "batch", "delete", "counter", "split",
                 "disable_table", "create_table", "delete_table", "flush"):
        assert out[step] == f"StoreReadOnly {path}", (step, got.stdout)
    assert out["rows while read-only"] == "100 []", got.stdout
    for step in ("put when writable", "create_index when writable", "close"):
        assert out[step] == "ok", (step, got.stdout)
    # nothing refused was written, everything acknowledged is there
    with hibase.connect(path) as db:
        t = db.table("t")
        assert [s["name"] for s in db.indexes("t")] == ["by_a"]
        assert t.row(b"x") == {} and t.row(b"y") == {} and t.row(b"r001") == {b"f:a": b"1"}
        assert len(list(t.scan())) == 101 and t.row(b"z") == {b"f:a": b"3"}
        assert "u" not in db.tables()


def test_create_store_under_read_only_folder(user_dir):
    got = _run_unprivileged("""
        import os, sys, hibase
        parent = os.path.join(sys.argv[1], "parent")
        os.mkdir(parent)
        os.chmod(parent, 0o555)
        try:
            hibase.connect(os.path.join(parent, "new"))
        except hibase.errors.StoreReadOnly as e:
            print("StoreReadOnly", e.path)
    """, user_dir)
    assert got.stdout.strip() == f"StoreReadOnly {user_dir}/parent/new", got.stdout + got.stderr


def test_corruption_in_a_read_only_folder_names_the_store_file(user_dir):
    """A read-only folder is opened through a private folder of links; errors still name the
    store's own file."""
    path = os.path.join(user_dir, "store")
    assert _run_unprivileged(MAKE + "\nimport hibase\nwith hibase.connect(sys.argv[1]) as db:\n"
                             "    db.store.flush()\n", path).returncode == 0
    sst = max(glob.glob(os.path.join(path, "*.sst")), key=os.path.getsize)
    with open(sst, "r+b") as f:
        f.seek(os.path.getsize(sst) // 3)
        f.write(b"\xff" * 16)
    subprocess.run(["chmod", "-R", "a-w", path], check=True)
    got = _run_unprivileged("""
        import sys, hibase
        try:
            with hibase.connect(sys.argv[1], read_only=True) as db:
                list(db.table("t").scan())
        except hibase.errors.StoreCorrupted as e:
            print(e.path)
    """, path)
    assert got.stdout.strip() == sst, got.stdout + got.stderr


def test_read_only_open_leaves_no_trace(user_dir):
    path = os.path.join(user_dir, "store")
    assert _run_unprivileged(MAKE, path).returncode == 0
    before = sorted(os.listdir(path))
    subprocess.run(["chmod", "-R", "a-w", path], check=True)
    got = _run_unprivileged("""
        import sys, hibase
        with hibase.connect(sys.argv[1], read_only=True) as db:
            print(len(list(db.table("t").scan())))
    """, path)
    assert got.stdout.strip() == "100", got.stderr
    assert sorted(os.listdir(path)) == before
