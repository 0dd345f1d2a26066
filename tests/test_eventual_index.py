"""Eventually consistent indexes (issue 41): `create_index(..., consistency="eventual")` and
`CREATE INDEX ... CONSISTENCY = EVENTUAL`. On HBase with hibase's coprocessor a write records
each changed row once (hibase_kv__chg__<table>) and the region's consumer applies it shortly
after; once `index_lag` says nothing waits, the index verifies exactly and answers as the
table does, whoever wrote (hibase, plain happybase), across a region split. Elsewhere the
clients keep every index at once, so nothing lags."""

from __future__ import annotations

import json
import random

import happybase
import pytest

import hibase
from click.testing import CliRunner
from hibase import errors
from hibase.cli import cli
from backends import new_prefix
from servers import cluster_url as _url
from servers import coprocessor_cluster, wait_until

COLUMNS = {"f:a": "string", "f:n": "long", "f:b": "string"}


@pytest.fixture
def hbase(request):
    return coprocessor_cluster(request)


def _caught_up(db, table: str, index: str) -> None:
    wait_until(lambda: db.index_lag(table, index)["pending"] == 0, timeout=60, step=0.2)


def _model_check(db, t, model: dict[bytes, dict[bytes, bytes]]) -> None:
    """Every value of f:a and f:n answers as the model (the rows as written) says."""
    for v in sorted({c[b"f:a"] for c in model.values() if b"f:a" in c}):
        want = sorted(r for r, c in model.items() if c.get(b"f:a") == v)
        assert sorted(r for r, _ in t.where(f"f.a = '{v.decode()}'")) == want, v
        got = db.sql(f"SELECT COUNT(*) FROM t WHERE f.a = '{v.decode()}'")
        assert got == [(len(want),)], v
    for n in sorted({c[b"f:n"] for c in model.values() if b"f:n" in c}):
        want = sorted(r for r, c in model.items() if c.get(b"f:n") == n)
        assert sorted(r for r, _ in t.where(f"f.n = {int(n)}")) == want, n


def test_eventual_indexes_catch_up_with_every_writer_and_verify(hbase):
    """Rows written by hibase and by plain happybase (puts, overwrites, cell and row
    deletes): once nothing lags, a global covered and a local eventual index answer as the
    rows do, and verify; a strong index on the same table stays exact all along."""
    prefix = new_prefix()
    db = hibase.connect(_url(hbase, prefix))
    conn = happybase.Connection("127.0.0.1", hbase.thrift_port, timeout=60000)
    try:
        db.create_table("t", {"f": {}}, columns=COLUMNS)
        made = db.create_index("t", "e_a", ["f:a"], covering=["f:b"], consistency="eventual")
        assert made["consistency"] == "eventual" and made["upkeep"] == "server"
        db.create_index("t", "e_n", ["f:n"], local=True, consistency="eventual")
        db.create_index("t", "s_b", ["f:b"])
        t, p = db.table("t"), conn.table(f"{prefix}_t")
        rnd = random.Random(41)
        model: dict[bytes, dict[bytes, bytes]] = {}
        with t.batch() as b:
            for i in range(600):
                row = b"r%04d" % i
                model[row] = {b"f:a": b"v%d" % (i % 7), b"f:n": b"%d" % (i % 5),
                              b"f:b": b"b%d" % (i % 3)}
                b.put(row, model[row])
        for _ in range(300):
            row = b"r%04d" % rnd.randrange(700)
            op = rnd.random()
            if op < 0.5:
                cells = {b"f:a": b"v%d" % rnd.randrange(9)}
                if rnd.random() < 0.5:
                    cells[b"f:n"] = b"%d" % rnd.randrange(6)
                (t if rnd.random() < 0.5 else p).put(row, cells)
                model.setdefault(row, {}).update(cells)
            elif op < 0.75:
                (t if rnd.random() < 0.5 else p).delete(row)
                model.pop(row, None)
            elif row in model:
                p.delete(row, columns=[b"f:a"])
                model[row].pop(b"f:a", None)
                if not model[row]:
                    del model[row]
            if rnd.random() < 0.1:  # the strong index answers at once, whatever the lag
                assert sorted(r for r, _ in t.where("f.b = 'b1'")) == sorted(
                    r for r, c in model.items() if c.get(b"f:b") == b"b1")
        lag = db.index_lag("t", "e_a")
        assert set(lag) == {"table", "index", "consistency", "pending", "oldest_s"}
        assert lag["consistency"] == "eventual" and lag["pending"] >= 0
        assert db.index_lag("t", "s_b")["pending"] == 0
        _caught_up(db, "t", "e_a")
        assert db.index_lag("t", "e_n") == {**db.index_lag("t", "e_n"), "pending": 0,
                                            "oldest_s": None}
        _model_check(db, t, model)
        plan = db.explain("SELECT f.b FROM t WHERE f.a = 'v1'")
        assert "INDEX e_a" in plan and "EVENTUAL" in plan and "COVERED" in plan
        assert "EVENTUAL" not in db.explain("SELECT * FROM t WHERE f.b = 'b1'")
        # COUNT is not taken from an eventual index's value table
        assert "VALUE TABLE" not in db.explain("SELECT COUNT(*) FROM t WHERE f.a = 'v1'")
        # beside a strong index on the same column, the strong one answers
        db.create_index("t", "s_a", ["f:a"])
        plan = db.explain("SELECT * FROM t WHERE f.a = 'v1'")
        assert "INDEX s_a" in plan and "EVENTUAL" not in plan
        for name in ("e_a", "e_n", "s_b"):
            report = db.verify_index("t", name)
            assert report["ok"], report
        got = CliRunner().invoke(cli, ["index", "status", _url(hbase, prefix), "t", "--json"])
        assert got.exit_code == 0, got.output
        status = {d["name"]: d for d in map(json.loads, got.stdout.splitlines())}
        assert status["e_a"]["upkeep"] == "server" and status["e_a"]["pending"] == 0
        assert (status["e_n"]["consistency"], status["s_b"]["consistency"]) == \
            ("eventual", "strong")
    finally:
        conn.close()
        db.close()


def test_records_left_across_a_split_are_applied_by_the_daughters(hbase):
    """Rows written just before their region splits: each daughter applies the records of
    its own rows, so the index catches up and verifies."""
    prefix = new_prefix()
    db = hibase.connect(_url(hbase, prefix))
    try:
        db.create_table("t", {"f": {}}, columns=COLUMNS)
        db.create_index("t", "e_a", ["f:a"], consistency="eventual")
        t = db.table("t")
        model = {}
        for j in range(4):
            with t.batch() as b:
                for i in range(j, 2000, 4):
                    row = b"r%04d" % i
                    model[row] = {b"f:a": b"v%d" % (i % 11), b"f:n": b"%d" % j}
                    b.put(row, model[row])
        assert hbase.split(f"{prefix}_t", b"r1000")
        with t.batch() as b:
            for i in range(0, 2000, 3):
                row = b"r%04d" % i
                model[row][b"f:a"] = b"w%d" % (i % 5)
                b.put(row, {b"f:a": model[row][b"f:a"]})
        _caught_up(db, "t", "e_a")
        _model_check(db, t, model)
        assert db.verify_index("t", "e_a")["ok"]
    finally:
        db.close()


def test_eventual_elsewhere_is_kept_at_once(tmp_path):
    """On the embedded store the client keeps every index with the write: an eventual index
    is recorded as asked (also through SQL's CONSISTENCY = EVENTUAL) and never lags."""
    with hibase.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.a VARCHAR, f.n BIGINT)")
        db.sql("CREATE INDEX e_a ON t (f.a) CONSISTENCY = EVENTUAL")
        db.create_index("t", "e_n", ["f:n"], consistency="eventual")
        assert {i["name"]: i["consistency"] for i in db.indexes("t")} == \
            {"e_a": "eventual", "e_n": "eventual"}
        db.sql("UPSERT INTO t (k, f.a, f.n) VALUES ('x', 'v', 1)")
        assert db.index_lag("t", "e_a") == {"table": "t", "index": "e_a",
                                            "consistency": "eventual", "pending": 0,
                                            "oldest_s": None}
        assert [r for r, _ in db.table("t").where("f.a = 'v'")] == [b"x"]
        assert "EVENTUAL" not in db.explain("SELECT * FROM t WHERE f.a = 'v'")
        with pytest.raises(errors.SchemaError, match="consistency must be"):
            db.create_index("t", "bad", ["f:a"], consistency="weak")
        with pytest.raises(errors.QueryError, match="EVENTUAL or STRONG"):
            db.sql("CREATE INDEX bad ON t (f.a) CONSISTENCY = SOMETIMES")
    runner = CliRunner()
    store = str(tmp_path / "db")
    got = runner.invoke(cli, ["index", "create", store, "t", "e_k", "-c", "f:n", "--eventual"])
    assert got.exit_code == 0, got.output
    got = runner.invoke(cli, ["index", "status", store, "t"])
    assert got.exit_code == 0, got.output
    lines = got.stdout.splitlines()
    assert lines[0].split() == ["table", "name", "state", "upkeep", "consistency", "pending",
                                "oldest_s"]
    assert ["t", "e_k", "ready", "client", "eventual", "0"] in [ln.split() for ln in lines]
