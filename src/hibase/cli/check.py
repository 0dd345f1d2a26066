"""`hibase check DIR`: the command over hibase.check.check_store."""

from __future__ import annotations

import json
import sys

import click
from tqdm import tqdm

from ..check import check_store
from .base import check_store_folder, json_safe, show_bytes, show_column


def _lines(report: dict) -> list[str]:
    out = []
    files = report["files"]
    if files is None and report["indexes"]:
        out.append("files: HBase's own (check them with `hbase hbck`); indexes checked here")
    if files is not None:
        out.append(f"files: {files['files']} table files, {files['bytes']:,} bytes, "
                   f"{files['keys']:,} keys in {files['column_families']} column families read "
                   "back through their checksums"
                   + (f"; {files['wal_files']} write-ahead log"
                      f"{'s' if files['wal_files'] != 1 else ''} read to the end"
                      if files.get("wal_files") is not None else "")
                   + (f" (process {files['writer_pid']} writes to it: the folder's files were "
                      "not compared with the MANIFEST)" if files.get("writer_pid") else ""))
    for r in report["indexes"]:
        name = f"index {r['table']}.{r['index']}"
        if "entries" not in r:
            out.append(f"{name}: {r['state']}, not verified")
            continue
        routing = r.get("routing")
        extra = ("" if not routing else
                 ", routing filters: not used (kept by the region server)"
                 if routing.get("used") is False and "why" in routing else
                 f", routing filters: {routing['false_negatives']} false negatives")
        if r.get("bad_cells"):
            extra += f", {r['bad_cells']} indexed cell(s) not of the declared type (as NULL)"
        out.append(f"{name}: {r['entries']:,} entries, "
                   f"{'exact' if r['ok'] else 'NOT exact'}{extra}")
    for p in report["problems"]:
        out.append(f"PROBLEM {p.get('file') or p.get('index') or p.get('table')}: "
                   f"{p['problem']}")
    bad = report.get("bad_cells") or {}
    if bad.get("count"):
        out.append(_bad_cells_line(bad))
    n = len(report["problems"])
    out.append(f"{report['store']}: OK" if report["ok"] else
               f"{report['store']}: {n} problem{'s' if n != 1 else ''}")
    return out


def _bad_cells_line(bad: dict) -> str:
    """'WARNING 1 cell did not parse as its declared type (t row r1, e.amount): read as
    NULL' for the report's bad_cells."""
    n = bad["count"]
    where = "; ".join(f"{e['table']} row {show_bytes(e['row'])}, {show_column(e['column'])}"
                      for e in bad["examples"][:3]) + ("; ..." if n > 3 else "")
    what = "1 cell did not parse as its declared type" if n == 1 else \
        f"{n} cells did not parse as their declared types"
    return f"WARNING {what} ({where}): read as NULL (not a problem of the store)"


@click.command("check")
@click.argument("dir", metavar="DIR")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--progress/--no-progress", default=None,
              help="Show progress on stderr (default: when stderr is a terminal).")
@click.pass_context
def check(ctx: click.Context, dir: str, as_json: bool, progress: bool | None) -> None:
    """Verify a whole store, read-only: every file read back through its checksums (and the
    MANIFEST and the folder's table files compared; the write-ahead logs read to their last
    record, so a torn tail that a power cut left is reported, not dropped quietly), every
    ready index compared with its table (as `hibase index verify`), local indexes' routing
    filters checked for false negatives, every declared column's cells parsed by their type.

    A cell that does not parse as its declared type (another client skipped hibase's checks)
    is printed as a WARNING with its row and column, not a problem: every reader treats it as
    NULL, indexes too. Exit code 0 when everything checks, 1 when anything does not (each
    problem is printed with the file or index it is in), as for a store that cannot be opened
    at all.

    Example:

    \b
        hibase check data/
        hibase check data/ --json
    """
    check_store_folder(dir, read_only=True)  # a folder that is no store: one line, untouched
    show = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(desc="checking", unit=" keys", disable=not show, leave=False, file=sys.stderr)

    def step(what: str, n: int) -> None:
        bar.set_postfix_str(what[:40])
        bar.update(n)

    try:
        report = check_store(dir, step)
    finally:
        bar.close()
    if as_json:
        click.echo(json.dumps(json_safe(report), default=str))
    else:
        for line in _lines(report):
            click.echo(line)
    if not report["ok"]:
        ctx.exit(1)

