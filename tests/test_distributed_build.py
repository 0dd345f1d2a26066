"""Index builds on a distributed engine (issue 29, item 4): `hibase index create|build ...
--distributed` runs a map-only MapReduce job (io.hibase.IndexBuildJob, the LocalJobRunner here),
one map task per region, on the session's real HBase.

- a table made and written by plain happybase (not hibase), recorded with existing=True, gets an
  index through the CLI with --distributed: one task per region, verify finds 0 differences,
  queries through the index answer what a full scan answers;
- the index kept by the coprocessor is built while another client rewrites rows: verify 0;
- a client-kept index (no coprocessor upkeep) is built by the job from HibaseCodec's entries:
  the same index rows and counts as the one-process build;
- --distributed on the embedded store, and a failing job, are one-line errors (the job's log
  named).

In CI a missing Java / Maven, or a session HBase without the coprocessor, fails.
"""

from __future__ import annotations

import os
import random
import threading
import time

import happybase
import pytest
from click.testing import CliRunner

import hibase
from hibase.cli import cli
from hibase.cluster.mapreduce import MapReduceJob, job_jar
from servers import cluster_url as _url
from servers import coprocessor_cluster, required

CITIES = [b"NY", b"SF", b"LA", b"Paris", b"Oslo"]
_n = [0]


@pytest.fixture
def hbase(request):
    cluster = coprocessor_cluster(request)
    with required():
        job_jar()
    return cluster


def _prefix() -> str:
    _n[0] += 1
    return f"mr{os.getpid()}x{_n[0]}"


def _row(i: int) -> dict[bytes, bytes]:
    cells = {b"d:total": str(i * 1.5).encode(), b"x:note": b"n%d" % i}
    if i % 7:  # every seventh row has no city: the NULL list
        cells[b"d:city"] = CITIES[i % len(CITIES)]
    return cells


def _happybase_table(cluster, name: str, rows: int, splits: list[bytes]):
    """A table made and written by plain happybase, split into len(splits) + 1 regions."""
    conn = happybase.Connection("127.0.0.1", cluster.thrift_port, timeout=60_000)
    conn.create_table(name, {"d": {"max_versions": 1}, "x": {}})
    t = conn.table(name)
    with t.batch(batch_size=1000) as b:
        for i in range(rows):
            b.put(b"o%05d" % i, _row(i))
    for s in splits:
        assert cluster.split(name, s)
    deadline = time.monotonic() + 120
    while len(cluster.region_starts(name)) < len(splits) + 1:
        assert time.monotonic() < deadline, "the splits did not land"
        time.sleep(0.5)
    return conn


def _scan_answer(db, where: str) -> list:
    return sorted(db.sql(f"SELECT ROWKEY, d.total FROM orders WHERE {where}", full_scan=True))


def test_existing_happybase_table_indexed_with_distributed_cli(hbase):
    """The Done-when of issue 29: an index on an existing table written by happybase is built
    with --distributed (one map task per region) and verifies."""
    prefix = _prefix()
    url = _url(hbase, prefix)
    conn = _happybase_table(hbase, f"{prefix}_orders", 3000, [b"o01000", b"o02000"])
    db = hibase.connect(url)
    try:
        db.create_table("orders", ["d"], columns={"d:total": "double", "d:city": "string"},
                        existing=True)
        got = CliRunner().invoke(cli, ["index", "create", url, "orders", "by_city",
                                       "-c", "d:city", "--cover", "d:total", "--distributed",
                                       "--map-slots", "2"])
        assert got.exit_code == 0, got.output
        assert "by a MapReduce job over 3 region(s)" in got.output
        assert "3 map task(s), 3000 row(s)" in got.output
        db.indexer.catalog.refresh()
        spec = db.indexer.catalog.get("orders", "by_city")
        assert spec.server and spec.state == "ready"  # kept by the coprocessor from now on
        report = db.verify_index("orders", "by_city")
        assert report["ok"], report
        assert (report["missing"], report["extra"], report["wrong_covered"],
                report["bad_counts"]) == (0, 0, 0, 0)
        assert report["entries"] == 3000  # the NULL list included
        for where in ("d.city = 'NY'", "d.city = 'Paris' AND d.total > 1000",
                      "d.city IS NULL", "d.city >= 'O'"):
            q = f"SELECT ROWKEY, d.total FROM orders WHERE {where}"
            assert "by_city" in db.explain(q), where
            assert sorted(db.sql(q)) == _scan_answer(db, where), where
        # rebuilt in place (hibase index build --distributed): the same again
        got = CliRunner().invoke(cli, ["index", "build", url, "orders", "by_city",
                                       "--distributed"])
        assert got.exit_code == 0, got.output
        assert "3000 row(s) indexed" in got.output
        assert db.verify_index("orders", "by_city")["ok"]
    finally:
        db.close()
        conn.close()


def test_distributed_build_with_concurrent_writes(hbase):
    """A plain happybase client rewrites rows (city changes, deletes, new rows) while the job
    builds the index; the coprocessor's reindex requests never write a stale entry: once the
    writer stops, verify finds 0 differences and the index answers what a full scan does."""
    prefix = _prefix()
    url = _url(hbase, prefix)
    conn = _happybase_table(hbase, f"{prefix}_orders", 4000, [b"o02000"])
    db = hibase.connect(url)
    stop = threading.Event()
    written = [0]
    errors: list[BaseException] = []

    def writer() -> None:
        c = happybase.Connection("127.0.0.1", hbase.thrift_port, timeout=60_000)
        t = c.table(f"{prefix}_orders")
        rnd = random.Random(5)
        try:
            while not stop.is_set():
                i = rnd.randrange(5000)
                key = b"o%05d" % i
                op = rnd.random()
                if op < 0.15:
                    t.delete(key)
                elif op < 0.3:
                    t.delete(key, columns=[b"d:city"])
                else:
                    t.put(key, {b"d:city": rnd.choice(CITIES),
                                b"d:total": str(rnd.random() * 9000).encode()})
                written[0] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            c.close()

    try:
        db.create_table("orders", ["d"], columns={"d:total": "double", "d:city": "string"},
                        existing=True)
        db.create_index("orders", "by_city", ["d:city"], covering=["d:total"], build=False)
        th = threading.Thread(target=writer, daemon=True)
        th.start()
        time.sleep(0.5)
        before = written[0]
        stats = db.build_index("orders", "by_city", job=MapReduceJob(map_slots=2))
        during = written[0] - before
        stop.set()
        th.join(60)
        assert not errors, errors
        assert during > 0, "no write landed during the build"
        assert len(stats["job"]["tasks"]) == 2
        report = db.verify_index("orders", "by_city")
        assert report["ok"], (during, {k: report[k] for k in (
            "missing", "extra", "wrong_covered", "bad_counts", "examples")})
        for where in ("d.city = 'NY'", "d.city = 'Oslo' AND d.total < 4000", "d.city IS NULL"):
            q = f"SELECT ROWKEY, d.total FROM orders WHERE {where}"
            assert sorted(db.sql(q)) == _scan_answer(db, where), where
    finally:
        stop.set()
        db.close()
        conn.close()


def test_client_kept_index_gets_the_one_process_builds_rows(hbase):
    """Without coprocessor upkeep (server_upkeep=0) the map tasks compute the entries with
    HibaseCodec: the index table holds byte for byte what the one-process build writes, and
    the same counts."""
    prefix = _prefix()
    db = hibase.connect(_url(hbase, prefix, server_upkeep=0))
    try:
        db.create_table("orders", {"d": {}, "x": {}}, columns={"d:total": "double",
                                                      "d:city": "string"})
        t = db.table("orders")
        with t.batch() as b:
            for i in range(2000):
                b.put(b"o%05d" % i, _row(i))
        assert hbase.split(f"{prefix}_orders", b"o01000")
        db.create_index("orders", "by_city", ["d:city"], covering=["d:total"])
        db.create_index("orders", "by_city_total", ["d:city", "d:total"])
        specs = db.indexer.specs("orders")
        assert not any(s.server for s in specs)
        store = db.store

        def snapshot():  # the bytes as stored (the store keeps entries as written)
            return (list(store.kv_scan("__idx__orders")), list(store.kv_scan("__val__orders")))

        one_process = snapshot()
        for name in ("by_city", "by_city_total"):
            stats = db.build_index("orders", name, job=MapReduceJob())
            assert stats["job"]["mode"] == "entries"
            assert stats["rows_indexed"] == 2000 if name == "by_city" else True
            assert db.verify_index("orders", name)["ok"]
        assert snapshot() == one_process
        q = "SELECT ROWKEY FROM orders WHERE d.city = 'LA' AND d.total > 100"
        assert sorted(db.sql(q)) == sorted(db.sql(q, full_scan=True))
    finally:
        db.close()


def test_distributed_on_the_embedded_store_is_one_line(tmp_path):
    path = str(tmp_path / "s")
    db = hibase.connect(path)
    db.create_table("t", {"f": {}}, columns={"f:a": "long"})
    db.close()
    got = CliRunner().invoke(cli, ["index", "create", path, "t", "by_a", "-c", "f:a",
                                   "--distributed"])
    assert got.exit_code == 1
    line = got.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("Error: --distributed runs the build as a MapReduce job"), line
    db = hibase.connect(path)
    assert db.indexes("t") == []  # refused before anything was made
    db.close()


def test_a_failing_job_is_one_line_naming_its_log(hbase, monkeypatch):
    prefix = _prefix()
    url = _url(hbase, prefix)
    db = hibase.connect(url)
    try:
        db.create_table("orders", {"d": {}}, columns={"d:city": "string"})
        db.table("orders").put(b"r1", {b"d:city": b"NY"})
        db.create_index("orders", "by_city", ["d:city"])
        monkeypatch.setattr(db.store.__class__, "hbase_name", lambda self, name, kv=False:
                            "nope" if kv else f"{prefix}_no_such_table")
        got = CliRunner().invoke(cli, ["index", "build", url, "orders", "by_city",
                                       "--distributed"])
        assert got.exit_code == 1
        line = got.output.strip()
        assert "\n" not in line and "Traceback" not in line, got.output
        assert line.startswith("Error: the MapReduce index build job failed"), line
        log = line.rsplit("(job log: ", 1)[1].rstrip(")")
        assert os.path.exists(log)
        assert "TableNotFound" in line or "no_such_table" in line, line
    finally:
        db.close()
