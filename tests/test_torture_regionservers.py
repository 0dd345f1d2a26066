"""Faults of a distributed HBase (issue 29, item 2): a region server killed with -9 while hibase
writes, queries, builds an index and follows a local-index split, on a 3-region-server cluster
(`HBaseCluster(regionservers=3)`, one per module: ZooKeeper, a master, three region servers,
Thrift1/Thrift2 and two Redis cache nodes, each its own process); and a Redis cache node killed
under load.

Each test spreads its tables' regions over the three servers (HBase's Admin.move), kills the
region server holding most of them with SIGKILL mid-workload, lets the master reassign its
regions (its ZooKeeper session expires after RS_SESSION_MS, its WAL is split and replayed), then
checks: every acknowledged write is stored with its value (lost 0), no query answered a wrong row
(wrong 0), no call failed (hibase's retries inside the URL's deadline_ms), every index verifies
with 0 differences. The killed server is started again afterwards, so each test finds three.
Pushed-down statements (issue 39): a region server killed during pushed-down aggregates (the
true totals or a hibase error within the deadline, never a wrong total), and
tests/test_pushdown.py's property check run while a region splits and the regions move.

The figures (writes acknowledged while the server was dead, lost, wrong, verify differences,
how long the regions were away) go to the terminal summary ("torture counts", conftest.py) and
to the JSON file HIBASE_TORTURE_RS_REPORT (default /tmp/hibase-torture-regionservers.json)."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time

import pytest

import hibase
from servers import required

pytestmark = [pytest.mark.torture, pytest.mark.own_cluster]

REPORT = os.environ.get("HIBASE_TORTURE_RS_REPORT", "/tmp/hibase-torture-regionservers.json")
COLUMNS = {"f:a": "string", "f:n": "long", "f:c": "string"}
FIGURES: dict[str, dict] = {}
# in every store's prefix: a rerun on a kept cluster (HIBASE_TEST_RS_CLUSTER) starts afresh
RUN = "%04d" % (os.getpid() % 10000)


@pytest.fixture(scope="module")
def rs3(tmp_path_factory):
    """One 3-region-server cluster for the module (started once, stopped after).
    HIBASE_TEST_RS_CLUSTER=DIR uses the running `hibase cluster start DIR --regionservers 3`
    instead (left running)."""
    from hibase.cluster import HBaseCluster

    running = os.environ.get("HIBASE_TEST_RS_CLUSTER")
    if running:
        cluster = HBaseCluster(running)
        cluster.detached = True
        status = cluster.status()
        if [p for p in status["stopped"] if not p.startswith("regionserver-")]:
            # an earlier run's Redis node kill (nothing restarts one node): start afresh
            cluster.stop(timeout=2.0)
            cluster.start(detach=True, progress=False)
        for i, server in enumerate(cluster.status()["regionservers"]):
            if not server["running"]:
                cluster.start_regionserver(i, detach=True)
        yield cluster
        return
    cluster = HBaseCluster(tmp_path_factory.mktemp("hbase3"), regionservers=3, redis_nodes=2,
                           phoenix=False)
    t0 = time.monotonic()
    with required():
        cluster.start(detach=False, progress=False)
    cluster.detached = False
    FIGURES["cluster"] = {"regionservers": 3, "start_s": round(time.monotonic() - t0, 1),
                          "dir": cluster.dir}
    try:
        yield cluster
    finally:
        cluster.stop(timeout=2.0)  # its data is temporary


def record(record_property, name: str, **figures) -> None:
    FIGURES[name] = figures
    line = ", ".join(f"{k}={v}" for k, v in figures.items())
    record_property("torture", line)
    print(f"\n{name}: {line}")
    with open(REPORT, "w") as fh:
        json.dump(FIGURES, fh, indent=1)


def connect(cluster, prefix: str, **options: str):
    """A store under prefix `prefix` + RUN: its table t is the HBase table f"{prefix}{RUN}_t"."""
    extra = "".join(f"&{k}={v}" for k, v in options.items())
    return hibase.connect(f"{cluster.thrift_url}&prefix={prefix}{RUN}{extra}")


def spread(cluster, table: str, splits: list[bytes]) -> None:
    """Split HBase table `table` at `splits` and move its regions round-robin over the servers."""
    for row in splits:
        cluster.split(table, row)
    cluster.spread(table)


def busiest(cluster, tables: list[str]) -> int:
    """The index of the region server holding most regions of `tables`."""
    count = {p: 0 for p in cluster.rs_ports}
    for table in tables:
        for port in cluster.region_servers_of(table).values():
            count[port] = count.get(port, 0) + 1
    return cluster.rs_ports.index(max(cluster.rs_ports, key=lambda p: count[p]))


class Outage:
    """Kill region server `victim` with -9; `wait()` until no region of `tables` is on it (or
    in transition) any more; `restore()` starts it again."""

    def __init__(self, cluster, victim: int, tables: list[str]):
        self.cluster, self.victim, self.tables = cluster, victim, tables
        self.port = cluster.rs_ports[victim]
        self.meta = cluster.live_servers().get(self.port, {}).get("meta", False)
        self.regions = sum(p == self.port for t in tables
                           for p in cluster.region_servers_of(t).values())
        self.killed_at = time.monotonic()
        cluster.kill_regionserver(victim)
        self.back_at: float | None = None
        self.watcher = threading.Thread(target=self._watch, daemon=True)
        self.watcher.start()

    def _watch(self, timeout: float = 120.0) -> None:
        while time.monotonic() < self.killed_at + timeout:
            try:
                ports = [p for t in self.tables
                         for p in self.cluster.region_servers_of(t).values()]
            except Exception:  # the admin helper waits on HBase too; ask again
                ports = [-1]
            if self.port not in ports and -1 not in ports:
                self.back_at = time.monotonic()
                return
            time.sleep(0.25)

    def wait(self, timeout: float = 120.0) -> float:
        """Seconds from the kill until every region of `tables` was on a live server."""
        self.watcher.join(timeout)
        if self.back_at is None:
            pytest.fail(f"regions of {self.tables} not reassigned within {timeout} s (logs in "
                        f"{self.cluster.dir}/logs)")
        return self.back_at - self.killed_at

    def restore(self) -> None:
        self.cluster.start_regionserver(self.victim, detach=self.cluster.detached)


class Writers:
    """`threads` threads, each putting batches of 5 rows of its own (rows w<thread>-<k>), so
    the last acknowledged value of every row is known; `acked` counts rows of acknowledged
    batches with the time each batch was acknowledged."""

    def __init__(self, table, threads: int = 2, keys: int = 300, prefix: str = "w"):
        self.table, self.keys, self.prefix = table, keys, prefix
        self.truth: dict[bytes, dict] = {}
        self.uncertain: dict[bytes, tuple] = {}  # rows of a batch that raised: old or new
        self.acked_at: list[float] = []
        self.latency: list[float] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(j,)) for j in range(threads)]

    def _run(self, j: int) -> None:
        rnd = random.Random(j)
        i = 0
        while not self.stop.is_set():
            batch = {}
            for _ in range(5):
                row = b"%s%d-%04d" % (self.prefix.encode(), j, rnd.randrange(self.keys))
                batch[row] = {b"f:a": b"x%d" % rnd.randrange(30),
                              b"f:n": b"%d" % rnd.randrange(-100, 100), b"f:c": b"c%d" % i}
                i += 1
            t0 = time.monotonic()
            try:
                with self.table.batch() as b:
                    for row, data in batch.items():
                        b.put(row, data)
            except Exception as exc:  # counted: the test wants none
                with self.lock:
                    self.errors.append(f"{type(exc).__name__}: {exc}"[:300])
                    for row, data in batch.items():
                        self.uncertain[row] = (self.truth.get(row), data)
                continue
            done = time.monotonic()
            with self.lock:
                self.truth.update(batch)
                for row in batch:
                    self.uncertain.pop(row, None)
                self.acked_at.extend([done] * len(batch))
                self.latency.append(done - t0)

    def __enter__(self) -> "Writers":
        for th in self.threads:
            th.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for th in self.threads:
            th.join(180)

    def wait_acked(self, more: int, timeout: float = 30.0) -> None:
        """Let the writers acknowledge `more` rows more (at most `timeout` s: a loaded machine
        is slow, the figures say how many)."""
        want = len(self.acked_at) + more
        end = time.monotonic() + timeout
        while len(self.acked_at) < want and time.monotonic() < end and not self.errors:
            time.sleep(0.1)

    def acked_between(self, start: float, end: float | None) -> int:
        return sum(start <= t <= (end or float("inf")) for t in self.acked_at)

    def lost(self, table) -> int:
        """Acknowledged rows not stored with their last acknowledged value."""
        stored = dict(table.scan(row_prefix=self.prefix.encode()))
        lost = 0
        for row, data in self.truth.items():
            if row in self.uncertain:
                if stored.get(row) not in self.uncertain[row]:
                    lost += 1
            elif stored.get(row) != data:
                lost += 1
        return lost


def wait_for(check, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check() and time.monotonic() < end:
        time.sleep(0.1)


def load(table, rows: int, values: int = 20) -> dict[bytes, dict]:
    truth = {}
    for start in range(0, rows, 500):
        with table.batch() as b:
            for i in range(start, min(start + 500, rows)):
                data = {b"f:a": b"v%d" % (i % values), b"f:n": b"%d" % (i % 97),
                        b"f:c": b"c%d" % i}
                b.put(b"r%05d" % i, data)
                truth[b"r%05d" % i] = data
    return truth


KINDS = ("missing", "extra", "wrong_covered", "bad_counts")


def unverified(db, table: str, name: str) -> int:
    """Unverified entries stored in index `name` (0x00 + [rowkey]: the verified protocol's
    phase 1, left when its phase 3 never came), read raw as verify reads them."""
    from hibase.codec import prefix_successor
    from hibase.index.local import local_table, split_key
    from hibase.index.spec import index_table

    spec = next(s for s in db.indexer.specs(table) if s.name == name)
    store = db.store  # kv_scan gives the entries as stored (readers resolve them above it)
    if spec.local:
        rows = [v for k, v in store.kv_scan(local_table(spec.table))
                if k[split_key(k)[1]:][:2] == spec.alias]
    else:
        rows = [v for a in spec.aliases for k, v in store.kv_scan(
            index_table(spec.table), a, prefix_successor(a))]
    return sum(v[:1] == b"\x00" for v in rows)


# how long a region reopened after the kill may take to recover what its dead incarnation
# left (IndexObserver.recover: it starts when the region opens, in the background)
RECOVERY_WAIT_S = 180


def verify(db, table: str, names: list[str], server: bool) -> dict:
    """verify_index of each index: the differences by kind. What the design promises (checked
    by check_verify): no difference at all. With client upkeep the verified protocol's
    retried calls are idempotent. With hibase's coprocessor a batch the dead server did not
    finish leaves unverified index entries (the batch, retried on the region's new server,
    finds its row already written from the replayed WAL and changes nothing; raw verify
    counts each as wrong_covered or extra, readers resolve them against the row) and pending
    value counts, until the region's new incarnation recovers them (IndexObserver.recover, in
    the background once the region reopened): server upkeep is verified again until that is
    done (at most RECOVERY_WAIT_S), with the first look's differences kept as figures
    (verify_first). Never a verified entry with a wrong covered value or a missing entry.
    Where differences are left, `verify --repair` runs and what it leaves is reported."""
    def look() -> tuple[dict, int]:
        kinds, leftovers = dict.fromkeys(KINDS, 0), 0
        for name in names:
            r = db.verify_index(table, name)
            for k in KINDS:
                kinds[k] += r[k]
            if r["wrong_covered"] or r["extra"]:
                n = unverified(db, table, name)
                leftovers += n
                # every unverified entry differs from the rebuild, so equality means no
                # verified entry does
                assert r["wrong_covered"] + r["extra"] == n, (name, r, n)
        return kinds, leftovers

    first, leftovers = look()
    before, t0 = first, time.monotonic()
    while server and sum(before.values()) and time.monotonic() - t0 < RECOVERY_WAIT_S:
        time.sleep(5)
        before, _ = look()
    out = {"verify_differences": sum(before.values()), "unverified_leftovers": leftovers,
           "verify_first": sum(first.values())}
    if out["verify_first"]:
        out["verify_first_kinds"] = "/".join(f"{k}:{v}" for k, v in first.items() if v)
        out["recovered_after_s"] = round(time.monotonic() - t0, 1)
    if out["verify_differences"]:
        out["verify_kinds"] = "/".join(f"{k}:{v}" for k, v in before.items() if v)
        after = 0
        for name in names:
            db.verify_index(table, name, repair=True)
            r = db.verify_index(table, name)
            after += sum(r[k] for k in KINDS)
        out["verify_after_repair"] = after
    return out


def check_verify(v: dict) -> None:
    assert "missing" not in v.get("verify_first_kinds", ""), v
    assert v["verify_differences"] == 0, v


def index_vs_scan(db, t, conditions: list[str]) -> int:
    """Conditions whose index answer, or COUNT(*) (from the value table's counts where they
    are settled), differs from the full scan's."""
    wrong = 0
    for c in conditions:
        truth = sorted(t.where(c, full_scan=True))
        wrong += sorted(t.where(c)) != truth
        wrong += db.sql(f"SELECT COUNT(*) FROM t WHERE {c}") != [(len(truth),)]
    return wrong


# -- the tests ----------------------------------------------------------------------------------
def test_status_lists_each_region_server(rs3, record_property):
    """`hibase cluster status DIR --json`: each region server with its pid, port and regions
    (and the module cluster's start time, in the figures)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "hibase", "cluster", "status", rs3.dir,
                          "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    st = json.loads(out.stdout)
    servers = st["regionservers"]
    assert [s["name"] for s in servers] == ["regionserver-0", "regionserver-1", "regionserver-2"]
    assert all(s["running"] and s["pid"] == st["running"][s["name"]] for s in servers)
    assert sorted(s["port"] for s in servers) == sorted(rs3.rs_ports)
    assert all(isinstance(s["regions"], int) for s in servers)
    assert sum(s["meta"] for s in servers) == 1
    assert sum(s["regions"] for s in servers) >= 2  # hbase:meta, hbase:namespace at least
    record(record_property, "cluster_status", start_s=FIGURES.get("cluster", {}).get("start_s"),
           regions={s["name"]: s["regions"] for s in servers})



@pytest.mark.parametrize("upkeep", ["server", "client", "eventual"])
def test_regionserver_killed_during_indexed_writes(rs3, record_property, upkeep):
    """Writers put batches through three indexes (global covered, composite uncovered but for
    eventual upkeep, local) while the region server holding most of the table's regions is
    killed. server: hibase's coprocessor
    keeps the indexes; client: hibase's verified protocol, with a 2 s socket timeout, so the
    calls HBase holds while the regions are away time out and hibase retries them (within
    deadline_ms) instead of HBase's Thrift server riding it out alone; eventual: the
    coprocessor records changed rows and the regions' consumers apply them (issue 41): once
    nothing lags (the dead server's records applied by the regions' new homes) the indexes
    answer as the rows do and verify."""
    prefix = f"w{upkeep}"
    if upkeep != "client":
        db = connect(rs3, prefix, server_upkeep="1")
    else:
        db = connect(rs3, prefix, server_upkeep="0", timeout="2000")
    consistency = "eventual" if upkeep == "eventual" else "strong"
    db.create_table("t", {"f": {}}, columns=COLUMNS)
    db.create_index("t", "by_a", ["f:a"], covering=["f:c"], consistency=consistency)
    # the composite one uncovered (issue 43: entries written once, checked by readers), except
    # for eventual upkeep, whose consumer writes entries in one form whatever the kind
    db.create_index("t", "by_an", ["f:a", "f:n"], consistency=consistency,
                    uncovered=upkeep != "eventual")
    db.create_index("t", "loc_n", ["f:n"], local=True, consistency=consistency)
    assert all(s.server == (upkeep != "client") for s in db.indexer.specs("t"))
    t = db.table("t")
    tables = [f"{prefix}{RUN}_t"]
    spread(rs3, tables[0], [b"w0-0150", b"w1", b"w1-0150"])
    outage = None
    try:
        with Writers(t) as w:
            w.wait_acked(50)
            outage = Outage(rs3, busiest(rs3, tables), tables)
            away = outage.wait()
            w.wait_acked(50)
        assert not w.errors, w.errors[:3]
        lost = w.lost(t)
        caught_up_s = None
        if upkeep == "eventual":
            t0 = time.monotonic()
            while db.index_lag("t", "by_a")["pending"] and \
                    time.monotonic() - t0 < RECOVERY_WAIT_S:
                time.sleep(1)
            caught_up_s = round(time.monotonic() - t0, 1)
            assert db.index_lag("t", "by_a")["pending"] == 0
        conds = [f"f.a = 'x{v}'" for v in range(30)] + \
            [f"f.n = {n}" for n in range(-100, 100, 9)] + ["f.a = 'x3' AND f.n > 0"]
        wrong = index_vs_scan(db, t, conds)
        v = verify(db, "t", ["by_a", "by_an", "loc_n"], upkeep != "client")
        record(record_property, f"writes[{upkeep}]", acked_rows=len(w.acked_at),
               acked_since_kill=w.acked_between(outage.killed_at, None),
               acked_while_dead=w.acked_between(outage.killed_at, outage.back_at),
               regions_on_victim=outage.regions, victim_held_meta=outage.meta,
               reassigned_s=round(away, 1), max_batch_s=round(max(w.latency), 1),
               retries=db.store.retried, errors=len(w.errors), lost=lost, wrong=wrong,
               caught_up_s=caught_up_s, **v)
        assert lost == 0 and wrong == 0
        check_verify(v)
        assert w.acked_between(outage.killed_at, None) > 0
    finally:
        db.close()
        if outage is not None:
            outage.restore()


def test_regionserver_killed_during_queries(rs3, record_property):
    """Readers query a global and a local index, SQL counts and long scans (several scanner
    chunks) of 2,500 rows that do not change while a writer adds other rows, and the region
    server holding most regions is killed: every answer equals the truth."""
    db = connect(rs3, "q")
    db.create_table("t", {"f": {}}, columns=COLUMNS)
    t = db.table("t")
    truth = load(t, 2500)
    db.create_index("t", "by_a", ["f:a"], covering=["f:c"])
    db.create_index("t", "loc_n", ["f:n"], local=True)
    tables = [f"q{RUN}_t"]
    spread(rs3, tables[0], [b"r00800", b"r01600", b"w"])
    answered: list[float] = []
    wrong: list[str] = []
    errors: list[str] = []
    stop = threading.Event()

    def expect(pred) -> list[bytes]:
        return sorted(k for k, d in truth.items() if pred(d))

    def read(j: int) -> None:
        rnd = random.Random(j)
        while not stop.is_set():
            kind = rnd.randrange(4)
            try:
                if kind == 0:
                    v = rnd.randrange(20)
                    got = sorted(k for k, _ in t.where(f"f.a = 'v{v}'"))
                    want = expect(lambda d: d[b"f:a"] == b"v%d" % v)
                elif kind == 1:
                    n = rnd.randrange(90)
                    got = sorted(k for k, _ in t.where(f"f.n BETWEEN {n} AND {n + 5}")
                                 if k.startswith(b"r"))
                    want = expect(lambda d: n <= int(d[b"f:n"]) <= n + 5)
                elif kind == 2:
                    v = rnd.randrange(20)
                    got = db.sql(f"SELECT COUNT(*) FROM t WHERE f.a = 'v{v}'")[0][0]
                    want = len(expect(lambda d: d[b"f:a"] == b"v%d" % v))
                else:
                    got = dict(t.scan(row_prefix=b"r"))
                    want = truth
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
                continue
            answered.append(time.monotonic())
            if got != want:
                wrong.append(f"kind {kind}")

    readers = [threading.Thread(target=read, args=(j,)) for j in range(2)]
    outage = None
    try:
        with Writers(t, threads=1) as w:
            for th in readers:
                th.start()
            w.wait_acked(20)
            wait_for(lambda: len(answered) >= 8)
            outage = Outage(rs3, busiest(rs3, tables), tables)
            away = outage.wait()
            n = len(answered)
            wait_for(lambda: len(answered) >= n + 8)
            stop.set()
            for th in readers:
                th.join(180)
        during = sum(outage.killed_at <= x <= outage.back_at for x in answered)
        lost = w.lost(t)
        v = verify(db, "t", ["by_a", "loc_n"], True)
        record(record_property, "queries", queries=len(answered), answered_while_dead=during,
               acked_rows=len(w.acked_at),
               acked_since_kill=w.acked_between(outage.killed_at, None),
               acked_while_dead=w.acked_between(outage.killed_at, outage.back_at),
               regions_on_victim=outage.regions, victim_held_meta=outage.meta,
               reassigned_s=round(away, 1), retries=db.store.retried,
               errors=len(errors) + len(w.errors), lost=lost, wrong=len(wrong), **v)
        assert not errors and not w.errors, (errors + w.errors)[:3]
        assert not wrong and lost == 0, wrong[:3]
        check_verify(v)
    finally:
        stop.set()
        db.close()
        if outage is not None:
            outage.restore()


@pytest.mark.parametrize("local", [False, True], ids=["global", "local"])
def test_regionserver_killed_during_index_build(rs3, record_property, local):
    """An index is built over 3,000 rows in six regions (two per server) while a writer
    writes; the region server holding most regions dies after the first region is built: the
    build finishes and the index verifies."""
    prefix = "bl" if local else "bg"
    db = connect(rs3, prefix)
    db.create_table("t", {"f": {}}, columns=COLUMNS)
    t = db.table("t")
    load(t, 3000)
    tables = [f"{prefix}{RUN}_t"]
    spread(rs3, tables[0], [b"r00500", b"r01000", b"r01500", b"r02000", b"r02500"])
    holder: dict = {}
    killed = threading.Event()

    def progress(done, total) -> None:
        if done >= 1 and not killed.is_set():
            killed.set()
            holder["outage"] = Outage(rs3, busiest(rs3, tables), tables)

    try:
        with Writers(t, threads=1) as w:
            time.sleep(1)
            t0 = time.monotonic()
            db.create_index("t", "by_a", ["f:a"], covering=["f:c"], local=local,
                            progress=progress)
            build_s = time.monotonic() - t0
            outage = holder["outage"]
            away = outage.wait()
            time.sleep(2)
        lost = w.lost(t)
        conds = [f"f.a = 'v{v}'" for v in range(20)] + [f"f.a = 'x{v}'" for v in range(30)]
        wrong = index_vs_scan(db, t, conds)
        v = verify(db, "t", ["by_a"], True)
        record(record_property, f"index_build[{'local' if local else 'global'}]",
               build_s=round(build_s, 1), acked_rows=len(w.acked_at),
               acked_since_kill=w.acked_between(outage.killed_at, None),
               acked_while_dead=w.acked_between(outage.killed_at, outage.back_at),
               regions_on_victim=outage.regions, victim_held_meta=outage.meta,
               reassigned_s=round(away, 1), retries=db.store.retried, errors=len(w.errors),
               lost=lost, wrong=wrong, **v)
        assert not w.errors, w.errors[:3]
        assert lost == 0 and wrong == 0
        check_verify(v)
    finally:
        db.close()
        if "outage" in holder:
            holder["outage"].restore()


def test_regionserver_killed_during_local_index_split(rs3, record_property):
    """Writers keep a local (and a global) index while HBase splits a region; as soon as the
    split is done the server holding the local index's rows is killed, so hibase's rewrite of
    the local rows for the new regions (follow_splits) runs into the dead server."""
    db = connect(rs3, "s", region_check_ms="0")
    db.create_table("t", {"f": {}}, columns=COLUMNS)
    t = db.table("t")
    load(t, 3000)
    db.create_index("t", "loc_a", ["f:a"], covering=["f:c"], local=True)
    db.create_index("t", "by_n", ["f:n"])
    hbase_tables = rs3_tables(rs3, f"s{RUN}_")
    kv = [n for n in hbase_tables if "lidx" in n]
    assert kv, hbase_tables
    data = f"s{RUN}_t"
    spread(rs3, data, [b"r01000", b"w"])
    tables = [data, *kv]
    try:
        with Writers(t) as w:
            w.wait_acked(50)
            split_ok = rs3.split(data, b"r02000")
            victim = rs3.rs_ports.index(rs3.region_servers_of(kv[0])[b""])
            outage = Outage(rs3, victim, tables)
            away = outage.wait()
            w.wait_acked(50)
        assert not w.errors, w.errors[:3]
        starts = rs3.region_starts(data)
        lost = w.lost(t)
        conds = [f"f.a = 'v{v}'" for v in range(20)] + [f"f.a = 'x{v}'" for v in range(30)] + \
            [f"f.n = {n}" for n in range(-100, 100, 13)]
        wrong = index_vs_scan(db, t, conds)
        v = verify(db, "t", ["loc_a", "by_n"], True)
        record(record_property, "local_index_split", split=split_ok,
               regions_after=len(starts), acked_rows=len(w.acked_at),
               acked_since_kill=w.acked_between(outage.killed_at, None),
               acked_while_dead=w.acked_between(outage.killed_at, outage.back_at),
               regions_on_victim=outage.regions, victim_held_meta=outage.meta,
               reassigned_s=round(away, 1), retries=db.store.retried, errors=len(w.errors),
               lost=lost, wrong=wrong, **v)
        assert lost == 0 and wrong == 0
        check_verify(v)
    finally:
        db.close()
        if "outage" in locals():
            outage.restore()


def rs3_tables(cluster, prefix: str) -> list[str]:
    import happybase
    conn = happybase.Connection("127.0.0.1", cluster.thrift_port)
    try:
        return [n.decode() for n in conn.tables() if n.decode().startswith(prefix)]
    finally:
        conn.close()


def test_redis_cache_node_killed_under_load(rs3, record_property):
    """Writers and readers on a table cached in the cluster's two Redis nodes (found through
    HBase's ZooKeeper); one Redis node is killed with -9 mid-load: answers stay exact, no
    acknowledged write is lost, the index verifies."""
    db = hibase.connect(f"{rs3.thrift_url}&prefix=c{RUN}", cache=rs3.zk_url)
    db.create_table("t", {"f": {}}, columns=COLUMNS)
    t = db.table("t")
    truth = {k: d[b"f:a"] for k, d in load(t, 500, values=15).items()}
    db.create_index("t", "by_a", ["f:a"])
    for _ in range(3):  # warm: the sets of the hot values in the Redis nodes before the kill
        for v in range(15):
            list(t.where(f"f.a = 'v{v}'"))
    warm = db.cache_stats().get("hits", 0)
    counts = {"queries": 0, "writes": 0, "writes_after_kill": 0, "wrong": 0}
    rng = random.Random(29)
    pid = rs3._running()["redis-0"]
    killed_at = None
    start = time.monotonic()
    try:
        while time.monotonic() - start < 8:
            if killed_at is None and time.monotonic() - start > 3:
                os.kill(pid, signal.SIGKILL)
                killed_at = time.monotonic()
            if counts["queries"] % 3 == 0:  # a write per three queries: the sets stay hot
                key = b"r%05d" % rng.randrange(500)
                value = b"v%d" % rng.randrange(15)
                t.put(key, {b"f:a": value})
                truth[key] = value
                counts["writes"] += 1
                counts["writes_after_kill"] += killed_at is not None
            v = b"v%d" % rng.randrange(15)
            got = sorted(k for k, _ in t.where(f"f.a = '{v.decode()}'"))
            counts["queries"] += 1
            counts["wrong"] += got != sorted(k for k, x in truth.items() if x == v)
        stored = {k: d[b"f:a"] for k, d in t.scan()}
        lost = sum(stored.get(k) != v for k, v in truth.items())
        v = verify(db, "t", ["by_a"], True)
        stats = db.cache_stats()
        record(record_property, "redis_node_killed", **counts, lost=lost,
               cache_hits_warming=warm, cache_hits=stats.get("hits", 0) - warm, members_after=len(stats.get("members", [])),
               **v)
        assert counts["wrong"] == 0 and lost == 0
        check_verify(v)  # no region server died here
        assert counts["writes_after_kill"] > 10
    finally:
        db.close()



def test_server_filters_route_to_the_servers_holding_a_value(rs3, record_property):
    """SPEC §3's global level on three region servers (issue 29, item 5): one SCBF per region
    server, a lookup asking only the servers whose filter may hold the value; never one that
    holds a matching row missed, the same rows as the full scan, and after regions move the
    filters follow the new placement."""
    from hibase.index import local
    from hibase.index import routing
    from hibase.index.lookup import key_range

    db = connect(rs3, "b", server_upkeep="0", region_check_ms="0")
    try:
        db.create_table("t", {"f": {}}, columns=COLUMNS)
        db.create_index("t", "loc_a", ["f:a"], covering=["f:c"], local=True)
        data = f"b{RUN}_t"
        spread(rs3, data, [b"r%05d" % i for i in range(500, 3000, 500)])
        db.store.follow_splits("t", force=True)
        t = db.table("t")
        with t.batch() as b:  # value g<block>-<k> only in rows of its 500-row block: one region
            for i in range(3000):
                b.put(b"r%05d" % i, {b"f:a": b"g%d-%d" % (i // 500, i % 10),
                                     b"f:n": b"%d" % i, b"f:c": b"c%d" % i})
        router = db.indexer.router
        router.level = "server"
        spec = db.indexer.catalog.get("t", "loc_a")

        def measure() -> dict:
            placement = router.placement("t", db.store.regions("t"))
            servers = set(placement.values())
            chosen = holding = false = everywhere = 0
            for v in [f"g{blk}-{k}" for blk in range(6) for k in range(10)] + \
                    [f"absent{k}" for k in range(30)]:
                routes: list = []
                rows = sorted(r for r, _ in local.scan_entries(
                    db.store, spec, [key_range(spec, [v])], router, routes))
                assert rows == sorted(r for r, _ in t.where(f"f.a = '{v}'", full_scan=True))
                visited = {placement[r.id] for r in routes[0].regions}
                held = {placement[db.store.region_of("t", r).id] for r in rows}
                assert held <= visited  # never a false negative
                chosen += len(visited)
                holding += len(held)
                false += len(visited - held)
                router.enabled = False  # hindex: every region, so every server
                routes = []
                list(local.scan_entries(db.store, spec, [key_range(spec, [v])], router, routes))
                router.enabled = True
                everywhere += len({placement[r.id] for r in routes[0].regions})
            return {"servers": len(servers), "servers_visited": chosen,
                    "servers_holding_rows": holding, "servers_without_match": false,
                    "hindex_servers_visited": everywhere}

        before = measure()
        assert before["servers"] == 3
        # 60 present values, one server each; 30 absent: the filters rule most servers out
        assert before["servers_holding_rows"] == 60
        assert before["servers_visited"] < 60 + 30 * 3 // 2
        assert before["hindex_servers_visited"] == 90 * 3
        rs3.split(data, b"r00250")
        rs3.spread(data)
        db.store.follow_splits("t", force=True)
        time.sleep(routing.PLACEMENT_TTL_S)  # the cached placement expires
        after = measure()  # never a false negative, checked value by value inside
        # block 0's ten values now span r00000-r00249 and r00250-r00499: two servers or one
        assert 60 <= after["servers_holding_rows"] <= 70
        record(record_property, "scbf_per_server", before=before, after_moves=after)
    finally:
        db.close()


# -- pushed-down statements (issue 39) ----------------------------------------------------------

def test_regionserver_killed_during_pushed_down_aggregate(rs3, record_property):
    """Readers run pushed-down aggregates (COUNT / SUM / GROUP BY, each region's partial
    state merged by the client) over a 4-region table spread over the three servers, and the
    region server holding most of its regions is killed: every answer is the true total or a
    hibase error raised within the URL's deadline (the client path's retries), never a wrong
    total."""
    from hibase.errors import HibaseError
    from hibase.store.hbase.url import DEFAULT_DEADLINE_MS

    db = connect(rs3, "pa")
    db.create_table("t", {"f": {}}, columns=COLUMNS)
    t = db.table("t")
    truth = load(t, 6000)
    tables = [f"pa{RUN}_t"]
    spread(rs3, tables[0], [b"r01500", b"r03000", b"r04500"])
    total = (len(truth), sum(int(d[b"f:n"]) for d in truth.values()))
    groups: dict[str, list[int]] = {}
    for d in truth.values():
        g = groups.setdefault(d[b"f:a"].decode(), [0, 0])
        g[0] += 1
        g[1] += int(d[b"f:n"])
    statements = [
        ("SELECT COUNT(*), SUM(f.n) FROM t WHERE f.n >= 0", [total]),
        ("SELECT f.a, COUNT(*), SUM(f.n) FROM t WHERE f.c >= 'c' GROUP BY f.a",
         sorted((k, c, s) for k, (c, s) in groups.items())),
        ("SELECT COUNT(f.c), MIN(f.n), MAX(f.n) FROM t WHERE f.a <> 'none'",
         [(len(truth), 0, 96)])]
    for sql, want in statements:
        plan = "\n".join(r[0] for r in db.sql("EXPLAIN " + sql))
        assert "PUSHED DOWN" in plan and "4 region(s)" in plan, plan
        assert sorted(db.sql(sql)) == want, sql  # before the kill
    deadline_s = DEFAULT_DEADLINE_MS / 1000
    answered: list[tuple[float, float]] = []  # (start, end) of each right answer
    wrong: list[str] = []
    failed: list[tuple[float, str]] = []  # (seconds taken, error) of hibase errors
    foreign: list[str] = []  # anything else raised
    stop = threading.Event()

    def read(j: int) -> None:
        k = j
        while not stop.is_set():
            sql, want = statements[k % len(statements)]
            k += 1
            t0 = time.monotonic()
            try:
                got = sorted(db.sql(sql))
            except HibaseError as exc:
                failed.append((time.monotonic() - t0, f"{type(exc).__name__}: {exc}"[:300]))
                continue
            except Exception as exc:
                foreign.append(f"{type(exc).__name__}: {exc}"[:300])
                continue
            if got != want:
                wrong.append(f"{sql}: {got[:3]} != {want[:3]}")
            answered.append((t0, time.monotonic()))

    readers = [threading.Thread(target=read, args=(j,)) for j in range(2)]
    outage = None
    try:
        for th in readers:
            th.start()
        wait_for(lambda: len(answered) >= 4, 60)
        outage = Outage(rs3, busiest(rs3, tables), tables)
        away = outage.wait()
        n = len(answered)
        wait_for(lambda: len(answered) >= n + 6, 120)
        stop.set()
        for th in readers:
            th.join(deadline_s + 60)
        spanning = sum(s <= outage.killed_at <= e or outage.killed_at <= s <= outage.back_at
                       for s, e in answered)
        after = sum(s > outage.back_at for s, _ in answered)
        record(record_property, "pushed_aggregate", answers=len(answered),
               answered_across_kill=spanning, answered_after=after,
               regions_on_victim=outage.regions, reassigned_s=round(away, 1),
               hibase_errors=len(failed), slowest_error_s=round(max(
                   (s for s, _ in failed), default=0.0), 1), other_errors=len(foreign),
               wrong=len(wrong), retries=db.store.retried)
        assert not wrong, wrong[:3]  # never a wrong total
        assert not foreign, foreign[:3]  # a failure is a hibase error ...
        assert all(s <= deadline_s + 30 for s, _ in failed), failed[:3]  # ... within the deadline
        assert after >= 1  # and the table answers again once its regions are back
        for sql, want in statements:
            assert sorted(db.sql(sql)) == want, sql
    finally:
        stop.set()
        db.close()
        if outage is not None:
            outage.restore()


def test_pushed_down_answers_while_regions_split_and_move(rs3, record_property):
    """tests/test_pushdown.py's property check (pushed down == this client == SQLite), 100
    statements (HIBASE_PUSHDOWN_RS_STATEMENTS) on the 3-server cluster over a table spread
    there, while one of its regions is split and the regions are then moved (Admin.move),
    both from another thread while statements run: 0 differences."""
    import happybase
    from test_pushdown import COLUMNS as PD_COLUMNS, _rows, compare, sqlite_of

    statements = int(os.environ.get("HIBASE_PUSHDOWN_RS_STATEMENTS", "100"))
    rnd = random.Random(3939)
    pushed = connect(rs3, "pm")
    client = connect(rs3, "pm", scan_pushdown="0")
    table = f"pm{RUN}_t"
    host, port = rs3.thrift_url.split("//")[1].split("?")[0].split(":")
    conn = happybase.Connection(host, int(port), timeout=60000)
    events: dict[str, object] = {}
    worker = None
    try:
        pushed.create_table("t", {"f": {}}, columns=PD_COLUMNS)
        rows = _rows(rnd, 400)
        with conn.table(table).batch() as b:  # plain writes: malformed cells too
            for key, cells in rows.items():
                b.put(key, cells)
        spread(rs3, table, [b"r0130"])
        lite = sqlite_of(rows)
        before_regions = len(rs3.region_starts(table))

        def changes() -> None:
            try:
                events["split"] = rs3.split(table, b"r0270")
                events["moved"] = rs3.spread(table)
            except Exception as exc:  # the test fails on it below
                events["error"] = f"{type(exc).__name__}: {exc}"

        def before(i: int) -> None:
            nonlocal worker
            if i == statements // 4:  # the split and the moves run beside the statements
                worker = threading.Thread(target=changes)
                worker.start()

        t0 = time.monotonic()
        pushed_n, differ = compare(pushed, client, lite, rnd, statements, before)
        if worker is not None:
            worker.join(300)
        regions = rs3.region_servers_of(table)
        record(record_property, "pushed_property", statements=statements, pushed=pushed_n,
               differences=len(differ), regions_before=before_regions, regions_after=len(regions),
               split=events.get("split"), moved=events.get("moved"),
               seconds=round(time.monotonic() - t0, 1))
        assert "error" not in events, events["error"]
        assert events.get("split") is True and len(regions) == before_regions + 1
        assert isinstance(events.get("moved"), int) and events["moved"] >= 1
        assert not differ, "\n".join(differ[:3])
        assert pushed_n >= statements // 2
    finally:
        conn.close()
        pushed.close()
        client.close()
