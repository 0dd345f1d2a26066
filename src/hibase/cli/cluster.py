"""`hibase cluster start|stop|status|shell DIR`: a local Apache HBase (with its Thrift1 server) and
Redis cache nodes for trying hibase on real HBase (hibase/cluster/)."""

from __future__ import annotations

import json
import sys

import click

from ..extras import require

from .base import HibaseGroup

__all__ = ["cluster"]


@click.group(cls=HibaseGroup)
def cluster() -> None:
    """A local Apache HBase 2.6 and Redis cache nodes, on 127.0.0.1, kept in a folder.

    `start` runs standalone HBase (master, region server and ZooKeeper in one JVM, data in
    DIR/hbase), or with --regionservers N (N > 1) HBase distributed over processes of this
    machine (HBase's ZooKeeper, a master and N region servers, each its own JVM, still on the
    local filesystem), HBase's Thrift1 server, its Thrift2 server (one-call short scans: the
    thrift2_port in the URL) and N Redis nodes (redis-server needed; --redis-nodes 0 for none)
    each with its `hibase cache-node` service registered in that ZooKeeper, then prints the two
    URLs to use. The jars come from Maven Central the first time (Java 17 and Maven needed).
    `stop` ends what `start` started; `status` lists each process (master, thrift, thrift2,
    redis-N, cache-node-N; zookeeper and regionserver-N when distributed) and each region
    server's port and region count; `shell` runs HBase's own shell on it.

    Example:

    \b
        hibase cluster start .cluster
        # thrift://127.0.0.1:PORT?thrift2_port=PORT2 and zk://127.0.0.1:PORT/hibase: in Python,
        #   hibase.connect("thrift://127.0.0.1:PORT?thrift2_port=PORT2",
        #                  cache="zk://127.0.0.1:PORT/hibase")
        hibase cluster status .cluster
        echo "list" | hibase cluster shell .cluster
        hibase cluster stop .cluster
    """


@cluster.command("start")
@click.argument("dir", type=click.Path(file_okay=False))
@click.option("--redis-nodes", type=click.IntRange(min=0), default=None,
              help="Redis cache nodes to run, each with its cache-node service (default: as "
                   "DIR's last start, else 2).")
@click.option("--thrift-port", type=click.IntRange(1, 65535), default=None,
              help="Port of HBase's Thrift1 server (default: a free one, kept across starts).")
@click.option("--zk-port", type=click.IntRange(1, 65535), default=None,
              help="Port of HBase's ZooKeeper (default: a free one, kept across starts).")
@click.option("--regionservers", type=click.IntRange(min=1), default=None,
              help="Region servers (default: as DIR's last start, else 1). 1: standalone HBase "
                   "(one JVM); N > 1: a master and N "
                   "region server JVMs and HBase's ZooKeeper, each its own process (a killed "
                   "region server's regions move to the others within ~10-20 s).")
@click.option("--heap-mb", type=click.IntRange(min=256), default=None,
              help="Java heap of the standalone HBase JVM (default 1024), or of each region "
                   "server (default 512; the master gets 384, ZooKeeper 192).")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True,
              help="Seconds to wait for HBase to serve Thrift calls.")
@click.option("--phoenix/--no-phoenix", default=None,
              help="Put Apache Phoenix 5.2.1's server jars (and its WAL codec) in HBase, so "
                   "Phoenix can be compared with hibase on it (hibase.cluster.phoenix; "
                   "default: as DIR's last start, else on).")
@click.option("--progress/--no-progress", default=None,
              help="Show the wait for HBase on stderr (default: when stderr is a terminal).")
@click.option("--coprocessor/--no-coprocessor", default=None,
              help="Load hibase's index coprocessor on every region (built at first use; "
                   "`hibase cluster coprocessor --help`): indexes made on this HBase are then "
                   "kept by the region server, whoever writes (default: as DIR's last start, "
                   "else on).")
def start(dir: str, redis_nodes: int | None, regionservers: int | None, thrift_port: int | None,
          zk_port: int | None, heap_mb: int | None, timeout: float, phoenix: bool | None,
          progress: bool | None, coprocessor: bool | None) -> None:
    """Start the cluster kept in DIR (created if missing) and print its URLs, one per line.

    Returns once HBase creates and drops a probe table through Thrift and every cache node is
    registered; the processes keep running (pid files in DIR/pids, logs in DIR/logs). Starting
    a running cluster prints its URLs again. Starting a partly running one (a JVM killed with
    -9) starts what is down and says on stderr what it found and did: pid files of dead
    processes are removed; a region server that died alone (--regionservers N) is started
    again; else the HBase processes still alive are stopped and HBase starts again as a whole
    (its WAL replayed), cache nodes with it. With --redis-nodes above 0, redis-server must be
    installed: that is checked before anything starts.

    Example:

    \b
        hibase cluster start .cluster --redis-nodes 3
        hibase cluster start .cluster3 --regionservers 3
    """
    require("cluster", "hibase cluster")
    from ..cluster import HBaseCluster
    from ..cluster.local import find_redis_server

    c = HBaseCluster(dir, redis_nodes=redis_nodes, thrift_port=thrift_port, zk_port=zk_port,
                     heap_mb=heap_mb, phoenix=phoenix, coprocessor=coprocessor,
                     regionservers=regionservers)
    if c.redis_nodes and find_redis_server() is None:  # before HBase, not 30 s after
        raise click.ClickException(
            "redis-server is not installed (Debian: apt-get install redis-server); or start "
            "without cache nodes: hibase cluster start --redis-nodes 0 ...")
    c.start(timeout=timeout, progress=sys.stderr.isatty() if progress is None else progress)
    for line in c.recovery:  # a partly running cluster (a JVM killed with -9), completed
        click.echo(line, err=True)
    for url in c.urls:
        click.echo(url)


@cluster.command("stop")
@click.argument("dir", type=click.Path(file_okay=False, exists=True))
def stop(dir: str) -> None:
    """Stop the processes `hibase cluster start DIR` started (and no other), keeping the data.

    Cache nodes and Redis first, then HBase (SIGTERM, SIGKILL after 90 s).

    Example:

    \b
        hibase cluster stop .cluster
    """
    from ..cluster import HBaseCluster

    stopped = HBaseCluster(dir).stop()
    click.echo(f"stopped {', '.join(stopped)}" if stopped else f"nothing runs in {dir}",
               err=True)


@cluster.command("status")
@click.argument("dir", type=click.Path(file_okay=False, exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
def status(dir: str, as_json: bool) -> None:
    """Show which processes of the cluster in DIR run, each region server's pid, port and
    region count (HBase's Admin API), and its URLs; exit code 1 unless all run and HBase
    answers Thrift calls. --json: one object; its "regionservers" is a list of {name, pid,
    port, running, regions, meta} (meta: it holds hbase:meta).

    Example:

    \b
        hibase cluster status .cluster
    """
    from ..cluster import HBaseCluster

    st = HBaseCluster(dir).status()
    if as_json:
        click.echo(json.dumps(st))
    else:
        for name, pid in sorted(st["running"].items()):
            click.echo(f"{name}\trunning\tpid {pid}")
        for name in st["stopped"]:
            click.echo(f"{name}\tstopped")
        for rs in st["regionservers"]:
            if rs["running"] and rs["regions"] is not None:
                click.echo(f"region server {rs['name']}\tport {rs['port']}\tregions "
                           f"{rs['regions']}{chr(9) + 'hbase:meta' if rs['meta'] else ''}")
        if st["running"]:
            click.echo(st["thrift_url"])
            click.echo(st["zk_url"])
    if st["stopped"] or not st["running"] or not st["ready"]:
        raise SystemExit(1)


@cluster.command("shell")
@click.argument("dir", type=click.Path(file_okay=False, exists=True))
@click.argument("script", type=click.Path(dir_okay=False, exists=True), required=False)
def shell(dir: str, script: str | None) -> None:
    """Run HBase's own shell (`hbase shell`) on the cluster kept in DIR.

    On a terminal the shell is interactive; otherwise it reads its statements from stdin, or
    from the file SCRIPT, and stops at the first failing one with exit code 1 (`hbase shell
    -n`). The shell is hbase-shell 2.4.17 with its JRuby and HBase 2.4 client jars (Maven
    Central has no 2.5 or 2.6 hbase-shell), resolved by Maven the first time and cached: a 2.4
    client speaks HBase 2.6's protocol. Its rows go through the region servers like any
    client's, so hibase's index coprocessor keeps indexes exact for them. Its log goes to
    DIR/logs/shell.log.

    Example:

    \b
        echo "put 't', 'r1', 'f:q', 'v'" | hibase cluster shell .cluster
        hibase cluster shell .cluster statements.rb
        hibase cluster shell .cluster          # interactive, on a terminal
    """
    from ..cluster import HBaseCluster
    from ..cluster.shell import run_shell

    code = run_shell(HBaseCluster(dir), path=script, progress=sys.stderr.isatty())
    if code:
        raise SystemExit(code)



@cluster.command("coprocessor")
@click.option("--jar-out", type=click.Path(file_okay=False), default=None,
              help="Write the jar (built by Maven) into this folder as hibase-coprocessor.jar, "
                   "ready to copy to HDFS or the region servers.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {jar, class, scan_class, hbase, site_property, table_attribute} as one "
                   "JSON object.")
def coprocessor(jar_out: str | None, as_json: bool) -> None:
    """Build hibase's region-server coprocessor (once; `mvn package` against HBase 2.6.1)
    and print how to load it into an HBase of your own (docs/production.md says more).

    The coprocessor (io.hibase.IndexObserver, a RegionObserver; io.hibase.ScanObserver runs
    pushed scan work) keeps every hibase index made while it runs on the table exact on each
    put, delete, increment and append from any client (hibase, the HBase shell, happybase,
    Java or Spark). `hibase cluster start` loads it by default. HBase versions: 2.6 (built and
    tested against 2.6.1); other versions are untested.

    With --jar-out DIR the jar is copied to DIR/hibase-coprocessor.jar. Put it where every
    region server reads it (HDFS, say hdfs:///hbase/lib/), then load it on one table from the
    HBase shell:

    \b
        alter 't', METHOD => 'table_att', 'coprocessor' =>
              'hdfs:///hbase/lib/hibase-coprocessor.jar|io.hibase.IndexObserver|1073741823|'

    or on every region (the jar in each region server's lib/, hbase-site.xml, restart them):

    \b
        <property><name>hbase.coprocessor.region.classes</name>
                  <value>io.hibase.IndexObserver,io.hibase.ScanObserver</value></property>

    Then create the indexes (`hibase index create`, or db.create_index): each index made while
    the coprocessor runs on the table is kept by it (`upkeep: server` in `hibase index list
    --json`). Indexes made before stay kept by hibase's clients only: drop and create them
    again to move them to the server (`hibase index drop`, `hibase index create`).

    hbase.coprocessor.abortonerror (HBase's setting, default true) aborts a region server
    whose coprocessor throws anything but an IOException; IndexObserver turns its own
    failures into a failed write batch (the client gets the error, the server stays up).
    hbase.index.catalog.lease.ms (region server configuration, default 0) is how long a
    region trusts the index definitions it read (0: one local get per write batch).

    Upgrade: write the new jar under a new name and `alter` the attribute to it (the regions
    reopen with it). Removal: drop the table's hibase indexes first (nothing keeps them once
    the coprocessor is gone), then `alter 't', METHOD => 'table_att_unset', NAME =>
    'coprocessor$1'`.

    Example:

    \b
        hibase cluster coprocessor --jar-out dist/
    """
    import os
    import shutil

    from ..coprocessor import HBASE_VERSIONS, OBSERVER, PRIORITY, SCAN_OBSERVER, coprocessor_jar

    jar = coprocessor_jar(progress=not as_json)
    if jar_out is not None:
        os.makedirs(jar_out, exist_ok=True)
        dest = os.path.join(os.path.abspath(jar_out), "hibase-coprocessor.jar")
        shutil.copyfile(jar, dest + ".tmp")
        os.replace(dest + ".tmp", dest)
        jar, where = dest, "hdfs:///hbase/lib/hibase-coprocessor.jar"
    else:
        where = "hdfs:///PATH/hibase-coprocessor.jar"  # the cache's file is this machine's only
    site = f"hbase.coprocessor.region.classes={OBSERVER},{SCAN_OBSERVER}"
    attr = f"'coprocessor' => '{where}|{OBSERVER}|{PRIORITY}|'"
    if as_json:
        click.echo(json.dumps({"jar": jar, "class": OBSERVER, "scan_class": SCAN_OBSERVER,
                               "hbase": HBASE_VERSIONS, "site_property": site,
                               "table_attribute": attr}))
        return
    click.echo(f"jar\t{jar}")
    click.echo(f"class\t{OBSERVER}")
    click.echo(f"hbase\t{HBASE_VERSIONS}")
    click.echo(f"copy\thdfs dfs -put {jar} {where}")
    click.echo(f"table\talter 'TABLE', METHOD => 'table_att', {attr}")
    click.echo(f"hbase-site.xml\t{site}")
    click.echo("then\thibase index create ... (indexes made before: drop and create again); "
               "see docs/production.md")
