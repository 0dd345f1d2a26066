"""The embedded store's filtered scan: rows of one range whose raw segments pass a byte
prefilter, merged and handed to an exact row test, without building the generic scan's
per-row (timestamp, value) dicts.

Full scans are where a query with no usable index spends its time, so this loop is kept to the
few operations a row needs: read the (key, segment) pairs, group a row's segments, and, when the
caller gives `needles`, skip the row unless its raw segment bytes contain the needles of at least
one alternative (a cell's bytes appear verbatim in a msgpack segment, so a row whose cell equals
a value must contain that value's bytes: a necessary test, never a sufficient one). Only the rows
that pass are unpacked and merged; `keep(row, cells)` then decides exactly.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from .. import cells as C
from .rocks import verify_end
from ..schema import FOREVER

__all__ = ["supports_fast_scan", "filtered_rows", "prefilter"]

_MAX_SEQ_KEY = b"\xff" * 8
Needles = Sequence[Sequence[Sequence[bytes]]]  # alternatives of [atoms of [any-of needles]]


def supports_fast_scan(store: Any, table: str) -> bool:
    """One family without a TTL (an EmbeddedStore's table): the newest value of each cell is
    all a row needs, so segments merge without timestamps."""
    t = store._tables.get(table)
    if t is None or len(t.fams) != 1:
        return False
    _, _, fo = next(iter(t.fams.values()))
    return fo.time_to_live == FOREVER


def prefilter(needles: Needles | None) -> Callable[[bytes], bool] | None:
    """A test on a row's raw segment bytes from needle alternatives (None: every row passes):
    some alternative whose every atom has one of its needles in the bytes."""
    if not needles or any(not alt for alt in needles):
        return None  # an alternative without needles can match any row
    if len(needles) == 1 and all(len(atom) == 1 for atom in needles[0]):
        flat = [atom[0] for atom in needles[0]]
        if len(flat) == 1:
            n1 = flat[0]
            return lambda raw: n1 in raw
        if len(flat) == 2:
            n1, n2 = flat
            return lambda raw: n1 in raw and n2 in raw
        return lambda raw: all(n in raw for n in flat)
    if all(len(alt) == 1 for alt in needles):  # OR of single atoms: any needle of any
        anyof = [n for alt in needles for n in alt[0]]
        return lambda raw: any(n in raw for n in anyof)
    alts = [[tuple(atom) for atom in alt] for alt in needles]
    return lambda raw: any(all(any(n in raw for n in atom) for atom in alt) for alt in alts)


def filtered_rows(store: Any, table: str, start: bytes | None, stop: bytes | None,
                  needles: Needles | None, keep: Callable[[bytes | None, dict], bool] | None
                  ) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
    """(rowkey, {column: newest value}) of the rows in [start, stop) that pass the needle
    prefilter and `keep`, in key order; rows with no visible cell are never yielded. The table
    must pass supports_fast_scan. A `keep` whose attribute needs_row is False is passed None
    as the rowkey (decoding the key of every row costs more than the test); one with a
    for_layout attribute (query/scan.py's layout_tests) tests rows written by one put on
    their value list, by position, and builds the dict only for the rows it keeps."""
    t = store.table(table)
    view = next(iter(t.fams.values()))[0]
    first = C.row_prefix(start) if start else None
    bound = C.row_prefix(stop) if stop else None
    test = prefilter(needles)
    by_row = getattr(keep, "needs_row", True)  # False: keep never reads the rowkey
    # keep.for_layout(qualifiers) -> test(values) or None: a put's row tested by position
    layouts = getattr(keep, "for_layout", None)
    last_quals: object = None
    by_layout = None
    unpack, merge, row_of_key, PUT = C.unpack, C.merge_values, C.row_of_key, C.PUT
    items = view.items(from_key=first)
    cur = None
    segs: list[bytes] = []
    # the loop body is written out twice (inside and after) rather than through a helper:
    # one extra call per row is a tenth of this loop's cost
    for key, value in items:
        prefix = key[:-8]
        if prefix == cur:
            segs.append(value)
            continue
        if bound is not None and key >= bound:
            break
        if segs:
            if len(segs) == 1:
                if test is None or test(segs[0]):
                    seg = unpack(segs[0])
                    if seg[0] != PUT:
                        cells = merge(segs)
                    elif layouts is None:
                        cells = dict(zip(seg[2], seg[3]))
                    else:  # a put's values tested by position, the dict only for a match
                        quals = seg[2]
                        if quals != last_quals:
                            last_quals, by_layout = quals, layouts(quals)
                        if by_layout is not None:
                            if quals and by_layout(seg[3]):
                                yield (row_of_key(cur + _MAX_SEQ_KEY),  # type: ignore[operator]
                                       dict(zip(quals, seg[3])))
                            cur, segs = prefix, [value]
                            continue
                        cells = dict(zip(quals, seg[3]))
                    if cells:
                        if keep is None:
                            yield row_of_key(cur + _MAX_SEQ_KEY), cells  # type: ignore[operator]
                        elif not by_row:
                            if keep(None, cells):
                                yield row_of_key(cur + _MAX_SEQ_KEY), cells  # type: ignore
                        else:
                            row = row_of_key(cur + _MAX_SEQ_KEY)  # type: ignore[operator]
                            if keep(row, cells):
                                yield row, cells
            elif test is None or test(b"".join(segs)):
                cells = merge(segs)
                if cells:
                    row = row_of_key(cur + _MAX_SEQ_KEY)  # type: ignore[operator]
                    if keep is None or keep(row, cells):
                        yield row, cells
        cur, segs = prefix, [value]
    else:  # ran out, not stopped at `bound`: its end must be the data's, not a bad block's
        verify_end(view, key if cur is not None else None, first)
    if segs and (test is None or test(b"".join(segs))):
        cells = merge(segs)
        if cells:
            row = row_of_key(cur + _MAX_SEQ_KEY)  # type: ignore[operator]
            if keep is None or keep(row, cells):
                yield row, cells
