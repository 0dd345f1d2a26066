"""`hibase split URL TABLE` on HBase (cli/store.py): HBase's Thrift gateway has no split call,
so the split goes through the Admin API of the `hibase cluster` serving the URL, and local index
rows follow the new regions; a URL no local cluster serves gets a one-line error naming the
HBase shell's statement."""

from __future__ import annotations

import os

from click.testing import CliRunner

import hibase
from hibase.cli import cli
from servers import cluster_url, coprocessor_cluster


def test_split_goes_through_the_local_clusters_admin_api(request):
    cluster = coprocessor_cluster(request)
    url = cluster_url(cluster, f"sp{os.getpid()}")
    db = hibase.connect(url)
    try:
        db.create_table("t", {"f": {}}, columns={"f:a": "string"})
        db.create_index("t", "loc_a", ["f:a"], local=True)
        db.create_index("t", "by_a", ["f:a"])
        t = db.table("t")
        with t.batch() as b:
            for i in range(100):
                b.put(b"k%03d" % i, {b"f:a": b"v%d" % (i % 5)})
        res = CliRunner().invoke(cli, ["split", url, "t", "--row", "k050"])
        assert res.exit_code == 0, res.output
        assert "2 regions now" in res.output
        hname = db.store.hbase_name(t.name.decode())
        try:
            assert cluster.region_starts(hname) == [b"", b"k050"]  # HBase's own answer
        finally:
            cluster.close_admin()
        with hibase.connect(url) as fresh:
            assert [r["start_key"] for r in fresh.table("t").regions()] == [b"", b"k050"]
        again = CliRunner().invoke(cli, ["split", url, "t", "--row", "k050"])
        assert again.exit_code == 0 and "No region of 't' was split" in again.output
        assert sorted(t.where("f.a = 'v3'")) == sorted(t.where("f.a = 'v3'", full_scan=True))
        assert len(list(t.where("f.a = 'v3'"))) == 20
        for name in ("loc_a", "by_a"):
            report = db.verify_index("t", name)
            assert report["ok"], (name, report)
    finally:
        db.close()


def test_split_of_an_hbase_no_local_cluster_serves_names_the_shell_statement(thrift_backend):
    db = thrift_backend.connect()
    db.create_table("t", {"f": {}})
    db.close()
    res = CliRunner().invoke(cli, ["split", thrift_backend.url, "t", "--row", "k5"])
    assert res.exit_code == 1
    assert "no `hibase cluster` on this machine serves" in res.output
    assert "split with HBase's shell (split '" in res.output and "t', 'k5')" in res.output
    assert "Traceback" not in res.output
