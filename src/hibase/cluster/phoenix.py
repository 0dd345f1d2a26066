"""Apache Phoenix on the local HBase, for benchmarks comparing hibase with Phoenix on the same
HBase: its jars (phoenix-pom.xml, resolved by Maven like HBase's) and a Python client driving
Phoenix's JDBC thick client in one JVM (PhoenixBridge.java, compiled with javac at first use)
over JSON lines on stdin/stdout.

    cluster = HBaseCluster(".c", phoenix=True).start()
    with phoenix_for_backend(cluster.thrift_url) as px:
        px.execute("CREATE TABLE t (k VARCHAR PRIMARY KEY, v BIGINT)")
        px.upsert_many("UPSERT INTO t VALUES (?, ?)", [("a", 1), ("b", 2)])
        px.execute("SELECT v FROM t WHERE k = ?", ("a",))      # [(1,)]
"""

from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import json
import os
import selectors
import subprocess
import time
from typing import Any, Iterable, Sequence

from .hbase import HBaseCluster, cluster_for_url
from .jars import _resource, _tool, _work_dir, phoenix_classpath
from .local import ClusterError, _die_with_parent, log_tail

__all__ = ["PhoenixClient", "PhoenixError", "phoenix_classpath", "phoenix_for_backend"]


# Phoenix's query log table SYSTEM.LOG (unused: phoenix.log.level is OFF) is salted into 32
# regions by default, a third of the first connect's time here; one region is enough.
CONNECT_PROPERTIES = {"phoenix.log.saltBuckets": 1}


class PhoenixError(ClusterError):
    """Phoenix refused a statement (the message is Phoenix's own) or its JVM failed."""


def _bridge_classes(jars: list[str]) -> str:
    """The folder holding PhoenixBridge.class, compiled at first use and cached."""
    src_bytes = _resource("PhoenixBridge.java")
    work = os.path.join(_work_dir("phoenix-pom.xml", "phoenix"),
                        "bridge-" + hashlib.sha256(src_bytes).hexdigest()[:12])
    if os.path.exists(os.path.join(work, "PhoenixBridge.class")):
        return work
    javac = _tool("javac", "Debian: apt-get install openjdk-17-jdk-headless")
    src_dir = f"{work}.src{os.getpid()}"
    os.makedirs(src_dir, exist_ok=True)
    src = os.path.join(src_dir, "PhoenixBridge.java")
    with open(src, "wb") as fh:
        fh.write(src_bytes)
    out = subprocess.run([javac, "-nowarn", "-d", src_dir, "-cp", os.pathsep.join(jars), src],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise ClusterError(f"javac failed on {src}: {out.stderr.strip()[-500:]}")
    try:
        os.replace(src_dir, work)
    except OSError:  # another process compiled it first
        pass
    return work


def _encode(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"b64": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, decimal.Decimal):
        return {"dec": str(v)}
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return {"ms": round(v.timestamp() * 1000)}
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict):
        if "b64" in v:
            return base64.b64decode(v["b64"])
        if "dec" in v:
            return decimal.Decimal(v["dec"])
        if "ms" in v:
            return datetime.datetime.fromtimestamp(v["ms"] / 1000, datetime.timezone.utc)
    return v


class PhoenixClient:
    """A Phoenix JDBC connection to the HBase whose ZooKeeper listens on 127.0.0.1:`zk_port`,
    held by one helper JVM; every call waits at most `timeout` s (then the JVM is ended and
    PhoenixError raised), so a stuck HBase cannot hang the caller. `properties`: JDBC
    connection properties added to CONNECT_PROPERTIES (e.g. phoenix.query.timeoutMs)."""

    def __init__(self, zk_port: int, *, log: str | None = None, heap_mb: int = 512,
                 timeout: float = 300.0, properties: dict[str, Any] | None = None):
        self.zk_port = zk_port
        self.timeout = timeout
        self.url = f"jdbc:phoenix:127.0.0.1:{zk_port}"
        jars = phoenix_classpath(progress=False)
        classes = _bridge_classes(jars)
        conf = os.path.join(_work_dir("phoenix-pom.xml", "phoenix"), "client-conf")
        os.makedirs(conf, exist_ok=True)
        with open(os.path.join(conf, "log4j2.properties"), "wb") as fh:
            fh.write(_resource("log4j2.properties"))
        self.log = log or os.path.join(conf, f"bridge-{os.getpid()}.log")
        from .hbase import JVM_FLAGS
        cmd = [_tool("java", "Debian: apt-get install openjdk-17-jdk-headless"),
               f"-Xmx{heap_mb}m", *JVM_FLAGS,
               f"-Dlog4j2.configurationFile={os.path.join(conf, 'log4j2.properties')}",
               f"-Dhibase.log.file={self.log}",
               "-cp", os.pathsep.join([classes, *jars]), "PhoenixBridge", f"127.0.0.1:{zk_port}",
               *(f"{k}={v}" for k, v in {**CONNECT_PROPERTIES, **(properties or {})}.items())]
        t0 = time.monotonic()
        with open(self.log, "ab") as err:
            self._proc: subprocess.Popen | None = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                preexec_fn=_die_with_parent)
        hello = self._read()
        self.connect_seconds = time.monotonic() - t0  # JVM start + Phoenix's first connect
        self.jdbc_connect_seconds = float(hello["connect_s"])

    def describe(self) -> str:
        """How Phoenix is driven, for benchmark reports."""
        return (f"Apache Phoenix 5.2.1 JDBC thick client ({self.url}), one connection in one "
                f"helper JVM, autocommit off; times measured inside that JVM with "
                f"System.nanoTime: upsert_many covers every executeUpdate and commit, "
                f"time_query one executeQuery of a prepared statement plus reading every "
                f"column of every row; connect took {self.jdbc_connect_seconds:.1f} s (not "
                f"counted); no warm-up is done here: the caller discards early repeats")

    # -- protocol ---------------------------------------------------------------------------
    def _read(self) -> dict:
        proc = self._proc
        if proc is None:
            raise PhoenixError("the Phoenix client is closed")
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
        try:
            ready = sel.select(self.timeout)
        finally:
            sel.close()
        line = proc.stdout.readline() if ready else b""  # type: ignore[union-attr]
        if not line:
            timed_out = not ready
            self._kill()
            why = f"no answer in {self.timeout:.0f} s" if timed_out else "its JVM exited"
            raise PhoenixError(f"Phoenix ({self.url}): {why} (log {self.log}): "
                               f"{log_tail(self.log)}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise PhoenixError(answer.get("error") or "Phoenix failed")
        return answer

    def _call(self, **request: Any) -> dict:
        if self._proc is None:
            raise PhoenixError("the Phoenix client is closed")
        try:
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")  # type: ignore[union-attr]
            self._proc.stdin.flush()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass  # _read reports the exit with the log's tail
        return self._read()

    # -- API --------------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one statement (committed if it writes); its rows as tuples of Python values
        (int, float, str, bool, None, bytes, Decimal, datetime in UTC)."""
        out = self._call(op="execute", sql=sql, params=[_encode(p) for p in params])
        return [tuple(_decode(v) for v in row) for row in out["rows"]]

    def upsert_many(self, sql: str, rows: Iterable[Sequence[Any]], batch: int = 1000) -> float:
        """Execute `sql` once per row, committing every `batch` rows and at the end; the
        seconds this took inside the JVM."""
        out = self._call(op="upsert_many", sql=sql, batch=batch,
                         rows=[[_encode(v) for v in row] for row in rows])
        return float(out["seconds"])

    def time_query(self, sql: str, params: Sequence[Any] = (), repeat: int = 1) -> list[float]:
        """Seconds per execution of query `sql` (prepared once), each including fetching every
        row, measured inside the JVM."""
        out = self._call(op="time_query", sql=sql, repeat=repeat,
                         params=[_encode(p) for p in params])
        return [float(s) for s in out["seconds"]]

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """Close the connection and end the JVM."""
        if self._proc is None:
            return
        try:
            self._proc.stdin.close()  # type: ignore[union-attr]
            self._proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self._kill()

    def __enter__(self) -> "PhoenixClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def phoenix_for_backend(url: str) -> PhoenixClient | None:
    """A Phoenix client on the `hibase cluster` serving Thrift at `url` (thrift://HOST:PORT on
    this machine), or None when no such cluster runs there or it runs without Phoenix."""
    cluster: HBaseCluster | None = cluster_for_url(url)
    if cluster is None or not cluster.phoenix or not cluster.zk_port:
        return None
    return PhoenixClient(cluster.zk_port, log=os.path.join(cluster.dir, "logs", "phoenix.log"))
