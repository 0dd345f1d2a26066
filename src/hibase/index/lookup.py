"""Reading a global index: entries for an equal prefix of its columns, for a range on the next
column, and the value table's counts (selectivity for the planner, values for range walks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from ..store.api import Store
from .. import codec
from ..store import cells as C
from . import local, verified
from .spec import IndexSpec, count_settled, decode_count, index_table, value_table

__all__ = ["KeyRange", "key_range", "null_range", "scan_entries", "scan_points",
           "count_values", "count_points", "walk_values", "entries_for_value"]


@dataclass(frozen=True)
class KeyRange:
    """Encoded bounds [start, stop) inside one index (alias included); `known` = how many
    leading columns are fixed by equality (their encoding length is `prefix_len`)."""

    start: bytes
    stop: bytes | None
    known: int
    prefix_len: int


def key_range(spec: IndexSpec, equal: Sequence[Any], low: Any = None, high: Any = None,
              low_inclusive: bool = True, high_inclusive: bool = True,
              like_prefix: str | bytes | None = None, not_null: bool = False) -> KeyRange:
    """Bounds of entries whose first len(equal) columns equal `equal` and whose next column is
    within [low, high] (either side open when None), starts with `like_prefix`, or (not_null)
    is merely present."""
    prefix = spec.prefix_key(equal)
    known = len(equal)
    flag = b"" if known == 0 else b"\x01"  # later columns carry a present / NULL flag
    if like_prefix is not None:
        raw = like_prefix.encode() if isinstance(like_prefix, str) else like_prefix
        p = prefix + flag + codec.escape_prefix(raw)
        return KeyRange(p, codec.prefix_successor(p), known, len(prefix))
    if low is None and high is None:
        p = prefix + flag if not_null else prefix
        return KeyRange(p, codec.prefix_successor(p), known, len(prefix))
    start, stop = prefix + flag, codec.prefix_successor(prefix + flag)
    if low is not None:
        lo = prefix + spec.column_bound(known, low)
        start = lo if low_inclusive else (codec.prefix_successor(lo) or lo)
    if high is not None:
        hi = prefix + spec.column_bound(known, high)
        stop = codec.prefix_successor(hi) if high_inclusive else hi
    return KeyRange(start, stop, known, len(prefix))


def null_range(spec: IndexSpec) -> KeyRange:
    """The entries of the index's NULL list (rows lacking its first column; spec.py): one
    value, so a point lookup (known covers every column and the rowkey follows the alias)."""
    alias = spec.null_alias
    if alias is None:
        raise ValueError(f"index {spec.name!r} keeps no NULL entries")
    return KeyRange(alias, codec.prefix_successor(alias), len(spec.types), len(alias))


def scan_entries(store: Store, spec: IndexSpec, rng: KeyRange, reverse: bool = False
                 ) -> Iterator[tuple[bytes, list]]:
    """(user rowkey, covered values) of every entry in the range, in index order."""
    full = rng.known == len(spec.types)
    plen = rng.prefix_len
    unpack = C.unpack
    for key, value in verified.scan(store, index_table(spec.table), [spec], rng.start,
                                    rng.stop, reverse):
        row = key[plen:] if full else spec.entry_row(key, plen, rng.known)
        yield row, unpack(value)


def scan_entry_keys(store: Store, spec: IndexSpec, start: bytes | None, stop: bytes | None,
                    reverse: bool = False) -> Iterator[bytes]:
    """The entry keys (value key + rowkey) of the index in [start, stop), in index order (or
    reversed): for walks that read values and rowkeys off the keys."""
    for key, _ in verified.scan(store, index_table(spec.table), [spec], start, stop, reverse):
        yield key


def scan_points(store: Store, spec: IndexSpec, vkeys: list[bytes]) -> Iterator[tuple[bytes, list]]:
    """(user rowkey, covered values) of the entries of many full values (a long IN list) in
    one ordered scan from the smallest value to the largest, keeping the entries whose value is
    asked for: one read of that stretch of the index instead of a lookup per value."""
    if not vkeys:
        return
    wanted = set(vkeys)
    unpack = C.unpack
    entry_row = spec.entry_row
    for key, value in verified.scan(store, index_table(spec.table), [spec], min(vkeys),
                                    codec.prefix_successor(max(vkeys))):
        row = entry_row(key)
        if key[:len(key) - len(row)] in wanted:
            yield row, unpack(value)


def count_points(store: Store, spec: IndexSpec, vkeys: list[bytes]) -> tuple[int, bool]:
    """Rows of many full values by their value-table counts: (count, exact; not while one is
    unsettled). One walk of the value table from the smallest to the largest value while it
    holds no more values than asked for (a 100,000-value list over a small index), else one
    multi-get."""
    if not vkeys:
        return 0, True
    vt = value_table(spec.table)
    wanted = set(vkeys)
    total = seen = 0
    exact = True
    for key, raw in store.kv_scan(vt, min(vkeys), codec.prefix_successor(max(vkeys))):
        seen += 1
        if seen > len(wanted):
            break
        if key in wanted:
            total += decode_count(raw)
            exact &= count_settled(raw)
    else:
        return total, exact
    got = [raw for raw in store.kv_get(vt, vkeys) if raw]
    return sum(map(decode_count, got)), all(map(count_settled, got))


def entries_for_value(store: Store, spec: IndexSpec, vkey: bytes) -> list[tuple[bytes, list]]:
    """Every entry of one full value (a value-table key): HiBase's point lookup, which is also
    the unit the hot cache stores."""
    stop = codec.prefix_successor(vkey)
    n = len(vkey)
    unpack = C.unpack
    return [(key[n:], unpack(value))
            for key, value in verified.scan(store, index_table(spec.table), [spec], vkey, stop)]


def walk_values(store: Store, spec: IndexSpec, rng: KeyRange
                ) -> Iterator[tuple[bytes, int, bool]]:
    """(value key, row count, whether the count is exact: base.count_settled) from the value
    table for every value in the range: a superset of the values with rows."""
    for key, raw in store.kv_scan(value_table(spec.table), rng.start, rng.stop):
        yield key, decode_count(raw), count_settled(raw)


def count_values(store: Store, spec: IndexSpec, rng: KeyRange, cap: int = 2000, router: Any = None
                 ) -> tuple[int, bool]:
    """Rows in the range by value-table counts: (count, exact). Exact single-value lookups cost
    one get; wider ranges read at most `cap` values and report a lower bound. A local index
    sums its per-region counts (local.count_values)."""
    if spec.local:
        return local.count_values(store, spec, rng, cap, router)
    if rng.known == len(spec.types) and rng.stop == codec.prefix_successor(rng.start):
        got = store.kv_get(value_table(spec.table), [rng.start])[0]
        return (decode_count(got), count_settled(got)) if got else (0, True)
    total = 0
    exact = True
    for i, (_, n, settled) in enumerate(walk_values(store, spec, rng)):
        if i >= cap:
            return total, False
        total += n
        exact &= settled
    return total, exact
