"""Split counting Bloom filters (SCBF, SPEC §3), their scalable stack, and Fan et al.'s counting
Bloom filter (CBF) for comparison: the master's global index asks them "may server R hold value v?".

Counters are bit-packed: ``counter_bits`` (1..8) bits each, so a filter of M counters holds
``ceil(k*m*bits/8) + 1`` bytes (4-bit counters at M = 368,640: 184,321 bytes; the paper's "45 KB"
counts one bit per counter). A counter saturates at ``2**bits - 1`` and, once there, is never
decremented again: it may have lost increments, and decrementing it could create false negatives.
An increment that hits a saturated counter is lost and counted in ``overflows``.

Each operation makes one hash call: SHAKE-128 of (8-byte seed, item) read as k 64-bit words w_i;
slice i's counter is w_i mod m (bias <= m / 2^64). Double hashing (h1 + i h2 mod m from one 128-bit
digest) was rejected: its k positions depend on (h1 mod m, h2 mod m) only, so an absent item matches
a present one everywhere with probability n / m^2: at the paper's P = 1e-6 row (n = 12,819,
m = 18,432) that floor is 3.8e-5, and 1M probes gave 26 false positives against 1 with this hash.

>>> f = SplitCountingBloomFilter.optimal(368_640, 0.001)
>>> f.k, f.m, f.capacity
(10, 36864, 25639)
>>> f.add("Jerry"); "Jerry" in f, len(f)
(True, 1)
>>> f.remove(b"Jerry"), "Jerry" in f
(True, False)
"""

from __future__ import annotations

import hashlib
import math
import struct
from decimal import Decimal, localcontext
from fractions import Fraction
from collections.abc import Iterator
from typing import ClassVar, Self, Union

from hibase.errors import InvalidArgument

__all__ = [
    "SplitCountingBloomFilter", "ScalableSCBF", "CountingBloomFilter",
    "optimal_parameters", "poisson_tail", "binomial_tail",
]

Item = Union[bytes, bytearray, memoryview, str]
Number = Union[int, float, str, Decimal, Fraction]

LN2 = math.log(2.0)
_U64 = (1 << 64) - 1
_HEADER = struct.Struct("<4sBBBBIQQQQd")  # magic, version, kind, bits, 0, k, M, seed, n, ovf, fpr
_MAGIC, _VERSION = b"HCBF", 1
_shake = hashlib.shake_128
_KINDS = {0: "SplitCountingBloomFilter", 1: "CountingBloomFilter"}
_STACK_HEADER = struct.Struct("<4sBBHQdQdI")  # magic, version, bits, 0, M0, fpr, seed, growth, d
_STACK_MAGIC = b"HSCB"


def _int_arg(name: str, value: object, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an int, got {type(value).__name__}")
    if value < lo or (hi is not None and value > hi):
        bounds = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise InvalidArgument(f"{name} must be {bounds}, got {value}")
    return value


def _fpr_arg(fpr: object) -> float:
    if isinstance(fpr, bool) or not isinstance(fpr, (int, float)):
        raise InvalidArgument(f"fpr must be a float, got {type(fpr).__name__}")
    fpr = float(fpr)
    if not 0.0 < fpr < 1.0:
        raise InvalidArgument(f"fpr must be in (0, 1), got {fpr}")
    return fpr


def optimal_parameters(counters: int, fpr: float) -> tuple[int, int, int]:
    """``(k, m, capacity)`` of the SCBF with the most capacity for M counters at target FPR P.

    k = ceil(log2(1/P)), m = M // k, capacity = floor(M (ln 2)^2 / |ln P|): this is the formula of
    the paper's table 1 (all four rows, truncated; rounding would give 25,640 not 25,639). Since k
    is rounded up, the capacity is a little above m ln 2 (25,639 vs 25,552 at P = 0.001); filled to
    it, f = 1 - e^(-n/m) is just above 1/2 and the FPR f^k stays at about P.
    """
    counters = _int_arg("counters", counters, 1)
    fpr = _fpr_arg(fpr)
    k = max(1, math.ceil(round(-math.log2(fpr), 9)))  # round(): 2**-10 must give k = 10, not 11
    if counters < k:
        raise InvalidArgument(f"counters ({counters}) must be >= k ({k}) for fpr {fpr}")
    return k, counters // k, math.floor(counters * LN2 * LN2 / -math.log(fpr))


class _CountingFilter:
    """Packed saturating counters plus the add/remove/query logic shared by SCBF and CBF."""

    _KIND: ClassVar[int]
    m: int  # counters per hash function's slice (_layout)
    _bases: tuple[int, ...]  # where each hash function's slice starts (_layout)

    def __init__(self, counters: int, k: int, counter_bits: int = 4, seed: int = 0,
                 *, fpr: float | None = None) -> None:
        self.counters = _int_arg("counters", counters, 1)
        self.k = _int_arg("k", k, 1, 1000)
        self.counter_bits = _int_arg("counter_bits", counter_bits, 1, 8)
        self.seed = _int_arg("seed", seed, 0, _U64)
        if counters < k:
            raise InvalidArgument(f"counters ({counters}) must be >= k ({k})")
        # Without a target, the design point is f = 1/2, i.e. P = 2^-k.
        self.fpr = 2.0 ** -k if fpr is None else _fpr_arg(fpr)
        self.capacity = math.floor(counters * LN2 * LN2 / -math.log(self.fpr))
        self.overflows = 0
        self._count = 0
        self._mask = (1 << counter_bits) - 1
        self._key = seed.to_bytes(8, "little")
        self._hash_len = 8 * k
        self._unpack = struct.Struct(f"<{k}Q").unpack
        self._slices, self._slice_len = self._layout()
        self._size = self._slices * self._slice_len           # counters actually allocated
        # One spare byte so a counter straddling a byte boundary is read as a 16-bit window.
        self._buf = bytearray((self._size * counter_bits + 7) // 8 + 1)
        self._nonzero = [0] * self._slices

    def _layout(self) -> tuple[int, int]:
        """Set ``m`` and ``_bases`` (first counter of each hash's range); return (number of
        slices, counters per slice)."""
        raise NotImplementedError

    def _words(self, item: Item) -> tuple[int, ...]:
        """k independent 64-bit hash words of the item."""
        if isinstance(item, str):
            item = item.encode("utf-8")
        try:
            return self._unpack(_shake(self._key + item).digest(self._hash_len))
        except TypeError:
            raise InvalidArgument(
                f"filter items must be bytes or str, got {type(item).__name__}") from None

    def positions(self, item: Item) -> list[int]:
        """The k counter positions (0 .. size-1) of the item; in an SCBF the i-th lies in
        [i m, (i + 1) m)."""
        m = self.m
        return [base + w % m for base, w in zip(self._bases, self._words(item))]

    @property
    def size(self) -> int:
        """Counters allocated: k * m for an SCBF (M % k are dropped), M for a CBF."""
        return self._size

    @property
    def nbytes(self) -> int:
        """Bytes of counter storage."""
        return len(self._buf)

    def add(self, item: Item) -> None:
        """Insert one occurrence of ``item`` (inserting twice needs two removes)."""
        buf, bits, mask, m = self._buf, self.counter_bits, self._mask, self.m
        for base, h in zip(self._bases, self._words(item)):  # positions() inlined: the hot path
            p = base + h % m
            off = p * bits
            b, s = off >> 3, off & 7
            w = buf[b] | buf[b + 1] << 8
            v = (w >> s) & mask
            if v == mask:
                self.overflows += 1
            else:
                if not v:
                    self._nonzero[p // self._slice_len] += 1
                w += 1 << s
                buf[b] = w & 0xFF
                buf[b + 1] = w >> 8
        self._count += 1

    def remove(self, item: Item) -> bool:
        """Delete one occurrence of ``item``; False (and nothing changed) if it is surely absent.

        Removing an item that was never added is the caller's bug: when it is a false positive,
        its counters belong to other items and decrementing them can make those items vanish.
        Saturated counters are left alone and no counter ever goes below zero.
        """
        buf, bits, mask, sl = self._buf, self.counter_bits, self._mask, self._slice_len
        pos = self.positions(item)
        for p in pos:
            off = p * bits
            if not ((buf[off >> 3] | buf[(off >> 3) + 1] << 8) >> (off & 7)) & mask:
                return False
        for p in pos:  # re-read each time: a CBF item may hit one counter twice
            off = p * bits
            i, s = off >> 3, off & 7
            w = buf[i] | buf[i + 1] << 8
            v = (w >> s) & mask
            if v == mask or not v:
                continue
            if v == 1:
                self._nonzero[p // sl] -= 1
            w -= 1 << s
            buf[i] = w & 0xFF
            buf[i + 1] = w >> 8
        if self._count:
            self._count -= 1
        return True

    def hash_words(self, item: Item) -> tuple[int, ...]:
        """The item's k hash words: equal for every filter with the same (seed, k), so a caller
        probing many such filters (one per region) hashes once (see :meth:`contains_words`)."""
        return self._words(item)

    def contains_words(self, words: tuple[int, ...]) -> bool:
        """``item in self`` given ``hash_words(item)`` of a filter with this seed and k."""
        buf, bits, mask, m = self._buf, self.counter_bits, self._mask, self.m
        for base, h in zip(self._bases, words):
            off = (base + h % m) * bits
            if not ((buf[off >> 3] | buf[(off >> 3) + 1] << 8) >> (off & 7)) & mask:
                return False
        return True

    def __contains__(self, item: Item) -> bool:
        buf, bits, mask, m = self._buf, self.counter_bits, self._mask, self.m
        for base, h in zip(self._bases, self._words(item)):
            off = (base + h % m) * bits
            if not ((buf[off >> 3] | buf[(off >> 3) + 1] << 8) >> (off & 7)) & mask:
                return False
        return True

    def __len__(self) -> int:
        """Items currently inserted (adds minus successful removes)."""
        return self._count

    def counter(self, position: int) -> int:
        """Value of the counter at ``position``."""
        off = _int_arg("position", position, 0, self._size - 1) * self.counter_bits
        return ((self._buf[off >> 3] | self._buf[(off >> 3) + 1] << 8) >> (off & 7)) & self._mask

    def _values(self) -> Iterator[int]:
        buf, bits, mask = self._buf, self.counter_bits, self._mask
        for off in range(0, self._size * bits, bits):
            yield ((buf[off >> 3] | buf[(off >> 3) + 1] << 8) >> (off & 7)) & mask

    def histogram(self) -> list[int]:
        """``h[v]`` = number of counters holding value v (v = 0 .. 2**bits - 1)."""
        h = [0] * (self._mask + 1)
        for v in self._values():
            h[v] += 1
        return h

    def fill_ratio(self) -> float:
        """Fraction of non-zero counters, averaged over the slices (the whole array for a CBF)."""
        return sum(self._nonzero) / self._size

    def estimated_fpr(self) -> float:
        """FPR now, from the fill: product of per-slice fills (SCBF) or fill^k (CBF)."""
        if self._slices == 1:
            return (self._nonzero[0] / self._size) ** self.k
        return math.prod(nz / self._slice_len for nz in self._nonzero)

    def to_bytes(self) -> bytes:
        return _HEADER.pack(_MAGIC, _VERSION, self._KIND, self.counter_bits, 0, self.k,
                            self.counters, self.seed, self._count, self.overflows,
                            self.fpr) + bytes(self._buf)

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        """Rebuild a filter written by :meth:`to_bytes` (of this class)."""
        data = bytes(data)
        if len(data) < _HEADER.size:
            raise InvalidArgument("filter data is truncated")
        magic, version, kind, bits, _, k, counters, seed, count, ovf, fpr = \
            _HEADER.unpack_from(data)
        if magic != _MAGIC or version != _VERSION:
            raise InvalidArgument("not a hibase counting Bloom filter (bad magic or version)")
        if kind != cls._KIND:
            raise InvalidArgument(f"data holds a {_KINDS.get(kind, kind)}, not a {cls.__name__}")
        if not 1 <= k <= counters or not 1 <= bits <= 8:
            raise InvalidArgument("filter data has invalid parameters")
        size = counters if kind == 1 else counters // k * k
        body = data[_HEADER.size:]
        if len(body) != (size * bits + 7) // 8 + 1:  # checked before allocating anything
            raise InvalidArgument(f"filter data has {len(body)} counter bytes, "
                                  f"expected {(size * bits + 7) // 8 + 1}")
        f = cls(counters, k, bits, seed, fpr=fpr)
        f._buf[:] = body
        f._count, f.overflows = count, ovf
        f._nonzero = f._count_nonzero()
        return f

    def _count_nonzero(self) -> list[int]:
        """Non-zero counters per slice, computed on the whole buffer as one integer (C-speed
        big-int operations, not a Python step per counter: reopening 2,000 filters took 32
        million calls)."""
        bits, sl = self.counter_bits, self._slice_len
        width = sl * bits
        whole = int.from_bytes(self._buf, "little")
        ones = ((1 << width) - 1) // self._mask  # the low bit of every counter of a slice
        out = []
        for i in range(self._slices):
            x = (whole >> (i * width)) & ((1 << width) - 1)
            folded = x
            for shift in range(1, bits):  # any bit of a counter set -> its low bit set
                folded |= x >> shift
            out.append((folded & ones).bit_count())
        return out

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(counters={self.counters}, k={self.k}, "
                f"counter_bits={self.counter_bits}, items={self._count}, "
                f"fill={self.fill_ratio():.3f})")


class SplitCountingBloomFilter(_CountingFilter):
    """SCBF: M counters in k slices of m = M // k; hash i sets a counter of slice i only.

    The M % k leftover counters are not allocated. ``capacity`` is the paper's n for the target
    FPR (given to :meth:`optimal`, else 2^-k); the filter accepts more, at a higher FPR.
    """

    _KIND = 0

    def _layout(self) -> tuple[int, int]:
        self.m = self.counters // self.k
        self._bases = tuple(range(0, self.k * self.m, self.m))
        return self.k, self.m

    @classmethod
    def optimal(cls, counters: int, fpr: float, counter_bits: int = 4,
                seed: int = 0) -> SplitCountingBloomFilter:
        """The SCBF of most capacity for ``counters`` counters at target FPR (see
        :func:`optimal_parameters`)."""
        k, _, _ = optimal_parameters(counters, fpr)
        return cls(counters, k, counter_bits, seed, fpr=fpr)


class CountingBloomFilter(_CountingFilter):
    """Fan et al.'s counting Bloom filter: all k hashes range over all M counters."""

    _KIND = 1

    def _layout(self) -> tuple[int, int]:
        self.m, self._bases = self.counters, (0,) * self.k
        return 1, self.m

    @classmethod
    def optimal(cls, counters: int, fpr: float, counter_bits: int = 4,
                seed: int = 0) -> CountingBloomFilter:
        """A CBF with the same k and capacity as the optimal SCBF of the same memory."""
        k, _, _ = optimal_parameters(counters, fpr)
        return cls(counters, k, counter_bits, seed, fpr=fpr)


class ScalableSCBF:
    """A growing stack of SCBFs (SPEC §3): inserts go to the newest filter still below fill 1/2;
    when all are at least half full a new one, ``growth`` times larger, is appended.

    Every filter is optimal for the same target P, so with d filters the FPR is 1 - (1 - P)^d
    (:meth:`expected_fpr`); ``growth=1`` gives the paper's stack of identical filters. Filter i
    hashes with seed ``seed + i`` so the filters' false positives are independent.

    :meth:`remove` never creates a false negative: it decrements a filter only when exactly one
    filter reports the item (then that filter holds it). When several do, it cannot tell which
    one holds the item and which gives a false positive (probability about P per other filter),
    and decrementing the wrong one could make that filter's items vanish; so it changes nothing
    and counts the remove in ``stale_removes``: the item stays a (stale) positive until the
    filter is rebuilt. ``len()`` counts stale items as present.
    """

    def __init__(self, initial_counters: int, fpr: float, counter_bits: int = 4,
                 growth: float = 2, seed: int = 0) -> None:
        self.fpr = _fpr_arg(fpr)
        k, _, _ = optimal_parameters(initial_counters, self.fpr)
        self.initial_counters = initial_counters
        self.counter_bits = _int_arg("counter_bits", counter_bits, 1, 8)
        if isinstance(growth, bool) or not isinstance(growth, (int, float)) \
                or not 1 <= growth < 1e6:
            raise InvalidArgument(f"growth must be a number >= 1, got {growth!r}")
        self.growth = float(growth)
        self.seed = _int_arg("seed", seed, 0, _U64 - 2**32)
        self.filters: list[SplitCountingBloomFilter] = []
        self.stale_removes = 0  # removes left undone (several filters reported the item)
        self._grow()

    def _grow(self) -> SplitCountingBloomFilter:
        counters = (self.initial_counters if not self.filters
                    else math.ceil(self.filters[-1].counters * self.growth))
        f = SplitCountingBloomFilter.optimal(counters, self.fpr, self.counter_bits,
                                             self.seed + len(self.filters))
        self.filters.append(f)
        return f

    def add(self, item: Item) -> None:
        for f in reversed(self.filters):
            if f.fill_ratio() < 0.5:
                break
        else:
            f = self._grow()
        f.add(item)

    def remove(self, item: Item) -> bool:
        """Delete one occurrence of ``item`` from the one filter reporting it; False if no filter
        holds it. When several filters report it nothing changes (a stale positive, never a
        false negative: see the class docstring) and True is returned."""
        holders = [f for f in self.filters if item in f]
        if not holders:
            return False
        if len(holders) > 1:
            self.stale_removes += 1
            return True
        return holders[0].remove(item)

    def __contains__(self, item: Item) -> bool:
        return any(item in f for f in self.filters)

    def probe(self, item: Item, memo: dict) -> bool:
        """``item in self``, hashing through ``memo`` ({(seed, k): words}, one per item): many
        stacks built with the same seed (one per region) then cost one hash per depth."""
        for f in self.filters:
            key = (f.seed, f.k)
            words = memo.get(key)
            if words is None:
                words = memo[key] = f.hash_words(item)
            if f.contains_words(words):
                return True
        return False

    def __len__(self) -> int:
        return sum(len(f) for f in self.filters)

    @property
    def counters(self) -> int:
        return sum(f.counters for f in self.filters)

    @property
    def capacity(self) -> int:
        return sum(f.capacity for f in self.filters)

    @property
    def overflows(self) -> int:
        return sum(f.overflows for f in self.filters)

    @property
    def nbytes(self) -> int:
        return sum(f.nbytes for f in self.filters)

    def expected_fpr(self) -> float:
        """1 - (1 - P)^d for the current number d of filters."""
        return 1.0 - (1.0 - self.fpr) ** len(self.filters)

    def to_bytes(self) -> bytes:
        parts = [_STACK_HEADER.pack(_STACK_MAGIC, _VERSION, self.counter_bits, 0,
                                    self.initial_counters, self.fpr, self.seed, self.growth,
                                    len(self.filters))]
        for f in self.filters:
            blob = f.to_bytes()
            parts += [len(blob).to_bytes(8, "little"), blob]
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> ScalableSCBF:
        data = bytes(data)
        if len(data) < _STACK_HEADER.size:
            raise InvalidArgument("scalable filter data is truncated")
        magic, version, bits, _, initial, fpr, seed, growth, d = _STACK_HEADER.unpack_from(data)
        if magic != _STACK_MAGIC or version != _VERSION or d < 1:
            raise InvalidArgument("not a hibase scalable SCBF (bad magic, version or count)")
        s = cls(initial, fpr, bits, growth, seed)
        s.filters = []
        off = _STACK_HEADER.size
        for _ in range(d):
            size = int.from_bytes(data[off:off + 8], "little")
            blob = data[off + 8:off + 8 + size]
            if len(blob) != size or size == 0:
                raise InvalidArgument("scalable filter data is truncated")
            s.filters.append(SplitCountingBloomFilter.from_bytes(blob))
            off += 8 + size
        if off != len(data):
            raise InvalidArgument("trailing bytes after scalable filter data")
        return s

    def __repr__(self) -> str:
        return (f"ScalableSCBF(filters={len(self.filters)}, items={len(self)}, "
                f"counters={self.counters}, fpr={self.fpr})")


def _decimal(x: Number) -> Decimal:
    if isinstance(x, Fraction):
        return Decimal(x.numerator) / Decimal(x.denominator)
    return Decimal(x)  # a float converts exactly; a str is parsed at full context precision


def poisson_tail(j: int, lam: Number | None = None, digits: int = 50) -> Decimal:
    """P(X >= j) for X ~ Poisson(lam), lam = ln 2 by default (per-counter load at the optimum).

    Sums the tail terms upwards instead of 1 - sum(head), so 1e-55 keeps all ``digits``
    significant digits. E.g. j = 2: 1 - (1 + ln 2)/2 = 0.15342640972002734529...
    """
    j = _int_arg("j", j, 0)
    digits = _int_arg("digits", digits, 1, 1000)
    with localcontext() as ctx:
        ctx.prec = digits + 15
        lam_d = Decimal(2).ln() if lam is None else _decimal(lam)
        if lam_d < 0:
            raise InvalidArgument(f"lam must be >= 0, got {lam}")
        if j == 0:
            return Decimal(1)
        if lam_d == 0:
            return Decimal(0)
        term = (-lam_d).exp() * lam_d ** j / math.factorial(j)
        total, i = Decimal(0), j
        eps = Decimal(10) ** -(digits + 10)
        while True:
            total += term
            i += 1
            term = term * lam_d / i
            if i > lam_d and term <= total * eps:
                break
        ctx.prec = digits
        return +total


def binomial_tail(j: int, n: int, p: Number, digits: int = 50) -> Decimal:
    """P(X >= j) for X ~ Binomial(n, p), summed upwards like :func:`poisson_tail`.

    A counter's load after n inserts is Binomial(n, 1/m) in an SCBF and Binomial(n k, 1/M) in a
    CBF (ignoring the rare double hits of one item in a CBF).
    """
    j = _int_arg("j", j, 0)
    n = _int_arg("n", n, 0)
    digits = _int_arg("digits", digits, 1, 1000)
    with localcontext() as ctx:
        ctx.prec = digits + 15
        p_d = _decimal(p)
        if not 0 <= p_d <= 1:
            raise InvalidArgument(f"p must be in [0, 1], got {p}")
        if j == 0:
            return Decimal(1)
        if j > n or p_d == 0:
            return Decimal(0)
        if p_d == 1:
            return Decimal(1)
        q = 1 - p_d
        term = math.comb(n, j) * p_d ** j * q ** (n - j)
        ratio = p_d / q
        total, i = Decimal(0), j
        eps = Decimal(10) ** -(digits + 10)
        while True:
            total += term
            if i == n:
                break
            term = term * (n - i) / (i + 1) * ratio
            i += 1
            if i > n * p_d and term <= total * eps:
                break
        ctx.prec = digits
        return +total
