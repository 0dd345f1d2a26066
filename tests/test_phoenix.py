"""Apache Phoenix on the session's real HBase (hibase.cluster.phoenix): a table with a covered
global index, upserts, a query the index serves (EXPLAIN names it), COUNT, typed values, timed
queries, and Phoenix's errors as PhoenixError rather than a hang. One Phoenix connection for the
module: its first connect creates Phoenix's SYSTEM tables (tens of seconds on a busy machine)."""

from __future__ import annotations

import decimal

import pytest

from hibase.cluster import free_port
from hibase.cluster.phoenix import PhoenixClient, PhoenixError, phoenix_for_backend


@pytest.fixture(scope="module")
def px(hbase_cluster):
    client = phoenix_for_backend(hbase_cluster.thrift_url)
    assert client is not None, "the session's HBase runs with Phoenix"
    with client:
        yield client


@pytest.fixture(scope="module")
def people(px):
    px.execute("CREATE TABLE people (id VARCHAR PRIMARY KEY, city VARCHAR, age BIGINT, "
               "score DECIMAL(6, 2), photo VARBINARY)")
    px.execute("CREATE INDEX people_city ON people (city) INCLUDE (age)")
    rows = [(f"p{i}", ["Oslo", "Lima", "Pune"][i % 3], 20 + i, decimal.Decimal(f"{i}.25"),
             bytes([i, 0])) for i in range(12)]
    seconds = px.upsert_many("UPSERT INTO people VALUES (?, ?, ?, ?, ?)", rows, batch=5)
    assert seconds > 0
    return rows


def test_covered_index_serves_the_query(px, people):
    plan = " ".join(str(r[0]) for r in px.execute(
        "EXPLAIN SELECT id, age FROM people WHERE city = ?", ("Lima",)))
    assert "PEOPLE_CITY" in plan, plan
    got = px.execute("SELECT id, age FROM people WHERE city = ? ORDER BY id", ("Lima",))
    assert got == sorted((r[0], r[2]) for r in people if r[1] == "Lima")
    assert px.execute("SELECT COUNT(*) FROM people") == [(12,)]


def test_values_come_back_typed(px, people):
    got = px.execute("SELECT id, city, age, score, photo FROM people WHERE id = ?", ("p7",))
    assert got == [people[7]]
    assert isinstance(got[0][3], decimal.Decimal) and isinstance(got[0][4], bytes)
    px.execute("UPSERT INTO people (id, city) VALUES ('q', NULL)")
    assert px.execute("SELECT city, age FROM people WHERE id = 'q'") == [(None, None)]
    px.execute("DELETE FROM people WHERE id = 'q'")
    assert px.execute("SELECT COUNT(*) FROM people") == [(12,)]


def test_time_query_times_each_execution(px, people):
    times = px.time_query("SELECT id, age FROM people WHERE city = ?", ("Oslo",), repeat=3)
    assert len(times) == 3 and all(0 < t < 60 for t in times)
    assert "JDBC" in px.describe()


def test_phoenix_errors_raise_and_the_client_goes_on(px, people):
    with pytest.raises(PhoenixError, match="Table undefined"):
        px.execute("SELECT * FROM no_such_table")
    with pytest.raises(PhoenixError, match="Syntax error"):
        px.execute("SELEC 1")
    assert px.execute("SELECT COUNT(*) FROM people") == [(12,)]


def test_phoenix_for_backend_knows_only_running_clusters():
    assert phoenix_for_backend(f"thrift://127.0.0.1:{free_port()}") is None
    assert phoenix_for_backend("thrift://example.org:9090") is None


def test_no_server_is_an_error_not_a_hang():
    """A ZooKeeper port nobody listens on: Phoenix would retry for minutes; the client gives up
    after its timeout and ends its JVM."""
    with pytest.raises(PhoenixError, match="no answer in 3 s"):
        PhoenixClient(free_port(), timeout=3)


@pytest.mark.parametrize("direction", ["ASC", "DESC"])
def test_hibase_orders_nulls_where_phoenix_does(px, tmp_path, direction):
    """ORDER BY over a column with NULLs: hibase's planner puts them where Phoenix does (first
    ascending, last descending), and LIMIT keeps the same rows."""
    import hibase

    ages = {"a": 5, "b": None, "c": 3, "d": 9, "e": None, "f": 1}
    name = f"nulls_{direction.lower()}"
    px.execute(f"CREATE TABLE {name} (id VARCHAR PRIMARY KEY, age BIGINT)")
    px.upsert_many(f"UPSERT INTO {name} VALUES (?, ?)", list(ages.items()))
    phoenix = [r[0] for r in px.execute(f"SELECT age FROM {name} ORDER BY age {direction}")]
    db = hibase.connect(str(tmp_path / "store"))
    db.create_table("t", {"f": {}}, columns={"f:age": "long"})
    t = db.table("t")
    for row, age in ages.items():  # a row needs a cell to exist (Phoenix writes a marker one)
        t.put(row.encode(), {b"f:name": row.encode(),
                             **({} if age is None else {b"f:age": str(age).encode()})})
    got = [None if b"f:age" not in d else int(d[b"f:age"])
           for _, d in db.sql(f"SELECT f.age FROM t ORDER BY f.age {direction}")]
    assert got == phoenix
    limited = [None if b"f:age" not in d else int(d[b"f:age"])
               for _, d in db.sql(f"SELECT f.age FROM t ORDER BY f.age {direction} LIMIT 3")]
    assert limited == phoenix[:3]
    db.close()
