"""Hypothesis strategies the property tests share: WHERE conditions in SQL text, over columns
whose literals a test gives (test_query_property.py, test_fast_scan.py)."""

from __future__ import annotations

from typing import Mapping, Sequence

import hypothesis.strategies as st

__all__ = ["atoms", "conditions"]

COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")


@st.composite
def atoms(draw, literals: Mapping[str, st.SearchStrategy[str]], kinds: Sequence[str],
          comparisons: Sequence[str], like: Mapping[str, Sequence[str]], not_like: bool) -> str:
    """One atom on a column of `literals` (SQL name -> its literals): of a kind in `kinds`
    ("cmp": an operator of `comparisons`; "eq": =; "between", "in", "null", "like"). LIKE is
    asked only of a column in `like` (-> the prefixes it tries), with NOT LIKE too when
    `not_like`; another column's gets IS NOT NULL."""
    col = draw(st.sampled_from(sorted(literals)))
    kind = draw(st.sampled_from(list(kinds)))
    lit = literals[col]
    if kind in ("cmp", "eq"):
        op = "=" if kind == "eq" else draw(st.sampled_from(list(comparisons)))
        return f"{col} {op} {draw(lit)}"
    if kind == "between":
        return f"{col} BETWEEN {draw(lit)} AND {draw(lit)}"
    if kind == "in":
        return f"{col} IN ({', '.join(draw(st.lists(lit, min_size=1, max_size=3)))})"
    if kind == "null":
        return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if col in like:
        neg = draw(st.sampled_from(['', 'NOT '])) if not_like else ""
        return f"{col} {neg}LIKE '{draw(st.sampled_from(list(like[col])))}%'"
    return f"{col} IS NOT NULL"


def conditions(leaves: st.SearchStrategy[str], max_leaves: int) -> st.SearchStrategy[str]:
    """Conditions of `leaves` joined by AND, OR and NOT, up to max_leaves atoms."""
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map(lambda p: f"({p[0]} AND {p[1]})"),
            st.tuples(inner, inner).map(lambda p: f"({p[0]} OR {p[1]})"),
            inner.map(lambda c: f"NOT ({c})"),
        ),
        max_leaves=max_leaves,
    )
