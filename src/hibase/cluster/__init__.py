"""Local servers for trying, testing and benchmarking hibase: a standalone Apache HBase with its
Thrift1 server and Redis cache nodes registered in its ZooKeeper (`hibase cluster start DIR`),
and single redis-server / ZooKeeper processes (tests, benchmarks).

    from hibase.cluster import HBaseCluster
    cluster = HBaseCluster(".cluster").start()
    db = hibase.connect(cluster.thrift_url, cache=cluster.zk_url)
"""

from .hbase import HBaseCluster, classpath
from .local import (ClusterError, RedisProcess, ServerMissing, ZooKeeperProcess, free_port,
                    port_taken)

__all__ = ["HBaseCluster", "classpath", "ClusterError", "ServerMissing", "RedisProcess",
           "ZooKeeperProcess", "free_port", "port_taken"]
