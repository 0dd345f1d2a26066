"""Literals lifted out of statement text, so a statement written with its values in the text
costs what the same statement with ``?`` placeholders does (issue 40): the text's shape (each
literal after a comparison operator replaced by ``?``) is parsed once and the literals are
bound as parameters, as ``db.sql(text, params)`` binds them.

A shape is trusted only after it proved itself: the first statement of a shape (and of its
literals' kinds: int, decimal, string) is parsed both ways, and the shape is kept only when
binding its literals gives exactly the tree the full text parses to; a shape that does not
is remembered as such and its statements are parsed whole, as before. Only plain literals are
lifted: integers without a leading zero, decimals without an exponent, single-quoted strings
without a backslash, each right after ``=``, ``<>``, ``!=``, ``<``, ``<=``, ``>``, ``>=``;
text holding placeholders or comments is left alone."""

from __future__ import annotations

import re
from typing import Any, Callable

__all__ = ["lift", "Lifted"]

_TOKEN = re.compile(
    r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|(?P<op><>|!=|<=|>=|=|<|>)(?P<ws>\s*)"""
    r"""(?P<lit>'(?:[^'\\]|'')*'(?!')|(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?![0-9A-Za-z_.'"]))""")
_UNSAFE = re.compile(r"\?|--|/\*|:[A-Za-z_]")


def lift(text: str) -> tuple[str, tuple, str] | None:
    """(shape, values, kinds) of `text` with its liftable literals replaced by ``?``, or None
    when there is nothing to lift or the text may not be lifted (placeholders, comments)."""
    if _UNSAFE.search(_strip_strings(text)):
        return None
    parts: list[str] = []
    values: list[Any] = []
    kinds: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        lit = m.group("lit")
        if lit is None:
            continue
        start = m.start("lit")
        parts.append(text[pos:start])
        parts.append("?")
        pos = m.end("lit")
        if lit[0] == "'":
            values.append(lit[1:-1].replace("''", "'"))
            kinds.append("s")
        elif "." in lit:
            values.append(float(lit))
            kinds.append("f")
        else:
            values.append(int(lit))
            kinds.append("i")
    if not values:
        return None
    parts.append(text[pos:])
    return "".join(parts), tuple(values), "".join(kinds)


def _strip_strings(text: str) -> str:
    """The text without its quoted strings and identifiers (what is checked for placeholders
    and comments)."""
    if "'" not in text and '"' not in text:
        return text
    return re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "''", text)


class Lifted:
    """Shapes proved (or disproved) equal to their statements: `get(text, parse, bind)`
    returns (shape, values) for a text whose shape is proved, parsing and checking the shape
    the first time it is met; None for texts to parse whole. `parse(text)` parses a shape,
    `bind(parsed, values)` binds values into it, for comparison with `parse_text(text)`
    (default `parse`): they must compare equal when they mean the same (the query trees are
    immutable values)."""

    LIMIT = 1024

    def __init__(self) -> None:
        self._shapes: dict[tuple[str, str], bool] = {}  # (shape, kinds) -> proved

    def clear(self) -> None:
        self._shapes.clear()

    def get(self, text: str, parse: Callable[[str], Any], bind: Callable[[Any, tuple], Any],
            parse_text: Callable[[str], Any] | None = None) -> tuple[str, tuple] | None:
        lifted = lift(text)
        if lifted is None:
            return None
        shape, values, kinds = lifted
        key = (shape, kinds)
        proved = self._shapes.get(key)
        if proved is None:
            proved = self._prove(text, shape, values, parse, bind, parse_text or parse)
            if len(self._shapes) >= self.LIMIT:
                self._shapes.clear()
            self._shapes[key] = proved
        return (shape, values) if proved else None

    @staticmethod
    def _prove(text: str, shape: str, values: tuple, parse: Callable[[str], Any],
               bind: Callable[[Any, tuple], Any], parse_text: Callable[[str], Any]) -> bool:
        try:
            return bool(bind(parse(shape), values) == parse_text(text))
        except Exception:  # the shape does not parse or bind: parse such texts whole
            return False
