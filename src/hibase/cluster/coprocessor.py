"""hibase's region-server coprocessor: index upkeep inside HBase (java/io/hibase/).

`IndexObserver` (a RegionObserver) keeps every index whose definition says ``"upkeep":
"server"`` exact on each put and delete any client makes; `HibaseCodec` is codec.py's key
encoding in Java. The jar is built at first use: javac against the classpath of the local
HBase (cluster/pom.xml, resolved by Maven like the cluster's other Java helpers), packed with
the JDK's `jar`, cached under ~/.cache/hibase keyed by the sources' hash; no jar is kept in the
repository.

    jar = coprocessor_jar()   # path of hibase-coprocessor-<hash>.jar

Deploying on an HBase of your own (2.6): copy the jar into every region server's lib/ (or
onto its classpath) and either load it on every region (hbase-site.xml)

    <property><name>hbase.coprocessor.region.classes</name>
              <value>io.hibase.IndexObserver</value></property>

or on one table (HBase shell; the jar on HDFS or a path every region server can read):

    alter 't', METHOD => 'table_att',
          'coprocessor' => 'file:///path/hibase-coprocessor.jar|io.hibase.IndexObserver|1073741823|'

Tables that are not hibase tables are left alone (one catalog lookup at their first write).
"""

from __future__ import annotations

import subprocess
from importlib import resources

from .jars import _tool, classpath, compiled_jar

__all__ = ["OBSERVER", "SCAN_OBSERVER", "CODEC", "coprocessor_jar", "check_codec_vectors", "SOURCES"]

OBSERVER = "io.hibase.IndexObserver"
SCAN_OBSERVER = "io.hibase.ScanObserver"  # work pushed into region scans (issue 39)
CODEC = "io.hibase.HibaseCodec"
SOURCES = ("java/io/hibase/HibaseCodec.java", "java/io/hibase/DecimalCodec.java",
           "java/io/hibase/TemporalCodec.java", "java/io/hibase/IndexObserver.java",
           "java/io/hibase/PushedScan.java", "java/io/hibase/ScanObserver.java")


def _sources() -> list[tuple[str, bytes]]:
    root = resources.files(__package__)
    return [(name, root.joinpath(name).read_bytes()) for name in SOURCES]


def coprocessor_jar(progress: bool = False) -> str:
    """The path of the coprocessor jar, compiled and packed at first use (cached)."""
    return compiled_jar(_sources(), "coprocessor", "hibase-coprocessor", "the coprocessor",
                        lambda: classpath(progress))


def check_codec_vectors(path: str) -> subprocess.CompletedProcess:
    """Run the Java codec over a vector file (HibaseCodec.main): exit 0 when every case
    gives the bytes Python wrote, else the failures on stdout."""
    java = _tool("java", "Debian: apt-get install openjdk-17-jdk-headless")
    return subprocess.run([java, "-cp", coprocessor_jar(), CODEC, path], capture_output=True,
                          text=True, timeout=120)
