"""What an HBase user's first mistakes print (issue 42): a Thrift2 port where the Thrift1 one
belongs, an HBase with tables but no hibase catalog, a query of an HBase table hibase has not
recorded, a ZooKeeper that drops the cache's session. Each says what happened and what to do,
with no traceback; on hibase's gateway and on real HBase alike."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import happybase
import pytest
from click.testing import CliRunner

import hibase
from hibase.cli import cli
from backends import new_prefix
from servers import cluster_url, start_zookeeper


def _raw_table(hb, name: str, prefix: str | None = None) -> None:
    """An HBase table made by a plain client under the test's prefix (or `prefix`), what other
    programs do."""
    host, port = hb.address
    c = happybase.Connection(host, port, timeout=60_000)
    try:
        c.create_table(f"{prefix or hb.prefix}_{name}" if hb.kind == "hbase" else name,
                       {"f": {}})
    finally:
        c.close()


def test_a_thrift2_port_as_the_thrift1_one_says_so(hb):
    host = hb.address[0]
    thrift2 = hb.cluster.thrift2_port if hb.kind == "hbase" else hb.server2.address[1]
    url = f"thrift://{host}:{thrift2}?timeout=20000"
    with pytest.raises(hibase.errors.BackendUnavailable, match="Thrift2 server") as exc:
        hibase.connect(url)
    assert "thrift2_port=" in str(exc.value)
    res = CliRunner().invoke(cli, ["query", url, "SELECT ROWKEY FROM t"])
    assert res.exit_code != 0
    assert "Traceback" not in res.output and "TApplicationException" not in res.output
    assert "Thrift2 server" in res.output


def test_hbase_tables_without_a_catalog_are_named_with_how_to_record_them(hb):
    if hb.kind != "hbase":
        pytest.skip("the gateway's store always has hibase's catalog")
    prefix = new_prefix()  # the test's own prefix has a catalog, made ahead (tests/backends.py)
    _raw_table(hb, "raw", prefix)
    res = CliRunner().invoke(cli, ["tables", cluster_url(hb.cluster, prefix)])
    assert res.exit_code != 0
    assert "HBase holds 1 table(s) (raw)" in res.output, res.output
    assert "--existing" in res.output and "Traceback" not in res.output


def test_a_query_of_an_unrecorded_hbase_table_says_how_to_record_it(hb):
    db = hb.connect()
    db.create_table("t", {"f": {}})  # the catalog exists; "raw" is not in it
    _raw_table(hb, "raw")
    with pytest.raises(hibase.errors.TableNotFound, match="HBase holds a table 'raw'") as exc:
        db.sql("SELECT * FROM raw")
    assert "--existing" in str(exc.value)
    with pytest.raises(hibase.errors.TableNotFound) as exc:
        db.sql("SELECT * FROM nosuch")
    assert "HBase holds" not in str(exc.value)  # a plain typo stays a plain message


def test_a_dropped_zookeeper_session_prints_nothing_on_stderr(tmp_path):
    """kazoo's "Connection dropped" lines went to Python's last-resort handler on stderr."""
    zk = start_zookeeper()
    try:
        script = textwrap.dedent(f"""
            import sys, time
            from hibase.cache.membership import ZooKeeperMembership
            m = ZooKeeperMembership("zk://{zk.address}/msg", timeout=5.0)
            print("connected", flush=True)
            sys.stdin.readline()      # the test stops ZooKeeper now
            time.sleep(3.0)           # kazoo notices and reconnects, logging as it goes
            m.close()
        """)
        p = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "connected"
        zk.kill()
        out, err = p.communicate("go\n", timeout=60)
        assert p.returncode == 0, err
        assert "Connection dropped" not in err and "kazoo" not in err, err
    finally:
        zk.close()


def test_drop_table_keep_data_unregisters_and_leaves_the_hbase_rows(hb):
    """`drop-table --keep-data`: the indexes and the catalog row go, the HBase table and its
    rows stay for their writers, and the table can be recorded again (issue 42)."""
    _raw_table(hb, "orders")
    host, port = hb.address
    raw_name = f"{hb.prefix}_orders" if hb.kind == "hbase" else "orders"
    c = happybase.Connection(host, port, timeout=60_000)
    try:
        for i in range(5):
            c.table(raw_name).put(b"o%d" % i, {b"f:total": b"%d" % i})
        res = CliRunner().invoke(cli, ["create-table", hb.url, "orders", "-f", "f", "-c",
                                       "f:total=long", "--existing", "--rowkey", "id",
                                       "--rowkey-type", "string"])
        assert res.exit_code == 0, res.output
        db = hb.connect()
        db.create_index("orders", "by_total", ["f:total"])
        assert db.execute("SELECT id FROM orders WHERE f.total = 3").rows == [("o3",)]
        res = CliRunner().invoke(cli, ["drop-table", hb.url, "orders", "--keep-data"])
        assert res.exit_code == 0, res.output
        assert "Unregistered table 'orders'" in res.output
        db2 = hb.connect()
        assert "orders" not in db2.tables()
        assert len(list(c.table(raw_name).scan())) == 5  # the rows are HBase's still
        assert not [n for n in c.tables() if b"by_total" in n]  # the index table went
        db2.create_table("orders", ["f"], existing=True)
        assert db2.execute("SELECT COUNT(*) FROM orders").rows == [(5,)]
    finally:
        c.close()


def test_drop_table_keep_data_on_an_embedded_store_says_why_not(tmp_path):
    db = hibase.connect(str(tmp_path / "s"))
    db.create_table("t", {"f": {}})
    db.close()
    res = CliRunner().invoke(cli, ["drop-table", str(tmp_path / "s"), "t", "--keep-data"])
    assert res.exit_code != 0
    assert "embedded store's table lives only in the store" in res.output
    assert "Traceback" not in res.output


def test_create_table_rowkey_options_name_and_type_the_rowkey(tmp_path):
    url = str(tmp_path / "s")
    res = CliRunner().invoke(cli, ["create-table", url, "e", "-f", "e", "-c", "e:age=long",
                                   "--rowkey", "who", "--rowkey-type", "string"])
    assert res.exit_code == 0, res.output
    db = hibase.connect(url)
    db.table("e").put(b"u2", {b"e:age": b"30"})
    assert db.execute("SELECT who, e.age FROM e").rows == [("u2", 30)]
