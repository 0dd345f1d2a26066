"""hibase bench pushdown's answer check (the bench itself needs a `hibase cluster`)."""

from hibase_bench.pushdown import _same


def test_tied_top_k_answers_agree_on_amounts_not_rows():
    # hibase's row form (key, cells), Phoenix's tuples: six rows tie at the top amount
    hib = [(b"u1", {b"f:amt": 99999}), (b"u2", {b"f:amt": 99999}), (b"u3", {b"f:amt": 99999})]
    phx = [("u4", 99999), ("u5", 99999), ("u1", 99999)]
    assert _same("order by desc limit 3", hib, phx, hib)
    assert not _same("order by desc limit 3", hib, [("u4", 99999), ("u5", 99999), ("u1", 99998)],
                     hib)
    # other shapes must return the very same rows
    assert not _same("two-column filter", [("u1",)], [("u2",)], [("u1",)])
    assert _same("two-column filter", [("u2",), ("u1",)], [("u1",), ("u2",)], [("u1",), ("u2",)])


def test_bench_runs_the_five_queries_pushed_down_and_on_phoenix(hbase_cluster):
    from hibase_bench.pushdown import run

    r = run(hbase_cluster.thrift_url, rows=2000, regions=2, repeats=1, progress=False)
    assert [q["query"] for q in r["queries"]] == [
        "max", "filtered count", "group by (50 groups)", "order by desc limit 3",
        "two-column filter"]
    assert r["all_same"], r["queries"]
    assert all(q["pushed_down"] for q in r["queries"])
    assert all(q["hibase_pushed_s"] > 0 and q["phoenix_s"] > 0 for q in r["queries"])
    assert r["hibase_regions"] == 2
    ix = r["indexed"]
    assert ix["index_used"] and not ix["pushed_down"] and ix["same"]
