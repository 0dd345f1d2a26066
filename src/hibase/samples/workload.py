"""The paper's four query types (SPEC §1) on the telecom table, for `hibase demo` and
`hibase bench paper`: values picked from counts taken while loading, so result sizes spread out,
each query written for hibase (its SQL) and for the SQL peers (SQLite, DuckDB, Phoenix: the same
condition with ? parameters over a table whose rowkey column is `k`).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from .telecom import COLUMNS, TELECOM_COLUMNS

__all__ = ["Stats", "nearest", "paper_queries", "COVERED", "QUERY_TYPES", "SQL_COLUMNS", "INT_COLUMNS"]

(C_MDN, C_START, _, C_IP, C_PORT, C_URL, *_) = COLUMNS
QUERY_TYPES = ("MDN (rowkey prefix) + time window", "IP + time window", "IP + PORT", "URL")
SQL_COLUMNS = [c.split(b":", 1)[1].decode() for c in COLUMNS]  # mdn, start_time, ...
INT_COLUMNS = {c.split(":", 1)[1] for c, t in TELECOM_COLUMNS.items() if t in ("int", "long")}


class Stats:
    """Counts of the values the queries are picked from, fed one row at a time."""

    def __init__(self) -> None:
        self.mdns: Counter = Counter()
        self.ips: Counter = Counter()
        self.pairs: Counter = Counter()
        self.urls: Counter = Counter()
        self.t_min: int | None = None
        self.t_max: int | None = None
        self.rows = 0
        self.bytes = 0

    def add(self, key: bytes, data: dict[bytes, bytes]) -> None:
        ip = data[C_IP]
        self.mdns[data[C_MDN]] += 1
        self.ips[ip] += 1
        self.pairs[(ip, data[C_PORT])] += 1
        self.urls[data[C_URL]] += 1
        start = int(data[C_START])
        self.t_min = start if self.t_min is None else min(self.t_min, start)
        self.t_max = start if self.t_max is None else max(self.t_max, start)
        self.rows += 1
        self.bytes += sum(map(len, data.values()))


def nearest(counts: Counter, target: float) -> tuple[Any, int]:
    """The value whose count is nearest `target` by ratio (ties: the smaller value)."""
    target = max(target, 1.0)
    return min(counts.items(), key=lambda kv: (abs(math.log(kv[1] / target)), kv[0]))


def _text(value: bytes) -> str:
    return value.decode().replace("'", "''")


COVERED = ("f:mdn", "f:start_time")  # what the covered variants select (indexes cover them)


def paper_queries(stats: Stats, table: str, covered: bool = False,
                  peer_table: str | None = None) -> list[dict[str, Any]]:
    """The four query types: [{"type", "hibase" (SQL), "sql" (peer SQL, ?), "params"}].
    With `covered`, the three indexed ones selecting only COVERED (answered from an index
    that covers them, as the paper's index rows carry the columns queries need).
    `peer_table`: the table the peers' SQL names (default: `table`).

    MDN: the busiest subscriber in the middle half of the time span (a rowkey prefix: the
    peers read it as a key range); IP: an address with ~0.5% of rows, same window; IP + PORT:
    a pair with ~0.05%; URL: a URL with ~0.005% of rows (the paper's 1,155-row case at 1M)."""
    rows = stats.rows
    span = stats.t_max - stats.t_min
    lo, hi = stats.t_min + span // 4, stats.t_min + 3 * span // 4
    window = f"f.start_time BETWEEN {lo} AND {hi}"
    mdn, _ = nearest(stats.mdns, max(stats.mdns.values()))
    ip, _ = nearest(stats.ips, rows / 200)
    (pip, port), _ = nearest(stats.pairs, rows / 2000)
    url, _ = nearest(stats.urls, rows / 20000)
    q = f"SELECT * FROM {table} WHERE "
    peer_table = peer_table or table
    p = f"SELECT * FROM {peer_table} WHERE "
    if covered:
        q = f"SELECT {', '.join(c.replace(':', '.') for c in COVERED)} FROM {table} WHERE "
        p = f"SELECT k, {', '.join(c.split(':')[1] for c in COVERED)} FROM {peer_table} WHERE "
    m = mdn.decode()
    out = [
        {"type": QUERY_TYPES[0], "hibase": q + f"ROWKEY LIKE '{_text(mdn)}%' AND {window}",
         "sql": p + "k >= ? AND k < ? AND start_time BETWEEN ? AND ?",
         "params": (m, m + ":", lo, hi)},  # ':' sorts right after '9': the prefix's end
        {"type": QUERY_TYPES[1], "hibase": q + f"f.ip = '{_text(ip)}' AND {window}",
         "sql": p + "ip = ? AND start_time BETWEEN ? AND ?", "params": (ip.decode(), lo, hi)},
        {"type": QUERY_TYPES[2], "hibase": q + f"f.ip = '{_text(pip)}' AND f.port = {int(port)}",
         "sql": p + "ip = ? AND port = ?", "params": (pip.decode(), int(port))},
        {"type": QUERY_TYPES[3], "hibase": q + f"f.url = '{_text(url)}'",
         "sql": p + "url = ?", "params": (url.decode(),)},
    ]
    if covered:
        out = out[1:]
        for x in out:
            x["type"] += " (covered)"
            x["columns"] = [c.encode() for c in COVERED]
    return out
