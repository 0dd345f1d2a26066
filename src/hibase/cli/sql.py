"""`hibase sql DIR|URL`: an interactive SQL shell in the manner of Phoenix's sqlline and sqlite3.

Statements end with `;`, may span lines and share one (`SELECT 1 FROM t; SELECT 2 FROM t;`);
`-- comments` and `/* comments */` are skipped. `!tables`, `!indexes TABLE`, `!describe TABLE`,
`!help` and `!quit` (or `.tables`, `.indexes`, `.schema`/`.describe`, `.help`, `.quit`) are
shell commands; `SHOW TABLES` and `DESCRIBE t` are statements. Each statement prints its rows
(an aligned table, or --json / --csv), its row count and time.

The shell never leaves on an error: it prints `Error: ...` and goes on (a script too, as
sqlite3 does without -bail, then exits 1 if any statement failed). Ctrl-C cancels the running
statement and returns to the prompt (at the prompt it drops the statement being typed; Ctrl-D
or !quit leaves). In a terminal it keeps a readline history in ~/.hibase_history; from a pipe
or a file it reads the statements from stdin.

DIR must be a store (`--create` makes a missing one); a store another process writes is opened
read-only, as `hibase query` reads it, and the shell says so.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any, Generator

import click

from .. import errors
from ..query.statements import first_word
from ..sql import describe_rows, user_tables
from .base import (_lock_holder, note, open_store, output_options, print_result, print_rows,
                   store_argument)

__all__ = ["sql_shell", "split_statements"]

HISTORY = "~/.hibase_history"
_HELP = """Statements end with ';' and may share a line (SELECT, UPSERT, DELETE, CREATE/DROP
TABLE, CREATE/DROP INDEX, ALTER INDEX ... REBUILD, EXPLAIN ..., SHOW TABLES, DESCRIBE t);
-- and /* */ are comments. Ctrl-C cancels the running statement. Shell commands:
  !tables              the tables (also .tables, SHOW TABLES;)
  !indexes TABLE       the table's indexes (also .indexes)
  !describe TABLE      the table's rowkey, families and declared columns (also .schema,
                       .describe, DESCRIBE TABLE;)
  !help                this text (also .help)
  !quit                leave (also !exit, .quit, .exit, Ctrl-D)"""


def split_statements(text: str) -> tuple[list[str], str]:
    """The complete statements of `text` (each without its ';'; ones holding only comments
    left out) and the text after the last one: what is still being typed, "" when that holds
    only blanks and comments (a `-- comment` line or a trailing comment starts no
    continuation). Quotes ('...', "...", `...`) and comments (-- to the end of the line,
    /* ... */) hide the ';' they hold; an unclosed quote or /* keeps the rest open."""
    out: list[str] = []
    start = 0
    content = False  # anything but blanks and comments since `start`
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = text.find(c, i + 1)
            if j < 0:  # an unclosed quote: the statement goes on on the next line
                return out, text[start:]
            content = True
            i = j + 1  # a doubled quote ('it''s') is two quoted parts in a row: the same
            continue
        if c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                return out, text[start:]
            i = j + 2
            continue
        if c == ";":
            if content:
                out.append(text[start:i])
            start, content = i + 1, False
        elif not c.isspace():
            content = True
        i += 1
    return out, text[start:] if content else ""


class Shell:
    """Runs statements and shell commands; an error (or a Ctrl-C) ends the statement, never
    the shell. `failed` counts the statements and commands that failed."""

    def __init__(self, db: Any, fmt: str, timing: bool, interactive: bool = False):
        self.db = db
        self.fmt = fmt
        self.timing = timing
        self.interactive = interactive
        self.failed = 0
        self.read_only = ""  # why the store was opened read-only, if it was

    def show(self, headers: list[str], rows: list[tuple]) -> None:
        print_rows(self.fmt, headers, rows)

    def guarded(self, what: str, run: Any) -> bool:
        """Call run(); an error is one `Error: ...` line. False when Ctrl-C cancelled it (in
        a script Ctrl-C stops the script: the KeyboardInterrupt goes on up)."""
        try:
            with warnings.catch_warnings():  # bad cells: this shell's own line (statement)
                warnings.simplefilter("ignore", errors.CellTypeWarning)
                run()
        except errors.StoreReadOnly as exc:
            self.error(f"{exc}" + (f" ({self.read_only})" if self.read_only else ""))
        except errors.HibaseError as exc:
            self.error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except KeyboardInterrupt:
            self.failed += 1
            if not self.interactive:
                raise
            writes = first_word(what) in ("UPSERT", "DELETE", "CREATE", "DROP", "ALTER")
            note("Cancelled" + (" (a write statement: the rows it wrote before Ctrl-C stay "
                                "written)" if writes else ""))
            return False
        except OSError as exc:  # a store folder gone, a disk full...
            self.error(str(exc) or type(exc).__name__)
        except Exception as exc:  # a bug in hibase: said, and the shell goes on
            self.error(f"internal error {type(exc).__name__}: {exc} (please report it)")
        return True

    def command(self, line: str) -> bool:
        """Run a !command or .command; False means quit."""
        word, _, arg = line[1:].strip().partition(" ")
        word, arg = word.lower(), arg.strip().rstrip(";").strip()
        if word in ("quit", "exit", "q"):
            return False
        if word == "schema":
            word = "describe"
        if word == "help":
            click.echo(_HELP)
        elif word == "tables":
            self.guarded("SHOW TABLES", lambda: self.show(
                ["TABLE_NAME"], [(n,) for n in user_tables(self.db)]))
        elif word in ("indexes", "describe") and not arg:
            self.error(f"{line[0]}{word} needs a table name")
        elif word == "indexes":
            self.guarded("", lambda: self.show(
                ["INDEX", "COLUMNS", "INCLUDE", "LOCAL", "STATE"],
                [(i["name"], ", ".join(i["columns"]), ", ".join(i["covering"]),
                  "yes" if i["local"] else "no", i["state"]) for i in self.db.indexes(arg)]))
        elif word == "describe":
            self.guarded("", lambda: self.show(
                ["COLUMN_NAME", "TYPE_NAME", "NOTE"], describe_rows(self.db.table(arg).schema)))
        else:
            self.error(f"unknown command {line[0]}{word} (!help lists them)")
        return True

    def error(self, message: str) -> None:
        self.failed += 1
        note(f"Error: {message}")

    def statement(self, sql: str) -> bool:
        """Run one statement (its ';' optional); False when Ctrl-C cancelled it."""
        sql = sql.strip()
        while sql.endswith(";"):
            sql = sql[:-1].rstrip()
        if not split_statements(sql + ";")[0]:  # only comments
            return True
        return self.guarded(sql, lambda: self._run(sql))

    def _run(self, sql: str) -> None:
        t0 = time.perf_counter()
        result = self.db.execute(sql)
        ms = (time.perf_counter() - t0) * 1e3
        if result.kind == "explain":
            for (line,) in result.rows:
                click.echo(line)
            return
        timing = f" ({ms:.1f} ms)" if self.timing else ""
        if result.kind == "select":  # as `hibase query` prints it (cli/base.py print_result)
            print_result(self.fmt, result, f"{len(result.rows)} row(s) selected{timing}")
        elif result.kind == "dml":
            note(f"{result.rowcount} row(s) {result.verb}{timing}")
        else:
            note(f"OK{timing}")


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


def _open(dir: str, create: bool) -> tuple[Any, str]:
    """The store for the shell: an existing one (a missing one only with --create); one
    another process writes, read-only (said on stderr; the second item says why, else "")."""
    hint = f" (hibase sql --create {dir} makes one)"
    try:
        return open_store(dir, create=create, create_hint=hint), ""
    except errors.StoreLocked:
        pass
    db = open_store(dir, read_only=True)
    pid = _lock_holder(os.path.join(dir, "LOCK"))
    who = f"another process (pid {pid})" if pid else "another process"
    note(f"{dir} is open for writing in {who}: opened read-only, so writes are refused and "
         "reads see the store as it was when the shell opened it (start the shell again to "
         "see newer rows)")
    return db, f"{who} writes this store"


@click.command("sql")
@store_argument
@output_options
@click.option("--create", is_flag=True,
              help="Make the store folder DIR if it does not exist (else a missing store is "
                   "an error, so a mistyped path creates nothing).")
@click.option("--timing/--no-timing", default=True, show_default=True,
              help="Print each statement's time after its row count (on stderr).")
@click.option("--history", default=HISTORY, show_default=True, metavar="FILE",
              help="The readline history file of the interactive shell ('' for none).")
def sql_shell(dir: str, fmt: str, create: bool, timing: bool, history: str) -> None:
    """An interactive SQL shell on the store DIR (a store folder, or thrift://host:port), as
    Phoenix's sqlline and sqlite3: statements end with ';', may span lines and share one;
    -- and /* */ are comments; SHOW TABLES, DESCRIBE t; !tables (.tables), !indexes TABLE,
    !describe TABLE (.schema), !help, !quit.

    An error prints `Error: ...` and the shell goes on; Ctrl-C cancels the running statement
    (at the prompt it drops what is being typed; Ctrl-D or !quit leaves). DIR must exist
    (--create makes it); a store another process writes opens read-only, with a note. In a
    terminal it keeps a history in ~/.hibase_history; otherwise it reads statements from
    stdin, runs them all and exits 1 if one failed.

    Example:

    \b
        hibase sql data/
        hibase sql --create new/
        echo "SELECT COUNT(*) FROM flights; SHOW TABLES;" | hibase sql data/ --csv
    """
    db, read_only = _open(dir, create)
    interactive = sys.stdin.isatty()
    shell = Shell(db, fmt, timing, interactive)
    shell.read_only = read_only
    if interactive:
        note(f"hibase {dir}: statements end with ';', !help for commands, !quit to leave")
    buffer = ""  # the statement being typed
    lines = _lines(interactive, history or None)
    item = next(lines, None)
    try:
        while item is not None:
            line, _ = item
            if line == "\x03":  # Ctrl-C at the prompt
                buffer = ""
            elif not buffer and line.strip()[:1] in ("!", "."):
                if not shell.command(line.strip()):
                    lines.close()
                    break
            else:
                buffer = f"{buffer}\n{line}" if buffer else line
                statements, buffer = split_statements(buffer)
                for sql in statements:
                    if not shell.statement(sql):
                        break  # Ctrl-C: the rest of the line is not run either
            try:
                item = lines.send(not buffer) if interactive else next(lines)
            except StopIteration:
                item = None
        if buffer:  # a last statement without ';'
            shell.statement(buffer)
    except KeyboardInterrupt:  # a script (from a pipe or a file): Ctrl-C stops it
        note("Interrupted: the script stopped (statements before this one ran)")
        sys.exit(130)
    if shell.failed and not interactive:
        sys.exit(1)
