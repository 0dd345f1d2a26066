"""`hibase sql DIR|URL`: an interactive SQL shell in the manner of Phoenix's sqlline.

Statements end with `;` and may span lines; `!tables`, `!indexes TABLE`, `!describe TABLE`,
`!help` and `!quit` are shell commands. Each statement prints its rows (an aligned table, or
--json / --csv), its row count and time. In a terminal it keeps a readline history in
~/.hibase_history; from a pipe or a file it reads the statements from stdin and exits 1 when
one of them failed.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from typing import Any, Generator

import click

from .. import errors
from ..codec import sql_type_name
from .base import emit, note, open_store, output_options, show_bytes, store_argument

__all__ = ["sql_shell"]

HISTORY = "~/.hibase_history"
_HELP = """Statements end with ';' (SELECT, UPSERT, DELETE, CREATE/DROP TABLE, CREATE/DROP INDEX,
ALTER INDEX ... REBUILD, EXPLAIN ...). Shell commands:
  !tables              the tables
  !indexes TABLE       the table's indexes
  !describe TABLE      the table's rowkey, families and declared columns
  !help                this text
  !quit                leave (also !exit, Ctrl-D)"""


def _text(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return show_bytes(bytes(v))
    return v


def _complete(buffer: str) -> bool:
    """Does `buffer` end with a `;` outside quotes (and comments)?"""
    quote = None
    last = ""
    i = 0
    while i < len(buffer):
        c = buffer[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
        elif c == "-" and buffer[i:i + 2] == "--":
            j = buffer.find("\n", i)
            if j < 0:
                break
            i = j
            continue
        if not c.isspace():
            last = c if quote is None or c == quote else "x"
        i += 1
    return quote is None and last == ";"


class Shell:
    def __init__(self, db: Any, fmt: str, timing: bool):
        self.db = db
        self.fmt = fmt
        self.timing = timing
        self.failed = 0

    def show(self, headers: list[str], rows: list[tuple]) -> None:
        if self.fmt == "json":
            for r in rows:
                click.echo(json.dumps({h: _text(v) for h, v in zip(headers, r)},
                                      ensure_ascii=False))
            return
        emit(self.fmt, headers, rows, lambda r: [[_text(v) for v in r]])

    def command(self, line: str) -> bool:
        """Run a !command; False means quit."""
        word, _, arg = line[1:].strip().partition(" ")
        word, arg = word.lower(), arg.strip().rstrip(";").strip()
        if word in ("quit", "exit", "q"):
            return False
        if word == "help":
            click.echo(_HELP)
        elif word == "tables":
            self.show(["TABLE"], [(n.decode(),) for n in self.db.tables()])
        elif word in ("indexes", "describe") and not arg:
            self.error(f"!{word} needs a table name")
        elif word == "indexes":
            self.show(["INDEX", "COLUMNS", "INCLUDE", "LOCAL", "STATE"],
                      [(i["name"], ", ".join(i["columns"]), ", ".join(i["covering"]),
                        "yes" if i["local"] else "no", i["state"])
                       for i in self.db.indexes(arg)])
        elif word == "describe":
            schema = self.db.table(arg).schema
            rows = []
            if not schema.rowkey_generated:
                rows.append((schema.rowkey or "ROWKEY", "VARCHAR" if schema.rowkey_type and
                             schema.rowkey_type.name == "string" else "VARBINARY", "rowkey"))
            for col, t in schema.columns.items():
                rows.append((col.decode().replace(":", ".", 1), sql_type_name(t), ""))
            for fam in schema.families:
                if not any(c.startswith(fam + b":") for c in schema.columns):
                    rows.append((fam.decode() + ".*", "VARBINARY", "undeclared"))
            self.show(["COLUMN", "TYPE", "NOTE"], rows)
        else:
            self.error(f"unknown command !{word} (!help lists them)")
        return True

    def error(self, message: str) -> None:
        self.failed += 1
        note(f"Error: {message}")

    def statement(self, sql: str) -> None:
        sql = sql.strip()
        while sql.endswith(";"):
            sql = sql[:-1].rstrip()
        if not sql:
            return
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():  # bad cells: this shell's own line, below
                warnings.simplefilter("ignore", errors.CellTypeWarning)
                result = self.db.execute(sql)
        except errors.HibaseError as exc:
            self.error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return
        ms = (time.perf_counter() - t0) * 1e3
        if result.kind == "explain":
            for (line,) in result.rows:
                click.echo(line)
            summary = None
        elif result.kind == "select":
            self.show([name for name, _ in result.description], result.rows)
            summary = f"{len(result.rows)} row(s) selected"
        elif result.kind == "dml":
            summary = f"{result.rowcount} row(s) written"
        else:
            summary = "OK"
        if summary is not None:
            note(summary + (f" ({ms:.1f} ms)" if self.timing else ""))
        if result.bad_cells:
            note(result.bad_cells.message())


def _lines(interactive: bool,
           history: str | None) -> Generator[tuple[str, bool], bool | None, None]:
    """(line, at the start of a statement) pairs, from readline in a terminal or stdin; in a
    terminal the caller sends whether the next line starts a statement (next(): it does)."""
    if not interactive:
        for line in sys.stdin:
            yield line.rstrip("\n"), True
        return
    import readline
    path = os.path.expanduser(history) if history else None
    if path:
        try:
            readline.read_history_file(path)
        except OSError:
            pass
    readline.set_history_length(1000)
    try:
        fresh = True
        while True:
            try:
                line = input("hibase> " if fresh else "     -> ")
            except KeyboardInterrupt:
                click.echo("")
                fresh = True
                yield "\x03", True  # drop the statement being typed
                continue
            sent = yield line, fresh
            fresh = True if sent is None else sent
    except EOFError:
        click.echo("")
    finally:
        if path:
            try:
                readline.write_history_file(path)
            except OSError:
                pass


@click.command("sql")
@store_argument
@output_options
@click.option("--timing/--no-timing", default=True, show_default=True,
              help="Print each statement's time after its row count (on stderr).")
@click.option("--history", default=HISTORY, show_default=True, metavar="FILE",
              help="The readline history file of the interactive shell ('' for none).")
def sql_shell(dir: str, fmt: str, timing: bool, history: str) -> None:
    """An interactive SQL shell on the store DIR (a folder, created if missing, or
    thrift://host:port), as Phoenix's sqlline: statements end with ';' and may span lines;
    !tables, !indexes TABLE, !describe TABLE, !help, !quit. In a terminal it keeps a history
    in ~/.hibase_history; otherwise it reads statements from stdin and exits 1 if one failed.

    Example:

    \b
        hibase sql data/
        echo "SELECT COUNT(*) FROM flights;" | hibase sql data/ --csv
    """
    db = open_store(dir, create=True)
    interactive = sys.stdin.isatty()
    shell = Shell(db, fmt, timing)
    if interactive:
        note(f"hibase {dir}: statements end with ';', !help for commands, !quit to leave")
    buffer: list[str] = []
    lines = _lines(interactive, history or None)
    item = next(lines, None)
    while item is not None:
        line, _ = item
        start = not buffer
        keep_going = True
        if line == "\x03":
            buffer = []
        elif start and line.strip().startswith("!"):
            keep_going = shell.command(line.strip())
        elif start and not line.strip():
            pass
        else:
            buffer.append(line)
            text = "\n".join(buffer)
            if _complete(text):
                buffer = []
                shell.statement(text)
        if not keep_going:
            lines.close()
            break
        try:
            item = lines.send(not buffer) if interactive else next(lines)
        except StopIteration:
            item = None
    if buffer and "".join(buffer).strip():  # a last statement without ';'
        shell.statement("\n".join(buffer))
    if shell.failed and not interactive:
        sys.exit(1)
