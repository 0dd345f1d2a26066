"""Full-text indexes (create_index(kind="text"), CREATE TEXT INDEX) and CONTAINS: answers equal
a brute-force model's and the unindexed scan's after random writes, on every backend (on real
HBase the coprocessor keeps the index); other programs' writes are found through it; DDL,
EXPLAIN and the clear errors."""

from __future__ import annotations

import itertools
import os
import struct

import happybase
import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import hibase
from hibase import errors
from hibase.index.text import tokenize
from servers import cluster_url, coprocessor_cluster

COLUMNS = {"f:body": "string", "f:n": "int"}
WORDS = ["fox", "Fox", "FOXES", "quick", "quiet", "qui", "dog", "été", "ÉTÉ", "naïve", "x²y",
         "日本", "ΣΑΣ", "a", "ab", "b2", "snake_case", "e-mail", "İz"]
SEPARATORS = [" ", ", ", "! ", "\n", "-", " ... "]
ROWS = [b"r%d" % i for i in range(8)]

text = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)),
                max_size=6).map(lambda ws: "".join(w + s for w, s in ws))
put = st.tuples(st.just("put"), st.sampled_from(ROWS),
                st.fixed_dictionaries({}, optional={b"f:body": text.map(str.encode),
                                                    b"f:n": st.integers(0, 2).map(
                                                        lambda v: str(v).encode())}))
delete = st.tuples(st.just("delete"), st.sampled_from(ROWS),
                   st.sampled_from([None, [b"f:body"], [b"f:n"]]))
batch = st.tuples(st.just("batch"), st.sampled_from(ROWS),
                  st.fixed_dictionaries({b"f:body": text.map(str.encode)}))
ops = st.lists(st.one_of(put, put, delete, batch), min_size=1, max_size=25)

QUERY_WORDS = ["fox", "foxes", "quick", "qui*", "f*", "été", "ete", "naïve", "x", "y", "日本",
               "σας", "i̇z", "dog", "b2", "snake", "mail", "nothing", "a", "ab*"]
query = st.lists(st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=2),
                 min_size=1, max_size=2).map(
    lambda groups: " OR ".join(" ".join(g) for g in groups))
condition = st.tuples(st.sampled_from(["{c}", "{c} AND f.n = 1", "{c} OR f.n = 2",
                                       "NOT {c}", "{c} AND NOT CONTAINS(f.body, 'dog')"]),
                      query).map(lambda t: t[0].format(c=f"CONTAINS(f.body, '{t[1]}')"))


def _model_tokens(body: str | None) -> set[str]:
    """The tokenizer's rule written out plainly (a character at a time), for the model."""
    out, word = set(), ""
    for c in (body or "") + " ":
        if c.isalpha() or c.isdecimal():
            word += c
        elif word:
            if len(word.lower()) <= 64:
                out.add(word.lower())
            word = ""
    return out


def _model_contains(body: str | None, q: str) -> bool:
    tokens = _model_tokens(body)
    for group in q.split(" OR "):
        ok = True
        for w in group.split():
            if w.endswith("*"):
                ok &= any(t.startswith(w[:-1]) for t in tokens)
            else:
                ok &= all(t in tokens for t in _model_tokens(w))
        if ok:
            return True
    return False


def _model_answer(model: dict, cond: str) -> list[bytes]:
    """The rows of one generated condition (condition's shapes) by the model."""
    q = cond.split("CONTAINS(f.body, '")[1].split("')")[0]
    out = []
    for row, cells in model.items():
        if not cells:
            continue
        body = cells.get(b"f:body")
        body = None if body is None else body.decode()
        n = cells.get(b"f:n")
        n = None if n is None else int(n)
        hit = None if body is None else _model_contains(body, q)
        if cond.startswith("NOT "):
            ok = hit is False
        elif " AND f.n = 1" in cond:
            ok = bool(hit) and n == 1
        elif " OR f.n = 2" in cond:
            ok = bool(hit) or n == 2
        elif "NOT CONTAINS(f.body, 'dog')" in cond:
            ok = bool(hit) and "dog" not in _model_tokens(body)
        else:
            ok = bool(hit)
        if ok:
            out.append(row)
    return sorted(out)


def _apply(table, model: dict, ops_list) -> None:
    for kind, row, arg in ops_list:
        cells = model.setdefault(row, {})
        if kind == "put":
            if arg:
                table.put(row, arg)
                cells.update(arg)
        elif kind == "delete":
            table.delete(row, arg)
            if arg is None:
                cells.clear()
            else:
                for c in arg:
                    cells.pop(c, None)
        else:
            with table.batch() as b:
                b.delete(row, [b"f:body"])
                b.put(row, arg)
            cells.update(arg)


_tables = itertools.count()


@pytest.mark.hbase_examples(3)
@settings(max_examples=int(os.environ.get("HIBASE_PROPERTY_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(first=ops, later=ops, conds=st.lists(condition, min_size=1, max_size=4))
def test_contains_equals_model_and_scan(db, first, later, conds):
    """Rows written before the index (its build) and after it (upkeep: client or region
    server), then CONTAINS queries: the indexed answer is the model's and the full scan's,
    and verify_index finds the index exact."""
    name = f"t{next(_tables)}"
    db.create_table(name, {"f": {}}, columns=COLUMNS)
    try:
        table = db.table(name)
        model: dict = {}
        _apply(table, model, first)
        db.create_index(name, "tx", ["f:body"], kind="text")
        _apply(table, model, later)
        for cond in conds:
            want = _model_answer(model, cond)
            got = sorted(r for r, _ in db.sql(f"SELECT * FROM {name} WHERE {cond}"))
            scan = sorted(r for r, _ in db.sql(f"SELECT * FROM {name} WHERE {cond}",
                                               full_scan=True))
            assert got == want, (cond, db.explain(f"SELECT * FROM {name} WHERE {cond}"))
            assert scan == want, cond
        assert db.verify_index(name, "tx")["ok"]
    finally:
        db.delete_table(name, disable=True)


def test_tokenizer_rule():
    """Runs of letters (L*) and decimal digits (Nd), lower-cased; No / Nl characters (², ½,
    Ⅻ), '_' and combining marks split words; a run over 64 code points is no token."""
    assert tokenize("The QUICK, fox! snake_case x2y") == [
        "the", "quick", "fox", "snake", "case", "x2y"]
    assert tokenize("x²y ½ Ⅻ a①b") == ["x", "y", "a", "b"]
    assert tokenize("ΟΔΥΣΣΕΥΣ İz ÉTÉ 日本語") == ["οδυσσευς", "i̇z", "été", "日本語"]
    assert tokenize("cafe\u0301") == ["cafe"]  # a decomposed accent (Mn) ends the word
    assert tokenize("a" * 64 + " " + "b" * 65) == ["a" * 64]


def _explain(db, sql: str) -> str:
    return "\n".join(r[0] for r in db.sql("EXPLAIN " + sql))


def test_ddl_explain_and_errors(db):
    db.sql("CREATE TABLE docs (k VARCHAR PRIMARY KEY, f.body VARCHAR, f.n INTEGER, "
           "f.c CHAR(3))")
    db.sql("UPSERT INTO docs VALUES ('a', 'The quick brown fox', 1, 'abc')")
    db.sql("UPSERT INTO docs VALUES ('b', 'A lazy dog', 2, 'abc')")
    q = "SELECT k FROM docs WHERE CONTAINS(body, 'quick fox')"
    assert "FULL TABLE SCAN" in _explain(db, q)
    assert db.sql(q) == [("a", {})]
    db.sql("CREATE TEXT INDEX tx ON docs (f.body)")
    described = [i for i in db.indexes("docs") if i["name"] == "tx"][0]
    assert described["kind"] == "text" and described["state"] == "ready"
    plan = _explain(db, q)
    assert "TEXT INDEX tx (f:body) TOKEN LOOKUP 'quick' AND 'fox'" in plan, plan
    assert db.sql(q) == [("a", {})]
    db.sql("CREATE INDEX byn ON docs (f.n)")
    plan = _explain(db, "SELECT k FROM docs WHERE CONTAINS(f.body, 'qui* OR dog') AND f.n = 2")
    assert "INDEX byn" in plan or "TEXT INDEX tx" in plan, plan
    assert db.sql("SELECT k FROM docs WHERE CONTAINS(f.body, 'qui* OR dog') AND f.n = 2") == [
        ("b", {})]
    # an equality on the text column is no token lookup
    assert "TEXT INDEX" not in _explain(db, "SELECT k FROM docs WHERE f.body = 'A lazy dog'")
    assert db.sql("SELECT k FROM docs WHERE f.body = 'A lazy dog'") == [("b", {})]
    # the SQL engine's path (an expression in the select list) means the same CONTAINS
    assert db.sql("SELECT k, f.n + 1 FROM docs WHERE CONTAINS(f.body, 'FOX')") == [("a", 2)]
    assert db.sql("SELECT COUNT(*) FROM docs WHERE NOT CONTAINS(f.body, 'fox')") == [(1,)]
    db.sql("CREATE TEXT INDEX IF NOT EXISTS tx ON docs (f.body)")
    for bad, words in [
            ("CREATE TEXT INDEX t2 ON docs (f.n)", "not VARCHAR"),
            ("CREATE TEXT INDEX t2 ON docs (f.c)", "not VARCHAR"),
            ("CREATE TEXT INDEX t2 ON docs (f.body, f.n)", "exactly one column"),
            ("CREATE TEXT INDEX t2 ON docs (f.body) INCLUDE (f.n)", "covers no columns"),
            ("CREATE TEXT INDEX t2 ON docs (f.body) CONSISTENCY = EVENTUAL", "strongly"),
            ("SELECT k FROM docs WHERE CONTAINS(f.n, 'x')", "VARCHAR column"),
            ("SELECT k FROM docs WHERE CONTAINS(f.body, '!?')", "no word"),
            ("SELECT k FROM docs WHERE CONTAINS(f.body, 'a OR')", "OR alternatives"),
            ("SELECT k FROM docs WHERE CONTAINS(f.body, f.n)", "string literal")]:
        with pytest.raises(errors.HibaseError) as e:
            db.sql(bad)
        assert words in str(e.value), (bad, str(e.value))
    with pytest.raises(errors.SchemaError, match="cannot be local"):
        db.create_index("docs", "t3", ["f:body"], kind="text", local=True)
    with pytest.raises(errors.SchemaError, match="kind must be"):
        db.create_index("docs", "t3", ["f:body"], kind="fulltext")


@pytest.fixture
def hbase(request):
    return coprocessor_cluster(request)


def _index_rows(conn, name: str) -> tuple[dict, dict]:
    """(entries {key: v:v}, counts {key: sum of family c, > 0}) of an index table on HBase
    (a count is split over cells, one per writer: summed)."""
    entries, counts = {}, {}
    for key, cells in conn.table(name).scan():
        if b"v:v" in cells:
            entries[key] = cells[b"v:v"]
        n = sum(struct.unpack(">q", v[:8])[0] for c, v in cells.items() if c.startswith(b"c:"))
        if n > 0:
            counts[key] = n
    return entries, counts


def test_server_upkeep_equals_client_upkeep_and_finds_foreign_writes(hbase):
    """The same writes through hibase with client upkeep (table a) and through plain
    happybase with the coprocessor keeping the index (table b): the index tables hold the same
    entries and counts (Java's tokens are Python's), and the foreign rows are found."""
    prefix = f"tx{os.getpid()}"
    client = hibase.connect(cluster_url(hbase, prefix, server_upkeep=0))
    server = hibase.connect(cluster_url(hbase, prefix))
    conn = happybase.Connection("127.0.0.1", hbase.thrift_port, timeout=60000)
    docs = [(b"d1", "The quick brown Fox"), (b"d2", "ÉTÉ à Paris, naïve x²y"),
            (b"d3", "ΟΔΥΣΣΕΥΣ and İstanbul 日本語"), (b"d4", "fox fox FOX")]
    try:
        for db, name in ((client, "a"), (server, "b")):
            db.create_table(name, {"f": {}}, columns=COLUMNS)
            db.table(name).put(b"d0", {b"f:body": b"before the index: quick"})
            db.create_index(name, "tx", ["f:body"], kind="text")
        assert not client.indexer.specs("a")[0].server
        assert server.indexer.specs("b")[0].server
        ta, tb = client.table("a"), conn.table(f"{prefix}_b")
        for row, body in docs:
            ta.put(row, {b"f:body": body.encode()})
            tb.put(row, {b"f:body": body.encode()})
        for t in (ta, tb):
            t.put(b"d4", {b"f:body": "a lazy dog".encode()})
            t.delete(b"d1")
        a = _index_rows(conn, f"{prefix}_hibase_kv__idx__a")
        b = _index_rows(conn, f"{prefix}_hibase_kv__idx__b")
        assert a[0] and a == b
        assert b[1][b"\x00\x01quick\x00\x00"] == 1 and b"\x00\x01brown\x00\x00" not in b[1]
        assert server.verify_index("b", "tx")["ok"]
        for q, want in [("quick", [b"d0"]), ("été", [b"d2"]), ("οδυσσευς", [b"d3"]),
                        ("fox", []), ("dog OR paris", [b"d2", b"d4"]), ("na*", [b"d2"])]:
            sql = f"SELECT * FROM b WHERE CONTAINS(f.body, '{q}')"
            assert "TEXT INDEX tx" in "\n".join(r[0] for r in server.sql("EXPLAIN " + sql))
            assert sorted(r for r, _ in server.sql(sql)) == want, q
            assert sorted(r for r, _ in client.sql(sql.replace(" b ", " a "))) == want, q
        assert server.build_index("b", "tx")["regions"] >= 1  # the region servers' rebuild
        assert server.verify_index("b", "tx")["ok"]
        assert _index_rows(conn, f"{prefix}_hibase_kv__idx__b") == b
    finally:
        conn.close()
        client.close()
        server.close()


def test_cli_creates_a_text_index(tmp_path):
    from click.testing import CliRunner

    from hibase.cli import cli
    store = str(tmp_path / "s")
    run = CliRunner().invoke
    made = run(cli, ["create-table", store, "docs", "-f", "f", "-c", "f.body=string"])
    assert made.exit_code == 0, made.output
    made = run(cli, ["index", "create", store, "docs", "bw", "-c", "f.body", "--text"])
    assert made.exit_code == 0 and "Created text index 'bw'" in made.output, made.output
    bad = run(cli, ["index", "create", store, "docs", "bw2", "-c", "f.body", "--text", "--local"])
    assert bad.exit_code == 1 and "cannot be local" in bad.output and "Traceback" not in bad.output
    db = hibase.connect(store)
    try:
        db.sql("UPSERT INTO docs VALUES ('a', 'Hello there')")
        assert "TEXT INDEX bw" in db.explain("SELECT * FROM docs WHERE CONTAINS(f.body, 'hello')")
        assert [r for r, _ in db.sql("SELECT * FROM docs WHERE CONTAINS(f.body, 'hello')")] == [
            b"a"]
    finally:
        db.close()


def test_verify_finds_and_repairs_a_damaged_text_index(db):
    """A token entry lost and one that no row's text holds: verify_index names both, the
    repair restores what a rebuild would write, and CONTAINS answers right again."""
    from hibase.index import verified
    from hibase.index.text import token_key
    db.create_table("t", {"f": {}}, columns=COLUMNS)
    t = db.table("t")
    t.put(b"a", {b"f:body": "quick brown fox".encode()})
    t.put(b"b", {b"f:body": "lazy dog".encode()})
    db.create_index("t", "tx", ["f:body"], kind="text")
    spec = db.indexer.catalog.get("t", "tx")
    db.store.commit([], [("__idx__t", token_key(spec, "fox") + b"a", None),
                         ("__idx__t", token_key(spec, "cat") + b"b",
                          verified.stored(db.store, b"\x90"))])
    report = db.verify_index("t", "tx")
    assert not report["ok"] and report["missing"] == 1 and report["extra"] == 1, report
    assert report["examples"]["extra"] == [b"b"] and report["examples"]["missing"] == [b"a"]
    assert db.verify_index("t", "tx", repair=True)["repaired"]
    assert db.verify_index("t", "tx")["ok"]
    assert [r for r, _ in db.sql("SELECT * FROM t WHERE CONTAINS(f.body, 'fox')")] == [b"a"]


def test_hbase_shell_appends_and_deletes_are_found_through_the_text_index(hbase):
    """HBase's own shell (put, append to the text, delete of the cell, deleteall): the region
    server computes an append's text from the stored cell and keeps the words it adds."""
    from test_coprocessor import _hbase_shell
    prefix = f"tsh{os.getpid()}"
    db = hibase.connect(cluster_url(hbase, prefix))
    try:
        db.create_table("t", {"f": {}}, columns=COLUMNS)
        db.create_index("t", "tx", ["f:body"], kind="text")
        name = f"{prefix}_t"
        _hbase_shell(hbase, [f"put '{name}', 'a', 'f:body', 'quick brown fox'",
                             f"put '{name}', 'b', 'f:body', 'lazy dog'",
                             f"put '{name}', 'c', 'f:body', 'gone soon'",
                             f"append '{name}', 'a', 'f:body', ' jumps over'",
                             f"delete '{name}', 'b', 'f:body'",
                             f"deleteall '{name}', 'c'"])
        for q, want in [("jumps", [b"a"]), ("quick jumps", [b"a"]), ("dog", []), ("gone", []),
                        ("fox OR lazy", [b"a"])]:
            sql = f"SELECT * FROM t WHERE CONTAINS(f.body, '{q}')"
            assert [r for r, _ in db.sql(sql)] == want, q
            assert [r for r, _ in db.sql(sql, full_scan=True)] == want, q
        assert db.verify_index("t", "tx")["ok"]
    finally:
        db.close()


def test_text_index_of_a_salted_table(db):
    """A salted table's text index holds user rowkeys (on HBase kept by the coprocessor,
    which strips the salt byte): CONTAINS finds the rows, built and kept entries verify."""
    db.create_table("s", {"f": {}}, columns=COLUMNS, salt_buckets=4)
    t = db.table("s")
    for i in range(12):
        t.put(b"r%02d" % i, {b"f:body": f"doc {i} {'fox' if i % 3 else 'dog'}".encode()})
    db.create_index("s", "tx", ["f:body"], kind="text")
    t.put(b"r00", {b"f:body": b"now a fox"})
    t.delete(b"r01")
    sql = "SELECT * FROM s WHERE CONTAINS(f.body, 'fox')"
    assert "TEXT INDEX tx" in db.explain(sql)
    got = sorted(r for r, _ in db.sql(sql))
    assert got == sorted(r for r, _ in db.sql(sql, full_scan=True))
    assert got == [b"r00", b"r02", b"r04", b"r05", b"r07", b"r08", b"r10", b"r11"]
    assert db.verify_index("s", "tx")["ok"]
