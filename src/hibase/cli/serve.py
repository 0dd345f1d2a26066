"""`hibase serve`: run a front end over a store folder (for now HBase's Thrift1 gateway)."""

from __future__ import annotations

import click

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
@click.option("--framed", is_flag=True,
              help="Framed transport (HBase's -hsha / -nonblocking servers; happybase "
                   "transport='framed'); default buffered.")
@click.option("--compact", is_flag=True,
              help="Compact protocol (happybase protocol='compact'); default binary.")
@click.option("--workers", type=click.IntRange(min=1), default=128, show_default=True,
              help="Client connections served at once; more wait until one closes.")
@click.option("--scanner-timeout", type=click.FloatRange(min=0, min_open=True), default=600.0,
              show_default=True, metavar="SECONDS",
              help="Drop a scanner no call has used for this long.")
def serve_command(dir: str, thrift: bool, host: str, port: int, framed: bool, compact: bool,
                  workers: int, scanner_timeout: float) -> None:
    """Serve the store in DIR (created if missing) to network clients until SIGTERM or
    Ctrl-C, then stop accepting, finish running calls and close the store.

    With --thrift it speaks HBase's Thrift1 interface, so happybase programs (and any Thrift1
    client) use the store as they use HBase: tables, gets, puts, deletes, scanners with filter
    strings, counters, regions. Writes keep hibase's secondary indexes up to date. The store
    stays locked for writing by this process while it serves.

    Example:

    \b
        hibase serve --thrift data/
        hibase serve --thrift --host 0.0.0.0 --port 9091 --framed --compact data/
        python -c "import happybase; print(happybase.Connection('127.0.0.1').tables())"
    """
    if not thrift:
        raise click.UsageError("choose a front end: --thrift (HBase's Thrift1 interface)")
    from ..server.thrift import ThriftServer, serve

    transport = "framed" if framed else "buffered"
    protocol = "compact" if compact else "binary"

    def ready(server: ThriftServer) -> None:
        h, p = server.address
        click.echo(f"Serving {dir} over HBase Thrift1 on {h}:{p} ({transport} transport, "
                   f"{protocol} protocol); stop with Ctrl-C or SIGTERM.")
        click.get_text_stream("stdout").flush()

    try:
        serve(dir, host=host, port=port, transport=transport, protocol=protocol,
              workers=workers, scanner_timeout=scanner_timeout, ready=ready)
    except KeyboardInterrupt:  # pragma: no cover - serve() turns SIGINT into a clean stop
        pass
    click.echo("Stopped; store closed.", err=True)
