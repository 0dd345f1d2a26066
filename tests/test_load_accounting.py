"""Issue 36: a load accounts for every record it reads. An unclosed quote rejects its own line
and the records after it still load; repeated rowkeys are counted as replaced (or skipped, or
rejected with --on-duplicate); loaded + rejected + replaced/skipped + without values = records
read, checked against Python's csv module on random files. Embedded store only."""

from __future__ import annotations

import csv
import io
import re
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings, strategies as st

import hibase
from hibase.cli import cli
from hibase.load import LoadError, load_file

SUMMARY = re.compile(r"Rows loaded: (\d+), rejected: (\d+), (replaced|skipped): (\d+)"
                     r"(?:, (\d+) without values)? \((\d+) records read\)")


def run(*args, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr,
                                      result.exception)
    return result


def counts(stderr: str) -> dict:
    """The summary's counts, from the CLI's stderr."""
    m = SUMMARY.search(stderr)
    assert m, stderr
    loaded, rejected, which, again, empty, records = m.groups()
    return {"rows": int(loaded), "rejected": int(rejected), which: int(again),
            "empty": int(empty or 0), "records": int(records)}


def table_rows(store: Path, table: str = "t") -> dict:
    db = hibase.connect(str(store))
    try:
        return dict(db.table(table).scan())
    finally:
        db.close()


def new_table(store: Path, table: str = "t", rows: dict | None = None) -> None:
    db = hibase.connect(str(store))
    try:
        db.create_table(table, {"f": {}})
        for row, data in (rows or {}).items():
            db.table(table).put(row, data)
    finally:
        db.close()


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


# -- problem 3: an unclosed quote ---------------------------------------------------------------

ELEVEN = ["0,a,10,x", "1,b,20,x", "2,c,25,x", '3,"unterminated,30,x', "4,d,40,x", "5,e,50,x",
          "6,f,60,x", "7,g,70,x", '8,"h",80,x', "9,i,90,x", "10,j,100,x"]


def test_unclosed_quote_rejects_its_line_and_the_rest_loads_cli(tmp_path):
    """The user's case: 11 records, the 4th with an unclosed quote: 10 load, line 5 (where
    the quote opened) is the one rejected, 11 records are read (today 5 records vanish)."""
    path = write(tmp_path / "in.csv", "id,name,age,x\n" + "\n".join(ELEVEN) + "\n")
    store = tmp_path / "d"
    new_table(store)
    result = run("load", store, "t", path, "--rowkey-column", "id", code=1)
    assert counts(result.stderr) == {"rows": 10, "rejected": 1, "replaced": 0, "empty": 0,
                                     "records": 11}
    assert "line 5: a quoted field opened on line 5 does not close" in result.stderr
    assert "reading goes on at line 6" in result.stderr
    rows = table_rows(store)
    assert sorted(rows) == sorted(str(i).encode() for i in range(11) if i != 3)
    assert rows[b"8"] == {b"f:name": b"h", b"f:age": b"80", b"f:x": b"x"}


def test_unclosed_quote_running_to_the_end_of_the_file_api(tmp_path):
    """No later quote at all: csv swallows the rest of the file into one field; the load
    rejects only the line where the quote opened and says it runs on to the end."""
    lines = [ln.replace('"h"', "h") for ln in ELEVEN]
    path = write(tmp_path / "in.csv", "id,name,age,x\n" + "\n".join(lines) + "\n")
    store = tmp_path / "d"
    new_table(store)
    db = hibase.connect(str(store))
    try:
        stats = load_file(db.table("t"), str(path), rowkey_column="id")
        assert (stats["records"], stats["rows"], stats["rejected"], stats["replaced"]) == \
            (11, 10, 1, 0)
        [(line, message)] = stats["errors"]
        assert line == 5 and "runs on to the end of the file (line 12)" in message
        assert len(list(db.table("t").scan())) == 10
        with pytest.raises(LoadError, match="line 5: a quoted field opened on line 5"):
            load_file(db.table("t"), str(path), rowkey_column="id", strict=True)
    finally:
        db.close()


def test_quoted_fields_with_line_breaks_still_load(tmp_path):
    """A quoted field that holds line breaks and closes properly is one record, as csv reads
    it: the run-on rule leaves it alone."""
    path = write(tmp_path / "in.csv", 'id,note\n1,"two\nlines"\n2,"a ""quote""\r\nand, more"\n')
    store = tmp_path / "d"
    new_table(store)
    result = run("load", store, "t", path, "--rowkey-column", "id")
    assert counts(result.stderr) == {"rows": 2, "rejected": 0, "replaced": 0, "empty": 0,
                                     "records": 2}
    assert table_rows(store) == {b"1": {b"f:note": b"two\nlines"},
                                 b"2": {b"f:note": b'a "quote"\r\nand, more'}}


# -- problem 4: repeated rowkeys ------------------------------------------------------------------

PASSENGERS = [("Kelly, Mr. James", "34"), ("Wilkes, Mrs. James", "47"),
              ("Kelly, Mr. James", "44"), ("Connolly, Miss Kate", "30"),
              ("Myles, Mr. Thomas", "62"), ("Connolly, Miss Kate", "22"),
              ("Kelly, Mr. James", ""), ("Hirvonen, Mrs. Alexander", "22"),
              ("Svensson, Mr. Johan", "74"), ("Wirz, Mr. Albert", "27")]


def test_repeated_rowkey_column_is_counted_as_replaced_cli(tmp_path):
    """Titanic with --rowkey-column name: 10 records, 7 names: 'Rows loaded: 7, replaced: 3'
    and COUNT(*) says 7 (today: 'Rows loaded: 10'); the last record of a name wins whole."""
    path = tmp_path / "titanic.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([("name", "age", "class")] +
                                 [(n, a, str(i % 3 + 1)) for i, (n, a) in enumerate(PASSENGERS)])
    store = tmp_path / "d"
    result = run("load", store, "t", path, "--rowkey-column", "name", "-f", "f", "--create",
                 "--no-detect")
    assert counts(result.stderr) == {"rows": 7, "rejected": 0, "replaced": 3, "empty": 0,
                                     "records": 10}
    assert "3 row(s) replaced an earlier row with the same rowkey" in result.stderr
    db = hibase.connect(str(store))
    try:
        assert db.sql("SELECT COUNT(*) FROM t") == [(7,)]
        # the third 'Kelly, Mr. James' has no age: the row is that record, not a mix
        assert db.table("t").row(b"Kelly, Mr. James") == {b"f:class": b"1"}
    finally:
        db.close()


def test_repeated_template_rowkey_is_counted_api(tmp_path):
    """Penguins with rowkey '{studyName}:{Sample Number}': the numbers restart per study
    but repeat within one; stats count the repeats (replaced, or skipped keeping the first)."""
    rows = ["studyName,Sample Number,Species"]
    rows += [f"PAL0708,{n},Adelie" for n in (1, 2, 3)]
    rows += [f"PAL0809,{n},Gentoo" for n in (1, 2)]
    rows += [f"PAL0708,{n},Chinstrap" for n in (1, 2)]
    path = write(tmp_path / "penguins.csv", "\n".join(rows) + "\n")
    for mode, count, species in [("replace", "replaced", b"Chinstrap"),
                                 ("skip", "skipped", b"Adelie")]:
        store = tmp_path / mode
        new_table(store)
        db = hibase.connect(str(store))
        try:
            stats = load_file(db.table("t"), str(path), rowkey="{studyName}:{Sample Number}",
                              on_duplicate=mode)
            assert (stats["rows"], stats[count], stats["rejected"], stats["records"]) == \
                (5, 2, 0, 7)
            assert db.sql("SELECT COUNT(*) FROM t") == [(5,)]
            assert db.table("t").row(b"PAL0708:1")[b"f:Species"] == species
        finally:
            db.close()


def test_on_duplicate_error_rejects_the_repeat_naming_the_first_line_cli(tmp_path):
    """--on-duplicate error: the repeat is a rejected row (exit 1) naming where the rowkey
    was first read; the first record stays. With --strict the load stops at it."""
    path = write(tmp_path / "in.csv", "id,v\na,1\nb,2\na,3\nc,4\n")
    store = tmp_path / "d"
    new_table(store)
    result = run("load", store, "t", path, "--rowkey-column", "id", "--on-duplicate", "error",
                 code=1)
    assert "line 4: rowkey 'a' repeats line 2 (--on-duplicate error)" in result.stderr
    assert counts(result.stderr) == {"rows": 3, "rejected": 1, "replaced": 0, "empty": 0,
                                     "records": 4}
    assert table_rows(store)[b"a"] == {b"f:v": b"1"}
    store2 = tmp_path / "d2"
    new_table(store2)
    result = run("load", store2, "t", path, "--rowkey-column", "id", "--on-duplicate", "error",
                 "--strict", code=1)
    assert "stopped at the bad row" in result.stderr
    assert sorted(table_rows(store2)) == [b"a", b"b"]  # every row before it, nothing after


def test_rows_already_in_the_table_count_as_replaced_api(tmp_path):
    """A rowkey already in the table before the load counts as replaced (or skipped); the
    replaced row's cells in the loaded columns are the record's, other columns stay.
    batch_size=1 makes every batch ask the table (the table was not empty)."""
    store = tmp_path / "d"
    new_table(store, rows={b"a": {b"f:v": b"old", b"f:w": b"old", b"f:other": b"kept"},
                           b"z": {b"f:v": b"untouched"}})
    path = write(tmp_path / "in.csv", "id,v,w\na,new,\nb,1,2\nb,3,4\nc,5,6\n")
    db = hibase.connect(str(store))
    try:
        t = db.table("t")
        stats = load_file(t, str(path), rowkey_column="id", batch_size=1, on_duplicate="skip")
        assert (stats["rows"], stats["skipped"], stats["replaced"], stats["records"]) == \
            (2, 2, 0, 4)
        assert t.row(b"a") == {b"f:v": b"old", b"f:w": b"old", b"f:other": b"kept"}
        assert t.row(b"b") == {b"f:v": b"1", b"f:w": b"2"}
        stats = load_file(t, str(path), rowkey_column="id", batch_size=1)
        assert (stats["rows"], stats["replaced"], stats["records"]) == (0, 4, 4)
        assert t.row(b"a") == {b"f:v": b"new", b"f:other": b"kept"}
        assert t.row(b"b") == {b"f:v": b"3", b"f:w": b"4"}
        assert t.row(b"z") == {b"f:v": b"untouched"}
    finally:
        db.close()


def test_jsonl_and_row_numbers_repeat_too_api(tmp_path):
    """JSON lines count repeats the same way; --rowkey-auto row loaded twice replaces the same
    rows (its doc's promise), which the second load's stats now say."""
    path = write(tmp_path / "in.jsonl", '{"id": "a", "v": 1}\n\n{"id": "a", "v": 2}\n'
                                        '{"id": "b", "v": null}\n')
    store = tmp_path / "d"
    new_table(store)
    db = hibase.connect(str(store))
    try:
        t = db.table("t")
        stats = load_file(t, str(path), rowkey_column="id")
        assert (stats["records"], stats["rows"], stats["replaced"], stats["empty"]) == \
            (3, 1, 1, 1)
        assert t.row(b"a") == {b"f:v": b"2"}
        csv_path = write(tmp_path / "n.csv", "v\nx\ny\n")
        db.create_table("n", {"f": {}})
        first = load_file(db.table("n"), str(csv_path), rowkey_auto="row")
        again = load_file(db.table("n"), str(csv_path), rowkey_auto="row")
        assert (first["rows"], first["replaced"]) == (2, 0)
        assert (again["rows"], again["replaced"]) == (0, 2)
    finally:
        db.close()


def test_bulk_prints_the_counts_before_the_timings(tmp_path):
    """With --bulk the last line keeps the load / rebuild timings; the counts come just
    before it."""
    path = write(tmp_path / "in.csv", "id,v\na,1\na,2\n")
    store = tmp_path / "d"
    db = hibase.connect(str(store))
    try:
        db.create_table("t", {"f": {}}, columns={"f:v": "string"})
        db.create_index("t", "by_v", ["f:v"])
    finally:
        db.close()
    result = run("load", store, "t", path, "--rowkey-column", "id", "--bulk")
    lines = result.stderr.strip().splitlines()
    assert lines[-2] == "Rows loaded: 1, rejected: 0, replaced: 1 (2 records read)."
    assert lines[-1].startswith("Rows loaded: 1, rejected: 0, ") and "index rebuild" in lines[-1]
    db = hibase.connect(str(store))
    try:
        assert db.sql("SELECT * FROM t WHERE f.v = '2'") == [(b"a", {b"f:v": "2"})]
        assert db.sql("SELECT * FROM t WHERE f.v = '1'") == []
    finally:
        db.close()


# -- fuzz: random CSVs against Python's csv module ------------------------------------------------

def csv_records(text: str) -> tuple[list[tuple[int, list[str] | None]], bool]:
    """The records of a CSV file after its header as load.py's doc defines them, with csv:
    (first line, fields, or None for a line rejected unread), and whether a run-on quote was
    met. Lines end at \\n (as a file read in binary); a record csv reads over several lines
    without error that does not also read in csv's strict mode is a run-on quote: its first
    line is rejected and reading starts again at the next line."""
    lines = re.findall(r"[^\n]*\n|[^\n]+\Z", text.removeprefix("\ufeff"))
    out: list[tuple[int, list[str] | None]] = []
    run_on, i = False, 1
    while i < len(lines):
        reader = csv.reader(lines[i:])
        try:
            fields, error = next(reader), None
        except StopIteration:
            break
        except csv.Error as exc:
            fields, error = None, exc
        n = reader.line_num
        if n > 1 and error is None:
            try:
                list(csv.reader(lines[i:i + n], strict=True))
            except csv.Error:
                out.append((i + 1, None))
                run_on, i = True, i + 1
                continue
        if error is not None or fields:
            out.append((i + 1, None if error is not None else fields))
        i += n
    return out, run_on


KEYS = st.sampled_from(["", "k1", "k2", 'q"3', "k,4", "k\n5"])
VALUES = st.one_of(st.text(alphabet='ab ,"\n', max_size=5), st.sampled_from(["\r", "a\r\nb"]))
ROW = st.tuples(st.just("row"), KEYS,
                st.tuples(st.text(alphabet='ab ,"\n', min_size=1, max_size=3), VALUES).map(list))
RECORD = st.one_of(
    ROW, ROW, ROW,  # mostly well-formed rows, so that keys repeat
    st.tuples(st.just("ragged"), KEYS, st.lists(VALUES, min_size=0, max_size=4)),
    st.tuples(st.just("blank"), st.just(""), st.just([])),
    st.tuples(st.just("raw"), st.text(alphabet='ab, "', max_size=8), st.just([])),
    st.tuples(st.just("unclosed"), KEYS, st.lists(st.text(alphabet="ab ,", max_size=4),
                                                  min_size=1, max_size=2)),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(RECORD, max_size=16), eol=st.sampled_from(["\n", "\r\n"]),
       bom=st.booleans(), last_eol=st.booleans(),
       mode=st.sampled_from(["replace", "skip", "error"]),
       before=st.sampled_from([None, b"zz", b"k1"]))
def test_fuzz_load_accounts_for_every_record_csv_reads(records, eol, bom, last_eol, mode,
                                                       before):
    """Random CSVs (quotes, line breaks in fields, ragged rows, repeated and empty keys,
    unclosed quotes, BOMs, blank lines) through `hibase load`: its counts add up to the records
    csv reads, and the table holds exactly the rows csv's records make (last wins for replace,
    first for skip and error). `before`: a row the table holds before the load (then repeats
    are found by asking the table), whose column f:c the load does not write and keeps."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=eol)
    writer.writerow(["k", "a", "b"])
    for kind, key, values in records:
        if kind in ("row", "ragged"):
            writer.writerow([key, *values])
        elif kind == "blank":
            out.write(eol)
        elif kind == "raw":
            out.write(key + eol)
        else:
            out.write(f'{key},"' + ",".join(values) + eol)
    text = ("\ufeff" if bom else "") + out.getvalue()
    if not last_eol:
        text = text.removesuffix(eol)
    parsed, run_on = csv_records(text)
    event(f"run-on quote: {run_on}")
    if not any(kind in ("raw", "unclosed") for kind, _, _ in records):
        # a file csv.writer wrote: the records are simply those one csv reader reads, line
        # breaks and all (None: one csv cannot read, e.g. a field holding a bare \r, which
        # csv.writer leaves unquoted when lines end in \n)
        reader = csv.reader(re.findall(r"[^\n]*\n|[^\n]+\Z", text.removeprefix("\ufeff")))
        plain: list[list[str] | None] = []
        while True:
            try:
                fields: list[str] | None = next(reader)
            except StopIteration:
                break
            except csv.Error:
                fields = None
            if fields != []:  # a blank line is no record
                plain.append(fields)
        assert not run_on and [f for _, f in parsed] == plain[1:]

    old = {b"f:a": b"old", b"f:c": b"kept"}
    expected: dict[bytes, dict] = {} if before is None else {before: old}
    repeats = 0
    want = {"rows": 0, "rejected": 0, "replaced" if mode != "skip" else "skipped": 0,
            "empty": 0, "records": len(parsed)}
    for _, fields in parsed:
        if fields is None or len(fields) != 3 or not fields[0]:
            want["rejected"] += 1
            continue
        cells = {b"f:" + c: v.encode() for c, v in zip((b"a", b"b"), fields[1:]) if v}
        key = fields[0].encode()
        if not cells:
            want["empty"] += 1
        elif key not in expected:
            want["rows"] += 1
            expected[key] = cells
        else:
            repeats += 1
            if mode == "replace":
                want["replaced"] += 1
                expected[key] = {**cells, **({b"f:c": b"kept"} if key == before else {})}
            else:
                want["skipped" if mode == "skip" else "rejected"] += 1

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "d"
        new_table(store, rows=None if before is None else {before: old})
        path = Path(tmp) / "in.csv"
        path.write_bytes(text.encode())
        result = run("load", store, "t", path, "--rowkey-column", "k", "--on-duplicate", mode,
                     "--batch-size", "3", code=1 if want["rejected"] else 0)
        got = counts(result.stderr)
        assert got == want, (text, result.stderr)
        assert got["records"] == sum(v for k, v in got.items() if k != "records")
        assert table_rows(store) == expected
    event(f"repeated keys: {repeats > 0}")
