"""Smoke tests of the query benchmark at a tiny size, embedded and over Thrift1 (a gateway
subprocess the benchmark starts, or a running server): the reports' structure and their checks
(the figures themselves are meaningless at this size)."""

from __future__ import annotations

import json
import re
import socket

import happybase
import pytest
from click.testing import CliRunner

import hibase
from hibase_bench import query
from hibase.cli import cli
from hibase.table import Table
from hibase.server.thrift import ThriftServer

NAMES = ["eq_0", "eq_10", "eq_1000", "eq_100000", "range_1000", "and_ip_url", "or_url_ip"]


def test_bench_query_report_at_tiny_size(tmp_path):
    dest = tmp_path / "q.json"
    result = CliRunner().invoke(cli, ["bench", "query", "--rows", "3000", "--repeats", "2",
                                      "--no-progress", "--output", str(dest)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    r = json.loads(dest.read_text())

    assert r["benchmark"] == "query" and r["rows"] == 3000
    assert [q["name"] for q in r["queries"]] == NAMES
    for q in r["queries"]:
        assert q["same_rows"] is True, q["name"]
        for engine in ("hibase_index", "hibase_prepared", "sqlite_index"):
            assert q[engine]["p50_us"] > 0 and 1 <= q[engine]["runs"] <= 2
        assert q["hibase_full_scan_s"] > 0 and q["sqlite_full_scan_s"] >= 0
        assert q["speedup_vs_full_scan"] > 0
        assert "PLAN for" in q["plan"] and q["sqlite_plan"]
        assert q["sqlite_full_scan_plan"] == "SCAN telecom", q["sqlite_full_scan_plan"]
    by = {q["name"]: q for q in r["queries"]}
    assert by["eq_0"]["rows"] == 0 and by["eq_10"]["rows"] > 0
    assert by["eq_1000"]["rows"] > by["eq_10"]["rows"]
    assert "INDEX by_url" in by["eq_10"]["plan"] and "by_url" in by["eq_10"]["sqlite_plan"]
    assert "INDEX by_start" in by["range_1000"]["plan"]
    assert "hibase_index_value_table_walk" in by["range_1000"]
    assert "UNION" in by["or_url_ip"]["plan"]

    load = r["load"]
    assert load["hibase_ratio"] > 0 and load["sqlite_ratio"] > 0
    assert load["hibase_3_indexes"]["load_s"] > 0 and load["hibase_build_start_time_index_s"] > 0
    sizes = r["sizes"]["hibase"]
    assert set(sizes["logical"]["per_index"]) == {"by_ip", "by_ip_port", "by_url", "by_start"}
    assert all(v["ratio_to_data"] > 0 for v in sizes["logical"]["per_index"].values())
    assert sizes["on_disk"]["data_bytes"] > 0
    assert set(r["sizes"]["sqlite"]["per_index"]) == set(sizes["logical"]["per_index"])
    assert set(r["meets_targets"]) == {
        "eq_le10_speedup_vs_full_scan", "eq_le10_p50_us", "eq_le10_prepared_p50_us",
        "eq_le10_vs_sqlite_p50_ratio", "load_ratio_3_indexes", "all_paths_same_rows",
        "count_eq_le10_p50_us", "counts_same", "covered_same",
        "eq_le10_sql_params_vs_sqlite_p50_ratio", "covered_eq_le10_vs_sqlite_p50_ratio",
        "load_ratio_3_indexes_embedded"}
    assert r["meets_targets"]["all_paths_same_rows"] is True
    # COUNT(*) of an equality: from the value table, the same count as SQLite's and the rows'
    eq10 = next(q for q in r["queries"] if q["name"] == "eq_10")
    assert eq10["count_same"] is True and "VALUE TABLE" in eq10["count_plan"]
    assert r["meets_targets"]["counts_same"] is True
    # covered: the rowkeys from the index entries alone (no FETCH), the same as SQLite's
    assert eq10["covered_same"] is True and "FETCH" not in eq10["covered_plan"]
    assert eq10["hibase_covered"]["p50_us"] > 0 and eq10["sqlite_covered"]["p50_us"] > 0
    assert eq10["hibase_sql_params"]["p50_us"] > 0 and eq10["sqlite_count"]["p50_us"] > 0
    assert r["targets"] == query.TARGETS
    # issue 40's lookups: every path gives SQLite's rows (where()'s bytes rowkeys as str)
    lk = r["lookups"]
    assert lk["checks"] == {"lookup_same": True, "covered_same": True, "big_same": True,
                            "is_null_same": True}
    assert "COVERED by index" in lk["queries"]["covered_plan"]

    out = result.stdout
    assert out.startswith("bench query: 3,000 telecom rows")
    assert all(name in out for name in NAMES)
    assert "target load_ratio_3_indexes:" in out and f"full report: {dest}" in out


# -- over Thrift1: --backend gateway | thrift://host:port ---------------------------------------

def _bench(args, tmp_path, name="q.json"):
    """Run `hibase bench query ARGS --output FILE`; the result and the report (None if the
    command failed)."""
    dest = tmp_path / name
    result = CliRunner().invoke(cli, ["bench", "query", *args, "--no-progress",
                                      "--output", str(dest)])
    return result, (json.loads(dest.read_text()) if dest.exists() else None)


def _check_thrift_report(r, rows):
    """The report's structure; row counts agree; ratios are the reported medians' ratios."""
    assert r["benchmark"] == "query_thrift" and r["rows"] == rows
    assert [q["name"] for q in r["queries"]] == NAMES
    assert r["backend"]["table"].startswith("bench_") and r["backend"]["table_dropped"] is True
    assert r["backend"]["leftover_tables"] == []
    assert r["figures"]["same_rows_all_queries"] is True
    for q in r["queries"]:
        counts = q["rows_by_backend"]
        assert set(counts) == {"embedded", "thrift", "embedded_prepared", "thrift_prepared"}
        assert len(set(counts.values())) == 1 and q["rows"] == counts["thrift"], q["name"]
        for side in ("embedded", "thrift", "embedded_prepared", "thrift_prepared"):
            assert q[side]["p50_us"] > 0 and 1 <= q[side]["runs"] <= 2, (q["name"], side)
        for ratio, a, b in (("thrift_vs_embedded_p50_ratio", "thrift", "embedded"),
                            ("prepared_thrift_vs_embedded_p50_ratio", "thrift_prepared",
                             "embedded_prepared")):
            assert q[ratio] > 0
            assert q[ratio] == pytest.approx(q[a]["p50_us"] / q[b]["p50_us"], rel=1e-3)
        assert q["same_plan"] is True and "PLAN for" in q["plan"]
    by = {q["name"]: q for q in r["queries"]}
    assert by["eq_0"]["rows"] == 0 and by["eq_10"]["rows"] > 0
    load = r["load"]
    for side in ("embedded", "thrift"):
        assert load[side]["rows_per_s"] > 0 and load[side]["load_s"] > 0
    assert load["thrift_vs_embedded_rows_per_s_ratio"] == pytest.approx(
        load["thrift"]["rows_per_s"] / load["embedded"]["rows_per_s"], rel=1e-3)
    trip = r["round_trip"]
    for k in ("embedded_row_missing", "thrift_row_missing", "raw_get_table_names"):
        assert trip[k]["p50_us"] > 0 and trip[k]["runs"] >= 1
    assert trip["thrift_row_missing_vs_embedded_p50_ratio"] == pytest.approx(
        trip["thrift_row_missing"]["p50_us"] / trip["embedded_row_missing"]["p50_us"], rel=1e-3)


def test_bench_query_over_a_gateway_subprocess(tmp_path):
    """--backend gateway starts `hibase serve --thrift` itself, and stops it cleanly; the
    gateway's store (kept under --workdir) has no table of the benchmark's left."""
    work = tmp_path / "work"
    result, r = _bench(["--backend", "gateway", "--rows", "400", "--repeats", "2",
                        "--workdir", str(work)], tmp_path)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    _check_thrift_report(r, 400)
    gw = r["backend"]
    assert gw["kind"] == "gateway" and gw["url"].startswith("thrift://127.0.0.1:")
    assert gw["gateway"]["exit_code"] == 0 and gw["gateway"]["stopped_cleanly"] is True
    [folder] = work.iterdir()
    store = hibase.connect(str(folder / "gateway-store"), read_only=True)
    try:
        names = [n.decode() for n in store.tables()]
    finally:
        store.close()
    assert "hibase_meta" in names and not [n for n in names if gw["table"] in n]
    out = result.stdout
    assert out.startswith("bench query over thrift://127.0.0.1:")
    assert all(name in out for name in NAMES) and f"table {gw['table']} dropped" in out


@pytest.fixture
def thrift_url(tmp_path):
    """An in-process gateway over a store holding a table of someone else's (with an index),
    on a free port; its thrift:// URL."""
    with ThriftServer(str(tmp_path / "gateway"), port=0) as server:
        host, port = server.address
        url = f"thrift://{host}:{port}?timeout=20000"
        db = hibase.connect(url, cache_policy=None)
        try:
            db.create_table("other", {"f": {}}, columns={"f:a": "string"})
            db.create_index("other", "by_a", ["f:a"])
            db.table("other").put(b"r1", {b"f:a": b"x"})
        finally:
            db.close()
        yield url


def _tables(url):
    """hibase's catalog and HBase's own table list, through the gateway."""
    db = hibase.connect(url, cache_policy=None)
    try:
        catalog = [n.decode() for n in db.tables()]
        rows = list(db.table("other").where("f.a = 'x'"))
    finally:
        db.close()
    host, port = url[len("thrift://"):].split("?")[0].split(":")
    conn = happybase.Connection(host, int(port))
    try:
        raw = [n.decode() for n in conn.tables()]
    finally:
        conn.close()
    return catalog, raw, rows


def test_bench_query_over_a_running_thrift_server(tmp_path, thrift_url):
    """--backend thrift://...: loads into a table of its own, drops it, leaves others alone."""
    before = _tables(thrift_url)
    result, r = _bench(["--backend", thrift_url, "--rows", "300", "--repeats", "2"], tmp_path)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    _check_thrift_report(r, 300)
    assert r["backend"]["kind"] == "thrift" and r["backend"]["gateway"] is None
    after = _tables(thrift_url)
    assert after == before and after[0] == ["other"] and after[2] == [(b"r1", {b"f:a": b"x"})]
    assert not [n for n in after[1] if r["backend"]["table"] in n]


def test_bench_query_fails_loudly_when_the_backends_disagree(tmp_path, thrift_url,
                                                            monkeypatch):
    """A query whose rows differ between the backends stops the run before any timing: exit 1,
    the query named, no report, and the benchmark's table is dropped all the same."""
    before = _tables(thrift_url)
    where = Table.where

    def lossy(self, condition, *args, **kw):
        got = list(where(self, condition, *args, **kw))
        return got[1:] if self.name.startswith(b"bench_") else got

    monkeypatch.setattr(Table, "where", lossy)
    result, r = _bench(["--backend", thrift_url, "--rows", "300", "--repeats", "2"], tmp_path)
    assert result.exit_code == 1 and r is None
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "Error: the backends disagree, so no times are reported: eq_10 (" in result.output
    m = re.search(r"eq_10 \(f\.url = '[^']*'\): rows embedded (\d+), thrift (\d+), "
                  r"embedded_prepared \d+, thrift_prepared \d+; differing: thrift \|",
                  result.output)
    assert m and int(m.group(2)) == int(m.group(1)) - 1, result.output
    monkeypatch.undo()
    assert _tables(thrift_url) == before


@pytest.mark.parametrize("spec, message", [
    ("thrift://127.0.0.1:{port}", "Error: cannot reach the HBase Thrift gateway at 127.0.0.1:"),
    ("thrift://127.0.0.1:notaport", "Invalid value for '--backend': bad thrift:// URL"),
    ("thrift://127.0.0.1:9090/path", "Invalid value for '--backend': a thrift:// URL has no"),
    ("hbase://127.0.0.1:9090", "Invalid value for '--backend': backend must be 'embedded', "
                               "'gateway' or a thrift://HOST:PORT URL"),
])
def test_bench_query_bad_backend_is_a_clear_error(tmp_path, spec, message):
    """An unreachable server or a malformed --backend: exit code != 0, one clear line."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result, r = _bench(["--backend", spec.format(port=port), "--rows", "10"], tmp_path)
    assert result.exit_code != 0 and r is None
    assert message in result.output, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
