"""`hibase index ...` (create, list, drop, build, verify) and `hibase query`: the secondary
indexes and the SQL engine on the command line, thin over Connection's index and sql() API."""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from typing import Any, Callable, Iterator

import click
from tqdm import tqdm

from ..connection import Connection
from ..errors import NeedsEngine
from ..index.catalog import close_columns
from ..query import engine
from ..query.ast import ROWKEY, Between, Compare, In, Param, walk
from ..query.resolve import resolve
from ..query.statements import first_word, is_select
from .base import (HibaseGroup, emit, json_safe, note, open_store, output_options, print_result, run_sql,
                   parse_column, show_bytes, show_column, store_argument, table_argument)

__all__ = ["index", "query"]


def _column_list(ctx: click.Context, param: click.Parameter, value: tuple) -> list[str]:
    """Repeatable, comma-separated family.qualifier names (HBase's family:qualifier is read
    too), as the family:qualifier strings the API takes."""
    cols = []
    for c in (c.strip() for v in value for c in v.split(",") if c.strip()):
        fam, sep, qual = parse_column(c).decode("utf-8", "surrogateescape").partition(":")
        if not (sep and fam and qual):
            raise click.BadParameter(f"{c!r}: write family.qualifier")
        cols.append(f"{fam}:{qual}")
    return cols


def _progress_bar(enabled: bool | None, desc: str, regions: int
                  ) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """A progress(done, total) callback drawing a tqdm bar over regions, and its closer."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    bar = tqdm(total=regions, desc=desc, unit="region", disable=not enabled, leave=False,
               file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return progress, bar.close


def _spec_line(d: dict) -> str:
    cover = f"; covers {', '.join(d['covering'])}" if d["covering"] else ""
    if d.get("uncovered"):
        cover = "; uncovered"
    where = f"; where {d['where']}" if d.get("where") else ""
    return f"{', '.join(d['columns'])}{cover}{where}"


# -- hibase index ------------------------------------------------------------------------------

@click.group(cls=HibaseGroup)
def index() -> None:
    """Global secondary indexes: create, list, drop, build, verify.

    An index on one or more declared columns (a composite index answers any prefix of its
    columns) lets `hibase query` find rows by those columns without a full scan; covered
    columns are stored in the index so queries needing only them never read the table.

    Example:

    \b
        hibase index create data/ telecom by_ip --column f.ip --cover f.port
        hibase index list data/
        hibase query data/ "SELECT f.port FROM telecom WHERE f.ip = '1.2.3.4'"
    """


_processes_option = click.option(
    "--processes", type=click.IntRange(min=1), metavar="N",
    help="Worker processes for the build, one region each at a time (default: one per CPU).")
_progress_option = click.option("--progress/--no-progress", default=None,
                                help="Show a progress bar over regions on stderr (default: "
                                     "when stderr is a terminal).")
_distributed_option = click.option(
    "--distributed", is_flag=True,
    help="HBase only: run the build as a map-only MapReduce job, one map task per region "
         "(the LocalJobRunner here, YARN with a cluster's HADOOP_CONF_DIR; HBase found by "
         "HBASE_CONF_DIR or the `hibase cluster` serving the URL).")
_map_slots_option = click.option(
    "--map-slots", type=click.IntRange(min=1), metavar="N",
    help="With --distributed under the LocalJobRunner: map tasks run at once (default: one "
         "per CPU).")


def _job(distributed: bool, map_slots: int | None) -> Any:
    """The distributed engine's job for --distributed (None: build in this process)."""
    if not distributed:
        return None
    from ..cluster.mapreduce import MapReduceJob
    return MapReduceJob(map_slots)


def _job_note(stats: dict) -> None:
    """The MapReduce job's figures: rows/s per task and in total, and its log."""
    job = stats.get("job")
    if not job:
        return
    rates = ", ".join(f"{t['rows_per_s']:.0f}" for t in job["tasks"] if t["rows_per_s"])
    note(f"MapReduce job {job['job']}: {len(job['tasks'])} map task(s), {job['rows']} row(s) "
         f"in {job['seconds']:.2f} s = {job['rows_per_s'] or 0:.0f} rows/s in total; per task "
         f"rows/s: {rates or '-'} (log {job['log']}).")


@index.command("create")
@store_argument
@table_argument
@click.argument("name")
@click.option("--column", "-c", "columns", multiple=True, required=True, callback=_column_list,
              metavar="FAMILY:QUALIFIER",
              help="An indexed column (declared with a type by create-table or alter-table); "
                   "repeat, in order, for a composite index.")
@click.option("--cover", "covering", multiple=True, callback=_column_list,
              metavar="FAMILY:QUALIFIER",
              help="A column stored in the index rows (a covering index); repeatable.")
@click.option("--local", is_flag=True,
              help="A local index (rows kept per region, like hindex / 360's) instead of a "
                   "global one.")
@click.option("--eventual", is_flag=True,
              help="Eventually consistent (HBase with hibase's coprocessor): writes record "
                   "each changed row once and the region servers update the index shortly "
                   "after, so writes cost less; `hibase index status` shows what waits.")
@click.option("--text", is_flag=True,
              help="A full-text index on one VARCHAR column (an entry per word), for "
                   "CONTAINS(col, 'words') in queries.")
@click.option("--uncovered", is_flag=True,
              help="Entries carry no values (no --cover) and a write stores each once: the "
                   "cheapest upkeep, for queries that read the rows anyway.")
@click.option("--where", "where", metavar="CONDITION",
              help="A partial index: entries only for rows the SQL condition holds for "
                   "(\"f.status = 'open'\"); queries implying it use it.")
@_processes_option
@_progress_option
@_distributed_option
@_map_slots_option
def index_create(dir: str, table: str, name: str, columns: list[str], covering: list[str],
                 local: bool, eventual: bool, uncovered: bool, where: str | None,
                 text: bool, processes: int | None,
                 progress: bool, distributed: bool, map_slots: int | None) -> None:
    """Create a global index NAME on TABLE and build it from the rows already there.

    From then on every put, delete, batch and counter keeps it exact (with --eventual on
    HBase: exact once the region servers have applied the latest writes). The build runs over
    the table's regions in worker processes; writes wait until it is done.

    Example:

    \b
        hibase index create data/ telecom by_ip --column f.ip
        hibase index create data/ telecom by_ip_port -c f.ip -c f.port --cover f.url
        hibase index create data/ telecom by_cell -c f.cell_id --local
        hibase index create thrift://127.0.0.1:9090 telecom by_ip -c f.ip --distributed
        hibase index create thrift://127.0.0.1:9090 telecom by_url -c f.url --eventual
        hibase index create data/ telecom by_port -c f.port --uncovered
        hibase index create data/ telecom by_ip_8080 -c f.ip --where "f.port = 8080"
        hibase index create data/ docs body_words -c f.body --text
    """
    db = open_store(dir)
    t = db.table(table)  # an unknown table fails before anything else
    schema = t.schema
    for col in columns:
        fam = col.partition(":")[0].encode()
        if fam in schema.families and col.encode() not in schema.columns:
            near = close_columns(col.encode(), schema.columns)
            if near:
                raise click.ClickException(
                    f"cannot index {col!r}: {table} declares no such column; did you mean "
                    f"{' or '.join(near)}? (declared: "
                    f"{', '.join(c.decode('utf-8', 'backslashreplace') for c in schema.columns)})")
            raise click.ClickException(
                f"cannot index {col!r}: only declared columns can be indexed; declare it "
                f"first: hibase alter-table {shlex.quote(dir)} {shlex.quote(table)} -c "
                f"{shlex.quote(col)}=TYPE (TYPE: long, double, string, ...)")
    regions = len(t.regions())
    bar, close = _progress_bar(progress, f"building {name}", regions)
    t0 = time.perf_counter()
    try:
        spec = db.create_index(table, name, columns, covering=covering, local=local,
                               processes=processes, progress=bar,
                               job=_job(distributed, map_slots),
                               consistency="eventual" if eventual else "strong",
                               uncovered=uncovered, where=where,
                               kind="text" if text else "")
    finally:
        close()
    kind = "local index" if spec.get("local") else "text index" if text else "index"
    how = " by a MapReduce job" if distributed else ""
    note(f"Created {kind} {name!r} on {table!r} ({_spec_line(spec)}), built{how} over "
         f"{regions} region(s) in {time.perf_counter() - t0:.2f} s.")
    _job_note(spec.get("build") or {})


@index.command("build")
@store_argument
@table_argument
@click.argument("name")
@_processes_option
@_progress_option
@_distributed_option
@_map_slots_option
def index_build(dir: str, table: str, name: str, processes: int | None, progress: bool,
                distributed: bool, map_slots: int | None) -> None:
    """Rebuild index NAME from the table's rows (HiBase's batch build of static data).

    Safe to interrupt and run again: an interrupted build leaves the index unused by queries
    until a build completes. Writes wait while it runs.

    Example:

    \b
        hibase index build data/ telecom by_ip --processes 2
        hibase index build thrift://127.0.0.1:9090 telecom by_ip --distributed
    """
    db = open_store(dir)
    bar, close = _progress_bar(progress, f"building {name}", len(db.table(table).regions()))
    t0 = time.perf_counter()
    try:
        stats = db.build_index(table, name, processes=processes, progress=bar,
                               job=_job(distributed, map_slots))
    finally:
        close()
    note(f"Built index {name!r} on {table!r}: {stats['rows_indexed']} row(s) indexed, "
          f"{stats['values']} distinct value(s), {stats['regions']} region(s), "
          f"{time.perf_counter() - t0:.2f} s.")
    _job_note(stats)


def _index_items(db: Connection, table: str | None) -> Iterator[dict]:
    names = [table.encode()] if table is not None else db.tables()
    for name in names:
        yield from db.indexes(name.decode())


@index.command("list")
@store_argument
@click.argument("table", metavar="[TABLE]", required=False)
@output_options
def index_list(dir: str, table: str | None, fmt: str) -> None:
    """List the indexes of TABLE (or of every table): columns, covered columns, state.

    State "ready" means queries use the index; "building" means a build has not completed.

    Example:

    \b
        hibase index list data/
        hibase index list data/ telecom --json
    """
    db = open_store(dir, read_only=True)
    emit(fmt, ["table", "name", "kind", "columns", "types", "covering", "state", "alias"],
         _index_items(db, table),
         lambda d: [[d["table"], d["name"], "local" if d.get("local") else "global",
                     ",".join(d["columns"]), ",".join(d["types"]), ",".join(d["covering"]),
                     d["state"], d["alias"]]],
         lambda d: d)


@index.command("status")
@store_argument
@click.argument("table", metavar="[TABLE]", required=False)
@output_options
def index_status(dir: str, table: str | None, fmt: str) -> None:
    """How each index of TABLE (or of every table) stands: its state, who keeps it (the
    region servers' coprocessor or the clients), its consistency, and for an eventually
    consistent one the changed rows its region servers have not applied yet and the oldest's
    age in seconds.

    Example:

    \b
        hibase index status thrift://127.0.0.1:9090 telecom
        hibase index status data/ --json
    """
    db = open_store(dir, read_only=True)

    lags: dict[str, dict] = {}  # a table's eventual indexes share its change records

    def items() -> Iterator[dict]:
        for d in _index_items(db, table):
            shared = d["consistency"] == "eventual" and d.get("upkeep") == "server"
            lag = lags.get(d["table"]) if shared else None
            if lag is None:
                lag = db.index_lag(d["table"], d["name"])
                if shared:
                    lags[d["table"]] = lag
            yield {"table": d["table"], "name": d["name"], "state": d["state"],
                   "upkeep": d.get("upkeep", "client"), "consistency": d["consistency"],
                   "pending": lag["pending"], "oldest_s": lag["oldest_s"]}

    emit(fmt, ["table", "name", "state", "upkeep", "consistency", "pending", "oldest_s"],
         items(), lambda d: [[d["table"], d["name"], d["state"], d["upkeep"], d["consistency"],
                              d["pending"], "" if d["oldest_s"] is None else d["oldest_s"]]],
         lambda d: d)


@index.command("drop")
@store_argument
@table_argument
@click.argument("name")
def index_drop(dir: str, table: str, name: str) -> None:
    """Drop index NAME of TABLE (its rows and value table); the table's data is untouched.

    Example:

    \b
        hibase index drop data/ telecom by_ip
    """
    db = open_store(dir)
    db.drop_index(table, name)
    note(f"Dropped index {name!r} on {table!r}.")


def _bad_cell_lines(r: dict) -> list[str]:
    """The verify report's cells that do not parse as their declared type (NULL to the
    index): a count and the first few by row and column."""
    n = r.get("bad_cells") or 0
    if not n:
        return []
    where = "; ".join(f"row {show_bytes(e['row'])}, {show_column(e['column'])}"
                      for e in r.get("bad_cell_examples", [])[:3]) + ("; ..." if n > 3 else "")
    what = "1 indexed cell did not parse as its declared type" if n == 1 else \
        f"{n} indexed cells did not parse as their declared types"
    return [f"  {what} ({where}): NULL to the index, which holds no entry for it"]


def _verify_lines(r: dict) -> list[str]:
    n = r["entries"]
    head = f"index {r['index']} on {r['table']}: {n} expected {'entry' if n == 1 else 'entries'}; "
    expired = _expired_line(r)
    routing = r.get("routing") or {}
    if r["ok"]:
        lines = [head + "OK"]
        if routing.get("used") is False and routing.get("why"):
            lines.append(f"  routing filters not used: {routing['why']}")
        return lines + expired + _bad_cell_lines(r)
    lines = [head + f"NOT OK: missing {r['missing']}, extra {r['extra']}, wrong covered "
                    f"values {r['wrong_covered']}, wrong value-table counts {r['bad_counts']}"
                    + (f", routing filter false negatives {routing['false_negatives']}"
                       if routing.get("false_negatives") else "")
                    + (f" ({r['pending_counts']} pending: a write in flight or stopped midway; "
                       "not used for answers)" if r.get("pending_counts") else "")]
    lines += _bad_cell_lines(r)
    for kind in ("missing", "extra"):
        rows = r.get("examples", {}).get(kind) or []
        if rows:
            lines.append(f"  {kind} rows, e.g.: " + ", ".join(show_bytes(x) for x in rows))
    lines += expired
    lines.append("  repaired: the differences were written" if r["repaired"]
                 else "  run again with --repair to fix")
    return lines


def _expired_line(r: dict) -> list[str]:
    """What a table's TTL left in the index (not differences: no answer uses them)."""
    if not (r.get("expired") or r.get("stale_counts")):
        return []
    done = "removed (--repair)" if r["repaired"] else "--repair removes them"
    return [f"  TTL: {r['expired']} row(s) with entries of expired cells, "
            f"{r['stale_counts']} value-table count(s) off by them; not differences (queries "
            f"check each row and take no count), {done}"]


@index.command("verify")
@store_argument
@table_argument
@click.argument("name")
@click.option("--repair", is_flag=True, help="Write the missing entries, delete the extra "
                                             "ones and fix the value-table counts.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.pass_context
def index_verify(ctx: click.Context, dir: str, table: str, name: str, repair: bool,
                 as_json: bool) -> None:
    """Compare index NAME with what a rebuild from the table would give (like Phoenix's
    IndexScrutinyTool) and print the report: missing and extra entries, wrong covered values,
    wrong value-table counts (local indexes: routing filter false negatives).

    Indexed cells that do not parse as their declared type (written by a client that skips
    hibase's checks) are NULL to the index, which holds no entry for them: they are counted
    and the first few named (row, column), but do not make the index NOT OK.

    Exit code 0 when the index is exact (or was repaired with --repair), 1 when it is not.

    Example:

    \b
        hibase index verify data/ telecom by_ip
        hibase index verify data/ telecom by_ip --repair --json
    """
    db = open_store(dir, read_only=not repair)
    report = db.verify_index(table, name, repair=repair)
    if as_json:
        click.echo(json.dumps(json_safe(report), ensure_ascii=False))
    else:
        for line in _verify_lines(report):
            click.echo(line)
    if not report["ok"] and not report["repaired"]:
        ctx.exit(1)


# -- hibase query ------------------------------------------------------------------------------

_EXPLAIN = re.compile(r"^\s*EXPLAIN\b", re.IGNORECASE)


def _number(text: str) -> Any:
    """A -p value: an int or float when it reads as one, text otherwise; 'quoted' is text."""
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _text_params(select: Any, schema: Any) -> set[Param]:
    """The placeholders of a (resolved) SELECT's condition that meet a text column (VARCHAR,
    CHAR, VARBINARY, undeclared, a VARCHAR or bytes rowkey): their -p / -P values stay text,
    so `-p 2010` finds f.year = '2010' where f.year is VARCHAR."""
    out: set[Param] = set()
    for n in walk(select.where):
        if not isinstance(n, (Compare, Between, In)):
            continue
        col = n.column
        ctype = col.cast if col.cast is not None else (
            schema.rowkey_type if col.name == ROWKEY else schema.columns.get(col.name))
        if ctype is None or ctype.name in ("string", "char", "bytes"):
            values = ((n.value,) if isinstance(n, Compare) else (n.low, n.high)
                      if isinstance(n, Between) else n.values)
            out.update(v for v in values if isinstance(v, Param))
    return out


def _cli_params(params: tuple[str, ...], named: tuple[str, ...],
                text: set[Param] | frozenset[Param] = frozenset()) -> Any:
    """-p / -P values: numbers when they read as one (_number), except for the placeholders
    in `text`, which meet a text column: their values stay text ('quoted' or not)."""
    def typed(p: Param, v: str) -> Any:
        if p in text:
            return v[1:-1] if len(v) >= 2 and v[0] == v[-1] == "'" else v
        return _number(v)

    if params and named:
        raise click.UsageError("use either -p (for ?) or -P (for :name), not both")
    if named:
        out = {}
        for item in named:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise click.UsageError(f"-P takes NAME=VALUE, got {item!r}")
            out[name] = typed(Param(name=name), value)
        return out
    return [typed(Param(index=i), p) for i, p in enumerate(params)] or None


@click.command()
@store_argument
@click.argument("statement", metavar='"SELECT ..."')
@click.option("--param", "-p", "params", multiple=True, metavar="VALUE",
              help="A value for the next ? placeholder, in order (repeat the option), typed "
                   "by the column it meets: text for a VARCHAR, CHAR, binary or undeclared "
                   "column (-p 2010 finds '2010'), else a number when it reads as one "
                   "('quoted' keeps it text). Values are bound, never pasted into the SQL.")
@click.option("--named", "-P", "named", multiple=True, metavar="NAME=VALUE",
              help="A value for the :NAME placeholder (repeat the option).")
@click.option("--explain", is_flag=True, help="Print the plan instead of running the query "
                                              "(as EXPLAIN SELECT ... does).")
@click.option("--full-scan", is_flag=True,
              help="Ignore rowkey and index paths: evaluate the condition over a full table "
                   "scan (the same rows, slower; the baseline indexes are measured against).")
@click.option("--range-method", type=click.Choice(engine.RANGE_METHODS), default="auto",
              show_default=True,
              help="Index ranges: an ordered index scan, the paper's value-table walk with "
                   "parallel point lookups, or the planner's choice.")
@click.option("--cache", "cache", default=None, metavar="URL",
              help="Hot-index cache shared across processes: redis://host:port[,redis://...] "
                   "or zk://host:port/path (cache nodes registered by `hibase cache-node`). "
                   "Default: none (an in-process cache would die with the command).")
@click.option("--cache-policy",
              type=click.Choice(["window-heat", "hotscore", "hotscore-per-record", "lru"]),
              default="window-heat", show_default=True,
              help="Replacement policy with --cache redis://... (zk:// nodes run their own).")
@click.option("--cache-capacity", type=int, default=None, metavar="RECORDS",
              help="Cache capacity in index entries, with --cache redis://...")
@output_options
def query(dir: str, statement: str, params: tuple[str, ...], named: tuple[str, ...],
          explain: bool, full_scan: bool, range_method: str, cache: str | None,
          cache_policy: str, cache_capacity: int | None, fmt: str) -> None:
    """Run an SQL query: SELECT cols FROM table [WHERE condition] [GROUP BY cols] [HAVING
    condition] [ORDER BY col [ASC|DESC] [NULLS FIRST|LAST], ...] [LIMIT n] [OFFSET m].

    Columns are family.qualifier (Phoenix's spelling), ROWKEY is the rowkey, * every column.
    Predicates: =, <>, <, <=, >, >=, BETWEEN, IN, LIKE 'prefix%', IS [NOT] NULL, AND, OR,
    NOT; values compare by the column's declared type. Aggregates: COUNT(*), COUNT([DISTINCT]
    col), SUM, MIN, MAX, AVG, with GROUP BY / HAVING, and SELECT DISTINCT; they print one line
    per group with the values decoded. ORDER BY puts NULLs first unless NULLS LAST (as
    Phoenix). ? and :name placeholders take their values from -p / -P. Functions, arithmetic,
    CASE, JOIN, subqueries and UNION run on DuckDB over hibase's scans (rows as values under
    their labels). The planner answers each part of the
    condition by the rowkey, an index or, when nothing applies, a filtered full scan; EXPLAIN
    SELECT ... (or --explain) prints the plan. Output, the same as `hibase sql` prints for the
    statement: a row per line (--table, --csv) or a flat JSON object per row (--json:
    {"ROWKEY": ..., "f.q": value, "COUNT(*)": n}), each column under its label (an AS alias,
    family.qualifier, the rowkey's PRIMARY KEY name or ROWKEY), null where the row has none,
    numbers of declared columns as JSON numbers; then the row count and time on stderr, and a
    line naming any cells read as NULL because they do not parse as their declared type. The
    columns are the same whatever rows the WHERE finds: the select list's, in its order (a
    column named twice prints twice; once in a JSON object), or for * the rowkey, the declared
    columns in the table's order, then any undeclared ones the rows hold, by name.

    Example:

    \b
        hibase query data/ "SELECT f.url FROM telecom WHERE f.ip = '1.2.3.4' LIMIT 10"
        hibase query data/ "SELECT * FROM telecom WHERE f.ip = '1.2.3.4' AND f.port = 443" --json
        hibase query data/ "EXPLAIN SELECT * FROM telecom WHERE f.url LIKE 'http://a/%'"
        hibase query data/ "SELECT f.port, COUNT(*) FROM telecom WHERE f.ip = ? GROUP BY f.port" -p 1.2.3.4
        hibase query data/ "SELECT * FROM telecom WHERE f.port > :p ORDER BY f.port DESC LIMIT 3" -P p=1000
        hibase query data/ "SELECT * FROM telecom WHERE f.ip = '1.2.3.4'" --cache redis://127.0.0.1:6379
    """
    if explain and not _EXPLAIN.match(statement):
        statement = "EXPLAIN " + statement
    options = dict(range_method=range_method, full_scan=full_scan)
    if not is_select(statement):  # DDL / DML (issue 28): a writable store, the count or plan
        word = first_word(statement)
        shows = word in ("SHOW", "DESCRIBE", "DESC")  # SHOW TABLES, DESCRIBE t: reads
        db = open_store(dir, read_only=shows, create=word == "CREATE")
        bound = _cli_params(params, named)
    else:
        if cache is None:
            db = open_store(dir, read_only=True)
        elif cache.startswith("zk://"):  # the cache-node services run the policy there
            db = open_store(dir, read_only=True, cache=cache)
        else:
            db = open_store(dir, read_only=True, cache=cache, cache_policy=cache_policy,
                            cache_capacity=cache_capacity)
        engine.check_size(statement, db.max_statement)
        text: set[Param] = set()
        try:
            select = engine.parse_select(statement)
        except NeedsEngine:  # beyond the lean path: the SQL engine types the values itself
            pass
        else:
            schema = db.table(select.table).schema  # an unknown table fails here
            text = _text_params(resolve(select, schema), schema)
        bound = _cli_params(params, named, text)
    t0 = time.perf_counter()
    result = run_sql(db, statement, bound, **options)
    ms = f"{(time.perf_counter() - t0) * 1e3:.1f} ms"
    if result.kind == "explain":  # EXPLAIN SELECT / DELETE / UPSERT ... SELECT
        click.echo(result.text if result.text is not None else
                   "\n".join(line for (line,) in result.rows))
    elif result.kind == "select":  # as `hibase sql` prints it (cli/base.py print_result)
        print_result(fmt, result, f"{len(result.rows)} row(s) in {ms}")
    else:
        note(("OK" if result.kind == "ddl" else f"{result.rowcount} row(s) {result.verb}")
             + f" in {ms}")
