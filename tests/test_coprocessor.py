"""hibase's region-server coprocessor (hibase.coprocessor, io.hibase.IndexObserver):

- the Java codec gives Python's bytes for every type (tests/golden/codec_vectors.txt, written by
  tests/codec_vectors.py, checked by CodecVectors.main);
- on real HBase, rows written by any client (happybase, HBase's Java client) get the same index
  rows, value counts and query answers as rows written through hibase's client-side upkeep;
- a put of one row is one Thrift call; a region server killed during a write stream loses no
  acknowledged row and leaves indexes that verify.
"""

from __future__ import annotations

import math
import os
import random
import struct
import subprocess
import sys
import time

import happybase
import pytest

import hibase
from servers import cluster_url as _url
from servers import coprocessor_cluster, required, wait_until
from hibase import codec

import codec_vectors

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "codec_vectors.txt")


def test_vector_file_is_what_python_writes():
    """The checked-in vectors are codec.py's answers today (regenerate with
    `python tests/codec_vectors.py > tests/golden/codec_vectors.txt`)."""
    with open(GOLDEN) as fh:
        assert fh.read() == codec_vectors.vectors()


def test_java_codec_gives_pythons_bytes():
    from hibase.coprocessor import check_codec_vectors
    with required():  # java, javac, mvn
        got = check_codec_vectors(GOLDEN)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-2000:]
    assert "failed 0" in got.stdout
    n = int(got.stdout.split("checked ")[1].split(",")[0])
    assert n == len([ln for ln in codec_vectors.vectors().splitlines()
                     if ln and not ln.startswith("#")])


def test_cli_builds_the_jar_and_says_how_to_load_it():
    import json

    from click.testing import CliRunner

    from hibase.cli import cli
    from hibase.cluster.jars import classpath
    with required():
        classpath(progress=False)
    got = CliRunner().invoke(cli, ["cluster", "coprocessor", "--json"])
    assert got.exit_code == 0, got.output
    info = json.loads(got.output.strip().splitlines()[-1])
    assert os.path.exists(info["jar"]) and info["class"] == "io.hibase.IndexObserver"
    assert info["site_property"] == ("hbase.coprocessor.region.classes=io.hibase.IndexObserver,"
                                     "io.hibase.ScanObserver")
    names = subprocess.run(["jar", "tf", info["jar"]], capture_output=True, text=True).stdout
    assert "io/hibase/IndexObserver.class" in names and "io/hibase/HibaseCodec.class" in names


def test_jar_out_writes_the_deployable_jar_and_what_to_do_with_it(tmp_path):
    """--jar-out DIR: DIR/hibase-coprocessor.jar (the classes of the jar the cache holds), and
    a help and output that name real commands and no path of this machine's cache."""
    from click.testing import CliRunner

    from hibase.cli import cli
    from hibase.cluster.jars import classpath
    with required():
        classpath(progress=False)
    got = CliRunner().invoke(cli, ["cluster", "coprocessor", "--jar-out", str(tmp_path / "d")])
    assert got.exit_code == 0, got.output
    jar = tmp_path / "d" / "hibase-coprocessor.jar"
    names = subprocess.run(["jar", "tf", str(jar)], capture_output=True, text=True).stdout
    assert "io/hibase/IndexObserver.class" in names and "io/hibase/Recovery.class" in names
    lines = dict(ln.split("\t", 1) for ln in got.output.splitlines() if "\t" in ln)
    assert lines["jar"] == str(jar) and lines["hbase"] == "2.6"
    assert "|io.hibase.IndexObserver|1073741823|" in lines["table"]
    assert "hibase index create" in lines["then"]
    assert "file://" not in got.output
    text = CliRunner().invoke(cli, ["cluster", "coprocessor", "--help"]).output
    assert "create-index" not in text and "hibase index create" in text
    for topic in ("2.6", "abortonerror", "table_att_unset", "Upgrade", "drop and create"):
        assert topic in text, topic


# -- real HBase ----------------------------------------------------------------------------------

COLUMNS = {"f:i": "long", "f:s": "string", "f:d": "double binary", "f:c": "char",
           "f:b": "bytes", "f:n": "int binary", "f:x": "float", "g:z": "string"}
INDEXES = [  # (name, columns, covering, local): made in this order on both tables
    ("by_i", ["f:i"], ["f:s"], False),
    ("by_sdn", ["f:s", "f:d", "f:n"], [], False),
    ("by_c", ["f:c"], ["f:b", "f:x"], False),
    ("loc_s", ["f:s"], ["f:i"], True),
    ("loc_dn", ["f:d", "f:i"], [], True),
]
LATE = ("by_x", ["f:x"], ["g:z"], False)  # made after the rows: a build


def _cell(col: str, value) -> bytes:
    return codec.encode_cell(codec.parse_type(COLUMNS[col]), value)


def _random_row(rnd: random.Random) -> dict[bytes, bytes]:
    pools = {
        "f:i": [0, -1, 1, 2**63 - 1, -2**63, 42, -42, 7],
        "f:s": ["", "a", "a\x00b", "日本", "😀", "zz", "a"],
        "f:d": [0.0, -0.0, -1.5, 1.5, math.inf, -math.inf, 1e-300, 2.5],
        "f:c": ["a", "é", "\uffff", "\x00", "Z"],
        "f:b": [b"", b"\x00", b"\x00\xff", b"raw"],
        "f:n": [0, -1, 2**31 - 1, -2**31, 5],
        "f:x": [0.5, -0.0, 3.4028234663852886e38, -2.0, 1.0],
        "g:z": ["g", "h"],
    }
    row = {}
    for col, pool in pools.items():
        if rnd.random() < 0.75:
            row[col.encode()] = _cell(col, rnd.choice(pool))
    if rnd.random() < 0.1:  # NaN: indexed as NULL
        row[b"f:d"] = struct.pack(">d", math.nan)
    if rnd.random() < 0.1:
        row[b"f:x"] = b"nan"
    return row


def _operations(seed: int = 7) -> list[tuple]:
    rnd = random.Random(seed)
    rows = [b"r%03d" % i for i in range(60)] + [b"k\x00\xff", b"\xff\xfe"]
    ops: list[tuple] = [("put", r, _random_row(rnd)) for r in rows]
    for _ in range(60):
        r = rnd.choice(rows)
        kind = rnd.random()
        if kind < 0.55:
            ops.append(("put", r, _random_row(rnd)))
        elif kind < 0.8:
            cols = rnd.sample(sorted(c.encode() for c in COLUMNS), rnd.randint(1, 3))
            ops.append(("delete", r, cols))
        else:
            ops.append(("delete", r, None))
    ops.append(("put", b"only-g", {b"g:z": b"g"}))  # a row with no f cell: NULL lists
    return ops


def _apply(table, ops: list[tuple]) -> None:
    """hibase's Table and happybase's Table take the same calls."""
    for op, row, arg in ops:
        if op == "put":
            if arg:
                table.put(row, arg)
        elif arg is None:
            table.delete(row)
        else:
            table.delete(row, columns=arg)


def _index_rows(conn: happybase.Connection, hbase_table: str) -> tuple[dict, dict]:
    """(entries {key: v:v}, counts {key: sum of family c, > 0}) of an index HBase table."""
    entries, counts = {}, {}
    for key, cells in conn.table(hbase_table).scan():
        if b"v:v" in cells:
            entries[key] = cells[b"v:v"]
        n = sum(struct.unpack(">q", v)[0] for c, v in cells.items() if c.startswith(b"c:"))
        if n > 0:
            counts[key] = n
    return entries, counts


@pytest.fixture
def hbase(request):
    return coprocessor_cluster(request)


_n = [0]


def _prefix() -> str:
    _n[0] += 1
    return f"cp{os.getpid()}x{_n[0]}"


def test_foreign_writes_make_the_same_index_rows_as_client_upkeep(hbase):
    """Table A: written through hibase, indexes kept by the client (server_upkeep=0). Table B:
    the same writes through plain happybase, indexes kept by the coprocessor. Their index
    tables (global and local) hold the same rows and values, and the same counts."""
    prefix = _prefix()
    client = hibase.connect(_url(hbase, prefix, server_upkeep=0))
    server = hibase.connect(_url(hbase, prefix))
    conn = happybase.Connection("127.0.0.1", hbase.thrift_port, timeout=60000)
    try:
        for db, name in ((client, "a"), (server, "b")):
            db.create_table(name, {"f": {}, "g": {}}, columns=COLUMNS)
            for iname, cols, cover, local in INDEXES:
                db.create_index(name, iname, cols, covering=cover, local=local)
        assert not any(s.server for s in client.indexer.specs("a"))
        assert all(s.server for s in server.indexer.specs("b"))
        ops = _operations()
        _apply(client.table("a"), ops)
        _apply(conn.table(f"{prefix}_b"), ops)
        for db, name in ((client, "a"), (server, "b")):
            iname, cols, cover, local = LATE
            db.create_index(name, iname, cols, covering=cover, local=local)
        for kind in ("__idx__", "__lidx__"):
            a = _index_rows(conn, f"{prefix}_hibase_kv{kind}a")
            b = _index_rows(conn, f"{prefix}_hibase_kv{kind}b")
            assert a[0] and a[1]
            assert a[0] == b[0], kind  # every entry: key, verified flag, covered values
            assert a[1] == b[1], kind  # every value count
        for iname, *_ in [*INDEXES, LATE]:
            assert server.verify_index("b", iname)["ok"], iname
        ta, tb = client.table("a"), server.table("b")
        for where in ("f.i = 7", "f.i IS NULL", "f.s = 'a'", "f.s > 'a'", "f.c = 'é'",
                      "f.d < 0", "f.s = 'a' AND f.d = 2.5", "f.x = 1.0", "f.d IS NULL"):
            assert sorted(ta.where(where)) == sorted(tb.where(where)), where
            assert sorted(tb.where(where)) == sorted(tb.where(where, full_scan=True)), where
    finally:
        conn.close()
        client.close()
        server.close()


class _JavaWriter:
    """tests/java/ShellWrites.java in a JVM: checkAndMutate through HBase's Java client (HBase's
    shell has no statement for it; its other writes go through `hibase cluster shell`)."""

    def __init__(self, cluster, tmp_path):
        from hibase.cluster.jars import _tool, classpath
        jars = classpath(progress=False)
        out = tmp_path / "shellwrites"
        out.mkdir()
        src = os.path.join(os.path.dirname(__file__), "java", "ShellWrites.java")
        subprocess.run([_tool("javac", ""), "-nowarn", "-d", str(out), "-cp",
                        os.pathsep.join(jars), src], check=True, capture_output=True)
        cmd = cluster._java([str(out), *jars], "ShellWrites", 256, str(tmp_path / "sw.log"))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(tmp_path / "sw.err", "wb"), text=True,
                                     cwd=cluster.dir)
        assert self.proc.stdout.readline().startswith("ok"), (tmp_path / "sw.err").read_text()

    def __call__(self, *words: str) -> str:
        self.proc.stdin.write(" ".join(words) + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def _hbase_shell(cluster, statements: list[str]) -> None:
    """Run `statements` in HBase's own shell (`hibase cluster shell`, one JVM for all)."""
    out = subprocess.run([sys.executable, "-m", "hibase", "cluster", "shell", cluster.dir],
                         input="\n".join(statements) + "\n", capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def test_rows_written_by_any_client_are_found_like_hibase_rows(hbase, tmp_path):
    """Rows written through hibase, plain happybase and HBase's own shell (put, deleteall,
    delete of one cell, incr, append) are found alike on global, composite, covered and local
    indexes; every index verifies, the eventually consistent ones once nothing lags;
    increments and appends (computed by the coprocessor from the row read under the lock, as
    HBase computes them) and checkAndMutate (HBase's Java client) are indexed too."""
    prefix = _prefix()
    db = hibase.connect(_url(hbase, prefix))
    conn = happybase.Connection("127.0.0.1", hbase.thrift_port, timeout=60000)
    java = _JavaWriter(hbase, tmp_path)
    try:
        db.create_table("t", {"f": {}}, columns={"f:a": "string", "f:n": "long",
                                                  "f:m": "string", "f:k": "long binary"})
        db.create_index("t", "g_a", ["f:a"])
        db.create_index("t", "g_an", ["f:a", "f:n"])
        db.create_index("t", "g_n_cov", ["f:n"], covering=["f:a", "f:m"])
        db.create_index("t", "l_a", ["f:a"], local=True, covering=["f:n"])
        db.create_index("t", "g_k", ["f:k"])
        # eventually consistent ones: exact once nothing lags (issue 41)
        db.create_index("t", "e_a", ["f:a"], covering=["f:m"], consistency="eventual")
        db.create_index("t", "el_n", ["f:n"], local=True, consistency="eventual")
        t, p = db.table("t"), conn.table(f"{prefix}_t")
        hbase_name = f"{prefix}_t"
        shell = []
        for i in range(30):
            data = {b"f:a": b"v%d" % (i % 4), b"f:n": b"%d" % (i % 5 - 2), b"f:m": b"m%d" % i}
            row = b"%02d" % i
            if i % 3 == 0:
                t.put(b"h" + row, data)
            elif i % 3 == 1:
                p.put(b"p" + row, data)
            else:
                shell += [f"put '{hbase_name}', 's{row.decode()}', '{col.decode()}', "
                          f"'{v.decode()}'" for col, v in data.items()]
        # updates and deletes, each client on the others' rows too
        p.put(b"h00", {b"f:a": b"v9"})
        shell += [f"put '{hbase_name}', 'p01', 'f:a', 'v9'",
                  f"deleteall '{hbase_name}', 'h03'",
                  f"delete '{hbase_name}', 'p04', 'f:a'",
                  *[f"incr '{hbase_name}', 'p10', 'f:k'"] * 3,
                  f"incr '{hbase_name}', 'h09', 'f:k'",
                  # append: computed from the stored cell, as HBase does
                  f"append '{hbase_name}', 'h12', 'f:a', '-x'"]
        _hbase_shell(hbase, shell)
        t.put(b"s02", {b"f:n": b"77"})
        p.delete(b"s05")
        p.delete(b"h06", columns=[b"f:n"])
        t.delete(b"p07", columns=[b"f:a"])
        assert [r for r, _ in t.where("f.k = 3")] == [b"p10"]
        assert [r for r, _ in t.where("f.k = 1")] == [b"h09"]
        assert [r for r, _ in t.where("f.a = 'v0-x'")] == [b"h12"]
        assert java("checkandput", hbase_name, b"c1".hex(), "f:a", b"v7".hex()) == "ok true"
        assert java("checkandput", hbase_name, b"c1".hex(), "f:a", b"v8".hex()) == "ok false"
        assert [r for r, _ in t.where("f.a = 'v7'")] == [b"c1"]
        assert not list(t.where("f.a = 'v8'"))
        for where in ("f.a = 'v9'", "f.a = 'v1'", "f.a = 'v2' AND f.n = 0", "f.n = 77",
                      "f.n IS NULL", "f.a IS NULL", "f.a >= 'v1'", "f.n < 0", "f.m = 'm8'",
                      "f.k > 0", "f.k IS NULL"):
            want = sorted(t.where(where, full_scan=True))
            assert sorted(t.where(where)) == want, where
        assert sorted(r for r, _ in t.where("f.a = 'v9'")) == [b"h00", b"p01"]
        assert [r for r, _ in t.where("f.n = 77")] == [b"s02"]
        assert not list(t.where("f.m = 'm3'"))  # deleteall
        assert sorted(r for r, _ in t.where("f.a IS NULL")) == [b"h06", b"p04", b"p07"] or \
            sorted(r for r, _ in t.where("f.a IS NULL")) == [b"p04", b"p07"]
        wait_until(lambda: db.index_lag("t", "e_a")["pending"] == 0, timeout=60, step=0.2)
        for name in ("g_a", "g_an", "g_n_cov", "l_a", "g_k", "e_a", "el_n"):
            report = db.verify_index("t", name)
            assert report["ok"], report
    finally:
        java.close()
        conn.close()
        db.close()


def test_a_put_of_one_row_is_one_call(hbase):
    """With the coprocessor keeping the indexes, writing a row is the data call alone
    (client-side upkeep: 4 calls, tests/test_hbase_roundtrips.py), whatever the number of
    indexes; a delete too. Reads are unchanged."""
    prefix = _prefix()
    admin = hibase.connect(_url(hbase, prefix))
    db = hibase.connect(_url(hbase, prefix).replace("catalog_lease_ms=0",
                                                    "catalog_lease_ms=60000"))
    try:
        admin.create_table("t", {"f": {}}, columns={"f:a": "string", "f:b": "string"})
        admin.create_index("t", "by_a", ["f:a"], covering=["f:b"])
        admin.create_index("t", "by_b", ["f:b"])
        admin.create_index("t", "loc_a", ["f:a"], local=True)
        t = db.table("t")
        t.put(b"r0", {b"f:a": b"x"})  # the first write checks the catalog (then its lease)

        def calls(fn):
            before = db.stats()["store_calls"]
            fn()
            after = db.stats()["store_calls"]
            return {m: n - before.get(m, 0) for m, n in after.items()
                    if n != before.get(m, 0)}

        assert calls(lambda: t.put(b"r1", {b"f:a": b"x", b"f:b": b"y"})) == {"mutateRowsTs": 1}
        assert calls(lambda: t.delete(b"r0")) == {"mutateRowsTs": 1}
        assert [r for r, _ in t.where("f.a = 'x'")] == [b"r1"]
        assert [r for r, _ in t.where("f.b = 'y'")] == [b"r1"]
    finally:
        db.close()
        admin.close()


def test_hot_cache_sees_other_clients_writes_at_once(hbase):
    """A client's in-process cache holds a value's set; plain happybase writes move rows into
    and out of that value; the client's next query answers with the new rows, within its
    catalog lease (the coprocessor rewrites the catalog row ver/<table> after each batch,
    before acknowledging it; a cached set answers only under the version read at the lookup:
    tests/test_cache_coherence.py has the many-process check)."""
    prefix = _prefix()
    admin = hibase.connect(_url(hbase, prefix))
    db = hibase.connect(_url(hbase, prefix).replace("catalog_lease_ms=0",
                                                    "catalog_lease_ms=60000"),
                        cache="memory", cache_policy="lru")
    conn = happybase.Connection("127.0.0.1", hbase.thrift_port, timeout=60000)
    try:
        admin.create_table("t", {"f": {}}, columns={"f:a": "string"})
        admin.create_index("t", "by_a", ["f:a"])
        t = db.table("t")
        for i in range(5):
            t.put(b"r%d" % i, {b"f:a": b"x"})
        assert len(list(t.where("f.a = 'x'"))) == 5
        assert len(list(t.where("f.a = 'x'"))) == 5  # hot: from the cache
        p = conn.table(f"{prefix}_t")
        p.put(b"r9", {b"f:a": b"x"})
        p.delete(b"r0")
        got = sorted(r for r, _ in t.where("f.a = 'x'"))
        assert got == [b"r1", b"r2", b"r3", b"r4", b"r9"]
    finally:
        conn.close()
        db.close()
        admin.close()


@pytest.mark.parametrize("how", ["on_demand", "reopen"])
def test_a_dead_incarnations_leftovers_are_recovered(hbase, how):
    """What a region server that died between a batch's phases leaves, written here by hand
    as IndexObserver writes it (a dead incarnation's count cells are named by the region and
    an incarnation that is not the live one), is recovered by the region: unverified entries
    resolved against their rows (verified when the row has the entry, else deleted) and the
    dead cells' pending counts settled to the entries' count, in a global and a local index.
    The region runs this when it opens after an incarnation that did not close cleanly (a
    replay of a dead server's WAL, test_torture_regionservers.py kills one, or no closed mark
    in hibase_meta inc/<region>: "reopen" disables and enables the table); the get attribute
    hibase.recover runs it now ("on_demand"). Before: verify finds every leftover and
    COUNT(*) streams the rows (the counts are pending); after: 0 differences. A clean close
    leaves its mark: the open after it recovers nothing."""
    from hibase.store.base import encode_count

    prefix = _prefix()
    db = hibase.connect(_url(hbase, prefix))
    try:
        db.create_table("t", {"f": {}}, columns={"f:a": "string"})
        db.create_index("t", "by_a", ["f:a"])
        db.create_index("t", "loc_a", ["f:a"], local=True)
        assert all(s.server for s in db.indexer.specs("t"))
        t = db.table("t")
        t.put(b"r1", {b"f:a": b"x"})
        t.put(b"r3", {b"f:a": b"y"})
        rpc, T = db.store.rpc, db.store.T
        name = rpc.call("getTableRegions", b"t")[0].name  # table,start,id.ENCODED.
        dead = b"c:" + name.split(b".")[-2] + os.urandom(8) + b"\x00\x00\x00\x01"
        assert len(dead) == 2 + 44

        def unverified(row: bytes) -> bytes:
            return b"\x00" + bytes([0x91, 0xc4, len(row)]) + row  # 0x00 + msgpack([row])

        def put(table: bytes, key: bytes, col: bytes, value: bytes) -> None:
            rpc.call("mutateRowsTs", table, [T.BatchMutation(row=key, mutations=[
                T.Mutation(column=col, value=value, isDelete=False)])],
                int(time.time() * 1000), {})

        value_keys = []
        for table in (b"hibase_kv__idx__t", b"hibase_kv__lidx__t"):
            keys = [k for k, _ in rpc.scan_raw(table.decode(), None, None, [b"v:v"])]
            kx = next(k[:-2] for k in keys if k.endswith(b"r1"))  # value keys of x and y
            ky = next(k[:-2] for k in keys if k.endswith(b"r3"))
            value_keys.append((table, ky))
            # r1 x -> y: phase 1 done, the data never landed (both entries unverified, y's
            # count grown and pending, x's pending)
            put(table, ky + b"r1", b"v:v", unverified(b"r1"))
            put(table, kx + b"r1", b"v:v", unverified(b"r1"))
            put(table, ky, dead, encode_count(1, 1))
            put(table, kx, dead, encode_count(0, 1))
            # r3 x -> y: landed, phase 3 never came (new entry unverified, the old one left)
            put(table, ky + b"r3", b"v:v", unverified(b"r3"))
            put(table, kx + b"r3", b"v:v", unverified(b"r3"))
        for index in ("by_a", "loc_a"):
            before = db.verify_index("t", index)
            assert before["extra"] == 2 and before["wrong_covered"] == 2, before
            assert before["pending_counts"] == 2, before
        assert db.sql("SELECT COUNT(*) FROM t WHERE f.a = 'y'") == [(1,)]
        assert sorted(r for r, _ in t.where("f.a = 'x'")) == [b"r1"]

        if how == "on_demand":
            rpc.call("getRowWithColumns", b"t", b"r1", [], {b"hibase.recover": b"1"})
        else:
            def reopen() -> None:
                rpc.call("disableTable", b"t")
                rpc.call("enableTable", b"t")
                rpc.call("getRowWithColumns", b"t", b"r1", [], {b"hibase.probe": b"1"})

            reopen()  # a clean close: its mark says the next open has nothing to recover
            time.sleep(3)
            assert db.verify_index("t", "by_a")["extra"] == 2
            # the live incarnation as a dead one leaves it: published, never marked closed
            put(b"hibase_meta", b"inc/" + name.split(b".")[-2], b"m:v", dead[2 + 32:2 + 40])
            reopen()
        deadline = time.monotonic() + 60
        while True:
            after = [db.verify_index("t", index) for index in ("by_a", "loc_a")]
            if all(a["ok"] for a in after) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert all(a["ok"] for a in after), after
        assert db.sql("SELECT COUNT(*) FROM t WHERE f.a = 'y'") == [(1,)]
        assert db.sql("SELECT COUNT(*) FROM t WHERE f.a = 'x'") == [(1,)]
        for table, ky in value_keys:  # settled: y has r3 only, counted by the live cell
            got = dict(rpc.scan_raw(table.decode(), ky, ky + b"\xff", [b"c"]))[ky]
            assert got[dead][1] == encode_count(0), got
        # dropping the table drops its regions' incarnation rows too
        inc = b"inc/" + name.split(b".")[-2]
        assert rpc.get_raw("hibase_meta", [inc], [b"m:v"])[0]
        db.delete_table("t", disable=True)
        assert not rpc.get_raw("hibase_meta", [inc], [b"m:v", b"m:closed"])[0]
    finally:
        db.close()


def test_a_build_request_writes_only_what_is_missing(hbase):
    """A server-side build sends each row as a request (hibase.reindex) the coprocessor
    answers from the row as stored: an entry already verified is left alone; an unverified
    one (a write marked it, and took its count) is written verified and not counted again;
    a missing one is written and counted, the count settled once the entry landed (begun
    pending before it, so a server dying between the two leaves it for recovery)."""
    from hibase.store.base import decode_count, encode_count

    prefix = _prefix()
    db = hibase.connect(_url(hbase, prefix))
    try:
        db.create_table("t", {"f": {}}, columns={"f:a": "string"})
        for i in range(3):
            db.table("t").put(b"r%d" % i, {b"f:a": b"x"})
        db.create_index("t", "by_a", ["f:a"])
        spec = next(s for s in db.indexer.specs("t") if s.name == "by_a")
        rpc, T = db.store.rpc, db.store.T
        idx = "hibase_kv__idx__t"
        keys = [k for k, _ in rpc.scan_raw(idx, None, None, [b"v:v"])]
        kx = keys[0][:-2]

        def count() -> tuple[int, bool]:
            cells = dict(rpc.scan_raw(idx, kx, kx + b"\xff", [b"c"]))[kx]
            return (sum(decode_count(v) for _, v in cells.values()),
                    all(len(v) == 8 for _, v in cells.values()))

        assert count() == (3, True)
        now = int(time.time() * 1000)
        rpc.call("mutateRowsTs", idx.encode(), [T.BatchMutation(row=kx + b"r1", mutations=[
            T.Mutation(column=b"v:v", value=b"\x00\x91\xc4\x02r1", isDelete=False)])], now, {})
        rpc.call("deleteAllRow", idx.encode(), kx + b"r2", {})
        # r2's entry went without its count: the count says 2 rows again
        rpc.call("mutateRowsTs", idx.encode(), [T.BatchMutation(row=kx, mutations=[
            T.Mutation(column=b"c:" + b"\x07" * 8, value=encode_count(-1), isDelete=False)])],
            now, {})
        assert count() == (2, True)
        before = {k: v for k, v in rpc.scan_raw(idx, None, None, [b"v:v"])}
        mutation = [T.Mutation(column=b"f:\x00hibase-reindex", value=b"", isDelete=False)]
        rpc.call("mutateRows", b"t", [T.BatchMutation(row=r, mutations=mutation)
                                      for r in (b"r0", b"r1", b"r2")],
                 {b"hibase.reindex": spec.alias.hex().encode()})
        after = {k: v for k, v in rpc.scan_raw(idx, None, None, [b"v:v"])}
        assert after[kx + b"r0"] == before[kx + b"r0"]  # verified: untouched
        assert after[kx + b"r1"][b"v:v"][1][:1] == b"\x01"  # unverified: verified, not counted
        assert after[kx + b"r2"][b"v:v"][1][:1] == b"\x01"  # missing: written and counted
        assert count() == (3, True)
        assert db.verify_index("t", "by_a")["ok"]
        assert db.table("t").row(b"r0") == {b"f:a": b"x"}  # the requests wrote no data
        assert db.sql("SELECT COUNT(*) FROM t WHERE f.a = 'x'") == [(3,)]
    finally:
        db.close()
