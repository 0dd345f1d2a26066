"""hibase bench writes (issue 41) on the session HBase, tiny: the loads it times are the ones
it names, every index it made verifies, eventual indexes catch up, and the summary says so."""

from click.testing import CliRunner

from hibase.cli import cli
from servers import coprocessor_cluster


def test_bench_writes_loads_plain_strong_and_eventual_tables(request, tmp_path):
    cluster = coprocessor_cluster(request)
    out = tmp_path / "w.json"
    got = CliRunner().invoke(cli, ["bench", "writes", cluster.thrift_url, "--rows", "600",
                                   "--values", "50", "--no-phoenix", "--no-progress",
                                   "-o", str(out)])
    assert got.exit_code == 0, got.output
    import json
    r = json.loads(out.read_text())
    assert set(r["loads"]) == {"plain1", "strong", "eventual", "uncovered", "plain2"}
    assert all(v["rows_per_s"] > 0 for v in r["loads"].values())
    assert r["upkeep"] == {"strong": ["server"], "eventual": ["server"],
                           "uncovered": ["server"]}
    assert r["loads"]["eventual"]["caught_up_s"] is not None
    # three indexes on each indexed table, all verified (a failure raises in the bench)
    assert sorted(r["verify"]) == sorted(f"{k}.{n}" for k in ("strong", "eventual", "uncovered")
                                         for n in ("by_a", "by_c", "by_d"))
    assert all(r["verify"].values())
    assert r["strong_vs_plain"] > 0 and r["eventual_vs_plain"] > 0
    assert r["uncovered_vs_plain"] > 0 and r["uncovered_vs_strong"] > 0
    assert "uncovered" in got.output
    assert "eventual" in got.output and "strong" in got.output
