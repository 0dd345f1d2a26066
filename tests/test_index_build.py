"""Batch build over regions in worker processes, interrupted builds, verify and repair."""

from __future__ import annotations

import warnings

import hibase
from hibase.index.spec import BUILDING


def _table(db, rows=3000):
    db.create_table("t", {"f": {}}, columns={"f:a": "int", "f:s": "string"},
                    split_size=16 * 1024)
    t = db.table("t")
    with t.batch(batch_size=500) as b:
        for i in range(rows):
            b.put(b"r%05d" % i, {b"f:a": str(i % 37).encode(), b"f:s": b"s%d" % (i % 11),
                                 b"f:x": b"x"})
    assert len(t.regions()) > (4 if rows >= 3000 else 1)
    return t


def test_parallel_build_in_worker_processes_equals_serial(tmp_path):
    db = hibase.connect(str(tmp_path / "s"))
    t = _table(db)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a worker falling back to in-process would warn
        info = db.create_index("t", "ia", ["f:a", "f:s"], covering=["f:x"], processes=2)
    assert info["state"] == "ready"
    assert db.verify_index("t", "ia")["ok"]
    parallel = db.sql("SELECT f.x FROM t WHERE f.a = 5")
    db.build_index("t", "ia", processes=1)
    assert db.sql("SELECT f.x FROM t WHERE f.a = 5") == parallel
    assert sorted(r for r, _ in parallel) == sorted(
        r for r, d in t.scan() if d[b"f:a"] == b"5")
    db.close()


def test_interrupted_build_is_not_used_and_rerun_repairs(tmp_path):
    db = hibase.connect(str(tmp_path / "s"))
    t = _table(db, 500)
    db.create_index("t", "ia", ["f:a"])
    spec = db.indexer.catalog.get("t", "ia")
    # an interrupted build leaves the index "building" with partial contents
    db.indexer.catalog.set_state(spec, BUILDING)
    db.indexer.catalog.clear(spec)
    assert "INDEX ia" not in t.explain("f.a = 3")
    assert len(list(t.where("f.a = 3"))) == len([1 for _, d in t.scan() if d[b"f:a"] == b"3"])
    db.build_index("t", "ia")
    assert "INDEX ia" in t.explain("f.a = 3")
    assert db.verify_index("t", "ia")["ok"]
    db.close()


def test_verify_reports_and_repairs_damage(tmp_path):
    db = hibase.connect(str(tmp_path / "s"))
    _table(db, 300)
    db.create_index("t", "ia", ["f:a"])
    spec = db.indexer.catalog.get("t", "ia")
    entries = list(db.store.kv_scan("__idx__t", spec.alias))
    db.store.commit([], [("__idx__t", entries[0][0], None),
                         ("__idx__t", spec.entry_key([999], b"ghost"), b"\x90")])
    report = db.verify_index("t", "ia")
    assert not report["ok"] and report["missing"] == 1 and report["extra"] == 1
    assert report["examples"]["extra"] == [b"ghost"]
    assert db.verify_index("t", "ia", repair=True)["repaired"]
    assert db.verify_index("t", "ia")["ok"]
    db.close()


def test_bulk_load_suspends_upkeep_then_rebuilds(tmp_path):
    db = hibase.connect(str(tmp_path / "s"))
    db.create_table("t", {"f": {}}, columns={"f:a": "int"})
    t = db.table("t")
    t.put(b"r0", {b"f:a": b"1"})
    db.create_index("t", "ia", ["f:a"])
    db.create_index("t", "la", ["f:a"], local=True)
    with db.bulk_load("t") as names:
        assert sorted(names) == ["ia", "la"]
        assert {i["state"] for i in db.indexes("t")} == {"stale"}
        for i in range(1, 200):
            t.put(b"r%03d" % i, {b"f:a": str(i % 5).encode()})
        assert "INDEX" not in t.explain("f.a = 1")  # stale indexes are not used...
        assert len(list(t.where("f.a = 1"))) == 41  # ...and answers stay exact
        spec = db.indexer.catalog.get("t", "ia")
        assert len(list(db.store.kv_scan("__idx__t", spec.alias))) == 1  # upkeep was off
    assert {i["state"] for i in db.indexes("t")} == {"ready"}
    assert db.verify_index("t", "ia")["ok"] and db.verify_index("t", "la")["ok"]
    assert "INDEX" in t.explain("f.a = 1")
    assert len(list(t.where("f.a = 1"))) == 41
    db.close()


def test_cli_load_bulk(tmp_path):
    from click.testing import CliRunner

    from hibase.cli import cli

    store = str(tmp_path / "s")
    db = hibase.connect(store)
    db.create_table("t", {"f": {}}, columns={"f:a": "int"})
    db.create_index("t", "ia", ["f:a"])
    db.close()
    src = tmp_path / "in.csv"
    src.write_text("id,a\n" + "".join(f"k{i},{i % 3}\n" for i in range(300)))
    result = CliRunner().invoke(cli, ["load", store, "t", str(src), "--rowkey-column", "id",
                                      "-f", "f", "--bulk", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "Rebuilt 1 index(es): ia." in result.output
    db = hibase.connect(store)
    assert db.verify_index("t", "ia")["ok"]
    assert len(db.sql("SELECT * FROM t WHERE f.a = 2")) == 100
    db.close()
