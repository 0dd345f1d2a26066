"""SQL statements besides SELECT, in Phoenix's spelling, parsed into small frozen dataclasses.

    CREATE TABLE [IF NOT EXISTS] t (k VARCHAR PRIMARY KEY, f.a INTEGER, b VARCHAR, ...)
        [VERSIONS=3, TTL=86400, COMPRESSION='GZ', BLOOMFILTER='ROW', IN_MEMORY=true, f.VERSIONS=1]
    DROP TABLE [IF EXISTS] t
    CREATE [LOCAL] INDEX [IF NOT EXISTS] n ON t (f.a, ...) [INCLUDE (f.b, ...)] [ASYNC]
        [CONSISTENCY = EVENTUAL | STRONG]
    CREATE TEXT INDEX [IF NOT EXISTS] n ON t (f.body) [ASYNC]   (a full-text index: CONTAINS)
    DROP INDEX [IF EXISTS] n ON t
    ALTER INDEX [IF EXISTS] n ON t REBUILD
    UPSERT INTO t [(k, f.a, ...)] VALUES (v, ...)[, (v, ...)...]
    UPSERT INTO t [(k, f.a, ...)] SELECT ...
    INSERT INTO t [(k, f.a, ...)] VALUES (...) / SELECT ...   (an existing rowkey is refused)
    UPDATE t SET f.a = expr [, ...] [WHERE ...] [LIMIT n]
    DELETE FROM t [WHERE ...] [LIMIT n]
    EXPLAIN DELETE ... / EXPLAIN UPSERT (or INSERT) ... SELECT ... / EXPLAIN UPDATE ...
    SHOW TABLES
    DESCRIBE t  (or DESC t)

(TRUNCATE is refused with what to write instead: DELETE FROM t.)

SELECT (and the SELECT inside UPSERT SELECT and the WHERE of DELETE) is parsed by
``parse.parse_select``; the rest by a small tokenizer and recursive descent here (sqlglot
knows neither UPSERT nor Phoenix's table options). Errors are QuerySyntaxError with the
0-based position of the problem, as for SELECT. Nothing here reads a schema: column names
stay as written (``f.a`` -> ``b"f:a"``, a bare ``a`` -> ``b"a"``, resolved at execution).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Union

from ..codec import (
    MAX_LENGTH, ColumnType, parse_date, parse_time, parse_timestamp, parse_type, type_from_name,
)
from ..errors import NeedsEngine, QueryError, QueryPlanError, QuerySyntaxError, SchemaError
from .ast import ROWKEY, Param, Select
from .parse import check_size, parse_select

__all__ = ["CreateTable", "DropTable", "CreateIndex", "DropIndex", "AlterIndex", "Upsert",
           "Delete", "Update", "ShowTables", "Describe", "Statement", "parse_statement",
           "ColumnDef", "first_word", "is_select"]


@dataclass(frozen=True)
class ColumnDef:
    """A column of CREATE TABLE: its name as written (``b"f:a"`` or a bare ``b"a"``) and type."""

    name: bytes
    type: ColumnType
    position: int | None = None


@dataclass(frozen=True)
class CreateTable:
    table: str
    rowkey: str | None  # the PRIMARY KEY column's name (None: no PRIMARY KEY)
    rowkey_type: ColumnType | None
    columns: tuple[ColumnDef, ...]
    options: tuple[tuple[str, Any], ...] = ()  # (NAME or family.NAME, value)
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropTable:
    table: str
    if_exists: bool = False


@dataclass(frozen=True)
class CreateIndex:
    name: str
    table: str
    columns: tuple[bytes, ...]
    include: tuple[bytes, ...] = ()
    local: bool = False
    if_not_exists: bool = False
    async_: bool = False  # ASYNC: created "building", built by ALTER INDEX ... REBUILD
    consistency: str = "strong"  # CONSISTENCY = EVENTUAL (Phoenix 5.3's index property)
    uncovered: bool = False  # CREATE UNCOVERED INDEX (Phoenix 5.2): entries carry no values
    where: str | None = None  # ... WHERE cond: a partial index (issue 43), the text as written
    kind: str = ""  # CREATE TEXT INDEX: "text" (a full-text index, index/text.py)


@dataclass(frozen=True)
class DropIndex:
    name: str
    table: str
    if_exists: bool = False


@dataclass(frozen=True)
class AlterIndex:
    name: str
    table: str
    if_exists: bool = False  # the one action is REBUILD


@dataclass(frozen=True)
class Upsert:
    """``UPSERT INTO t (cols) VALUES (...), ...`` (``rows``) or ``... SELECT`` (``select``).
    ``columns`` None: the table's columns in order (its rowkey first)."""

    table: str
    columns: tuple[bytes, ...] | None
    rows: tuple[tuple[Any, ...], ...] = ()  # literals, None (NULL) and Params
    select: Select | None = None
    explain: bool = False
    query: str | None = None
    """The SELECT's text when the lean path refuses it (errors.NeedsEngine, ``refusal``
    its message): it runs on the SQL engine (hibase.query.duck)."""
    refusal: str = ""
    insert: bool = False
    """INSERT rather than UPSERT: a row whose rowkey exists already (or comes twice) is
    refused with errors.RowExists and nothing is written."""

    @property
    def param_count(self) -> int:
        return sum(isinstance(v, Param) for r in self.rows for v in r)

    @property
    def verb(self) -> str:
        return "INSERT" if self.insert else "UPSERT"


@dataclass(frozen=True)
class Delete:
    """``DELETE FROM t [WHERE ...]``: ``select`` finds the rows (its planner, its indexes)."""

    table: str
    select: Select | None
    explain: bool = False
    query: str | None = None
    """``SELECT ROWKEY FROM t WHERE ...`` when the lean path refuses the condition
    (``refusal`` its message): the rows are found by the SQL engine (hibase.query.duck)."""
    refusal: str = ""


@dataclass(frozen=True)
class Update:
    """``UPDATE t SET c = expr, ... [WHERE ...] [LIMIT n]``: the rows are found by a SELECT
    through the normal query path (its planner and indexes; the SQL engine when the lean path
    refuses it), and the new values written through the one write path (indexes kept).

    ``columns`` are the SET targets as written. When every new value is a literal or a
    parameter, ``values`` holds them and the SELECT is ``SELECT ROWKEY FROM t WHERE ...``
    (``select``, or ``query`` for the engine); otherwise ``values`` is None and the SELECT is
    ``SELECT ROWKEY, expr, ... FROM t WHERE ...``, so the engine computes the values."""

    table: str
    columns: tuple[bytes, ...]
    values: tuple[Any, ...] | None
    select: Select | None
    explain: bool = False
    query: str | None = None
    refusal: str = ""
    where_params: tuple[str, ...] = ()
    """With ``values``: the :names the WHERE uses (a named parameter only the SET uses is not
    passed on to the SELECT, which refuses unknown names)."""


@dataclass(frozen=True)
class ShowTables:
    """``SHOW TABLES``: the tables, one row each."""


@dataclass(frozen=True)
class Describe:
    """``DESCRIBE t`` / ``DESC t``: the table's rowkey and columns, one row each."""

    table: str


Statement = Union[Select, CreateTable, DropTable, CreateIndex, DropIndex, AlterIndex, Upsert,
                  Delete, Update, ShowTables, Describe]

# -- tokens ------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<hex>[xX]'[^']*')
  | (?P<str>'(?:[^']|'')*')
  | (?P<qid>"(?:[^"]|"")*")
  | (?P<bq>`(?:[^`]|``)*`)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<id>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<param>\?|:[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>[<>!=|]+|[^\s'"`])
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class _Tok:
    kind: str  # id (unquoted), qid (quoted identifier), str, hex, num, param, op, end
    text: str
    pos: int

    @property
    def word(self) -> str:
        return self.text.upper() if self.kind == "id" else ""


def _tokens(sql: str, start: int = 0) -> list[_Tok]:
    out: list[_Tok] = []
    pos = start
    while pos < len(sql):
        m = _TOKEN.match(sql, pos)
        if m is None:
            if sql[pos] in "'\"`":
                raise QuerySyntaxError("unterminated quoted string", pos)
            raise QuerySyntaxError(f"unexpected {sql[pos]!r}", pos)
        kind = m.lastgroup
        assert kind is not None  # every alternative of _TOKEN is a named group
        if kind != "ws":
            text = m.group()
            if kind in ("qid", "bq"):
                text, kind = text[1:-1].replace(text[0] * 2, text[0]), "qid"
            elif kind == "str":
                text = text[1:-1].replace("''", "'")
            elif kind == "hex":
                text = text[2:-1]
            out.append(_Tok(kind, text, m.start()))
        pos = m.end()
    out.append(_Tok("end", "", len(sql)))
    return out


class _Parser:
    def __init__(self, sql: str, start: int = 0):
        self.sql = sql
        self.toks = _tokens(sql, start)
        self.i = 0
        self.params = 0
        self.named = False

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        if t.kind != "end":
            self.i += 1
        return t

    def fail(self, message: str, tok: _Tok | None = None) -> QuerySyntaxError:
        tok = tok or self.tok
        return QuerySyntaxError(message, tok.pos)

    def unexpected(self, wanted: str) -> QuerySyntaxError:
        t = self.tok
        got = "the end of the statement" if t.kind == "end" else repr(
            self.sql[t.pos:t.pos + max(1, len(t.text))] if t.kind == "id" else t.text)
        return self.fail(f"expected {wanted}, got {got}")

    def accept(self, *words: str) -> bool:
        """Consume the keywords ``words`` if they come next (all or none)."""
        for k, w in enumerate(words):
            t = self.toks[min(self.i + k, len(self.toks) - 1)]
            if t.word != w:
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> None:
        for w in words:
            if not self.accept(w):
                raise self.unexpected(w)

    def op(self, c: str) -> bool:
        if self.tok.kind == "op" and self.tok.text == c:
            self.i += 1
            return True
        return False

    def expect_op(self, c: str) -> None:
        if not self.op(c):
            raise self.unexpected(repr(c))

    def ident(self, what: str) -> str:
        t = self.tok
        if t.kind in ("id", "qid") and t.text:
            self.i += 1
            return t.text
        raise self.unexpected(what)

    def table(self) -> str:
        name = self.ident("a table name")
        if self.op("."):
            name = f"{name}:{self.ident('a table name')}"  # ns.table -> HBase "ns:table"
        return name

    def column(self) -> tuple[bytes, int]:
        """``f.q``, ``"f:q"``, ``"f.q"`` (one quoted identifier, as SQLAlchemy writes a
        name with a dot), ``ROWKEY`` or a bare name (resolved later)."""
        pos = self.tok.pos
        quoted = self.tok.kind == "qid"
        first = self.ident("a column name")
        if quoted and "." in first and ":" not in first:
            family, _, qualifier = first.partition(".")
            if family and qualifier:
                return f"{family}:{qualifier}".encode("utf-8"), pos
        if self.op("."):
            return f"{first}:{self.ident('a qualifier')}".encode("utf-8"), pos
        if first.upper() == "ROWKEY" and self.toks[self.i - 1].kind == "id":
            return ROWKEY, pos
        return first.encode("utf-8"), pos

    def column_list(self) -> tuple[bytes, ...]:
        self.expect_op("(")
        cols = [self.column()[0]]
        while self.op(","):
            cols.append(self.column()[0])
        self.expect_op(")")
        return tuple(cols)

    def end(self) -> None:
        self.op(";")
        if self.tok.kind != "end":
            raise self.unexpected("the end of the statement")

    # -- values ------------------------------------------------------------------------------
    def value(self) -> Any:
        t = self.tok
        if t.kind == "param":
            self.i += 1
            if t.text == "?":
                if self.named:
                    raise QueryPlanError("use either ? or :name parameters in one statement, "
                                         "not both")
                p = Param(index=self.params)
                self.params += 1
                return p
            if self.params:
                raise QueryPlanError("use either ? or :name parameters in one statement, not "
                                     "both")
            self.named = True
            return Param(name=t.text[1:])
        if t.kind == "str":
            self.i += 1
            return t.text
        if t.kind == "hex":
            self.i += 1
            if len(t.text) % 2 or any(c not in "0123456789abcdefABCDEF" for c in t.text):
                raise self.fail(f"X'{t.text}' needs an even number of hex digits", t)
            return bytes.fromhex(t.text)
        negative = False
        if t.kind == "op" and t.text == "-":
            self.i += 1
            negative = True
            t = self.tok
        if t.kind == "num":
            self.i += 1
            try:
                v: Any = int(t.text)
            except ValueError:
                v = float(t.text)
                if math.isinf(v):  # SQL has no infinity: 1e400 is out of range, not inf
                    raise self.fail(f"number {'-' if negative else ''}{t.text} is out of "
                                    "DOUBLE range (about 1.8e308)", t) from None
            return -v if negative else v
        if negative:
            raise self.unexpected("a number")
        if t.word == "NULL":
            self.i += 1
            return None
        if t.word in ("TRUE", "FALSE"):  # a bool: 1 / 0 for a number column (sql._cell)
            self.i += 1
            return t.word == "TRUE"
        if t.word in _TYPED and self.toks[self.i + 1].kind == "str":  # DATE '2024-01-02'
            s = self.toks[self.i + 1]
            self.i += 2
            try:
                return _TYPED[t.word](s.text)
            except ValueError as e:
                raise self.fail(str(e), s) from None
        if t.kind == "op" and t.text == "(" and self.toks[self.i + 1].word == "SELECT":
            raise self.fail("a subquery is not supported in VALUES (they take literals): "
                            "write UPSERT INTO t (cols) SELECT ... to write a query's rows")
        raise self.unexpected("a literal value (number, 'string', X'hex', NULL, ?, :name)")


_TYPED = {"DATE": parse_date, "TIME": parse_time, "TIMESTAMP": parse_timestamp}
"""Typed literals of VALUES: the keyword and how its string reads."""


# -- statements --------------------------------------------------------------------------------

_OPTIONS = {"VERSIONS": "max_versions", "TTL": "time_to_live", "COMPRESSION": "compression",
            "BLOOMFILTER": "bloom_filter_type", "IN_MEMORY": "in_memory",
            "BLOCKCACHE": "block_cache_enabled", "SPLIT_SIZE": "split_size",
            "SALT_BUCKETS": "salt_buckets"}
"""CREATE TABLE options (Phoenix passes HBase's column-family properties through) and the
create_table argument each sets; SPLIT_SIZE (bytes) is hibase's; SALT_BUCKETS (1 to 256) is
Phoenix's salted table."""


def _type(p: _Parser) -> ColumnType:
    t = p.tok
    name = p.ident("a type name")
    if t.kind != "id":
        raise p.fail(f"expected a type name, got {name!r}", t)
    if name.upper() in ("UNSIGNED_INT", "UNSIGNED_LONG"):
        raise p.fail(f"type {name.upper()} is not supported (types: {_TYPES})", t)
    if name.upper() == "DOUBLE" and p.accept("PRECISION"):
        pass
    if name.upper() in ("DECIMAL", "NUMERIC") and p.op("("):  # DECIMAL(p[, s])
        nums = []
        while True:
            n = p.tok
            if n.kind != "num" or not n.text.isdigit():
                raise p.unexpected(f"the precision and scale of {name.upper()}(p, s)")
            p.next()
            nums.append(int(n.text))
            if p.op(")"):
                break
            if len(nums) == 2 or not p.op(","):
                raise p.unexpected("')'")
        try:
            return parse_type(f"decimal({','.join(map(str, nums))})")
        except SchemaError as e:
            raise p.fail(str(e), n) from None
    if name.upper() in ("CHAR", "VARCHAR") and p.op("("):  # a length kept (ColumnType.length)
        n = p.tok
        if n.kind != "num" or not n.text.isdigit():
            raise p.unexpected(f"the length of {name.upper()}(n)")
        p.next()
        p.expect_op(")")
        if not 1 <= int(n.text) <= MAX_LENGTH:
            raise p.fail(f"{name.upper()}({n.text}): the length must be 1..{MAX_LENGTH}", n)
        return parse_type(f"{'char' if name.upper() == 'CHAR' else 'string'}({n.text})")
    if p.op("("):  # VARBINARY(20), BINARY(8): a length hibase does not keep
        while not p.op(")"):
            if p.tok.kind == "end":
                raise p.unexpected("')'")
            p.next()
    try:
        return type_from_name(name)
    except SchemaError:
        raise p.fail(f"unknown type {name!r} (types: {_TYPES})", t) from None


_TYPES = ("TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), BOOLEAN, DATE, "
          "TIME, TIMESTAMP, CHAR, VARCHAR, VARBINARY")


def _create_table(p: _Parser) -> CreateTable:
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    table = p.table()
    p.expect_op("(")
    cols: list[ColumnDef] = []
    rowkey: tuple[bytes, ColumnType, int] | None = None
    constraint_pk: tuple[bytes, int] | None = None
    while True:
        if p.tok.word in ("CONSTRAINT", "PRIMARY") and (
                p.tok.word == "CONSTRAINT" or p.toks[p.i + 1].word == "KEY"):
            if p.accept("CONSTRAINT"):
                p.ident("a constraint name")
            p.expect("PRIMARY", "KEY")
            p.expect_op("(")
            constraint_pk = p.column()
            if p.tok.word in ("ASC", "DESC"):
                p.next()
            if p.tok.kind == "op" and p.tok.text == ",":
                raise p.fail("a composite PRIMARY KEY is not supported: the rowkey is one "
                             "column")
            p.expect_op(")")
        else:
            name, pos = p.column()
            ctype = _type(p)
            is_pk = False
            while True:
                if p.accept("NOT", "NULL") or p.accept("NULL"):
                    continue
                if p.accept("PRIMARY", "KEY"):
                    is_pk = True
                    if p.tok.word in ("ASC", "DESC"):
                        p.next()
                    continue
                break
            if is_pk:
                if rowkey is not None:
                    raise QuerySyntaxError("only one PRIMARY KEY column: the rowkey is one "
                                           "column", pos)
                rowkey = (name, ctype, pos)
            else:
                cols.append(ColumnDef(name, ctype, pos))
        if p.op(")"):
            break
        if not p.op(","):
            raise p.unexpected("',' or ')'")
    if constraint_pk is not None:
        if rowkey is not None:
            raise QuerySyntaxError("PRIMARY KEY given twice", constraint_pk[1])
        found = [c for c in cols if c.name == constraint_pk[0]]
        if not found:
            raise QuerySyntaxError(f"PRIMARY KEY column {constraint_pk[0].decode()!r} is not "
                                   "defined", constraint_pk[1])
        cols.remove(found[0])
        rowkey = (found[0].name, found[0].type, found[0].position or 0)
    options: list[tuple[str, Any]] = []
    while p.tok.kind != "end" and not (p.tok.kind == "op" and p.tok.text == ";"):
        start = p.tok
        key = p.ident("a table option (VERSIONS=3, TTL=86400, ...)")
        if p.op("."):
            family, key = key, p.ident("an option name")
        else:
            family = None
        if key.upper() not in _OPTIONS:
            raise p.fail(f"unknown table option {key!r} (known: {', '.join(_OPTIONS)})", start)
        p.expect_op("=")
        t = p.tok
        if t.kind == "id" and t.word in ("TRUE", "FALSE"):
            p.next()
            value: Any = t.word == "TRUE"
        elif t.kind == "id" and t.word in ("NONE", "ROW", "ROWCOL", "GZ", "SNAPPY", "LZ4",
                                            "ZSTD", "BZIP2", "FOREVER"):
            p.next()
            value = t.word
        else:
            value = p.value()
            if isinstance(value, Param) or value is None:
                raise p.fail(f"option {key.upper()} needs a literal value", t)
        options.append((f"{family}.{key.upper()}" if family else key.upper(), value))
        p.op(",")
    p.end()
    if rowkey is not None:
        name, rtype, pos = rowkey
        if b":" in name:
            raise QuerySyntaxError("the PRIMARY KEY column is the rowkey: name it without a "
                                   "family", pos)
        if rtype.name not in ("string", "bytes", "char"):
            raise QuerySyntaxError(
                f"the rowkey is stored as text or bytes: declare the PRIMARY KEY VARCHAR or "
                f"VARBINARY (it is {rtype})", pos)
        rowkey_name: str | None = name.decode("utf-8")
        rowkey_type: ColumnType | None = ColumnType("bytes" if rtype.name == "bytes"
                                                    else "string")
    else:
        rowkey_name, rowkey_type = None, None
    seen: set[bytes] = set()
    for c in cols:
        if c.name in seen or c.name == ROWKEY:
            raise QuerySyntaxError(f"column {c.name.decode()!r} defined twice", c.position)
        seen.add(c.name)
    return CreateTable(table, rowkey_name, rowkey_type, tuple(cols), tuple(options),
                       if_not_exists)


def _create_index(p: _Parser, local: bool, uncovered: bool = False, kind: str = ""
                  ) -> CreateIndex:
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    name = p.ident("an index name")
    p.expect("ON")
    table = p.table()
    p.expect_op("(")
    cols = []
    while True:
        cols.append(p.column()[0])
        if p.tok.word in ("ASC", "DESC"):
            p.next()
        if p.op(")"):
            break
        if not p.op(","):
            raise p.unexpected("',' or ')'")
    include: tuple[bytes, ...] = ()
    if p.accept("INCLUDE"):
        if uncovered:
            raise p.fail("an UNCOVERED INDEX includes no columns: its entries carry no values",
                         p.tok)
        include = p.column_list()
    async_ = p.accept("ASYNC")
    consistency = "strong"
    if p.accept("CONSISTENCY"):
        p.expect_op("=")
        if p.tok.word not in ("EVENTUAL", "STRONG"):
            raise p.unexpected("EVENTUAL or STRONG")
        consistency = p.tok.word.lower()
        p.next()
    where = None
    if p.tok.word == "WHERE":  # a partial index: the rest of the statement is its condition
        p.next()
        if p.tok.kind == "end":
            raise p.unexpected("a condition")
        where = p.sql[p.tok.pos:].strip().rstrip(";").strip()
        while p.tok.kind != "end":
            p.next()
    p.end()
    return CreateIndex(name, table, tuple(cols), include, local, if_not_exists, async_,
                       consistency, uncovered, where, kind)


def _select_at(sql: str, start: int) -> Select:
    """parse_select of ``sql[start:]``, its error positions made positions in ``sql``."""
    try:
        return parse_select(sql[start:])
    except QueryError as e:
        raise _shifted(e, start) from None


_AT = re.compile(r"\(at position (\d+)\)")


def _shifted(e: QueryError, delta: int) -> QueryError:
    if isinstance(e, QuerySyntaxError):
        message = _AT.sub("", str(e)).rstrip()
        return QuerySyntaxError(message, None if e.position is None else e.position + delta)
    return type(e)(_AT.sub(lambda m: f"(at position {int(m.group(1)) + delta})", str(e)))


def _upsert(p: _Parser, explain: bool, insert: bool = False) -> Upsert:
    p.expect("INTO")
    table = p.table()
    columns = None
    if p.tok.kind == "op" and p.tok.text == "(":
        columns = p.column_list()
    if p.tok.word == "SELECT":
        try:
            select = _select_at(p.sql, p.tok.pos)
        except NeedsEngine as refusal:
            return Upsert(table, columns, (), None, explain, p.sql[p.tok.pos:], str(refusal),
                          insert)
        if columns is not None and select.names is not None and \
                len(select.names) != len(columns):
            raise QuerySyntaxError(f"{len(columns)} columns but the SELECT returns "
                                   f"{len(select.names)}", p.tok.pos)
        if columns is not None and select.items is not None and \
                len(select.items) != len(columns):
            raise QuerySyntaxError(f"{len(columns)} columns but the SELECT returns "
                                   f"{len(select.items)}", p.tok.pos)
        return Upsert(table, columns, (), select.with_(explain=False), explain, insert=insert)
    verb = "INSERT" if insert else "UPSERT"
    if explain:
        raise p.fail(f"EXPLAIN {verb} takes {verb} ... SELECT (VALUES has no plan)")
    p.expect("VALUES")
    rows: list[tuple[Any, ...]] = []
    while True:
        start = p.tok
        p.expect_op("(")
        row = [p.value()]
        while p.op(","):
            row.append(p.value())
        p.expect_op(")")
        if columns is not None and len(row) != len(columns):
            raise p.fail(f"{len(row)} values for {len(columns)} columns", start)
        if rows and len(row) != len(rows[0]):
            raise p.fail(f"{len(row)} values; the first row has {len(rows[0])}", start)
        rows.append(tuple(row))
        if not p.op(","):
            break
    p.end()
    return Upsert(table, columns, tuple(rows), None, explain, insert=insert)


class _Spliced:
    """A statement's text made of pieces, some copied from the original (their offset there):
    a position in the made text maps back to one in the original, for error messages."""

    def __init__(self) -> None:
        self.text = ""
        self.pieces: list[tuple[int, int | None]] = []  # (start here, start in the original)

    def add(self, text: str, original: int | None = None) -> "_Spliced":
        self.pieces.append((len(self.text), original))
        self.text += text
        return self

    def position(self, pos: int) -> int:
        """``pos`` in the original; in a made-up piece, the end of the copied one before."""
        ends = [start for start, _ in self.pieces[1:]] + [len(self.text)]
        found = 0
        for (start, original), end in zip(self.pieces, ends):
            if original is not None and start <= pos:
                found = original + min(pos, end) - start
        return found

    def shifted(self, e: QueryError) -> QueryError:
        if isinstance(e, QuerySyntaxError):
            message = _AT.sub("", str(e)).rstrip()
            return QuerySyntaxError(message, None if e.position is None
                                    else self.position(e.position))
        return type(e)(_AT.sub(lambda m: f"(at position {self.position(int(m.group(1)))})",
                               str(e)))


_SET_END = ("WHERE", "LIMIT")


def _update(p: _Parser, explain: bool) -> Update:
    table_at = p.tok.pos
    table = p.table()
    table_end = p.tok.pos
    p.expect("SET")
    columns: list[bytes] = []
    texts: list[tuple[int, str]] = []  # each new value's text and its position
    values: list[Any] | None = []
    while True:
        column, pos = p.column()
        if column == ROWKEY:
            raise QuerySyntaxError("UPDATE cannot change the rowkey: DELETE the row and INSERT "
                                   "it under the new one", pos)
        if column in columns:
            raise QuerySyntaxError(f"column {column.decode(errors='replace')!r} is SET twice",
                                   pos)
        columns.append(column)
        p.expect_op("=")
        start = p.tok
        if start.kind == "end" or start.word in _SET_END or (
                start.kind == "op" and start.text in (",", ";")):
            raise p.unexpected("a value")
        if values is not None:  # a literal or parameter, if that is all the value is
            mark = (p.i, p.params, p.named)
            try:
                v = p.value()
                if p.tok.kind == "end" or p.tok.word in _SET_END or (
                        p.tok.kind == "op" and p.tok.text in (",", ";")):
                    values.append(v)
                else:
                    values = None
            except QuerySyntaxError:
                values = None
            if values is None:
                p.i, p.params, p.named = mark
        depth = 0  # the value's text: up to a ',', WHERE or LIMIT outside parentheses
        while True:
            t = p.tok
            if t.kind == "end" or (depth == 0 and (
                    t.word in _SET_END or (t.kind == "op" and t.text in (",", ";")))):
                break
            if t.kind == "op" and t.text == "(":
                depth += 1
            elif t.kind == "op" and t.text == ")":
                depth -= 1
                if depth < 0:
                    raise p.unexpected("a value")
            p.next()
        texts.append((start.pos, p.sql[start.pos:p.tok.pos].rstrip()))
        if not p.op(","):
            break
    rest = p.tok.pos
    if not (p.tok.kind == "end" or p.tok.word in _SET_END or p.tok.text == ";"):
        raise p.unexpected("',', WHERE or the end of the statement")
    named = [t.text[1:] for t in p.toks if t.kind == "param" and t.pos >= rest and t.text != "?"]
    if values is not None:
        mixed = [t for t in p.toks if t.kind == "param" and t.pos >= rest
                 and (t.text == "?") == p.named]
        if mixed:
            raise QueryPlanError("use either ? or :name parameters in one statement, not both "
                                 f"(at position {mixed[0].pos})")
    text = _Spliced().add("SELECT ")
    text.add("ROWKEY")
    if values is None:
        for pos, value in texts:
            text.add(", ").add(value, pos)
    text.add(" FROM ").add(p.sql[table_at:table_end], table_at).add(" ").add(p.sql[rest:], rest)
    try:
        select = parse_select(text.text)
    except NeedsEngine as refusal:
        return Update(table, tuple(columns), None if values is None else tuple(values), None,
                      explain, text.text, str(refusal), tuple(named))
    except QueryError as e:
        raise text.shifted(e) from None
    if select.aggregate or select.order_by or select.offset is not None:
        raise QueryPlanError("UPDATE takes t SET column = value, ... [WHERE condition] "
                             "[LIMIT n], the values of the row's own columns")
    return Update(table, tuple(columns), None if values is None else tuple(values), select,
                  explain, where_params=tuple(named))


def _delete(p: _Parser, explain: bool) -> Delete:
    p.expect("FROM")
    start = p.tok.pos
    table = p.table()
    # the rows are found by the SELECT planner: "SELECT ROWKEY FROM t WHERE ..." with the
    # positions of the DELETE's text
    head = "SELECT ROWKEY FROM "
    try:
        select = parse_select(head + p.sql[start:])
    except NeedsEngine as refusal:
        return Delete(table, None, explain, head + p.sql[start:], str(refusal))
    except QueryError as e:
        raise _shifted(e, start - len(head)) from None
    if select.aggregate or select.order_by or select.offset is not None:
        raise QueryPlanError("DELETE takes FROM table [WHERE condition] [LIMIT n]")
    return Delete(table, select, explain)


_EXPLAIN = re.compile(r"\s*EXPLAIN\s+", re.IGNORECASE)
_FIRST = re.compile(r"\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*([A-Za-z]+)", re.DOTALL)


def first_word(sql: str) -> str:
    """The statement's first keyword, upper-cased, after comments and any EXPLAIN ("" if
    none): SELECT, UPSERT, SHOW..."""
    m = _EXPLAIN.match(sql)
    m2 = _FIRST.match(sql, m.end() if m else 0)
    return "" if m2 is None else m2.group(1).upper()


def is_select(sql: str) -> bool:
    """Is ``sql`` a (possibly EXPLAIN) SELECT, for parse.parse_select?"""
    return first_word(sql) not in (
        "CREATE", "DROP", "ALTER", "UPSERT", "DELETE", "INSERT", "UPDATE", "SHOW", "DESCRIBE",
        "DESC", "TRUNCATE")


@functools.lru_cache(maxsize=1024)
def _parse(sql: str) -> "Statement | NeedsEngine":
    if is_select(sql):
        try:
            return parse_select(sql)
        except NeedsEngine as refusal:  # kept with the text: the next call raises it at once
            return refusal
    m = _EXPLAIN.match(sql)
    explain = m is not None
    p = _Parser(sql, m.end() if m else 0)
    first = p.tok
    word = first.word
    p.next()
    if explain and word not in ("UPSERT", "INSERT", "DELETE", "UPDATE"):
        raise p.fail("EXPLAIN takes SELECT, UPSERT / INSERT ... SELECT, UPDATE or DELETE",
                     first)
    if word == "CREATE":
        if p.accept("TABLE"):
            return _create_table(p)
        if p.accept("TEXT", "INDEX"):  # a full-text index (CONTAINS)
            return _create_index(p, False, kind="text")
        local = p.accept("LOCAL")
        uncovered = not local and p.accept("UNCOVERED")
        if p.accept("INDEX"):
            return _create_index(p, local, uncovered)
        raise p.unexpected("TABLE, INDEX, LOCAL INDEX, UNCOVERED INDEX or TEXT INDEX")
    if word == "DROP":
        if p.accept("TABLE"):
            if_exists = p.accept("IF", "EXISTS")
            table = p.table()
            p.end()
            return DropTable(table, if_exists)
        if p.accept("INDEX"):
            if_exists = p.accept("IF", "EXISTS")
            name = p.ident("an index name")
            p.expect("ON")
            table = p.table()
            p.end()
            return DropIndex(name, table, if_exists)
        raise p.unexpected("TABLE or INDEX")
    if word == "ALTER":
        if p.accept("INDEX"):
            if_exists = p.accept("IF", "EXISTS")
            name = p.ident("an index name")
            p.expect("ON")
            table = p.table()
            p.expect("REBUILD")
            p.end()
            return AlterIndex(name, table, if_exists)
        if p.tok.word == "TABLE":
            raise QueryPlanError(f"ALTER TABLE is not supported (at position {p.tok.pos}); "
                                 "families are fixed at creation (db.declare_columns "
                                 "declares column types)")
        raise p.unexpected("INDEX")
    if word == "SHOW":
        if p.accept("TABLES"):
            p.end()
            return ShowTables()
        raise p.unexpected("TABLES (SHOW TABLES lists the tables)")
    if word in ("DESCRIBE", "DESC"):
        p.accept("TABLE")
        table = p.table()
        p.end()
        return Describe(table)
    if word == "TRUNCATE":
        p.accept("TABLE")
        table = p.table()
        p.end()
        raise QueryPlanError(
            f"TRUNCATE is not supported (Phoenix has none): DELETE FROM {table} deletes every "
            f"row and keeps its indexes exact; DROP TABLE {table} and CREATE TABLE make it anew")
    if word == "UPSERT":
        return _upsert(p, explain)
    if word == "INSERT":
        return _upsert(p, explain, insert=True)
    if word == "UPDATE":
        return _update(p, explain)
    if word == "DELETE":
        return _delete(p, explain)
    raise p.fail(f"unknown statement {first.text!r}", first)  # pragma: no cover


def parse_statement(sql: str, max_statement: int | None = None) -> Statement:
    """Parse one statement (SELECT, DDL or DML, see the module docstring); the result is
    immutable and cached by its text."""
    if not isinstance(sql, str):
        raise QuerySyntaxError("a statement is a str")
    if max_statement is not None:
        check_size(sql, max_statement)
    statement = _parse(sql)
    if isinstance(statement, NeedsEngine):
        raise NeedsEngine(str(statement))
    return statement
