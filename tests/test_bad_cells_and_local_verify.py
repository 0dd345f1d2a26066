"""Issue 37, items 6 and 7: on HBase hibase answers what HBase shows, whoever writes.

- A cell another writer stored that does not parse as its declared type (e:amount = 'abc' in
  a DOUBLE column): `index verify` and `check` name it (row and column) and finish, the index
  holds no entry for it (as for NULL; a composite index keeps the row's other values), and
  every interface shows it as NULL with a warning: the CLI (an empty field, null in --json, a
  line on stderr), Python (None and a CellTypeWarning), DB-API (None, cursor.messages),
  pandas (NaN).
- A local index kept by the region server (coprocessor) after plain happybase writes: its
  routing filters are not used (lookups visit every region), so `index verify` says OK (not
  NOT OK for filters nobody reads) and queries find the new values.
"""

from __future__ import annotations

import json
import math
import os
import warnings

import happybase
import pytest
from click.testing import CliRunner

import hibase
import hibase.dbapi as dbapi
from hibase.check import check_store
from hibase.cli import cli
from hibase.errors import CellTypeWarning
from servers import cluster_url, coprocessor_cluster

COLUMNS = {"e:amount": "double", "e:cur": "string"}
INDEXES = {"by_amount": (["e:amount"], False), "by_cur_amount": (["e:cur", "e:amount"], False),
           "loc_amount": (["e:amount"], True)}


def _cli(*args, code=0):
    got = CliRunner().invoke(cli, [str(a) for a in args])
    assert got.exit_code == code, (got.exit_code, got.stdout, got.stderr, got.exception)
    return got


@pytest.fixture
def bad_store(backend):
    """Table t (e:amount DOUBLE, e:cur VARCHAR) with a global, a composite and a local index;
    r1's e:amount is 'abc', written by another client after hibase wrote r1's e:cur. Yields
    (backend, open connection)."""
    db = backend.connect()
    db.create_table("t", {"e": {}}, columns=COLUMNS)
    t = db.table("t")
    t.put(b"r0", {b"e:amount": b"1.5", b"e:cur": b"EUR"})
    t.put(b"r2", {b"e:amount": b"2.5", b"e:cur": b"USD"})
    for name, (cols, local) in INDEXES.items():
        db.create_index("t", name, cols, local=local)
    t.put(b"r1", {b"e:cur": b"EUR"})
    backend.foreign_put(db, "t", b"r1", {b"e:amount": b"abc"})
    assert t.row(b"r1") == {b"e:amount": b"abc", b"e:cur": b"EUR"}  # the raw cell is there
    yield backend, db


def test_verify_and_check_name_a_bad_cell_and_finish(bad_store):
    """verify of each index finishes OK (the index holds what a NULL gives), counting the bad
    cell with its row and column; queries through the indexes answer as a full scan, the cell
    NULL; `check` (API and CLI) names it as a warning, exit code 0."""
    backend, db = bad_store
    for name in INDEXES:
        report = db.verify_index("t", name)
        assert report["ok"], report
        assert report["bad_cells"] == 1, report
        assert report["bad_cell_examples"] == [{"row": b"r1", "column": b"e:amount"}]
    t = db.table("t")
    for where in ("e.cur = 'EUR'", "e.cur = 'EUR' AND e.amount IS NULL", "e.amount > 0",
                  "e.amount IS NULL", "e.amount = 1.5"):
        assert sorted(t.where(where)) == sorted(t.where(where, full_scan=True)), where
    assert sorted(r for r, _ in t.where("e.cur = 'EUR'")) == [b"r0", b"r1"]
    assert sorted(r for r, _ in t.where("e.amount IS NULL")) == [b"r1"]
    assert sorted(r for r, _ in t.where("e.amount > 0")) == [b"r0", b"r2"]
    db.close()  # embedded: the CLI and check open the folder themselves

    out = _cli("index", "verify", backend.url, "t", "by_cur_amount")
    assert "OK" in out.stdout and "NOT OK" not in out.stdout
    assert "1 indexed cell did not parse as its declared type (row r1, e.amount)" in out.stdout
    got = json.loads(_cli("index", "verify", backend.url, "t", "by_amount", "--json").stdout)
    assert got["ok"] and got["bad_cells"] == 1
    assert got["bad_cell_examples"] == [{"row": "r1", "column": "e.amount"}]

    report = check_store(backend.url)
    assert report["ok"], report["problems"]
    assert report["bad_cells"]["count"] == 1
    assert report["bad_cells"]["examples"] == [{"table": "t", "row": b"r1",
                                                "column": b"e:amount"}]
    assert all(r.get("bad_cells") == 1 for r in report["indexes"]), report["indexes"]
    out = _cli("check", backend.url)
    assert "WARNING 1 cell did not parse as its declared type (t row r1, e.amount)" in out.stdout
    assert "PROBLEM" not in out.stdout

    db = backend.connect()  # hibase writes to the row: upkeep reads 'abc' as NULL too
    db.table("t").put(b"r1", {b"e:cur": b"GBP"})
    assert [r for r, _ in db.table("t").where("e.cur = 'GBP'")] == [b"r1"]
    for name in INDEXES:
        assert db.verify_index("t", name)["ok"], name


def test_every_interface_shows_a_bad_cell_as_null_with_a_warning(bad_store):
    """Python (sql and execute), DB-API, pandas and the CLI (get, scan, query; table and
    --json) show r1's e:amount as NULL and say, once per statement, that 1 cell did not
    parse as its declared type, naming row r1 and column e:amount."""
    import pandas as pd
    from sqlalchemy import create_engine

    backend, db = bad_store
    want = "1 cell did not parse as its declared type (row r1, e.amount)"
    with pytest.warns(CellTypeWarning, match=want.replace("(", r"\(").replace(")", r"\)")) as w:
        rows = dict(db.sql("SELECT * FROM t"))
    assert rows[b"r1"][b"e:amount"] is None and rows[b"r0"][b"e:amount"] == 1.5
    assert w[0].message.count == 1 and w[0].message.examples == ((b"r1", b"e:amount"),)
    with pytest.warns(CellTypeWarning):
        result = db.execute("SELECT ROWKEY, e.amount FROM t")
    assert result.rows == [(b"r0", 1.5), (b"r1", None), (b"r2", 2.5)]
    assert result.bad_cells.count == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # good cells only: no warning
        assert db.sql("SELECT ROWKEY, e.amount FROM t WHERE ROWKEY = 'r0'") == \
            [(b"r0", {b"e:amount": 1.5})]

    conn = dbapi.connect(db)
    cur = conn.cursor()
    with pytest.warns(CellTypeWarning):
        cur.execute("SELECT ROWKEY, e.amount FROM t WHERE e.cur = 'EUR'")
    assert sorted(cur.fetchall(), key=lambda r: r[0]) == [(b"r0", 1.5), (b"r1", None)]
    assert cur.messages == [(dbapi.Warning, want + ": read as NULL")]
    cur.execute("SELECT ROWKEY FROM t")
    assert cur.messages == []

    engine = create_engine("hibase://", creator=lambda: dbapi.connect(db))
    with pytest.warns(CellTypeWarning):
        frame = pd.read_sql("SELECT ROWKEY, e.amount FROM t", engine)
    engine.dispose()
    amounts = dict(zip(frame.iloc[:, 0], frame.iloc[:, 1]))
    assert math.isnan(amounts[b"r1"]) and amounts[b"r0"] == 1.5
    db.close()

    url = backend.url
    got = _cli("get", url, "t", "r1", "--json")
    assert json.loads(got.stdout) == {"ROWKEY": "r1", "e.amount": None, "e.cur": "EUR"}
    assert want in got.stderr
    got = _cli("get", url, "t", "r1")
    assert [ln.split() for ln in got.stdout.splitlines()[2:]] == [["r1", "e.amount"],
                                                                 ["r1", "e.cur", "EUR"]]
    assert want in got.stderr and "abc" not in got.stdout
    got = _cli("query", url, "SELECT * FROM t", "--json")
    by_row = {o["ROWKEY"]: o for o in map(json.loads, got.stdout.splitlines())}
    assert by_row["r1"]["e.amount"] is None and by_row["r0"]["e.amount"] == 1.5
    assert got.stderr.count(want) == 1
    got = _cli("query", url, "SELECT * FROM t")
    assert "abc" not in got.stdout and want in got.stderr
    got = _cli("scan", url, "t", "--csv")
    assert "r1,e.amount,\n" in got.stdout and want in got.stderr
    got = _cli("query", url, "SELECT * FROM t WHERE ROWKEY = 'r0'")
    assert "did not parse" not in got.stderr


# -- item 7: local indexes kept by the coprocessor ------------------------------------------------

def test_server_kept_local_index_verifies_after_happybase_writes(request, tmp_path):
    """Real HBase with the coprocessor, a local index it keeps, 3 regions; a client queries
    (its routing filters loaded) and closes (saved). Plain happybase then writes new values,
    changes and deletes rows: `index verify` (CLI and API, a fresh client) says OK, the
    routing filters reported as not used, and queries through the index find the new values
    exactly as a full scan does."""
    cluster = coprocessor_cluster(request)
    prefix = f"bl{os.getpid()}"
    url = cluster_url(cluster, prefix)
    db = hibase.connect(url)
    conn = happybase.Connection("127.0.0.1", cluster.thrift_port, timeout=60000)
    try:
        db.create_table("t", {"f": {}}, columns={"f:a": "string", "f:n": "long"})
        t = db.table("t")
        for i in range(30):
            t.put(b"r%02d" % i, {b"f:a": b"v%d" % (i % 3), b"f:n": b"%d" % i})
        cluster.split(f"{prefix}_t", b"r10")
        cluster.split(f"{prefix}_t", b"r20")
        db.create_index("t", "la", ["f:a"], local=True, covering=["f:n"])
        assert all(s.server for s in db.indexer.specs("t"))
        assert sorted(r for r, _ in t.where("f.a = 'v1'")) == [b"r%02d" % i
                                                              for i in range(1, 30, 3)]
        assert db.verify_index("t", "la")["ok"]
        db.close()  # saves the routing filters it holds

        p = conn.table(f"{prefix}_t")
        p.put(b"r05", {b"f:a": b"new"})
        p.put(b"r25", {b"f:a": b"new", b"f:n": b"77"})
        p.put(b"r99", {b"f:a": b"other"})
        p.delete(b"r01")
        p.put(b"r02", {b"f:a": b"v1"})

        got = _cli("index", "verify", url, "t", "la")
        assert "OK" in got.stdout and "NOT OK" not in got.stdout, got.stdout
        assert "routing filters not used" in got.stdout
        report = json.loads(_cli("index", "verify", url, "t", "la", "--json").stdout)
        assert report["ok"] and report["routing"]["used"] is False, report
        assert report["missing"] == report["extra"] == report["bad_counts"] == 0

        db = hibase.connect(url)
        t = db.table("t")
        assert db.verify_index("t", "la")["ok"]
        assert sorted(r for r, _ in t.where("f.a = 'new'")) == [b"r05", b"r25"]
        assert [r for r, _ in t.where("f.a = 'other'")] == [b"r99"]
        for where in ("f.a = 'new'", "f.a = 'v1'", "f.a = 'other'", "f.a > 'o'",
                      "f.a = 'v2'"):
            assert sorted(t.where(where)) == sorted(t.where(where, full_scan=True)), where
        assert db.sql("SELECT f.n FROM t WHERE f.a = 'new' AND f.n = 77") == [
            (b"r25", {b"f:n": 77})]
        assert "visits 3 of 3 region(s), no routing filters (kept by the region server)" \
            in db.explain("SELECT * FROM t WHERE f.a = 'new'")
        assert check_store(url)["ok"]
    finally:
        conn.close()
        db.close()
