"""Store commands: tables, describe, create-table, alter-table, drop-table, put, get, scan, load,
regions, split."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from typing import Any, Iterator

import click
from tqdm import tqdm

from .. import codec, errors
from ..connection import Connection
from ..table import Table
from ..load import (FORMATS, ON_DUPLICATE, ROWKEY_AUTO, LoadError, cell_column, cell_types,
                    check_text, detect_types, load_file, text_to_cell)
from ..store.schema import FOREVER, FamilyOptions
from ..sql import describe_rows, user_tables
from .base import (cell_json, cell_text, column_label, columns_option, durability_option, emit,
                   note, open_store, output_options, parse_bytes, parse_column, rowkey_label, show_bytes,
                   show_column, store_argument, table_argument)


# -- tables ------------------------------------------------------------------------------------

@click.command()
@store_argument
@output_options
def tables(dir: str, fmt: str) -> None:
    """List the tables of a store: families, declared columns, indexes, regions (the table
    counts a table's columns and indexes, `hibase describe DIR TABLE` lists them; --json and
    --csv give every declared column with its type).

    Example:

    \b
        hibase tables data/
        hibase tables data/ --json
    """
    db = open_store(dir, read_only=True)
    names = [n.encode() for n in user_tables(db)] if "://" not in dir else db.tables()
    docs = ({**db.table(n).schema.to_json(), "regions": len(db.store.regions(n.decode())),
             "indexes": [i["name"] for i in db.indexes(n)]} for n in names)
    if fmt == "table":
        emit(fmt, ["table", "families", "columns", "indexes", "regions"], docs,
             lambda d: [[d["name"], ",".join(d["families"]), len(d["columns"]),
                         ",".join(d["indexes"]) or "-", d["regions"]]])
        return
    emit(fmt, ["table", "families", "columns", "regions"], docs,
         lambda d: [[d["name"], ",".join(d["families"]),
                     " ".join(f"{c}={t}" for c, t in d["columns"].items()), d["regions"]]],
         lambda d: {"table": d["name"], **{k: v for k, v in d.items() if k != "name"}})


_FAMILY_DEFAULTS = {k: f.default for k, f in FamilyOptions.__dataclass_fields__.items()}


@click.command()
@store_argument
@table_argument
@output_options
def describe(dir: str, table: str, fmt: str) -> None:
    """Describe a table: its rowkey and columns (as SQL's DESCRIBE: family.qualifier and SQL
    type; a family with no declared column as family.*), then its indexes and the families'
    options that differ from the defaults. --json prints one object: the schema (as `hibase
    tables --json`), "describe" (the column rows) and "indexes".

    Example:

    \b
        hibase describe data/ flights
        hibase describe data/ flights --json
    """
    db = open_store(dir, read_only=True)
    t = db.table(table)  # an unknown table: one line
    rows = describe_rows(t.schema)
    indexes = db.indexes(table)
    if fmt == "json":
        doc = t.schema.to_json()
        click.echo(json.dumps({"table": doc.pop("name"), **doc,
                               "describe": [dict(zip(("column", "type", "note"), r))
                                            for r in rows],
                               "indexes": indexes,
                               "regions": len(db.store.regions(t.name.decode()))},
                              ensure_ascii=False))
        return
    emit(fmt, ["COLUMN_NAME", "TYPE_NAME", "NOTE"], rows)
    if fmt == "csv":
        return
    if indexes:
        click.echo("")
        emit(fmt, ["INDEX", "COLUMNS", "INCLUDE", "LOCAL", "STATE"],
             [(i["name"], ", ".join(i["columns"]), ", ".join(i["covering"]),
               "yes" if i["local"] else "no", i["state"]) for i in indexes])
    options = [(fam, ", ".join(f"{k}={v}" for k, v in opts.items()
                               if _FAMILY_DEFAULTS.get(k) != v))
               for fam, opts in t.schema.to_json()["families"].items()]
    if any(o for _, o in options):
        click.echo("")
        emit(fmt, ["FAMILY", "OPTIONS (other than the defaults)"],
             [(fam, o or "-") for fam, o in options])


# -- create-table / drop-table ---------------------------------------------------------------

_FAMILY_FIELDS = FamilyOptions.__dataclass_fields__


def _option_value(family: str, key: str, text: str) -> Any:
    field = _FAMILY_FIELDS.get(key)
    kind = type(field.default) if field is not None else str
    if kind is bool:
        low = text.lower()
        if low not in ("true", "false", "1", "0", "yes", "no"):
            raise click.BadParameter(f"family {family!r}: {key} takes true or false, not {text!r}")
        return low in ("true", "1", "yes")
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise click.BadParameter(f"family {family!r}: {key} takes a number, not {text!r}")
    return text


def _parse_family(ctx: click.Context, param: click.Parameter, value: tuple) -> dict:
    families: dict[str, dict] = {}
    for spec in value:
        name, _, opts = spec.partition(":")
        if not name:
            raise click.BadParameter(f"{spec!r}: write FAMILY or FAMILY:opt=val,...")
        options: dict[str, Any] = {}
        for pair in filter(None, opts.split(",")):
            key, eq, text = pair.partition("=")
            if not eq:
                raise click.BadParameter(f"{spec!r}: option {pair!r} needs '=value'")
            options[key.strip()] = _option_value(name, key.strip(), text.strip())
        families[name] = options
    return families


def _parse_pairs(ctx: click.Context, param: click.Parameter, value: tuple) -> dict:
    out = {}
    for pair in value:
        key, eq, val = pair.partition("=")
        if not eq or not key:
            raise click.BadParameter(f"{pair!r}: write NAME=VALUE")
        out[key] = val
    return out


def _parse_size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)i?b?\s*", value.lower())
    if not m:
        raise click.BadParameter(f"{value!r}: write bytes, e.g. 1048576 or 64M")
    return int(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " ")


@click.command("create-table")
@store_argument
@table_argument
@click.option("--family", "-f", "families", multiple=True,
              callback=_parse_family, metavar="FAMILY[:opt=val,...]",
              help="A column family and its options: max_versions, compression (NONE, GZ, "
                   "SNAPPY, LZ4, ZSTD, BZIP2), in_memory, bloom_filter_type, time_to_live "
                   "(seconds), block_cache_enabled. Repeat for more families.")
@click.option("--column", "-c", "columns", multiple=True, callback=_parse_pairs,
              metavar="FAMILY.QUALIFIER=TYPE",
              help="Declare a column's type, checked on every put: char, byte, short, int, "
                   "long, float, double, string, bytes; add ' binary' for HBase Bytes.toBytes "
                   "cells (e.g. 'long binary').")
@click.option("--split-size", callback=_parse_size, metavar="BYTES",
              help="Split a region when it grows past this size (e.g. 64M; default 64 MiB).")
@click.option("--existing", is_flag=True,
              help="Record a table that HBase already holds (made and written by other "
                   "programs) without touching its rows, so indexes can be made on it: its "
                   "families and their options are HBase's (-f names ones that must exist), "
                   "-c types are checked against every stored cell first.")
@click.option("--rowkey", metavar="NAME",
              help="The rowkey's column name in SQL (CREATE TABLE's PRIMARY KEY; default ROWKEY).")
@click.option("--rowkey-type", type=click.Choice(["string", "bytes"]),
              help="How SQL, --json and pandas show the rowkey: string (UTF-8 text, VARCHAR) or "
                   "bytes (default for tables made here without SQL).")
@click.option("--salt-buckets", type=click.IntRange(1, 256), metavar="N",
              help="A salted table: each rowkey is stored after a hash byte (mod N), in N "
                   "regions from the start, so time-ordered rowkeys spread their writes; "
                   "reads show and order rowkeys as written.")
def create_table(dir: str, table: str, families: dict, columns: dict,
                 split_size: int | None, existing: bool, rowkey: str | None,
                 rowkey_type: str | None, salt_buckets: int | None) -> None:
    """Create a table with its column families (and the store folder if missing), or with
    --existing record an HBase table hibase did not create.

    Example:

    \b
        hibase create-table data/ calls -f f:max_versions=1,compression=ZSTD \\
            -c f.delay=double -c f.n='long binary' --split-size 64M
        hibase create-table thrift://127.0.0.1:9090 orders -f d -c d.total=double --existing
    """
    if not families and not existing:
        raise click.UsageError("give the table's families: -f FAMILY (repeatable)")
    db = open_store(dir, create=True)
    db.create_table(table, families, columns=_types_of(columns) or None, split_size=split_size,
                    existing=existing, rowkey=rowkey, rowkey_type=rowkey_type,
                    salt_buckets=salt_buckets)
    fams = ", ".join(families) if families else ", ".join(
        f.decode() for f in db.table(table).families())
    note(f"{'Recorded existing' if existing else 'Created'} table {table!r} (families: {fams}).")
    for line in ttl_lines(db.table(table).schema):
        note(line)


def ttl_lines(schema) -> list[str]:
    """What a table's TTLs mean for its indexes (docs/architecture.md, "Tables with a TTL"):
    one line per family with a TTL, then what hibase does about it; none without one."""
    ttls = {f.decode(): fo.time_to_live for f, fo in schema.families.items()
            if fo.time_to_live != FOREVER}
    if not ttls:
        return []
    return [f"  family {f} expires cells after {s} s (TTL)" for f, s in ttls.items()] + [
        "  index entries and value-table counts do not expire with them, so indexes reading "
        "these families find candidate rows only (each row fetched and checked: no covered "
        "answers, no NULL-list lookups) and COUNT / aggregates stream the rows instead of "
        "reading the value table; `hibase index verify --repair` removes expired entries"]


def _types_of(columns: dict) -> dict:
    """COL=TYPE pairs with TYPE as hibase's name for it (Phoenix's BIGINT, VARCHAR... too)."""
    return {parse_column(col).decode("utf-8", "surrogateescape"): str(codec.type_from_name(spec))
            for col, spec in columns.items()}


@click.command("alter-table")
@store_argument
@table_argument
@click.option("--column", "-c", "columns", multiple=True, required=True, callback=_parse_pairs,
              metavar="FAMILY.QUALIFIER=TYPE",
              help="Declare (or change) a column's type: char, byte, short, int, long, float, "
                   "double, string, bytes, with ' binary' for Bytes.toBytes cells, or a Phoenix "
                   "name (BIGINT, INTEGER, DOUBLE, VARCHAR). Repeatable.")
def alter_table(dir: str, table: str, columns: dict) -> None:
    """Declare the types of columns of an existing table, e.g. one loaded without them.

    Declared columns are checked on every put and compare by type in queries (f.alt > 1000
    as numbers, not as bytes); only declared columns can be indexed. Every stored cell of
    those columns is checked first, every version the family keeps: the first one that does not
    parse (in rowkey order) refuses the change with its row, column and value, and nothing is
    declared. A declared column may change type the same way, unless an index has it among its
    columns (its keys are encoded by the type): drop the index, alter, create it again.

    Example:

    \b
        hibase alter-table data/ airports -c a.alt=long -c a.lat=double -c a.name=VARCHAR
    """
    db = open_store(dir)
    done = db.declare_columns(table, _types_of(columns))
    changed = ", ".join(f"{c}={t}" for c, t in done["columns"].items())
    if not changed:
        note(f"Nothing to change: {table!r} already declares those types.")
        return
    note(f"Declared {changed} on {table!r} ({done['cells']} stored cell(s) in {done['rows']} "
         "row(s) checked).")


@click.command("drop-table")
@store_argument
@table_argument
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--keep-data", is_flag=True,
              help="HBase: unregister the table (its indexes are dropped) and leave the HBase "
                   "table and its rows to the programs that write it.")
def drop_table(dir: str, table: str, yes: bool, keep_data: bool) -> None:
    """Delete a table and all its data (asks first unless --yes), or with --keep-data only
    unregister an HBase table: its indexes go, the table and its rows stay in HBase.

    Example:

    \b
        hibase drop-table data/ calls --yes
        hibase drop-table thrift://127.0.0.1:9090 orders --keep-data
    """
    db = open_store(dir)
    db.table(table)  # an unknown table fails before the question
    if keep_data:
        db.delete_table(table, keep_data=True)
        note(f"Unregistered table {table!r}: its indexes are dropped, its HBase table and rows "
             f"are kept (record it again with `hibase create-table ... --existing`).")
        return
    if not yes:
        click.confirm(f"Drop table {table!r} and all its data?", abort=True, err=True)
    db.delete_table(table, disable=True)
    note(f"Dropped table {table!r}.")


# -- put / get / scan --------------------------------------------------------------------------

@click.command()
@store_argument
@table_argument
@click.argument("row")
@click.argument("cells", nargs=-1, required=True, metavar="COL=VALUE...")
@click.option("--timestamp", type=click.IntRange(min=0), metavar="MS",
              help="Cell timestamp in milliseconds (default: now).")
def put(dir: str, table: str, row: str, cells: tuple, timestamp: int | None) -> None:
    """Write cells into one row (atomically): COL is family.qualifier (HBase's
    family:qualifier is read too).

    Values are text; a column declared binary takes its value as text (f.n=42) and stores its
    Bytes.toBytes layout. A value that does not parse as its column's declared type fails and
    nothing is written.

    Example:

    \b
        hibase put data/ flights k1 f.dest=IAH f.delay=12.5
    """
    data = {}
    for pair in cells:
        col, eq, value = pair.partition("=")
        if not eq:
            raise click.BadParameter(f"{pair!r}: write family.qualifier=value", param_hint="COL")
        data[parse_column(col)] = parse_bytes(value)
    db = open_store(dir)
    t = db.table(table)
    types = t.schema.columns
    for col, value in data.items():
        try:
            data[col] = text_to_cell(types.get(col), value)
        except errors.ValueTypeError as exc:
            raise errors.ValueTypeError(f"column {show_column(col)!r}: {exc}") from None
    t.put(parse_bytes(row), data, timestamp=timestamp)


def _row_json(t: Table, row: bytes, data: dict) -> dict:
    """A row as one flat JSON object, as `hibase query --json` prints SELECT *: the rowkey
    under its label, then each cell under its family.qualifier label."""
    return {rowkey_label(t): show_bytes(row),
            **{column_label(t, c): cell_json(t, c, v, row) for c, v in sorted(data.items())}}


def _cell_heads(t: Table, *rest: str) -> list[str]:
    """The header of a line-per-cell listing: the rowkey's label, then `rest`."""
    return [rowkey_label(t), *rest]


def _row_lines(t: Table, row: bytes, data: dict) -> list:
    r = show_bytes(row)
    return [[r, column_label(t, c), cell_text(t, c, v, row)] for c, v in sorted(data.items())]


@click.command()
@store_argument
@table_argument
@click.argument("row")
@columns_option
@click.option("--versions", type=click.IntRange(min=1), metavar="N",
              help="Up to N versions of each cell, newest first, with their timestamps.")
@output_options
def get(dir: str, table: str, row: str, columns: list | None, versions: int | None,
        fmt: str) -> None:
    """Print one row: a line per cell (--table, --csv) or one JSON object (--json).

    JSON: one flat object as `hibase query --json` prints SELECT *: {"ROWKEY": ..., "f.q":
    value} (the rowkey under its PRIMARY KEY name if it has one), values of declared number
    columns as JSON numbers; with --versions each value becomes a list of {"timestamp": ms,
    "value": ...}. Columns print as family.qualifier, the spelling of SQL results. A
    missing row (or one with none of --columns) is an error, exit code 1. Bytes print as
    `hibase --help` describes (UTF-8, else \\xNN escapes).

    Example:

    \b
        hibase get data/ flights k1
        hibase get data/ flights k1 --columns f:dest,f:delay --versions 3 --json
    """
    db = open_store(dir, read_only=True)
    t = db.table(table)
    key = parse_bytes(row)
    data = t.row(key, columns=columns)
    if not data:
        if columns and t.row(key):
            raise click.ClickException(
                f"row {codec.sql_literal(key)} of {table!r} has none of the columns "
                f"{', '.join(show_bytes(c) for c in columns)}")
        raise click.ClickException(f"no row {codec.sql_literal(key)} in table {table!r}")
    items = [(key, data)]
    if versions is None:
        emit(fmt, _cell_heads(t, "column", "value"), items, lambda it: _row_lines(t, *it),
             lambda it: _row_json(t, *it))
        return
    cells = {c: t.cells(key, c, versions=versions, include_timestamp=True) for c in sorted(data)}
    r = show_bytes(key)
    emit(fmt, _cell_heads(t, "column", "timestamp", "value"), items,
         lambda it: [[r, column_label(t, c), ts, cell_text(t, c, v, key)]
                     for c, vs in cells.items() for v, ts in vs],
         lambda it: {rowkey_label(t): r, **{
             column_label(t, c): [{"timestamp": ts, "value": cell_json(t, c, v, key)}
                                  for v, ts in vs]
             for c, vs in cells.items()}})


@click.command()
@store_argument
@table_argument
@click.argument("row")
@click.argument("columns", nargs=-1, metavar="[COL...]")
def delete(dir: str, table: str, row: str, columns: tuple) -> None:
    """Delete a row, or only some of its columns (family.qualifier) or families (family), every
    version; indexes follow. A row that does not exist (or has none of the columns) is an error.

    Example:

    \b
        hibase delete data/ flights k1
        hibase delete data/ flights k1 f.delay g
    """
    db = open_store(dir)
    t = db.table(table)
    key = parse_bytes(row)
    cols = [parse_column(c) for c in columns] or None
    if not t.row(key, columns=cols):
        if cols and t.row(key):
            raise click.ClickException(f"row {codec.sql_literal(key)} of {table!r} has none of "
                                       f"the columns {', '.join(columns)}")
        raise click.ClickException(f"no row {codec.sql_literal(key)} in table {table!r}")
    t.delete(key, columns=cols)
    what = f"columns {', '.join(columns)} of row" if cols else "row"
    note(f"Deleted {what} {codec.sql_literal(key)} of {table!r}.")


@click.command()
@store_argument
@table_argument
@click.option("--start", help="First rowkey (inclusive).")
@click.option("--stop", help="Last rowkey (exclusive).")
@click.option("--prefix", help="Only rows whose key starts with this (not with --start/--stop).")
@columns_option
@click.option("--filter", "filter_", metavar="FILTER",
              help="An HBase filter-language string, e.g. \"PrefixFilter('a')\" or "
                   "\"SingleColumnValueFilter('f', 'dest', =, 'binary:IAH')\".")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="At most N rows.")
@click.option("--reverse", is_flag=True, help="Rows in descending key order.")
@click.option("--wide", is_flag=True,
              help="--table and --csv: one line per row, a column per table column (empty "
                   "where a row has no cell), as `hibase query` prints; without --columns the "
                   "table is read twice (once for the column names).")
@output_options
def scan(dir: str, table: str, start: str | None, stop: str | None, prefix: str | None,
         columns: list | None, filter_: str | None, limit: int | None, reverse: bool,
         wide: bool, fmt: str) -> None:
    """Print rows in key order: a line per cell (--table, --csv) or a flat JSON object per row
    (--json: {"ROWKEY": ..., "f.q": value}, as `hibase query --json` prints SELECT *; the
    rowkey under its PRIMARY KEY name if it has one). Columns print as family.qualifier.

    JSON lines and CSV stream; --table waits for the last row to align the columns. Bytes
    print as `hibase --help` describes (UTF-8, else \\xNN escapes).

    Example:

    \b
        hibase scan data/ flights --prefix k --limit 10
        hibase scan data/ flights --filter "PrefixFilter('k1')" --json
    """
    db = open_store(dir, read_only=True)
    t = db.table(table)
    conv = (lambda s: None if s is None else parse_bytes(s))

    def rows(**extra: Any) -> Iterator[tuple]:
        return t.scan(row_start=conv(start), row_stop=conv(stop), row_prefix=conv(prefix),
                      columns=columns, filter=extra.get("filter", filter_), limit=limit,
                      reverse=reverse)

    if wide and fmt != "json":
        if columns and all(b":" in c for c in columns):
            cols = list(columns)
        else:  # the column names first: keys only, unless a filter of the user's is in play
            seen: set[bytes] = set()
            for _, data in rows(**({} if filter_ else {"filter": "KeyOnlyFilter()"})):
                seen.update(data)
            cols = sorted(seen)
        emit(fmt, [rowkey_label(t)] + [column_label(t, c) for c in cols], rows(),
             lambda it: [[show_bytes(it[0])] + [cell_text(t, c, it[1][c], it[0]) if c in it[1]
                                                else None for c in cols]])
        return
    emit(fmt, _cell_heads(t, "column", "value"), rows(), lambda it: _row_lines(t, *it),
         lambda it: _row_json(t, *it))


# -- load --------------------------------------------------------------------------------------

@click.command()
@store_argument
@table_argument
@click.argument("file", type=click.Path(dir_okay=False, exists=True, allow_dash=True))
@click.option("--format", "format_", type=click.Choice(FORMATS),
              help="Input format (default: jsonl for .jsonl/.ndjson/.json files, else csv).")
@click.option("--rowkey-column", metavar="NAME",
              help="The input column holding the rowkey (not stored as a cell).")
@click.option("--rowkey", "rowkey_template", metavar="TEMPLATE",
              help="Build the rowkey from columns, e.g. '{mdn}:{ts}' ({{ and }} for braces); "
                   "these columns are stored as cells too.")
@click.option("--rowkey-auto", type=click.Choice(ROWKEY_AUTO), is_flag=False, flag_value="row",
              default=None, help="For an input with no key column: number the rows "
              "(row, the default: 000000000001, 000000000002, ... in file order; loading the "
              "file again rewrites the same rows), or a random uuid, or a time-ordered ulid.")
@click.option("--family", "-f", metavar="FAMILY",
              help="Family of the input columns not in --map (default: the table's only one).")
@click.option("--map", "maps", multiple=True, callback=_parse_pairs, metavar="NAME=FAMILY:QUAL",
              help="Store input column NAME as FAMILY:QUAL. Repeatable.")
@click.option("--batch-size", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Cells per write batch.")
@click.option("--create", is_flag=True,
              help="Create the table (and store) if missing, families from --family and --map, "
                   "column types detected from the data (see above).")
@click.option("--type", "types", multiple=True, callback=_parse_pairs, metavar="COL=TYPE",
              help="With --create: declare column COL (an input column name or "
                   "family.qualifier) as TYPE instead of the detected one: long, double, string, "
                   "int, bytes... or a Phoenix name (BIGINT, INTEGER, DOUBLE, VARCHAR). "
                   "Repeatable.")
@click.option("--no-detect", is_flag=True,
              help="With --create: do not detect types; the columns stay undeclared (raw "
                   "bytes, compared as bytes) except those given with --type.")
@click.option("--strict", is_flag=True,
              help="Stop at the first bad row with exit code 1 (rows before it stay written).")
@click.option("--on-duplicate", type=click.Choice(ON_DUPLICATE), default="replace",
              show_default=True,
              help="A record whose rowkey an earlier line or a row already in the table has: "
                   "replace that row's cells in the loaded columns (the last record wins), "
                   "skip the record (the first wins), or reject it as a bad row (error).")
@click.option("--errors", "errors_file", type=click.Path(dir_okay=False, writable=True),
              metavar="FILE", help="Write every rejected row to FILE (line number, tab, "
              "reason); stderr shows the first 20.")
@click.option("--delimiter", default=",", show_default=True, help="CSV field delimiter.")
@click.option("--null-string", metavar="TEXT",
              help="A CSV value equal to TEXT (e.g. NA, NULL, \\N) is NULL: no cell, as an empty "
                   "field, and not looked at by type detection.")
@click.option("--unescape", is_flag=True,
              help="Read \\xNN, \\t, \\n, \\r and \\\\ in values and keys as the bytes "
                   "they stand for, as `hibase scan/query --csv` print bytes: `hibase scan A t "
                   "--csv --wide | hibase load B t - --rowkey-column row --unescape` copies the "
                   "newest cells (`hibase dump` copies everything).")
@click.option("--bulk", is_flag=True,
              help="Suspend the table's index upkeep during the load and rebuild its indexes "
                   "afterwards (in worker processes): much faster for big loads; meanwhile "
                   "queries do not use those indexes.")
@click.option("--progress/--no-progress", default=None,
              help="Show progress bars on stderr (default: when stderr is a terminal).")
@durability_option
def load(dir: str, table: str, file: str, format_: str | None, rowkey_column: str | None,
         rowkey_template: str | None, rowkey_auto: str | None, family: str | None, maps: dict,
         batch_size: int, create: bool, types: dict, no_detect: bool, strict: bool,
         on_duplicate: str, errors_file: str | None, delimiter: str, null_string: str | None,
         unescape: bool, bulk: bool, progress: bool | None, durability: str) -> None:
    """Load a CSV file (its header row names the columns) or JSON lines into a table, like
    HBase's ImportTsv. FILE may be - for stdin, and gzip, bz2 or xz compressed (told by its
    first bytes); a file that is not text is refused before anything is created or written.

    The rowkey comes from one column (--rowkey-column), a template of columns (--rowkey), or,
    for a file with no key column, --rowkey-auto (row numbers, uuid or ulid).
    Every other input column NAME becomes the cell FAMILY:NAME (--family), unless --map says
    otherwise; a column already named fam:qual or fam.qual (as --csv output spells it) for a
    family of the table is that column. Empty
    CSV fields and JSON nulls make no cell (Phoenix treats the empty string as NULL): a query
    then finds that row with f.x IS NULL, not with f.x = ''. Other JSON values that are not
    strings are stored as their JSON text.

    A bad row (missing rowkey column, a value that does not parse as its column's declared type,
    malformed line) is rejected with its line number and the load goes on: stderr shows the
    first 20 rejected rows, --errors FILE keeps them all, and the exit code is 1 when any row
    was rejected (the good rows are loaded). With --strict the load stops at the first bad row
    and exits 1: every row before it is written (the pending batch is sent), nothing from that
    row on.

    A record whose rowkey is already taken (by an earlier line, or a row in the table before
    the load) replaces that row's cells in the loaded columns by default, as a put does in
    HBase: the last record wins and is counted as replaced, not loaded. --on-duplicate skip
    keeps the first instead (counted as skipped), --on-duplicate error rejects the repeat.

    A quoted field that does not close (an unclosed quote runs on over the next lines until
    a quote that does not end a field, or the end of the file) rejects the line where it
    opened, and the lines after it are read again as records.

    A summary ends the load and accounts for every record read: rows loaded (new rows),
    rejected, replaced (or skipped), without values (if any), the records read, seconds (with
    --bulk the load and the index rebuild each, and the total, with the counts on a line of
    their own just before), rows/s.

    With --create, a new table's column types come from the data: the file is read once
    before the load, and a column whose values are all integers (64-bit) is declared long, all
    numbers (decimals, exponents) double, anything else string (bytes if not UTF-8). Empty
    fields and nulls are not looked at; a column with no value stays undeclared; nan, inf and
    numbers with a leading zero (007: codes) count as text, and so do JSON strings. The choice
    is printed on stderr ("Detected types: f.alt=long, ..."). --type COL=TYPE overrides a
    column, --no-detect skips detection. A table that exists keeps its declared types; change
    them with `hibase alter-table`; --create on a table that exists loads into it (a load
    script can run again), provided its --type columns are declared with those types.

    Ctrl-C stops a load: the rows read so far are written and counted; loading the same file
    again rewrites them (same rowkeys; with --rowkey-auto uuid or ulid it adds them again).

    Example:

    \b
        hibase load data/ calls calls.csv --rowkey '{mdn}:{ts}' --family f --create
        hibase load data/ airports airports.csv --rowkey-column faa -f a --create --type zip=string
        hibase load data/ flights flights.jsonl --rowkey-column id --map dest=f:dest --strict
        hibase load data/ calls big.csv.gz --rowkey '{mdn}:{ts}' --family f --bulk
        hibase load data/ events events.csv --rowkey-auto -f e --create --errors bad.txt
        hibase load data/ calls calls.csv --rowkey '{mdn}:{ts}' --family f --durability fsync
    """
    if [rowkey_column, rowkey_template, rowkey_auto].count(None) != 2:
        raise click.UsageError("give one of --rowkey-column NAME, --rowkey TEMPLATE and "
                               "--rowkey-auto (for a file with no key column)")
    if progress is None:
        progress = sys.stderr.isatty()
    if len(delimiter) != 1:
        raise click.BadParameter("must be one character", param_hint="--delimiter")
    if null_string == "":
        raise click.BadParameter("empty fields are NULL already; give the text that stands "
                                 "for NULL, e.g. NA", param_hint="--null-string")
    if (types or no_detect) and not create:
        raise click.UsageError("--type and --no-detect apply to the table --create makes; "
                               "declare an existing table's columns with `hibase alter-table "
                               f"{shlex.quote(dir)} {shlex.quote(table)} -c "
                               "FAMILY:QUALIFIER=TYPE`")
    check_text(file)  # a binary file: one line, before anything is created
    db = open_store(dir, create=create, durability=durability)
    if create and table.encode() not in db.tables():
        fams = {family} if family else set()
        fams |= {col.partition(":")[0] for col in maps.values()}
        if not fams:
            raise click.UsageError("--create needs --family or --map to know the families")
        if file == "-" and not no_detect:  # detection reads the input before the load does
            spooled = _spool_stdin()
            click.get_current_context().call_on_close(lambda: os.unlink(spooled.name))
            file = spooled.name
        try:
            columns = _column_types(file, format_, delimiter, fams, family, maps,
                                    rowkey_column, types, not no_detect, progress, null_string)
        except KeyboardInterrupt:
            note("Interrupted (Ctrl-C) while detecting the column types: nothing was written "
                 "(the table was not created).")
            raise click.exceptions.Exit(130) from None
        db.create_table(table, {f: {} for f in sorted(fams)},
                        columns={c: str(t) for c, t in columns.items()} or None)
        note(f"Created table {table!r} (families: {', '.join(sorted(fams))}).")
    elif create:  # it exists: load into it, if --type agrees with its declared types
        _check_types(db.table(table), dir, types, family, maps)
        note(f"Table {table!r} exists: loading into it.")

    shown = 0
    errors_out = open(errors_file, "w", encoding="utf-8") if errors_file else None
    if errors_out is not None:
        click.get_current_context().call_on_close(errors_out.close)

    def reject(line: int, message: str) -> None:
        nonlocal shown
        if errors_out is not None:
            errors_out.write(f"{line}\t{message}\n")
        if shown < _SHOWN_REJECTS:
            shown += 1
            tqdm.write(f"line {line}: {message}", file=sys.stderr)

    def run() -> dict:
        return load_file(db.table(table), file, format_, rowkey_template, maps, batch_size,
                         progress, rowkey_column=rowkey_column, family=family, strict=strict,
                         delimiter=delimiter, on_reject=reject, rowkey_auto=rowkey_auto,
                         unescape=unescape, on_duplicate=on_duplicate, null_string=null_string,
                         stats=counts)

    counts: dict[str, Any] = {}  # kept up to date by load_file: what a Ctrl-C leaves
    started = time.perf_counter()
    try:
        if bulk:
            bars: dict[str, Any] = {}

            def rebuilt(name: str, done: int, total: int) -> None:
                if name not in bars:
                    bars[name] = tqdm(total=total, desc=f"rebuilding {name}", unit="region",
                                      file=sys.stderr, disable=not progress, leave=False)
                bars[name].update(done - bars[name].n)

            with db.bulk_load(table, progress=rebuilt) as names:
                stats = run()
            for bar in bars.values():
                bar.close()
            total = time.perf_counter() - started
            if names:
                note(f"Rebuilt {len(names)} index(es): {', '.join(names)}.")
            stats["phases"] = {"load": stats["seconds"], "index rebuild": total -
                               stats["seconds"]} if names else None
            stats["seconds"] = total
            stats["rows_per_second"] = stats["rows"] / total if total > 0 else 0.0
        else:
            stats = run()
    except LoadError as exc:
        if exc.stats:  # a bad row (--strict), or a file that ends early (line None)
            _summary(exc.stats, stopped=" (stopped at the bad row)" if exc.line is not None
                     else " (stopped where the file could not be read)")
        raise
    except KeyboardInterrupt:
        _interrupted(counts, rowkey_auto, bulk)
    _summary(stats)
    if stats["rejected"]:
        more = (f"; every one in {errors_file}" if errors_file else
                f"; the first {shown} above, --errors FILE keeps them all"
                if stats["rejected"] > shown else " (above)")
        raise click.ClickException(f"{stats['rejected']} row(s) rejected, "
                                   f"{stats['rows']} loaded{more}")


_SHOWN_REJECTS = 20


def _interrupted(counts: dict, rowkey_auto: str | None, bulk: bool) -> None:
    """Ctrl-C during a load: what was written, what loading again does; exit code 130."""
    rows = counts.get("rows", 0) + counts.get("replaced", 0)
    again = ("loading the file again adds them again under new keys (--rowkey-auto "
             f"{rowkey_auto})" if rowkey_auto in ("uuid", "ulid") else
             "loading the same file again rewrites them (same rowkeys) and goes on")
    if counts:
        note(f"Interrupted (Ctrl-C) after line {counts.get('lines', 0)}: {rows} row(s) were "
             f"written ({counts.get('rows', 0)} new, {counts.get('replaced', 0)} replaced), "
             f"{counts.get('rejected', 0)} rejected; {again}."
             + (" (--bulk: an index whose rebuild was interrupted too stays stale until "
                "`hibase index build`.)" if bulk else ""))
    else:
        note("Interrupted (Ctrl-C) before the load began: nothing was written.")
    raise click.exceptions.Exit(130) from None


def _check_types(t: Table, dir: str, types: dict, family: str | None, maps: dict) -> None:
    """`load --create --type COL=TYPE` on a table that exists: each COL must be declared as
    TYPE already (a load does not change a table's types)."""
    families = {f.decode() for f in t.schema.families}
    for name, spec in types.items():
        cell = cell_column(name, families, family, maps)
        try:
            want = codec.type_from_name(spec)
        except errors.SchemaError as exc:
            raise click.BadParameter(f"{name}={spec}: {exc}", param_hint="--type") from None
        have = t.schema.columns.get(cell.encode()) if cell is not None else None
        if cell is None or have != want:
            shown = f"declares {cell}={have}" if have is not None else (
                f"does not declare {cell}" if cell is not None else "has no family for it")
            raise click.UsageError(
                f"table {t.name.decode()!r} exists and {shown}, not {name}={spec}: a load does "
                "not change a table's types (`hibase alter-table "
                f"{shlex.quote(dir)} {shlex.quote(t.name.decode())} -c FAMILY.QUALIFIER=TYPE` "
                "does)")


def _spool_stdin() -> Any:
    """Standard input copied to a temporary file (removed when the command ends), so that
    type detection and the load can both read it."""
    out = tempfile.NamedTemporaryFile(prefix="hibase-load-", delete=False)
    with out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    return out


def _column_types(file: str, format_: str | None, delimiter: str, families: set[str],
                  family: str | None, maps: dict, rowkey_column: str | None, types: dict,
                  detect: bool, progress: bool,
                  null_string: str | None = None) -> dict[str, codec.ColumnType]:
    """The column types of a table `load --create` makes: detected from the file (unless
    not `detect`), --type ones instead where given; one line on stderr says what was chosen."""
    chosen: dict[str, codec.ColumnType | None] = {}
    if detect:
        detected = detect_types(file, format_, delimiter=delimiter,
                                progress=progress, null_string=null_string)
        chosen = cell_types(detected, families, family, maps, rowkey_column)
    given: dict[str, codec.ColumnType] = {}
    for name, spec in types.items():
        if name == rowkey_column and name not in maps:
            raise click.BadParameter(f"{name}={spec}: {name!r} is the rowkey column, not "
                                     "stored as a cell (map it with --map to keep it)",
                                     param_hint="--type")
        cell = cell_column(name, families, family, maps)
        if cell is None:
            raise click.BadParameter(f"{name}={spec}: no family for {name!r}; write "
                                     "family.qualifier or give --family", param_hint="--type")
        if detect and cell not in chosen:
            known = ", ".join(sorted(chosen)) or "none"
            raise click.BadParameter(f"{name}={spec}: the input has no column {name!r} "
                                     f"(its columns: {known})", param_hint="--type")
        try:
            given[cell] = codec.type_from_name(spec)
        except errors.SchemaError as exc:
            raise click.BadParameter(f"{name}={spec}: {exc}", param_hint="--type") from None
    declared = {c: t for c, t in {**chosen, **given}.items() if t is not None}
    shown = ", ".join(f"{c.replace(':', '.', 1)}={t}{' (--type)' if c in given else ''}"
                      for c, t in sorted(declared.items()))
    if detect:
        empty = sorted(c for c, t in chosen.items() if t is None and c not in given)
        left = (f"; left undeclared (no values): "
                f"{', '.join(c.replace(':', '.', 1) for c in empty)}" if empty else "")
        note(f"Detected types: {shown or 'none'}{left}")
    else:
        note(f"Declared types: {shown}; every other column is undeclared (--no-detect)"
             if shown else "No types declared (--no-detect): every column is undeclared")
    return declared


def _summary(stats: dict, stopped: str = "") -> None:
    """The load's last lines on stderr: every record read is loaded (a new row), rejected,
    replaced or skipped (a repeated rowkey), or without values; the time it took."""
    skip = stats.get("on_duplicate") == "skip"
    again = stats["skipped"] if skip else stats["replaced"]
    if again:
        note(f"{again} row(s) " + ("skipped: their rowkey was already taken (the first record "
                                   "kept)" if skip else
                                   "replaced an earlier row with the same rowkey (the last "
                                   "record wins; --on-duplicate skip keeps the first, error "
                                   "rejects repeats)"))
    counts = (f"Rows loaded: {stats['rows']}, rejected: {stats['rejected']}, "
              f"{'skipped' if skip else 'replaced'}: {again}"
              + (f", {stats['empty']} without values" if stats.get("empty") else "")
              + f" ({stats['records']} records read)")
    end = stopped
    phases = stats.get("phases")
    if phases:  # the timings fill the last line: the counts go just before it
        note(counts + ".")
        split = " (" + ", ".join(f"{name} {secs:.2f} s" for name, secs in phases.items()) + ")"
        note(f"Rows loaded: {stats['rows']}, rejected: {stats['rejected']}, "
             f"{stats['seconds']:.2f} s{split}, {stats['rows_per_second']:.0f} rows/s{end}")
    else:
        note(f"{counts}, {stats['seconds']:.2f} s, {stats['rows_per_second']:.0f} rows/s{end}")


# -- regions / split ---------------------------------------------------------------------------

def _region_items(db: Connection, t: Table) -> Iterator[tuple]:
    sizes = [r.size for r in db.store.regions(t.name.decode())]
    for info, size in zip(t.regions(), sizes):
        yield (show_bytes(info["start_key"]), show_bytes(info["end_key"]), info["id"],
               show_bytes(info["name"]), size)


@click.command()
@store_argument
@table_argument
@output_options
def regions(dir: str, table: str, fmt: str) -> None:
    """List a table's regions: rowkey ranges [start_key, end_key) and approximate bytes written.

    An empty start_key is the table's beginning, an empty end_key its end.

    Example:

    \b
        hibase regions data/ flights --json
    """
    db = open_store(dir, read_only=True)
    emit(fmt, ["start_key", "end_key", "id", "name", "size"], _region_items(db, db.table(table)))


def _hbase_split(db: Connection, url: str, t: Table, row: bytes | None) -> bool:
    """Split HBase table `t` through the Admin API of the `hibase cluster` serving `url`, then
    move its local index rows to the new regions (as a split on the embedded store does)."""
    from ..cluster.hbase import cluster_for_url

    full = t.name.decode()
    hname = db.store.hbase_name(full)  # type: ignore[attr-defined]
    cluster = cluster_for_url(url)
    if cluster is None:
        at = "" if row is None else f", {show_bytes(row)!r}"
        raise click.ClickException(
            f"no `hibase cluster` on this machine serves {url.split('?')[0]}, and HBase's "
            f"Thrift gateway has no split call: split with HBase's shell (split '{hname}'{at})")
    try:
        done = cluster.split(hname, row)
    finally:
        cluster.close_admin()
    db.store.follow_splits(full, force=True)
    return done


@click.command()
@store_argument
@table_argument
@click.option("--row", metavar="ROW",
              help="Split the region holding ROW at ROW (default: every region at its middle).")
def split(dir: str, table: str, row: str | None) -> None:
    """Split regions of a table, as HBase's admin split.

    Without --row, every region with at least two rows splits at its middle row (on HBase:
    where HBase's split policy puts the midpoint). On HBase (a thrift:// URL), whose Thrift
    gateway has no split call, the split goes through HBase's Admin API of the `hibase
    cluster` serving that URL on this machine; for another HBase, split with its own shell.

    Example:

    \b
        hibase split data/ flights --row k5
        hibase split "thrift://127.0.0.1:9090" flights --row k5
    """
    db = open_store(dir)
    t = db.table(table)
    at = None if row is None else parse_bytes(row)
    if hasattr(db.store, "hbase_name"):  # HBase: through the local cluster's Admin API
        done = _hbase_split(db, dir, t, at)
    else:
        done = db.split(table, at)
    n = len(t.regions())
    if done:
        note(f"Split {table!r}: {n} regions now.")
    else:
        note(f"No region of {table!r} was split ({n} regions): the row is already a region "
              "start, or no region has two rows to split between.")
