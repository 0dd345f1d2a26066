"""The HBase backend: hibase's store interface over HBase through Thrift1 (happybase): store.py
(the store: catalog, reads, regions), rpc.py (counted, retried calls; raw reads), writes.py
(the verified commit), kv.py (key-value tables as HBase tables), layout.py (the region layout
local indexes follow), url.py (thrift:// URLs)."""

from .kv import KV_PREFIX, META_TABLE
from .store import HBaseStore
from .url import DEFAULT_LEASE_MS, parse_url

__all__ = ["HBaseStore", "parse_url", "META_TABLE", "KV_PREFIX", "DEFAULT_LEASE_MS"]
