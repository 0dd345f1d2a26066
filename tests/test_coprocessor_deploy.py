"""Deploying the coprocessor the way docs/production.md says: `hibase cluster coprocessor
--jar-out DIR` builds the jar with Maven; a fresh standalone HBase started WITHOUT hibase's
coprocessor gets it on one table by table attribute (the HBase shell's `alter 't', METHOD =>
'table_att', 'coprocessor' => 'PATH|io.hibase.IndexObserver|1073741823|'`, made here through
the cluster's Admin helper); a plain client (happybase over HBase's Thrift, not hibase) then
writes rows, and hibase finds them through an index that verifies with nothing missing."""

from __future__ import annotations

import json
import subprocess
import sys

import happybase
import pytest

import hibase
from servers import cluster_url, required

pytestmark = pytest.mark.own_cluster


def test_jar_out_loaded_by_table_attribute_indexes_a_plain_clients_writes(tmp_path):
    from hibase.cluster import HBaseCluster
    dist = tmp_path / "dist"
    out = subprocess.run([sys.executable, "-m", "hibase", "cluster", "coprocessor", "--jar-out",
                          str(dist), "--json"], capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    jar = str(dist / "hibase-coprocessor.jar")
    assert info["jar"] == jar and info["class"] == "io.hibase.IndexObserver"
    assert info["table_attribute"].endswith("|io.hibase.IndexObserver|1073741823|'")
    assert "file://" not in info["table_attribute"]  # no path of this machine's cache

    with required():
        cluster = HBaseCluster(str(tmp_path / "hb"), redis_nodes=0, coprocessor=False)
        cluster.start(detach=False, progress=False)
    try:
        db = hibase.connect(cluster_url(cluster, "dep"))
        db.create_table("people", {"d": {}}, columns={"d:city": "string", "d:age": "int"})
        db.create_index("people", "before", ["d:age"])  # made before the jar was loaded
        assert not db.store.server_upkeep("people")  # nothing runs on the table yet
        # the production page's table attribute, with the path this HBase reads (local files)
        cluster.load_coprocessor("dep_people", f"file://{jar}|{info['class']}|1073741823|")
        db.create_index("people", "by_city", ["d:city"], covering=["d:age"])
        specs = {s.name: s for s in db.indexer.specs("people")}
        assert specs["by_city"].server and not specs["before"].server

        conn = happybase.Connection("127.0.0.1", cluster.thrift_port, timeout=60000)
        try:
            plain = conn.table("dep_people")
            for i in range(40):
                plain.put(b"r%02d" % i, {b"d:city": [b"Oslo", b"Rome", b"Lima"][i % 3],
                                         b"d:age": b"%d" % (20 + i)})
            plain.delete(b"r00")
            plain.put(b"r03", {b"d:city": b"Lima"})  # Oslo -> Lima
        finally:
            conn.close()

        t = db.table("people")
        assert "by_city" in t.explain("d.city = 'Oslo'")
        oslo = sorted(row for row, _ in t.where("d.city = 'Oslo'"))
        assert oslo == [b"r%02d" % i for i in range(6, 40, 3)]
        lima = dict(t.where("d.city = 'Lima'", columns=[b"d:age"]))
        assert lima[b"r03"] == {b"d:age": b"23"} and len(lima) == 14
        report = db.verify_index("people", "by_city")
        assert report["ok"] and report["missing"] == 0 and report["extra"] == 0, report
        db.close()
    finally:
        cluster.close_admin()
        cluster.stop()
