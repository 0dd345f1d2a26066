"""Local servers on loopback for tests, benchmarks and `hibase cluster`: redis-server and a
standalone ZooKeeper, each on a free (or given) port with its own folder, started and stopped (or
killed) on demand; attached to the caller (they die with it) or detached (`hibase cluster start`).

They use the Debian packages (``redis-server``; ``zookeeper`` with Java):

    with RedisProcess() as r:                 # redis-server --port <free> --save "" ...
        client = redis.Redis.from_url(r.url)
    with ZooKeeperProcess() as zk:            # java ... ZooKeeperServerMain <port> <dir> 500
        print(zk.address)                     # "127.0.0.1:<port>"

Nothing here is used by hibase's store, index or cache code at run time.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Any

from ..errors import BackendUnavailable

__all__ = ["free_port", "port_taken", "find_redis_server", "find_zookeeper", "RedisProcess",
           "ZooKeeperProcess", "ClusterError", "ServerMissing", "log_tail"]

ZK_JARS = ("/usr/share/java/zookeeper.jar", "/usr/share/zookeeper/zookeeper.jar")


class ClusterError(BackendUnavailable):
    """A local server could not be started, reached or stopped (the message names its log)."""


class ServerMissing(ClusterError):
    """The server binary (or Java / the ZooKeeper jar / Maven) is not installed."""


def log_tail(path: str, lines: int = 3, width: int = 600) -> str:
    """The last non-empty lines of a log, joined with ' | ' (for one-line error messages)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16384))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    got = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(got)[-width:] or "(empty log)"


def port_taken(port: int) -> bool:
    """Whether something already listens on (or holds) 127.0.0.1:port (a port left in
    TIME_WAIT by a server that just stopped is free: servers bind with SO_REUSEADDR too)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


# Ports are picked below the kernel's ephemeral range: a port the OS hands out for bind(0) or
# for an outgoing connection (ZooKeeper clients, Thrift calls of another cluster starting at the
# same time) could be taken between the pick and the server's bind ("Address already in use").
_RESERVED_FOR = 600.0  # seconds a picked port stays reserved for the server meant to bind it
_picked: set[int] = set()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _prune(folder: str) -> None:
    now = time.time()
    try:
        with os.scandir(folder) as entries:
            for e in entries:
                try:
                    if now - e.stat().st_mtime > _RESERVED_FOR:
                        os.unlink(e.path)
                except OSError:
                    pass
    except OSError:
        pass


def _reserve(port: int) -> bool:
    """Claim `port` for this process across processes (a file per port, stale after
    _RESERVED_FOR seconds), so two clusters starting at once never pick the same one."""
    folder = os.path.join(tempfile.gettempdir(), f"hibase-ports-{os.getuid()}")
    if not _picked:  # this process's first pick: clear the stale claims of earlier ones
        _prune(folder)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, str(port))
    try:
        if time.time() - os.path.getmtime(path) > _RESERVED_FOR:
            os.unlink(path)
    except OSError:
        pass
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now, below the ephemeral range and reserved for a
    while across processes (see _reserve), so no other pick or outgoing connection takes it."""
    high = min(_ephemeral_low(), 65536)
    low = max(1024, high - 12000) if high > 13024 else 1024
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(low, high)
        if port in _picked or port_taken(port) or not _reserve(port):
            continue
        _picked.add(port)
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # a crowded range: the OS's
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_redis_server() -> str | None:
    return shutil.which("redis-server") or next(
        (p for p in ("/usr/bin/redis-server", "/usr/local/bin/redis-server")
         if os.access(p, os.X_OK)), None)


def find_zookeeper() -> tuple[str, str] | None:
    """(java, classpath) for a standalone ZooKeeper, or None. HIBASE_ZK_CLASSPATH overrides."""
    java = shutil.which("java")
    classpath = os.environ.get("HIBASE_ZK_CLASSPATH") or next(
        (p for p in ZK_JARS if os.path.exists(p)), None)
    if java is None or classpath is None:
        return None
    return java, classpath


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies (Linux), so no server outlives a killed
    test run or benchmark."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _wait(check: Any, timeout: float, what: str, proc: subprocess.Popen, log: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if check():
            return
        time.sleep(0.05)
    code = proc.poll()
    state = f"exited with code {code}" if code is not None else f"not ready after {timeout:g} s"
    raise ClusterError(f"{what} did not start ({state}; log {log}): {log_tail(log)}")


class _Process:
    name = "server"

    def __init__(self, port: int | None = None, folder: str | None = None,
                 detach: bool = False) -> None:
        """`folder`: where its data and log go (a new temporary folder, deleted by close(), when
        None); `detach`: the server outlives this process (own session) instead of dying with
        it."""
        self.port = port or free_port()
        self.own_dir = folder is None
        self.dir = tempfile.mkdtemp(prefix=f"hibase-{self.name}-") if folder is None else folder
        os.makedirs(self.dir, exist_ok=True)
        self.detach = detach
        self.proc: subprocess.Popen | None = None

    @property
    def log_path(self) -> str:
        return os.path.join(self.dir, "server.log")

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _ready(self) -> bool:
        raise NotImplementedError

    def start(self, timeout: float = 30.0) -> "_Process":
        """Start (again, on the same port and folder after stop/kill) and wait until ready."""
        if self.running:
            return self
        if port_taken(self.port):
            raise ClusterError(f"{self.name} cannot start: port {self.port} on 127.0.0.1 is "
                               "taken")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self._command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.dir, start_new_session=self.detach,
                preexec_fn=None if self.detach else _die_with_parent)
        _wait(self._ready, timeout, f"{self.name} on port {self.port}", self.proc, self.log_path)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: the server vanishes without a goodbye."""
        if self.running:
            self.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
            self.proc.wait(10)  # type: ignore[union-attr]

    def stop(self) -> None:
        if self.running:
            self.proc.terminate()  # type: ignore[union-attr]
            try:
                self.proc.wait(10)  # type: ignore[union-attr]
            except subprocess.TimeoutExpired:
                self.kill()

    def close(self) -> None:
        """Stop, and delete the folder if it was a temporary one."""
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _probe(port: int, send: bytes, expect: bytes) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(send)
            return expect in s.recv(64)
    except OSError:
        return False


class RedisProcess(_Process):
    """A redis-server without persistence on 127.0.0.1:<port>."""

    name = "redis"

    def __init__(self, port: int | None = None, folder: str | None = None,
                 detach: bool = False) -> None:
        binary = find_redis_server()
        if binary is None:
            raise ServerMissing("redis-server is not installed (Debian: apt-get install "
                                "redis-server)")
        self.binary = binary
        super().__init__(port, folder, detach)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _command(self) -> list[str]:
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
                "--maxmemory-policy", "noeviction", "--loglevel", "warning"]

    def _ready(self) -> bool:
        return _probe(self.port, b"PING\r\n", b"+PONG")


class ZooKeeperProcess(_Process):
    """A standalone ZooKeeper (tickTime 500 ms: sessions of 1-10 s) on 127.0.0.1:<port>."""

    name = "zookeeper"

    def __init__(self, port: int | None = None, tick_ms: int = 500, folder: str | None = None,
                 detach: bool = False) -> None:
        found = find_zookeeper()
        if found is None:
            raise ServerMissing("ZooKeeper is not installed (Debian: apt-get install zookeeper, "
                                "which brings Java)")
        self.java, self.classpath = found
        self.tick_ms = tick_ms
        super().__init__(port, folder, detach)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _command(self) -> list[str]:
        conf = os.path.join(self.dir, "zoo.cfg")
        with open(conf, "w") as fh:
            fh.write(f"tickTime={self.tick_ms}\ndataDir={os.path.join(self.dir, 'data')}\n"
                     f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
                     "admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n"
                     "maxClientCnxns=0\n")
        return [self.java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-Dzookeeper.log.dir=" + self.dir, "-cp", self.classpath,
                "org.apache.zookeeper.server.ZooKeeperServerMain", conf]

    def _ready(self) -> bool:
        return _probe(self.port, b"ruok", b"imok")
