"""`hibase cluster start|stop|status` against the real thing: a local Apache HBase with its
Thrift1 server and a Redis cache node registered in its ZooKeeper, driven as a user would (a
subprocess), then used by plain happybase and by hibase with the zk:// cache."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

import happybase
import pytest
from click.testing import CliRunner

import hibase
from hibase.cli import cli
from servers import required

# each test starts clusters of its own (beyond the session HBase): CI's second step
pytestmark = pytest.mark.own_cluster


def hibase_cmd(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hibase", *args], capture_output=True,
                          text=True, timeout=600, env=env)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    """`hibase cluster start DIR --redis-nodes 1` run once for the module; stopped after."""
    from hibase.cluster import HBaseCluster, classpath
    with required():
        classpath(progress=False)
    folder = str(tmp_path_factory.mktemp("cluster"))
    out = hibase_cmd("cluster", "start", folder, "--redis-nodes", "1")
    try:
        yield folder, out
    finally:
        HBaseCluster(folder).stop()


def test_start_prints_the_urls_and_returns(started):
    folder, out = started
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("thrift://127.0.0.1:") and lines[1].startswith("zk://127.0.0.1:")
    assert lines[1].endswith("/hibase")
    # starting again while it runs prints the same URLs
    again = hibase_cmd("cluster", "start", folder, "--redis-nodes", "1")
    assert again.returncode == 0 and again.stdout == out.stdout
    st = hibase_cmd("cluster", "status", folder)
    assert st.returncode == 0, st.stdout
    for name in ("master", "thrift", "thrift2", "redis-0", "cache-node-0"):
        assert f"{name}\trunning" in st.stdout
    # Phoenix's server jars are in by default (`--phoenix`): its WAL codec is configured
    st = json.loads(hibase_cmd("cluster", "status", folder, "--json").stdout)
    assert st["phoenix"] is True
    with open(os.path.join(folder, "conf", "hbase-site.xml")) as fh:
        assert "IndexedWALEditCodec" in fh.read()


def test_an_admin_request_that_does_not_answer_is_a_one_line_error(started):
    """The Admin helper's requests have a time limit (HBase 2.6.1 was seen never to finish a
    flush procedure, and the caller waited for ever): past it, ClusterError says so, and the
    next request runs on a new helper."""
    from hibase.cluster import ClusterError, HBaseCluster

    folder, _ = started
    cluster = HBaseCluster(folder)
    try:
        with pytest.raises(ClusterError, match=r"flush did not answer within 0 s .*logs"):
            cluster.flush("hbase:meta", timeout=0)
        cluster.flush("hbase:meta")
        assert cluster.region_starts("hbase:meta") == [b""]
    finally:
        cluster.close_admin()


def test_happybase_and_hibase_with_the_zk_cache_work_on_it(started):
    folder, out = started
    thrift_url, zk_url = out.stdout.split()
    port = urlsplit(thrift_url).port
    assert "thrift2_port=" in thrift_url  # HBase's Thrift2 server: one-call short scans
    conn = happybase.Connection("127.0.0.1", port)
    conn.create_table("plain", {"f": {}})
    conn.table("plain").put(b"r", {b"f:a": b"1"})
    assert conn.table("plain").row(b"r") == {b"f:a": b"1"}
    conn.close()
    with hibase.connect(thrift_url + "&prefix=clustertest", cache=zk_url) as db:
        db.create_table("flights", {"f": {}}, columns={"f:origin": "string"})
        t = db.table("flights")
        for i in range(30):
            t.put(b"k%02d" % i, {b"f:origin": [b"SFO", b"JFK"][i % 2]})
        db.create_index("flights", "by_origin", ["f:origin"])
        for _ in range(3):
            assert len(db.sql("SELECT * FROM flights WHERE f.origin = 'JFK'")) == 15
        stats = db.cache_stats()
        assert stats["membership"] == "zookeeper" and len(stats["members"]) == 1
        assert stats["hits"] >= 1
    # the same tables through the CLI's thrift:// URL
    res = CliRunner().invoke(cli, ["tables", thrift_url + "&prefix=clustertest"])
    assert res.exit_code == 0 and "flights" in res.output


def test_demo_runs_on_the_cluster(started):
    thrift_url = started[1].stdout.split()[0]
    res = CliRunner().invoke(cli, ["demo", "--backend", thrift_url + "&prefix=demotest",
                                   "--rows", "500", "--repeats", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "All three returned the same rows" in res.output
    bad = CliRunner().invoke(cli, ["demo", "--backend", "/tmp/x", "--rows", "10"])
    assert bad.exit_code == 2 and "thrift://" in bad.output


def test_a_taken_port_is_a_one_line_error(started, tmp_path):
    folder, out = started
    port = str(urlsplit(out.stdout.split()[0]).port)
    res = hibase_cmd("cluster", "start", str(tmp_path / "other"), "--thrift-port", port)
    assert res.returncode == 1
    assert res.stderr.strip().count("\n") == 0
    assert f"thrift port {port} on 127.0.0.1 is taken" in res.stderr
    assert "Traceback" not in res.stderr


def test_missing_maven_is_a_one_line_error(tmp_path):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable),
               HIBASE_CACHE_DIR=str(tmp_path / "cache"))
    res = hibase_cmd("cluster", "start", str(tmp_path / "c"), env=env)
    assert res.returncode == 1
    assert res.stderr.strip() == "Error: mvn is not installed (Debian: apt-get install maven)"


def test_start_after_kill_9_of_hbase_starts_what_is_down(started):
    """The standalone HBase JVM (master, region server, ZooKeeper) killed with -9: `hibase
    cluster start DIR` says what it found (the dead JVM's pid file removed; the Thrift servers
    and the cache node still running, stopped to start with HBase), starts the cluster again
    (the WAL replayed), and a table written before the kill is read back with its indexes
    exact (hibase's coprocessor kept them: a global covered and a local one)."""
    from hibase.cluster import HBaseCluster
    from servers import cluster_url

    folder, _ = started
    cluster = HBaseCluster(folder)
    db = hibase.connect(cluster_url(cluster, "killtest"))
    db.create_table("t", {"f": {}}, columns={"f:a": "string", "f:n": "long"})
    db.create_index("t", "by_a", ["f:a"], covering=["f:n"])
    db.create_index("t", "loc_n", ["f:n"], local=True)
    t = db.table("t")
    with t.batch() as b:
        for i in range(200):
            b.put(b"r%03d" % i, {b"f:a": b"v%d" % (i % 7), b"f:n": b"%d" % (i % 11)})
    db.close()
    pid = cluster._running()["master"]
    os.kill(pid, signal.SIGKILL)
    while _alive(pid):
        time.sleep(0.05)
    st = hibase_cmd("cluster", "status", folder)
    assert st.returncode == 1 and "master\tstopped" in st.stdout
    res = hibase_cmd("cluster", "start", folder)  # no options: the cluster's recorded ones
    assert res.returncode == 0, res.stderr
    assert f"not running: master (pid {pid}; pid file removed)" in res.stderr
    assert "stopped cache-node-0, redis-0, thrift, thrift2 (still running)" in res.stderr
    assert "starting master, thrift, thrift2, redis-0, cache-node-0" in res.stderr
    assert res.stdout.splitlines()[0].startswith("thrift://")
    assert hibase_cmd("cluster", "status", folder).returncode == 0
    db = hibase.connect(cluster_url(cluster, "killtest"))
    try:
        t = db.table("t")
        assert len(list(t.scan())) == 200
        assert len(list(t.where("f.a = 'v3'"))) == len([i for i in range(200) if i % 7 == 3])
        assert sorted(t.where("f.n = 4")) == sorted(t.where("f.n = 4", full_scan=True))
        for name in ("by_a", "loc_n"):
            report = db.verify_index("t", name)
            assert report["ok"], (name, report)
    finally:
        db.close()


def test_stop_ends_what_start_started_and_nothing_else(started):
    folder, _ = started
    # a process of ours whose pid file we plant: stop must not touch it (not in cluster.json)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with open(os.path.join(folder, "pids", "bystander.pid"), "w") as fh:
            fh.write(f"{bystander.pid}\n")
        st = hibase_cmd("cluster", "status", folder, "--json")
        pids = json.loads(st.stdout)["running"]
        res = hibase_cmd("cluster", "stop", folder)
        assert res.returncode == 0, res.stderr
        assert not any(_alive(pid) for pid in pids.values())
        assert bystander.poll() is None
        st = hibase_cmd("cluster", "status", folder)
        assert st.returncode == 1 and "master\tstopped" in st.stdout
        with open(os.path.join(folder, "cluster.json")) as fh:
            state = json.load(fh)
        for port in (state["thrift_port"], state["thrift2_port"]):
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
    finally:
        bystander.kill()
        bystander.wait()
