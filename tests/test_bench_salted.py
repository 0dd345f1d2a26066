"""hibase bench salted (issue 43) on the session HBase, tiny: both tables loaded and scanned
in full, the salted one pre-split with its time-ordered rows in every bucket's region, the
unsalted one's in its only region, and the summary says so (the figures mean nothing here)."""

import json

from click.testing import CliRunner

from hibase.cli import cli
from servers import coprocessor_cluster


def test_bench_salted_loads_and_scans_both_tables(request, tmp_path):
    cluster = coprocessor_cluster(request)
    out = tmp_path / "s.json"
    got = CliRunner().invoke(cli, ["bench", "salted", cluster.thrift_url, "--rows", "2000",
                                   "--buckets", "4", "--writers", "2", "--repeats", "1",
                                   "--no-progress", "-o", str(out)])
    assert got.exit_code == 0, got.output
    r = json.loads(out.read_text())
    assert r["benchmark"] == "salted" and r["rows"] == 2000 and r["salt_buckets"] == 4
    assert (r["unsalted"]["regions"], r["unsalted"]["regions_used"]) == (1, 1)
    assert (r["salted"]["regions"], r["salted"]["regions_used"]) == (4, 4)
    for kind in ("unsalted", "salted"):
        assert r[kind]["load_rows_per_s"] > 0 and r[kind]["scan_rows_per_s"] > 0
        assert len(r[kind]["runs"]) == 1
    assert "salted (4 buckets)" in got.output and "regions used 4 of 4" in got.output
