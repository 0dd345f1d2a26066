"""The Java side of the local cluster: HBase's and Phoenix's jars, resolved by Maven from the
package's poms on first use and cached, and the tools (javac, mvn, java) they need. Below
hbase.py, phoenix.py and coprocessor.py, which all build or run Java against these jars."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from importlib import resources
from typing import Callable

from .local import ClusterError, ServerMissing, log_tail

__all__ = ["cache_dir", "classpath", "resolve", "phoenix_classpath"]


def cache_dir() -> str:
    """Where the resolved classpath and the compiled Java helper are kept
    ($HIBASE_CACHE_DIR, else $XDG_CACHE_HOME/hibase or ~/.cache/hibase)."""
    base = os.environ.get("HIBASE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hibase")
    return base


def _resource(name: str) -> bytes:
    return resources.files(__package__).joinpath(name).read_bytes()


def _tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ServerMissing(f"{name} is not installed ({hint})")
    return path


def _work_dir(pom: str = "pom.xml", label: str = "hbase") -> str:
    """The folder of a pom's resolution: keyed by the pom's content."""
    digest = hashlib.sha256(_resource(pom)).hexdigest()[:12]
    return os.path.join(cache_dir(), f"{label}-{digest}")


def classpath(progress: bool = True) -> list[str]:
    """The jars of the local HBase, resolved by Maven on first use (shown as a progress bar of
    files downloaded) and cached; re-resolved if a jar vanished from the local repository."""
    return resolve("pom.xml", "hbase", progress)


def resolve(pom: str, label: str, progress: bool = True) -> list[str]:
    """The runtime jars of package-data pom `pom` (Maven, once; cached under cache_dir())."""
    work = _work_dir(pom, label)
    cp_file = os.path.join(work, "classpath.txt")
    if os.path.exists(cp_file):
        jars = open(cp_file).read().strip().split(os.pathsep)
        if jars and all(os.path.exists(j) for j in jars):
            return jars
    mvn = _tool("mvn", "Debian: apt-get install maven")
    _tool("java", "Debian: apt-get install openjdk-17-jdk-headless")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "pom.xml"), "wb") as fh:
        fh.write(_resource(pom))
    log_path = os.path.join(work, "mvn.log")
    tmp = cp_file + ".tmp"
    cmd = [mvn, "-B", "-f", os.path.join(work, "pom.xml"), "dependency:build-classpath",
           f"-Dmdep.outputFile={tmp}", "-Dmdep.includeScope=runtime"]
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(desc=f"resolving {label} jars (Maven)", unit=" files", file=sys.stderr)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, cwd=work)
        for line in proc.stdout:  # type: ignore[union-attr]
            log.write(line)
            if bar is not None and line.startswith(("Downloaded from", "[INFO] Downloaded")):
                bar.update(1)
        code = proc.wait()
    if bar is not None:
        bar.close()
    if code != 0 or not os.path.exists(tmp):
        errors_seen = [ln for ln in open(log_path, errors="replace") if "[ERROR]" in ln][:2]
        raise ClusterError(f"Maven could not resolve {label} jars (exit {code}; log {log_path}): "
                           + (" | ".join(e.strip() for e in errors_seen) or log_tail(log_path)))
    os.replace(tmp, cp_file)
    return open(cp_file).read().strip().split(os.pathsep)


def phoenix_classpath(progress: bool = True) -> list[str]:
    """HBase's jars, then those of Phoenix (phoenix-pom.xml) that HBase does not already bring:
    where both name an artifact, HBase's version wins (Phoenix 5.2.1 is built for HBase 2.6.1)."""
    jars = classpath(progress)
    seen = {os.path.dirname(os.path.dirname(j)) for j in jars}  # .../group/artifact
    extra = [j for j in resolve("phoenix-pom.xml", "phoenix", progress)
             if os.path.dirname(os.path.dirname(j)) not in seen]
    return jars + extra


def compiled_jar(sources: list[tuple[str, bytes]], kind: str, stem: str, what: str,
                 jars: Callable[[], list[str]]) -> str:
    """The path of a jar of Java `sources` ((resource name, bytes)), compiled with javac
    against `jars()` and packed at first use, cached under cache_dir()/`kind` by the sources'
    hash as `stem`-HASH.jar; `what` names it in errors. Built in a folder of this process and
    moved into place, so concurrent first uses do not see half a jar."""
    digest = hashlib.sha256(b"".join(body for _, body in sources)).hexdigest()[:12]
    folder = os.path.join(cache_dir(), kind)
    jar = os.path.join(folder, f"{stem}-{digest}.jar")
    if os.path.exists(jar):
        return jar
    cp = jars()
    javac = _tool("javac", "Debian: apt-get install openjdk-17-jdk-headless")
    jar_tool = _tool("jar", "Debian: apt-get install openjdk-17-jdk-headless")
    work = os.path.join(folder, f"build-{digest}-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    src_dir, out_dir = os.path.join(work, "src"), os.path.join(work, "classes")
    os.makedirs(out_dir)
    paths = []
    for name, body in sources:
        path = os.path.join(src_dir, *name.split("/")[1:])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(body)
        paths.append(path)
    got = subprocess.run([javac, "-nowarn", "--release", "11", "-d", out_dir, "-cp",
                          os.pathsep.join(cp), *paths], capture_output=True, text=True)
    if got.returncode != 0:
        raise ClusterError(f"javac failed on {what}: {got.stderr.strip()[-800:]}")
    tmp = jar + f".{os.getpid()}.tmp"
    got = subprocess.run([jar_tool, "cf", tmp, "-C", out_dir, "."], capture_output=True,
                         text=True)
    if got.returncode != 0:
        raise ClusterError(f"jar failed on {what}: {got.stderr.strip()[-800:]}")
    os.replace(tmp, jar)
    shutil.rmtree(work, ignore_errors=True)
    return jar
