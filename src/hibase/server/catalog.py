"""The catalog thrift:// clients read, published from an embedded store before it is served.

hibase's HBase backend (thrift:// URLs) keeps its catalog in the HBase table `hibase_meta`
(rows `table/<name>` holding each table's schema: families, declared column types). An embedded
store made with the command line or `hibase.connect(folder)` keeps its catalog inside RocksDB, so
a gateway serving it showed the tables to happybase but not to hibase clients ("no hibase
catalog"). `publish_catalog(db)` writes (or brings up to date) that table in the served store
from the embedded catalog: every table with its families and declared types. Rows written by
thrift:// clients stay (a table they made keeps the column types they declared); tables dropped
since are removed.

Indexes made on the folder are not published: the gateway keeps them exact on every write it
serves, but thrift:// clients keep their indexes in their own tables (`hibase_kv...`), so they
query such a table by scanning until an index is created through the thrift:// URL.
"""

from __future__ import annotations

import json
from typing import Any

from ..store.hbase.kv import META_COL, KV_PREFIX, META_TABLE

__all__ = ["publish_catalog", "is_catalog_table"]


def is_catalog_table(name: str) -> bool:
    """Whether `name` is one of the tables the HBase backend keeps for itself (its catalog,
    index and routing tables) rather than a user's."""
    return name == META_TABLE or name.startswith(KV_PREFIX)


def publish_catalog(db: Any) -> list[str]:
    """Write `hibase_meta` in the embedded store of Connection `db` (opened for writing) from
    its own catalog, as described above; returns the names of the tables published."""
    store = db.store
    names = [n for n in store.tables() if not is_catalog_table(n)]
    if META_TABLE not in store.tables():
        if not names:
            return []  # an empty store: the first thrift:// client makes the catalog
        db.create_table(META_TABLE, {"m": {"max_versions": 1}})
    meta = db.table(META_TABLE)
    known = {key[len(b"table/"):].decode(): value.get(META_COL, b"")
             for key, value in meta.scan(row_prefix=b"table/")}
    for name in names:
        doc = store.schema(name).to_json()
        old: dict = {}
        if known.get(name):
            try:
                old = json.loads(known[name])
            except ValueError:
                old = {}
        # types a thrift:// client declared stay; the folder's own declarations win
        doc["columns"] = {**old.get("columns", {}), **doc["columns"]}
        raw = json.dumps(doc).encode()
        if raw != known.get(name):
            meta.put(b"table/" + name.encode(), {META_COL: raw})
    for name in set(known) - set(names):
        meta.delete(b"table/" + name.encode())
    return names
