"""Names of a statement bound to hibase tables, for the SQL engine (hibase.query.duck).

A statement the lean path does not answer is handed to DuckDB over one view per hibase table
it reads. ``bind`` walks the sqlglot tree scope by scope (each SELECT, with the subqueries and
CTEs it holds) and:

- rewrites each hibase table to its view (``FROM t`` -> ``FROM "t" AS "t"``; ``ns.t`` reads
  HBase's ``ns:t``) and each column reference in Phoenix's spelling to the view's column,
  qualified by the table's alias: ``f.q`` -> ``"t"."f:q"``, ``t.f.q`` (table, family,
  qualifier, as Phoenix writes columns in joins) likewise, a bare name as the lean path resolves
  it (the PRIMARY KEY's name or ROWKEY, a declared qualifier, the default family);
- records per table what the engine needs (``TableUse``): the columns read (all of them for a
  ``*``) and, per reference, the conjuncts of its WHERE (and of an inner join's ON) that touch
  that table alone, spelled for the lean parser (``"f:q" > 3``), to be pushed down into
  hibase's scan (indexes, rowkey ranges, the native scan). Nothing is pushed into a table on
  the NULL-filled side of an outer join, where a filter before the join is not one after it.

A name that is a select-list alias (in ORDER BY, GROUP BY, HAVING) or a column of a subquery
in FROM / a CTE is left to DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from sqlglot import exp

from ..errors import ColumnNotFound, HibaseError, QueryPlanError
from .ast import ROWKEY
from .parse import parse_where
from .resolve import resolve_name

__all__ = ["TableUse", "bind", "ROWKEY_NAME"]

ROWKEY_NAME = "ROWKEY"
"""The rowkey's column name in a view."""


@dataclass
class TableUse:
    """One hibase table a statement reads: ``name`` as written (the view's name), its
    ``schema``, the columns read (``ROWKEY`` for the rowkey), whether a ``*`` reads them all,
    and per reference the lean-spelled conjuncts that may be pushed into its scan."""

    name: str
    schema: Any
    columns: set[bytes] = field(default_factory=set)
    star: bool = False
    filters: list[list[str]] = field(default_factory=list)

    def pushdown(self) -> str | None:
        """The condition hibase's scan applies: a reference's conjuncts ANDed, and with several
        references (a self-join) the OR of theirs; None when some reference reads it all."""
        if not self.filters or not all(self.filters):
            return None
        terms = [" AND ".join(f"({c})" for c in conj) for conj in self.filters]
        return terms[0] if len(terms) == 1 else " OR ".join(f"({t})" for t in terms)


@dataclass
class _Source:
    table: TableUse | None = None         # a hibase table
    ref: int = -1                          # which of table.filters is this reference's
    names: frozenset[str] = frozenset()   # a derived table's (subquery, CTE) output names


_Scope = dict  # alias -> _Source
_CLAUSES = ("expressions", "where", "group", "having", "order", "qualify", "limit", "offset")
_ALIAS_CLAUSES = frozenset(("group", "having", "order"))


def bind(tree: exp.Expression, schema_of: Callable[[str], Any]) -> dict[str, TableUse]:
    """Rewrite ``tree`` in place (see the module docstring); the tables read, by view name."""
    uses: dict[str, TableUse] = {}
    _query(tree, [], {}, uses, schema_of, top=True)
    return uses


def _query(node: Any, outer: list[_Scope], ctes: dict[str, frozenset[str]],
           uses: dict[str, TableUse], schema_of: Callable[[str], Any], top: bool = False
           ) -> list[str]:
    """Bind one query (a SELECT, a set operation or a parenthesized one); its output names.
    In a query other than the statement's own (``top``), a column of the select list is
    named by its qualifier as written (``f.a`` -> ``a``), as an outer query refers to it."""
    if isinstance(node, exp.Subquery):
        return _query(node.this, outer, ctes, uses, schema_of, top)
    if isinstance(node, exp.SetOperation):
        ctes = _ctes(node, outer, ctes, uses, schema_of)
        names = _query(node.left, outer, ctes, uses, schema_of, top)
        _query(node.right, outer, ctes, uses, schema_of, top)
        return names
    if not isinstance(node, exp.Select):
        raise QueryPlanError(f"the SQL engine does not read {node.key.upper()} here")
    ctes = _ctes(node, outer, ctes, uses, schema_of)
    scope: _Scope = {}
    source = node.args.get("from_") or node.args.get("from")
    joins = node.args.get("joins") or []
    items = ([source.this] if source is not None else []) + [j.this for j in joins]
    for item in items:
        _source(item, scope, outer, ctes, uses, schema_of)
    chain = [scope] + outer
    aliases = {e.alias for e in node.expressions if isinstance(e, exp.Alias)}
    if any(isinstance(e, exp.Star) for e in node.expressions):
        for s in scope.values():
            if s.table is not None:
                s.table.star = True
    for key in _CLAUSES:
        for part in _as_list(node.args.get(key)):
            _walk(part, chain, ctes, uses, schema_of, aliases if key in _ALIAS_CLAUSES else ())
    for j in joins:
        if j.args.get("using"):
            raise QueryPlanError("JOIN ... USING is not supported; write JOIN ... ON")
        if j.args.get("on") is not None:
            _walk(j.args["on"], chain, ctes, uses, schema_of, ())
    _pushdown(node, scope, joins)
    if not top:
        for e in list(node.expressions):
            written = e.meta.get("hibase_written") if isinstance(e, exp.Column) else None
            if written is not None:
                e.replace(exp.alias_(e.copy(), written, quoted=True))
    return [e.alias_or_name for e in node.expressions]


def _as_list(v: Any) -> list:
    return v if isinstance(v, list) else [] if v is None else [v]


def _ctes(node: exp.Expression, outer: list[_Scope], ctes: dict[str, frozenset[str]],
          uses: dict[str, TableUse], schema_of: Callable[[str], Any]
          ) -> dict[str, frozenset[str]]:
    with_ = node.args.get("with_") or node.args.get("with")
    if with_ is None:
        return ctes
    ctes = dict(ctes)
    for cte in with_.expressions:
        names = _query(cte.this, outer, ctes, uses, schema_of)
        columns = cte.args.get("alias") and cte.args["alias"].columns
        ctes[cte.alias] = frozenset(c.name for c in columns) if columns else frozenset(names)
    return ctes


def _source(item: exp.Expression, scope: _Scope, outer: list[_Scope],
            ctes: dict[str, frozenset[str]], uses: dict[str, TableUse],
            schema_of: Callable[[str], Any]) -> None:
    """Register one FROM / JOIN item in ``scope`` (a hibase table is rewritten to its view)."""
    if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
        db = item.args.get("db")
        if item.args.get("catalog"):
            raise QueryPlanError(f"bad table name {item.sql()!r}")
        alias = item.alias_or_name
        if db is None and item.name in ctes:
            scope[alias] = _Source(names=ctes[item.name])
            return
        name = f"{db.name}:{item.name}" if db is not None else item.name
        use = uses.get(name)
        if use is None:
            use = uses[name] = TableUse(name, schema_of(name))
        use.filters.append([])
        item.set("db", None)
        item.set("this", exp.to_identifier(name, quoted=True))
        item.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
        scope[alias] = _Source(table=use, ref=len(use.filters) - 1)
        return
    if isinstance(item, exp.Subquery):
        names = _query(item.this, outer, ctes, uses, schema_of)
        columns = item.args.get("alias") and item.args["alias"].columns
        scope[item.alias_or_name] = _Source(
            names=frozenset(c.name for c in columns) if columns else frozenset(names))
        return
    raise QueryPlanError(f"the SQL engine reads tables and subqueries in FROM, not "
                         f"{item.sql()!r}")


def _walk(node: exp.Expression, chain: list[_Scope], ctes: dict[str, frozenset[str]],
          uses: dict[str, TableUse], schema_of: Callable[[str], Any], aliases: Any) -> None:
    """Bind the columns of one clause; a nested query is a scope of its own."""
    if isinstance(node, (exp.Select, exp.SetOperation, exp.Subquery)):
        _query(node, chain, ctes, uses, schema_of)
        return
    if isinstance(node, exp.Column):
        _column(node, chain, aliases)
        return
    for child in list(node.iter_expressions()):
        _walk(child, chain, ctes, uses, schema_of, aliases)


def _column(col: exp.Column, chain: list[_Scope], aliases: Any) -> None:
    """Rewrite one column reference to ``"alias"."f:q"`` (or leave a name that is DuckDB's)."""
    if col.args.get("catalog"):
        raise QueryPlanError(f"bad column reference {col.sql()!r}")
    db, family, name = col.args.get("db"), col.args.get("table"), col.name
    if isinstance(col.this, exp.Star):  # t.* : every column of t
        found = _find_alias(family.name if family is not None else "", chain)
        if found is not None and found.table is not None:
            found.table.star = True
        return
    if db is not None and family is not None:  # table.family.qualifier
        found = _find_alias(db.name, chain)
        if found is None or found.table is None:
            raise ColumnNotFound(f"no table {db.name!r} for column {col.sql()!r}")
        _rewrite(col, db.name, found.table, f"{family.name}:{name}".encode("utf-8"))
        return
    if family is not None:
        _family_or_alias(col, family.name, name, chain)
        return
    if name in aliases:
        return  # a select-list alias (ORDER BY total)
    if ":" in name:  # "f:q" quoted
        fam, _, qual = name.partition(":")
        _family_or_alias(col, fam, qual, chain)
        return
    for scope in chain:
        if any(name in s.names for s in scope.values() if s.table is None):
            return  # a subquery's / CTE's column
        hits = []
        for alias, s in scope.items():
            if s.table is None:
                continue
            if name.upper() == ROWKEY_NAME:
                hits.append((alias, s.table, ROWKEY))
                continue
            try:
                hits.append((alias, s.table, resolve_name(name, s.table.schema)))
            except HibaseError:
                continue
        if len(hits) > 1:
            raise QueryPlanError(f"column {name!r} is ambiguous (tables "
                                 f"{', '.join(h[0] for h in hits)}); qualify it: "
                                 "table.family.qualifier")
        if hits:
            _rewrite(col, *hits[0])
            return
    raise ColumnNotFound(f"no column {name!r} in the tables read")


def _family_or_alias(col: exp.Column, first: str, name: str, chain: list[_Scope]) -> None:
    """``x.y``: family x's column y of the one table in scope with family x (the nearest
    scope first), else column y of the table aliased x."""
    raw_family = first.encode("utf-8")
    full = f"{first}:{name}".encode("utf-8")
    for scope in chain:
        tables = [(a, s.table) for a, s in scope.items() if s.table is not None]
        having = [(a, t) for a, t in tables if raw_family in t.schema.families]
        if len(having) > 1:
            declared = [(a, t) for a, t in having if full in t.schema.columns]
            if len(declared) != 1:
                raise QueryPlanError(
                    f"column {col.sql()!r} is ambiguous (tables "
                    f"{', '.join(a for a, _ in having)} have family {first!r}); write "
                    "table.family.qualifier")
            having = declared
        if having:
            _rewrite(col, having[0][0], having[0][1], full)
            return
        s = scope.get(first)
        if s is not None:
            if s.table is None:
                return  # a subquery's column, qualified
            target = name.encode("utf-8") if ":" in name else (
                ROWKEY if name.upper() == ROWKEY_NAME else resolve_name(name, s.table.schema))
            _rewrite(col, first, s.table, target)
            return
    raise ColumnNotFound(f"no table has family {first!r} (column {col.sql()!r})")


def _find_alias(alias: str, chain: list[_Scope]) -> _Source | None:
    for scope in chain:
        if alias in scope:
            return scope[alias]
    return None


def _rewrite(col: exp.Column, alias: str, use: TableUse, column: bytes) -> None:
    use.columns.add(column)
    name = ROWKEY_NAME if column == ROWKEY else column.decode("utf-8")
    new = exp.column(name, table=alias, quoted=True)
    new.meta["hibase_column"] = (use, column)
    new.meta["hibase_written"] = col.name.rpartition(":")[2]
    col.replace(new)


# -- pushdown ------------------------------------------------------------------------------

def _pushdown(node: exp.Select, scope: _Scope, joins: list[exp.Join]) -> None:
    """Record, for each hibase table of this SELECT, the conjuncts hibase may apply first."""
    tables = {a: s.table for a, s in scope.items() if s.table is not None}
    refs = {a: s.table.filters[s.ref] for a, s in scope.items() if s.table is not None}
    if not tables:
        return
    nullable: set[str] = set()
    source = node.args.get("from_") or node.args.get("from")
    seen = [source.this.alias_or_name] if source is not None else []
    for j in joins:
        side = (j.args.get("side") or "").upper()
        alias = j.this.alias_or_name
        if side in ("LEFT", "FULL"):
            nullable.add(alias)
        if side in ("RIGHT", "FULL"):
            nullable.update(seen)
        seen.append(alias)
    conjuncts: list[tuple[exp.Expression, set[str]]] = []
    where = node.args.get("where")
    if where is not None:
        conjuncts += [(c, set(tables) - nullable) for c in _and(where.this)]
    for j in joins:
        on = j.args.get("on")
        side = (j.args.get("side") or "").upper()
        if on is None or side in ("RIGHT", "FULL") or (j.args.get("kind") or "").upper() in (
                "SEMI", "ANTI"):
            continue
        alias = j.this.alias_or_name
        if side == "LEFT":  # ON filters the joined table's rows before the join
            conjuncts += [(c, {alias}) for c in _and(on)]
        else:
            conjuncts += [(c, set(tables) - nullable) for c in _and(on)]
    for cond, allowed in conjuncts:
        alias = _single_alias(cond, tables)
        if alias is None or alias not in allowed:
            continue
        text = _lean_text(cond)
        if text is not None:
            refs[alias].append(text)


def _and(node: exp.Expression) -> list[exp.Expression]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _and(node.this) + _and(node.expression)
    return [node]


def _single_alias(cond: exp.Expression, tables: dict[str, TableUse]) -> str | None:
    """The one table alias of this scope the condition reads, None if it reads several, none,
    an outer table or holds a subquery."""
    if cond.find(exp.Query):
        return None
    found = set()
    for c in cond.find_all(exp.Column):
        bound = c.meta.get("hibase_column")
        if bound is None or c.table not in tables or tables[c.table] is not bound[0]:
            return None
        found.add(c.table)
    return found.pop() if len(found) == 1 else None


def _lean_text(cond: exp.Expression) -> str | None:
    """The condition spelled for the lean parser (``"f:q" > 3``, ``ROWKEY = 'k'``), or None
    when the lean path cannot answer it."""
    copy = cond.copy()
    for cast in list(copy.find_all(exp.Cast)):  # a parameter (duck._bind_params)
        if isinstance(cast.this, exp.Placeholder) and cast.this.name.startswith("hibase_p"):
            cast.replace(exp.Placeholder(this=cast.this.name))
    for c in list(copy.find_all(exp.Column)):
        lean = exp.column(c.name, quoted=c.name != ROWKEY_NAME)
        if c is copy:  # a BOOLEAN column alone: replace() cannot swap the root
            copy = lean
        else:
            c.replace(lean)
    text = copy.sql()
    try:
        parse_where(text)
    except HibaseError:
        return None
    return text
