"""`hibase serve`: run a front end over a store folder (for now HBase's Thrift1 gateway)."""

from __future__ import annotations

import sys

import click

from ..extras import require
from .base import durability_option, open_store

__all__ = ["serve_command"]


@click.command("serve")
@click.argument("dir", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--thrift", is_flag=True,
              help="Serve HBase's Thrift1 interface (what happybase and `hbase thrift` "
                   "clients speak).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; 0.0.0.0 listens on every interface.")
@click.option("--port", type=click.IntRange(0, 65535), default=9090, show_default=True,
              help="TCP port (0 picks a free one, printed at start).")
@click.option("--thrift2-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Also serve HBase's Thrift2 getScannerResults (a short scan in one call) on "
                   "this port; hibase clients use it with thrift://HOST:PORT?thrift2_port=N.")
@click.option("--framed", is_flag=True,
              help="Framed transport (HBase's -hsha / -nonblocking servers; happybase "
                   "transport='framed'); default buffered.")
@click.option("--compact", is_flag=True,
              help="Compact protocol (happybase protocol='compact'); default binary.")
@click.option("--workers", type=click.IntRange(min=1), default=32, show_default=True,
              help="Calls run at once (threads); connections are many more, see "
                   "--max-connections.")
@click.option("--max-connections", type=click.IntRange(min=1), default=4096, show_default=True,
              help="Open client connections allowed; past it a new one is closed at once "
                   "instead of waiting.")
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
              show_default=True, metavar="SECONDS",
              help="Close a connection with no call for this long (HBase's gateway: 60 s).")
@click.option("--read-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
              show_default=True, metavar="SECONDS",
              help="Time a client has to send a whole call once it starts (and to take the "
                   "reply); then it gets an error and is closed.")
@click.option("--max-message", type=click.IntRange(min=1), default=64 * 1024 * 1024,
              show_default=True, metavar="BYTES",
              help="Largest call (or frame) accepted; bigger ones get an error and a close.")
@click.option("--max-string", type=click.IntRange(min=1), default=16 * 1024 * 1024,
              show_default=True, metavar="BYTES", help="Largest string or value in a call.")
@click.option("--max-items", type=click.IntRange(min=1), default=1_000_000, show_default=True,
              help="Most items in one list, set or map of a call.")
@click.option("--scanner-timeout", type=click.FloatRange(min=0, min_open=True), default=600.0,
              show_default=True, metavar="SECONDS",
              help="Drop a scanner no call has used for this long.")
@durability_option
@click.option("--read-only", is_flag=True,
              help="Refuse every write and DDL call (puts, deletes, increments, create/delete/"
                   "enable/disable/compact) with an IOError; reads work. The store is opened "
                   "read-only, so this can run beside a writer of DIR (serving DIR as it was at start).")
@click.option("--allow", "allow", multiple=True, metavar="CIDR",
              help="Accept connections only from this network (repeatable, e.g. --allow "
                   "10.0.0.0/8 --allow 2001:db8::/32); others are closed before any call is "
                   "read. Default: loopback only (127.0.0.0/8 and ::1). Everyone: --allow "
                   "0.0.0.0/0 --allow ::/0.")
@click.option("--token", envvar="HIBASE_GATEWAY_TOKEN", default=None, metavar="TEXT",
              help="Secret hibase clients give (thrift://...?token=TEXT) before they may "
                   "create, drop or write hibase's own tables (hibase_meta, index tables); "
                   "other clients may never. Without it any hibase client may. Also read "
                   "from $HIBASE_GATEWAY_TOKEN.")
@click.option("--tls-cert", type=click.Path(dir_okay=False, exists=True), default=None,
              metavar="FILE",
              help="Serve TLS (1.2 or newer) with this PEM certificate chain (needs "
                   "--tls-key); clients use thrifts://HOST:PORT (?tls_ca=FILE for a private "
                   "CA).")
@click.option("--tls-key", type=click.Path(dir_okay=False, exists=True), default=None,
              metavar="FILE", help="The PEM private key of --tls-cert.")
def serve_command(dir: str, thrift: bool, host: str, port: int, thrift2_port: int | None,
                  framed: bool, compact: bool,
                  workers: int, max_connections: int, idle_timeout: float, read_timeout: float,
                  max_message: int, max_string: int, max_items: int,
                  scanner_timeout: float, durability: str, read_only: bool,
                  allow: tuple[str, ...], token: str | None, tls_cert: str | None,
                  tls_key: str | None) -> None:
    """Serve the store in DIR (created if missing) to network clients until SIGTERM or
    Ctrl-C, then stop accepting, finish running calls and close the store.

    With --thrift it speaks HBase's Thrift1 interface, so happybase programs (and any Thrift1
    client) use the store as they use HBase: tables, gets, puts, deletes, scanners with filter
    strings, counters, regions. Writes keep hibase's secondary indexes up to date. The store
    stays locked for writing by this process while it serves.

    hibase commands and programs reach it as thrift://HOST:PORT (`hibase query
    thrift://127.0.0.1:9090 "SELECT ..."`): at start the store's tables and declared column
    types are published in the table hibase_meta, the catalog they read. Indexes made on the
    folder are kept exact but not used by thrift:// clients, which keep their own: create
    indexes through the thrift:// URL for them.

    Idle, slow or garbage clients cannot lock others out: connections are read by one loop
    and a call reaches a worker only once complete; idle connections close after
    --idle-timeout, calls over the size caps get an error and a close, and past
    --max-connections new connections are refused at once.

    Exposing it: by default only loopback clients may connect (--allow opens networks),
    --read-only refuses every write and DDL call, --tls-cert/--tls-key encrypt the port(s),
    and hibase's own tables (hibase_meta, the index tables) are only created, dropped or
    written by hibase clients (with --token: only by those that know it).

    Example:

    \b
        hibase serve --thrift data/
        hibase serve --thrift --host 0.0.0.0 --port 9091 --framed --compact data/
        hibase serve --thrift --port 9090 --thrift2-port 9095 data/
        hibase serve --thrift --durability fsync data/
        hibase serve --thrift --idle-timeout 30 --max-connections 2000 --max-message 8388608 data/
        hibase serve --thrift --read-only --host 0.0.0.0 --allow 10.0.0.0/8 data/
        hibase serve --thrift --host 0.0.0.0 --allow 10.1.0.0/16 --token s3cret \\
            --tls-cert gw.pem --tls-key gw.key data/   # clients: thrifts://gw:9090?token=s3cret
        python -c "import happybase; print(happybase.Connection('127.0.0.1').tables())"
    """
    if not thrift:
        raise click.UsageError("choose a front end: --thrift (HBase's Thrift1 interface)")
    require("hbase", "the Thrift gateway (hibase serve --thrift)")
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("TLS needs both --tls-cert and --tls-key")
    from ..server.policy import DEFAULT_ALLOW, parse_networks

    try:
        parse_networks(allow)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--allow") from None
    from ..server.catalog import publish_catalog
    from ..server.thrift import ThriftServer, serve
    from ..server.wire import Limits

    transport = "framed" if framed else "buffered"
    protocol = "compact" if compact else "binary"

    scheme = "thrifts" if tls_cert else "thrift"

    def ready(server: ThriftServer) -> None:
        h, p = server.address
        extra = "".join(x for x, on in ((", TLS", tls_cert), (", read-only", read_only),
                                        (", token", token)) if on)
        click.echo(f"Serving {dir} over HBase Thrift1 on {h}:{p} ({transport} transport, "
                   f"{protocol} protocol{extra}); stop with Ctrl-C or SIGTERM.")
        if server.thrift2 is not None:
            p2 = server.thrift2.address[1]
            click.echo(f"Thrift2 (getScannerResults) on {h}:{p2}; hibase clients: "
                       f"{scheme}://{h}:{p}?thrift2_port={p2}")
        click.echo(f"Clients allowed from {' '.join(allow or DEFAULT_ALLOW)}.")
        if not allow and host not in ("127.0.0.1", "localhost", "::1"):
            click.echo(f"Note: listening on {host}, but only loopback clients may connect; "
                       "open networks with --allow CIDR.", err=True)
        sys.stdout.flush()  # the address lines reach a parent reading our stdout now

    db = open_store(dir, create=not read_only, read_only=read_only, durability=durability)
    if not read_only:  # a read-only gateway serves the catalog a writable one published
        publish_catalog(db)  # hibase's thrift:// clients read the tables from hibase_meta
    try:
        serve(db, host=host, port=port, transport=transport, protocol=protocol,
              workers=workers, scanner_timeout=scanner_timeout, ready=ready,
              thrift2_port=thrift2_port,
              idle_timeout=idle_timeout, read_timeout=read_timeout,
              max_connections=max_connections,
              limits=Limits(max_message=max_message, max_string=max_string, max_items=max_items),
              read_only=read_only, allow=allow or DEFAULT_ALLOW, token=token,
              tls_cert=tls_cert, tls_key=tls_key)
    except KeyboardInterrupt:  # pragma: no cover - serve() turns SIGINT into a clean stop
        pass
    finally:
        db.close()
    click.echo("Stopped; store closed.", err=True)
