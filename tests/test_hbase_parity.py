"""The happybase Table API tests (test_happybase_api.py, every one of them), the store tests
that are not about the embedded store's own layout (segments, folding, splits, its folder) and
the hot-cache tests (test_cache_layer.py, on memory and Redis) run again here on the HBase
backend: `db` is a thrift:// connection to a gateway over a fresh embedded store, and the cache
tests' hibase.connect(folder) opens a gateway over that folder and connects to it. (The same
tests run on the embedded backend in their own modules.)"""

from __future__ import annotations

import pytest

import hibase
import test_cache_layer
from hibase.server.thrift import ThriftServer

from test_happybase_api import *  # noqa: F401,F403  (collected again with the fixture below)
from test_cache_layer import (  # noqa: F401
    cache_spec,
    redis_server,
    test_a_set_emptied_by_writes_stays_exact,
    test_default_is_memory_hotscore,
    test_fill_racing_a_write_is_not_stored,
    test_hits_answer_without_the_store,
    test_hotscore_keeps_hot_sets_that_lru_loses,
    test_index_drop_and_rebuild_invalidate,
    test_no_cache,
    test_policy_choice,
    test_range_walk_is_answered_per_value,
    test_threads_writing_and_querying_agree_with_the_oracle,
    test_writes_patch_cached_sets,
)
from test_store import (  # noqa: F401
    test_max_versions_per_family,
    test_store_matches_reference_model,
    test_ttl_with_explicit_old_timestamps,
)


@pytest.fixture
def db(tmp_path):
    """A Connection to the HBase backend: thrift:// to a gateway over a tmp embedded store."""
    gateway_db = hibase.connect(str(tmp_path / "gateway"))
    server = ThriftServer(gateway_db, port=0).__enter__()
    conn = hibase.connect("thrift://%s:%d?timeout=10000" % server.address)
    assert type(conn.store).__name__ == "HBaseStore"
    try:
        yield conn
    finally:
        conn.close()
        server.__exit__(None, None, None)
        gateway_db.close()


class _ThriftHibase:
    """Stands in for the hibase module in test_cache_layer: connect(folder, **options) serves
    the folder through a gateway and returns a thrift:// connection to it."""

    def __init__(self):
        self.servers: list = []

    def __getattr__(self, name):
        return getattr(hibase, name)

    def connect(self, path, **options):
        gateway_db = hibase.connect(str(path) + "-gateway")
        server = ThriftServer(gateway_db, port=0).__enter__()
        self.servers.append((server, gateway_db))
        conn = hibase.connect("thrift://%s:%d?timeout=10000" % server.address, **options)
        assert type(conn.store).__name__ == "HBaseStore"
        return conn

    def close(self):
        for server, gateway_db in self.servers:
            server.__exit__(None, None, None)
            gateway_db.close()


@pytest.fixture(autouse=True)
def cache_tests_on_thrift(monkeypatch):
    shim = _ThriftHibase()
    monkeypatch.setattr(test_cache_layer, "hibase", shim)
    try:
        yield
    finally:
        shim.close()
