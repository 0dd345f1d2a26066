"""CONTAINS through a full-text index (index/text.py): the planner's text lookup path.

A conjunct holding ``CONTAINS(f.body, 'quick fox')`` on a column with a ready text index can
take its candidate rows from the index: per OR alternative of the query the intersection of its
words' entries (a prefix word: a range of tokens), the union over alternatives. The rows are
fetched and the whole conjunct checked on them (execute.py), so the index only ever changes
speed; without a text index CONTAINS is evaluated on each row with the same tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..index import (IndexSpec, KeyRange, TextQuery, count_values, key_range,
                     parse_text_query, scan_entries, text_query_text)
from .ast import Contains

__all__ = ["TextLookup", "text_path"]


@dataclass
class TextLookup:
    """The rows of one CONTAINS atom from text index `spec` (candidates: rows are fetched and
    checked)."""

    spec: IndexSpec
    atom: Contains
    query: TextQuery
    used: list
    store: Any = field(default=None, repr=False, compare=False)
    _estimate: int | None = field(default=None, repr=False, compare=False)

    def _range(self, token: str, prefix: bool) -> KeyRange:
        if prefix:
            return key_range(self.spec, [], like_prefix=token)
        return key_range(self.spec, [token])

    @property
    def estimate(self) -> int:
        """Rows by the value table's token counts: per alternative its rarest word's rows
        (a prefix word: its tokens' rows, read up to a cap), summed over alternatives."""
        if self._estimate is None:
            self._estimate = sum(
                min(count_values(self.store, self.spec, self._range(t, p))[0] for t, p in g)
                for g in self.query)
        return self._estimate

    def rows(self, store: Any) -> list[bytes]:
        """The rowkeys holding the query's words, in rowkey order."""
        found: set[bytes] = set()
        for group in self.query:
            keep: set[bytes] | None = None
            for tok, prefix in group:
                rows = {row for row, _ in scan_entries(store, self.spec, self._range(tok, prefix))}
                keep = rows if keep is None else keep & rows
                if not keep:
                    break
            found |= keep or set()
        return sorted(found)

    def describe(self) -> str:
        words = " OR ".join(" AND ".join(repr(t + ("*" if p else "")) for t, p in g)
                            for g in self.query)
        return (f"TEXT INDEX {self.spec.name} ({self.spec.columns[0].decode()}) TOKEN LOOKUP "
                f"{words} (each word's entries, intersected per alternative), est. "
                f"{self.estimate} row(s) by value table; candidates for {self.atom} "
                f"(query {text_query_text(self.query)!r})")


def text_path(store: Any, conjunct: Sequence[Any], specs: list[IndexSpec]
              ) -> TextLookup | None:
    """The text lookup of the conjunct's first CONTAINS atom on a text-indexed column."""
    for atom in conjunct:
        if not isinstance(atom, Contains) or atom.column.cast is not None:
            continue
        for spec in specs:
            if spec.kind == "text" and spec.columns[0] == atom.column.name:
                return TextLookup(spec, atom, parse_text_query(atom.query), [atom], store)
    return None
