"""SQL the parser must refuse before it recurses or encodes: every case is a QuerySyntaxError
with a position, never RecursionError, UnicodeEncodeError or ValueError (issue 15, item 2)."""

from __future__ import annotations

import pytest

from hibase.errors import QuerySyntaxError
from hibase.query.normalize import normalize
from hibase.query.parse import MAX_NESTING, MAX_TERMS, parse_condition, parse_select

W = "SELECT * FROM t WHERE "


def _ors(n: int) -> str:
    return " OR ".join(f"f.a = {i}" for i in range(n))


@pytest.mark.parametrize("sql, message, position", [
    (W + "(" * 49 + "f.a = 1" + ")" * 49, "nested too deeply", len(W) + MAX_NESTING),
    (W + "NOT " * 120 + "f.a = 1", "nested too deeply", len(W) + 4 * MAX_NESTING),
    (W + "NOT (" * 13 + "f.a = 1" + ")" * 13, "nested too deeply", None),
    (W + _ors(1000), "too many AND/OR terms", None),
    (W + " AND ".join(f"f.a{i} = 1" for i in range(1000)), "too many AND/OR terms", None),
    (W + "f.\ud800 = 1", "lone surrogate", len(W) + 2),
    (W + "f.a = '\udfff'", "lone surrogate", len(W) + 7),
    (W + "f.a IN ('x', 'y\ud800')", "lone surrogate", None),
    ("SELECT * FROM \ud800", "lone surrogate", 14),
    (W + "f.a = 1e", "malformed number '1e'", len(W) + 6),
    (W + "f.a = 2.5E AND f.b = 1", "malformed number '2.5E'", len(W) + 6),
    (W + "f.a = 1e+", "malformed number", len(W) + 6),
])
def test_refused_before_recursion(sql, message, position):
    with pytest.raises(QuerySyntaxError, match=message) as err:
        parse_select(sql)
    assert "\n" not in str(err.value)
    assert err.value.position is not None
    if position is not None:
        assert err.value.position == position


def test_condition_entry_is_checked_too():
    with pytest.raises(QuerySyntaxError, match="nested too deeply"):
        parse_condition("(" * 60 + "f.a = 1" + ")" * 60)
    with pytest.raises(QuerySyntaxError, match="malformed number") as err:
        parse_condition("f.a > 3e")
    assert err.value.position == 6


def _deep(n: int, fn):
    """Call fn from n frames down: the limits leave room for a caller's own stack."""
    return _deep(n - 1, fn) if n else fn()


@pytest.mark.parametrize("sql", [
    W + "(" * MAX_NESTING + "f.a = 1" + ")" * MAX_NESTING,
    W + "NOT " * MAX_NESTING + "f.a = 1",
    W + "NOT (" * (MAX_NESTING // 2) + "f.a = 1" + ")" * (MAX_NESTING // 2),
    W + "(" * MAX_NESTING + " AND ".join(f"f.a{i} = {i}" for i in range(MAX_TERMS))
    + ")" * MAX_NESTING,
    W + _ors(256),  # as many conjuncts as the DNF allows
])
def test_limits_themselves_parse_from_a_deep_stack(sql):
    parse_select.cache_clear()
    select = _deep(150, lambda: parse_select(sql))
    assert _deep(150, lambda: normalize(select.where))


def test_quoted_text_does_not_count():
    # parentheses, NOTs and exponents inside strings are text, not structure
    sql = W + "f.a = '" + "(" * 100 + " NOT " * 100 + " 1e " + "'"
    assert parse_select(sql).where is not None
    assert parse_select(W + "f.a = 1e5 AND f.b = .5e-3 AND f.x1e = 2").where is not None


def test_statement_size_limit(tmp_path):
    """A statement over max_statement (default 1 MiB of UTF-8) is a QuerySyntaxError before any
    parsing: a 10 MB literal peaked at 2.4 GB inside sqlglot."""
    import hibase
    from click.testing import CliRunner

    from hibase.cli import cli
    from hibase.errors import InvalidArgument, QuerySyntaxError

    path = str(tmp_path / "s")
    db = hibase.connect(path)
    db.create_table("t", {"f": {}}, columns={"f:a": "string"})
    big = "SELECT * FROM t WHERE f.a = '" + "x" * (2 << 20) + "'"
    with pytest.raises(QuerySyntaxError, match="statement too long") as e:
        db.sql(big)
    assert e.value.position == 1 << 20
    wide = "SELECT * FROM t WHERE f.a = '" + "\u00e9" * (600 << 10) + "'"  # 1.2 MB of UTF-8
    with pytest.raises(QuerySyntaxError, match="too long"):
        db.sql(wide)
    with pytest.raises(QuerySyntaxError, match="too long"):
        list(db.table("t").where("f.a = '" + "x" * (2 << 20) + "'"))
    assert db.sql("SELECT * FROM t WHERE f.a = '" + "x" * (512 << 10) + "'") == []
    db.close()
    db = hibase.connect(path, max_statement=4 << 20)
    assert db.sql(big) == []
    db.close()
    with pytest.raises(InvalidArgument, match="max_statement"):
        hibase.connect(path, max_statement=0)
    r = CliRunner().invoke(cli, ["query", path, big])
    assert r.exit_code == 1 and "statement too long" in r.output and "Traceback" not in r.output
