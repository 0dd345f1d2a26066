"""Work no index answers, run inside HBase's region servers (query/pushdown.py, ScanObserver;
issue 39): random tables and statements over unindexed columns, answered pushed down, by this
client (scan_pushdown=0) and by SQLite on the same rows. HIBASE_PUSHDOWN_STATEMENTS sets how
many statements (default 60; the issue's bar is 1,000)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import random
import sqlite3
import struct
import warnings

import happybase
import pytest

import hibase
from hibase import codec
from servers import cluster_url, coprocessor_cluster

STATEMENTS = int(os.environ.get("HIBASE_PUSHDOWN_STATEMENTS", "60"))
COLUMNS = {"f:a": "long", "f:b": "string", "f:x": "double", "f:n": "int binary",
           "f:d": "decimal(10,2)", "f:t": "date", "f:ts": "timestamp", "f:tm": "time",
           "f:o": "boolean", "f:fl": "float"}
SQLITE_TYPES = {"f:a": "INTEGER", "f:b": "TEXT", "f:x": "REAL", "f:n": "INTEGER",
                "f:d": "REAL", "f:t": "TEXT", "f:ts": "TEXT", "f:tm": "TEXT", "f:o": "INTEGER",
                "f:fl": "REAL"}
WORDS = ["Oslo", "Olso", "Rome", "Paris", "", "O\u00e9", "Zed"]
DATES = [dt.date(2024, 1, d) for d in (1, 2, 3, 15, 31)] + [dt.date(2023, 12, 31)]
STAMPS = [dt.datetime(2024, 1, d, h, m, 0, us) for d, h, m, us in
          [(1, 0, 0, 0), (1, 12, 30, 0), (1, 12, 30, 500000), (2, 9, 0, 0), (3, 23, 59, 0)]]
TIMES = [dt.time(h, m, s) for h, m, s in [(0, 0, 0), (9, 30, 0), (12, 0, 0), (12, 0, 1),
                                          (23, 59, 59)]]
FLOATS = [1.5, -2.25, 0.0, 100.0, 3.3, -0.0, 0.5]
DECIMALS = ["0", "1.50", "-0.25", "12.34", "99999999.99", "-12.34", "7"]


def _enc(col: str, v) -> bytes:
    return codec.encode_cell(codec.parse_type(COLUMNS[col]), v)


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
        if rnd.random() < 0.8:  # rounded half up to the scale; too many digits is malformed
            r[b"f:d"] = rnd.choice([*(d.encode() for d in DECIMALS), b"0.005", b"-0", b"1e2",
                                    b"abc", b"123456789012", b"%.2f" % rnd.uniform(-500, 500)])
        if rnd.random() < 0.8:
            r[b"f:t"] = rnd.choice([*(_enc("f:t", d) for d in DATES), b"2023-02-29", b"x"])
        if rnd.random() < 0.8:
            r[b"f:ts"] = rnd.choice([*(_enc("f:ts", d) for d in STAMPS), b"2024-01-02",
                                     b"2024-13-01 00:00:00"])
        if rnd.random() < 0.8:
            r[b"f:tm"] = rnd.choice([*(_enc("f:tm", d) for d in TIMES), b"25:00:00"])
        if rnd.random() < 0.8:
            r[b"f:o"] = rnd.choice([_enc("f:o", True), _enc("f:o", False), b"maybe"])
        if rnd.random() < 0.8:
            r[b"f:fl"] = rnd.choice([*(_enc("f:fl", v) for v in FLOATS), b"nan", b"bad",
                                     b"-inf"])
        if not r:
            r[b"f:z"] = b"only an undeclared cell"
        out[b"r%04d" % i] = r
    return out


def _sqlite_value(v):
    """A hibase value as SQLite holds it: dates as ISO text, decimals as REAL, booleans 0/1."""
    if isinstance(v, (dt.date, dt.time)):
        return codec.iso_text(v)
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, bool):
        return int(v)
    return v


def _value(col: str, raw: bytes | None):
    if raw is None:
        return None
    try:
        v = codec.decode_cell(codec.parse_type(COLUMNS[col]), raw)
    except hibase.errors.ValueTypeError:
        return None
    return None if isinstance(v, float) and math.isnan(v) else _sqlite_value(v)


def _literal(rnd: random.Random, col: str) -> str:
    if col in ("f.a", "f.n"):
        return str(rnd.randint(-300, 300) if col == "f.a" else rnd.randint(-50, 50))
    if col == "f.x":
        return rnd.choice(["0", "1.5", "-10.25", "2000", "0.0"])
    if col == "f.fl":  # float32 values (a FLOAT column compares with the literal as float32)
        return rnd.choice(["0", "1.5", "-2.25", "100", "0.5", "-0.0"])
    if col == "f.d":
        return rnd.choice(["0", "1.5", "-0.25", "12.34", "7", "2.555", "-100"])
    if col == "f.o":
        return rnd.choice(["TRUE", "FALSE"])
    pool = {"f.t": DATES, "f.ts": STAMPS, "f.tm": TIMES}.get(col)
    if pool is not None:
        return "'" + codec.iso_text(rnd.choice(pool)) + "'"
    return "'" + rnd.choice(WORDS) + "'"


def _sort_key(col: str):
    if col in ("f.a", "f.n", "f.x", "f.fl", "f.d"):
        return float
    if col == "f.o":
        return lambda s: s == "TRUE"
    return lambda s: s


_ALL = ["f.a", "f.b", "f.x", "f.n", "f.d", "f.t", "f.ts", "f.tm", "f.o", "f.fl"]


def _atom(rnd: random.Random) -> tuple[str, str]:
    """(hibase's text, SQLite's) of one condition."""
    col = rnd.choice(_ALL)
    q = col.replace(".", "_")
    kind = rnd.random()
    if kind < 0.45:
        op = rnd.choice(["=", "<>", "<", "<=", ">", ">="])
        lit = _literal(rnd, col)
        return f"{col} {op} {lit}", f"{q} {op} {lit}"
    if kind < 0.55:
        lo, hi = sorted([_literal(rnd, col), _literal(rnd, col)], key=_sort_key(col))
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
                           "MAX(f.b)", "MIN(f.a)", "MAX(f.n)", "SUM(f.n)", "SUM(f.d)",
                           "AVG(f.d)", "MIN(f.d)", "MAX(f.t)", "MIN(f.ts)", "MAX(f.tm)",
                           "MIN(f.o)", "COUNT(f.o)", "MAX(f.fl)", "SUM(f.fl)", "AVG(f.x)"],
                          rnd.randint(1, 3))
        group = rnd.choice([None, None, "f.b", "f.n", "f.o", "f.t", "f.d"])
        items = ([group] if group else []) + aggs
        sql = f"SELECT {', '.join(items)} FROM t{hw}" + (f" GROUP BY {group}" if group else "")
        s_items = [i.replace("f.", "f_") for i in items]
        ssql = f"SELECT {', '.join(s_items)} FROM t{sqw}" + (
            f" GROUP BY {group.replace('.', '_')}" if group else "")
        return sql, ssql, "groups", []
    if shape < 0.75:
        col = rnd.choice(_ALL)
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
    col = rnd.choice(_ALL)
    q = col.replace(".", "_")
    return (f"SELECT ROWKEY, {col} FROM t{hw}", f"SELECT rk, {q} FROM t{sqw} ORDER BY rk",
            "rows", [col.replace(".", ":").encode()])


def _norm(rows: list, kind: str, cols: list[bytes]) -> list:
    """Rows comparable with SQLite's (by _close): hibase's (rowkey, {column: value}) as a
    tuple, values as SQLite holds them (a NaN cell, shown as it is stored, is NULL in SQLite;
    -0.0 is 0.0), groups in order."""
    out = []
    for r in rows:
        if len(r) == 2 and isinstance(r[1], dict):
            r = (r[0], *(r[1].get(c) for c in cols))
        r = tuple(_sqlite_value(v) for v in r)
        out.append(tuple((None if math.isnan(v) else v + 0.0) if isinstance(v, float) else v
                         for v in r))
    return sorted(out, key=repr) if kind == "groups" else out


def _close(a: list, b: list) -> bool:
    """_norm'd answers equal, numbers with a float among them to 1e-9 relative (1e-6
    absolute): SQLite adds DECIMALs as REALs (28 x 99999999.99 is 2799999999.719998 there)."""
    def one(x, y) -> bool:
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and (
                isinstance(x, float) or isinstance(y, float)):
            return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6)
        return x == y
    return len(a) == len(b) and all(
        len(r) == len(q) and all(one(x, y) for x, y in zip(r, q)) for r, q in zip(a, b))


def _same(a, b) -> bool:
    """Equal answers, a NaN equal to a NaN (a cell shown as stored); -0.0 == 0.0 as in SQL."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, decimal.Decimal) and isinstance(b, decimal.Decimal):  # scale too
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _warned(db, sql: str) -> tuple[list, list]:
    """(db.sql's answer, the CellTypeWarnings it issued as (message, count, examples))."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        rows = db.sql(sql)
    return rows, [(str(w.message), w.message.count, w.message.examples) for w in got
                  if issubclass(w.category, hibase.errors.CellTypeWarning)]


@pytest.fixture
def hbase(request):
    return coprocessor_cluster(request)


def sqlite_of(rows: dict[bytes, dict[bytes, bytes]]) -> sqlite3.Connection:
    """An in-memory SQLite table t holding `rows` (from _rows) as hibase reads them."""
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE t (rk BLOB, " + ", ".join(
        f"{c.replace(':', '_')} {SQLITE_TYPES[c]}" for c in COLUMNS) + ")")
    lite.executemany(f"INSERT INTO t VALUES (?{', ?' * len(COLUMNS)})", [
        (k, *(_value(c, cells.get(c.encode())) for c in COLUMNS)) for k, cells in rows.items()])
    return lite


def compare(pushed, client, lite, rnd: random.Random, statements: int,
            before=None) -> tuple[int, list[str]]:
    """Run `statements` random statements pushed down, by the client and on SQLite:
    (how many EXPLAIN said were pushed down, the differences found). before(i) is called
    before statement i (a test may split or move regions meanwhile)."""
    differ = []
    pushed_n = 0
    for n in range(statements):
        if before is not None:
            before(n)
        sql, ssql, kind, cols = _statement(rnd)
        plan = "\n".join(r[0] for r in pushed.sql("EXPLAIN " + sql))
        pushed_n += "PUSHED DOWN" in plan
        a, warned_a = _warned(pushed, sql)
        b, warned_b = _warned(client, sql)
        c = lite.execute(ssql).fetchall()
        if warned_a != warned_b:  # bad cells told alike (count and examples)
            differ.append(f"{sql}\n  warnings: pushed {warned_a}\n  client {warned_b}")
        elif not _same(a, b) or not _close(_norm(a, kind, cols), _norm(c, kind, cols)):
            na, nc = _norm(a, kind, cols), _norm(c, kind, cols)
            i = next((i for i, (x, y) in enumerate(zip(na, nc)) if not _close([x], [y])),
                     min(len(na), len(nc)))
            differ.append(f"{sql}\n  pushed == client: {_same(a, b)}; from row {i}: pushed "
                          f"{na[i:i + 4]}\n  sqlite {nc[i:i + 4]}")
    return pushed_n, differ


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
        lite = sqlite_of(rows)
        assert "PUSHED DOWN" in pushed.sql("EXPLAIN SELECT COUNT(*) FROM t WHERE f.a > 0")[1][0]
        assert "3 region(s)" in pushed.sql("EXPLAIN SELECT COUNT(*) FROM t WHERE f.a > 0")[1][0]
        assert "does not answer" in "".join(
            r[0] for r in client.sql("EXPLAIN SELECT MAX(f.a) FROM t"))
        pushed_n, differ = compare(pushed, client, lite, rnd, STATEMENTS)
        print(f"{STATEMENTS} statements, {pushed_n} pushed down, {len(differ)} differences")
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


def test_new_types_are_pushed_down_and_floating_sums_are_not(hbase):
    """DECIMAL(p, s) (SUM / AVG exact for p <= 18), DATE, TIME, TIMESTAMP, BOOLEAN and FLOAT
    run in the regions with the client's answers; SUM / AVG of DOUBLE / FLOAT or of a
    DECIMAL(30, 2), and a plain DECIMAL, stay with this client."""
    prefix = f"pt{os.getpid()}"
    pushed = hibase.connect(cluster_url(hbase, prefix))
    client = hibase.connect(cluster_url(hbase, prefix, scan_pushdown=0))
    try:
        pushed.create_table("t", {"f": {}}, columns={**COLUMNS, "f:p": "decimal",
                                                      "f:w": "decimal(30,2)"})
        t = pushed.table("t")
        for i in range(40):
            t.put(b"k%02d" % i, {
                b"f:d": str(decimal.Decimal(i * 137 - 2000) / 100).encode(),
                b"f:t": _enc("f:t", dt.date(2024, 1, 1 + i % 28)),
                b"f:ts": _enc("f:ts", dt.datetime(2024, 1, 1, i % 24, i, 0, i * 1000)),
                b"f:tm": _enc("f:tm", dt.time(i % 24, i % 60)),
                b"f:o": _enc("f:o", i % 3 == 0), b"f:fl": _enc("f:fl", i / 4 - 3),
                b"f:p": b"1.%d" % i, b"f:w": b"%d.25" % i})
        assert hbase.split(f"{prefix}_t", b"k20")
        for sql, down in [
            ("SELECT f.o, SUM(f.d), AVG(f.d), MIN(f.t), MAX(f.ts), MIN(f.tm), COUNT(f.fl) "
             "FROM t WHERE f.t >= '2024-01-05' AND f.tm < '20:00:00' GROUP BY f.o", True),
            ("SELECT MAX(f.d), MIN(f.fl) FROM t WHERE f.o = TRUE OR f.fl > 1.5", True),
            ("SELECT ROWKEY, f.ts FROM t WHERE f.ts > '2024-01-01 12:00:00' "
             "ORDER BY f.d DESC LIMIT 3", True),
            ("SELECT ROWKEY FROM t WHERE f.d BETWEEN -3.5 AND 2.555 AND f.o <> TRUE", True),
            ("SELECT SUM(f.fl) FROM t WHERE f.t > '2024-01-02'", False),
            ("SELECT AVG(f.x) FROM t WHERE f.t > '2024-01-02'", False),
            ("SELECT SUM(f.w) FROM t WHERE f.t > '2024-01-02'", False),
            ("SELECT MAX(f.p) FROM t WHERE f.t > '2024-01-02'", False),
            ("SELECT COUNT(*) FROM t WHERE f.fl > 0.1", True)]:  # 0.1 read as a float32
            plan = "\n".join(r[0] for r in pushed.sql("EXPLAIN " + sql))
            assert ("PUSHED DOWN" in plan) == down, (sql, plan)
            got = pushed.sql(sql)
            assert _same(got, client.sql(sql)) and got, sql
        got = pushed.sql("SELECT SUM(f.d), AVG(f.d) FROM t WHERE f.o = FALSE")
        want = [decimal.Decimal(i * 137 - 2000) / 100 for i in range(40) if i % 3]
        assert got == [(sum(want), sum(want) / len(want))]
        assert str(got[0][0]) == str(sum(want, decimal.Decimal("0.00")))  # the column's scale
    finally:
        pushed.close()
        client.close()


def test_bad_cells_are_told_alike_pushed_down_and_by_this_client(backend):
    """A cell another client wrote that does not parse as its column's type is NULL and
    told (CellTypeWarning: count, first rows and columns) whether the region servers ran the
    statement or this client did (on HBase the statements below are pushed down)."""
    db = backend.connect()
    db.create_table("t", {"e": {}}, columns={"e:amount": "double", "e:cur": "string",
                                              "e:day": "date"})
    t = db.table("t")
    for i in range(6):
        t.put(b"r%d" % i, {b"e:amount": b"%d.5" % i, b"e:cur": b"EUR" if i % 2 else b"USD",
                           b"e:day": b"2024-01-0%d" % (i + 1)})
    backend.foreign_put(db, "t", b"r1", {b"e:amount": b"abc"})
    backend.foreign_put(db, "t", b"r4", {b"e:day": b"2024-02-30", b"e:amount": b"x"})
    # elsewhere nothing is pushed down: the one connection is both (an embedded store opens once)
    client = hibase.connect(backend.url + "&scan_pushdown=0") if backend.kind == "hbase" \
        else db
    try:
        told = "2 cells did not parse as their declared types (row r1, e.amount; row r4, " \
               "e.amount): read as NULL"
        for sql, want, examples in [
            ("SELECT ROWKEY, e.amount FROM t WHERE e.cur <> 'GBP'", told, 2),
            ("SELECT ROWKEY, e.amount, e.day FROM t WHERE e.amount IS NULL", None, 3),
            ("SELECT ROWKEY, e.amount FROM t WHERE e.day > '2024-01-01' "
             "ORDER BY e.amount NULLS LAST LIMIT 6", None, 1),  # r4's day is NULL
            ("SELECT e.cur, COUNT(e.amount), MAX(e.day) FROM t WHERE e.cur <> 'GBP' "
             "GROUP BY e.cur", None, 0)]:
            if backend.kind == "hbase":
                plan = "\n".join(r[0] for r in db.sql("EXPLAIN " + sql))
                assert "PUSHED DOWN" in plan, plan
            got, warned = _warned(db, sql)
            assert (got, warned) == _warned(client, sql), sql
            assert len(warned) == (1 if examples else 0), (sql, warned)
            if examples:
                assert warned[0][1] == examples
                assert {r for r, _ in warned[0][2]} <= {b"r1", b"r4"}
            if want:
                assert warned[0][0] == want
        rows = dict(db.sql("SELECT ROWKEY, e.amount, e.day FROM t WHERE e.amount IS NULL"))
        assert rows == {b"r1": {b"e:amount": None, b"e:day": dt.date(2024, 1, 2)},
                        b"r4": {b"e:amount": None, b"e:day": None}}
        if backend.kind == "hbase":  # `hibase query`'s closing line, pushed down or not
            from click.testing import CliRunner

            from hibase.cli import cli
            sql = "SELECT ROWKEY, e.amount FROM t WHERE e.cur <> 'GBP'"
            out = [CliRunner().invoke(cli, ["query", url, sql])
                   for url in (backend.url, backend.url + "&scan_pushdown=0")]
            assert [o.exit_code for o in out] == [0, 0], [o.stderr for o in out]
            assert out[0].stdout == out[1].stdout and told in out[0].stderr
            assert [ln for ln in out[0].stderr.splitlines() if "did not parse" in ln] == \
                [ln for ln in out[1].stderr.splitlines() if "did not parse" in ln]
    finally:
        if client is not db:
            client.close()


def test_which_statements_become_work(tmp_path):
    """pushdown.translate on its own (no HBase): the new types become work with their
    literals as the column's keys; SUM / AVG of FLOAT / DOUBLE, of a DECIMAL wider than 18
    digits, a plain DECIMAL, VARCHAR(n) and CAST do not (None: the client reads them)."""
    from hibase import sql as sqlexec
    from hibase.query import pushdown
    from hibase.query.prepare import types_of
    from hibase.query.resolve import resolve

    db = hibase.connect(str(tmp_path / "s"))
    try:
        db.create_table("t", {"f": {}}, columns={**COLUMNS, "f:p": "decimal",
                                                  "f:w": "decimal(30,2)", "f:v": "string(5)"})
        schema = db.store.schema("t")

        def work(sql: str):
            select = resolve(sqlexec.parse(db, sql), schema)
            return pushdown.translate(select, schema, types_of(select, db.store))

        def key(col: str, v) -> str:
            return codec.encode_key(codec.parse_type(COLUMNS[col]), v).hex()

        w = work("SELECT f.o, SUM(f.d), AVG(f.d), MIN(f.ts) FROM t WHERE f.d > 2.555 AND "
                 "f.t = '2024-01-02' AND f.tm < '12:00:00' AND f.fl <= 1.5 GROUP BY f.o")
        assert w is not None and w.spec["mode"] == "agg"
        names = [c.decode() for c in w.cols]
        assert w.spec["cols"] == [[n.encode().hex(), COLUMNS[n]] for n in names]
        conds = w.spec["where"][1]
        assert conds[0] == ["cmp", ">", names.index("f:d"),
                            key("f:d", decimal.Decimal("2.555"))]  # exact, not at scale 2
        assert conds[1][3] == key("f:t", dt.date(2024, 1, 2))
        assert conds[2][3] == key("f:tm", dt.time(12))
        assert conds[3][3] == key("f:fl", 1.5)
        assert w.spec["aggs"] == [["sum", names.index("f:d")], ["sum", names.index("f:d")],
                                  ["min", names.index("f:ts")]]
        assert work("SELECT ROWKEY FROM t WHERE f.o = TRUE").spec["where"] == \
            ["cmp", "=", 0, key("f:o", True)]
        for sql in ["SELECT SUM(f.fl) FROM t WHERE f.a > 0",
                    "SELECT AVG(f.x) FROM t WHERE f.a > 0",
                    "SELECT SUM(f.w) FROM t WHERE f.a > 0",
                    "SELECT MAX(f.p) FROM t WHERE f.a > 0",
                    "SELECT COUNT(*) FROM t WHERE f.v = 'a'",
                    "SELECT COUNT(*) FROM t WHERE CAST(f.d AS INTEGER) > 1"]:
            assert work(sql) is None, sql
    finally:
        db.close()
