"""Parse and evaluate HBase Thrift filter-language strings (happybase ``scan(filter=...)``).

The store cannot run HBase's Java filters, so this module re-implements the supported subset
of the grammar (HBase ParseFilter) with a hand-written recursive-descent parser and evaluates
the result one row at a time on that row's newest cells.

Grammar (as HBase; operator keywords and filter names are case-sensitive)::

    expr    := and_expr ('OR' and_expr)*
    and_expr:= unary ('AND' unary)*           # AND binds tighter than OR
    unary   := ('SKIP' | 'WHILE') unary | primary
    primary := '(' expr ')' | NAME '(' [arg (',' arg)*] ')'
    arg     := 'quoted string' ('' escapes a quote) | bare word (int, true/false, =, <=, ...)

Evaluation model: every predicate (PrefixFilter, SingleColumnValueFilter) looks at the row's
cells as given to `RowFilter.apply`; cell transformations (KeyOnlyFilter, FirstKeyOnlyFilter,
ColumnPrefixFilter) compose left to right through an AND chain.  OR emits the union of what
its passing branches emit.  A row whose emitted cells are empty is dropped, as HBase never
returns empty rows.  PageFilter keeps a counter, so a compiled filter serves ONE scan only:
call `compile_filter` once per scan.
"""

from __future__ import annotations

import re
import struct
from typing import Callable, NamedTuple, Union

from hibase.errors import FilterError, FilterSyntaxError, UnsupportedFilter

__all__ = ["compile_filter", "RowFilter"]

Cells = dict[bytes, bytes]

_WS = " \t\r\n"
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*\Z")
_INT_RE = re.compile(r"-?[0-9]+\Z")
_KEYWORDS = frozenset({"AND", "OR", "SKIP", "WHILE"})
_OPS: dict[str, Callable[[int], bool]] = {   # applied to cmp(cell_value, comparand)
    "=": lambda c: c == 0, "!=": lambda c: c != 0,
    "<": lambda c: c < 0, "<=": lambda c: c <= 0,
    ">": lambda c: c > 0, ">=": lambda c: c >= 0,
}


# ----------------------------------------------------------------------------- lexing

class _Tok(NamedTuple):
    kind: str          # "(" ")" "," "str" "word" "end"
    text: str          # word text / decoded string literal (surrogate-escaped)
    pos: int           # character offset in the (decoded) filter string


def _encode(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _col_key(column: bytes) -> tuple[bytes, bytes]:
    """Sort key of b"family:qualifier" in HBase order (family, then qualifier)."""
    family, _, qualifier = column.partition(b":")
    return family, qualifier


def _sorted(cells: Cells) -> Cells:
    return dict(sorted(cells.items(), key=lambda kv: _col_key(kv[0])))


# ----------------------------------------------------------------------------- AST

class _Call(NamedTuple):
    name: str
    pos: int
    args: list[_Tok]


class _Unary(NamedTuple):
    op: str            # "SKIP" | "WHILE"
    pos: int
    operand: "_Ast"


class _List(NamedTuple):
    op: str            # "AND" | "OR"
    parts: list["_Ast"]


_Ast = Union[_Call, _Unary, _List]


# ----------------------------------------------------------------------------- evaluation nodes

class _Node:
    limit: int | None = None
    prefix: bytes | None = None

    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        """`orig`: the row's cells as given; `cur`: cells after earlier transformations."""
        raise NotImplementedError


class _Prefix(_Node):
    def __init__(self, prefix: bytes) -> None:
        self._p = prefix
        self.prefix = prefix or None

    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        return cur if row.startswith(self._p) else None


class _KeyOnly(_Node):
    def __init__(self, len_as_val: bool) -> None:
        self._lav = len_as_val

    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        if self._lav:   # HBase KeyOnlyFilter(true): the value's length as a 4-byte big-endian int
            return {k: struct.pack(">i", len(v)) for k, v in cur.items()}
        return dict.fromkeys(cur, b"")


class _FirstKeyOnly(_Node):
    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        if not cur:
            return None
        first = min(cur, key=_col_key)
        return {first: cur[first]}


class _ColumnPrefix(_Node):
    def __init__(self, prefix: bytes) -> None:
        self._p = prefix

    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        out = {k: v for k, v in cur.items() if k.partition(b":")[2].startswith(self._p)}
        return out or None


class _Page(_Node):
    def __init__(self, size: int) -> None:
        self.limit: int = size
        self._seen = 0

    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        self._seen += 1
        return cur if self._seen <= self.limit else None


class _SingleColumnValue(_Node):
    def __init__(self, column: bytes, test: Callable[[bytes], bool], if_missing: bool) -> None:
        self._col, self._test, self._if_missing = column, test, if_missing

    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        value = orig.get(self._col)
        if value is None:
            return None if self._if_missing else cur
        return cur if self._test(value) else None


class _And(_Node):
    """MUST_PASS_ALL: transformations pipe left to right; PageFilters count last."""

    def __init__(self, parts: list[_Node]) -> None:
        self._pages = [p for p in parts if isinstance(p, _Page)]
        self._rest = [p for p in parts if not isinstance(p, _Page)]
        limits = [p.limit for p in parts if p.limit is not None]
        self.limit = min(limits) if limits else None
        prefixes = [p.prefix for p in parts if p.prefix is not None]
        # Several prefixes: either one extends the others, or no row can pass anyway.
        self.prefix = max(prefixes, key=len) if prefixes else None

    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        out = cur
        for part in self._rest:
            got = part.eval(row, orig, out)
            if not got:
                return None
            out = got
        passed = [page.eval(row, orig, out) is not None for page in self._pages]
        return out if all(passed) else None


class _Or(_Node):
    """MUST_PASS_ONE: every branch sees the row; the cells emitted are the union.

    `limit` is None (PageFilters under OR still cut rows inside `apply`, but give no
    early-stop hint).  `prefix` is the common prefix of all branches' prefixes, if any.
    """

    def __init__(self, parts: list[_Node]) -> None:
        self._parts = parts
        prefixes = [p.prefix for p in parts]
        if all(p is not None for p in prefixes):
            common = _common_prefix([p for p in prefixes if p is not None])
            self.prefix = common or None

    def eval(self, row: bytes, orig: Cells, cur: Cells) -> Cells | None:
        outs = [out for out in (p.eval(row, orig, cur) for p in self._parts) if out]
        if not outs:
            return None
        merged: Cells = {}
        for out in outs:
            for k, v in out.items():
                # A transformed value (e.g. KeyOnly's b"") wins over the untouched one,
                # as HBase applies the transforms of every branch that included the cell.
                if k not in merged or (merged[k] == cur.get(k) and v != merged[k]):
                    merged[k] = v
        return _sorted(merged)


def _common_prefix(items: list[bytes]) -> bytes:
    lo, hi = min(items), max(items)
    n = 0
    while n < min(len(lo), len(hi)) and lo[n] == hi[n]:
        n += 1
    return lo[:n]


# ----------------------------------------------------------------------------- public API

class RowFilter:
    """A compiled filter string.  Single-use: PageFilter counts rows across `apply` calls.

    limit:  smallest PageFilter size reachable through the top level / AND chains, so the
            store may stop early; None when no such PageFilter (PageFilter under OR gives None).
    prefix: rowkey prefix every passing row must have (PrefixFilter at top level, in an AND
            chain, or common to all branches of an OR); None when unknown.
    """

    limit: int | None
    prefix: bytes | None

    def __init__(self, root: _Node, text: str) -> None:
        self._root = root
        self.text = text
        self.limit = root.limit
        self.prefix = root.prefix

    def apply(self, row: bytes, cells: dict[bytes, bytes]) -> dict[bytes, bytes] | None:
        """Given a row's newest cells {b"family:qualifier": value} (already restricted to the
        requested columns), return the cells to emit (a new dict, columns in sorted order,
        possibly fewer columns / empty values) or None to drop the row.  Never mutates
        `cells`.  A SingleColumnValueFilter column absent from `cells` counts as missing."""
        if not cells:
            return None
        out = self._root.eval(row, cells, cells)
        return _sorted(out) if out else None

    def __repr__(self) -> str:
        return f"RowFilter({self.text!r})"


def compile_filter(text: str | bytes) -> RowFilter:
    """Parse an HBase filter string; call once per scan (the result holds PageFilter state).

    Raises FilterSyntaxError (with 0-based `.position`, a byte offset for bytes input) for a
    malformed string or bad arguments, UnsupportedFilter for a well-formed filter (or
    SKIP / WHILE / regexstring comparator) that hibase does not implement.
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        src, is_bytes = bytes(text).decode("utf-8", "surrogateescape"), True
    elif isinstance(text, str):
        src, is_bytes = text, False
    else:
        raise FilterError(f"filter must be str or bytes, not {type(text).__name__}")
    parser = _Parser(src, is_bytes)
    return RowFilter(parser.build(parser.parse()), src)


# ----------------------------------------------------------------------------- parser

_ARITY: dict[str, tuple[int, ...]] = {
    "PrefixFilter": (1,), "KeyOnlyFilter": (0, 1), "FirstKeyOnlyFilter": (0,),
    "ColumnPrefixFilter": (1,), "PageFilter": (1,), "SingleColumnValueFilter": (4, 6),
}


def _flatten(tree: _List) -> list[_Ast]:
    """Parts of an AND/OR list, with nested (parenthesised) lists of the same kind inlined."""
    out: list[_Ast] = []
    for sub in tree.parts:
        out.extend(_flatten(sub) if isinstance(sub, _List) and sub.op == tree.op else [sub])
    return out


class _Parser:
    def __init__(self, src: str, is_bytes: bool) -> None:
        self.src, self.is_bytes = src, is_bytes
        self.toks = self._lex()
        self.i = 0

    def error(self, message: str, pos: int) -> FilterSyntaxError:
        if self.is_bytes:   # report byte offsets for bytes input
            pos = len(_encode(self.src[:pos]))
        return FilterSyntaxError(message, pos)

    def _lex(self) -> list[_Tok]:
        src, toks, i, n = self.src, [], 0, len(self.src)
        while i < n:
            c = src[i]
            if c in _WS:
                i += 1
            elif c in "(),":
                toks.append(_Tok(c, c, i))
                i += 1
            elif c == "'":
                start, i, buf = i, i + 1, []
                while True:
                    j = src.find("'", i)
                    if j < 0:
                        raise self.error("unterminated string literal", start)
                    buf.append(src[i:j])
                    if src.startswith("''", j):
                        buf.append("'")
                        i = j + 2
                    else:
                        i = j + 1
                        break
                toks.append(_Tok("str", "".join(buf), start))
            else:
                start = i
                while i < n and src[i] not in _WS and src[i] not in "(),'":
                    i += 1
                toks.append(_Tok("word", src[start:i], start))
        toks.append(_Tok("end", "", n))
        return toks

    # -- recursive descent, producing an AST (pure syntax; nothing is built yet)

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def is_kw(self, *words: str) -> bool:
        tok = self.peek()
        return tok.kind == "word" and tok.text in words

    def parse(self) -> _Ast:
        if self.peek().kind == "end":
            raise self.error("empty filter string", 0)
        tree = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            hint = " (operators are upper-case: AND, OR)" if tok.text.upper() in _KEYWORDS else ""
            raise self.error(f"unexpected {tok.text!r} after a complete filter{hint}", tok.pos)
        return tree

    def expr(self) -> _Ast:
        parts = [self.and_expr()]
        while self.is_kw("OR"):
            self.take()
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else _List("OR", parts)

    def and_expr(self) -> _Ast:
        parts = [self.unary()]
        while self.is_kw("AND"):
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else _List("AND", parts)

    def unary(self) -> _Ast:
        if self.is_kw("SKIP", "WHILE"):
            tok = self.take()
            return _Unary(tok.text, tok.pos, self.unary())
        return self.primary()

    def primary(self) -> _Ast:
        tok = self.take()
        if tok.kind == "(":
            tree = self.expr()
            self.expect(")", "')' to match '('")
            return tree
        if tok.kind != "word" or tok.text in _KEYWORDS or not _NAME_RE.match(tok.text):
            what = "end of string" if tok.kind == "end" else repr(tok.text)
            raise self.error(f"expected a filter name or '(', found {what}", tok.pos)
        self.expect("(", f"'(' after filter name {tok.text!r}")
        args: list[_Tok] = []
        if self.peek().kind != ")":
            while True:
                arg = self.take()
                if arg.kind not in ("str", "word"):
                    what = "end of string" if arg.kind == "end" else repr(arg.text)
                    raise self.error(f"expected an argument, found {what}", arg.pos)
                args.append(arg)
                if self.peek().kind != ",":
                    break
                self.take()
        self.expect(")", f"',' or ')' in the arguments of {tok.text}")
        return _Call(tok.text, tok.pos, args)

    def expect(self, kind: str, what: str) -> _Tok:
        tok = self.take()
        if tok.kind != kind:
            found = "end of string" if tok.kind == "end" else repr(tok.text)
            raise self.error(f"expected {what}, found {found}", tok.pos)
        return tok

    # -- building evaluation nodes from the AST

    def build(self, tree: _Ast) -> _Node:
        if isinstance(tree, _Unary):
            raise UnsupportedFilter(tree.op)
        if isinstance(tree, _List):
            parts = [self.build(sub) for sub in _flatten(tree)]
            return _And(parts) if tree.op == "AND" else _Or(parts)
        return self.call(tree)

    def call(self, c: _Call) -> _Node:
        if c.name not in _ARITY:
            raise UnsupportedFilter(c.name)
        counts = _ARITY[c.name]
        if len(c.args) not in counts:
            want = " or ".join(map(str, counts))
            raise self.error(f"{c.name} takes {want} argument(s), got {len(c.args)}", c.pos)
        a = c.args
        if c.name == "PrefixFilter":
            return _Prefix(self.string(a[0]))
        if c.name == "KeyOnlyFilter":
            return _KeyOnly(self.boolean(a[0]) if a else False)
        if c.name == "FirstKeyOnlyFilter":
            return _FirstKeyOnly()
        if c.name == "ColumnPrefixFilter":
            return _ColumnPrefix(self.string(a[0]))
        if c.name == "PageFilter":
            size = self.integer(a[0])
            if size < 0:
                raise self.error("PageFilter size must be >= 0", a[0].pos)
            return _Page(size)
        family, qualifier = self.string(a[0]), self.string(a[1])
        op = self.operator(a[2])
        test = self.comparator(a[3], op)
        if_missing = self.boolean(a[4]) if len(a) == 6 else False
        if len(a) == 6:
            self.boolean(a[5])   # latestVersionOnly: only the newest version is ever seen
        return _SingleColumnValue(family + b":" + qualifier, test, if_missing)

    def string(self, tok: _Tok) -> bytes:
        if tok.kind != "str":
            raise self.error(f"expected a quoted string, found {tok.text!r}", tok.pos)
        try:
            return _encode(tok.text)
        except UnicodeEncodeError:
            raise self.error("string literal is not valid Unicode", tok.pos) from None

    def boolean(self, tok: _Tok) -> bool:
        if tok.kind == "word" and tok.text.lower() in ("true", "false"):
            return tok.text.lower() == "true"
        raise self.error(f"expected true or false, found {tok.text!r}", tok.pos)

    def integer(self, tok: _Tok) -> int:
        if tok.kind == "word" and _INT_RE.match(tok.text):
            return int(tok.text)
        raise self.error(f"expected an integer, found {tok.text!r}", tok.pos)

    def operator(self, tok: _Tok) -> str:
        if tok.kind == "word" and tok.text in _OPS:
            return tok.text
        raise self.error(f"expected a comparison operator (=, !=, <, <=, >, >=), "
                         f"found {tok.text!r}", tok.pos)

    def comparator(self, tok: _Tok, op: str) -> Callable[[bytes], bool]:
        raw = self.string(tok)
        kind, sep, operand = raw.partition(b":")
        holds = _OPS[op]
        if not sep or kind not in (b"binary", b"binaryprefix", b"substring", b"regexstring"):
            raise self.error("expected a comparator 'binary:', 'binaryprefix:', 'substring:' "
                             f"or 'regexstring:', found {tok.text!r}", tok.pos)
        if kind in (b"substring", b"regexstring") and op not in ("=", "!="):
            raise self.error(f"the {kind.decode()} comparator only allows = and !=", tok.pos)
        if kind == b"regexstring":
            raise UnsupportedFilter("regexstring")
        if kind == b"binary":
            return lambda v: holds((v > operand) - (v < operand))
        if kind == b"binaryprefix":
            return lambda v: holds((v[:len(operand)] > operand) - (v[:len(operand)] < operand))
        needle = operand.decode("utf-8", "replace").lower()
        return lambda v: holds(0 if needle in v.decode("utf-8", "replace").lower() else 1)
