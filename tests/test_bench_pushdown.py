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
