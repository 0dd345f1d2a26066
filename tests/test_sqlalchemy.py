"""The SQLAlchemy dialect (hibase.sqlalchemy) and pandas through it: URLs and their entry
points, text() and Core statements (INSERT compiled to UPSERT), CREATE TABLE / INDEX from
metadata, reflection, pandas.read_sql and DataFrame.to_sql; answers equal SQLite's."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
from sqlalchemy import (
    BigInteger, Column, Float, Index, Integer, MetaData, String, Table, create_engine, func,
    insert, inspect, select, text,
)
from sqlalchemy.dialects import registry

import hibase.dbapi as dbapi
from hibase.sqlalchemy import HibaseDialect, HibaseThriftDialect


@pytest.fixture
def engine(db):
    """An engine whose connections all run on the test's hibase Connection (any backend)."""
    eng = create_engine("hibase://", creator=lambda: dbapi.connect(db))
    yield eng
    eng.dispose()


def test_entry_points_and_urls(backend, tmp_path):
    assert registry.load("hibase") is HibaseDialect
    assert registry.load("hibase.thrift") is HibaseThriftDialect
    eng = create_engine(f"hibase:///{tmp_path}/store")
    args, kw = eng.dialect.create_connect_args(eng.url)
    assert args == [f"{tmp_path}/store"] and kw == {}
    eng = create_engine("hibase+thrift://h:9091?timeout=5000&cache_policy=none")
    assert eng.dialect.create_connect_args(eng.url) == (
        ["thrift://h:9091?timeout=5000"], {"cache_policy": None})
    # a real engine by URL on this run's backend
    url = backend.url
    eng = create_engine(("hibase+" + url) if url.startswith("thrift://") else f"hibase:///{url}")
    with eng.connect() as conn:
        conn.execute(text("CREATE TABLE u (k VARCHAR PRIMARY KEY, f.a BIGINT)"))
        conn.execute(text("UPSERT INTO u VALUES (:k, :a)"), [{"k": "x", "a": 1}, {"k": "y", "a": 2}])
        conn.commit()
        assert conn.execute(text("SELECT k, f.a FROM u WHERE f.a > :v"), {"v": 1}).all() == [
            ("y", 2)]
        conn.execute(text("DROP TABLE u"))
    eng.dispose()


def test_core_statements_and_reflection(engine, db):
    md = MetaData()
    t = Table("t", md, Column("k", String(20), primary_key=True), Column("f.a", Integer),
              Column("b", Float), Column("c", String))
    Index("by_a", t.c["f.a"], hibase_include=["b"])
    Index("by_c", t.c.c, hibase_local=True)
    md.create_all(engine)
    schema = db.table("t").schema
    assert schema.rowkey == "k"
    assert {c: str(ty) for c, ty in schema.columns.items()} == {
        b"f:a": "int", b"0:b": "double", b"0:c": "string"}
    with engine.begin() as conn:
        result = conn.execute(insert(t), [{"k": "x", "f.a": 1, "b": 0.5, "c": "one"},
                                          {"k": "y", "f.a": 2, "b": None, "c": "two"},
                                          {"k": "z", "f.a": 3, "b": 2.5, "c": None}])
        assert result.rowcount == 3
    compiled = str(insert(t).compile(dialect=engine.dialect))
    assert compiled.startswith("UPSERT INTO t")
    with engine.connect() as conn:
        assert conn.execute(select(t).where(t.c["f.a"] >= 2).order_by(t.c.k)).all() == [
            ("y", 2, None, "two"), ("z", 3, 2.5, None)]
        assert conn.execute(select(t.c.k, t.c.b).where(t.c.c == "one")).all() == [("x", 0.5)]
        assert conn.execute(select(t.c.k).order_by(t.c.k.desc()).limit(2).offset(1)
                            ).scalars().all() == ["y", "x"]
        assert conn.execute(select(func.count()).select_from(t)).scalar() == 3
        assert conn.execute(select(func.max(t.c["f.a"])).where(t.c.b.is_(None))).scalar() == 2
    with engine.begin() as conn:
        assert conn.execute(t.delete().where(t.c.k == "z")).rowcount == 1
    insp = inspect(engine)
    assert insp.get_table_names() == ["t"] and insp.has_table("t") and not insp.has_table("u")
    cols = insp.get_columns("t")
    assert [c["name"] for c in cols] == ["k", "f.a", "b", "c"]
    assert [type(c["type"]).__name__ for c in cols] == ["VARCHAR", "INTEGER", "DOUBLE",
                                                        "VARCHAR"]
    assert insp.get_pk_constraint("t")["constrained_columns"] == ["k"]
    idx = {i["name"]: i for i in insp.get_indexes("t")}
    assert idx["by_a"]["column_names"] == ["f.a"] and idx["by_a"]["include_columns"] == ["b"]
    assert idx["by_c"]["dialect_options"]["hibase_local"] is True
    # reflected tables answer Core selects
    t2 = Table("t", MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        assert conn.execute(select(t2.c.k).where(t2.c["f.a"] == 1)).scalars().all() == ["x"]
    md.drop_all(engine)
    assert b"t" not in db.tables()


def test_pandas_round_trip_equals_sqlite(engine, db):
    df = pd.DataFrame({"x": [3, 1, 2, 5, 4], "y": ["a", "b", None, "b", "c"],
                       "z": [0.5, None, 1.5, -2.0, 0.0]})
    assert df.to_sql("p", engine, index=False) == 5
    lite = sqlite3.connect(":memory:")
    df.to_sql("p", lite, index=False)
    back = pd.read_sql("SELECT * FROM p", engine)
    assert list(back.columns) == ["x", "y", "z"]
    pd.testing.assert_frame_equal(back, pd.read_sql("SELECT * FROM p", lite))
    for sql in ["SELECT x, y FROM p WHERE x >= 2", "SELECT y, COUNT(*) FROM p GROUP BY y",
                "SELECT MIN(z), MAX(z), SUM(x) FROM p WHERE z IS NOT NULL"]:
        got = pd.read_sql(sql, engine)
        want = pd.read_sql(sql, lite)
        key = list(got.columns)
        pd.testing.assert_frame_equal(
            got.sort_values(key, na_position="first").reset_index(drop=True),
            want.sort_values(key, na_position="first").reset_index(drop=True),
            check_names=False, check_dtype=False)
    got = pd.read_sql(text("SELECT x FROM p WHERE y = :y"), engine, params={"y": "b"})
    assert sorted(got["x"]) == [1, 5]
    # append, and the index written and indexed as pandas does it
    df.to_sql("p", engine, index=False, if_exists="append")
    assert pd.read_sql("SELECT COUNT(*) FROM p", engine).iloc[0, 0] == 10
    df.to_sql("q", engine, dtype={"x": BigInteger()})
    assert [i["name"] for i in inspect(engine).get_indexes("q")] == ["ix_q_index"]
    pd.testing.assert_frame_equal(pd.read_sql_table("q", engine).drop(columns="index"), df)
    df.to_sql("q", engine, if_exists="replace", index=False)
    assert list(pd.read_sql("SELECT * FROM q", engine).columns) == ["x", "y", "z"]
