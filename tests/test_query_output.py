"""`hibase query`'s output does not depend on the data (issue 36): every selected column, in the
table's declared order for SELECT * (as Result.description, which `hibase sql` and hibase.dbapi
print) or the statement's order, NULL where a row has none, the same in --table, --csv and
--json, whatever the WHERE finds. Columns are labelled as SQL results label them (issue 42):
ROWKEY, family.qualifier; --json objects are flat."""

from __future__ import annotations

import csv
import io
import json

import hypothesis.strategies as st
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from hibase.cli import cli

# declared name, age, city: not alphabetical, so schema order and sorted order differ
DECLARED = ["t.name", "t.age", "t.city"]
ROWS = {"k1": ["t:name=ann", "t:age=3", "t:city=Oslo"],
        "k2": ["t:name=bob"],
        "k3": ["t:age=7"],
        "k4": ["t:city=Rome"]}

WHERES = [
    "",
    "WHERE t.age IS NULL",  # a declared column NULL in every row returned
    "WHERE t.name IS NULL AND t.city IS NULL",  # a row holding one column of three
    "WHERE t.name = 'nobody'",  # no row
    "WHERE t.age > 100",  # no row, through a range
    "LIMIT 0",
    "WHERE ROWKEY = 'k4'",
    "WHERE t.age > 5",
    "WHERE t.city = 'Oslo' OR t.name = 'bob'",
    "WHERE t.age IS NOT NULL ORDER BY t.age DESC LIMIT 1",
]


def run(*args, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr,
                                      result.exception)
    return result


def _make(store) -> str:
    run("create-table", store, "t", "-f", "t", "-c", "t:name=string", "-c", "t:age=long",
        "-c", "t:city=string")
    for key, cells in ROWS.items():
        run("put", store, "t", key, *cells)
    return str(store)


@pytest.fixture(scope="module")
def store(module_backend):
    """Table t (declared t:name, t:age, t:city; every row lacks some of them) on the run's
    backend, as the store argument of the commands; one per module and backend, for the tests
    that only read it."""
    return _make(module_backend.url)


@pytest.fixture
def own_store(backend):
    """The same table in the test's own store, for a test that writes to it."""
    return _make(backend.url)


def outputs(store, sql) -> tuple[list[str], list[list[str]], list[dict]]:
    """The CSV header, the --table header and the --json objects of one query."""
    header = next(csv.reader(io.StringIO(run("query", store, sql, "--csv").stdout)))
    table = run("query", store, sql).stdout.splitlines()[0].split()
    objs = [json.loads(x) for x in run("query", store, sql, "--json").stdout.splitlines()]
    return header, table, objs


@pytest.mark.parametrize("where", WHERES)
def test_select_star_prints_the_declared_columns_in_schema_order_whatever_the_where(store,
                                                                                    where):
    """SELECT *: ROWKEY, then every declared column in schema order, in all three outputs,
    also when the WHERE finds no row or only rows lacking a column (the header used to be the
    columns found, sorted)."""
    header, table, objs = outputs(store, f"SELECT * FROM t {where}")
    assert header == table == ["ROWKEY"] + DECLARED
    for obj in objs:
        assert list(obj) == ["ROWKEY"] + DECLARED


def test_json_gives_a_missing_column_as_null(store):
    """--json keeps every selected column's key, null where the row has no cell (as `query
    --help` promises), for SELECT * and a select list alike."""
    _, _, objs = outputs(store, "SELECT * FROM t WHERE t.age IS NULL")
    assert objs == [{"ROWKEY": "k2", "t.name": "bob", "t.age": None, "t.city": None},
                    {"ROWKEY": "k4", "t.name": None, "t.age": None, "t.city": "Rome"}]
    _, _, objs = outputs(store, "SELECT t.city, t.age FROM t WHERE ROWKEY = 'k2'")
    assert objs == [{"t.city": None, "t.age": None}]


def test_select_star_agrees_with_the_sql_result_description(store, module_backend):
    """The header is Result.description's (what `hibase sql` and DB-API give), for WHEREs
    that find different rows."""
    with module_backend.connect() as db:
        for where in WHERES:
            sql = f"SELECT * FROM t {where}"
            labels = [name for name, _ in db.execute(sql).description]
            header, _, _ = outputs(store, sql)
            assert labels[0] == "ROWKEY"
            assert header == labels, where


@pytest.mark.parametrize("where", WHERES)
def test_a_select_list_prints_its_columns_in_its_order_repeats_included(store, where):
    """An explicit select list prints its columns in the statement's order, a column named
    twice twice in --table and --csv (as SQL); --json's object holds it once (a key cannot
    repeat), null where the row has none. ROWKEY prints where the list names it."""
    sql = f"SELECT t.city, ROWKEY, t.age, t.city FROM t {where}"
    header, table, objs = outputs(store, sql)
    assert header == table == ["t.city", "ROWKEY", "t.age", "t.city"]
    for obj in objs:
        assert list(obj) == ["t.city", "ROWKEY", "t.age"]
    body = list(csv.reader(io.StringIO(run("query", store, sql, "--csv").stdout)))[1:]
    assert all(len(r) == 4 and r[0] == r[3] for r in body)


def test_undeclared_columns_follow_the_declared_ones_by_name(own_store):
    """Undeclared columns in the rows found come after the declared ones, sorted by name, as
    in Result.description: the only part of a SELECT * header that depends on the rows."""
    store = own_store
    run("put", store, "t", "k5", "t:zz=1", "t:aa=2")
    header, table, objs = outputs(store, "SELECT * FROM t")
    assert header == table == ["ROWKEY"] + DECLARED + ["t.aa", "t.zz"]
    assert objs[0] == {"ROWKEY": "k1", "t.name": "ann", "t.age": 3, "t.city": "Oslo",
                       "t.aa": None, "t.zz": None}
    header, _, _ = outputs(store, "SELECT * FROM t WHERE ROWKEY < 'k5'")
    assert header == ["ROWKEY"] + DECLARED


_ATOMS = st.sampled_from([
    "t.name IS NULL", "t.name IS NOT NULL", "t.age IS NULL", "t.age IS NOT NULL",
    "t.city IS NULL", "t.city IS NOT NULL", "t.name = 'ann'", "t.name = 'nobody'",
    "t.age > 5", "t.age <= 3", "t.city LIKE 'R%'", "ROWKEY = 'k3'", "ROWKEY > 'k1'"])
_CONDITIONS = st.recursive(_ATOMS, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({' '.join(t)})"),
    inner.map(lambda c: f"NOT {c}")), max_leaves=4)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(condition=_CONDITIONS, star=st.booleans())
def test_the_header_never_depends_on_the_where(tmp_path, condition, star):
    """For any WHERE on the same SELECT, --csv prints the same header and every --json object
    the same keys (the store is made once; the queries only read it)."""
    store = tmp_path / "s"
    if not store.exists():
        _make(store)
    cols = "*" if star else "t.age, t.name, t.age"
    expected = ["ROWKEY"] + DECLARED if star else ["t.age", "t.name", "t.age"]
    header, _, objs = outputs(store, f"SELECT {cols} FROM t WHERE {condition}")
    assert header == expected
    for obj in objs:
        assert list(obj) == list(dict.fromkeys(expected))
