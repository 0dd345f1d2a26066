"""Shared fixtures: a fresh embedded store per test, closed afterwards."""

from __future__ import annotations

import pytest

import hibase


@pytest.fixture
def db_path(tmp_path):
    """The folder of the test's store (for tests that reopen it or open it from a subprocess)."""
    return str(tmp_path / "store")


@pytest.fixture
def db(db_path):
    """A Connection to an empty embedded store in tmp_path, closed after the test."""
    conn = hibase.connect(db_path)
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture
def table(db):
    """Table b"t" with families f (3 versions, the default) and g (max_versions=1)."""
    db.create_table("t", {"f": {}, "g": {"max_versions": 1}})
    return db.table("t")
