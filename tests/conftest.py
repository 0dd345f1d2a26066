"""Shared fixtures: one suite, two backends.

A test that takes `backend`, `db` or `table` runs twice, ids [embedded] and [thrift]:

- backend   a backends.Backend: `backend.connect(**options)` opens a (further) connection with
            connect() options (cache=..., table_prefix=...); `backend.url` is what
            hibase.connect() and the CLI take; `backend.kind` says which backend.
            Regions, split on the server side as HBase does: `backend.split(table, row)`, and
            `backend.create_table(db, name, families, columns=, split_size=)` (on thrift the
            gateway's table gets the split_size too); `backend.gateway_db` is the gateway's own
            embedded Connection on thrift (None when embedded), `backend.address` its port.
            Embedded: close a connection before opening the next (StoreLocked otherwise);
            thrift: reconnecting reaches the same gateway, whose store persists.
- db        backend.connect(): an empty store.
- table     table "t" on db, families f (3 versions) and g (max_versions=1).
- thrift_backend   a thrift-only Backend, for what only the HBase backend has.

`@pytest.mark.thrift_xfail("reason")` marks only the [thrift] run xfail(strict=True): a known
backend bug or limitation, found again (XPASS fails) once it is fixed.

Tests about the embedded store itself (its folder, row segments, RocksDB's WAL and lock,
read-only opens, splits by size) take `embedded_db` / `db_path` instead: not backend tests, so not
parametrized.
"""

from __future__ import annotations

import pytest

import hibase
from backends import KINDS, Backend


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "thrift_xfail(reason): xfail(strict=True) on the [thrift] backend only")


def pytest_generate_tests(metafunc):
    if "backend" not in metafunc.fixturenames:
        return
    xfail = metafunc.definition.get_closest_marker("thrift_xfail")
    params = []
    for kind in KINDS:
        marks = ()
        if kind == "thrift" and xfail is not None:
            marks = pytest.mark.xfail(strict=True, reason=xfail.args[0])
        params.append(pytest.param(kind, marks=marks, id=kind))
    metafunc.parametrize("backend", params, indirect=True)


@pytest.fixture
def backend(request, tmp_path):
    """The test's store on the backend of this run (see the module docstring)."""
    b = Backend(request.param, tmp_path / "store")
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def thrift_backend(tmp_path):
    """A thrift-only Backend (a gateway over tmp_path/store)."""
    b = Backend("thrift", tmp_path / "store")
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def db(backend):
    """A Connection to an empty store on the run's backend, closed after the test."""
    return backend.connect()


@pytest.fixture
def table(db):
    """Table b"t" with families f (3 versions, the default) and g (max_versions=1)."""
    db.create_table("t", {"f": {}, "g": {"max_versions": 1}})
    return db.table("t")


@pytest.fixture
def db_path(tmp_path):
    """The folder of the test's embedded store (for tests that reopen it or open it from a
    subprocess)."""
    return str(tmp_path / "store")


@pytest.fixture
def embedded_db(db_path):
    """A Connection to an empty embedded store in db_path, closed after the test."""
    conn = hibase.connect(db_path)
    try:
        yield conn
    finally:
        conn.close()


def pytest_terminal_summary(terminalreporter):
    """The torture tests' counts (test_torture.py records them as the "torture" property), shown
    whether or not -s is given."""
    lines = [f"{r.nodeid}: {value}" for outcome in ("passed", "failed")
             for r in terminalreporter.stats.get(outcome, [])
             if getattr(r, "when", None) == "call"
             for key, value in getattr(r, "user_properties", ()) if key == "torture"]
    if lines:
        terminalreporter.write_sep("-", "torture counts")
        for line in lines:
            terminalreporter.write_line(line)
