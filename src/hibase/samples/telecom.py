"""Deterministic telecom-style records like the HiBase paper's (SPEC §1), for the benchmarks.

Each record is one data session of one subscriber, ~200 bytes of text in 10 attributes, stored
in family ``f``. The rowkey is SPEC §2's: the 11-digit phone number (MDN) followed by the
reversed start time ``Long.MAX_VALUE - start_ms`` as 19 digits, so one subscriber's sessions are
contiguous and newest first::

    13012345678 9223370336854775807
    `--- MDN --'`-- MAX - start_ms -'        30 bytes

Columns (all cells are UTF-8 text; declared types in TELECOM_COLUMNS):

==============  ======  =====================================================================
column          type    distribution
==============  ======  =====================================================================
f:mdn           string  11 digits; 200,000 subscribers, Zipf-like activity: subscriber of rank
                        r (0-based) is drawn as floor((1 + u((N+1)^0.2 - 1))^5) - 1, u uniform,
                        i.e. P(rank < r) = ((r+1)^0.2 - 1) / ((N+1)^0.2 - 1), Zipf(s=0.8) in
                        the continuous limit (top one 1.4% of rows; ~170,000 subscribers
                        active at 1M rows)
f:start_time    long    epoch ms, strictly increasing from 2023-11-14 22:13:20 UTC by 1-4 ms
                        (mean 2.5 ms: the paper's 1.07e9 records would span ~31 days); so
                        every rowkey is unique
f:end_time      long    start_time + exponential duration, mean 30 s
f:ip            string  server IPv4; 100,000 addresses, Zipf-like (s=1): rank r (0-based) is
                        floor((N+1)^u) - 1, i.e. P(rank < r) = ln(1+r) / ln(1+N): the top IP
                        has ln 2/ln 100001 = 6.0% of rows, rank r ~8.7%/(r+1) for larger r
                        (rank 100: ~860 rows at 1M; rank 10,000: ~9 rows)
f:port          int     443 40%, 80 30%, 8080 6%, 8443/8000/53 2% each, 5222/1935/3478/9000
                        1% each, else uniform over 1024-65535 (14%, ~2 rows per port at 1M)
f:url           string  designed frequency tiers (URL_TIERS), ~115 bytes on average:
                        tier 1: 1 URL at 10% of rows (100,000 at 1M)
                        tier 2: 5 URLs at 1% each (10,000 at 1M)
                        tier 3: 50 URLs at 0.1% each (1,000 at 1M)
                        tier 4: 500 URLs at 0.01% each (100 at 1M)
                        tier 5: 5,000 URLs at 0.001% each (10 at 1M)
                        tail:   70% of rows, uniform over 50,000,000 URLs (mostly unique)
                        i.e. a stepped Zipf(s=1): each tier 10x rarer and 10x more numerous
f:bytes_up      long    log-uniform 100 .. 1,000,000
f:bytes_down    long    log-uniform 200 .. 100,000,000
f:cell_id       int     uniform over 20,000 cells (10000..29999)
f:imsi          string  15 digits (460 00 + 10), one per subscriber (a function of the MDN)
==============  ======  =====================================================================

Equality queries therefore have result sizes from 0 to ~10% of rows: on f:url by tier, on
f:ip by rank (Zipf), on (f:ip, f:port) below that. ``values_with_counts(n, seed)`` finds, from
the exact counts, the values whose row counts are nearest to given targets (by default 0, 10,
1,000 and 100,000 rows); ``value_counts`` gives the exact counts of any column or column tuple.
Count by a single column is cheap: each column has its own random stream, so counting one
regenerates only that column.

Determinism: random.Random seeded with strings (hashed with sha512, so independent of
PYTHONHASHSEED), one stream per (seed, column, chunk of 8,192 rows); the same rows on every run
of a platform (across platforms only a last-bit libm difference in exp/log could move a value).
``telecom_rows(n)`` is a prefix of ``telecom_rows(m)`` for n < m. Speed: ~5-8 s per million
rows on a 2.5 GHz Xeon vCPU.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from itertools import accumulate
from typing import Iterable, Iterator, Sequence

__all__ = [
    "TELECOM_COLUMNS", "COLUMNS", "FAMILY", "URL_TIERS", "URL_TAIL_SIZE", "MAX_LONG", "T0_MS",
    "telecom_rows", "value_counts", "values_with_counts", "url_value", "absent_value",
]

FAMILY = b"f"
MAX_LONG = (1 << 63) - 1  # Java's Long.MAX_VALUE
T0_MS = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC
CHUNK = 8192

# Declared types, as Connection.create_table(..., columns=TELECOM_COLUMNS) takes them.
TELECOM_COLUMNS: dict[str, str] = {
    "f:mdn": "string",
    "f:start_time": "long",
    "f:end_time": "long",
    "f:ip": "string",
    "f:port": "int",
    "f:url": "string",
    "f:bytes_up": "long",
    "f:bytes_down": "long",
    "f:cell_id": "int",
    "f:imsi": "string",
}
COLUMNS: tuple[bytes, ...] = tuple(c.encode() for c in TELECOM_COLUMNS)
(C_MDN, C_START, C_END, C_IP, C_PORT, C_URL, C_UP, C_DOWN, C_CELL, C_IMSI) = COLUMNS

# -- distributions ----------------------------------------------------------------------------
N_MDN, MDN_ZIPF_S = 200_000, 0.8
N_IP, IP_ZIPF_S = 100_000, 1.0
N_CELL = 20_000
MEAN_DURATION_MS = 30_000
URL_TIERS: tuple[tuple[int, float, int], ...] = (
    # (tier, probability of each URL, number of URLs)
    (1, 1e-1, 1),
    (2, 1e-2, 5),
    (3, 1e-3, 50),
    (4, 1e-4, 500),
    (5, 1e-5, 5_000),
)
URL_TAIL_SIZE = 50_000_000  # tail URLs are url_value(0, i) for i in range(URL_TAIL_SIZE)
_PORTS = ((443, 0.40), (80, 0.30), (8080, 0.06), (8443, 0.02), (8000, 0.02), (53, 0.02),
          (5222, 0.01), (1935, 0.01), (3478, 0.01), (9000, 0.01))
_MDN_PREFIXES = (b"130", b"131", b"132", b"133", b"135", b"136", b"137", b"138", b"139",
                 b"150", b"151", b"152", b"155", b"156", b"158", b"159", b"186", b"187",
                 b"188", b"189")
_DOMAINS = (b"www.qq.com", b"weixin.qq.com", b"www.baidu.com", b"m.taobao.com", b"api.weibo.cn",
            b"www.jd.com", b"v.youku.com", b"map.baidu.com", b"mail.163.com", b"www.sohu.com",
            b"music.163.com", b"h5.m.taobao.com", b"img.alicdn.com", b"www.douyin.com",
            b"news.sina.com.cn", b"www.iqiyi.com")
_WORDS = (b"static", b"video", b"news", b"api", b"v2", b"item", b"detail", b"search", b"user",
          b"feed", b"img", b"play", b"list", b"content", b"mobile", b"cdn", b"share", b"cart",
          b"order", b"msg", b"live", b"page", b"topic", b"game")


def _mdn(i: int) -> bytes:
    """Subscriber i's phone number: a bijective scramble of i into 8 digits after a prefix."""
    return b"%s%08d" % (_MDN_PREFIXES[i % len(_MDN_PREFIXES)], (i * 48_271 + 12_345) % 100_000_000)


def _imsi(i: int) -> bytes:
    return b"46000%010d" % ((i * 7_919 + 1) % 10_000_000_000)


def _ip(rank: int) -> bytes:
    """The IP of popularity rank `rank` (unique per rank: the low 24 bits are a bijection)."""
    s = ((rank + 1) * 2_654_435_761) & 0xFFFFFF
    return b"%d.%d.%d.%d" % (1 + (rank * 7 + 36) % 223, s >> 16, (s >> 8) & 255, s & 255)


_NETS = (b"4g", b"5g", b"wifi", b"3g")
_OSES = (b"android", b"ios")
_URL_PREFIX = [b"http://%s/%s/%s/%s/" % (_DOMAINS[j & 15], _WORDS[(j >> 4) % 24],
                                         _WORDS[(j >> 6) % 24], _WORDS[(j >> 8) % 24])
               for j in range(4096)]
_URL_QUERY = [b".html?from=%s&net=%s&os=%s&ver=%d.%d&uid=" % (
    _WORDS[j % 24], _NETS[(j >> 3) & 3], _OSES[(j >> 5) & 1], (j >> 6) % 10, j % 10)
    for j in range(1024)]


def url_value(tier: int, i: int) -> bytes:
    """The i-th URL of tier 1-5 (see URL_TIERS) or of the tail (tier 0); unique per (tier, i)."""
    h = ((i + 1) * 2_654_435_761 + tier * 40_503) & 0xFFFFFFFF
    return b"%st%d-%08d%s%010d&sid=%08x" % (_URL_PREFIX[h & 4095], tier, i, _URL_QUERY[h >> 22],
                                            h, h ^ 0x5BD1E995)


def absent_value(column: bytes) -> bytes | None:
    """A well-formed value the generator never produces for `column` (a 0-row query), if known."""
    return {C_URL: url_value(0, URL_TAIL_SIZE), C_IP: b"240.0.0.1", C_PORT: b"1",
            C_MDN: b"10000000000", C_CELL: b"99999"}.get(column)


def _zipf_ranks(rng: random.Random, n: int, s: float, k: int) -> list[int]:
    """k ranks in [0, n) by the inverse CDF of the continuous Zipf(s) density on [1, n + 1):
    P(rank < r) = ((r+1)^(1-s) - 1) / ((n+1)^(1-s) - 1), or ln(1+r) / ln(1+n) for s = 1."""
    r = rng.random
    if s == 1.0:
        top = math.log(n + 1)
        exp = math.exp
        return [int(exp(r() * top)) - 1 for _ in range(k)]
    e = 1.0 - s
    span, inv = (n + 1) ** e - 1.0, 1.0 / e
    return [int((1.0 + r() * span) ** inv) - 1 for _ in range(k)]


class _Tables:
    """Lookup tables, built once on first use (~0.2 s)."""

    _built: "_Tables | None" = None

    def __init__(self) -> None:
        self.mdns = [_mdn(i) for i in range(N_MDN)]
        self.imsis = [_imsi(i) for i in range(N_MDN)]
        self.ips = [_ip(r) for r in range(N_IP)]
        urls: list[bytes | None] = []
        weights: list[float] = []
        for tier, p, count in URL_TIERS:
            urls += [url_value(tier, i) for i in range(count)]
            weights += [p] * count
        urls.append(None)  # the tail
        weights.append(1.0 - sum(weights))
        self.urls = urls
        self.url_cum = list(accumulate(weights))
        self.ports: list[bytes | None] = [b"%d" % p for p, _ in _PORTS] + [None]
        self.port_cum = list(accumulate([w for _, w in _PORTS]
                                        + [1.0 - sum(w for _, w in _PORTS)]))
        self.port_text = [b"%d" % p for p in range(65536)]
        self.cells = [b"%d" % (10_000 + i) for i in range(N_CELL)]
        # exponential durations by inverse CDF over 4,096 quantiles (mean ~30 s)
        self.durations = [int(-MEAN_DURATION_MS * math.log(1.0 - (k + 0.5) / 4096))
                          for k in range(4096)]

    @classmethod
    def get(cls) -> "_Tables":
        if cls._built is None:
            cls._built = cls()
        return cls._built


def _rng(seed: int, stream: str, chunk: int) -> random.Random:
    return random.Random(f"hibase-telecom/{seed}/{stream}/{chunk}")


def _log_uniform(rng: random.Random, lo: float, hi: float, k: int) -> list[bytes]:
    a, b = math.log(lo), math.log(hi) - math.log(lo)
    r, exp = rng.random, math.exp
    return [b"%d" % int(exp(a + b * r())) for _ in range(k)]


def _chunks(n: int, seed: int, streams: set[str]) -> Iterator[tuple[int, dict[str, list]]]:
    """Per chunk of CHUNK rows (the last one cut to n): the generated lists of `streams`.

    Streams: mdn (subscriber index), time (start ms), dur, ip, port, url, up, down, cell.
    Each chunk's streams are drawn in full (CHUNK values) so prefixes are stable."""
    tb = _Tables.get()
    start = T0_MS
    for c in range((n + CHUNK - 1) // CHUNK):
        m = min(CHUNK, n - c * CHUNK)
        out: dict[str, list] = {}
        if "mdn" in streams:
            out["mdn"] = _zipf_ranks(_rng(seed, "mdn", c), N_MDN, MDN_ZIPF_S, CHUNK)[:m]
        if "time" in streams:
            gaps = _rng(seed, "time", c).choices((1, 2, 3, 4), k=CHUNK)
            starts = list(accumulate(gaps, initial=start))
            start = starts[-1]  # the next chunk continues from the last gap
            out["time"] = starts[1:m + 1]
        if "dur" in streams:
            out["dur"] = _rng(seed, "dur", c).choices(tb.durations, k=CHUNK)[:m]
        if "ip" in streams:
            ips = tb.ips
            ranks = _zipf_ranks(_rng(seed, "ip", c), N_IP, IP_ZIPF_S, CHUNK)
            out["ip"] = [ips[i] for i in ranks[:m]]
        if "port" in streams:
            rng = _rng(seed, "port", c)
            picks = rng.choices(tb.ports, cum_weights=tb.port_cum, k=CHUNK)
            r, text = rng.random, tb.port_text
            out["port"] = [p if p is not None else text[1024 + int(r() * 64512)]
                           for p in picks][:m]
        if "url" in streams:
            rng = _rng(seed, "url", c)
            picks = rng.choices(tb.urls, cum_weights=tb.url_cum, k=CHUNK)
            r = rng.random
            out["url"] = [u if u is not None else url_value(0, int(r() * URL_TAIL_SIZE))
                          for u in picks[:m]]
        if "up" in streams:
            out["up"] = _log_uniform(_rng(seed, "up", c), 100, 1e6, CHUNK)[:m]
        if "down" in streams:
            out["down"] = _log_uniform(_rng(seed, "down", c), 200, 1e8, CHUNK)[:m]
        if "cell" in streams:
            out["cell"] = _rng(seed, "cell", c).choices(tb.cells, k=CHUNK)[:m]
        yield m, out


_ALL_STREAMS = {"mdn", "time", "dur", "ip", "port", "url", "up", "down", "cell"}


def telecom_rows(n: int, seed: int = 0) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
    """n records as (rowkey, {b"f:col": value}), deterministic for (n, seed); see module doc."""
    if not isinstance(n, int) or n < 0:
        raise ValueError("n must be a non-negative int")
    tb = _Tables.get()
    mdns, imsis, top = tb.mdns, tb.imsis, MAX_LONG
    c_mdn, c_start, c_end, c_ip, c_port, c_url, c_up, c_down, c_cell, c_imsi = COLUMNS
    for _, s in _chunks(n, seed, _ALL_STREAMS):
        for sub, st, du, ip, port, url, up, down, cell in zip(
                s["mdn"], s["time"], s["dur"], s["ip"], s["port"], s["url"], s["up"],
                s["down"], s["cell"]):
            mdn = mdns[sub]
            yield b"%s%019d" % (mdn, top - st), {
                c_mdn: mdn, c_start: b"%d" % st, c_end: b"%d" % (st + du), c_ip: ip,
                c_port: port, c_url: url, c_up: up, c_down: down, c_cell: cell,
                c_imsi: imsis[sub]}


_STREAM_OF = {C_MDN: "mdn", C_IMSI: "mdn", C_START: "time", C_IP: "ip", C_PORT: "port",
              C_URL: "url", C_UP: "up", C_DOWN: "down", C_CELL: "cell"}


def _column_values(n: int, seed: int, column: bytes) -> Iterator[list[bytes]]:
    if column == C_END:
        for _, s in _chunks(n, seed, {"time", "dur"}):
            yield [b"%d" % (a + b) for a, b in zip(s["time"], s["dur"])]
        return
    stream = _STREAM_OF.get(column)
    if stream is None:
        raise ValueError(f"unknown column {column!r}; columns: {list(COLUMNS)}")
    tb = _Tables.get()
    for _, s in _chunks(n, seed, {stream}):
        vals = s[stream]
        if column == C_MDN:
            vals = [tb.mdns[i] for i in vals]
        elif column == C_IMSI:
            vals = [tb.imsis[i] for i in vals]
        elif column == C_START:
            vals = [b"%d" % v for v in vals]
        yield vals


def value_counts(n: int, seed: int = 0,
                 column: bytes | Sequence[bytes] = C_URL) -> Counter:
    """Exact row counts per value of `column` (or per value tuple of several columns) in
    telecom_rows(n, seed); only the needed columns are generated."""
    if isinstance(column, bytes):
        counts: Counter = Counter()
        for vals in _column_values(n, seed, column):
            counts.update(vals)
        return counts
    gens = [_column_values(n, seed, c) for c in column]
    counts = Counter()
    for parts in zip(*gens):
        counts.update(zip(*parts))
    return counts


def values_with_counts(n: int, seed: int = 0, column: bytes | Sequence[bytes] = C_URL,
                       targets: Iterable[int] = (0, 10, 1_000, 100_000)) -> list[dict]:
    """For each target row count, the value of `column` whose exact count in telecom_rows(n,
    seed) is nearest (by ratio; ties to the smaller value): [{"target", "value", "count"}].

    Target 0 gives a value that never occurs (absent_value). At n = 1,000,000 the default
    targets land on the f:url tiers 5, 3 and 1 (counts ~10, ~1,000, ~100,000)."""
    counts = value_counts(n, seed, column)
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))
    out = []
    for target in targets:
        if target <= 0:
            if isinstance(column, bytes):
                value = absent_value(column)
            else:  # a tuple whose first value never occurs
                first = absent_value(column[0])
                value = None if first is None else (first,) + tuple(
                    absent_value(c) or b"0" for c in column[1:])
            out.append({"target": target, "value": value, "count": 0})
            continue
        best = min(ranked, key=lambda kv: abs(math.log(kv[1] / target)), default=None)
        out.append({"target": target, "value": None if best is None else best[0],
                    "count": 0 if best is None else best[1]})
    return out

