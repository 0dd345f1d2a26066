"""The embedded backend: HBase's data model in one RocksDB database in a folder (store.py:
opening, catalog, writes; reads.py; regions.py: splits and compaction; kv.py: key-value tables;
tables.py: open tables)."""

from .reads import COMPACT_AFTER
from .store import EmbeddedStore

__all__ = ["EmbeddedStore", "COMPACT_AFTER"]
