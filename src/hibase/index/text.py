"""Full-text indexes (kind "text"): the tokenizer, CONTAINS queries and a row's token entries.

A text index is a one-column VARCHAR index whose row has one entry per distinct token of its
column instead of one per value:

    alias | encoded token | user rowkey   ->   msgpack []        (value table: token -> rows)

so lookups, counts, the verified protocol and the cache work on it as on any index (a token is
the "value"). Upkeep compares a row's token sets before and after a write (`token_keys`).

Tokens: maximal runs of characters of Unicode general category L* (Lu, Ll, Lt, Lm, Lo) or Nd,
each lower-cased as a whole (Python's str.lower, Java's String.toLowerCase(Locale.ROOT): full
case mapping, final sigma included), kept when at most TOKEN_MAX code points long. That is
`c.isalpha() or c.isdecimal()` here and `Character.isLetterOrDigit` in the coprocessor
(Tokens.java) -- not str.isalnum, which also takes No / Nl (², ½, Ⅻ). Golden vectors
(tests/codec_vectors.py, "tokens") hold both to it. No stemming and no stop words: no
maintained stemmer has a Java twin that provably gives the same stems, and a region server
computing other tokens than the clients would make the index wrong.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable

from .. import codec, errors

__all__ = ["TEXT", "TOKEN_MAX", "tokenize", "token_set", "parse_query", "matches", "contains",
           "row_tokens", "token_keys", "query_text"]

TEXT = "text"
TOKEN_MAX = 64  # code points; a longer run is no token (a key stays short; Java the same)

_WORD = re.compile(r"[^\W_]+")  # runs of str.isalnum: a superset, split further when not ASCII


_ASCII_WORD = re.compile(r"[a-z0-9]+")  # the rule on ASCII text, lower-cased first


def _split(run: str) -> Iterable[str]:
    """The L*/Nd runs of one str.isalnum run (which may hold No / Nl characters)."""
    if run.isalpha() or run.isascii():
        yield run
        return
    start = None
    for i, c in enumerate(run):
        if c.isalpha() or c.isdecimal():
            if start is None:
                start = i
        elif start is not None:
            yield run[start:i]
            start = None
    if start is not None:
        yield run[start:]


def tokenize(text: str) -> list[str]:
    """The tokens of `text` in order (repeats kept), by the module's rule. ASCII text (most
    of it, and every query word) is lower-cased whole and read by one regex, the same rule:
    ASCII case mapping has no context and changes no length."""
    if text.isascii():
        return [t for t in _ASCII_WORD.findall(text.lower()) if len(t) <= TOKEN_MAX]
    out = []
    for run in _WORD.findall(text):
        for part in _split(run):
            tok = part.lower()
            if len(tok) <= TOKEN_MAX:
                out.append(tok)
    return out


def token_set(text: str | None) -> frozenset[str]:
    """The distinct tokens of `text` (none for None)."""
    return frozenset(tokenize(text)) if text else frozenset()


# -- CONTAINS queries -------------------------------------------------------------------------
Term = tuple[str, bool]  # (token, prefix?)
Query = tuple[tuple[Term, ...], ...]  # alternatives (OR) of conjunctions (AND) of terms


@functools.lru_cache(maxsize=256)
def parse_query(q: Any) -> Query:
    """CONTAINS's query text: words (all must occur), `OR` (upper case) between alternatives,
    `word*` a prefix. Each word is tokenized as the column is ('e-mail' needs both 'e' and
    'mail'); the last token of a word ending in '*' is a prefix. Clear errors for an empty
    query or alternative."""
    if not isinstance(q, str):
        raise errors.QueryPlanError(f"CONTAINS takes a string query, not {q!r}")
    groups: list[list[Term]] = [[]]
    for word in q.split():
        if word == "OR":
            groups.append([])
            continue
        prefix = word.endswith("*")
        toks = tokenize(word.rstrip("*") if prefix else word)
        for i, tok in enumerate(toks):
            groups[-1].append((tok, prefix and i == len(toks) - 1))
    if any(not g for g in groups):
        raise errors.QueryPlanError(
            f"CONTAINS query {q!r} has no word to look for"
            + (" in one of its OR alternatives" if len(groups) > 1 else "")
            + " (words are runs of letters and digits)")
    return tuple(tuple(dict.fromkeys(g)) for g in groups)


def matches(query: Query, tokens: frozenset[str] | set[str]) -> bool:
    """Whether a row with `tokens` satisfies the parsed query."""
    for group in query:
        for tok, prefix in group:
            if prefix:
                if not any(t.startswith(tok) for t in tokens):
                    break
            elif tok not in tokens:
                break
        else:
            return True
    return False


def contains(text: str | None, q: str) -> bool | None:
    """CONTAINS(column, q) on one value: None (UNKNOWN) for NULL, as LIKE."""
    if text is None:
        return None
    return matches(parse_query(q), token_set(text))


def query_text(query: Query) -> str:
    """A parsed query written back (EXPLAIN)."""
    return " OR ".join(" ".join(t + ("*" if p else "") for t, p in g) for g in query)


# -- a row's entries --------------------------------------------------------------------------
def row_tokens(spec: Any, cells: dict, timestamped: bool = False) -> frozenset[str]:
    """The tokens of a row's indexed column ({column: raw} or {column: (ts, raw)}); none when
    the cell is absent or does not parse as VARCHAR (another writer's bytes: NULL, as queries
    read it)."""
    cell = cells.get(spec.columns[0]) if cells else None
    if cell is None:
        return frozenset()
    raw = cell[1] if timestamped else cell
    try:
        text = codec.decode_cell(spec.types[0], raw)
    except errors.ValueTypeError:
        return frozenset()
    return token_set(text)


def token_key(spec: Any, token: str) -> bytes:
    """The value key of one token: alias | encoded token."""
    return spec.alias + codec.encode_key(spec.types[0], token)


def token_keys(spec: Any, cells: dict, timestamped: bool = False) -> set[bytes]:
    """The value keys of every entry a row has in text index `spec`."""
    return {token_key(spec, t) for t in row_tokens(spec, cells, timestamped)}


def diff(spec: Any, row: bytes, before: dict, after: dict, changes: list, change: Any) -> None:
    """Append one row's text-index changes (maintain.Change, as `change`): an entry deleted
    per token gone, one added per new token; unchanged tokens write nothing."""
    old = token_keys(spec, before, True)
    new = token_keys(spec, after, True)
    if old == new:
        return
    for key in old - new:
        changes.append(change(spec, row, None, key, None))
    for key in new - old:
        changes.append(change(spec, row, [], None, key))


# the names the query layer takes them by (hibase.index's face)
TextQuery = Query
contains_text, parse_text_query, text_query_text = contains, parse_query, query_text
