"""hibase's region-server coprocessor: index upkeep and scan work inside HBase.

The Java sources (java/io/hibase/: IndexObserver, a RegionObserver whose roles are split into
Specs, RowState, ObserverCore, CountCells, BatchUpkeep, Rebuild and Recovery; ScanObserver;
the shared codec) are built by Maven from pom.xml here into one jar with nothing bundled
(HBase 2.6 provides every class it uses); test/ holds their JUnit tests (`mvn test`). The
build runs in a copy of this folder under the cache (~/.cache/hibase/coprocessor), keyed by the
hash of the pom and sources, so an installed package builds it too; no jar is kept in the
repository. docs/production.md says how to deploy the jar on an HBase of your own.

    jar = coprocessor_jar()        # path of hibase-coprocessor-<hash>.jar (built at first use)
    unit_tests().returncode        # 0 when every JUnit test passed (Maven's output: .output)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from xml.etree import ElementTree

from ..errors import BackendUnavailable

__all__ = ["OBSERVER", "SCAN_OBSERVER", "CODEC", "HBASE_VERSIONS", "BuildError", "ToolMissing",
           "coprocessor_jar", "unit_tests", "UnitTestRun", "check_codec_vectors", "SOURCES",
           "sources"]

OBSERVER = "io.hibase.IndexObserver"
SCAN_OBSERVER = "io.hibase.ScanObserver"  # work pushed into region scans (issue 39)
CODEC = "io.hibase.CodecVectors"  # main: HibaseCodec checked against Python's vectors
HBASE_VERSIONS = "2.6"  # built against 2.6.1 (pom.xml); the hooks it uses are HBase 2.x API
PRIORITY = 1073741823  # Coprocessor.PRIORITY_USER: after HBase's own (system) coprocessors


class BuildError(BackendUnavailable):
    """The coprocessor's jar could not be built (Java or Maven missing, or Maven failed)."""


class ToolMissing(BuildError):
    """Maven or the JDK (javac, java) is not installed."""


def _names(folder: str) -> list[str]:
    root = resources.files(__package__).joinpath(folder)
    return sorted(f"{folder}/{p.name}" for p in root.iterdir() if p.name.endswith(".java"))


SOURCES = tuple(_names("java/io/hibase"))  # the jar's classes (what `mvn package` compiles)


def sources() -> list[tuple[str, bytes]]:
    """(resource name, bytes) of the jar's Java sources (the MapReduce job compiles them too)."""
    root = resources.files(__package__)
    return [(name, root.joinpath(name).read_bytes()) for name in SOURCES]


def _tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolMissing(f"{name} is not installed ({hint})")
    return path


def cache_dir() -> str:
    """Where the jar is built and kept: $HIBASE_CACHE_DIR/coprocessor, else under
    $XDG_CACHE_HOME/hibase or ~/.cache/hibase (as the cluster's other Java helpers)."""
    base = os.environ.get("HIBASE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hibase")
    return os.path.join(base, "coprocessor")


def _project(tests: bool) -> list[tuple[str, bytes]]:
    root = resources.files(__package__)
    names = ["pom.xml", *SOURCES, *(_names("test/io/hibase") if tests else [])]
    return [(name, root.joinpath(name).read_bytes()) for name in names]


def _maven(goals: list[str], tests: bool, work: str) -> subprocess.CompletedProcess:
    """Copy the Maven project (with test/ when `tests`) into `work` and run `goals` there."""
    mvn = _tool("mvn", "Debian: apt-get install maven")
    _tool("javac", "Debian: apt-get install openjdk-17-jdk-headless")
    shutil.rmtree(work, ignore_errors=True)
    for name, body in _project(tests):
        path = os.path.join(work, *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(body)
    return subprocess.run([mvn, "-B", "-q", "-Dstyle.color=never", *goals], cwd=work,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1800)


def coprocessor_jar(progress: bool = False) -> str:
    """The path of the coprocessor jar, built by `mvn package` at first use and cached by the
    hash of the pom and sources (a changed source builds a new jar). Built in a folder of this
    process and moved into place, so concurrent first uses never see half a jar."""
    digest = hashlib.sha256(b"".join(body for _, body in _project(False))).hexdigest()[:12]
    folder = cache_dir()
    jar = os.path.join(folder, f"hibase-coprocessor-{digest}.jar")
    if os.path.exists(jar):
        return jar
    if progress:
        import sys
        print("building the coprocessor's jar (Maven)...", file=sys.stderr)
    work = os.path.join(folder, f"build-{digest}-{os.getpid()}")
    got = _maven(["package", "-DskipTests"], False, work)
    built = os.path.join(work, "target", "hibase-coprocessor-1.jar")
    if got.returncode != 0 or not os.path.exists(built):
        raise BuildError(f"Maven could not build the coprocessor (exit {got.returncode}; in "
                         f"{work}): {(got.stdout + got.stderr).strip()[-1500:]}")
    os.replace(built, jar)
    shutil.rmtree(work, ignore_errors=True)
    return jar


@dataclass
class UnitTestRun:
    """What `mvn test` did: its exit code and output, and the JUnit tests Surefire ran
    (counted from its reports, per test class)."""
    returncode: int
    output: str
    tests: dict[str, int]


def unit_tests(work: str | None = None) -> UnitTestRun:
    """Run the Java sources' JUnit tests (`mvn test`, Surefire) in a fresh copy of the project
    (`work`, else a folder under the cache)."""
    work = work or os.path.join(cache_dir(), f"test-{os.getpid()}")
    try:
        got = _maven(["test"], True, work)
        tests = {}
        reports = os.path.join(work, "target", "surefire-reports")
        for name in sorted(os.listdir(reports)) if os.path.isdir(reports) else []:
            if name.startswith("TEST-") and name.endswith(".xml"):
                suite = ElementTree.parse(os.path.join(reports, name)).getroot()
                tests[suite.get("name", name)] = int(suite.get("tests", "0"))
        return UnitTestRun(got.returncode, got.stdout + got.stderr, tests)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_codec_vectors(path: str) -> subprocess.CompletedProcess:
    """Run the Java codec over a vector file (CodecVectors.main): exit 0 when every case
    gives the bytes Python wrote, else the failures on stdout."""
    java = _tool("java", "Debian: apt-get install openjdk-17-jdk-headless")
    return subprocess.run([java, "-cp", coprocessor_jar(), CODEC, path], capture_output=True,
                          text=True, timeout=120)
