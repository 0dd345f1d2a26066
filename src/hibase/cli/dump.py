"""`hibase dump` and `hibase restore`: tables to a text file and back (hibase.dump)."""

from __future__ import annotations

import sys

import click
from tqdm import tqdm

from ..dump import dump as dump_tables, restore as restore_tables
from ..load import open_input
from .base import note, open_store, store_argument

__all__ = ["dump", "restore"]


def _bar(enabled: bool | None, desc: str) -> tuple:
    show = sys.stderr.isatty() if enabled is None else enabled
    bar = tqdm(desc=desc, unit=" rows", disable=not show, leave=False, file=sys.stderr)
    shown: str | None = None  # the table the bar counts, and its rows so far
    shown_rows = 0

    def progress(table: str, rows: int) -> None:
        nonlocal shown, shown_rows
        if table != shown:
            shown, shown_rows = table, 0
            bar.set_postfix_str(table)
        bar.update(rows - shown_rows)
        shown_rows = rows

    return progress, bar.close


_progress_option = click.option("--progress/--no-progress", default=None,
                                help="Show progress on stderr (default: when stderr is a "
                                     "terminal).")


@click.command()
@store_argument
@click.argument("tables", nargs=-1, metavar="[TABLE...]")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True, allow_dash=True),
              default="-", metavar="FILE", help="Write the dump here (default: stdout).")
@_progress_option
def dump(dir: str, tables: tuple, output: str, progress: bool | None) -> None:
    """Write tables (default: all) to a text file that `hibase restore` reads back: families
    and their options, declared column types, index definitions, and every kept version of
    every cell with its timestamp, binary values included.

    The format is JSON lines, bytes written as `hibase --help` describes (so a dump can be read
    and grepped); it is documented in hibase.dump. It reads the store alongside a writer
    (rows written meanwhile may or may not be in it).

    Example:

    \b
        hibase dump data/ > backup.hdump
        hibase dump data/ flights airports -o two.hdump
        hibase dump data/ | gzip > backup.hdump.gz
    """
    db = open_store(dir, read_only=True)
    bar, close = _bar(progress, "dump")
    out = click.open_file(output, "w", encoding="utf-8", lazy=False)
    try:
        counts = dump_tables(db, out, list(tables) or None, progress=bar)
    finally:
        close()
        if output != "-":
            out.close()
    note(f"Dumped {counts['tables']} table(s), {counts['rows']} row(s), {counts['cells']} "
         "cell(s).")


@click.command()
@store_argument
@click.argument("file", type=click.Path(dir_okay=False, exists=True, allow_dash=True))
@click.option("--processes", type=click.IntRange(min=1), metavar="N",
              help="Worker processes for the index builds (default: one per CPU).")
@_progress_option
def restore(dir: str, file: str, processes: int | None, progress: bool | None) -> None:
    """Create the tables of a dump (from `hibase dump`; FILE may be - for stdin, and gzip,
    bz2 or xz compressed) in the store DIR (created if missing), write their cells with their
    timestamps, and build their indexes.

    Tables that exist in DIR are refused (drop them first). A dump cut short is an error once
    its last complete row is written.

    Example:

    \b
        hibase restore data2/ backup.hdump
        gunzip -c backup.hdump.gz | hibase restore data2/ -
    """
    db = open_store(dir, create=True)
    stream, raw = open_input(file)
    bar, close = _bar(progress, "restore")
    try:
        lines = (line.decode("utf-8", "surrogateescape") for line in stream)
        counts = restore_tables(db, lines, processes=processes, progress=bar)
    finally:
        close()
        if file != "-":
            raw.close()
    note(f"Restored {counts['tables']} table(s), {counts['rows']} row(s), {counts['cells']} "
         f"cell(s), {counts['indexes']} index(es) built.")
