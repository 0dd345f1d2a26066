"""SELECTs beyond the lean path, run on DuckDB over hibase's own scans (issue 38).

The lean path (parse -> plan -> execute) answers what indexes answer at a small fixed cost and
refuses the rest with ``NeedsEngine`` (functions, arithmetic, CASE, joins, subqueries, UNION,
GROUP BY an expression, ...). Such a statement is planned here (``plan``, cached by its text)
and run (``run``):

1. its names are bound to hibase tables (``duck_bind``): per table the columns it reads and
   the conjuncts that touch that table alone;
2. each table is read by the lean path with those conjuncts pushed down (so indexes, rowkey
   ranges and the native scan filter first) into a typed in-process DuckDB view
   (``duck_feed``); a table that read would scan whole on the embedded store, all of whose
   columns the statement reads are numbers or strings, comes from the columnar feed instead
   (``columnar``: decoded a column at a time, kept until the next write);
3. the statement, rewritten for DuckDB with Phoenix's semantics kept (``duck_sql``), runs
   there; DuckDB's errors become QueryPlanError / QuerySyntaxError.

Nothing else here is backend-specific: the scans are the lean path's, on any store.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Mapping, Sequence

from sqlglot import exp

from ..errors import InvalidArgument, QueryPlanError, QuerySyntaxError
from . import engine
from .duck_sql import database as _database
from .ast import ROWKEY
from .duck_bind import TableUse, bind
from .duck_feed import duck_type, feedable, lean_select, register, register_feed, view_columns
from . import columnar, fast
from .prepare import prepared
from .duck_sql import Phoenix, read, to_duckdb
from .parse import _number_placeholders

__all__ = ["EngineStatement", "Answer", "plan", "run", "explain"]

_EXPLAIN = re.compile(r"\s*EXPLAIN\b\s*", re.IGNORECASE)


@dataclass(frozen=True)
class EngineStatement:
    """A SELECT for the SQL engine: its text, parsed tree (never mutated: each run binds a
    copy), whether it is EXPLAINed, and why the lean path refused it."""

    sql: str
    tree: exp.Expression
    explain: bool
    why: str


@dataclass
class Answer:
    """A run's result: per output column (label as written or None, the hibase table and
    column it is when it is one, DuckDB's type name), and the rows as tuples."""

    columns: list[tuple[str | None, TableUse | None, bytes | None, str]]
    rows: list[tuple]


@functools.lru_cache(maxsize=1024)
def plan(sql: str, why: str) -> EngineStatement:
    """Parse a statement the lean path refused (``why``: its refusal) for the engine."""
    m = _EXPLAIN.match(sql)
    body = sql[m.end():] if m else sql
    return EngineStatement(sql, read(body), m is not None, why)


def _bound(stmt: EngineStatement, params: Any, schema_of: Callable[[str], Any]
           ) -> tuple[exp.Expression, dict[str, TableUse], dict[str, Any]]:
    tree = stmt.tree.copy()
    values = _bind_params(tree, params)
    return tree, bind(tree, schema_of), values


def run(stmt: EngineStatement, params: Any, store: Any, indexer: Any,
        full: Callable[[str], str], range_method: str = "auto", full_scan: bool = False
        ) -> Answer:
    """Run ``stmt`` (see the module docstring)."""
    import duckdb

    tree, uses, values = _bound(stmt, params, lambda name: store.schema(full(name)))
    con = _database().cursor()
    try:
        views = {}
        for i, use in enumerate(uses.values()):
            if _columnar(use, values, store, indexer, full, range_method, full_scan):
                views[use.name] = register_feed(con, use, columnar.feed(store, full(use.name)),
                                                i)
                continue
            rows = _read(use, values, store, indexer, full, range_method, full_scan)
            views[use.name] = register(con, use, rows, i)
        sql = to_duckdb(tree, views)
        cur = con.execute(sql, values) if values else con.execute(sql)
        description = cur.description or []
        exact = any(k.startswith("DECIMAL") for v in views.values() for k in v.values())
        rows = [tuple(_value(v, exact) for v in row) for row in cur.fetchall()]
    except duckdb.ParserException as e:
        raise QuerySyntaxError(f"DuckDB: {_message(e)}") from None
    except (duckdb.Error, RuntimeError) as e:
        # a Ctrl-C (SIGINT) while DuckDB runs: "Query interrupted", or a KeyboardInterrupt
        # in the Python code DuckDB called back (reading a DataFrame) wrapped in its error
        if str(e) == "Query interrupted" or str(e).startswith("KeyboardInterrupt"):
            con.interrupt()  # stops DuckDB's worker threads too (else close() waits for them)
            raise KeyboardInterrupt from None
        if not isinstance(e, duckdb.Error):
            raise
        raise QueryPlanError(f"DuckDB: {_message(e)}") from None
    finally:
        con.close()
    return Answer(_columns(stmt, tree, [(d[0], str(d[1])) for d in description]), rows)


def _read(use: TableUse, values: dict[str, Any], store: Any, indexer: Any,
          full: Callable[[str], str], range_method: str, full_scan: bool
          ) -> list[tuple[bytes, dict]]:
    """The lean path's rows for ``use``, its conjuncts pushed down; when the lean path
    refuses them (a number compared with an undeclared column, a parameter it does not take,
    ...) the whole table (DuckDB applies the statement's own conditions either way)."""
    table = full(use.name)
    try:
        return list(engine.run(lean_select(use, table, values), store, indexer, range_method,
                               full_scan))
    except (QueryPlanError, InvalidArgument):
        if use.pushdown() is None:
            raise
        return list(engine.run(lean_select(use, table, values, pushdown=False), store,
                               indexer, range_method, full_scan))


def _columnar(use: TableUse, values: dict[str, Any], store: Any, indexer: Any,
              full: Callable[[str], str], range_method: str, full_scan: bool) -> bool:
    """Whether ``use`` is read from the table's columnar feed: its lean read would scan the
    whole embedded table anyway (no index or rowkey range for its pushed-down conditions)."""
    table = full(use.name)
    if not fast.ENABLED or not feedable(use) or not columnar.supported(store, table):
        return False
    try:
        plan = prepared(lean_select(use, table, values), store, indexer, range_method,
                        full_scan)[0]
    except (QueryPlanError, InvalidArgument):
        return True  # the lean path reads the whole table too (_read)
    return fast.full_scan_plan(plan)


def explain(stmt: EngineStatement, params: Any, store: Any, indexer: Any,
            full: Callable[[str], str], range_method: str = "auto",
            full_scan: bool = False) -> str:
    """The engine's plan: ENGINE duckdb, per table what hibase scans (columns, the pushed-down
    condition and the lean plan for it), then the statement DuckDB runs."""
    tree, uses, values = _bound(stmt, params, lambda name: store.schema(full(name)))
    lines = [f"ENGINE duckdb (the lean path refused: {stmt.why})"]
    views = {}
    for use in uses.values():
        columns = view_columns(use)
        views[use.name] = {_col(c): duck_type(use, c) for c in columns}
        shown = "*" if use.star else ", ".join(_col(c) for c in columns) or "(rowkeys)"
        cond = use.pushdown()
        if _columnar(use, values, store, indexer, full, range_method, full_scan):
            lines.append(f"  COLUMNAR SCAN {use.name} ({shown}) (the table's cells decoded a "
                         "column at a time; DuckDB applies the conditions)")
            continue
        lines.append(f"  SCAN {use.name} ({shown})"
                     + (f" PUSHED DOWN {cond}" if cond else " (no condition pushed down)"))
        try:
            text = engine.explain(lean_select(use, full(use.name), values), store, indexer,
                                  range_method, full_scan)
        except (QueryPlanError, InvalidArgument) as e:
            text = f"the whole table (the lean planner refused the condition: {e})"
        lines += ["    " + line for line in text.splitlines()]
    lines.append("  DUCKDB " + to_duckdb(tree, views))
    return "\n".join(lines)


def _col(column: bytes) -> str:
    return "ROWKEY" if column == ROWKEY else column.decode("utf-8", "backslashreplace")


def _columns(stmt: EngineStatement, tree: exp.Expression, described: list[tuple[str, str]]
             ) -> list[tuple[str | None, TableUse | None, bytes | None, str]]:
    """Each output column's label, hibase column and DuckDB type. A select list without
    ``*`` gives each item's alias, column or text as written; with one, DuckDB's names."""
    bound_items = _first_select(tree).expressions
    written = _first_select(stmt.tree).expressions
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in bound_items) or len(bound_items) != len(described):
        return [(None if name in ("ROWKEY",) or ":" in name else name, None,
                 (ROWKEY if name == "ROWKEY" else name.encode("utf-8")
                  if ":" in name else None), kind) for name, kind in described]
    out = []
    for item, text, (_, kind) in zip(bound_items, written, described):
        inner = item.this if isinstance(item, exp.Alias) else item
        hit = inner.meta.get("hibase_column") if isinstance(inner, exp.Column) else None
        label = item.alias if isinstance(item, exp.Alias) else (
            None if hit else text.sql(dialect=Phoenix))
        out.append((label, hit[0] if hit else None, hit[1] if hit else None, kind))
    return out


def _first_select(tree: Any) -> exp.Select:
    while not isinstance(tree, exp.Select):
        tree = tree.this if isinstance(tree, exp.Subquery) else tree.left
    return tree


def _value(v: Any, exact: bool) -> Any:
    """A DuckDB value as hibase returns it: a DECIMAL as float (DuckDB reads a literal like 1.5
    as one, SQLite as a REAL) unless the statement reads a DECIMAL column (``exact``)."""
    return float(v) if isinstance(v, Decimal) and not exact else v


def _message(e: Exception) -> str:
    return str(e).replace("\n", " ").strip()


# -- parameters ----------------------------------------------------------------------------

def _bind_params(tree: exp.Expression, params: Any) -> dict[str, Any]:
    """Bind the ``?`` / ``:name`` of ``tree`` (the lean path's rules: a list / tuple for
    ``?``, a dict for ``:name``): each becomes DuckDB's named parameter ``$hibase_pN`` cast to
    its value's type (so types are known to the rewrites of duck_sql), a NULL the literal;
    returns {name: value}. No value becomes SQL text, on DuckDB as on the lean path (the
    pushed-down conditions carry ``:hibase_pN``, bound by params.bind)."""
    places = list(tree.find_all(exp.Placeholder))
    if not places:
        if params:
            raise InvalidArgument(f"the statement has no parameters but {len(params)} "
                                  "value(s) were given")
        return {}
    _number_placeholders(tree)
    values: dict[str, Any] = {}
    if params is None:
        raise InvalidArgument("the statement has parameters but no values were given")
    for node in places:
        p = node.meta["hibase_param"]
        if p.name is not None:
            if not isinstance(params, Mapping):
                raise InvalidArgument("named parameters (:name) take a dict of values")
            if p.name not in params:
                raise InvalidArgument(f"no value for parameter(s) :{p.name}")
            value = params[p.name]
        else:
            if isinstance(params, (Mapping, str, bytes)) or not isinstance(params, Sequence):
                raise InvalidArgument("? parameters take a list or tuple of values")
            if len(params) != sum(1 for n in places if n.meta["hibase_param"].name is None):
                raise InvalidArgument(f"the statement has {len(places)} ? parameter(s) but "
                                      f"{len(params)} value(s) were given")
            value = params[p.index]
        value, kind = _typed(value)
        if kind is None:
            node.replace(exp.Null())
            continue
        name = f"hibase_p{len(values)}"
        values[name] = value
        cast = exp.Cast(this=exp.Placeholder(this=name), to=exp.DataType.build(kind))
        cast.meta["hibase_param"] = name
        node.replace(cast)
    return values


def _typed(v: Any) -> tuple[Any, str | None]:
    """A parameter's value and its DuckDB type (None for NULL)."""
    if v is None:
        return None, None
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return v, "BIGINT"
    if isinstance(v, float):
        if math.isnan(v):
            return None, None
        if math.isinf(v):
            raise InvalidArgument("a parameter cannot be infinite")
        return v, "DOUBLE"
    if isinstance(v, str):
        return v, "VARCHAR"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v), "BLOB"
    raise InvalidArgument(f"a parameter must be int, float, str, bytes or None, not "
                          f"{type(v).__name__}")

