"""HBase's own shell (`hbase shell`: JRuby and HBase's Ruby commands) against the local cluster
kept in a folder: `hibase cluster shell DIR`. The shell is a client JVM of its own, with the
jars of shell-pom.xml (hbase-shell 2.4.17, the newest on Maven Central, and its HBase 2.4
client, which speaks HBase 2.6's protocol) and the cluster's hbase-site.xml.

    code = run_shell(HBaseCluster(".cluster"), script="put 't', 'r', 'f:q', 'v'\\n")
"""

from __future__ import annotations

import os
import signal
import subprocess

from .hbase import JVM_FLAGS, HBaseCluster
from .jars import _tool, resolve
from .local import ClusterError

__all__ = ["SHELL_VERSION", "shell_classpath", "shell_command", "run_shell"]

SHELL_VERSION = "2.4.17"  # shell-pom.xml's hbase.shell.version
# log4j 1 (the shell's HBase 2.4 client logs through it): warnings and errors to a file, so
# the terminal shows the shell's own output only
_LOG4J = """log4j.rootLogger=WARN,F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File={log}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{{ISO8601}} %p %c: %m%n
"""


def shell_classpath(progress: bool = True) -> list[str]:
    """The shell's jars (shell-pom.xml; Maven once, cached), JRuby first: it brings its own
    regular-expression engine (joni), newer than the one hbase-shell's pom names."""
    jars = resolve("shell-pom.xml", "hbase-shell", progress)
    return sorted(jars, key=lambda j: "jruby-complete" not in os.path.basename(j))


def shell_command(cluster: HBaseCluster, args: list[str], progress: bool = True) -> list[str]:
    """The java command line running HBase's shell with `args` (the shell's own: -n, a script
    path, ...) against `cluster`, which must run (ClusterError otherwise)."""
    running = cluster._running()
    if "master" not in running:
        what = "no cluster runs" if not running else \
            f"HBase does not run (only {', '.join(sorted(running))})"
        raise ClusterError(f"{what} in {cluster.dir}: start it with `hibase cluster start "
                           f"{cluster.dir}`")
    jars = shell_classpath(progress)
    log = cluster._path("logs", "shell.log")
    props = cluster._path("conf", "shell-log4j.properties")
    with open(props, "w") as fh:
        fh.write(_LOG4J.format(log=log))
    java = _tool("java", "Debian: apt-get install openjdk-17-jdk-headless")
    # a short-lived client: the quick JIT tier only (a statement's work is HBase's)
    return [java, "-Xmx512m", "-XX:TieredStopAtLevel=1", *JVM_FLAGS,
            f"-Dlog4j.configuration=file:{props}",
            "-cp", os.pathsep.join([cluster._path("conf"), *jars]),
            "org.jruby.JarBootstrapMain", *args]


def run_shell(cluster: HBaseCluster, script: str | None = None, path: str | None = None,
              progress: bool = True) -> int:
    """Run HBase's shell on `cluster` and return its exit code; its output goes to this
    process's stdout. `script`: statements fed on stdin; `path`: a file of statements; in
    both cases non-interactive (-n: the shell stops at the first failing statement, exit code
    1). Neither: the shell reads this process's stdin, interactive on a terminal (-n
    otherwise). Ctrl-C goes to the shell, not to this process."""
    interactive = script is None and path is None and os.isatty(0)
    args = ([] if interactive else ["-n"]) + ([] if path is None else [os.path.abspath(path)])
    cmd = shell_command(cluster, args, progress)
    stdin = subprocess.PIPE if script is not None else \
        subprocess.DEVNULL if path is not None else None
    proc = subprocess.Popen(cmd, stdin=stdin, text=True, cwd=cluster.dir)
    # ignored here only after the start: an ignored signal would stay ignored in the JVM
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc.communicate(script)
    finally:
        signal.signal(signal.SIGINT, old)
    return proc.returncode
