"""Smoke tests of the storage benchmark and of the telecom dataset generator it loads."""

from __future__ import annotations

import json
import math
import re

import pytest

from hibase.samples import telecom as D
from hibase_bench import store


def test_rows_are_deterministic_and_prefix_stable():
    a = list(D.telecom_rows(3000, seed=7))
    assert a == list(D.telecom_rows(3000, seed=7))
    assert list(D.telecom_rows(1000, seed=7)) == a[:1000]  # crosses no chunk: still a prefix
    assert list(D.telecom_rows(10_000, seed=7))[:3000] == a  # across a chunk boundary
    assert list(D.telecom_rows(50, seed=8)) != a[:50]
    assert list(D.telecom_rows(0)) == []


def test_rows_shape_rowkey_and_size():
    rows = list(D.telecom_rows(5000))
    keys = [k for k, _ in rows]
    assert len(set(keys)) == len(keys)  # unique rowkeys
    total = 0
    for key, data in rows:
        assert list(data) == list(D.COLUMNS)
        assert all(isinstance(v, bytes) and v for v in data.values())
        # rowkey = 11-digit MDN + (Long.MAX_VALUE - start_ms) as 19 digits
        assert re.fullmatch(rb"1\d{10}\d{19}", key)
        assert key[:11] == data[b"f:mdn"]
        assert int(key[11:]) == D.MAX_LONG - int(data[b"f:start_time"])
        assert int(data[b"f:end_time"]) >= int(data[b"f:start_time"])
        assert 0 < int(data[b"f:port"]) < 65536
        assert re.fullmatch(rb"\d+\.\d+\.\d+\.\d+", data[b"f:ip"])
        assert data[b"f:url"].startswith(b"http://")
        assert len(data[b"f:imsi"]) == 15
        total += sum(len(v) for v in data.values())
    assert 180 <= total / len(rows) <= 220  # ~200 bytes of values per record
    starts = [int(d[b"f:start_time"]) for _, d in rows]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)


def test_declared_types_accept_the_generated_cells():
    from hibase.store.schema import TableSchema
    schema = TableSchema.build("t", {"f": {}}, D.TELECOM_COLUMNS)
    assert set(schema.columns) == set(D.COLUMNS)
    for key, data in D.telecom_rows(500):
        schema.check_put(key, data)  # raises on a cell its declared type rejects


def test_value_counts_and_targets():
    n = 20_000
    url = D.value_counts(n)
    assert sum(url.values()) == n
    assert url == __import__("collections").Counter(d[D.C_URL] for _, d in D.telecom_rows(n))
    top, count = url.most_common(1)[0]
    assert top == D.url_value(1, 0) and 0.08 * n < count < 0.12 * n  # tier 1: 10% of rows
    found = D.values_with_counts(n, targets=(0, 20, 2000))
    assert found[0]["count"] == 0 and found[0]["value"] not in url
    assert 10 <= found[1]["count"] <= 40 and url[found[1]["value"]] == found[1]["count"]
    assert 1000 <= found[2]["count"] <= 4000
    pairs = D.value_counts(n, column=(D.C_IP, D.C_PORT))
    assert sum(pairs.values()) == n
    ip_top = D.value_counts(n, column=D.C_IP).most_common(1)[0][1]
    assert 0.03 * n < ip_top < 0.1 * n


def test_run_smoke(tmp_path):
    report = store.run(rows=2000, reads=200, progress=False, workdir=str(tmp_path))
    json.dumps(report)  # JSON-ready
    for key in ("rows", "machine", "hibase", "sqlite", "ratios", "targets", "meets_targets"):
        assert key in report
    assert report["rows"] == 2000
    assert report["machine"]["cpu_count"] >= 1 and report["machine"]["python"]
    metrics = ("load_rows_per_s", "row_p50_us", "row_p99_us", "rows_1000_ms",
               "scan_rows_per_s", "bytes_per_row")
    for side in ("hibase", "sqlite"):
        for m in metrics:
            v = report[side][m]
            assert isinstance(v, (int, float)) and v > 0 and math.isfinite(v), (side, m, v)
        assert report[side]["row_missing"] == 0
        assert report[side]["scan_rows"] == 2000
        assert report[side]["rows_1000_returned"] == 1000
    assert set(report["ratios"]) == set(metrics)
    assert all(v > 0 for v in report["ratios"].values())
    assert set(report["meets_targets"]) == set(store.TARGETS)
    assert all(isinstance(v, bool) for v in report["meets_targets"].values())
    assert "0 differ" in report["setup"]["row_checks"]


def test_run_rejects_bad_arguments():
    with pytest.raises(ValueError):
        store.run(rows=0, progress=False)


def test_durability_smoke(tmp_path):
    """`hibase bench store --durability`: every level x write shape x thread count, all rows
    written, fsyncs counted at the fsync level only (no timed assertions)."""
    from click.testing import CliRunner
    from hibase.cli import cli
    out = tmp_path / "d.json"
    got = CliRunner().invoke(cli, ["bench", "store", "--durability", "--puts", "40",
                                   "--batches", "8", "--batch-rows", "5", "--no-progress",
                                   "--output", str(out)])
    assert got.exit_code == 0, got.output
    r = json.loads(out.read_text())
    assert r["command"].startswith("hibase bench store --durability --puts 40 --batches 8")
    assert set(r["cases"]) == {f"{lv}/{k}/{t}t" for lv in ("process", "fsync")
                               for k in ("put", "batch") for t in (1, 4)}
    for name, c in r["cases"].items():
        assert c["rows"] == 40 and c["rows_per_s"] > 0
        if name.startswith("process"):
            assert c["fsyncs"] == 0
        elif name.endswith("/1t"):  # one writer: one fsync per write
            assert c["fsyncs"] == c["writes"]
        else:
            assert 1 <= c["fsyncs"] <= c["writes"]
    assert "fsync rows/s over process rows/s" in got.output


def test_updates_benchmark_smoke(tmp_path):
    from hibase_bench import updates
    report = updates.run(rows=20, rounds=6, single_updates=120, progress=False,
                         workdir=str(tmp_path))
    json.dumps(report)  # JSON-ready
    assert set(report["meets_targets"]) == {"many_rows", "one_row"}
    for name, rows, n in (("many_rows", 20, 120), ("one_row", 1, 120)):
        s = report[name]
        assert s["rows"] == rows and s["updates"] == n
        assert s["rows_wrong"] == 0 and s["index_checked"] and s["verify_index"]["ok"]
        for k in ("put_us", "row_us"):
            assert s["first_round"][k] > 0 and s["last_round"][k] > 0
        assert s["disk_bytes"] > 0 and s["fresh_bytes"] > s["empty_bytes"] > 0
        assert s["live_bytes"] > 0 and math.isfinite(s["disk_over_fresh"])
        # no timed assertion: the stored segments are bounded whatever the speed
        assert s["segment_keys"] <= rows * 5
        assert set(report["meets_targets"][name]) == set(updates.TARGETS)
    assert len(report["many_rows"]["per_round"]) == 6
    assert len(report["one_row"]["per_round"]) == 2  # rounds of 100 updates (and 20)
    assert not list(tmp_path.iterdir())  # its stores are removed


def test_updates_benchmark_rejects_bad_arguments():
    from hibase_bench import updates
    with pytest.raises(ValueError):
        updates.run(rows=0, progress=False)
