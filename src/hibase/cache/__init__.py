"""HiBase's hot-index cache: whole index-value sets in memory, chosen by a heat policy.

* :mod:`.window_heat` - window-heat, the default: hotscore's heat deciding every miss;
* :mod:`.policy` - hotscore (as published), hotscore per record, LRU, no cache, Belady's ceiling;
* :mod:`.layer` - :class:`HotCache`, the cache in front of the persistent index (reads, writes);
* :mod:`.backend` - the backend interface and the in-process backend;
* :mod:`.redis_backend` - Redis nodes on a consistent-hash ring (:mod:`.ring`);
* :mod:`.membership` - static node lists and ZooKeeper membership;
* :mod:`.node` - the cache-node service that runs the policy beside each Redis node;
* :mod:`.config` - the options of ``hibase.connect`` (``cache=``, ``cache_policy=`` ...).
"""

from .config import open_cache
from .layer import HotCache

__all__ = ["open_cache", "HotCache"]
