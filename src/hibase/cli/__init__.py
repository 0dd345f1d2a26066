"""The `hibase` command line: a thin click layer over the Python API.

One module per command group, each defining plain click commands on top of `base` (the root
group `cli`, `main`, and the shared arguments, output formats and error handling):

    store   tables, describe, create-table, alter-table, drop-table, put, get, delete, scan, load,
            regions, split
    dump    dump, restore
    query   index create/build/list/drop/verify, query
    sql     sql (the interactive SQL shell)
    cache   cache-node
    serve   serve
    bench   demo, bench store/scbf/query/cache/local
    check   check (a whole store: files, indexes, routing filters)

To add a command or a group: define it in its module (or a new one) and add it to COMMANDS
below; nothing is registered by name or on import.
"""

from __future__ import annotations

from . import bench, cache, check, cluster, dump, query, serve, sql, store
from .base import cli, main, parse_bytes, show_bytes

__all__ = ["cli", "main", "parse_bytes", "show_bytes", "COMMANDS"]

COMMANDS = (
    store.tables, store.describe, store.create_table, store.alter_table, store.drop_table,
    store.put, store.get, store.delete, store.scan, store.load, store.regions, store.split,
    dump.dump, dump.restore,
    query.index, query.query, sql.sql_shell,
    cache.cache_node,
    serve.serve_command,
    cluster.cluster,
    bench.demo, bench.bench,
    check.check,
)
for _command in COMMANDS:
    cli.add_command(_command)
