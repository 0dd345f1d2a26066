"""hibase's index build as a MapReduce job (IndexBuildJob.java, in hibase.coprocessor's
mapreduce/ folder): the jar, built at first use (javac against HBase's jars and those of
mapreduce-pom.xml, resolved by Maven, cached under ~/.cache/hibase keyed by the sources' hash),
and one run of the job as a child JVM whose output goes to a log file.

Where the job runs is Hadoop's configuration's business: with none (the default here)
`mapreduce.framework.name` is `local` and the LocalJobRunner runs the map tasks in the child JVM,
`map_slots` at a time; with a cluster's configuration on the classpath ($HADOOP_CONF_DIR holding
mapred-site.xml with `mapreduce.framework.name=yarn`) the job is submitted to YARN and its
dependency jars shipped with it. HBase is found through hbase-site.xml: $HBASE_CONF_DIR, else
the configuration of the `hibase cluster` serving the store's Thrift port.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from importlib import resources
from typing import Any

from ..coprocessor import SOURCES as COPRO_SOURCES
from ..coprocessor import sources as copro_sources
from .jars import _tool, cache_dir, classpath, compiled_jar, resolve
from .local import ClusterError

__all__ = ["JOB", "SOURCES", "job_jar", "job_classpath", "run_build_job", "hbase_conf_dir",
           "JobFailed", "MapReduceJob"]

JOB = "io.hibase.IndexBuildJob"
SOURCES = (*COPRO_SOURCES, "mapreduce/io/hibase/IndexBuildJob.java")  # in hibase.coprocessor


class JobFailed(ClusterError):
    """The MapReduce job did not finish (the message names its log)."""

    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


def job_classpath(progress: bool = False) -> list[str]:
    """HBase's jars, then those of mapreduce-pom.xml HBase does not already bring (HBase's
    version wins where both name an artifact)."""
    jars = classpath(progress)
    seen = {os.path.dirname(os.path.dirname(j)) for j in jars}  # .../group/artifact
    return jars + [j for j in resolve("mapreduce-pom.xml", "mapreduce", progress)
                   if os.path.dirname(os.path.dirname(j)) not in seen]


def job_jar(progress: bool = False) -> str:
    """The path of the build job's jar (codec, observer and job classes), compiled at first
    use and cached."""
    job = resources.files("hibase.coprocessor").joinpath(SOURCES[-1])
    sources = [*copro_sources(), (SOURCES[-1], job.read_bytes())]
    return compiled_jar(sources, "mapreduce", "hibase-build-job", "the index build job",
                        lambda: job_classpath(progress))


def hbase_conf_dir(host: str, port: int) -> str:
    """The folder of the hbase-site.xml that reaches the store's HBase: $HBASE_CONF_DIR, else
    that of the `hibase cluster` serving Thrift on `port` of this machine."""
    env = os.environ.get("HBASE_CONF_DIR")
    if env:
        if not os.path.exists(os.path.join(env, "hbase-site.xml")):
            raise ClusterError(f"HBASE_CONF_DIR={env} holds no hbase-site.xml")
        return env
    if host in ("127.0.0.1", "localhost", "::1"):
        from .hbase import cluster_for_port
        cluster = cluster_for_port(port)
        if cluster is not None:
            return cluster._path("conf")
    raise ClusterError(
        f"--distributed needs the HBase configuration of the cluster behind {host}:{port} "
        "(the job reads the table's regions directly): set HBASE_CONF_DIR to the folder "
        "holding its hbase-site.xml")


def _log_error(path: str) -> str:
    """The most telling line of a failed job's log: its last exception or ERROR line."""
    try:
        with open(path, errors="replace") as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    except OSError:
        return "(no log)"
    for ln in reversed(lines):
        if ("Exception" in ln or "ERROR" in ln or "Error:" in ln) and not ln.startswith("at "):
            return ln[:400]
    return lines[-1][:400] if lines else "(empty log)"


def run_build_job(mode: str, spec_json: bytes, data_table: str, index_table: str, *,
                  conf_dir: str, regions: int, map_slots: int | None = None,
                  log_dir: str | None = None, heap_mb: int = 1024,
                  extra_conf: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run IndexBuildJob once (mode "reindex" or "entries"); its report (see the Java file)
    with "log" added. Raises JobFailed (one line, naming the log) when the job fails."""
    jar = job_jar()
    jars = job_classpath()
    java = _tool("java", "Debian: apt-get install openjdk-17-jdk-headless")
    log_dir = log_dir or os.path.join(cache_dir(), "jobs")
    os.makedirs(log_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    work = tempfile.mkdtemp(prefix=f"build-{stamp}-", dir=log_dir)
    log = os.path.join(work, "job.log")
    spec_path = os.path.join(work, "spec.json")
    report_path = os.path.join(work, "report.json")
    with open(spec_path, "wb") as fh:
        fh.write(spec_json)
    slots = map_slots or os.cpu_count() or 1
    conf = {"hadoop.tmp.dir": os.path.join(work, "hadoop"),
            "mapreduce.local.map.tasks.maximum": slots,
            "hibase.build.regions": regions,
            **(extra_conf or {})}
    cp = [conf_dir]
    if os.environ.get("HADOOP_CONF_DIR"):
        cp.append(os.environ["HADOOP_CONF_DIR"])
    from .hbase import JVM_FLAGS
    log4j = os.path.join(work, "log4j2.properties")  # the cluster's logging: INFO to the log
    with open(log4j, "wb") as fh:
        fh.write(resources.files(__package__).joinpath("log4j2.properties").read_bytes())
    cmd = [java, f"-Xmx{heap_mb}m", *JVM_FLAGS, f"-Dhibase.log.file={log}",
           f"-Dlog4j2.configurationFile={log4j}",
           "-cp", os.pathsep.join([*cp, jar, *jars]), JOB,
           *[f"-D{k}={v}" for k, v in conf.items()],
           mode, spec_path, data_table, index_table, report_path]
    with open(log, "ab") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    report: dict[str, Any] = {}
    if os.path.exists(report_path):
        with open(report_path) as fh:
            report = json.load(fh)
    if proc.returncode != 0 or not report.get("ok"):
        raise JobFailed(f"the MapReduce index build job failed (exit {proc.returncode}): "
                        f"{_log_error(log)} (job log: {log})", log)
    report["log"] = log
    return report


class MapReduceJob:
    """The index build's job for `Connection.create_index(..., job=MapReduceJob())` and
    `build_index(..., job=...)` (`hibase index create|build ... --distributed`): one map task
    per region, `map_slots` at once under the LocalJobRunner; logs under `log_dir`."""

    def __init__(self, map_slots: int | None = None, log_dir: str | None = None):
        self.map_slots = map_slots
        self.log_dir = log_dir

    def check(self, store: Any) -> None:
        """Only a store on a real HBase (whose configuration is found) can run the job; the
        jar is compiled here, before the build changes anything."""
        from ..errors import InvalidArgument
        from ..store.hbase import HBaseStore
        if not isinstance(store, HBaseStore):
            raise InvalidArgument(
                f"--distributed runs the build as a MapReduce job over HBase regions; the "
                f"store at {store.path} is not HBase (an embedded store or a gateway): build "
                "without --distributed")
        hbase_conf_dir(store.opts["host"], store.opts["port"])
        job_jar()

    def run(self, store: Any, mode: str, spec_json: bytes, table: str, index_kv: str,
            regions: int) -> dict[str, Any]:
        return run_build_job(mode, spec_json, store.hbase_name(table),
                             store.hbase_name(index_kv, kv=True),
                             conf_dir=hbase_conf_dir(store.opts["host"], store.opts["port"]),
                             regions=regions, map_slots=self.map_slots, log_dir=self.log_dir)
