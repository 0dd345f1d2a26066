"""Local servers for trying, testing and benchmarking hibase: an Apache HBase (standalone, or a
master and N region servers each in its own JVM) with its Thrift1 server and Redis cache nodes
registered in its ZooKeeper (`hibase cluster start DIR`), and single redis-server / ZooKeeper
processes (tests, benchmarks).

    from hibase.cluster import HBaseCluster
    cluster = HBaseCluster(".cluster").start()
    db = hibase.connect(cluster.thrift_url, cache=cluster.zk_url)
    c3 = HBaseCluster(".cluster3", regionservers=3).start()   # a master + 3 region server JVMs
    c3.status()["regionservers"]          # [{"name", "pid", "port", "regions", "meta", ...}]
"""

from .hbase import HBaseCluster, classpath
from .local import (ClusterError, RedisProcess, ServerMissing, ZooKeeperProcess, free_port,
                    port_taken)

__all__ = ["HBaseCluster", "classpath", "ClusterError", "ServerMissing", "RedisProcess",
           "ZooKeeperProcess", "free_port", "port_taken"]
