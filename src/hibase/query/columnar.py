"""A table of the embedded store read into columns (issue 38's scan feed).

Queries no index answers read the whole table; the lean path does it a row at a time (a dict
of cells per row, then a Python evaluator: ~10 µs a row). Here the table's raw segments are
read in one pass and decoded a column at a time:

1. ``_scan``: every (key, segment) pair of the table's one family, in key order (rocksdict's
   ``items()``: the floor, ~0.6 µs a pair on this project's 2-core machine).
2. ``_layout``: the segments written by one put (the common case, also after a bulk load) are
   parsed *vectorized*: numpy finds, in all segments at once, the msgpack header, checks the
   qualifier list is one the table's rows share (a layout), and walks each value's header to
   its bytes, giving per column an (offset, length) into one buffer. Every other row (several
   segments, a delete marker, a folded row, an unusual layout) is merged by the store's own
   ``cells.merge_values``, so the answer is the lean path's by construction.
3. ``Feed.column``: a declared column decoded by numpy where its encoding allows (integers
   and doubles as text or binary, UTF-8 strings dictionary-encoded when few distinct), each
   cell the codec refuses being NULL and counted (``bad``), exactly as ``codec.decode_cell``
   would (the cells numpy cannot judge go through ``decode_cell`` itself).

A feed is kept per (store, table) while the store's RocksDB sequence number is unchanged (any
write anywhere in the store drops it), so repeated statements over an unchanged table skip
the scan; ``hibase.query.fast`` runs statements over it on DuckDB.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import msgpack

from .. import codec
from ..errors import ValueTypeError
from ..store import cells as C

__all__ = ["Feed", "supported", "feed", "kept", "forget", "CACHE_BYTES"]

CACHE_BYTES = 128 << 20
"""Feeds whose raw cells are larger than this are not kept between statements."""

_MAX_SEQ_KEY = b"\xff" * 8
_lock = threading.Lock()
_cache: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def supported(store: Any, table: str) -> bool:
    """An embedded store's table with one family and no TTL (the fast scan's tables)."""
    if not store.capabilities.fast_scan:
        return False
    try:
        return store.fast_scan_supported(table) and store.write_sequence() is not None
    except Exception:
        return False


def _seq(store: Any) -> int | None:
    return store.write_sequence()


def kept(store: Any, table: str) -> bool:
    """Whether the table's feed from an earlier statement is kept and still current (no write
    since): a statement over it costs no scan."""
    try:
        t = store.table(table)
        seq = _seq(store)
    except Exception:
        return False
    with _lock:
        got = _cache.get(store, {}).get(table)
    return got is not None and got[0] is t and got[1] == seq


def forget() -> None:
    """Drop every kept feed (benchmarks time a cold statement after it)."""
    with _lock:
        _cache.clear()


def feed(store: Any, table: str) -> "Feed":
    """The table's feed: the one kept from an earlier statement when no write happened
    since, else a fresh scan (kept when small enough)."""
    t = store.table(table)
    seq = _seq(store)
    with _lock:
        kept = _cache.get(store, {}).get(table)
    if kept is not None and kept[0] is t and kept[1] == seq:
        return kept[2]
    f = Feed(store, table, t)
    if f.nbytes <= CACHE_BYTES and _seq(store) == seq:
        with _lock:
            tables = _cache.setdefault(store, {})
            tables.pop(table, None)
            while len(tables) >= 2:  # the two tables read last
                tables.pop(next(iter(tables)))
            tables[table] = (t, seq, f)
    return f


class Feed:
    """The rows of one table as columns (see the module docstring). ``n`` rows in key order;
    ``rowkey(i)`` and ``cells(i)`` give row i as the lean path would; ``column(c)`` a declared
    column as (numpy values or an object array, null mask, bad row numbers)."""

    def __init__(self, store: Any, table: str, t: Any):
        import numpy as np

        self.schema = t.schema
        keys, vals = store.raw_segments(table)
        n_seg = len(keys)
        prefixes = [k[:-8] for k in keys]
        # rows of several segments: neighbours with one prefix (keys are sorted)
        multi = [i for i in range(1, n_seg) if prefixes[i] == prefixes[i - 1]] \
            if len(set(prefixes)) != n_seg else []
        self._prefixes: list[bytes]
        self._extra: dict[int, dict[bytes, bytes]] = {}  # row -> cells (rows merged in Python)
        if multi:
            starts = sorted(set(range(n_seg)) - set(multi))
            bounds = starts + [n_seg]
            self._prefixes = [prefixes[s] for s in starts]
            single = []
            for r, (a, b) in enumerate(zip(bounds, bounds[1:])):
                if b - a == 1:
                    single.append(a)
                else:
                    self._extra[r] = C.merge_values(vals[a:b])
            seg_of_row = np.array(starts, dtype=np.int64)
            multi_rows = np.array(sorted(self._extra), dtype=np.int64)
        else:
            self._prefixes = prefixes
            seg_of_row = None
            multi_rows = np.zeros(0, dtype=np.int64)
        n = len(self._prefixes)
        self.n = n
        lens = np.fromiter(map(len, vals), np.int64, n_seg)
        raw = b"".join(vals)
        self._raw = raw
        self.nbytes = len(raw)
        buf = np.frombuffer(raw, np.uint8)
        ends = np.cumsum(lens)
        seg_start = ends - lens
        if seg_of_row is not None:
            seg_start, lens = seg_start[seg_of_row], lens[seg_of_row]
        # per column: (offsets, lengths) into raw, -1 length where the row lacks the column
        self._cols: dict[bytes, tuple[Any, Any]] = {}
        ok = np.zeros(n, dtype=bool)
        if n:
            self._layouts(buf, seg_start, lens, ok, vals, seg_of_row)
        ok[multi_rows] = False
        todo = np.flatnonzero(~ok)
        for r in todo.tolist():
            if r in self._extra:
                continue
            s = r if seg_of_row is None else int(seg_of_row[r])
            self._extra[r] = C.merge_values([vals[s]])
        # the rows merged in Python: their columns join the table's
        for cells in self._extra.values():
            for c in cells:
                if c not in self._cols:
                    self._cols[c] = (np.zeros(n, np.int64), np.full(n, -1, np.int64))
        if self._extra:
            rows = np.fromiter(self._extra, np.int64, len(self._extra))
            for off, ln in self._cols.values():
                ln[rows] = -1
        # rows with no visible cell are no rows (the lean scan skips them)
        self._empty: Any = None
        empties = [r for r, cells in self._extra.items() if not cells]
        if empties:
            keep = np.ones(n, dtype=bool)
            keep[empties] = False
            self._empty = keep
        self._decoded: dict[bytes, Any] = {}

    # -- the vectorized parse -------------------------------------------------------------

    def _layouts(self, buf: Any, start: Any, lens: Any, ok: Any, vals: list[bytes],
                 seg_of_row: Any) -> None:
        """Parse the rows written by one put with a 64-bit timestamp, layout by layout: a
        row is ``ok`` when its whole segment was walked."""
        import numpy as np

        n = len(start)
        size = len(buf)

        def at(pos: Any) -> Any:
            return buf[np.clip(pos, 0, size - 1)].astype(np.int64)

        # [PUT, ts uint64, [quals], [values]]: 0x94 0x00 0xcf <8 bytes> ...
        cand = (lens > 12) & (at(start) == 0x94) & (at(start + 1) == 0x00) & \
            (at(start + 2) == 0xCF)
        tried: set[bytes] = set()
        for _ in range(8):  # at most 8 layouts; the rest are merged in Python
            left = np.flatnonzero(cand & ~ok)
            if not len(left):
                return
            r0 = int(left[0])
            s0 = r0 if seg_of_row is None else int(seg_of_row[r0])
            seg = msgpack.unpackb(vals[s0])
            quals = seg[2]
            qbytes = msgpack.packb(quals, use_bin_type=True)
            if qbytes in tried or len(quals) > 15 or not quals:
                cand[r0] = False
                continue
            tried.add(qbytes)
            q = np.frombuffer(qbytes, np.uint8)
            rows = left
            base = start[rows] + 11
            fits = lens[rows] > 11 + len(q)
            rows, base = rows[fits], base[fits]
            match = (buf[np.minimum(base[:, None] + np.arange(len(q)), size - 1)] == q).all(1)
            rows, pos = rows[match], base[match] + len(q)
            good = at(pos) == 0x90 + len(quals)
            rows, pos = rows[good], pos[good] + 1
            offs, lns = [], []
            for _q in quals:
                h = at(pos)
                ln = np.where(h == 0xC4, at(pos + 1),
                              np.where(h == 0xC5, at(pos + 1) * 256 + at(pos + 2),
                                       at(pos + 1) * 16777216 + at(pos + 2) * 65536
                                       + at(pos + 3) * 256 + at(pos + 4)))
                off = pos + np.where(h == 0xC4, 2, np.where(h == 0xC5, 3, 5))
                good = (h >= 0xC4) & (h <= 0xC6)
                offs.append(off)
                lns.append(np.where(good, ln, -1))
                pos = off + np.where(good, ln, 0)
                pos = np.where(good, pos, -(1 << 40))
            whole = pos == start[rows] + lens[rows]
            for lq in lns:
                whole &= lq >= 0
            rows = rows[whole]
            for qn, off, ln in zip(quals, offs, lns):
                col = self._cols.get(qn)
                if col is None:
                    col = self._cols[qn] = (np.zeros(n, np.int64), np.full(n, -1, np.int64))
                col[0][rows] = off[whole]
                col[1][rows] = ln[whole]
            ok[rows] = True
            cand[rows] = False
            cand[r0] = False

    # -- rows -----------------------------------------------------------------------------

    def live(self) -> Any:
        """A mask of the rows that have a visible cell (None: all of them)."""
        return self._empty

    def rowkey(self, i: int) -> bytes:
        return C.row_of_key(self._prefixes[i] + _MAX_SEQ_KEY)

    def cells(self, i: int, columns: Any = None) -> dict[bytes, bytes]:
        """Row i's {column: newest value} (only ``columns`` when given), as the lean scan
        returns it."""
        extra = self._extra.get(i)
        if extra is not None:
            return extra if columns is None else {c: v for c, v in extra.items()
                                                   if c in columns}
        raw = self._raw
        out = {}
        for c, (off, ln) in self._cols.items():
            if columns is not None and c not in columns:
                continue
            length = int(ln[i])
            if length >= 0:
                o = int(off[i])
                out[c] = raw[o:o + length]
        return out

    def raw_column(self, column: bytes) -> list:
        """The column's cells as bytes (None where a row lacks it)."""
        col = self._cols.get(column)
        if col is None:
            return [None] * self.n
        off, ln = col
        raw = self._raw
        out = [None if b < 0 else raw[a:a + b] for a, b in zip(off.tolist(), ln.tolist())]
        for r, cells in self._extra.items():
            out[r] = cells.get(column)
        return out

    # -- typed columns ---------------------------------------------------------------------

    def column(self, column: bytes, t: Any) -> tuple[Any, Any, list[int]]:
        """Declared column ``column`` of type ``t`` (a codec.ColumnType): (values, null mask,
        rows whose cell does not parse as ``t``, which are NULL). Numbers come as numpy
        arrays, strings as an object array of str (or a pandas Categorical when few values
        repeat), bytes as an object array."""
        key = (column, t)
        got = self._decoded.get(key)  # type: ignore[call-overload]
        if got is None:
            got = self._decode(column, t)
            self._decoded[key] = got  # type: ignore[index]
        return got

    def _decode(self, column: bytes, t: Any) -> tuple[Any, Any, list[int]]:
        import numpy as np

        n = self.n
        col = self._cols.get(column)
        if col is None:
            off, ln = np.zeros(n, np.int64), np.full(n, -1, np.int64)
        else:
            off, ln = col
        extra = {r: cells.get(column) for r, cells in self._extra.items()}
        name = t.name
        if name in ("byte", "short", "int", "long"):
            return self._ints(off, ln, extra, t)
        if name in ("float", "double"):
            return self._floats(off, ln, extra, t)
        if name == "string" and t.length is None:
            return self._strings(off, ln, extra, t)
        return self._generic(off, ln, extra, t)

    def _patch_slow(self, values: Any, null: Any, slow: Any, off: Any, ln: Any, extra: Any,
                    t: Any) -> list[int]:
        """Decode the rows `slow` marks one at a time (_generic) into `values` / `null`;
        returns the rows whose cells do not parse."""
        import numpy as np

        slow_rows = np.flatnonzero(slow).tolist()
        if not slow_rows:
            return []
        obj, onull, obad = self._generic(off, ln, extra, t, slow_rows)
        for i in slow_rows:
            if not onull[i]:
                values[i] = obj[i]
                null[i] = False
        return list(obad)

    def _generic(self, off: Any, ln: Any, extra: dict, t: Any,
                 rows: Any = None) -> tuple[Any, Any, list[int]]:
        """decode_cell per cell (all rows, or only ``rows``): the reference every fast
        decoder falls back to."""
        import numpy as np

        n = self.n
        raw = self._raw
        values = np.empty(n, dtype=object)
        null = np.ones(n, dtype=bool)
        bad = []
        decode = codec.decode_cell
        idx = range(n) if rows is None else rows
        for i in idx:
            if i in extra:
                cell = extra[i]
            else:
                b = int(ln[i])
                cell = None if b < 0 else raw[int(off[i]):int(off[i]) + b]
            if cell is None:
                continue
            try:
                values[i] = decode(t, cell)
                null[i] = False
            except ValueTypeError:
                bad.append(i)
        return values, null, bad

    def _matrix(self, off: Any, ln: Any, width: int) -> Any:
        """(n, width) bytes of each cell, zero-padded (cells longer than width cut)."""
        import numpy as np

        buf = np.frombuffer(self._raw, np.uint8)
        if not len(buf):
            return np.zeros((len(off), width), np.uint8)
        idx = off[:, None] + np.arange(width)
        m = buf[np.minimum(idx, len(buf) - 1)]
        m[np.arange(width)[None, :] >= ln[:, None]] = 0
        return m

    def _ints(self, off: Any, ln: Any, extra: dict, t: Any) -> tuple[Any, Any, list[int]]:
        import numpy as np

        n = self.n
        width = {"byte": 1, "short": 2, "int": 4, "long": 8}[t.name]
        dtype = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[width]
        present = ln >= 0
        slow = np.zeros(n, dtype=bool)
        slow[list(extra)] = True
        values = np.zeros(n, dtype=np.int64)
        if t.binary:
            fast = present & ~slow & (ln == width)
            m = self._matrix(off, ln, width).astype(np.int64)
            v = np.zeros(n, dtype=np.uint64)
            for j in range(width):
                v = (v << np.uint64(8)) | m[:, j].astype(np.uint64)
            values = v.view(np.int64)
            if width < 8:  # sign-extend
                shift = np.int64(64 - 8 * width)
                values = (values << shift) >> shift
            slow |= present & ~fast
        else:
            # text: [+-]?digits, at most 18 digits here (longer ones through the codec)
            m = self._matrix(off, ln, 19)
            first = m[:, 0]
            sign = (first == 0x2B) | (first == 0x2D)
            digits = ln - sign
            pos = np.arange(19)[None, :]
            inside = (pos >= sign[:, None]) & (pos < ln[:, None])
            isdig = (m >= 0x30) & (m <= 0x39)
            fast = present & ~slow & (digits >= 1) & (ln <= 19) & (digits <= 18) & \
                (isdig | ~inside).all(1)
            values = np.zeros(n, dtype=np.int64)
            if fast.any():  # numpy's own parse of the checked digits ([+-]?[0-9]{1,18})
                values[fast] = np.ascontiguousarray(m[fast]).view("S19")[:, 0] \
                    .astype(np.int64)
            lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
            inrange = (values >= lo) & (values <= hi)
            slow |= present & ~fast
            bad_fast = fast & ~inrange
            fast &= inrange
        null = ~fast
        bad: list[int] = [] if t.binary else np.flatnonzero(bad_fast).tolist()
        bad += self._patch_slow(values, null, slow & (present | _mask(n, extra)), off, ln,
                                extra, t)
        return values.astype(dtype), null, sorted(bad)

    def _floats(self, off: Any, ln: Any, extra: dict, t: Any) -> tuple[Any, Any, list[int]]:
        import numpy as np

        n = self.n
        present = ln >= 0
        slow = np.zeros(n, dtype=bool)
        slow[list(extra)] = True
        is32 = t.name == "float"
        if t.binary:
            width = 4 if is32 else 8
            fast = present & ~slow & (ln == width)
            m = self._matrix(off, ln, width)
            values = np.ascontiguousarray(m).view(">f4" if is32 else ">f8")[:, 0] \
                .astype(np.float64)
            slow |= present & ~fast
        else:
            # text of digits, '.', sign and exponent only (inf / nan spellings through the
            # codec); numpy's parse is Python's float() (correctly rounded)
            width = int(ln.max()) if n else 1
            width = max(1, min(width, 40))
            m = self._matrix(off, ln, width)
            ch = (m >= 0x30) & (m <= 0x39) | (m == 0x2E) | (m == 0x2B) | (m == 0x2D) | \
                (m == 0x45) | (m == 0x65)
            inside = np.arange(width)[None, :] < ln[:, None]
            fast = present & ~slow & (ln >= 1) & (ln <= width) & (ch | ~inside).all(1)
            values = np.zeros(n, dtype=np.float64)
            if fast.any():
                texts = np.ascontiguousarray(m[fast]).view(f"S{width}")[:, 0]
                try:
                    values[fast] = texts.astype(np.float64)
                except ValueError:  # some text is not a number: each through the codec
                    slow |= fast
                    fast[:] = False
            finite = np.isfinite(values)
            slow |= fast & ~finite  # 1e400: out of range, as the codec says
            fast &= finite
            if is32:
                with np.errstate(over="ignore"):
                    narrowed = values.astype(np.float32)
                over = fast & ~np.isfinite(narrowed)
                slow |= over
                fast &= ~over
                values = narrowed.astype(np.float64)
            slow |= present & ~fast
        null = ~fast
        bad: list[int] = []
        bad += self._patch_slow(values, null, slow & (present | _mask(n, extra)), off, ln,
                                extra, t)
        return values.astype(np.float32 if is32 else np.float64), null, sorted(bad)

    def _strings(self, off: Any, ln: Any, extra: dict, t: Any) -> tuple[Any, Any, list[int]]:
        import numpy as np

        n = self.n
        raw = self._raw
        present = ln >= 0
        values = np.empty(n, dtype=object)
        null = ~present
        bad: list[int] = []
        width = int(ln.max()) if n and present.any() else 0
        few = None
        if 0 < width <= 32 and n >= 1000:  # dictionary-encode when few distinct values
            m = self._matrix(off, np.where(present, ln, 0), width)
            if not ((m[np.arange(n), np.maximum(ln - 1, 0)] == 0) & (ln > 0)).any():
                fixed = np.ascontiguousarray(m).view(f"S{width}")[:, 0]
                uniq, inverse = np.unique(fixed, return_inverse=True)
                if len(uniq) <= n // 8:
                    few = (uniq, inverse)
        if few is not None:
            uniq, inverse = few
            words = []
            broken = set()
            for j, u in enumerate(uniq.tolist()):
                try:
                    words.append(u.decode("utf-8"))
                except UnicodeDecodeError:
                    words.append(None)
                    broken.add(j)
            codes = inverse.astype(np.int64)
            if broken:
                isbad = np.isin(codes, list(broken)) & present
                bad = np.flatnonzero(isbad).tolist()
                null = null | isbad
            codes = np.where(null, -1, codes)
            for r, cell in extra.items():
                codes[r] = -1
                null[r] = True
            import pandas as pd  # type: ignore[import-untyped]
            cats = [w if w is not None else "" for w in words]
            extra_words = []
            for r, cell in extra.items():
                if cell is None:
                    continue
                try:
                    s = cell.decode("utf-8")
                except UnicodeDecodeError:
                    bad.append(r)
                    continue
                if s not in cats:
                    cats.append(s)
                    extra_words.append(s)
                codes[r] = cats.index(s)
                null[r] = False
            if len(set(cats)) != len(cats):  # a broken word's "" beside a real ""
                few = None
            else:
                return pd.Categorical.from_codes(codes, categories=cats), null, sorted(bad)
        for i, (a, b) in enumerate(zip(off.tolist(), ln.tolist())):
            if b < 0 or i in extra:
                continue
            try:
                values[i] = raw[a:a + b].decode("utf-8")
            except UnicodeDecodeError:
                bad.append(i)
                null[i] = True
        for r, cell in extra.items():
            null[r] = True
            if cell is None:
                continue
            try:
                values[r] = cell.decode("utf-8")
                null[r] = False
            except UnicodeDecodeError:
                bad.append(r)
        return values, null, sorted(bad)


def _mask(n: int, extra: dict) -> Any:
    import numpy as np

    m = np.zeros(n, dtype=bool)
    if extra:
        m[[r for r, c in extra.items() if c is not None]] = True
    return m
