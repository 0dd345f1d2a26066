"""The embedded backend: HBase's data model in one RocksDB database in a folder (store.py:
opening, catalog, writes; reads.py; regions.py: splits and compaction; kv.py: key-value tables;
tables.py: open tables; rocks.py: RocksDB's errors by kind; wal.py and check.py: what
`hibase check` verifies of the folder)."""

from .reads import COMPACT_AFTER
from .store import EmbeddedStore

__all__ = ["EmbeddedStore", "COMPACT_AFTER"]
