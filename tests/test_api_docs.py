"""The public API is documented where users read it (help(), the API reference the docs site
builds from the docstrings, docs/api.md): every public method of Connection, Table and Batch has a docstring, and the query
entry points name each of their arguments."""

from __future__ import annotations

import inspect

import pytest

import hibase
from hibase.connection import Connection
from hibase.table import Batch, Table


def _public(cls):
    for name, member in inspect.getmembers(cls, callable):
        if not name.startswith("_"):
            yield f"{cls.__name__}.{name}", member


@pytest.mark.parametrize("name,member", [*_public(Connection), *_public(Table), *_public(Batch),
                                         ("hibase.connect", hibase.connect)])
def test_public_callables_have_docstrings(name, member):
    doc = inspect.getdoc(member)
    assert doc and len(doc) > 20, f"{name} has no docstring"


@pytest.mark.parametrize("fn", [Table.where, Table.explain, Connection.sql, Connection.mutate,
                                Connection.read_modify_write, hibase.connect])
def test_query_entry_points_name_every_argument(fn):
    doc = inspect.getdoc(fn)
    missing = [p for p in inspect.signature(fn).parameters
               if p not in ("self", "options") and p not in doc]
    assert not missing, f"{fn.__qualname__}'s docstring does not mention {missing}"
