"""`hibase bench paper --backend thrift://...`'s section at scale on the session's real HBase, with
Apache Phoenix beside (issue 29, item 6), at a few hundred rows: each system's load, index
builds (Phoenix: global, then local), bytes on disk, query times, every Phoenix answer equal to
hibase's; a bigger size the budget cannot hold is skipped with its estimate, and the report
says so."""

from __future__ import annotations

import time

from hibase_bench.paper import report, scale


def test_scale_section_runs_hibase_and_phoenix_on_the_same_rows(hbase_cluster):
    res = scale.run(hbase_cluster.thrift_url, [300], [10_000_000], seed=3, repeats=2,
                    deadline=time.monotonic() + 60)
    assert res["ran"] is True
    (size,) = res["sizes"]
    assert size["rows"] == 300
    hb, px = size["hibase"], size["phoenix"]
    assert hb["load_s"] > 0 and hb["table_bytes"] > 0
    assert set(hb["index_build_s"]) == {"by_ip", "by_ip_port", "by_url"}
    assert hb["index_bytes"] and all(v > 0 for v in hb["index_bytes"].values())
    assert len(hb["queries"]) == 7 and all(q["hot_same_rows"] for q in hb["queries"])
    assert hb["full_scan_same_rows"] is True
    assert px["load_s"] > 0 and px["table_bytes"] > 0
    for kind in ("global", "local"):
        k = px[kind]
        assert set(k["index_build_s"]) == {"by_ip", "by_ip_port", "by_url"}
        assert sum(k["index_bytes"].values()) > 0
        assert all(q["same_rows"] for q in k["queries"]), k["queries"]
        # every query but the rowkey one reads an index, hinted where it does not cover
        assert all(q["uses_index"] for q in k["queries"][1:]), [q["plan"] for q in k["queries"]]
    assert scale.all_same(size)
    (skipped,) = res["skipped"]
    assert skipped["rows"] == 10_000_000 and skipped["estimated_s"] > skipped["left_s"]
    text = "\n".join(report.scale_section(res))
    assert "## 6. At scale on HBase, Apache Phoenix beside" in text
    assert "Not run: 10,000,000 rows (estimated" in text
    assert "| 300 | Phoenix local |" in text


def test_scale_section_says_why_it_did_not_run():
    res = scale.run("embedded", [300], [], seed=0, repeats=1, deadline=time.monotonic())
    assert res == {"ran": False, "reason": res["reason"]} and "thrift://" in res["reason"]
    assert "Not run (needs --backend thrift://" in "\n".join(report.scale_section(res))
