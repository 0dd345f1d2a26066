"""The `hibase` command line's root group and the pieces every command module shares.

Command modules (store, query, cache, serve, bench, ...) define plain click commands and groups
with these helpers; `hibase.cli` (the package's __init__) adds them to `cli` in one list. A
command looks like this:

    from .base import emit, open_store, output_options, store_argument

    @click.command()
    @store_argument
    @output_options
    def mycommand(dir, fmt):
        '''What it does.

        Example:

        \\b
            hibase mycommand data/
        '''
        db = open_store(dir, read_only=True)      # closed when the command ends
        emit(fmt, ["name"], [("x",)])

Any hibase.errors.HibaseError raised by a command becomes `Error: <message>` on stderr with exit
code 1 (HibaseGroup.invoke on the root group), never a traceback.
"""

from __future__ import annotations

import csv
import faulthandler
import io
import json
import math
import os
import signal
import sys
import warnings
from typing import Any, Callable, Iterable, Sequence

import click

from .. import __version__, codec, errors
from ..connection import Connection, connect
from ..table import Table
from ..dump import parse_bytes, parse_column, show_bytes, show_column
from ..load import cell_to_text
from ..sql import Result, label

__all__ = ["cli", "main", "HibaseGroup", "store_argument", "table_argument", "output_options",
           "columns_option", "open_store", "check_store_folder", "emit", "note", "cell_text",
           "cell_json", "value_json", "value_text", "show_bytes",
           "parse_bytes", "parse_column", "show_column", "json_safe", "column_label",
           "rowkey_label", "run_sql", "print_rows",
           "print_result"]

BYTES_HELP = """Rowkeys, column names and values are bytes. They print as UTF-8 text, except that a
byte that is not part of valid UTF-8 or is a control character prints as \\xNN (\\t, \\n, \\r
for those three) and a backslash prints as \\\\, the same in --table, --json and --csv output,
so each printed string stands for exactly one byte string. Arguments that name rows, columns or
values (ROW, --start, --stop, --prefix, --columns, COL=VALUE, --row) accept the same escapes.
Cells of columns declared binary (e.g. 'long binary') are read and written as their text (42).
In --json, values of declared number columns are JSON numbers and NULL is null."""


# -- bytes on the command line -------------------------------------------------------------------

# show_bytes / parse_bytes: one rule for bytes as text, shared with `hibase dump` (hibase.dump)


# -- the group, errors, shared decorators ----------------------------------------------------

class HibaseGroup(click.Group):
    """A click group that turns library errors into `Error: ...` and exit code 1."""

    group_class = type  # subgroups made with @cli.group() are HibaseGroups as well

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except errors.HibaseError as exc:
            raise click.ClickException(_one_line(exc)) from None
        except BrokenPipeError:  # `hibase query ... | head`: the reader has what it wanted
            _quiet_stdout()
            raise click.exceptions.Exit(0) from None
        except OSError as exc:  # a file that cannot be read, a full disk...
            raise click.ClickException(_one_line(exc)) from None


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that nothing is flushed into a closed pipe at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (CliRunner, closed)
        pass


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n")).strip()
    return text or type(exc).__name__


@click.group(cls=HibaseGroup, help=f"""hibase: HBase-style tables (column families, versioned
cells, regions) in a folder, on RocksDB.

Every command takes the store folder DIR first; `hibase COMMAND --help` explains each one.

{BYTES_HELP}

Example:

\b
    hibase create-table data/ flights -f f -c f.delay=double
    hibase put data/ flights k1 f.dest=IAH f.delay=12.5
    hibase scan data/ flights --prefix k --json
""")
@click.version_option(__version__, prog_name="hibase")
def cli() -> None:
    pass


def main(argv: Sequence[str] | None = None) -> Any:
    """The console script: `hibase ...` and `python -m hibase ...`."""
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 PID`: every thread's stack on stderr, for a
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # command that seems stuck
    try:
        return cli.main(args=argv, prog_name="hibase")
    except BrokenPipeError:  # `hibase scan ... | head`: the reader has what it wanted
        _quiet_stdout()
        sys.exit(0)


def store_argument(f: Callable) -> Callable:
    """The store folder, every command's first argument (as `dir`)."""
    return click.argument("dir", metavar="DIR", type=click.Path(file_okay=False))(f)


def durability_option(f: Callable) -> Callable:
    """--durability process|fsync (as `durability`) for commands that write: what an
    acknowledged write survives (connect()'s durability)."""
    return click.option("--durability", type=click.Choice(["process", "fsync"]),
                        default="process", show_default=True,
                        help="process: a write is acknowledged once the OS has it (survives "
                             "kill -9); fsync: once it is on disk (survives a power cut; "
                             "slower, see `hibase bench store --durability`).")(f)


def table_argument(f: Callable) -> Callable:
    """A table name (as `table`)."""
    return click.argument("table", metavar="TABLE")(f)


def output_options(f: Callable) -> Callable:
    """--table (the default) / --json / --csv, passed as `fmt` ("table", "json", "csv")."""
    for flag, help_ in reversed([
            ("table", "Print an aligned text table (the default)."),
            ("json", "Print JSON lines, one object per row."),
            ("csv", "Print CSV with a header row.")]):
        # only --table has a default: with click 8.2+ a flag's default=False became the
        # string "False" as fmt when no flag was given
        if flag == "table":
            f = click.option(f"--{flag}", "fmt", flag_value=flag, default=True, help=help_)(f)
        else:
            f = click.option(f"--{flag}", "fmt", flag_value=flag, help=help_)(f)
    return f


def columns_option(f: Callable) -> Callable:
    """--columns / -c, repeatable or comma-separated, passed as `columns` (list of bytes or
    None)."""
    def convert(ctx: click.Context, param: click.Parameter, value: tuple) -> list[bytes] | None:
        cols = [parse_column(c) for v in value for c in v.split(",") if c]
        return cols or None
    return click.option("--columns", "-c", multiple=True, callback=convert, metavar="COLS",
                        help="Only these columns: 'family' or 'family.qualifier', repeated "
                             "or comma-separated.")(f)


def _lock_holder(lock_file: str) -> int | None:
    """The pid of the process holding the store's LOCK (RocksDB takes a POSIX record lock on
    it), or None when nobody holds it or it cannot be told (the struct below is Linux's)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import fcntl
        import struct

        fd = os.open(lock_file, os.O_RDONLY)
    except (ImportError, OSError):
        return None
    try:
        # struct flock {short l_type, l_whence; off_t l_start, l_len; pid_t l_pid}: ask who
        # would stop a write lock over the whole file.
        query = struct.pack("@hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0)
        got = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        kind, _, _, _, pid = struct.unpack("@hhqqi4x", got)
        return pid if kind != fcntl.F_UNLCK and pid > 0 else None
    except OSError:
        return None
    finally:
        os.close(fd)


_LOCKED_HINT = ("stop it first; reading commands (query, scan, get, tables, check) work "
                "alongside it")


def check_store_folder(path: str, *, create: bool = False, read_only: bool = False,
                       create_hint: str | None = None) -> None:
    """Refuse, as one line and before anything is written, a folder that is not a hibase store
    (missing, a file, empty, or holding other files; with `create` a missing or empty folder is
    fine) and a store another process has open for writing (naming its pid). thrift:// URLs
    pass through. `create_hint` ends the message for a folder that is not a store (default:
    how other commands make one)."""
    if "://" in path:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise errors.BackendUnavailable(f"{path!r} is a file, not a hibase store folder")
    is_store = os.path.isfile(os.path.join(path, "CURRENT"))
    if not is_store:
        if create and (not os.path.exists(path) or not os.listdir(path)):
            return
        what = ("no such folder" if not os.path.exists(path) else
                "the folder is empty" if not os.listdir(path) else
                "the folder holds other files")
        hint = ("" if create else create_hint if create_hint is not None else
                " (create one with `hibase create-table` or `hibase load --create`)")
        raise errors.BackendUnavailable(f"{path!r} is not a hibase store: {what}{hint}")
    if not read_only:
        pid = _lock_holder(os.path.join(path, "LOCK"))
        if pid is not None and pid != os.getpid():
            raise errors.StoreLocked(
                f"store {path!r} is locked by another process (pid {pid}): {_LOCKED_HINT}")


def open_store(path: str, *, read_only: bool = False, create: bool = False,
               cache: str | None = None, create_hint: str | None = None,
               **options: Any) -> Connection:
    """Connect to the store folder (or thrift:// URL) for the running command; closed when the
    command ends. The one way commands open a store.

    A folder that is not a hibase store is refused before anything is written in it (only
    commands that make tables, create=True, create a missing or empty folder); a store another
    process writes is refused naming that process, unless read_only (reads alongside a
    writer). `cache` is connect()'s hot-cache option; by default None (no cache): an in-process
    cache dies with the command, so it would only cost (and steer range queries to value-table
    walks). `create_hint` as in check_store_folder. Other `options` go to connect()."""
    check_store_folder(path, create=create and not read_only, read_only=read_only,
                       create_hint=create_hint)
    try:
        db = connect(path, create=create and not read_only, read_only=read_only, cache=cache,
                     **options)
    except errors.StoreLocked:
        pid = None if "://" in path else _lock_holder(os.path.join(path, "LOCK"))
        who = f"another process (pid {pid})" if pid else "another process"
        raise errors.StoreLocked(f"store {path!r} is locked by {who}: {_LOCKED_HINT}") from None
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(db.close)
    return db


def emit(fmt: str, headers: Sequence[str], items: Iterable[Any],
         rows: Callable[[Any], Iterable[Sequence[Any]]] | None = None,
         obj: Callable[[Any], dict] | None = None) -> int:
    """Print `items` as fmt ("table", "json" or "csv"); returns how many items were printed.

    `rows(item)` gives the item's lines for table/CSV (default: the item itself is one line of
    values matching `headers`); `obj(item)` its JSON object (default: each line as a dict keyed by
    `headers`). JSON and CSV stream; the table is aligned once all items are in."""
    to_rows = rows or (lambda item: [item])
    n = 0
    if fmt == "json":
        for item in items:
            objs = [obj(item)] if obj else [dict(zip(headers, r)) for r in to_rows(item)]
            for o in objs:
                click.echo(json.dumps(o, ensure_ascii=False))
            n += 1
        return n
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(headers)
        for item in items:
            for r in to_rows(item):
                writer.writerow(r)
            n += 1
            click.echo(buf.getvalue(), nl=False)
            buf.seek(0)
            buf.truncate()
        click.echo(buf.getvalue(), nl=False)
        return n
    lines = [list(map(str, headers))]
    for item in items:
        lines.extend([["" if v is None else str(v) for v in r] for r in to_rows(item)])
        n += 1
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    lines.insert(1, ["-" * w for w in widths])
    for line in lines:
        click.echo("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip())
    return n


def note(message: str) -> None:
    """A message for the user on stderr (stdout stays the command's data)."""
    click.echo(message, err=True)


def _bad_cells() -> codec.BadCells:
    """The running command's count of cells that did not parse as their declared type: made
    on first use, printed as one line on stderr when the command ends (count, first rows and
    columns), as every interface reports such cells (shown as NULL)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return codec.BadCells()  # outside a command: nobody to tell
    root = ctx.find_root()
    bad = root.meta.get("hibase.bad_cells")
    if bad is None:
        bad = root.meta["hibase.bad_cells"] = codec.BadCells()
        root.call_on_close(lambda: note(bad.message()) if bad else None)
    return bad


def _parses(t: Table, column: bytes, value: bytes, row: bytes | None) -> bool:
    """Whether a declared column's cell parses as its type (undeclared: always); one that
    does not is counted for the command's closing line (see _bad_cells)."""
    ctype = t.schema.columns.get(column)
    if ctype is None:
        return True
    try:
        codec.validate_cell(ctype, value)
        return True
    except errors.ValueTypeError:
        _bad_cells().add(b"?" if row is None else row, column)
        return False


def cell_text(t: Table, column: bytes, value: bytes, row: bytes | None = None) -> str | None:
    """A cell's value as printable text (binary-declared columns as their number); None (an
    empty field, as NULL prints) for a cell that does not parse as its declared type, which
    is counted and named on stderr when the command ends."""
    if not _parses(t, column, value, row):
        return None
    return show_bytes(cell_to_text(t.schema.columns.get(column), value))


def value_json(v: Any) -> Any:
    """A decoded value (an SQL result, a typed cell) for --json: numbers as JSON numbers (NaN
    and infinities, which JSON lacks, as text), NULL as null, text and bytes as strings under
    the one rule of show_bytes (a backslash doubled, \\xNN for bytes that are not text)."""
    if v is None or isinstance(v, (bool, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, str):
        return show_bytes(v.encode("utf-8", "surrogateescape"))
    if isinstance(v, (bytes, bytearray, memoryview)):
        return show_bytes(bytes(v))
    return str(v)


def value_text(v: Any) -> Any:
    """A decoded value for --table and --csv: as value_json, NULL left empty."""
    out = value_json(v)
    return out if out is None or isinstance(out, str) else str(out)


def cell_json(t: Table, column: bytes, value: bytes, row: bytes | None = None) -> Any:
    """A cell's value for --json: decoded by the column's declared type (42, 12.5, "IAH"),
    undeclared cells as text like cell_text; null for a cell that does not parse as its
    declared type (counted and named on stderr when the command ends, as cell_text)."""
    ctype = t.schema.columns.get(column)
    if not _parses(t, column, value, row):
        return None
    if ctype is None or ctype.name in ("string", "char", "bytes"):
        return show_bytes(cell_to_text(ctype, value))
    return value_json(codec.decode_cell(ctype, value))



# -- one voice for rows: `hibase query`, `hibase sql`, `scan`, `get` ---------------------------

def rowkey_label(t: Table) -> str:
    """The rowkey's name in output: its declared name (PRIMARY KEY) or ROWKEY, as in SQL."""
    return t.schema.rowkey or "ROWKEY"


def column_label(t: Table, column: bytes) -> str:
    """A column's name in output: family.qualifier (a default-family column's qualifier), the
    label SQL results give it, so every command spells a column the same way."""
    return label(column, t.schema)


def json_safe(obj: Any) -> Any:
    """A report (verify, check) as JSON-ready values: bytes as show_bytes text, a cell's
    "column" as family.qualifier, as every command prints a column."""
    if isinstance(obj, bytes):
        return show_bytes(obj)
    if isinstance(obj, dict):
        return {k: (show_column(v) if k == "column" and isinstance(v, bytes) else json_safe(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def run_sql(db: Connection, statement: str, params: Any = None, **options: Any) -> Result:
    """db.execute without its CellTypeWarning: the command says the bad cells itself, once,
    in print_result's closing line."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", errors.CellTypeWarning)
        return db.execute(statement, params, **options)


def print_rows(fmt: str, heads: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Print rows of decoded values under `heads`: value_text in a table or CSV, a flat JSON
    object {head: value_json} per row."""
    heads = list(heads)
    return emit(fmt, heads, rows, lambda r: [[value_text(v) for v in r]],
                lambda r: dict(zip(heads, map(value_json, r))))


def print_result(fmt: str, result: Result, summary: str | None = None) -> int:
    """Print a SELECT's rows under its labels (JSON: one flat object per row), then `summary`
    and any cells read as NULL on stderr: the one printing path of `hibase query` and
    `hibase sql`, so both print a statement alike. Returns the number of rows."""
    n = print_rows(fmt, [name for name, _ in result.description or ()], result.rows)
    if summary is not None:
        note(summary)
    if result.bad_cells:
        note(result.bad_cells.message())
    return n
