"""docs/sql.md, the SQL reference, holds what the grammar accepts: every ```sql block under
"## Statements" runs, in order, on one fresh embedded store, and every block under
"## Not supported" fails with a one-line HibaseError (nothing else escapes). A statement form
that starts (or stops) working makes this fail until the reference says so."""

from __future__ import annotations

import pathlib
import re
import warnings

import pytest

import hibase
from hibase.errors import HibaseError

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "sql.md"


def _blocks(section: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end >= 0 else None]
    return [" ".join(b.split()) for b in re.findall(r"```sql\n(.*?)```", body, re.S)]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conn = hibase.connect(str(tmp_path_factory.mktemp("sqlref") / "s"))
        for stmt in _blocks("Statements"):
            conn.sql(stmt)  # the setup of the failures below, and a check of its own
        yield conn
        conn.close()


def test_the_reference_has_examples():
    assert len(_blocks("Statements")) >= 40 and len(_blocks("Not supported")) >= 10


def test_every_statement_form_runs_in_order(db):
    assert set(db.tables()) >= {b"people", b"cities", b"kinds"}  # the fixture ran them all


@pytest.mark.parametrize("stmt", _blocks("Not supported"))
def test_every_unsupported_form_is_a_one_line_error(db, stmt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(HibaseError) as e:
            db.sql(stmt)
    assert "\n" not in str(e.value)
