"""Work no index answers, run inside HBase's region servers (query/pushdown.py, ScanObserver;
issue 39): random tables and statements over unindexed columns, answered pushed down, by this
client (scan_pushdown=0) and by SQLite on the same rows. HIBASE_PUSHDOWN_STATEMENTS sets how
many statements (default 60; the issue's bar is 1,000)."""

from __future__ import annotations

import math
import os
import random
import sqlite3
import struct

import happybase
import pytest

import hibase
from hibase import codec
from servers import cluster_url, coprocessor_cluster

STATEMENTS = int(os.environ.get("HIBASE_PUSHDOWN_STATEMENTS", "60"))
COLUMNS = {"f:a": "long", "f:b": "string", "f:x": "double", "f:n": "int binary"}
WORDS = ["Oslo", "Olso", "Rome", "Paris", "", "O\u00e9", "Zed"]


def _rows(rnd: random.Random, n: int) -> dict[bytes, dict[bytes, bytes]]:
    """Rows as HBase holds them: text cells, a binary INT, NULLs (no cell), malformed cells
    and NaN (both read as NULL)."""
    out = {}
    for i in range(n):
        r: dict[bytes, bytes] = {}
        if rnd.random() < 0.85:
            r[b"f:a"] = rnd.choice([str(rnd.randint(-300, 300)).encode(), b"12x", b"+7",
                                    b"-0", str(2**52 + rnd.randint(0, 9)).encode()])
        if rnd.random() < 0.85:
            r[b"f:b"] = rnd.choice(WORDS).encode() if rnd.random() < 0.97 else b"\xff\xfe"
        if rnd.random() < 0.85:
            r[b"f:x"] = rnd.choice([b"1.5", b"nan", b"-0.0", b"0", b"2e3", b"-inf", b"bad",
                                    repr(rnd.uniform(-100, 100)).encode()])
        if rnd.random() < 0.85:
            r[b"f:n"] = struct.pack(">i", rnd.randint(-50, 50)) if rnd.random() < 0.95 \
                else b"\x01"
        if not r:
            r[b"f:z"] = b"only an undeclared cell"
        out[b"r%04d" % i] = r
    return out


def _value(col: str, raw: bytes | None):
    if raw is None:
        return None
    try:
        v = codec.decode_cell(codec.parse_type(COLUMNS[col]), raw)
    except hibase.errors.ValueTypeError:
        return None
    return None if isinstance(v, float) and math.isnan(v) else v


def _literal(rnd: random.Random, col: str) -> str:
    if col in ("f.a", "f.n"):
        return str(rnd.randint(-300, 300) if col == "f.a" else rnd.randint(-50, 50))
    if col == "f.x":
        return rnd.choice(["0", "1.5", "-10.25", "2000", "0.0"])
    return "'" + rnd.choice(WORDS) + "'"


def _atom(rnd: random.Random) -> tuple[str, str]:
    """(hibase's text, SQLite's) of one condition."""
    col = rnd.choice(["f.a", "f.b", "f.x", "f.n"])
    q = col.replace(".", "_")
    kind = rnd.random()
    if kind < 0.45:
        op = rnd.choice(["=", "<>", "<", "<=", ">", ">="])
        lit = _literal(rnd, col)
        return f"{col} {op} {lit}", f"{q} {op} {lit}"
    if kind < 0.55:
        lo, hi = sorted([_literal(rnd, col), _literal(rnd, col)],
                        key=lambda s: s if col == "f.b" else float(s))
        return f"{col} BETWEEN {lo} AND {hi}", f"{q} BETWEEN {lo} AND {hi}"
    if kind < 0.7:
        lits = ", ".join(_literal(rnd, col) for _ in range(rnd.randint(1, 3)))
        return f"{col} IN ({lits})", f"{q} IN ({lits})"
    if kind < 0.8:
        p = rnd.choice(["O", "Os", "R", "", "Z"])
        neg = rnd.random() < 0.3
        return (f"f.b {'NOT ' if neg else ''}LIKE '{p}%'",
                f"{'NOT ' if neg else ''}f_b GLOB '{p}*'")
    null = rnd.choice(["IS NULL", "IS NOT NULL"])
    return f"{col} {null}", f"{q} {null}"


def _where(rnd: random.Random, depth: int = 0) -> tuple[str, str]:
    r = rnd.random()
    if depth < 2 and r < 0.35:
        op = rnd.choice(["AND", "OR"])
        (a, sa), (b, sb) = _where(rnd, depth + 1), _where(rnd, depth + 1)
        return f"({a} {op} {b})", f"({sa} {op} {sb})"
    if depth < 2 and r < 0.45:
        a, sa = _where(rnd, depth + 1)
        return f"NOT ({a})", f"NOT ({sa})"
    return _atom(rnd)


def _statement(rnd: random.Random) -> tuple[str, str, str, list[bytes]]:
    """(hibase SQL, SQLite SQL, kind, columns of plain rows): kind 'groups' (compared as
    sets), 'ordered', 'rows'."""
    w, sw = _where(rnd) if rnd.random() < 0.8 else ("", "")
    hw, sqw = (f" WHERE {w}", f" WHERE {sw}") if w else ("", "")
    shape = rnd.random()
    if shape < 0.45:
        aggs = rnd.sample(["COUNT(*)", "COUNT(f.x)", "SUM(f.a)", "AVG(f.n)", "MIN(f.x)",
                           "MAX(f.b)", "MIN(f.a)", "MAX(f.n)", "SUM(f.n)"], rnd.randint(1, 3))
        group = rnd.choice([None, None, "f.b", "f.n"])
        items = ([group] if group else []) + aggs
        sql = f"SELECT {', '.join(items)} FROM t{hw}" + (f" GROUP BY {group}" if group else "")
        s_items = [i.replace("f.", "f_") for i in items]
        ssql = f"SELECT {', '.join(s_items)} FROM t{sqw}" + (
            f" GROUP BY {group.replace('.', '_')}" if group else "")
        return sql, ssql, "groups", []
    if shape < 0.75:
        col = rnd.choice(["f.a", "f.x", "f.b", "f.n"])
        desc = rnd.random() < 0.5
        last = rnd.random() < 0.3
        k = rnd.randint(1, 12)
        order = f"{col}{' DESC' if desc else ''}{' NULLS LAST' if last else ''}"
        sorder = (f"{col.replace('.', '_')}{' DESC' if desc else ''}"
                  f" NULLS {'LAST' if last else 'FIRST'}, rk")
        return (f"SELECT ROWKEY, {col} FROM t{hw} ORDER BY {order} LIMIT {k}",
                f"SELECT rk, {col.replace('.', '_')} FROM t{sqw} ORDER BY {sorder} LIMIT {k}",
                "ordered", [col.replace(".", ":").encode()])
    if not w:
        w, sw = _atom(rnd)
        hw, sqw = f" WHERE {w}", f" WHERE {sw}"
    if rnd.random() < 0.3:  # a CAST stays with this client: still the same answers
        return (f"SELECT ROWKEY FROM t{hw} AND CAST(f.n AS DOUBLE) > 0",
                f"SELECT rk FROM t{sqw} AND CAST(f_n AS REAL) > 0 ORDER BY rk", "rows", [])
    return f"SELECT ROWKEY, f.a FROM t{hw}", f"SELECT rk, f_a FROM t{sqw} ORDER BY rk", "rows", [b"f:a"]


def _norm(rows: list, kind: str, cols: list[bytes]) -> list:
    """Rows comparable with SQLite's: hibase's (rowkey, {column: value}) as a tuple, floats
    to 6 places (a NaN cell, shown as it is stored, is NULL in SQLite), groups in order."""
    out = []
    for r in rows:
        if len(r) == 2 and isinstance(r[1], dict):
            r = (r[0], *(r[1].get(c) for c in cols))
        out.append(tuple((None if math.isnan(v) else round(v, 6) + 0.0)
                         if isinstance(v, float) else v for v in r))
    return sorted(out, key=repr) if kind == "groups" else out


def _same(a, b) -> bool:
    """Equal answers, a NaN equal to a NaN (a cell shown as stored); -0.0 == 0.0 as in SQL."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.fixture
def hbase(request):
    return coprocessor_cluster(request)


def test_pushed_down_answers_equal_client_and_sqlite(hbase):
    """Each statement: pushed down == read by this client, exactly; == SQLite's on the same
    rows (floats to 6 places). The table has 3 regions, so partial states are merged."""
    prefix = f"pd{os.getpid()}"
    seed = int(os.environ.get("HIBASE_PUSHDOWN_SEED", "39"))
    rnd = random.Random(seed)
    pushed = hibase.connect(cluster_url(hbase, prefix))
    client = hibase.connect(cluster_url(hbase, prefix, scan_pushdown=0))
    conn = happybase.Connection("127.0.0.1", hbase.thrift_port, timeout=60000)
    try:
        pushed.create_table("t", {"f": {}}, columns=COLUMNS)
        rows = _rows(rnd, 400)
        with conn.table(f"{prefix}_t").batch() as b:  # plain writes: malformed cells too
            for key, cells in rows.items():
                b.put(key, cells)
        assert hbase.split(f"{prefix}_t", b"r0130") and hbase.split(f"{prefix}_t", b"r0270")
        lite = sqlite3.connect(":memory:")
        lite.execute("CREATE TABLE t (rk BLOB, f_a INTEGER, f_b TEXT, f_x REAL, f_n INTEGER)")
        lite.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [
            (k, *(_value(c, cells.get(c.encode())) for c in COLUMNS))
            for k, cells in rows.items()])
        assert "PUSHED DOWN" in pushed.sql("EXPLAIN SELECT COUNT(*) FROM t WHERE f.a > 0")[1][0]
        assert "3 region(s)" in pushed.sql("EXPLAIN SELECT COUNT(*) FROM t WHERE f.a > 0")[1][0]
        assert "does not answer" in "".join(
            r[0] for r in client.sql("EXPLAIN SELECT MAX(f.a) FROM t"))
        differ = []
        pushed_n = 0
        for _ in range(STATEMENTS):
            sql, ssql, kind, cols = _statement(rnd)
            plan = "\n".join(r[0] for r in pushed.sql("EXPLAIN " + sql))
            pushed_n += "PUSHED DOWN" in plan
            a = pushed.sql(sql)
            b = client.sql(sql)
            c = lite.execute(ssql).fetchall()
            if not _same(a, b) or _norm(a, kind, cols) != _norm(c, kind, cols):
                na, nc = _norm(a, kind, cols), _norm(c, kind, cols)
                i = next((i for i, (x, y) in enumerate(zip(na, nc)) if x != y),
                         min(len(na), len(nc)))
                differ.append(f"{sql}\n  pushed == client: {_same(a, b)}; from row {i}: pushed "
                              f"{na[i:i + 4]}\n  sqlite {nc[i:i + 4]}")
        assert not differ, "\n".join(differ[:3])
        assert pushed_n >= STATEMENTS // 2  # most statements did run in the regions
    finally:
        conn.close()
        pushed.close()
        client.close()


def test_a_table_hibase_did_not_create_is_pushed_down_and_an_index_still_wins(hbase):
    """A table made and written by plain happybase, recorded with existing=True: its full
    scans run in the regions (same answers as the client's); once an index answers the
    WHERE, the index is used, not the pushed-down scan."""
    prefix = f"pe{os.getpid()}"
    conn = happybase.Connection("127.0.0.1", hbase.thrift_port, timeout=60000)
    db = hibase.connect(cluster_url(hbase, prefix))
    client = hibase.connect(cluster_url(hbase, prefix, scan_pushdown=0))
    try:
        conn.create_table(f"{prefix}_ext", {"f": {}})
        with conn.table(f"{prefix}_ext").batch() as b:
            for i in range(300):
                b.put(b"k%03d" % i, {b"f:v": str(i % 17).encode(), b"f:c": b"c%d" % (i % 5)})
        db.create_table("ext", {"f": {}}, columns={"f:v": "long", "f:c": "string"},
                        existing=True)
        sql = "SELECT f.c, COUNT(*), SUM(f.v) FROM ext WHERE f.v > 3 GROUP BY f.c"
        assert "PUSHED DOWN" in "\n".join(r[0] for r in db.sql("EXPLAIN " + sql))
        assert db.sql(sql) == client.sql(sql) and len(db.sql(sql)) == 5
        rows = "SELECT ROWKEY FROM ext WHERE f.c = 'c2' AND f.v < 9"
        got = db.sql(rows)
        assert got == client.sql(rows) and len(got) == 33
        db.create_index("ext", "by_c", ["f:c"])
        plan = "\n".join(r[0] for r in db.sql("EXPLAIN " + rows))
        assert "PUSHED DOWN" not in plan and "by_c" in plan, plan
        assert db.sql(rows) == got
    finally:
        conn.close()
        db.close()
        client.close()
