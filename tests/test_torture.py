"""The standing torture suite (issue 15, item 7), part of the default run and bounded to about a
minute; HIBASE_TORTURE_SCALE=N runs N times as many trials / seconds.

- kill -9 of a writing process, and of one building an index: every acknowledged write is
  there, a batch in flight is all or nothing, every ready index is exact, `hibase check` is OK;
- readers querying every index kind while a writer moves rows: every returned row satisfies
  the condition against the data returned (both backends);
- SQL and Table API fuzzing (hypothesis): every failure is a HibaseError with a one-line
  message;
- corruption injection: random bytes flipped in random store files; every read is right or
  raises StoreCorrupted, never silently short or wrong;
- Redis cache nodes and ZooKeeper killed and restarted mid-workload: answers stay exact.

Each test records its counts with record_property("torture", ...); conftest.py prints them in
the terminal summary, with or without -s."""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import hibase
from hibase import errors
from hibase.check import check_store
from hibase.query.evaluate import matches
from hibase.query.normalize import typed
from hibase.query.parse import parse_condition

pytestmark = pytest.mark.torture

SCALE = float(os.environ.get("HIBASE_TORTURE_SCALE", "1"))
PY = sys.executable
COLUMNS = {"f:a": "int", "f:b": "string", "f:c": "double"}


def scaled(n: float) -> int:
    return max(1, int(round(n * SCALE)))


def report(record_property, **counts) -> None:
    record_property("torture", ", ".join(f"{k}={v}" for k, v in counts.items()))


# -- kill -9 ---------------------------------------------------------------------------------

WRITER = """
import json, random, sys, hibase
db = hibase.connect(sys.argv[1])
t = db.table("k")
rng = random.Random(int(sys.argv[2]))
while True:
    ops = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        key = "k%03d" % rng.randrange(300)
        if rng.random() < 0.15:
            ops.append([key, None])
        else:
            ops.append([key, {"f:a": str(rng.randrange(20)), "f:b": rng.choice(["a", "ab", "zz"])}])
    print("intent " + json.dumps(ops), flush=True)
    with t.batch() as b:
        for key, data in ops:
            if data is None:
                b.delete(key.encode())
            else:
                b.put(key.encode(), {c.encode(): v.encode() for c, v in data.items()})
    print("ack", flush=True)
"""

BUILDER = """
import sys, hibase
db = hibase.connect(sys.argv[1])
db.create_index("k", "by_b", ["f:b"], covering=["f:a"], local=sys.argv[2] == "local",
                processes=1, progress=lambda done, total: print("progress", done, total,
                                                                flush=True))
print("built", flush=True)
"""


def _store_with_indexes(path: str, rows: int = 0) -> None:
    with hibase.connect(path) as db:
        db.create_table("k", {"f": {"max_versions": 1}}, columns=COLUMNS, split_size=64 * 1024)
        db.create_index("k", "by_a", ["f:a"])
        db.create_index("k", "by_a_local", ["f:a"], local=True)
        db.create_index("k", "by_b_words", ["f:b"], kind="text")  # full text (issue 43)
        t = db.table("k")
        for start in range(0, rows, 250):  # batches, so regions split as they fill
            with t.batch() as b:
                for i in range(start, min(start + 250, rows)):
                    b.put(b"r%05d" % i, {b"f:a": b"%d" % (i % 40), b"f:b": b"v%d" % (i % 90)})


def _run_and_kill(code: str, args: list[str], after: str, delay: float
                  ) -> tuple[list[str], int]:
    """Start `code`, wait for a line starting with `after`, kill -9 it `delay` s later; its
    stdout lines (all of them, also those printed just before it died) and return code (0
    when it ended before printing `after`)."""
    proc = subprocess.Popen([PY, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout))
    try:
        while True:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith(after) or not line:
                break
        if not line:
            proc.wait(30)
            err = proc.stderr.read()
            assert proc.returncode == 0, err
            return [x.rstrip("\n") for x in lines], 0
        reader.start()
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if reader.is_alive() or reader.ident:
            reader.join(30)
        proc.stderr.close()
    return [line.rstrip("\n") for line in lines], proc.returncode


def _state(db) -> dict[str, dict]:
    return {k.decode(): {c.decode(): v.decode() for c, v in d.items()}
            for k, d in db.table("k").scan()}


def test_kill_9_during_writes(tmp_path, record_property):
    path = str(tmp_path / "store")
    _store_with_indexes(path)
    expected: dict[str, dict] = {}
    trials = scaled(4)
    acked = in_flight_applied = 0
    for trial in range(trials):
        lines, rc = _run_and_kill(WRITER, [path, str(trial)], "intent",
                                  random.Random(trial).uniform(0.3, 1.2))
        assert rc == -signal.SIGKILL
        pending = None
        for line in lines:
            if line.startswith("intent "):
                pending = json.loads(line[7:])
            elif line == "ack" and pending is not None:
                for key, data in pending:
                    if data is None:
                        expected.pop(key, None)
                    else:
                        expected.setdefault(key, {}).update(data)
                acked += 1
                pending = None
        with hibase.connect(path) as db:
            got = _state(db)
            if pending is not None:  # killed mid-batch: all of it or none of it
                after = {k: dict(v) for k, v in expected.items()}
                for key, data in pending:
                    if data is None:
                        after.pop(key, None)
                    else:
                        after.setdefault(key, {}).update(data)
                assert got in (expected, after), f"trial {trial}: partial batch"
                if got == after and after != expected:
                    in_flight_applied += 1
                expected = after if got == after else expected
            else:
                assert got == expected, f"trial {trial}"
            for name in ("by_a", "by_a_local", "by_b_words"):
                r = db.verify_index("k", name)
                assert r["ok"], r
        assert check_store(path)["ok"]
    assert acked > 50
    report(record_property, trials=trials, acknowledged_batches=acked,
           in_flight_batches_applied=in_flight_applied, lost=0, partial=0, inexact_indexes=0)


@pytest.mark.parametrize("local", [False, True], ids=["global", "local"])
def test_kill_9_during_index_build(tmp_path, record_property, local):
    base = str(tmp_path / "base")
    _store_with_indexes(base, rows=12000)
    trials = scaled(3)
    outcomes: dict[str, int] = {}
    for trial in range(trials):
        path = str(tmp_path / f"t{trial}")
        shutil.copytree(base, path)
        # killed as region 1, 3, 5... (of 16) is built: a different point of the build each trial
        lines, _ = _run_and_kill(BUILDER, [path, "local" if local else "global"],
                                 f"progress {1 + (2 * trial) % 15} ", 0.0)
        if not any(line.startswith("built") for line in lines):
            outcomes["killed_mid_build"] = outcomes.get("killed_mid_build", 0) + 1
        with hibase.connect(path) as db:
            specs = {s["name"]: s for s in db.indexes("k")}
            state = specs["by_b"]["state"] if "by_b" in specs else "absent"
            outcomes[f"found_{state}"] = outcomes.get(f"found_{state}", 0) + 1
            if state != "ready":  # an interrupted build is finished by building again
                db.build_index("k", "by_b")
            r = db.verify_index("k", "by_b")
            assert r["ok"] and r["entries"] == 12000, r
            rows = db.table("k").where("f.b = 'v7'")
            assert sorted(k for k, _ in rows) == [b"r%05d" % i for i in range(7, 12000, 90)]
        assert check_store(path)["ok"]
    assert outcomes.get("killed_mid_build", 0) > 0
    report(record_property, trials=trials, **outcomes, inexact_after_rebuild=0)


# -- power cut: the WAL's unsynced tail lost -------------------------------------------------

POWER_WRITER = """
import glob, os, sys, threading, hibase
path, level, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = hibase.connect(path, durability=level)
t = db.table("p")
out = threading.Lock()

def log_size():
    logs = sorted(glob.glob(os.path.join(path, "*.log")))
    return os.path.basename(logs[-1]), os.path.getsize(logs[-1])

def say(*words):
    with out:
        print(*words, flush=True)

if level == "fsync":  # each fsync's coverage: every byte in the log when it began is on disk
    lock = db.store._lock
    real = lock._sync_wal
    def sync_wal():
        name, size = log_size()
        real()
        say("synced", name, size)
    lock._sync_wal = sync_wal

def write(worker):
    for n in range(worker, 10**9, threads):
        rows = 1 + n % 3
        say("intent", n, rows)
        with t.batch() as b:
            for j in range(rows):
                b.put(b"b%06d-%d" % (n, j), {b"f:a": b"%d" % (n % 50), b"f:b": b"x" * (n % 700)})
        if level == "process":  # one writer: the log ends with this batch's record
            say("ack", n, *log_size())
        else:
            say("ack", n)

say("start", *log_size())
for w in range(threads):
    threading.Thread(target=write, args=(w,)).start()
"""

BLOCK = 32768


def _power_cut_trial(path: str, level: str, rng: random.Random) -> dict:
    """One writer (two threads for "fsync": group commit) killed -9 mid-stream, then its WAL cut
    as a power cut would leave it; returns what the test checks."""
    threads = 2 if level == "fsync" else 1
    proc = subprocess.Popen([PY, "-c", textwrap.dedent(POWER_WRITER), path, level, str(threads)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout))  # the pipe never fills
    try:
        first = proc.stdout.readline()
        assert first.startswith("start "), proc.stderr.read()
        reader.start()
        time.sleep(rng.uniform(0.3, 1.0))
        os.kill(proc.pid, signal.SIGKILL)  # mid-stream: the writer is still writing
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if reader.ident:
            reader.join(30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    _, log, start = first.split()
    intents: dict[int, int] = {}
    acked: list[int] = []
    ends: dict[int, int] = {}  # "process": batch -> its record's end in the log
    synced = int(start)  # "fsync": the log up to here is on disk (what the open recovered)
    for line in lines:
        words = line.split()
        if not line.endswith("\n") or not words:
            continue  # a line cut by the kill: not said
        if words[0] == "intent":
            intents[int(words[1])] = int(words[2])
        elif words[0] == "ack":
            acked.append(int(words[1]))
            if level == "process":
                assert words[2] == log, "the log rolled over mid-trial: make the trial shorter"
                ends[int(words[1])] = int(words[3])
        elif words[0] == "synced":
            assert words[1] == log
            synced = max(synced, int(words[2]))
    wal = os.path.join(path, log)
    size = os.path.getsize(wal)
    # the power cut: the OS's unwritten buffers of the log are lost. "process" never fsyncs, so
    # any tail may go; "fsync" can lose only what no completed fsync covered
    cut = rng.randint(int(start), size) if level == "process" else rng.randint(synced, size)
    with open(wal, "r+b") as f:
        f.truncate(cut)
    before = check_store(path)
    with hibase.connect(path) as db:
        t = db.table("p")
        rows: dict[int, set[int]] = {}
        for key, _ in t.scan():
            n, j = key[1:].split(b"-")
            rows.setdefault(int(n), set()).add(int(j))
        index_ok = db.verify_index("p", "by_a")["ok"]
    after = check_store(path)
    return {"intents": intents, "acked": acked, "ends": ends, "start": int(start),
            "cut": cut, "size": size, "synced": synced, "rows": rows, "wal": wal,
            "before": before, "after": after, "index_ok": index_ok}


@pytest.mark.parametrize("level", ["process", "fsync"])
def test_power_cut_loses_only_what_the_level_allows(tmp_path, record_property, level):
    """kill -9, then the write-ahead log's tail cut as a power cut leaves it. fsync: no
    acknowledged write is lost. process: what survives is exactly the batches whose records
    end before the cut (a prefix of the acknowledged writes: no partial batch, no write after
    a missing one), and `hibase check` reports the torn tail before the reopen."""
    rng = random.Random(f"power-{level}")
    trials = scaled(3)
    counts = {"acknowledged": 0, "lost_acknowledged": 0, "partial_batches": 0,
              "torn_tail_reported": 0, "cut_on_a_record_boundary": 0, "bytes_cut": 0}
    for trial in range(trials):
        path = str(tmp_path / f"{level}{trial}")
        with hibase.connect(path) as db:
            db.create_table("p", {"f": {"max_versions": 1}}, columns={"f:a": "int"})
            db.create_index("p", "by_a", ["f:a"])
        r = _power_cut_trial(path, level, rng)
        acked, rows, intents = r["acked"], r["rows"], r["intents"]
        assert len(acked) > 20, r["acked"]
        counts["acknowledged"] += len(acked)
        counts["bytes_cut"] += r["size"] - r["cut"]
        for n, parts in rows.items():  # every batch whole or absent
            assert parts == set(range(intents[n])), (trial, n, parts)
        assert r["index_ok"] and r["after"]["ok"], (trial, r["after"]["problems"])
        if level == "fsync":
            lost = [n for n in acked if n not in rows]
            assert not lost, (trial, lost, r["cut"], r["synced"], r["size"])
            assert set(rows) <= set(intents)
            if not r["before"]["ok"]:  # the cut fell inside an unacknowledged write's record
                assert [p["file"] for p in r["before"]["problems"]] == [r["wal"]]
                counts["torn_tail_reported"] += 1
        else:
            ends = r["ends"]
            # exactly the batches whose records end at or before the cut survive: a prefix
            survive = sorted(n for n in acked if ends[n] <= r["cut"])
            assert survive == list(range(len(survive)))
            expected = set(survive)
            in_flight = max(acked, default=-1) + 1
            if in_flight in rows:  # the batch the kill interrupted had reached the log whole
                expected.add(in_flight)
                assert r["cut"] > ends.get(max(acked), r["start"]), trial
            assert set(rows) == expected, (trial, sorted(set(rows) ^ expected))
            counts["lost_acknowledged"] += len(acked) - len(survive)
            boundary = r["cut"] in {r["start"], r["size"], *ends.values()} or any(
                e < r["cut"] < e + BLOCK - e % BLOCK and BLOCK - e % BLOCK < 7
                for e in (r["start"], *ends.values()))
            problems = r["before"]["problems"]
            if boundary:
                counts["cut_on_a_record_boundary"] += 1
                assert r["before"]["ok"], problems
            else:
                assert [p["file"] for p in problems] == [r["wal"]], problems
                torn = max(e for e in (r["start"], *ends.values()) if e <= r["cut"])
                if BLOCK - torn % BLOCK < 7:  # the next record starts in the next block
                    torn += BLOCK - torn % BLOCK
                assert f"at byte {torn} of {r['cut']}" in problems[0]["problem"], problems
                counts["torn_tail_reported"] += 1
    report(record_property, level=level, trials=trials, **counts)


# -- concurrent readers re-checking every row --------------------------------------------------

CONDITIONS = ["f.a = 3", "f.a > 1", "f.b LIKE 'a%'", "f.c > 1", "f.a IN (1, 3)",
              "f.b = 'ab' AND f.c > 0", "f.c BETWEEN 0 AND 2 OR f.a = 2", "f.b = 'ab'",
              "NOT f.a = 2", "f.a >= 2 AND f.b < 'b'",
              "f.a >= 3 AND f.b = 'ab'", "f.a = 4 AND f.b > 'a'",  # these two: part_b
              "CONTAINS(f.b, 'ab')", "CONTAINS(f.b, 'a* OR zz') AND f.a > 1"]  # by_b_words


def _cell(rng, col: bytes) -> bytes:
    if col == b"f:a":
        return str(rng.randint(0, 4)).encode()
    if col == b"f:b":
        return rng.choice([b"a", b"ab", b"b", b"zz", b"abc"])
    return rng.choice([b"-1", b"0.5", b"1.5", b"2", b"3", b"nan"])


def test_readers_recheck_every_row_under_a_writer(db, record_property):
    db.create_table("c", {"f": {"max_versions": 1}}, columns=COLUMNS)
    db.create_index("c", "by_a", ["f:a"])
    db.create_index("c", "by_b", ["f:b"], covering=["f:c"])
    db.create_index("c", "by_c", ["f:c"], local=True)
    db.create_index("c", "by_ab", ["f:a", "f:b"])
    db.create_index("c", "by_b_words", ["f:b"], kind="text")
    db.create_index("c", "part_b", ["f:b"], covering=["f:c"], where="f.a >= 2")  # issue 43
    t = db.table("c")
    rng = random.Random(5)
    keys = [b"k%03d" % i for i in range(150)]
    with t.batch() as b:
        for k in keys:
            b.put(k, {c: _cell(rng, c) for c in (b"f:a", b"f:b", b"f:c")})
    types = db.store.schema("c").columns
    trees = {c: typed(parse_condition(c), types) for c in CONDITIONS}
    stop = threading.Event()
    bad: list = []
    counts = {"queries": 0, "rows": 0, "writes": 0}
    failures: list = []

    def writer():
        w = random.Random(9)
        try:
            while not stop.is_set():
                k = w.choice(keys)
                if w.random() < 0.1:
                    t.delete(k)
                else:
                    cols = w.sample([b"f:a", b"f:b", b"f:c"], w.randint(1, 3))
                    t.put(k, {c: _cell(w, c) for c in cols})
                counts["writes"] += 1
        except Exception as exc:  # pragma: no cover - reported below
            failures.append(repr(exc))

    def reader(seed):
        q = random.Random(seed)
        try:
            while not stop.is_set():
                cond = q.choice(CONDITIONS)
                for key, data in t.where(cond):
                    counts["rows"] += 1
                    if not matches(trees[cond], key, data, types):
                        bad.append((cond, key, data))
                counts["queries"] += 1
        except Exception as exc:  # pragma: no cover - reported below
            failures.append(repr(exc))

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(s,)) for s in range(3)]
    for th in threads:
        th.start()
    time.sleep(2.0 * SCALE)
    stop.set()
    for th in threads:
        th.join()
    assert failures == [] and bad == []
    assert counts["rows"] > 0 and counts["writes"] > 0
    for name in ("by_a", "by_b", "by_c", "by_ab", "part_b", "by_b_words"):
        assert db.verify_index("c", name)["ok"]
    report(record_property, **counts, wrong_rows=len(bad))


# -- fuzzing -----------------------------------------------------------------------------------

_ATOMS = ["f.a", "f.b", "f.c", "f.zz", "ROWKEY", "g.x", "f.\ud800", "1", "-2", "1e", "1e5",
          "2.5", ".5e-3", "'a'", "'ab%'", "'\ud83d\ude00'", "NULL", "TRUE", "''", "'unterminated",
          "0x1F", "1_0", "999999999999999999999999", "nan"]
_OPS = ["=", "<>", "<", "<=", ">", ">=", "LIKE", "IN", "BETWEEN", "IS", "IS NOT", "AND", "OR",
        "NOT", "(", ")", ",", ";", "*", "+", "-", "%", "COUNT(", "JOIN", "GROUP BY", "ORDER BY"]


# select lists and clauses after WHERE: aggregates (right and wrong argument counts), CAST,
# GROUP BY, HAVING, ORDER BY, OFFSET
_ITEMS = ["*", "f.a", "f.a, ROWKEY", "COUNT(*)", "COUNT()", "COUNT(f.a, f.b)", "SUM(f.a)",
          "SUM()", "MIN(f.b, f.c)", "MAX(*)", "AVG(DISTINCT f.c)", "COUNT(DISTINCT f.a, f.b)",
          "f.a, COUNT(*)", "f.b, SUM(f.c), MAX(f.a)", "DISTINCT f.b", "CAST(f.a AS INTEGER)",
          "SUM(g.x)", "MAX(g.x)", "MIN(CAST(g.x AS DOUBLE))", "CAST(f.a AS DECIMAL)",
          "COUNT(*), AVG(f.c)", "f.zz, COUNT(f.zz)"]
_TAILS = [" GROUP BY f.a", " GROUP BY f.b, f.a", " GROUP BY g.x", " GROUP BY", " GROUP BY 1",
          " HAVING COUNT(*) > 1", " HAVING COUNT() > 1", " HAVING SUM(f.a) >= 'x'",
          " HAVING f.a = 2", " HAVING MAX(f.c, f.a) < 3", " ORDER BY f.a", " ORDER BY f.c DESC",
          " ORDER BY g.x", " ORDER BY COUNT(*) DESC NULLS LAST", " ORDER BY 2", " ORDER BY",
          " ORDER BY CAST(g.x AS BIGINT)", " LIMIT 0", " OFFSET 3", " OFFSET -1", " LIMIT 2"]


@st.composite
def _sql(draw):
    """Mostly well-formed conditions, mutated: tokens dropped, doubled, nested, swapped."""
    def cond(depth):
        kind = draw(st.integers(0, 6 if depth < 4 else 2))
        col, lit = draw(st.sampled_from(_ATOMS[:7])), draw(st.sampled_from(_ATOMS[7:]))
        if kind == 0:
            return f"{col} {draw(st.sampled_from(_OPS[:6]))} {lit}"
        if kind == 1:
            values = draw(st.lists(st.sampled_from(_ATOMS[7:]), max_size=4))
            return f"{col} IN ({', '.join(values)})"
        if kind == 2:
            return f"{col} BETWEEN {lit} AND {draw(st.sampled_from(_ATOMS[7:]))}"
        if kind == 3:
            return f"NOT {cond(depth + 1)}"
        if kind == 4:
            return f"({cond(depth + 1)})"
        return f"{cond(depth + 1)} {draw(st.sampled_from(['AND', 'OR']))} {cond(depth + 1)}"
    where = f" WHERE {cond(0)}" if draw(st.integers(0, 4)) else ""
    tail = "".join(draw(st.lists(st.sampled_from(_TAILS), max_size=3)))
    tokens = f"SELECT {draw(st.sampled_from(_ITEMS))} FROM " \
             f"{draw(st.sampled_from(['t', 'nosuch', 't2']))}{where}{tail}".split(" ")
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(tokens)))
        action = draw(st.integers(0, 3))
        if action == 0 and tokens:
            tokens.pop(min(i, len(tokens) - 1))
        elif action == 1:
            tokens.insert(i, draw(st.sampled_from(_OPS + _ATOMS)))
        elif action == 2:
            tokens.insert(i, "(" * draw(st.integers(1, 60)))
        else:
            tokens.insert(i, " OR ".join(["f.a = 1"] * draw(st.integers(1, 700))))
    sql = " ".join(tokens)
    if draw(st.booleans()):
        sql += draw(st.sampled_from([" LIMIT 5", " LIMIT -1", " LIMIT x", ";", "; DROP t"]))
    return ("EXPLAIN " if draw(st.integers(0, 9)) == 0 else "") + sql


@pytest.fixture(scope="module", params=["embedded", "thrift"])
def fuzz_db(request, tmp_path_factory):
    """A small indexed table on each backend (thrift: through hibase's Thrift1 gateway)."""
    from backends import Backend
    backend = Backend(request.param, tmp_path_factory.mktemp("fuzz") / "store")
    db = backend.connect(cache="memory")
    db.create_table("t", {"f": {"max_versions": 2}, "g": {}}, columns=COLUMNS)
    db.create_index("t", "by_a", ["f:a"])
    db.create_index("t", "by_bc", ["f:b", "f:c"], covering=["f:a"])
    db.create_index("t", "by_c", ["f:c"], local=True)
    t = db.table("t")
    for i in range(200):
        t.put(b"r%03d" % i, {b"f:a": b"%d" % (i % 7), b"f:b": b"ab"[: i % 3],
                              b"f:c": b"%d.5" % (i % 5), b"g:x": b"x"})
    yield db
    backend.close()


def test_sql_fuzzing_every_failure_is_a_hibase_error(fuzz_db, record_property):
    outcomes: dict[str, int] = {}

    @settings(max_examples=scaled(400), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_sql())
    def run(sql):
        try:
            fuzz_db.sql(sql)
            kind = "ok"
        except errors.HibaseError as exc:
            assert "\n" not in str(exc), (sql, str(exc))
            kind = type(exc).__name__
        outcomes[kind] = outcomes.get(kind, 0) + 1

    run()
    report(record_property, statements=sum(outcomes.values()), escaped=0, **outcomes)


_JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=4),
    st.binary(max_size=6), st.sampled_from([b"f:a", b"f:b", b"f:c", b"g:x", b"h:q", b"f", b"f:",
                                            "f:a", "\ud800", b"x" * 40000, b"1", b"2.5", b"nan"]),
    st.lists(st.sampled_from([b"f:a", b"g", b"h:q", 3, None]), max_size=3),
    st.dictionaries(st.sampled_from([b"f:a", b"f:c", b"g:x", b"h:q", "f:a", 7]),
                    st.sampled_from([b"1", b"x", b"2.5", b"\xff", 3, None]), max_size=3))
_KEY = st.one_of(st.sampled_from([b"r001", b"r002", b"new", b""]), _JUNK)

_CALLS = {
    "put": lambda t, db, d: t.put(d(_KEY), d(_JUNK), timestamp=d(st.one_of(st.none(), _JUNK))),
    "row": lambda t, db, d: t.row(d(_KEY), columns=d(st.one_of(st.none(), _JUNK))),
    "rows": lambda t, db, d: t.rows(d(st.one_of(st.lists(_KEY, max_size=3), _JUNK))),
    "cells": lambda t, db, d: t.cells(d(_KEY), d(_JUNK), versions=d(_JUNK)),
    "scan": lambda t, db, d: list(t.scan(
        row_start=d(st.one_of(st.none(), _KEY)), limit=d(st.one_of(st.none(), _JUNK)),
        columns=d(st.one_of(st.none(), _JUNK)), batch_size=d(st.sampled_from([1, 1000, 0, "x"])),
        filter=d(st.one_of(st.none(), _JUNK, st.sampled_from(
            ["PrefixFilter('r0')", "PageFilter(", "KeyOnlyFilter() AND", "\ud800",
             "SingleColumnValueFilter('f', 'a', =, 'binary:1')", "PageFilter(-1)"]))))),
    "delete": lambda t, db, d: t.delete(d(_KEY), columns=d(st.one_of(st.none(), _JUNK))),
    "counter": lambda t, db, d: t.counter_inc(d(_KEY), d(_JUNK), value=d(_JUNK)),
    "where": lambda t, db, d: list(t.where(d(st.one_of(st.sampled_from(
        ["f.a = 1", "f.c > 1", "f.b LIKE 'a%'", "f.a = '\ud800'"]), _JUNK)),
        columns=d(st.one_of(st.none(), _JUNK)), limit=d(st.one_of(st.none(), _JUNK)))),
    "batch": lambda t, db, d: t.batch(batch_size=d(st.one_of(st.none(), _JUNK)),
                                      transaction=d(st.booleans())).put(d(_KEY), d(_JUNK)),
    "create_table": lambda t, db, d: db.create_table(d(st.one_of(st.sampled_from(
        ["u1", "", "a/b", "x" * 300]), _JUNK)), d(st.one_of(st.just({"f": {}}), _JUNK))),
    "create_index": lambda t, db, d: db.create_index("t", d(st.one_of(st.just("i2"), _JUNK)),
                                                     d(_JUNK), covering=d(_JUNK)),
    "table_ops": lambda t, db, d: d(st.sampled_from([
        lambda: db.table(d(_JUNK)), lambda: db.split("t", d(_KEY)),
        lambda: db.verify_index("t", d(_JUNK)), lambda: db.drop_index("t", d(_JUNK)),
        lambda: db.is_table_enabled(d(_JUNK)), lambda: db.indexes(d(_JUNK))]))(),
}


def test_api_fuzzing_every_failure_is_a_hibase_error(fuzz_db, record_property):
    t = fuzz_db.table("t")
    outcomes: dict[str, int] = {}

    @settings(max_examples=scaled(1500), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(sorted(_CALLS)), st.data())
    def run(name, data):
        try:
            _CALLS[name](t, fuzz_db, data.draw)
            kind = "ok"
        except errors.HibaseError as exc:
            assert "\n" not in str(exc), (name, str(exc))
            kind = "refused"
        outcomes[kind] = outcomes.get(kind, 0) + 1

    run()
    for name in ("by_a", "by_bc", "by_c"):  # whatever went through kept the indexes exact
        assert fuzz_db.verify_index("t", name)["ok"]
    report(record_property, calls=sum(outcomes.values()), escaped=0, **outcomes)


# -- corruption injection ------------------------------------------------------------------------

def _read_everything(path: str, want: dict) -> str:
    """'exact' when every table row, index answer and row() is right; 'detected' when a read
    raised StoreCorrupted; 'silent' otherwise."""
    try:
        with hibase.connect(path, read_only=True) as db:
            t = db.table("k")
            got = {k: d for k, d in t.scan()}
            by_index = {a: sorted(k for k, _ in t.where(f"f.a = {a}")) for a in range(40)}
            by_local = {a: sorted(k for k, _ in db.sql(
                f"SELECT * FROM k WHERE f.a = {a} AND f.a >= 0")) for a in range(0, 40, 7)}
            rows = {k: t.row(k) for k in list(want)[::37]}
    except errors.StoreCorrupted:
        return "detected"
    if got != want or any(rows[k] != want[k] for k in rows):
        return "silent"
    for a, keys in by_index.items():
        if keys != sorted(k for k, d in want.items() if d[b"f:a"] == b"%d" % a):
            return "silent"
    for a, keys in by_local.items():
        if keys != by_index[a]:
            return "silent"
    return "exact"


def test_corruption_injection_is_never_silent(tmp_path, record_property):
    base = str(tmp_path / "base")
    _store_with_indexes(base, rows=4000)
    with hibase.connect(base) as db:
        db.store.flush()
        for name in db.store.kv_tables():
            db.store._kv[name][0].flush()
        want = dict(db.table("k").scan())
    rng = random.Random(11)
    outcomes = {"exact": 0, "detected": 0, "silent": 0, "check_flagged": 0}
    trials = scaled(16)
    for trial in range(trials):
        path = str(tmp_path / f"c{trial}")
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(base, path)
        files = sorted(glob.glob(os.path.join(path, "*.sst")))
        target = rng.choice(files)
        size = os.path.getsize(target)
        at, n = rng.randrange(size), rng.choice([1, 4, 16])
        with open(target, "r+b") as f:
            f.seek(at)
            data = f.read(n)
            f.seek(at)
            f.write(bytes(b ^ 0xFF for b in data))
        outcome = _read_everything(path, want)
        outcomes[outcome] += 1
        assert outcome != "silent", (trial, target, at, n)
        if not check_store(path)["ok"]:
            outcomes["check_flagged"] += 1
        elif outcome == "detected":
            pytest.fail(f"reads met corruption in {target} but hibase check passed")
    assert outcomes["detected"] > 0
    report(record_property, trials=trials, **outcomes)


# -- Redis and ZooKeeper killed mid-workload -------------------------------------------------

def test_cache_servers_killed_mid_workload(tmp_path, record_property):
    from servers import start_redis, start_zookeeper
    import redis as redis_client
    from hibase.cache.node import CacheNodeService
    zk = start_zookeeper()
    nodes = [start_redis(), start_redis()]
    services: list = []
    try:
        spec = f"zk://{zk.address}/torture"
        for n in nodes:
            redis_client.Redis.from_url(n.url).flushall()
            services.append(CacheNodeService(n.url, spec, poll=0.01,
                                             session_timeout=2.0).start())
        db = hibase.connect(str(tmp_path / "store"), cache=spec)
        db.create_table("k", {"f": {"max_versions": 1}}, columns=COLUMNS)
        db.create_index("k", "by_a", ["f:a"])
        t = db.table("k")
        truth: dict[bytes, bytes] = {}
        rng = random.Random(3)
        for i in range(300):
            truth[b"r%03d" % i] = b"%d" % rng.randrange(15)
            t.put(b"r%03d" % i, {b"f:a": truth[b"r%03d" % i]})
        counts = {"queries": 0, "writes": 0, "wrong": 0, "kills": 0}
        deadline = time.monotonic() + 3.0 * SCALE
        events = [(0.2, lambda: nodes[0].kill()), (0.5, lambda: nodes[0].start()),
                  (0.6, lambda: zk.kill()), (0.8, lambda: zk.start()),
                  (0.9, lambda: nodes[1].kill())]
        start = time.monotonic()
        span = deadline - start
        while time.monotonic() < deadline:
            while events and time.monotonic() - start >= events[0][0] * span:
                events.pop(0)[1]()
                counts["kills"] += 1
            key = b"r%03d" % rng.randrange(300)
            truth[key] = b"%d" % rng.randrange(15)
            t.put(key, {b"f:a": truth[key]})
            counts["writes"] += 1
            v = b"%d" % rng.randrange(15)
            got = sorted(k for k, _ in t.where(f"f.a = {int(v)}"))
            counts["queries"] += 1
            if got != sorted(k for k, x in truth.items() if x == v):
                counts["wrong"] += 1
        db.close()
        assert counts["wrong"] == 0 and counts["queries"] > 50
        report(record_property, **counts)
    finally:
        for svc in services:
            svc.stop()
        for n in nodes:
            n.close()
        zk.close()


# -- kill -9 of HBase during writes kept by hibase's coprocessor --------------------------------

@pytest.mark.own_cluster
def test_kill_9_of_hbase_during_indexed_writes(tmp_path, record_property):
    """[hbase] A real HBase (its own, coprocessor loaded) keeps 3 indexes (global covered,
    composite, local) while a client writes and rewrites rows; the HBase JVM (master, region
    server, ZooKeeper) is killed with SIGKILL mid-stream and started again (its WAL replayed).
    Every acknowledged row is there with its value (a row whose write was in flight holds the
    old or the new value), every query equals the full scan, and verify_index reports 0
    differences without a repair: what the in-flight batch left (unverified entries, pending
    counts; readers resolve those meanwhile: the queries above run first) is recovered by the
    reopened regions (IndexObserver.recover, in the background after the WAL replay)."""
    from hibase.cluster import HBaseCluster
    from servers import required

    cluster = HBaseCluster(tmp_path / "hbase", redis_nodes=0, heap_mb=1024, phoenix=False,
                           coprocessor=True)
    with required():
        cluster.start(detach=False, progress=False)
    try:
        url = (f"{cluster.thrift_url}&timeout=30000&retries=0&catalog_lease_ms=0"
               f"&region_check_ms=0")
        db = hibase.connect(url)
        db.create_table("t", {"f": {}}, columns={"f:a": "string", "f:n": "long",
                                                  "f:c": "string"})
        db.create_index("t", "by_a", ["f:a"], covering=["f:c"])
        db.create_index("t", "by_an", ["f:a", "f:n"])
        db.create_index("t", "loc_n", ["f:n"], local=True)
        assert all(s.server for s in db.indexer.specs("t"))
        t = db.table("t")
        acked: dict[bytes, dict] = {}
        in_flight: dict[bytes, dict] = {}
        stop = threading.Event()
        rnd = random.Random(26)

        def write() -> None:
            i = 0
            while not stop.is_set():
                batch = {}
                for _ in range(10):
                    row = b"r%04d" % rnd.randrange(2000)
                    batch[row] = {b"f:a": b"v%d" % rnd.randrange(40),
                                  b"f:n": b"%d" % rnd.randrange(-50, 50), b"f:c": b"c%d" % i}
                    i += 1
                in_flight.clear()
                in_flight.update(batch)
                try:
                    with t.batch() as b:
                        for row, data in batch.items():
                            b.put(row, data)
                except Exception:
                    return
                acked.update(batch)
                in_flight.clear()

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(4 * SCALE)
        pid = cluster._pids()["master"]
        os.kill(pid, signal.SIGKILL)
        writer.join(120)
        stop.set()
        assert not writer.is_alive()
        db.close()
        cluster.stop(timeout=5)
        t0 = time.monotonic()
        cluster.start(detach=False, progress=False)
        restart_s = time.monotonic() - t0
        db = hibase.connect(url.replace("retries=0", "retries=3"))
        t = db.table("t")
        stored = dict(t.scan())
        missing = [r for r, d in acked.items()
                   if stored.get(r) != d and (r not in in_flight or stored.get(r) not in (
                       in_flight[r], None))]
        assert not missing, missing[:5]
        wrong = 0
        for where in [f"f.a = 'v{v}'" for v in range(40)] + \
                [f"f.n = {n}" for n in range(-50, 50, 7)] + \
                ["f.a = 'v3' AND f.n > 0", "f.n IS NULL", "f.a IS NULL"]:
            wrong += sorted(t.where(where)) != sorted(t.where(where, full_scan=True))
        assert wrong == 0
        names = ("by_a", "by_an", "loc_n")

        def differences() -> int:
            return sum(r["missing"] + r["extra"] + r["wrong_covered"] + r["bad_counts"]
                       for r in (db.verify_index("t", n) for n in names))
        first = left = differences()
        t0 = time.monotonic()
        while left and time.monotonic() - t0 < 180:  # the reopened regions' recovery
            time.sleep(5)
            left = differences()
        assert left == 0, (first, left)
        report(record_property, acked=len(acked), in_flight=len(in_flight),
               restart_s=round(restart_s, 1), differences_first=first,
               recovered_after_s=round(time.monotonic() - t0, 1))
        db.close()
    finally:
        cluster.stop(timeout=5)
