"""SQL text -> predicate tree (``ast``), with sqlglot doing the parsing.

Phoenix spelling: ``family.qualifier`` (or a quoted ``"family:qualifier"``) names a column and
``ROWKEY`` the rowkey. Malformed SQL raises QuerySyntaxError with the 0-based offset of the
problem; well-formed SQL that hibase cannot answer (joins, GROUP BY, functions, ...) raises
QueryPlanError. No table schema is consulted here: literals stay int / float / str.
"""

from __future__ import annotations

import difflib
import functools
import math
import operator
import re
from typing import Any, NoReturn

import sqlglot
from sqlglot import exp, tokens
from sqlglot.errors import ParseError, TokenError

from ..codec import ColumnType, parse_date, parse_time, parse_timestamp, type_from_name
from ..errors import NeedsEngine, QueryPlanError, QuerySyntaxError, SchemaError
from .ast import (
    FALSE, FLIPPED_OP, ROWKEY, SQL_TYPE_NAMES, TRUE, UNKNOWN, Agg, And, Between, Casts, Column, Compare,
    HavingCompare, In, IsNotNull, IsNull, Like, Node, Not, Or, OrderItem, Param, Select, Value,
    format_value, Contains,
)

__all__ = ["parse_select", "parse_condition", "parse_where", "check_size", "MAX_STATEMENT"]

MAX_STATEMENT = 1 << 20
"""Default longest statement, in UTF-8 bytes (``connect(..., max_statement=...)`` sets another):
sqlglot holds a statement's tokens and tree in memory many times its size (a 10 MB literal
peaked at 2.4 GB), so a longer one is refused before any parsing."""

_EXPLAIN = re.compile(r"\s*EXPLAIN\b\s*", re.IGNORECASE)
# Limits checked by _precheck before sqlglot and _condition recurse: a level of parentheses costs
# ~20 Python frames in sqlglot, a NOT ~9, an AND/OR term ~1 in _condition, and the default
# recursion limit is 1,000 frames: 24 * 20 in sqlglot, then 512 + 2 * 24 in _condition, leave
# room for the caller's own stack.
MAX_NESTING = 24   # parentheses and NOTs nested in one another
MAX_TERMS = 512    # AND / OR operands in one condition
# on the lower-cased, quote-masked text: parentheses and and/or/not (word starts checked in
# _precheck); the text can be a 100,000-value IN list, so it is only scanned when str.count says
# a limit could be passed, and exponents are looked for from each "e"
_STRUCTURE = re.compile(r"[()]|[nao](?:ot|nd|r)\b")
_EXPONENT_DIGITS = re.compile(r"[+-]?\d")
_SURROGATE = re.compile("[\ud800-\udfff]")
_EMPTY_AGG = re.compile(r"(?<![\w.])(COUNT|SUM|MIN|MAX|AVG)\s*\(\s*\)", re.IGNORECASE)
_COMPARE: dict[type[exp.Expression], str] = {
    exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_SELECT_ARGS = {"expressions", "from", "from_", "where", "limit", "hint", "group", "having",
                "order", "offset", "distinct"}
_CLAUSE_NAMES = {"joins": "JOIN", "group": "GROUP BY", "having": "HAVING", "order": "ORDER BY",
                 "offset": "OFFSET", "distinct": "DISTINCT", "with": "WITH", "with_": "WITH",
                 "qualify": "QUALIFY", "windows": "WINDOW", "laterals": "LATERAL"}


def check_size(sql: str, limit: int = MAX_STATEMENT) -> None:
    """Refuse a statement longer than ``limit`` UTF-8 bytes (QuerySyntaxError at the limit)."""
    if len(sql) * 4 > limit and len(sql.encode("utf-8", "surrogatepass")) > limit:
        raise QuerySyntaxError(f"statement too long ({len(sql.encode('utf-8', 'surrogatepass')):,} "
                               f"bytes; the limit is {limit:,}: connect(..., max_statement=N) "
                               "raises it)", limit)


# Parsing with sqlglot costs ~100-300 µs, more than an indexed lookup; statements repeat (like
# prepared statements), and the trees are immutable, so parses are cached by their text.
@functools.lru_cache(maxsize=4096)
def parse_select(sql: str) -> Select:
    """Parse ``[EXPLAIN] SELECT * | col, ... FROM table [WHERE cond] [LIMIT n]``."""
    m = _EXPLAIN.match(sql)
    offset = m.end() if m else 0
    sql, dynamic = _dynamic_columns(sql)
    try:
        tree = _parse(sql[offset:], offset)
    except QuerySyntaxError:
        _unknown_statement(sql, offset)
        raise
    if not isinstance(tree, exp.Select):
        _unknown_statement(sql, offset)
        if isinstance(tree, exp.Query):  # UNION, INTERSECT, EXCEPT: the engine's
            _beyond(f"only SELECT statements are supported, not {tree.key.upper()}", tree,
                    offset)
        _unsupported(f"only SELECT statements are supported, not {tree.key.upper()}", tree, offset)
    for key, val in tree.args.items():
        if val and key not in _SELECT_ARGS:
            name = _CLAUSE_NAMES.get(key, key.upper())
            found = re.search(r"\b" + name.replace(" ", r"\s+") + r"\b", _mask_quotes(sql),
                              re.IGNORECASE)
            if found:
                raise NeedsEngine(f"{name} is not supported (at position {found.start()})")
            _beyond(f"{name} is not supported", val[0] if isinstance(val, list) else val,
                    offset)
    source = tree.args.get("from_") or tree.args.get("from")
    if source is None:
        raise QuerySyntaxError("SELECT needs FROM <table>", len(sql))
    where = tree.args.get("where")
    _number_placeholders(tree)
    extra = _shape(tree, sql, offset)
    plain = extra["items"] is None
    return Select(
        table=_table(source.this, offset),
        columns=_select_list(tree.expressions, offset) if plain else None,
        names=_names(tree.expressions, offset) if plain else None,
        bare=_bare(tree, offset),
        labels=tuple(e.alias if isinstance(e, exp.Alias) else None for e in tree.expressions),
        where=_condition(where.this, offset) if where is not None else None,
        limit=_limit(tree.args.get("limit"), offset),
        explain=m is not None,
        casts=_casts(tree, offset),
        dynamic=dynamic,
        **extra,
    )


_DYNAMIC = re.compile(r"\bFROM\s+(?:\"[^\"]*\"|[\w.:]+)\s*(\()", re.IGNORECASE)
_DYNAMIC_ITEM = re.compile(r"\s*(?:\"([^\"]+)\"|([\w]+)\.([\w]+))\s+([A-Za-z]+(?:\s*\(\s*\d+\s*\))?"
                           r"(?:\s+binary)?)\s*", re.IGNORECASE)


def _dynamic_columns(sql: str) -> tuple[str, tuple[tuple[bytes, ColumnType], ...]]:
    """Phoenix's dynamic columns, ``FROM t (f.extra VARCHAR, f.n BIGINT)``: columns the table
    does not declare, typed for this statement. Returns ``sql`` with the list blanked out
    (positions kept for error messages) and the (column, type) pairs."""
    masked = _mask_quotes(sql)
    m = next((m for m in _DYNAMIC.finditer(masked) if not _in_call(masked, m.start())), None)
    if m is None:
        return sql, ()
    close = masked.find(")", m.end(1))
    if close < 0:
        return sql, ()
    body = sql[m.end(1):close]
    items = []
    for part in body.split(","):
        item = _DYNAMIC_ITEM.fullmatch(part)
        if item is None:
            if part.strip() and "(" not in part:
                raise QuerySyntaxError(f"a dynamic column is family.qualifier TYPE, not "
                                       f"{part.strip()!r}", m.end(1))
            return sql, ()  # not a list of dynamic columns: sqlglot reports what it is
        quoted, fam, qual, type_name = item.groups()
        name = quoted if quoted is not None else f"{fam}:{qual}"
        if ":" not in name:
            raise QuerySyntaxError(f"dynamic column {name!r} needs a family: "
                                   "family.qualifier TYPE", m.end(1))
        try:
            t = type_from_name(type_name)
        except SchemaError as e:
            raise QuerySyntaxError(str(e), m.end(1)) from None
        items.append((name.encode("utf-8"), t))
    blank = sql[:m.start(1)] + " " * (close + 1 - m.start(1)) + sql[close + 1:]
    return blank, tuple(items)


def _in_call(masked: str, pos: int) -> bool:
    """Whether the FROM at ``pos`` is a function's (``EXTRACT(YEAR FROM COALESCE(d, ...))``),
    not a SELECT's: the innermost parenthesis open there does not start a subquery."""
    depth = 0
    for i in range(pos - 1, -1, -1):
        c = masked[i]
        if c == ")":
            depth += 1
        elif c == "(":
            if depth == 0:
                return not re.match(r"\s*(SELECT|WITH)\b", masked[i + 1:pos], re.IGNORECASE)
            depth -= 1
    return False


_FIRST_WORD = re.compile(r"\s*([A-Za-z_]\w*)")
_STATEMENT_WORDS = frozenset(
    "SELECT WITH EXPLAIN INSERT UPSERT UPDATE DELETE MERGE CREATE DROP ALTER TRUNCATE VALUES "
    "SHOW DESCRIBE DESC USE SET GRANT REVOKE BEGIN COMMIT ROLLBACK".split())


def _unknown_statement(sql: str, offset: int) -> None:
    """A statement that failed to parse and starts with a word no SQL statement starts with
    (``SELEC * FROM t``) is reported as that word, not as the parser's confusion further on."""
    first = _FIRST_WORD.match(sql, offset)
    if first and first.group(1).upper() not in _STATEMENT_WORDS:
        word = first.group(1)
        close = difflib.get_close_matches(word.upper(), ["SELECT", "EXPLAIN"], n=1)
        hint = f"; did you mean {close[0]}?" if close else "; queries start with SELECT"
        raise QuerySyntaxError(f"unknown statement {word!r}{hint}", first.start(1)) from None


def parse_condition(text: str) -> Node:
    """Parse a WHERE condition alone, e.g. ``"f.dest = 'IAH' AND f.delay > 10"``; one with a
    CAST is refused here (``parse_where`` returns its casts too)."""
    node, casts = parse_where(text)
    if casts:
        raise QueryPlanError("CAST needs the statement's casts: use parse_where")
    return node


@functools.lru_cache(maxsize=4096)
def parse_where(text: str) -> tuple[Node, Casts]:
    """A WHERE condition alone and its ``CAST(column AS type)``s (see ``Select.casts``)."""
    tree = _parse(text, 0)
    if isinstance(tree, exp.Query):
        _unsupported("expected a condition, not a statement", tree, 0)
    _number_placeholders(tree)
    node, casts = _condition(tree, 0), _casts(tree, 0)
    bare = _bare(tree, 0)
    if bare:
        raise QuerySyntaxError(f"column {bare[0][0]!r} needs a family: write family.qualifier",
                               bare[0][1])
    return node, casts


def _bare(tree: exp.Expression, offset: int) -> tuple[tuple[str, int | None], ...]:
    """The column names written without a family (not ROWKEY), with their positions."""
    out = []
    for node in tree.find_all(exp.Column):
        if isinstance(node.this, exp.Identifier) and node.args.get("table") is None \
                and ":" not in node.name and node.name.upper() != "ROWKEY":
            out.append((node.name, _position(node, offset)))
    return tuple(sorted(out, key=lambda x: (x[1] is None, x[1] or 0)))


# -- sqlglot plumbing ------------------------------------------------------------------------

# Long IN lists of plain literals skip sqlglot: it builds a node per value (100,000 values took
# 18 s), so the list is read here by one regex and its text replaced by a string literal of the
# same length (error positions stay right) that _condition swaps back for the values.
BIG_IN = 64  # values from which an IN list is read here
_IN_OPEN = re.compile(r"\bIN\s*\(", re.IGNORECASE)
_IN_ITEM = re.compile(r"\s*(?:(-?\s*(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|'((?:[^']|'')*)')\s*([,)])")
_IN_MARK = "\x00hibase-in:"


_INT_LIST = re.compile(r"[0-9\s,-]*\)")


def _int_list(sql: str, pos: int) -> tuple[list[Value], int] | None:
    """(values, position after the ')') of an IN list of plain integers starting at `pos`, or
    None for any other list (then read value by value)."""
    m = _INT_LIST.match(sql, pos)
    if m is None:
        return None
    try:
        return [int(x) for x in sql[pos:m.end() - 1].split(",")], m.end()
    except ValueError:  # an empty item, a lone or doubled minus sign: the careful path decides
        return None


def _literal_lists(sql: str) -> tuple[str, dict[str, tuple[Value, ...]]]:
    """``sql`` with every IN list of BIG_IN or more plain literals (numbers, 'strings') replaced
    by a same-length placeholder string, and the values of each placeholder."""
    if len(sql) < 4 * BIG_IN:
        return sql, {}
    masked = _mask_quotes(sql)
    lists: dict[str, tuple[Value, ...]] = {}
    out, last = [], 0
    for m in _IN_OPEN.finditer(masked):
        if m.start() < last:
            continue
        pos = m.end()
        values: list[Value] = []
        ints = _int_list(sql, pos)
        if ints is not None:  # the common long list: integers only, read in one split
            values, pos = ints
        while ints is None:
            item = _IN_ITEM.match(sql, pos)
            if item is None:
                break
            number, text, sep = item.groups()
            if number is not None:
                number = number.replace(" ", "")
                try:
                    values.append(int(number))
                except ValueError:
                    values.append(float(number))
            else:
                values.append(text.replace("''", "'"))
            pos = item.end()
            if sep == ")":
                break
        else:  # pragma: no cover - the loop only ends by break
            pass
        if (ints is None and item is None) or len(values) < BIG_IN:
            continue  # not a plain literal list: sqlglot reads it (and reports any error)
        mark = f"{_IN_MARK}{len(lists)}"
        span = pos - 1 - m.end()  # the list's text between the parentheses
        if span < len(mark) + 2:  # pragma: no cover - BIG_IN literals are longer than a mark
            continue
        lists[mark] = tuple(values)
        out.append(sql[last:m.end()])
        out.append("'" + mark + " " * (span - len(mark) - 2) + "'")
        last = pos - 1
    if not lists:
        return sql, {}
    out.append(sql[last:])
    return "".join(out), lists


def _empty_exponent(low: str, sql: str, offset: int, raise_it: bool) -> int | None:
    """Where a number with an empty exponent (``1e``, ``2.5E+``) starts in `low` (None if
    none); with raise_it, QuerySyntaxError there. Found from each "e", not by a regex over the
    whole text."""
    e = low.find("e")
    while e > 0:
        if low[e - 1].isdigit() and not _EXPONENT_DIGITS.match(low, e + 1):
            i = e - 1
            while i and (low[i - 1].isdigit() or low[i - 1] == "."):
                i -= 1
            if not i or not (low[i - 1].isalnum() or low[i - 1] == "_"):  # not inside a name
                if raise_it:
                    raise QuerySyntaxError(f"malformed number {sql[i:e + 1]!r}", i + offset)
                return i
        e = low.find("e", e + 1)
    return None


def _precheck(sql: str, offset: int) -> None:
    """Reject, before any recursion, what would overflow the stack: nesting past MAX_NESTING,
    more than MAX_TERMS AND/OR operands; and numbers with an empty exponent (``1e``). Counted
    on the raw text first (quoted text only adds), so the quote-masked scan, costly on a
    100,000-value IN list, runs only when a limit could be passed or a ``1e`` is in sight."""
    low = sql.lower()
    if _empty_exponent(low, sql, offset, raise_it=False) is None and \
            low.count("(") + low.count("not") <= MAX_NESTING and \
            low.count("and") + low.count("or") < MAX_TERMS:
        return
    low = _mask_quotes(sql).lower()
    _empty_exponent(low, sql, offset, raise_it=True)
    # per open parenthesis, the NOTs pending at that level: "NOT NOT (NOT x)" nests 4 deep
    nots, depth, terms = [0], 0, 1
    for m in _STRUCTURE.finditer(low):
        word, at = m.group(), m.start()
        if word == "(":
            nots.append(0)
        elif word == ")":
            if len(nots) > 1:
                nots.pop()
            continue
        elif at and (low[at - 1].isalnum() or low[at - 1] in "_."):
            continue  # inside a name (ROWKEY_not, f.and)
        elif word == "not":
            nots[-1] += 1
        else:  # and / or
            nots[-1] = 0
            terms += 1
            if terms > MAX_TERMS:
                raise QuerySyntaxError(f"too many AND/OR terms (more than {MAX_TERMS}); use IN "
                                       "lists or split the query", at + offset)
            continue
        depth = len(nots) - 1 + sum(nots)
        if depth > MAX_NESTING:
            raise QuerySyntaxError(f"condition nested too deeply (more than {MAX_NESTING} "
                                   "parentheses and NOTs)", at + offset)


def _parse(sql: str, offset: int) -> exp.Expression:
    bad = _SURROGATE.search(sql)
    if bad:  # not text: would fail to encode as UTF-8 later
        raise QuerySyntaxError("lone surrogate character (not valid text)", bad.start() + offset)
    sql, lists = _literal_lists(sql)
    empty = _EMPTY_AGG.search(_mask_quotes(sql))
    if empty:  # COUNT(): sqlglot accepts it and keeps no position for it
        name = empty.group(1).upper()
        raise QuerySyntaxError(f"{name}() needs an argument: {name}(column)"
                               + (" or COUNT(*)" if name == "COUNT" else ""),
                               empty.start() + offset)
    _precheck(sql, offset)
    tree = _parse_sqlglot(sql, offset)
    for node in tree.find_all(exp.In) if lists else ():
        if len(node.expressions) == 1 and isinstance(node.expressions[0], exp.Literal):
            mark = node.expressions[0].this.rstrip()
            if mark in lists:
                node.meta["hibase_values"] = lists[mark]
    return tree


class _Dialect(sqlglot.Dialect):
    """sqlglot's default dialect with Phoenix's binary literals, ``X'00ff'``."""

    class Tokenizer(tokens.Tokenizer):
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]


def _parse_sqlglot(sql: str, offset: int) -> exp.Expression:
    try:
        trees = [t for t in sqlglot.parse(sql, read=_Dialect, error_message_context=len(sql) + 1)
                 if isinstance(t, exp.Expression)]  # None for an empty statement
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        pos = len(err["start_context"]) if "start_context" in err else None
        raise QuerySyntaxError(_describe(err, e), None if pos is None else pos + offset) from None
    except TokenError:
        pos = _unterminated_quote(sql)
        what = "unterminated quoted string" if pos is not None else "cannot tokenize the query"
        raise QuerySyntaxError(what, None if pos is None else pos + offset) from None
    if not trees:
        raise QuerySyntaxError("empty query", offset)
    if len(trees) > 1:
        semicolon = _mask_quotes(sql).find(";")
        raise QuerySyntaxError("only one statement is allowed",
                               semicolon + offset if semicolon >= 0 else None)
    return trees[0]


def _describe(err: dict[str, Any], e: ParseError) -> str:
    desc = str(err.get("description") or str(e).splitlines()[0])
    token = err.get("highlight")
    if desc.startswith("Required keyword"):
        return f"incomplete expression at {token!r}" if token else "incomplete expression"
    if desc.startswith("Invalid expression / Unexpected token"):
        return f"unexpected {token!r}" if token else "unexpected token"
    return f"{desc} at {token!r}" if token else desc


_QUOTED = re.compile(r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|`(?:[^`]|``)*`?")
_CLOSED = {q: re.compile(f"{q}(?:[^{q}]|{q}{q})*{q}") for q in "'\"`"}


def _blank(m: re.Match) -> str:
    text, quote = m.group(), m.group()[0]
    if _CLOSED[quote].fullmatch(text):
        return quote + " " * (len(text) - 2) + quote
    return quote + " " * (len(text) - 1)  # unterminated: blank to the end


def _mask_quotes(sql: str) -> str:
    """``sql`` with the text inside quotes blanked out (same length, quote marks kept; after an
    unterminated quote, everything); a regex pass, so long statements cost little."""
    if not any(q in sql for q in "'\"`"):
        return sql
    return _QUOTED.sub(_blank, sql)


def _scan_quotes(sql: str) -> tuple[str, int | None]:
    """``sql`` with quoted text blanked out, and where an unterminated quote starts (if any)."""
    out, quote, start, i = list(sql), None, 0, 0
    while i < len(sql):
        c = sql[i]
        if quote is None:
            if c in "'\"`":
                quote, start = c, i
        elif c == quote:
            if sql[i + 1:i + 2] == quote:  # doubled quote inside the string
                out[i] = out[i + 1] = " "
                i += 1
            else:
                quote = None
        else:
            out[i] = " "
        i += 1
    return "".join(out), (start if quote is not None else None)


def _unterminated_quote(sql: str) -> int | None:
    return _scan_quotes(sql)[1]


def _position(node: exp.Expression, offset: int) -> int | None:
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    return min(starts) + offset if starts else None


def _unsupported(message: str, node: Any, offset: int) -> NoReturn:
    pos = _position(node, offset) if isinstance(node, exp.Expression) else None
    raise QueryPlanError(message if pos is None else f"{message} (at position {pos})")


def _beyond(message: str, node: Any, offset: int) -> NoReturn:
    """Refuse a construct the lean path does not answer but the SQL engine does (NeedsEngine:
    Connection routes the statement to hibase.query.duck)."""
    pos = _position(node, offset) if isinstance(node, exp.Expression) else None
    raise NeedsEngine(message if pos is None else f"{message} (at position {pos})")


def _syntax(message: str, node: exp.Expression, offset: int) -> NoReturn:
    raise QuerySyntaxError(message, _position(node, offset))


# -- statement parts ---------------------------------------------------------------------------

def _table(node: exp.Expression, offset: int) -> str:
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier) \
            or node.args.get("catalog") or node.args.get("alias"):
        _beyond("FROM takes a single table name", node, offset)
    db = node.args.get("db")
    return f"{db.name}:{node.name}" if db else node.name  # ns.table -> HBase "ns:table"


def _select_list(items: list[exp.Expression], offset: int) -> tuple[bytes, ...] | None:
    if len(items) == 1 and isinstance(items[0], exp.Star):
        return None
    cols: list[bytes] = []
    for item in items:
        if isinstance(item, exp.Star):
            _unsupported("* cannot be mixed with columns", item, offset)
        name = _column(item, offset).key
        if name != ROWKEY and name not in cols:  # every result row carries its key anyway
            cols.append(name)
    return tuple(cols)


def _names(items: list[exp.Expression], offset: int) -> tuple[bytes, ...] | None:
    if len(items) == 1 and isinstance(items[0], exp.Star):
        return None
    return tuple(_column(item, offset).key for item in items)


def _limit(node: exp.Expression | None, offset: int) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression") or node.this
    if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
        _syntax("LIMIT takes a non-negative integer", node, offset)
    return int(value.this)


def _column(node: exp.Expression, offset: int) -> Column:
    """``f.q`` -> b"f:q"; ``"f:q"`` -> b"f:q"; ``ROWKEY`` (any case) -> the rowkey;
    ``CAST(f.q AS type)`` -> b"f:q" too (its type is the statement's, see _casts)."""
    while isinstance(node, (exp.Paren, exp.Alias)):  # a select-list alias: Select.labels
        node = node.this
    if isinstance(node, exp.Cast):
        column, t = _cast(node, offset)
        return Column(column.name, t)
    if not isinstance(node, exp.Column):
        if isinstance(node, (exp.Func, exp.Binary, exp.Unary, exp.Query, exp.Subquery,
                             exp.Case, exp.Predicate, exp.Window)):
            _beyond(f"expressions such as {node.sql()!r} are not supported; "
                    "name a column as family.qualifier", node, offset)
        if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
            _beyond(f"a literal ({node.sql()}) as a value or group is not supported", node,
                    offset)
        _syntax(f"expected a column (family.qualifier or ROWKEY), got {node.sql()!r}", node,
                offset)
    if not isinstance(node.this, exp.Identifier) or node.args.get("db") \
            or node.args.get("catalog"):
        _syntax(f"bad column reference {node.sql()!r}; use family.qualifier", node, offset)
    family = node.args.get("table")
    if family is not None:
        return Column(f"{family.name}:{node.name}".encode("utf-8"))
    if node.name.upper() == "ROWKEY":
        return Column(ROWKEY)
    # a name without a family (and no ':') is resolved against the schema (Select.bare)
    return Column(node.name.encode("utf-8"))


def _literal(node: exp.Expression) -> Value | None:
    """The Python value of a literal (number or single-quoted string), else None; a ``?`` or
    ``:name`` placeholder is a Param, bound later (params.bind)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Placeholder):
        return node.meta["hibase_param"]
    if isinstance(node, exp.HexString):  # X'00ff': raw bytes
        digits = node.this
        if len(digits) % 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise QuerySyntaxError(f"X'{digits}' needs an even number of hex digits",
                                   node.meta.get("start"))
        return bytes.fromhex(digits)
    if isinstance(node, exp.Neg):
        v = _literal(node.this)
        if isinstance(v, Param):
            raise QueryPlanError("write -? as a negative parameter value instead")
        return -v if isinstance(v, (int, float)) else None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) \
            and node.this.is_string and isinstance(node.to, exp.DataType):
        return _typed_literal(node)
    if not isinstance(node, exp.Literal):
        return None
    if node.is_string:
        return node.this
    text = node.this
    try:
        return int(text)
    except ValueError:
        pass
    try:
        f = float(text)
    except ValueError:  # _precheck catches the known shapes; this is the safety net
        raise QuerySyntaxError(f"malformed number {text!r}") from None
    if math.isinf(f):  # 1e400: no DOUBLE holds it (Phoenix has no literal for infinity)
        raise QuerySyntaxError(f"number {text} is out of DOUBLE range", node.meta.get("start"))
    return f


_TYPED_LITERALS: dict[Any, Any] = {
    exp.DataType.Type.DATE: parse_date, exp.DataType.Type.TIME: parse_time,
    exp.DataType.Type.TIMESTAMP: parse_timestamp, exp.DataType.Type.DATETIME: parse_timestamp}


def _typed_literal(node: exp.Cast) -> Value | None:
    """``DATE '2024-01-02'``, ``TIME '12:00:00'``, ``TIMESTAMP '2024-01-02 12:00:00'`` (also
    written CAST('...' AS DATE)) as their Python values; other casts of a string: None."""
    read = _TYPED_LITERALS.get(node.to.this)
    if read is None:
        return None
    try:
        return read(node.this.this)
    except ValueError as e:
        raise QuerySyntaxError(str(e), node.meta.get("start")) from None


# Phoenix's type names (as sqlglot reads them) -> hibase's column types
_CAST_TYPES = {
    "TINYINT": "byte", "SMALLINT": "short", "INT": "int", "BIGINT": "long", "FLOAT": "float",
    "DOUBLE": "double", "VARCHAR": "string", "NVARCHAR": "string", "TEXT": "string",
    "CHAR": "string", "NCHAR": "string", "VARBINARY": "bytes", "BINARY": "bytes",
    "DATE": "date", "TIME": "time", "TIMESTAMP": "timestamp", "DATETIME": "timestamp",
    "DECIMAL": "decimal", "BOOLEAN": "boolean",
}


def _cast(node: exp.Cast, offset: int) -> tuple[Column, ColumnType]:
    """``CAST(column AS type)``: the column and its type for this statement."""
    inner = node.this
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if not isinstance(inner, exp.Column):
        _beyond(f"CAST takes a column, not {inner.sql()!r}", node, offset)
    column = _column(inner, offset)
    if column.is_rowkey:
        _unsupported("ROWKEY is bytes and cannot be CAST; compare it with a 'string' or X'..'",
                     node, offset)
    to = node.args.get("to")
    name = _CAST_TYPES.get(to.this.name) if isinstance(to, exp.DataType) else None
    if name is None:
        known = ", ".join(dict.fromkeys(SQL_TYPE_NAMES.values()))
        _unsupported(f"CAST to {to.sql() if to is not None else '?'} is not supported "
                     f"(types: {known})", node, offset)
    if name == "decimal" and to is not None and to.expressions:  # DECIMAL(p[, s])
        try:
            return column, type_from_name(f"decimal({','.join(e.sql() for e in to.expressions)})")
        except SchemaError as e:
            _unsupported(str(e), node, offset)
    return column, ColumnType(name)


def _casts(tree: exp.Expression, offset: int) -> Casts:
    """Every ``CAST(column AS type)`` of a statement, each (column, type) pair once, in text
    order (``cast.resolve_casts`` decides, with the schema, what each one means)."""
    found: dict[tuple[bytes, ColumnType], None] = {}
    for node in tree.find_all(exp.Cast):
        if _literal(node) is not None:  # DATE '2024-01-02': a typed literal
            continue
        column, t = _cast(node, offset)
        found[(column.name, t)] = None
    return tuple(found)


_SUBQUERY = ("subqueries need the SQL engine, which runs whole statements (db.sql, hibase "
             "query, hibase sql: SELECT ... WHERE ...); a condition alone (Table.where) takes "
             "literals")


def _value(node: exp.Expression, offset: int, parent: exp.Expression) -> Value:
    """A literal operand of ``parent`` (which gives the error position when ``node`` has none)."""
    v = _literal(node)
    if v is None:
        at = node if _position(node, 0) is not None else parent
        if isinstance(node, exp.Null):
            _unsupported("comparison with NULL is always unknown; use IS [NOT] NULL", at, offset)
        if isinstance(node, (exp.Subquery, exp.Query)) or node.find(exp.Query) is not None:
            _beyond(_SUBQUERY, at, offset)
        _beyond(f"expected a literal (number or 'string'), got {node.sql()!r}", at, offset)
    return v


def _is_column(node: exp.Expression) -> bool:
    """A column, or a CAST of one."""
    while isinstance(node, (exp.Paren, exp.Cast)):
        node = node.this
    return isinstance(node, exp.Column)


# -- conditions ------------------------------------------------------------------------------

def _condition(node: exp.Expression, offset: int) -> Node:
    if isinstance(node, exp.Paren):
        return _condition(node.this, offset)
    if isinstance(node, (exp.And, exp.Or)):
        kind = And if isinstance(node, exp.And) else Or
        items: list[Node] = []
        for side in (node.this, node.expression):
            sub = _condition(side, offset)
            items.extend(sub.items if isinstance(sub, kind) else (sub,))
        return kind(tuple(items))
    if isinstance(node, exp.Not):
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Is):  # NOT x IS NULL == x IS NOT NULL
            return IsNotNull(_is_null_column(inner, offset))
        return Not(_condition(inner, offset))
    if isinstance(node, exp.Boolean):
        return TRUE if node.this else FALSE
    if type(node) in _COMPARE:
        return _compare(node, _COMPARE[type(node)], offset)
    if isinstance(node, exp.Between):
        return Between(_column(node.this, offset), _value(node.args["low"], offset, node),
                       _value(node.args["high"], offset, node))
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            _beyond("IN (SELECT ...): " + _SUBQUERY, node, offset)
        if not node.expressions:
            _syntax("IN needs at least one value", node, offset)
        values = node.meta.get("hibase_values")  # a long literal list read by _literal_lists
        null = False
        if values is None:
            null = any(isinstance(v, exp.Null) for v in node.expressions)
            values = tuple(_value(v, offset, node) for v in node.expressions
                           if not isinstance(v, exp.Null))
        values = tuple(dict.fromkeys(values))
        column = _column(node.this, offset)
        if not null:
            return In(column, values)
        # x IN (1, NULL) is TRUE where x = 1, else UNKNOWN (NULL = x is never FALSE)
        if values:
            return Or((In(column, values), UNKNOWN))
        return And((Or((IsNull(column), IsNotNull(column))), UNKNOWN))  # names the column
    if isinstance(node, exp.Like):
        pred = _like(node, offset)
        return Not(pred) if node.args.get("negate") else pred
    if isinstance(node, exp.Is):
        return IsNull(_is_null_column(node, offset))
    if isinstance(node, exp.Contains):  # CONTAINS(f.body, 'quick fox'): index/text.py
        query = _literal(node.expression)
        if not isinstance(query, str):
            _unsupported("CONTAINS takes a column and a string literal: CONTAINS(f.body, "
                         "'quick fox')", node, offset)
        return Contains(_column(node.this, offset), query)
    if isinstance(node, exp.Column):  # a BOOLEAN column alone: col = TRUE (others refuse it)
        return Compare(_column(node, offset), "=", True)
    if isinstance(node, (exp.Literal, exp.Neg)):
        _syntax(f"expected a condition, got {node.sql()!r}", node, offset)
    if isinstance(node, exp.Query) or node.find(exp.Query):
        _beyond(_SUBQUERY, node, offset)
    _beyond(f"unsupported condition {node.sql()!r}", node, offset)


def _compare(node: exp.Expression, op: str, offset: int) -> Node:
    left, right = node.this, node.expression
    if _is_column(left):
        return Compare(_column(left, offset), op, _value(right, offset, node))
    if _is_column(right):
        return Compare(_column(right, offset), FLIPPED_OP[op], _value(left, offset, node))
    a, b = _literal(left), _literal(right)
    if (isinstance(a, Param) or isinstance(b, Param)) and a is not None and b is not None:
        _unsupported("a parameter must be compared with a column", node, offset)
    for side, v in ((left, a), (right, b)):
        if v is None:
            _column(side, offset)  # raises the specific error for a function, NULL, ...
    if a is None or b is None:
        _beyond(f"a comparison needs a column on one side and a literal on the other: "
                     f"{node.sql()!r}", node, offset)
    if isinstance(a, str) != isinstance(b, str):
        _unsupported(f"cannot compare a string with a number: {node.sql()!r}", node, offset)
    if isinstance(a, bytes) != isinstance(b, bytes):  # X'..' with a number
        _unsupported(f"cannot compare bytes with a number: "
                     f"{format_value(a)} {op} {format_value(b)}", node, offset)
    return TRUE if _LITERAL_OPS[op](a, b) else FALSE


_LITERAL_OPS = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
                ">": operator.gt, ">=": operator.ge}
"""A comparison of two literals of one kind (numbers, strings or bytes), worked out here."""


def _like(node: exp.Like, offset: int) -> Node:
    pattern = _literal(node.expression)
    if isinstance(pattern, Param):
        _beyond("LIKE takes a literal pattern, not a parameter", node.expression, offset)
    if pattern is None:
        _beyond(f"LIKE takes a literal pattern, not {node.expression.sql()!r}",
                node.expression, offset)
    if not isinstance(pattern, str):
        _unsupported("LIKE takes a string pattern", node.expression, offset)
    column = _column(node.this, offset)
    body = pattern[:-1] if pattern.endswith("%") else pattern
    if "%" in body or "_" in body:
        _beyond(f"only prefix LIKE patterns ('prefix%') are supported, not {pattern!r}",
                     node.expression, offset)
    if body == pattern:  # no wildcard at all: plain equality
        return Compare(column, "=", pattern)
    return Like(column, body)


def _is_null_column(node: exp.Is, offset: int) -> Column:
    if not isinstance(node.expression, exp.Null):
        _beyond(f"only IS [NOT] NULL is supported: {node.sql()!r}", node, offset)
    return _column(node.this, offset)


# -- placeholders, aggregates, GROUP BY, HAVING, ORDER BY, OFFSET, DISTINCT --------------------

def _number_placeholders(tree: exp.Expression) -> None:
    """Give each ``?`` its position (0, 1, ... in text order) and each ``:name`` its name;
    mixing both styles in one statement is refused."""
    n, named = 0, False
    for node in _in_text_order(tree):
        if node.this:
            node.meta["hibase_param"] = Param(name=str(node.this))
            named = True
        else:
            node.meta["hibase_param"] = Param(index=n)
            n += 1
    if named and n:
        raise QueryPlanError("use either ? or :name parameters in one statement, not both")


def _in_text_order(tree: exp.Expression) -> list[exp.Placeholder]:
    """The placeholders of ``tree`` depth-first, left to right: the order they are written in
    (sqlglot keeps operands in source order)."""
    out: list[exp.Placeholder] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Placeholder):
            out.append(node)
            continue
        children = []
        for key in _ARG_ORDER.get(type(node), node.args):
            val = node.args.get(key)
            for v in (val if isinstance(val, list) else [val]):
                if isinstance(v, exp.Expression):
                    children.append(v)
        stack.extend(reversed(children))
    return out


# clauses of a SELECT in the order SQL writes them (args are stored in another order)
_ARG_ORDER: dict[type[exp.Expression], tuple[str, ...]] = {
    exp.Select: ("expressions", "from", "from_", "where", "group", "having", "order", "limit",
                 "offset")}


def _is_agg(node: exp.Expression) -> bool:
    return isinstance(node, exp.AggFunc)


_AGG_NAMES: dict[type[exp.Expression], str] = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Min: "MIN", exp.Max: "MAX", exp.Avg: "AVG"}


def _agg(node: exp.Expression, offset: int) -> Agg:
    name = _AGG_NAMES.get(type(node))
    if name is None:
        _beyond(f"aggregate {node.sql()!r} is not supported "
                     "(COUNT, SUM, MIN, MAX, AVG are)", node, offset)
    arg = node.this
    if arg is None:  # COUNT(): sqlglot accepts it
        _syntax(f"{name}() needs an argument: {name}(column)"
                + (" or COUNT(*)" if name == "COUNT" else ""), node, offset)
    if node.expressions:
        _syntax(f"{name} takes one argument, not {1 + len(node.expressions)}", node, offset)
    distinct = isinstance(arg, exp.Distinct)
    if distinct:
        if len(arg.expressions) != 1:
            _beyond(f"{name}(DISTINCT ...) takes one column", node, offset)
        arg = arg.expressions[0]
    if isinstance(arg, exp.Star):
        if name != "COUNT" or distinct:
            _unsupported(f"{name}(*) is not supported; name a column", node, offset)
        return Agg("COUNT")
    return Agg(name, _column(arg, offset), distinct)


def _expr(node: exp.Expression, offset: int) -> Column | Agg:
    while isinstance(node, (exp.Paren, exp.Alias)):
        node = node.this
    return _agg(node, offset) if _is_agg(node) else _column(node, offset)


def _shape(tree: exp.Select, sql: str, offset: int) -> dict[str, Any]:
    """The select list (when aggregate), GROUP BY, HAVING, ORDER BY, OFFSET and DISTINCT."""
    group = tree.args.get("group")
    having = tree.args.get("having")
    distinct = tree.args.get("distinct")
    if distinct is not None and distinct.args.get("on"):
        _beyond("DISTINCT ON is not supported", distinct, offset)
    if group is not None and (group.args.get("rollup") or group.args.get("cube")
                              or group.args.get("grouping_sets")):
        _beyond("ROLLUP, CUBE and GROUPING SETS are not supported", group, offset)
    aggregate = (group is not None or having is not None or distinct is not None
                 or any(e.find(exp.AggFunc) for e in tree.expressions))
    items = None
    group_by: tuple[Column, ...] = ()
    if aggregate:
        if any(isinstance(e, exp.Star) for e in tree.expressions):
            _unsupported("* cannot be used with aggregates, GROUP BY or DISTINCT; name the "
                         "columns", tree.expressions[0], offset)
        items = tuple(_expr(e, offset) for e in tree.expressions)
        if group is not None:
            labels = {e.alias for e in tree.expressions if isinstance(e, exp.Alias)}
            for g in group.expressions:  # GROUP BY c0 naming a select item: DuckDB binds it
                if isinstance(g, exp.Column) and not g.table and g.name in labels:
                    _beyond(f"GROUP BY the select item's alias {g.name}", g, offset)
            group_by = tuple(dict.fromkeys(_column(g, offset) for g in group.expressions))
        if group is not None or any(isinstance(i, Agg) for i in items):
            for item in items:
                if isinstance(item, Column) and item not in group_by:
                    raise QueryPlanError(f"column {item} must appear in GROUP BY or in an "
                                         "aggregate")
    order = tree.args.get("order")
    order_by: tuple[OrderItem, ...] = ()
    if order is not None:
        aliases = {e.alias for e in tree.expressions if isinstance(e, exp.Alias)}
        order_by = _order(order, sql, offset, items, aliases)
    off = tree.args.get("offset")
    out_offset = None
    if off is not None:
        value = off.args.get("expression") or off.this
        if not (isinstance(value, exp.Literal) and not value.is_string
                and value.this.isdigit()):
            _syntax("OFFSET takes a non-negative integer", off, offset)
        out_offset = int(value.this)
    return {"items": items, "group_by": group_by,
            "having": _having(having.this, offset, items, group_by) if having is not None
            else None,
            "order_by": order_by, "offset": out_offset, "distinct": distinct is not None}


class _NullsLarge(_Dialect):
    """sqlglot's default dialect with the opposite default NULL placement: parsing ORDER BY
    under both tells a written NULLS FIRST / LAST from an unwritten one."""

    NULL_ORDERING = "nulls_are_large"


def _order(order: exp.Order, sql: str, offset: int, items,
           aliases: frozenset[str] | set[str] = frozenset()) -> tuple[OrderItem, ...]:
    explicit = None
    if re.search(r"\bNULLS\s+(FIRST|LAST)\b", _mask_quotes(sql), re.IGNORECASE):
        other = sqlglot.parse_one(_literal_lists(sql[offset:])[0], read=_NullsLarge)
        explicit = [o.args.get("nulls_first") for o in other.args["order"].expressions]
    out = []
    for i, o in enumerate(order.expressions):
        node = o.this
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            pos = int(node.this)  # ORDER BY 2: the second item of the select list
            if items is None or not 1 <= pos <= len(items):
                _beyond(f"ORDER BY {pos}: positions name items of an aggregate select "
                             "list", node, offset)
            expr = items[pos - 1]
        else:
            if isinstance(node, exp.Column) and node.args.get("table") is None \
                    and node.name in aliases:
                _beyond(f"ORDER BY a select-list alias ({node.name}) is not supported", node,
                        offset)
            expr = _expr(node, offset)
        desc = bool(o.args.get("desc"))
        first = bool(o.args.get("nulls_first"))
        written = explicit is not None and bool(explicit[i]) == first
        out.append(OrderItem(expr, desc, nulls_last=written and not first))
    return tuple(out)


def _having(node: exp.Expression, offset: int, items, group_by) -> Node:
    if isinstance(node, exp.Paren):
        return _having(node.this, offset, items, group_by)
    if isinstance(node, (exp.And, exp.Or)):
        kind = And if isinstance(node, exp.And) else Or
        parts: list[Node] = []
        for side in (node.this, node.expression):
            sub = _having(side, offset, items, group_by)
            parts.extend(sub.items if isinstance(sub, kind) else (sub,))
        return kind(tuple(parts))
    if isinstance(node, exp.Not):
        return Not(_having(node.this, offset, items, group_by))
    if type(node) in _COMPARE:
        op = _COMPARE[type(node)]
        left, right = node.this, node.expression
        if _literal(left) is not None and _literal(right) is None:
            left, right, op = right, left, FLIPPED_OP[op]
        expr = _expr(left, offset)
        if isinstance(expr, Column) and expr not in group_by:
            raise QueryPlanError(f"HAVING column {expr} must appear in GROUP BY")
        return HavingCompare(expr, op, _value(right, offset, node))
    _beyond(f"HAVING supports comparisons of aggregates with literals, combined by "
                 f"AND / OR / NOT; not {node.sql()!r}", node, offset)
