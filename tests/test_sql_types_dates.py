"""Phoenix's DATE, TIME, TIMESTAMP, DECIMAL(p,s) and BOOLEAN (issue 38): their cells (ISO text
or HBase Bytes.toBytes layouts), order-preserving keys, SQL literals, comparisons, CAST,
indexes answering ranges, date functions through the engine, DB-API parameters and the
pandas to_sql / read_sql round trip."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from hibase import codec
from hibase.codec import ColumnType, parse_type, type_from_name
from hibase.errors import QuerySyntaxError, SchemaError, ValueTypeError

D, T, TS = dt.date, dt.time, dt.datetime


# -- codec ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,expected", [
    ("date", ColumnType("date")), ("TIMESTAMP binary", ColumnType("timestamp", True)),
    ("decimal(10,2)", ColumnType("decimal", precision=10, scale=2)),
    ("NUMERIC(5)", ColumnType("decimal", precision=5, scale=0)),
    ("DECIMAL(10, 2) binary", ColumnType("decimal", True, precision=10, scale=2)),
    ("datetime", ColumnType("timestamp")), ("BOOLEAN", ColumnType("boolean")),
])
def test_type_names(spec, expected):
    assert type_from_name(spec) == expected
    assert parse_type(str(expected)) == expected


@pytest.mark.parametrize("spec", ["decimal(0,0)", "decimal(39,2)", "decimal(5,6)"])
def test_decimal_bounds_are_checked(spec):
    with pytest.raises(SchemaError):
        type_from_name(spec)


@pytest.mark.parametrize("t,value,text,binary", [
    ("date", D(2024, 1, 2), b"2024-01-02", (1704153600000).to_bytes(8, "big")),
    ("date", D(1969, 12, 31), b"1969-12-31", (-86400000).to_bytes(8, "big", signed=True)),
    ("time", T(13, 45, 0, 123000), b"13:45:00.123", (49500123).to_bytes(8, "big")),
    ("timestamp", TS(2024, 1, 2, 3, 4, 5, 120000), b"2024-01-02 03:04:05.120",
     (1704164645120).to_bytes(8, "big")),
    # a fraction below the millisecond: Phoenix's 12 bytes (millis, then nanos in the milli)
    ("timestamp", TS(2024, 1, 2, 3, 4, 5, 120001), b"2024-01-02 03:04:05.120001",
     (1704164645120).to_bytes(8, "big") + (1000).to_bytes(4, "big")),
    ("boolean", True, b"true", b"\xff"), ("boolean", False, b"false", b"\x00"),
    # Bytes.toBytes(BigDecimal): 4-byte scale, then BigInteger.toByteArray of the unscaled value
    ("decimal(10,2)", Decimal("12.50"), b"12.50", b"\x00\x00\x00\x02\x04\xe2"),
    ("decimal", Decimal("-1.5"), b"-1.5", b"\x00\x00\x00\x01\xf1"),
    ("decimal", Decimal("128"), b"128", b"\x00\x00\x00\x00\x00\x80"),
])
def test_cell_layouts(t, value, text, binary):
    ct = type_from_name(t)
    bt = type_from_name(t + " binary")
    assert codec.encode_cell(ct, value) == text and codec.decode_cell(ct, text) == value
    assert codec.encode_cell(bt, value) == binary and codec.decode_cell(bt, binary) == value


def test_text_cells_read_what_is_documented():
    assert codec.decode_cell(ColumnType("boolean"), b"TRUE") is True
    assert codec.decode_cell(ColumnType("timestamp"), b"2024-01-02T03:04:05Z") == \
        TS(2024, 1, 2, 3, 4, 5)
    assert codec.decode_cell(ColumnType("timestamp"), b"2024-01-02 03:04:05+02:00") == \
        TS(2024, 1, 2, 1, 4, 5)
    assert codec.decode_cell(ColumnType("timestamp"), b"2024-01-02") == TS(2024, 1, 2)
    assert codec.decode_cell(ColumnType("boolean", True), b"\x01") is True  # Phoenix's TRUE
    # a DECIMAL(p,s) cell with more digits is read at the column's scale, rounded half up
    assert codec.decode_cell(type_from_name("decimal(10,2)"), b"3.145") == Decimal("3.15")
    # an aware datetime is stored as UTC
    aware = TS(2024, 1, 2, 3, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert codec.encode_cell(ColumnType("timestamp"), aware) == b"2024-01-02 02:00:00"


@pytest.mark.parametrize("t,raw", [
    ("date", b"2024-1-2"), ("date", b"2024-13-01"), ("date", b"20240102"), ("time", b"25:00"),
    ("timestamp", b"yesterday"), ("boolean", b"yes"), ("boolean", b"1"), ("decimal", b"1e"),
    ("decimal", b"NaN"), ("date binary", b"\x00" * 4), ("boolean binary", b""),
    ("timestamp binary", b"\x00" * 9), ("decimal binary", b"\x00\x00\x00\x01"),
])
def test_bad_cells(t, raw):
    with pytest.raises(ValueTypeError):
        codec.validate_cell(type_from_name(t), raw)


@pytest.mark.parametrize("t,raw", [
    # past the exponents keys are computed within (+-999999) or a text writes (9 digits)
    ("decimal", b"1e9999999"), ("decimal", b"-1.5e-9999999"), ("decimal(10,2)", b"1e1000000000"),
    ("decimal binary", b"\x7f\xff\xff\xff\x01"), ("decimal binary", b"\x80\x00\x00\x00\x01"),
    ("decimal binary", b"\xff\xf0\xbd\xc0\x01"),  # 1E+1000000
    # a UTC offset that takes the time past year 1 or 9999
    ("timestamp", b"0001-01-01T00:00+01:00"), ("timestamp", b"9999-12-31 23:30-01:00"),
])
def test_out_of_range_cells_are_bad_cells_not_crashes(t, raw):
    """Another writer's cell out of range has no key: indexes take it as NULL (IndexSpec.
    cells_key), the coprocessor's Java codec too; it used to escape as decimal.Overflow,
    decimal.InvalidOperation or OverflowError."""
    with pytest.raises(ValueTypeError):
        codec.cell_key(type_from_name(t), raw)


def test_tiny_decimal_cells_round_to_zero_only_at_a_declared_scale():
    assert codec.cell_key(type_from_name("decimal(10,2)"), b"-1e-999999999") == b"\x80"
    assert codec.cell_key(type_from_name("decimal"), b"0e999999999") == b"\x80"
    # exact below the context's smallest normal exponent: still keyed
    assert codec.cell_key(type_from_name("decimal binary"), b"\x00\x0f\x42\x40\x01") == \
        bytes.fromhex("817ff0bdc10200")


@pytest.mark.parametrize("t,value", [
    ("date", TS(2024, 1, 2, 3)), ("date", 20240102), ("time binary", T(1, 2, 3, 4)),
    ("decimal(4,2)", Decimal("123.4")), ("decimal", float("nan")), ("boolean", 1),
])
def test_values_refused(t, value):
    with pytest.raises(ValueTypeError):
        codec.encode_cell(type_from_name(t), value)


def test_decimal_keys_are_exact_and_ordered():
    """Keys are the exact value, not rounded to a column's scale: a literal between two stored
    values (x > 2.555 on DECIMAL(10,2)) keeps its place in the order."""
    t = type_from_name("decimal(10,2)")
    vals = [Decimal(v) for v in ["-100", "-2.56", "-2.555", "-0.5", "0", "0.001", "2.55",
                                 "2.555", "2.56", "10", "100.5"]]
    keys = [codec.encode_key(t, v) for v in vals]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert codec.encode_key(t, Decimal("1.0")) == codec.encode_key(t, Decimal("1.00"))
    assert codec.encode_key(t, 3) == codec.encode_key(t, Decimal(3))


# -- SQL -----------------------------------------------------------------------------------------

def _ev(db, name: str = "ev"):
    """Table `name`: rows a, b, c of dates, times, timestamps, decimals and booleans."""
    db.sql(f"CREATE TABLE {name} (k VARCHAR PRIMARY KEY, e.d DATE, e.t TIME, e.ts TIMESTAMP, "
           "e.amt DECIMAL(10,2), e.ok BOOLEAN)")
    db.sql(f"UPSERT INTO {name} VALUES ('a', DATE '2024-01-02', TIME '12:30:00', "
           "TIMESTAMP '2024-01-02 12:30:00.123', 12.5, TRUE)")
    db.sql(f"UPSERT INTO {name} VALUES (?, ?, ?, ?, ?, ?)",
           ("b", D(2023, 5, 6), T(1, 2, 3), TS(2023, 5, 6, 1, 2, 3), Decimal("3.14159"), False))
    db.sql(f"UPSERT INTO {name} VALUES ('c', '2025-12-31', '23:59:59', '2025-12-31 23:59:59', "
           "-7, false)")
    return db


@pytest.fixture
def ev(db):
    """Table ev in the test's own store (for a test that adds an index)."""
    return _ev(db)


@pytest.fixture(scope="module")
def read_ev(module_db):
    """Table ev, and evi (the same rows, an index on each column), one per module and backend,
    for the tests that only read them."""
    _ev(module_db)
    _ev(module_db, "evi")
    for col in ("e.d", "e.ts", "e.t", "e.amt", "e.ok"):
        module_db.sql(f"CREATE INDEX IF NOT EXISTS i_{col[2:]} ON evi ({col})")
    return module_db


def keys_of(rows) -> list:
    return sorted(r[0] if isinstance(r[0], str) else r[0].decode() for r in rows)


def test_values_read_back_as_python_types(read_ev):
    ev = read_ev
    rows = dict(ev.sql("SELECT * FROM ev"))
    assert rows["a"] == {b"e:d": D(2024, 1, 2), b"e:t": T(12, 30), b"e:ts":
                          TS(2024, 1, 2, 12, 30, 0, 123000), b"e:amt": Decimal("12.50"),
                          b"e:ok": True}
    assert rows["b"][b"e:amt"] == Decimal("3.14")  # rounded to the declared scale
    assert rows["c"][b"e:ok"] is False


@pytest.mark.parametrize("where,expected", [
    ("e.d > DATE '2024-01-01'", ["a", "c"]),
    ("e.d > '2024-01-01'", ["a", "c"]),
    ("e.d BETWEEN DATE '2023-01-01' AND DATE '2024-12-31'", ["a", "b"]),
    ("e.ts >= TIMESTAMP '2024-01-02 12:30:00.123'", ["a", "c"]),
    ("e.ts < DATE '2024-01-02'", ["b"]),
    ("e.t < TIME '12:30:00'", ["b"]),
    ("e.ok = TRUE", ["a"]), ("e.ok", ["a"]), ("NOT e.ok", ["b", "c"]),
    ("e.amt > 3.14", ["a"]), ("e.amt > 3.135", ["a", "b"]), ("e.amt IN (12.5, -7)", ["a", "c"]),
])
def test_comparisons_with_and_without_indexes(read_ev, where, expected):
    assert keys_of(read_ev.sql(f"SELECT k FROM ev WHERE {where}")) == expected
    assert keys_of(read_ev.sql(f"SELECT k FROM evi WHERE {where}")) == expected  # indexed


def test_an_index_on_a_date_answers_a_range(ev):
    ev.sql("CREATE INDEX by_d ON ev (e.d)")
    plan = "\n".join(r[0] for r in ev.sql(
        "EXPLAIN SELECT k FROM ev WHERE e.d >= DATE '2024-01-01' AND e.d < DATE '2025-01-01'"))
    assert "INDEX by_d" in plan and "ENGINE" not in plan
    assert keys_of(ev.sql("SELECT k FROM ev WHERE e.d >= DATE '2024-01-01' "
                          "AND e.d < DATE '2025-01-01'")) == ["a"]
    assert ev.sql("SELECT MIN(e.d), MAX(e.d) FROM ev") == [(D(2023, 5, 6), D(2025, 12, 31))]


def test_aggregates_and_order(read_ev):
    ev = read_ev
    assert ev.sql("SELECT SUM(e.amt), MAX(e.ts), COUNT(e.ok) FROM ev") == \
        [(Decimal("8.64"), TS(2025, 12, 31, 23, 59, 59), 3)]
    assert [k for k, _ in ev.sql("SELECT k, e.d FROM ev ORDER BY e.d DESC")] == \
        ["c", "a", "b"]
    assert sorted(ev.sql("SELECT e.ok, COUNT(*) FROM ev GROUP BY e.ok")) == [(False, 2),
                                                                              (True, 1)]


def test_cast_to_and_from_the_new_types(read_ev):
    ev = read_ev
    got = dict(ev.sql("SELECT k, CAST(e.d AS VARCHAR), CAST(e.amt AS DOUBLE), "
                      "CAST(e.ok AS INTEGER), CAST(e.ts AS DATE) FROM ev WHERE k = 'a'"))
    assert got["a"] == {b"CAST(e:d AS VARCHAR)": "2024-01-02",
                         b"CAST(e:amt AS DOUBLE)": 12.5, b"CAST(e:ok AS INTEGER)": 1,
                         b"CAST(e:ts AS DATE)": D(2024, 1, 2)}
    assert keys_of(ev.sql("SELECT k FROM ev WHERE CAST(e.ts AS DATE) = DATE '2024-01-02'")) \
        == ["a"]


def test_date_functions_run_on_the_engine(read_ev):
    ev = read_ev
    row = ev.sql("SELECT EXTRACT(YEAR FROM e.d), TO_DATE('2024-02-03'), "
                 "TO_DATE('03/02/2024 10:11', 'dd/MM/yyyy HH:mm'), "
                 "TO_TIMESTAMP('2024-01-02 03:04:05'), CURRENT_DATE, e.amt * 2 "
                 "FROM ev WHERE k = 'a'")[0]
    assert row[:4] == (2024, D(2024, 2, 3), D(2024, 2, 3), TS(2024, 1, 2, 3, 4, 5))
    assert isinstance(row[4], D) and row[5] == Decimal("25.00")
    assert keys_of(ev.sql("SELECT k FROM ev WHERE e.d < CURRENT_DATE AND "
                          "EXTRACT(MONTH FROM e.ts) = 5")) == ["b"]


@pytest.mark.parametrize("sql,error", [
    ("SELECT k FROM ev WHERE e.d", ValueTypeError),  # only a BOOLEAN column is a condition
    ("SELECT k FROM ev WHERE e.d > DATE '2024-13-01'", QuerySyntaxError),
    ("SELECT k FROM ev WHERE e.d = 3", ValueTypeError),
    ("UPSERT INTO ev (k, e.amt) VALUES ('x', 123456789.5)", ValueTypeError),
    ("UPSERT INTO ev (k, e.ok) VALUES ('x', 'maybe')", ValueTypeError),
])
def test_refusals(read_ev, sql, error):
    ev = read_ev
    with pytest.raises(error):
        ev.sql(sql)


# -- DB-API, SQLAlchemy, pandas -----------------------------------------------------------------

def test_dbapi_binds_and_describes_the_new_types(tmp_path):
    import hibase.dbapi as api
    with api.connect(str(tmp_path)) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (k VARCHAR PRIMARY KEY, f.d DATE, f.ts TIMESTAMP, "
                    "f.n NUMERIC(8,3), f.b BOOLEAN, f.s VARCHAR)")
        cur.execute("UPSERT INTO t VALUES (?, ?, ?, ?, ?, ?)",
                    ("x", api.Date(2002, 12, 25), api.Timestamp(2002, 12, 25, 13, 45, 30),
                     Decimal("1.5"), True, api.Date(2002, 12, 25)))
        cur.execute("SELECT f.d, f.ts, f.n, f.b, f.s FROM t WHERE f.d = ? AND f.b = ?",
                    (api.Date(2002, 12, 25), True))
        assert cur.fetchall() == [(D(2002, 12, 25), TS(2002, 12, 25, 13, 45, 30),
                                   Decimal("1.500"), True, "2002-12-25")]
        codes = [d[1] for d in cur.description]
        assert codes[0] == api.DATETIME and codes[1] == api.DATETIME
        assert codes[2] == api.NUMBER and codes[4] == api.STRING


def test_pandas_to_sql_read_sql_round_trip(tmp_path):
    """The issue's Done-when line: a frame with datetime, Decimal, bool and nullable integer
    columns written by to_sql and read back by read_sql is equal to itself. pandas makes an
    object column of Decimals TEXT unless told (dtype=Numeric), as for any database; read_sql
    gives a nullable integer column back as float unless told (dtype="Int64") and Decimals as
    floats unless told (coerce_float=False)."""
    import pandas as pd  # dependencies of hibase (pandas) and of its dev extras: a missing
    import sqlalchemy as sa  # one fails the test, it does not skip it
    engine = sa.create_engine(f"hibase:///{tmp_path}")
    frame = pd.DataFrame({
        "ts": pd.to_datetime(["2024-01-02 03:04:05", "2023-05-06 07:08:09.123456", None],
                             format="ISO8601"),
        "day": [D(2024, 1, 2), D(1999, 12, 31), None],
        "amt": [Decimal("1.50"), Decimal("-2.25"), None],
        "ok": [True, False, True],
        "n": pd.array([1, None, 3], dtype="Int64"),
        "name": ["a", "b", None],
    })
    frame.to_sql("frame", engine, index=False, dtype={"amt": sa.Numeric(10, 2)})
    back = pd.read_sql("SELECT * FROM frame", engine, dtype={"n": "Int64"}, coerce_float=False)
    back = back.sort_values("name", na_position="last").reset_index(drop=True)
    pd.testing.assert_frame_equal(back, frame)
    columns = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns("frame")}
    assert isinstance(columns["ts"], sa.TIMESTAMP) and isinstance(columns["ok"], sa.BOOLEAN)
    assert isinstance(columns["amt"], sa.DECIMAL) and columns["amt"].scale == 2
    assert isinstance(columns["day"], sa.DATE)


# -- load --create detection ----------------------------------------------------------------------

def test_load_create_detects_dates_timestamps_and_booleans(tmp_path):
    import subprocess
    import sys

    import hibase
    csv = tmp_path / "in.csv"
    csv.write_text("id,day,at,flag,n,word\n"
                   "a,2024-01-02,2024-01-02 13:45:00,true,1,x\n"
                   "b,2023-12-31,2023-12-31,FALSE,2,2024-01-02\n")
    store = tmp_path / "store"
    out = subprocess.run([sys.executable, "-m", "hibase", "load", str(store), "t", str(csv),
                          "--create", "--family", "f", "--rowkey", "{id}"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    db = hibase.connect(str(store))
    try:
        types = {c.decode(): str(t) for c, t in db.table("t").schema.columns.items()}
        assert {k.split(":")[1]: v for k, v in types.items()} == {
            "id": "string", "day": "date", "at": "timestamp", "flag": "boolean", "n": "long", "word": "string"}
        assert sorted(db.sql("SELECT ROWKEY FROM t WHERE f.day > DATE '2024-01-01'")) == \
            [(b"a", {})]
    finally:
        db.close()
