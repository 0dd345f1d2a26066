"""Validate and plan one SELECT: the column types it reads with, its WHERE typed and in DNF,
and the access paths (shared by the engine and the aggregate layer above the plan)."""

from __future__ import annotations

import difflib
import functools
import weakref
from typing import Any

from .. import errors
from ..codec import fast_decoder
from .ast import ROWKEY, Between, Column, Compare, In, Select, walk
from .columns import statement_types, usable_specs
from .evaluate import referenced_columns
from .normalize import normalize, typed
from .params import bind
from .plan import IndexLookup, Intersect, Plan, plan_query
from .point import PointTemplate, template_of
from .cast import result_type
from .resolve import declared, resolve_casts

__all__ = ["RANGE_METHODS", "prepare", "prepared", "shape_of", "Shape", "types_of", "check_columns"]

RANGE_METHODS = ("auto", "scan", "walk")


def _check_columns(schema, columns, declared=None, indexer=None) -> None:
    """Every column named is the table's: its family exists, and when the table declares
    columns, it is one of them, a dynamic column of the statement, or a column an index of
    the table names: a misspelt name must fail, never read as an empty column (Phoenix's
    ColumnNotFoundException). Tables that declare nothing take any qualifier (HBase's way)."""
    declared = schema.columns if declared is None else declared
    for col in columns:
        if col in declared or col == ROWKEY:
            continue
        fam, colon, _ = col.partition(b":")
        if fam not in schema.families:
            raise errors.ColumnNotFound(
                f"table {schema.name!r} has no column {col.decode(errors='replace')!r} "
                f"(families: {', '.join(f.decode() for f in schema.families)})")
        if colon and declared and not _indexed(indexer, schema.name, col):
            raise errors.ColumnNotFound(_unknown_column(schema, col, declared))


def check_columns(select: Select, store, indexer) -> None:
    """ColumnNotFound for any column ``select`` names (select list, WHERE, GROUP BY, HAVING,
    ORDER BY, casts) that its table does not have: before any other check of the statement,
    so a misspelt name is reported as such."""
    schema = store.schema(select.table)
    names = [c.name for c in _columns(select)]
    if select.names is not None:  # SQL's select list (see prepare)
        names += [c for c in select.columns or () if b":" in c and not c.startswith(b"CAST(")]
    _check_columns(schema, names, declared(select, schema), indexer)


def _columns(select: Select) -> list:
    out = [n.column for n in walk(select.where) if hasattr(n, "column")]
    for e in list(select.items or ()) + [o.expr for o in select.order_by] + \
            [n.expr for n in walk(select.having) if hasattr(n, "expr")]:
        c = e if isinstance(e, Column) else getattr(e, "column", None)
        if c is not None:
            out.append(c)
    return out + list(select.group_by) + list(select.computed)


def _indexed(indexer, table: str, col: bytes) -> bool:
    """Does an index of the table name the column (indexed or covered)?"""
    if indexer is None:
        return False
    # fresh: another client may have made the index since this one cached the catalog (only
    # a column about to be refused pays the read)
    return any(col in s.columns or col in s.covering for s in indexer.specs(table, fresh=True))


def _unknown_column(schema, col: bytes, declared) -> str:
    """"no column c.nmae in cities; did you mean c.name?" (the closest declared names)."""
    def sql(c: bytes) -> str:
        return Column(c).sql

    names = {sql(c).lower(): sql(c) for c in declared}
    close = difflib.get_close_matches(sql(col).lower(), list(names), n=2, cutoff=0.75)
    hint = (f"; did you mean {' or '.join(names[c] for c in close)}?" if close else
            f"; its columns: {', '.join(sorted(names.values()))}" if len(names) <= 12 else "")
    return (f"no column {sql(col)} in {schema.name}{hint} (a column the table does not "
            "declare: declare it with hibase alter-table, or name it with its type for one "
            "statement: FROM table (family.qualifier TYPE))")


def _normalized(where: Any, types: tuple) -> tuple[Any, list]:
    """The typed condition and its DNF: pure functions of the (immutable) tree and the column
    types, cached so a repeated query skips them. The cache key holds the literals' Python
    types too: trees compare values with ==, so 1, 1.0, True and Decimal(1) would share an
    entry, though a column's typing accepts or converts them differently."""
    return _normalized_typed(where, types, _literal_kinds(where))


@functools.lru_cache(maxsize=4096)
def _normalized_typed(where: Any, types: tuple, kinds: tuple) -> tuple[Any, list]:
    typed_where = typed(where, dict(types))
    return typed_where, normalize(typed_where, dict(types))


def _literal_kinds(where: Any) -> tuple[type, ...]:
    """The types of the condition's literal values, in tree order."""
    out: list[type] = []
    for n in walk(where):
        if isinstance(n, Compare):
            out.append(type(n.value))
        elif isinstance(n, Between):
            out += (type(n.low), type(n.high))
        elif isinstance(n, In):
            out += (type(v) for v in n.values)
    return tuple(out)


def types_of(select: Select, store) -> Any:
    """The column types of ``select``'s result: declared, overridden by the casts that read an
    undeclared column as a type, and each cast of the select list's under its key."""
    schema = store.schema(select.table)
    select = resolve_casts(select, schema)
    types = statement_types(select.casts, declared(select, schema))
    if select.computed:
        types = dict(types)
        for c in select.computed:
            types[c.key] = result_type(c)
    return types


class Shape:
    """What planning learns of a statement before any value is bound: its casts resolved,
    every column it names checked against the table, its column types and the indexes it may
    use. Made once per statement shape (shape_of) and used while the table's schema and index
    definitions are the ones it was made under."""

    __slots__ = ("select", "schema", "specs", "token", "types", "type_items", "known",
                 "usable", "decoders", "hints", "point", "point_tries")

    def __init__(self, select: Select, schema: Any, specs: list, ready: list, token: tuple,
                 indexer) -> None:
        self.select = select = resolve_casts(select, schema)
        self.schema = schema
        self.specs = specs  # held so the ids in token stay theirs while the shape lives
        self.token = token
        self.known = known = declared(select, schema)
        self.types = types = statement_types(select.casts, known)
        self.type_items = tuple(types.items())
        _check_columns(schema, [c for c, _ in select.casts], known, indexer)
        if select.columns is not None and select.names is not None:
            # an SQL select list (Table.where's columns= is happybase's projection, which asks
            # for columns a row may lack, as Table.row does: not checked)
            _check_columns(schema, select.columns, known, indexer)
        elif select.columns is not None:
            _check_columns(schema, select.columns, {}, None)  # families only
        if select.where is not None:  # binding a value changes no column it names
            _check_columns(schema, referenced_columns(select.where), known, indexer)
        self.usable = usable_specs(ready, select.casts, types)
        self.decoders: dict | None = None
        self.hints: dict = {}  # plan_query's: the index chosen per constraint signature
        self.point: PointTemplate | None = None  # query/point.py: its plan with values left out
        self.point_tries = 0  # runs planned in full that tried to make it

    def cell_decoders(self) -> dict:
        """{column: decode(cell bytes)} for the declared (or cast) columns, made once."""
        if self.decoders is None:
            self.decoders = {c: fast_decoder(t)
                             for c, t in self.types.items() if t is not None}
        return self.decoders


_SHAPES: "weakref.WeakKeyDictionary[Any, tuple[dict, dict]]" = weakref.WeakKeyDictionary()
_MAX_SHAPES = 1024
_MAX_IDS = 256  # statement objects known by identity


def shape_of(select: Select, store, indexer) -> Shape:
    """``select``'s Shape, from the cache of its index manager when the table's schema object
    and index definitions (each index's object, state and expiry) are still the ones it was
    made under: a DDL, a new, dropped or rebuilt index, an index build finishing, another
    client's catalog change (picked up by indexer.ready) all make a new one. A statement with
    ``?`` placeholders has one shape for all its values."""
    schema = store.schema(select.table)
    ready = indexer.ready(select.table)  # refreshes a shared catalog, marks expiries
    specs = indexer.specs(select.table)
    token = (id(schema),) + tuple((id(s), s.state, s.expires) for s in specs)
    try:
        cache, by_id = _SHAPES[indexer]
    except KeyError:
        cache, by_id = _SHAPES[indexer] = ({}, {})
    except TypeError:  # pragma: no cover - an index manager that takes no weak reference
        return Shape(select, schema, specs, ready, token, indexer)
    # the same statement object again (db.sql's statement cache hands it out): found by its
    # identity, without hashing its tree; the entry holds it, so its id is not reused
    seen = by_id.get(id(select))
    if seen is not None and seen[0] is select:
        shape = seen[1]
        if shape.token == token and shape.schema is schema:
            return shape
    key = (select, select.names, select.labels)
    shape = cache.get(key)
    if shape is None or shape.token != token or shape.schema is not schema:
        shape = Shape(select, schema, specs, ready, token, indexer)
        if len(cache) >= _MAX_SHAPES:
            cache.clear()
        cache[key] = shape
    if len(by_id) >= _MAX_IDS:  # statements made per call (Table.where's) churn only these
        by_id.clear()
    by_id[id(select)] = (select, shape)
    return shape


def prepare(select: Select, store, indexer, range_method: str = "auto",
            full_scan: bool = False, params: Any = None) -> tuple[Plan, Any]:
    """Validate and plan a query; returns (plan, normalized conjuncts or None). ``params``
    binds the ``?`` / ``:name`` placeholders of ``select`` (planned by its shape, shape_of).

    full_scan=True skips every rowkey and index path: the condition is evaluated over a full
    table scan (the baseline the indexes are measured against; same rows, only slower)."""
    plan, conjuncts, _ = prepared(select, store, indexer, range_method, full_scan, params)
    return plan, conjuncts


_POINT_TRIES = 3  # full plans of a shape that may make its point template (query/point.py)


def prepared(select: Select, store, indexer, range_method: str = "auto",
             full_scan: bool = False, params: Any = None, template: bool = False
             ) -> tuple[Plan, Any, Shape]:
    """prepare(), and the statement's Shape (its types, for reading the rows). template=True
    (for callers that read only the plan's steps, columns, table and limit, not its select's
    WHERE): a lone point lookup is planned once per shape and its values put into the kept
    plan (query/point.py)."""
    if range_method not in RANGE_METHODS:
        raise errors.InvalidArgument(f"range_method must be one of {RANGE_METHODS}")
    shape = shape_of(select, store, indexer)
    point = shape.point
    if point is not None and template and not full_scan and range_method == "auto":
        plan = point.plan(params)
        if plan is not None:
            return plan, [plan.steps[0].conjunct], shape
    unbound = shape.select
    select = bind(unbound, params)
    conjuncts = None
    where = None
    if select.where is not None:
        where, conjuncts = _normalized(select.where, shape.type_items)
    if full_scan:
        plan = Plan(select, [], list(select.columns) if select.columns is not None else None,
                    full_scan=True, where=where, notes=["full scan forced (full_scan=True)"])
        return plan, conjuncts, shape
    plan = plan_query(select, conjuncts, store, shape.types, shape.usable,
                      range_method, where, cached=indexer.cache is not None,
                      router=indexer.router, hints=shape.hints)
    if indexer.cache is not None and indexer.shared:
        plan.notes += cache_notes(plan, indexer)
    if point is None and template and range_method == "auto" \
            and shape.point_tries < _POINT_TRIES:
        shape.point_tries += 1
        shape.point = template_of(unbound, params, conjuncts, plan, shape.types)
    return plan, conjuncts, shape


def cache_notes(plan: Plan, indexer) -> list[str]:
    """EXPLAIN's word on the hot cache of a store other processes write, once per index whose
    point lookups it may answer: how fresh a cached answer is (in a store only this process
    writes, the cache is patched by every write)."""
    out = []
    seen = set()
    for step in plan.steps:
        path = step.path
        for lk in (path.lookups if isinstance(path, Intersect) else [path]):
            if not isinstance(lk, IndexLookup) or lk.spec.local or lk.method == "merge" \
                    or lk.spec.name in seen:
                continue
            seen.add(lk.spec.name)
            name = lk.spec.name
            if indexer.cache_staleness_s > 0:
                out.append(f"hot cache may answer index {name}'s point lookups, trusting the "
                           "table's index write version for up to "
                           f"{indexer.cache_staleness_s * 1000:g} ms (cache_staleness_ms): an "
                           "answer may miss other programs' writes of that long")
            else:
                out.append(f"hot cache may answer index {name}'s point lookups, checked against "
                           "the table's index write version read at the lookup (one get): "
                           "every write acknowledged before the statement is in the answer")
    return out
