"""The embedded store's on-disk cell layout: per (table, family) a sorted keyspace of row segments.

A *segment* is what one mutation wrote to one row's family, like the KeyValues one HBase Put or
Delete adds to the MemStore: a put writes the cells it names (cost O(cells written), never
O(row size)), a delete writes a marker. Keys sort as HBase's do:

    escaped rowkey | 0x00 0x01 | 8-byte inverted write sequence    (newest segment first)

so a row is one contiguous key range, rows sort as raw bytes, and a reader merges a row's segments
newest first. Compaction folds a row's segments into one (versions trimmed, markers applied).
Segment values are msgpack lists:

    [PUT, ts, [qualifier...], [value...]]
    [DELETE_COLUMNS, upto_ts, [qualifier...]]   versions with ts <= upto_ts, written earlier
    [DELETE_FAMILY, upto_ts]
    [FOLDED, [qualifier...], [[ts, value, ts, value...]...]]   versions newest first

A FOLDED segment is a row's *base*: it is only ever written with every older segment of the row
deleted in the same batch, so a reader stops at it (`is_base`) and never walks the deleted keys
behind it (RocksDB keeps them as tombstones until it compacts them away). A fold that leaves
nothing still writes an empty base (`EMPTY_BASE`) so later segments of the row stop there too.
"""

from __future__ import annotations

from typing import Any, Collection, Iterable, Iterator

import msgpack

from .schema import split_column

__all__ = [
    "PUT", "DELETE_COLUMNS", "DELETE_FAMILY", "FOLDED", "ALL_VERSIONS", "TERM",
    "row_prefix", "segment_key", "row_of_key", "merge_segments", "merge_latest", "merge_values", "fold", "pack", "mutation_segments",
    "unpack", "is_base", "EMPTY_BASE",
]

PUT, DELETE_COLUMNS, DELETE_FAMILY, FOLDED = 0, 1, 2, 3
ALL_VERSIONS = (1 << 63) - 1  # "delete every version": an upper bound above any timestamp
TERM = b"\x00\x01"
_SEQ_MAX = (1 << 64) - 1

pack = msgpack.Packer(use_bin_type=True).pack
unpack = msgpack.unpackb
EMPTY_BASE = pack([FOLDED, [], []])  # a fold that left nothing: still a base readers stop at


def is_base(segment: bytes) -> bool:
    """Whether a segment is a FOLDED base (its kind is the msgpack fixint at byte 1): nothing
    of the row older than it is live."""
    return segment[1] == FOLDED


def row_prefix(row: bytes) -> bytes:
    """The key prefix shared by every segment of `row` (0x00 escaped so order is preserved)."""
    if b"\x00" in row:
        row = row.replace(b"\x00", b"\x00\xff")
    return row + TERM


def segment_key(prefix: bytes, seq: int) -> bytes:
    return prefix + (_SEQ_MAX - seq).to_bytes(8, "big")


def row_of_key(key: bytes) -> bytes:
    """The user rowkey of a segment key."""
    row = key[:-10]
    if b"\x00" in row:
        row = row.replace(b"\x00\xff", b"\x00")
    return row


def merge_segments(segments: Iterable[bytes], wanted: frozenset[bytes] | None
                   ) -> dict[bytes, list[tuple[int, bytes]]]:
    """Merge a row's segments (newest first) into {qualifier: [(ts, value), ...]}.

    Versions come back in arbitrary order (callers sort when they need more than the newest).
    A marker hides the versions it covers in older segments only: a put written after a delete
    is visible even with an older timestamp (HBase 2's "new version behavior"). At equal
    timestamps the newer segment wins, as a later HBase put of the same cell does.
    """
    cells: dict[bytes, list[tuple[int, bytes]]] = {}
    family_del = -1
    column_del: dict[bytes, int] = {}
    # (loops, not all(generator): this is every read's and every indexed write's inner loop)
    for raw in segments:
        seg = unpack(raw)
        kind = seg[0]
        if kind == PUT:
            ts = seg[1]
            if ts <= family_del:
                continue
            for q, v in zip(seg[2], seg[3]):
                if wanted is not None and q not in wanted:
                    continue
                if column_del and ts <= column_del.get(q, -1):
                    continue
                versions = cells.get(q)
                if versions is None:
                    cells[q] = [(ts, v)]
                else:
                    for t, _ in versions:
                        if t == ts:
                            break
                    else:
                        versions.append((ts, v))
        elif kind == DELETE_COLUMNS:
            upto = seg[1]
            for q in seg[2]:
                if column_del.get(q, -1) < upto:
                    column_del[q] = upto
        elif kind == DELETE_FAMILY:
            family_del = max(family_del, seg[1])
        else:  # FOLDED
            for q, flat in zip(seg[1], seg[2]):
                if wanted is not None and q not in wanted:
                    continue
                floor = family_del
                if column_del:
                    floor = max(floor, column_del.get(q, -1))
                versions = cells.get(q)
                if versions is None and floor < 0:  # the common case: nothing to compare
                    cells[q] = ([(flat[0], flat[1])] if len(flat) == 2
                                else list(zip(flat[::2], flat[1::2])))
                    continue
                for i in range(0, len(flat), 2):
                    ts = flat[i]
                    if ts <= floor:
                        continue
                    if versions is None:
                        versions = cells[q] = [(ts, flat[i + 1])]
                        continue
                    for t, _ in versions:
                        if t == ts:
                            break
                    else:
                        versions.append((ts, flat[i + 1]))
    return cells


def _latest_unmarked(segments: list[bytes], wanted: frozenset[bytes] | None
                     ) -> dict[bytes, tuple[int, bytes]] | None:
    """merge_latest of segments holding no delete marker (None if one does): the newest
    timestamp of each cell wins, the newer segment at equal timestamps (it is seen first)."""
    out: dict[bytes, tuple[int, bytes]] = {}
    get = out.get
    for raw in segments:
        seg = unpack(raw)
        kind = seg[0]
        if kind == PUT:
            ts = seg[1]
            for q, v in zip(seg[2], seg[3]):
                if wanted is not None and q not in wanted:
                    continue
                cur = get(q)
                if cur is None or ts > cur[0]:
                    out[q] = (ts, v)
        elif kind == FOLDED:  # versions newest first: the first is the cell's newest
            for q, flat in zip(seg[1], seg[2]):
                if wanted is not None and q not in wanted:
                    continue
                cur = get(q)
                if cur is None or flat[0] > cur[0]:
                    out[q] = (flat[0], flat[1])
        else:
            return None
    return out


def merge_latest(segments: list[bytes], wanted: frozenset[bytes] | None
                 ) -> dict[bytes, tuple[int, bytes]]:
    """{qualifier: (ts, value)} of the newest visible version of each cell: what most reads
    want. A row written by one put (the common case) is decoded without the general merge."""
    if len(segments) == 1:
        seg = unpack(segments[0])
        if seg[0] == PUT:
            ts = seg[1]
            if wanted is None:
                return {q: (ts, v) for q, v in zip(seg[2], seg[3])}
            return {q: (ts, v) for q, v in zip(seg[2], seg[3]) if q in wanted}
        if seg[0] == FOLDED:  # a folded row alone: its versions are newest first
            if wanted is None:
                return {q: (f[0], f[1]) for q, f in zip(seg[1], seg[2])}
            return {q: (f[0], f[1]) for q, f in zip(seg[1], seg[2]) if q in wanted}
    elif len(segments) <= 8:  # an updated row (writes fold it at 5 segments): no versions kept
        out = _latest_unmarked(segments, wanted)
        if out is not None:
            return out
    return {q: max(vs) for q, vs in merge_segments(segments, wanted).items()}


def merge_values(segments: list[bytes], wanted: frozenset[bytes] | None = None
                 ) -> dict[bytes, bytes]:
    """{qualifier: value} of the newest versions, without timestamps (row() and scan()'s hot
    path)."""
    if len(segments) == 1:
        seg = unpack(segments[0])
        if seg[0] == PUT:
            if wanted is None:
                return dict(zip(seg[2], seg[3]))
            return {q: v for q, v in zip(seg[2], seg[3]) if q in wanted}
        if seg[0] == FOLDED:  # a folded row alone: its versions are newest first
            if wanted is None:
                return {q: f[1] for q, f in zip(seg[1], seg[2])}
            return {q: f[1] for q, f in zip(seg[1], seg[2]) if q in wanted}
    elif len(segments) <= 8:
        out = _latest_unmarked(segments, wanted)
        if out is not None:
            return {q: tv[1] for q, tv in out.items()}
    return {q: max(vs)[1] for q, vs in merge_segments(segments, wanted).items()}


def fold(cells: dict[bytes, list[tuple[int, bytes]]], max_versions: int,
         ttl_floor: int) -> bytes | None:
    """One FOLDED segment holding the live versions of merged cells, or None if nothing lives."""
    quals, flats = [], []
    for q in sorted(cells):
        versions = cells[q]
        if len(versions) == 1:  # the common case, kept short
            ts, v = versions[0]
            if ts >= ttl_floor:
                quals.append(q)
                flats.append([ts, v])
            continue
        versions = sorted(versions, reverse=True)[:max_versions]
        flat: list = []
        for ts, v in versions:
            if ts >= ttl_floor:
                flat += (ts, v)
        if flat:
            quals.append(q)
            flats.append(flat)
    return pack([FOLDED, quals, flats]) if quals else None


def mutation_segments(families: Collection[bytes], m: Any, ts: int | None
                      ) -> Iterator[tuple[bytes, bytes]]:
    """(family, segment) pairs one Mutation writes: a put's cells grouped by family, a
    delete's markers (whole row, families, columns) up to its timestamp. Both backends store
    these same segments."""
    if m.kind == "put":
        data = m.data
        if len(families) == 1:  # one family: no grouping (put data was checked upstream)
            yield next(iter(families)), pack([PUT, ts, list(data), list(data.values())])
            return
        by_fam: dict[bytes, tuple[list, list]] = {}
        for col, value in m.data.items():
            fam = col[:col.index(b":")]
            entry = by_fam.get(fam)
            if entry is None:
                entry = by_fam[fam] = ([], [])
            entry[0].append(col)
            entry[1].append(value)
        for fam, (cols, values) in by_fam.items():
            yield fam, pack([PUT, ts, cols, values])
        return
    upto = ALL_VERSIONS if m.ts is None else m.ts
    if m.data is None:
        for fam in families:
            yield fam, pack([DELETE_FAMILY, upto])
        return
    cols_by_fam: dict[bytes, list[bytes]] = {}
    whole: set[bytes] = set()
    for col in m.data:
        fam, qual = split_column(col)
        if qual is None:
            whole.add(fam)
        else:
            cols_by_fam.setdefault(fam, []).append(col)
    for fam in whole:
        yield fam, pack([DELETE_FAMILY, upto])
    for fam, cols in cols_by_fam.items():
        if fam not in whole:
            yield fam, pack([DELETE_COLUMNS, upto, cols])
