"""A local Apache HBase for trying and testing hibase: standalone HBase 2.6 (master, region server
and ZooKeeper in one JVM, data under DIR/hbase on the local filesystem), or with
`regionservers=N` (N > 1) HBase distributed over processes of this machine (HBase's ZooKeeper,
one HMaster, N HRegionServer JVMs, still on the local filesystem), plus HBase's own Thrift1
server, all on 127.0.0.1, and Redis cache nodes each with its `hibase cache-node` service
registered in HBase's ZooKeeper.

    cluster = HBaseCluster("/tmp/c").start()     # resolves the jars the first time (Maven)
    db = hibase.connect(cluster.thrift_url, cache=cluster.zk_url)
    cluster.split("t", b"row")                  # HBase's Admin API (a small Java helper)
    c3 = HBaseCluster("/tmp/c3", regionservers=3).start()
    c3.kill_regionserver(1); c3.start_regionserver(1)   # SIGKILL one, start it again
    HBaseCluster("/tmp/c").stop()               # what start started (pid files in DIR), no more

The jars come from Maven Central through the pom kept beside this module (`mvn
dependency:build-classpath`, once; the classpath is cached under ~/.cache/hibase); the Java
flags are those HBase's own `bin/hbase` adds on JDK 17.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Sequence

from .jars import _resource, _tool, _work_dir, cache_dir, classpath, phoenix_classpath
from .local import (ClusterError, RedisProcess, ServerMissing, _die_with_parent,
                    find_redis_server, free_port, log_tail, port_taken)

__all__ = ["HBaseCluster", "JVM_FLAGS", "classpath", "cache_dir", "ZK_PATH"]

ZK_PATH = "/hibase"  # where cache-node services register (zk://127.0.0.1:PORT/hibase)
# With several region servers: each one's ZooKeeper session timeout. A server killed with -9 is
# declared dead (and its regions reassigned) when its session expires: 90 s by default in HBase.
RS_SESSION_MS = 6000
MASTER_HEAP_MB = 384
ZK_HEAP_MB = 192
STATE = "cluster.json"

# What HBase's bin/hbase adds on JDK 11+ (HBASE-28247 and follow-ups).
JVM_FLAGS = [
    "-XX:+UseG1GC", "-Djava.net.preferIPv4Stack=true",
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "--add-modules", "jdk.unsupported",
    *[f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.io", "java.nio", "sun.nio.ch", "java.lang", "jdk.internal.ref", "java.lang.reflect",
        "java.util", "java.util.concurrent", "jdk.internal.util.random")],
    *[f"--add-exports={m}=ALL-UNNAMED" for m in (
        "java.base/jdk.internal.misc", "java.security.jgss/sun.security.krb5",
        "java.base/sun.net.dns", "java.base/sun.net.util")],
]


def admin_classes(jars: list[str]) -> str:
    """The folder holding HibaseAdmin.class, compiled with javac at first use and cached."""
    work = os.path.join(_work_dir(), "admin-" + hashlib.sha256(
        _resource("HibaseAdmin.java")).hexdigest()[:12])
    if os.path.exists(os.path.join(work, "HibaseAdmin.class")):
        return work
    javac = _tool("javac", "Debian: apt-get install openjdk-17-jdk-headless")
    src_dir = work + ".src"
    os.makedirs(src_dir, exist_ok=True)
    src = os.path.join(src_dir, "HibaseAdmin.java")
    with open(src, "wb") as fh:
        fh.write(_resource("HibaseAdmin.java"))
    out = subprocess.run([javac, "-nowarn", "-d", src_dir, "-cp", os.pathsep.join(jars), src],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise ClusterError(f"javac failed on {src}: {out.stderr.strip()[-500:]}")
    os.replace(src_dir, work)
    return work


def _registry(port: int) -> str:
    return os.path.join(cache_dir(), "clusters", f"thrift-{port}.json")


def _register(port: int, folder: str) -> None:
    """Note that the cluster in `folder` serves Thrift on `port` (phoenix_for_backend reads it)."""
    os.makedirs(os.path.dirname(_registry(port)), exist_ok=True)
    with open(_registry(port), "w") as fh:
        json.dump({"dir": folder}, fh)


def cluster_for_port(port: int) -> "HBaseCluster | None":
    """The running `hibase cluster` whose Thrift server listens on 127.0.0.1:`port`, if any."""
    try:
        with open(_registry(port)) as fh:
            folder = json.load(fh)["dir"]
    except (OSError, ValueError, KeyError):
        return None
    c = HBaseCluster(folder)
    if c.thrift_port != port or "master" not in c._running():
        return None
    return c


def cluster_for_url(url: str) -> "HBaseCluster | None":
    """The running `hibase cluster` serving Thrift URL `url` (thrift://HOST:PORT on this
    machine, options allowed), if any."""
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if port is None or parts.hostname not in ("127.0.0.1", "localhost"):
        return None
    return cluster_for_port(port)


def _site_xml(props: dict[str, Any]) -> str:
    body = "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n"
                   for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _alive(pid: int, marker: str) -> bool:
    """Whether pid runs and is the process we started (its command line holds `marker`), so a
    recycled pid is never signalled."""
    if not os.path.exists(f"/proc/{pid}"):
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False  # a zombie: exited, not yet reaped by its parent
    except OSError:
        return False
    return marker in _cmdline(pid)


class HBaseCluster:
    """The local deployment kept in folder DIR (see the module docstring).

    DIR/cluster.json records ports, processes and `phoenix` (Apache Phoenix's server jars and
    WAL codec in HBase: see hibase.cluster.phoenix); DIR/pids/<name>.pid one pid each; logs go
    to DIR/logs/. Ports not given are free ones chosen at the first start and kept for the
    next starts (if still free). `site`: more hbase-site.xml properties, over hibase's own
    (kept in cluster.json for the next starts)."""

    def __init__(self, folder: str | os.PathLike, *, redis_nodes: int | None = None,
                 thrift_port: int | None = None, zk_port: int | None = None,
                 heap_mb: int | None = None, phoenix: bool | None = None,
                 coprocessor: bool | None = None, regionservers: int | None = None,
                 zk_session_ms: int | None = None, site: dict[str, Any] | None = None):
        self.dir = os.path.abspath(os.fspath(folder))
        # standalone: the ZooKeeper session of the one JVM (None: HBase's 10 s for a local
        # cluster). A GC pause longer than it aborts the master, so a long-lived test cluster
        # on a loaded machine asks for more; a restart after kill -9 waits it out.
        self.zk_session_ms = zk_session_ms
        state = self._state()
        # Redis cache nodes (None: as recorded, else 2)
        if redis_nodes is None:
            redis_nodes = len(state["redis_ports"]) if "redis_ports" in state else 2
        self.redis_nodes = redis_nodes
        # 1: standalone (one JVM); N > 1: ZooKeeper, a master and N region servers, each its
        # own JVM (None: as recorded, else 1)
        self.regionservers = int(state.get("regionservers", 1)) if regionservers is None \
            else regionservers
        if self.regionservers < 1:
            raise ClusterError(f"regionservers must be >= 1, not {self.regionservers}")
        # the standalone JVM's heap, or each region server's
        self.heap_mb = heap_mb or (1024 if self.regionservers == 1 else 512)
        self.master_port = state.get("master_port")
        self.rs_ports: list[int] = list(state.get("rs_ports", []))
        self.thrift_port: int | None = thrift_port or state.get("thrift_port")
        # HBase's Thrift2 server (one-call short scans: see store/hbase/thrift2.py)
        self.thrift2_port: int | None = state.get("thrift2_port")
        self.zk_port: int | None = zk_port or state.get("zk_port")
        self.redis_ports: list[int] = list(state.get("redis_ports", []))
        # Apache Phoenix's server jars and WAL codec in HBase (None: as recorded, else on)
        self.phoenix = bool(state.get("phoenix", True)) if phoenix is None else phoenix
        # hibase's index upkeep in the region server (hibase.coprocessor), loaded on
        # every region (None: as recorded, else on)
        self.coprocessor = bool(state.get("coprocessor", True)) if coprocessor is None \
            else coprocessor
        # more hbase-site.xml properties, over hibase's (None: as recorded, else none)
        self.site: dict[str, Any] = dict(state.get("site", {}) if site is None else site)
        # what the last start() found of a partly running cluster and did about it
        self.recovery: list[str] = []
        self._admin: subprocess.Popen | None = None
        self._admin_lock = threading.Lock()

    # -- state ------------------------------------------------------------------------------
    def _path(self, *parts: str) -> str:
        return os.path.join(self.dir, *parts)

    def _state(self) -> dict:
        try:
            with open(self._path(STATE)) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return {}

    def _save_state(self, processes: dict[str, str]) -> None:
        with open(self._path(STATE), "w") as fh:
            json.dump({"thrift_port": self.thrift_port, "thrift2_port": self.thrift2_port,
                       "zk_port": self.zk_port,
                       "redis_ports": self.redis_ports, "phoenix": self.phoenix,
                       "coprocessor": self.coprocessor, "regionservers": self.regionservers,
                       "master_port": self.master_port, "rs_ports": self.rs_ports,
                       "site": self.site, "markers": processes}, fh, indent=1)
        if processes.get("thrift") and self.thrift_port is not None:  # a port once started
            _register(self.thrift_port, self.dir)

    @property
    def thrift_url(self) -> str:
        """The HBase backend's URL: Thrift1, and the Thrift2 port its short scans use."""
        base = f"thrift://127.0.0.1:{self.thrift_port}"
        return f"{base}?thrift2_port={self.thrift2_port}" if self.thrift2_port else base

    @property
    def zk_url(self) -> str:
        return f"zk://127.0.0.1:{self.zk_port}{ZK_PATH}"

    @property
    def urls(self) -> list[str]:
        return [self.thrift_url, self.zk_url]

    def _pids(self) -> dict[str, int]:
        out = {}
        folder = self._path("pids")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            try:
                out[name[:-4]] = int(open(os.path.join(folder, name)).read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
        return out

    def _running(self) -> dict[str, int]:
        """name -> pid of the processes of this cluster that still run."""
        markers = self._state().get("markers", {})
        return {name: pid for name, pid in self._pids().items()
                if name in markers and _alive(pid, markers[name])}

    def status(self, region_servers: bool = True) -> dict:
        """{"dir", "running": {name: pid}, "stopped": [names], "thrift_url", "zk_url",
        "ready": thrift answers, "regionservers": [...]}. Each region server (the standalone
        JVM counts as one) is {"name", "pid", "port", "running", "regions", "meta"}; regions
        and meta (whether it holds hbase:meta) come from HBase's Admin API (None when HBase
        does not answer, or region_servers=False)."""
        markers = self._state().get("markers", {})
        running = self._running()
        ready = False
        if "thrift" in running:
            ready = self._thrift_answers()
        live = self.live_servers() if ready and region_servers else {}
        servers = []
        if self.regionservers == 1:  # standalone: the master's JVM serves the regions
            port, info = next(iter(live.items()), (None, None))
            servers.append({"name": "master", "pid": running.get("master"), "port": port,
                            "running": "master" in running,
                            "regions": info and info["regions"], "meta": info and info["meta"]})
        else:
            for i, port in enumerate(self.rs_ports):
                name = f"regionserver-{i}"
                info = live.get(port)
                servers.append({"name": name, "pid": running.get(name), "port": port,
                                "running": name in running,
                                "regions": info and info["regions"],
                                "meta": info and info["meta"]})
        return {"dir": self.dir, "running": running,
                "stopped": sorted(set(markers) - set(running)), "ready": ready,
                "thrift_url": self.thrift_url if self.thrift_port else None,
                "zk_url": self.zk_url if self.zk_port else None, "phoenix": self.phoenix,
                "coprocessor": self.coprocessor, "regionservers": servers}

    def live_servers(self) -> dict[int, dict]:
        """port -> {"regions": count, "meta": holds hbase:meta} of each region server the
        master lists as live (HBase's Admin API; {} when it does not answer)."""
        try:
            out = self._admin_call("servers")
        except ClusterError:
            return {}
        got = {}
        for item in filter(None, out.split(",")):
            port, regions, meta = item.split(":")
            got[int(port)] = {"regions": int(regions), "meta": meta == "1"}
        return got

    def _thrift2_answers(self) -> bool:
        """Whether the Thrift2 server answers a one-row scan of hbase:meta."""
        from ..store.hbase.thrift2 import Thrift2Pool, scan_of

        if self.thrift2_port is None:  # no port chosen: never started
            return False
        pool = Thrift2Pool("127.0.0.1", self.thrift2_port, 1, 10000)
        try:
            pool.call("getScannerResults", b"hbase:meta",
                      scan_of(pool.idl, None, None, None, None, False, 1), 1)
            return True
        except Exception:
            return False
        finally:
            pool.close()

    def _thrift_answers(self) -> bool:
        import happybase
        try:
            conn = happybase.Connection("127.0.0.1", self.thrift_port, timeout=5000)
            try:
                conn.tables()
            finally:
                conn.close()
            return True
        except Exception:
            return False

    # -- start ------------------------------------------------------------------------------
    def _spawn(self, name: str, cmd: list[str], log: str, marker: str, detach: bool,
               processes: dict[str, str], env: dict | None = None) -> subprocess.Popen:
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=self.dir, env=env,
                                    start_new_session=detach,
                                    preexec_fn=None if detach else _die_with_parent)
        with open(self._path("pids", f"{name}.pid"), "w") as fh:
            fh.write(f"{proc.pid}\n")
        processes[name] = marker
        self._save_state(processes)
        return proc

    def _java(self, jars: list[str], main: str, heap_mb: int, log: str) -> list[str]:
        java = _tool("java", "Debian: apt-get install openjdk-17-jdk-headless")
        return [java, f"-Xmx{heap_mb}m", *JVM_FLAGS,
                f"-Dlog4j2.configurationFile={self._path('conf', 'log4j2.properties')}",
                f"-Dhibase.log.file={log}", f"-Dhibase.cluster.dir={self.dir}",
                "-cp", os.pathsep.join([self._path("conf"), *jars]), main]

    def _write_conf(self) -> None:
        os.makedirs(self._path("conf"), exist_ok=True)
        props = {
            "hbase.cluster.distributed": "false",
            "hbase.rootdir": "file://" + self._path("hbase"),
            "hbase.tmp.dir": self._path("tmp"),
            "hbase.zookeeper.property.dataDir": self._path("zk"),
            "hbase.zookeeper.quorum": "127.0.0.1",
            "hbase.zookeeper.property.clientPort": self.zk_port,
            "hbase.zookeeper.property.clientPortAddress": "127.0.0.1",
            "hbase.unsafe.stream.capability.enforce": "false",
            "hbase.master.info.port": -1,
            "hbase.regionserver.info.port": -1,
            "hbase.thrift.info.port": -1,
            "hbase.localcluster.assign.random.ports": "true",
            "hbase.master.ipc.address": "127.0.0.1",
            "hbase.regionserver.ipc.address": "127.0.0.1",
            "hbase.master.hostname": "localhost",
            "hbase.regionserver.hostname": "localhost",
            "hbase.regionserver.thrift.port": self.thrift_port,
            "hbase.regionserver.thrift.ipaddress": "127.0.0.1",
            # pooled clients keep idle connections (the default 60 s would drop them)
            "hbase.thrift.server.socket.read.timeout": 3_600_000,
            "hbase.thrift.minWorkerThreads": 16,
            # many small tables (tests): no 2 MB memstore chunk per written store
            "hbase.hregion.memstore.mslab.enabled": "false",
            # a split daughter can split again once its compacted reference files are gone:
            # every second instead of every 2 minutes
            "hbase.hfile.compaction.discharger.interval": 1000,
            # the master sends a region server its open/close region calls after 10 ms instead
            # of batching them for 150 ms: a local cluster's table creates, splits and moves
            # take ~30% less (create: 0.72 -> 0.51 s median with the client pause below)
            "hbase.procedure.remote.dispatcher.delay.msec": 10,
        }
        if self.regionservers == 1 and self.zk_session_ms:
            props["zookeeper.session.timeout.localHBaseCluster"] = self.zk_session_ms
        if self.regionservers > 1:
            # distributed over processes, still on the local filesystem (WALs included: the
            # capability check refuses the local FS's streams otherwise, HBASE-20354)
            del props["hbase.localcluster.assign.random.ports"]
            props.update({
                "hbase.cluster.distributed": "true",
                "hbase.master.port": self.master_port,
                # HBase's own ZooKeeper (HQuorumPeer): sessions of 1-10 s (tickTime 500 ms), no
                # admin web server (it would take port 8080)
                "hbase.zookeeper.property.tickTime": 500,
                "hbase.zookeeper.property.admin.enableServer": "false",
                "hbase.zookeeper.property.maxClientCnxns": 0,
                # the master waits for every region server before it assigns hbase:meta and
                # the system tables, so they spread over all of them
                "hbase.master.wait.on.regionservers.mintostart": self.regionservers,
                "hbase.master.wait.on.regionservers.maxtostart": self.regionservers,
                "hbase.master.wait.on.regionservers.timeout": 1000,
                "hbase.master.wait.on.regionservers.interval": 200,
            })
        if self.phoenix:  # Phoenix's mutable global indexes replay their WAL edits with it
            props["hbase.regionserver.wal.codec"] = \
                "org.apache.hadoop.hbase.regionserver.wal.IndexedWALEditCodec"
        if self.coprocessor:  # hibase's index upkeep on every region (hibase.coprocessor)
            from ..coprocessor import OBSERVER, SCAN_OBSERVER
            props["hbase.coprocessor.region.classes"] = f"{OBSERVER},{SCAN_OBSERVER}"
        props.update(self.site)
        with open(self._path("conf", "hbase-site.xml"), "w") as fh:
            fh.write(_site_xml(props))
        with open(self._path("conf", "log4j2.properties"), "wb") as fh:
            fh.write(_resource("log4j2.properties"))

    def _pick_ports(self, running: dict[str, int]) -> None:
        taken = []
        attrs = ["thrift_port", "thrift2_port", "zk_port"]
        if self.regionservers > 1:
            attrs.append("master_port")
            while len(self.rs_ports) < self.regionservers:
                port = free_port()
                if port not in self.rs_ports:
                    self.rs_ports.append(port)
            del self.rs_ports[self.regionservers:]
            taken += [f"region server port {p}" for p in self.rs_ports
                      if port_taken(p) and not running]
        for attr in attrs:
            port = getattr(self, attr)
            if port is None:
                setattr(self, attr, free_port())
            elif port_taken(port) and not running:
                taken.append(f"{attr.replace('_', ' ')} {port}")
        if taken:
            raise ClusterError(f"cannot start the cluster in {self.dir}: "
                               f"{', '.join(taken)} on 127.0.0.1 is taken")
        while len(self.redis_ports) < self.redis_nodes:
            self.redis_ports.append(free_port())
        del self.redis_ports[self.redis_nodes:]

    def start(self, *, detach: bool = True, progress: bool = True,
              timeout: float = 300.0) -> "HBaseCluster":
        """Start what is not running yet and return once HBase serves Thrift calls (a probe
        table is created and dropped) and every cache node is registered. `detach=False`: the
        processes die with this one (tests). A cluster partly running (a JVM killed with -9)
        is completed: see _complete; `self.recovery` then says what was found and done."""
        running = self._running()
        state = self._state()
        self.recovery = []
        moved = [f"{a.replace('_', ' ')} {getattr(self, a)}" for a in ("thrift_port", "zk_port")
                 if running and state.get(a) and getattr(self, a) != state[a]]
        if moved:
            raise ClusterError(f"the cluster in {self.dir} runs with thrift port "
                               f"{state['thrift_port']} and zk port {state['zk_port']}, not "
                               f"{', '.join(moved)}: stop it first to change ports")
        if running and self._hbase_up(running) and self._cache_up(running):
            return self
        if self.redis_nodes and find_redis_server() is None:  # before HBase, not after it
            raise ServerMissing("redis-server is not installed (Debian: apt-get install "
                                "redis-server); or start without cache nodes (redis_nodes=0, "
                                "hibase cluster start --redis-nodes 0)")
        jars = classpath(progress)
        os.makedirs(self._path("pids"), exist_ok=True)
        os.makedirs(self._path("logs"), exist_ok=True)
        if running or self._pids():
            running = self._complete(running, detach)
        hbase_up, cache_up = self._hbase_up(running), self._cache_up(running)
        markers = self._state().get("markers", {})
        auto = {"thrift_port": self.thrift_port is None, "zk_port": self.zk_port is None,
                "thrift2_port": self.thrift2_port is None}
        t0 = time.monotonic()
        for attempt in range(3):
            self._pick_ports(running)
            self._write_conf()
            processes: dict[str, str] = {n: markers[n] for n in running}  # those kept
            try:
                if not hbase_up:
                    self._start_hbase(jars, detach, processes, t0 + timeout, progress)
                if not cache_up:
                    self._start_cache_nodes(detach, processes, t0 + timeout)
                break
            except ClusterError as exc:
                self.stop()
                running, hbase_up, cache_up = {}, False, False
                # a free port chosen here was taken by someone else before HBase bound it
                if attempt == 2 or not self._lost_port_race(auto):
                    raise exc from None
            except BaseException:
                self.stop()
                raise
        self.started_in = time.monotonic() - t0
        return self

    def _hbase_up(self, running: dict[str, int]) -> bool:
        return set(running) >= {"master", "thrift", "thrift2", *self._hbase_jvms()}

    def _cache_up(self, running: dict[str, int]) -> bool:
        return all(f"{kind}-{i}" in running for i in range(self.redis_nodes)
                   for kind in ("redis", "cache-node"))

    def _complete(self, running: dict[str, int], detach: bool) -> dict[str, int]:
        """Make a partly running cluster (a process killed with -9, or gone) ready for start:
        the pid files of dead processes are removed; with several region servers, those down
        are started again when ZooKeeper, the master and the Thrift servers run; else the
        HBase processes still alive are stopped (Thrift servers and region servers keep
        sessions and caches of the dead JVM's ZooKeeper and master, so they start again
        together); the same for Redis and cache nodes. Returns what still runs; each step is
        noted in self.recovery."""
        pids = self._pids()
        markers = self._state().get("markers", {})
        dead = sorted(n for n in pids if n in markers and n not in running)  # others: not ours
        for name in dead:
            try:
                os.remove(self._path("pids", f"{name}.pid"))
            except OSError:
                pass
        if dead:
            self.recovery.append("not running: " + ", ".join(
                f"{n} (pid {pids[n]}; pid file removed)" for n in dead))
        hbase = {"master", "thrift", "thrift2", *self._hbase_jvms()}
        rs_down = sorted(n for n in hbase - set(running) if n.startswith("regionserver-"))
        if rs_down and set(running) >= hbase - set(rs_down):
            for name in rs_down:  # the rest of HBase serves: the master reassigns to them
                self.start_regionserver(int(name.rsplit("-", 1)[1]), detach=detach)
                self.recovery.append(f"started {name} again (the rest of HBase kept running)")
            running = self._running()
        cache = {n for n in running if n.startswith(("redis-", "cache-node-"))}
        stop: list[str] = []
        if not self._hbase_up(running):  # cache nodes register in HBase's ZooKeeper
            stop = sorted((set(running) & hbase) | cache)
            why = "started again with the rest of HBase"
        elif not self._cache_up(running):
            stop, why = sorted(cache), "started again with the other cache nodes"
        if stop:
            self._stop_names(stop, 30.0)
            self.recovery.append(f"stopped {', '.join(stop)} (still running): {why}")
            running = self._running()
        wanted = [*sorted(hbase), *(f"{k}-{i}" for i in range(self.redis_nodes)
                                   for k in ("redis", "cache-node"))]
        if self.recovery:  # something was found: say what start() goes on to start
            self.recovery.append("starting " + ", ".join(n for n in wanted if n not in running))
        return running

    def _start_hbase(self, jars: list[str], detach: bool, processes: dict[str, str],
                     deadline: float, progress: bool) -> None:
        conf_marker = self._path("conf")
        server_jars = self._server_jars(progress)
        others: list[tuple[str, subprocess.Popen]] = []
        if self.regionservers > 1:
            zk = self._spawn("zookeeper", self._java(
                jars, "org.apache.hadoop.hbase.zookeeper.HQuorumPeer", ZK_HEAP_MB,
                self._path("logs", "zookeeper.log")) + ["start"],
                self._path("logs", "zookeeper.out"), conf_marker, detach, processes)
            others.append(("zookeeper", zk))
            assert self.zk_port is not None  # chosen above, before the configuration
            self._wait_port(self.zk_port, zk, "zookeeper", deadline)
        master = self._spawn("master", self._java(
            server_jars, "org.apache.hadoop.hbase.master.HMaster",
            self.heap_mb if self.regionservers == 1 else MASTER_HEAP_MB,
            self._path("logs", "master.log")) + ["start"], self._path("logs", "master.out"),
            conf_marker, detach, processes)
        for i in range(self.regionservers if self.regionservers > 1 else 0):
            others.append((f"regionserver-{i}", self._spawn_regionserver(
                i, server_jars, detach, processes)))
        thrift = self._spawn("thrift", self._java(
            jars, "org.apache.hadoop.hbase.thrift.ThriftServer", 384,
            self._path("logs", "thrift.log")) + ["-p", str(self.thrift_port), "start"],
            self._path("logs", "thrift.out"), conf_marker, detach, processes)
        thrift2 = self._spawn("thrift2", self._java(
            jars, "org.apache.hadoop.hbase.thrift2.ThriftServer", 256,
            self._path("logs", "thrift2.log")) + ["-p", str(self.thrift2_port), "start"],
            self._path("logs", "thrift2.out"), conf_marker, detach, processes)
        self._wait_hbase(master, thrift, deadline, progress, thrift2, others)

    def _hbase_jvms(self) -> list[str]:
        """The names of the JVMs besides master, thrift and thrift2 (distributed mode)."""
        if self.regionservers == 1:
            return []
        return ["zookeeper", *(f"regionserver-{i}" for i in range(self.regionservers))]

    def _server_jars(self, progress: bool = False) -> list[str]:
        jars = phoenix_classpath(progress) if self.phoenix else classpath(progress)
        if self.coprocessor:
            from ..coprocessor import coprocessor_jar
            jars = [coprocessor_jar(progress), *jars]
        return jars

    def _spawn_regionserver(self, i: int, jars: list[str], detach: bool,
                            processes: dict[str, str]) -> subprocess.Popen:
        """Region server i on its own port (-D options override hbase-site.xml for it alone:
        HBase's bin/local-regionservers.sh does the same)."""
        name = f"regionserver-{i}"
        return self._spawn(name, self._java(
            jars, "org.apache.hadoop.hbase.regionserver.HRegionServer", self.heap_mb,
            self._path("logs", f"{name}.log")) + [
            f"-Dhbase.regionserver.port={self.rs_ports[i]}",
            f"-Dzookeeper.session.timeout={RS_SESSION_MS}", "start"],
            self._path("logs", f"{name}.out"), self._path("conf"), detach, processes)

    def _wait_port(self, port: int, proc: subprocess.Popen, name: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log = self._path("logs", f"{name}.log")
                raise ClusterError(f"HBase {name} exited with code {proc.returncode} (log "
                                   f"{log}): {log_tail(log)}")
            if port_taken(port):
                return
            time.sleep(0.1)
        raise ClusterError(f"HBase {name} did not listen on port {port} in time")

    # -- region servers (distributed mode) ---------------------------------------------------
    def kill_regionserver(self, i: int, sig: int = signal.SIGKILL) -> int:
        """Send `sig` (SIGKILL: no goodbye, its WAL left for the master to split) to region
        server i and wait until it is gone; returns its pid."""
        name = f"regionserver-{i}"
        pid = self._running().get(name)
        if pid is None:
            raise ClusterError(f"{name} of the cluster in {self.dir} does not run")
        marker = self._state()["markers"][name]
        os.kill(pid, sig)
        while _alive(pid, marker):
            time.sleep(0.02)
        return pid

    def start_regionserver(self, i: int, timeout: float = 120.0, detach: bool = False) -> int:
        """Start region server i again (same port) and wait until the master lists it as live;
        returns its pid."""
        name = f"regionserver-{i}"
        if name in self._running():
            return self._running()[name]
        processes = dict(self._state().get("markers", {}))
        proc = self._spawn_regionserver(i, self._server_jars(), detach, processes)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log = self._path("logs", f"{name}.log")
                raise ClusterError(f"{name} exited with code {proc.returncode} (log {log}): "
                                   f"{log_tail(log)}")
            if self.rs_ports[i] in self.live_servers():
                return proc.pid
            time.sleep(0.5)
        raise ClusterError(f"{name} did not join the cluster within {timeout:g} s")

    def _lost_port_race(self, auto: dict[str, bool]) -> bool:
        """Whether start failed on a port it chose itself; if so, forget those ports (and
        start the logs afresh) so the next attempt picks new ones."""
        hits = {"zk_port": ("master", "Could not start ZK at requested port"),
                "thrift_port": ("thrift", "Address already in use"),
                "thrift2_port": ("thrift2", "Address already in use")}
        lost = False
        for attr, (name, text) in hits.items():
            log = self._path("logs", f"{name}.log")
            try:
                with open(log, errors="replace") as fh:
                    found = text in fh.read()
            except OSError:
                found = False
            if found and auto[attr]:
                setattr(self, attr, None)
                lost = True
        if lost:
            for name in ("master", "thrift", "thrift2"):
                for ext in ("log", "out"):
                    try:
                        os.replace(self._path("logs", f"{name}.{ext}"),
                                   self._path("logs", f"{name}.{ext}.failed"))
                    except OSError:
                        pass
        return lost

    def _wait_hbase(self, master: subprocess.Popen, thrift: subprocess.Popen, deadline: float,
                    progress: bool, thrift2: subprocess.Popen | None = None,
                    others: Sequence[tuple[str, subprocess.Popen]] = ()) -> None:
        import happybase
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(desc="waiting for HBase", unit=" s", file=sys.stderr,
                       bar_format="{desc}: {elapsed}")
        last = ""
        try:
            while time.monotonic() < deadline:
                for name, proc in (("master", master), ("thrift", thrift), ("thrift2", thrift2),
                                   *others):
                    if proc is not None and proc.poll() is not None:
                        log = self._path("logs", f"{name}.log")
                        if not os.path.exists(log) or os.path.getsize(log) == 0:
                            log = self._path("logs", f"{name}.out")
                        raise ClusterError(f"HBase {name} exited with code {proc.returncode} "
                                           f"(log {log}): {log_tail(log)}")
                try:
                    conn = happybase.Connection("127.0.0.1", self.thrift_port, timeout=60000)
                    try:
                        conn.tables()
                        probe = b"hibase_cluster_probe"
                        if probe in conn.tables():
                            conn.delete_table(probe, disable=True)
                        conn.create_table(probe, {"f": {}})
                        conn.delete_table(probe, disable=True)
                        if thrift2 is None or self._thrift2_answers():
                            return
                        last = "the Thrift2 server does not answer yet"
                    finally:
                        conn.close()
                except Exception as exc:  # not up yet: connection refused, PleaseHold, ...
                    last = f"{type(exc).__name__}: {exc}"[:200]
                if bar is not None:
                    bar.update(0)
                    bar.refresh()
                time.sleep(0.5)
        finally:
            if bar is not None:
                bar.close()
        log = self._path("logs", "master.log")
        raise ClusterError(f"HBase did not come up in time (last Thrift error: {last}; log "
                           f"{log}): {log_tail(log)}")

    def _start_cache_nodes(self, detach: bool, processes: dict[str, str],
                           deadline: float) -> None:
        if not self.redis_nodes:
            return
        for i, port in enumerate(self.redis_ports):
            r = RedisProcess(port, folder=self._path(f"redis-{i}"), detach=detach)
            r.start(timeout=max(1.0, deadline - time.monotonic()))
            with open(self._path("pids", f"redis-{i}.pid"), "w") as fh:
                fh.write(f"{r.proc.pid}\n")  # type: ignore[union-attr]
            processes[f"redis-{i}"] = f"127.0.0.1:{port}"
            self._save_state(processes)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        for i, port in enumerate(self.redis_ports):
            redis_url = f"redis://127.0.0.1:{port}/0"
            self._spawn(f"cache-node-{i}", [
                sys.executable, "-m", "hibase", "cache-node", "--redis", redis_url,
                "--zk", f"127.0.0.1:{self.zk_port}{ZK_PATH}"],
                self._path("logs", f"cache-node-{i}.log"), f"--redis {redis_url}", detach,
                processes, env)
        self._wait_registered(deadline)

    def _wait_registered(self, deadline: float) -> None:
        from kazoo.client import KazooClient
        zk = KazooClient(hosts=f"127.0.0.1:{self.zk_port}", timeout=10)
        zk.start(timeout=10)
        try:
            while time.monotonic() < deadline:
                got = zk.get_children(f"{ZK_PATH}/nodes") if zk.exists(
                    f"{ZK_PATH}/nodes") else []
                if len(got) >= self.redis_nodes:
                    return
                dead = [n for n in self._state().get("markers", {})
                        if n.startswith("cache-node-") and n not in self._running()]
                if dead:
                    log = self._path("logs", f"{dead[0]}.log")
                    raise ClusterError(f"{dead[0]} exited (log {log}): {log_tail(log)}")
                time.sleep(0.1)
        finally:
            zk.stop()
            zk.close()
        raise ClusterError(f"cache nodes did not register in ZooKeeper in time (logs in "
                           f"{self._path('logs')})")

    # -- stop -------------------------------------------------------------------------------
    def stop(self, timeout: float = 90.0) -> list[str]:
        """End the processes start() started (and only those): cache nodes, Redis, then HBase
        (with several region servers: the master and every region server together - each
        region server's shutdown hook flushes and closes its regions - then ZooKeeper);
        SIGTERM, then SIGKILL after `timeout` s. Returns the names of those that ran."""
        self.close_admin()
        running = self._running()
        self._stop_names(list(running), timeout)
        return sorted(running)

    def _stop_names(self, names: list[str], timeout: float) -> None:
        """Stop the running processes `names` of this cluster, in stop()'s order (SIGTERM,
        SIGKILL after `timeout` s), and remove their pid files."""
        running = {n: p for n, p in self._running().items() if n in names}
        markers = self._state().get("markers", {})
        order = sorted(running, key=lambda n: (
            0 if n.startswith("cache-node") else 1 if n.startswith("redis") else 2))
        hbase = [n for n in order if n in ("thrift", "thrift2", "master")
                 or n.startswith("regionserver-")]
        for group in (
                [n for n in order if n.startswith("cache-node")],
                [n for n in order if n.startswith("redis")], hbase,
                [n for n in order if n == "zookeeper"]):
            for name in group:
                try:
                    os.kill(running[name], signal.SIGTERM)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + timeout
            for name in group:
                while _alive(running[name], markers[name]) and time.monotonic() < end:
                    time.sleep(0.1)
                if _alive(running[name], markers[name]):
                    os.kill(running[name], signal.SIGKILL)
                    while _alive(running[name], markers[name]):
                        time.sleep(0.05)
        for name in running:
            try:
                os.remove(self._path("pids", f"{name}.pid"))
            except OSError:
                pass

    # -- admin (what Thrift1 cannot do) -----------------------------------------------------
    # how long one Admin request may take: a split or a move waits for its regions to open, a
    # flush for its procedure; HBase 2.6.1 has been seen never to finish a flush procedure
    # ("procedure event for N is null"), which would otherwise wait for ever
    ADMIN_TIMEOUT_S = 900.0

    def _admin_call(self, line: str, timeout: float | None = None) -> str:
        """One request to the Admin helper JVM (started at first use), its answer; a helper
        that does not answer within `timeout` s (ADMIN_TIMEOUT_S) is killed (the next call
        starts another) and ClusterError says so."""
        import select

        limit = self.ADMIN_TIMEOUT_S if timeout is None else timeout
        with self._admin_lock:
            if self._admin is None or self._admin.poll() is not None:
                jars = classpath(progress=False)
                classes = admin_classes(jars)
                log = self._path("logs", "admin.log")
                cmd = self._java([classes, *jars], "HibaseAdmin", 256, log)
                with open(log, "ab") as err:
                    self._admin = subprocess.Popen(
                        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                        text=True, cwd=self.dir, preexec_fn=_die_with_parent)
                first = self._admin.stdout.readline()  # type: ignore[union-attr]
                if not first.startswith("ok"):
                    raise ClusterError(f"the HBase admin helper did not start (log {log}): "
                                       f"{log_tail(log)}")
            self._admin.stdin.write(line + "\n")  # type: ignore[union-attr]
            self._admin.stdin.flush()  # type: ignore[union-attr]
            out = self._admin.stdout
            assert out is not None  # Popen(stdout=PIPE)
            # one answer line per request: nothing is left buffered in `out` between calls
            if not select.select([out], [], [], limit)[0]:
                self._admin.kill()
                self._admin.wait()
                self._admin = None
                raise ClusterError(
                    f"HBase admin {line.split()[0]} did not answer within {limit:g} s (the "
                    f"helper was stopped; HBase's logs: {self._path('logs')})")
            answer = out.readline().rstrip("\n")
        if not answer.startswith("ok "):
            raise ClusterError(f"HBase admin {line.split()[0]} failed: "
                               f"{answer[6:] or 'the helper exited'}")
        return answer[3:]

    def split(self, table: str, row: bytes | None = None) -> bool:
        """Split HBase table `table` at `row` (None: HBase's midpoints) through the Admin API
        and wait until the new regions are online; False when `row` already starts a region
        (or, with None, nothing could split)."""
        return self._admin_call(f"split {table} {'-' if row is None else row.hex()}") == "true"

    def flush(self, table: str, timeout: float | None = None) -> None:
        """Flush HBase table `table`'s memstores to store files (waits until done, at most
        `timeout` s: ADMIN_TIMEOUT_S)."""
        self._admin_call(f"flush {table}", timeout)

    def region_starts(self, table: str) -> list[bytes]:
        """The start keys of HBase table `table`'s regions, as HBase's Admin API lists them."""
        out = self._admin_call(f"regions {table}")
        return [b"" if s == "-" else bytes.fromhex(s) for s in out.split(",")]

    def region_servers_of(self, table: str) -> dict[bytes, int]:
        """start key -> port of the region server holding each region of HBase table `table`
        (-1 while a region has none, in transition)."""
        out = self._admin_call(f"locations {table}")
        got = {}
        for item in filter(None, out.split(",")):
            start, port = item.rsplit("@", 1)
            got[b"" if start == "-" else bytes.fromhex(start)] = int(port)
        return got

    def spread(self, table: str) -> int:
        """Move HBase table `table`'s regions round-robin over the live region servers (by
        port) and wait until all are online again; returns how many moved."""
        return int(self._admin_call(f"spread {table}"))

    def load_coprocessor(self, table: str, spec: str) -> None:
        """Load a coprocessor on HBase table `table` as the HBase shell's `alter 't', METHOD =>
        'table_att', 'coprocessor' => spec` does (spec: 'PATH|CLASS|PRIORITY|', no spaces);
        returns once HBase has applied the new descriptor (the regions reopened)."""
        self._admin_call(f"coprocessor {table} {spec}")

    def close_admin(self) -> None:
        with self._admin_lock:
            if self._admin is not None:
                if self._admin.poll() is None:
                    self._admin.stdin.close()  # type: ignore[union-attr]
                    try:
                        self._admin.wait(10)
                    except subprocess.TimeoutExpired:
                        self._admin.kill()
                        self._admin.wait()
                self._admin = None

