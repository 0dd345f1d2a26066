"""The embedded store's row fetch of indexed queries (read_latest_many's one-family path, issue
40) and the decoders of results: the same answers as the general merge, whatever segments a row
holds (puts, overwrites, deleted cells and families, folded rows, versions)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hibase import codec, errors
from hibase.store import embedded

ROWS = [b"a", b"b", b"c\x00d", b"c", b"zz"]
COLS = [b"f:x", b"f:y", b"f:z"]

op = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(ROWS),
              st.dictionaries(st.sampled_from(COLS), st.binary(max_size=3), min_size=1),
              st.integers(1, 9)),
    st.tuples(st.just("delete"), st.sampled_from(ROWS),
              st.one_of(st.none(), st.lists(st.sampled_from(COLS), min_size=1, max_size=2)),
              st.one_of(st.none(), st.integers(1, 9))),
    st.tuples(st.just("compact")),
)


def reference(store, table: str, row: bytes, columns, with_ts: bool) -> dict:
    """A row's newest cells through read_row (merge_segments, the general merge)."""
    cells = store.read_row(table, row, columns)
    return {c: (vs[0] if with_ts else vs[0][1]) for c, vs in cells.items()}


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, max_size=30), fold=st.booleans(),
       asked=st.lists(st.sampled_from(ROWS + [b"absent"]), max_size=8))
def test_one_family_fetch_equals_the_general_merge(embedded_db, monkeypatch, ops, fold, asked):
    # fold=True: rows fold on reads after 2 segments and on writes to a row with one
    monkeypatch.setattr(embedded.reads, "COMPACT_AFTER", 2 if fold else 16)
    monkeypatch.setattr(embedded.store, "FOLD_AT", 2 if fold else 1000)
    db = embedded_db
    if b"m" not in db.tables():
        db.create_table("m", {"f": {"max_versions": 3}})
    t = db.table("m")
    for row, _ in t.scan():
        t.delete(row)
    db.compact_table("m")
    for o in ops:
        if o[0] == "put":
            t.put(o[1], o[2], timestamp=o[3])
        elif o[0] == "delete":
            t.delete(o[1], columns=o[2], timestamp=o[3])
        else:
            db.compact_table("m")
    store = db.store
    for columns in (None, [b"f:y"], [b"f:x", b"f:z"]):
        for with_ts in (True, False):
            want = [reference(store, "m", r, columns, with_ts) for r in asked]
            assert store.read_latest_many("m", asked, columns, with_ts=with_ts) == want
    assert t.rows(asked) == [(r, reference(store, "m", r, None, False)) for r in
                             asked if reference(store, "m", r, None, False)]


def test_fetch_reads_rows_with_many_segments_and_folds_them(embedded_db, monkeypatch):
    monkeypatch.setattr(embedded.store, "FOLD_AT", 1000)  # writes leave the folding to reads
    embedded_db.create_table("m", {"f": {}})
    t = embedded_db.table("m")
    n = embedded.COMPACT_AFTER + 3
    for i in range(n):
        t.put(b"r", {b"f:q%d" % (i % 3): b"v%d" % i}, timestamp=i + 1)
    t.put(b"s", {b"f:q0": b"x"})
    t.delete(b"r", columns=[b"f:q0"])
    newest = {q: b"v%d" % max(i for i in range(n) if i % 3 == q) for q in (1, 2)}
    want = [{b"f:q1": newest[1], b"f:q2": newest[2]}, {b"f:q0": b"x"}, {}]
    assert embedded_db.store.read_latest_many("m", [b"r", b"s", b"t"], with_ts=False) == want
    # the read folded the row: one segment left, the same answer
    assert embedded_db.store.read_latest_many("m", [b"r", b"s", b"t"], with_ts=False) == want


@pytest.mark.parametrize("name, raws", [
    ("long", [b"0", b"12", b"-7", b"+3", b"0012", b"9223372036854775807",
                b"-9223372036854775808"]),
    ("int", [b"1", b"2147483647", b"-2147483648"]),
    ("short", [b"32767", b"-32768", b"999"]),
    ("byte", [b"127", b"-128", b"99"]),
    ("string", [b"", b"Oslo", "\u00e9t\u00e9".encode()]),
])
def test_fast_decoders_decode_as_decode_cell(name, raws):
    t = codec.parse_type(name)
    dec = codec.fast_decoder(t)
    for raw in raws:
        assert dec(raw) == codec.decode_cell(t, raw)


@pytest.mark.parametrize("name, raw", [
    ("long", b"9223372036854775808"), ("long", b" 1"), ("long", b"1_0"),
    ("long", b""), ("int", b"2147483648"), ("byte", b"128"), ("byte", b"-129"),
    ("string", b"\xff"),
])
def test_fast_decoders_refuse_what_decode_cell_refuses(name, raw):
    t = codec.parse_type(name)
    with pytest.raises(errors.ValueTypeError):
        codec.decode_cell(t, raw)
    with pytest.raises((errors.ValueTypeError, UnicodeDecodeError)):
        codec.fast_decoder(t)(raw)
