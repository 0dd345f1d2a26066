"""Apache Phoenix as a peer (when --backend is the Thrift URL of a running `hibase cluster`):
the same rows upserted into a Phoenix table with global indexes on the same columns, the same
four queries timed inside the JVM (``PhoenixClient.time_query``), answers checked equal to
hibase's. Drives ``hibase.cluster.phoenix``; without it the section says why it did not run.
"""

from __future__ import annotations

import statistics
import os
from typing import Any

from ..datasets import COLUMNS, telecom_rows
from .engines import INDEXES, normalize_sql
from .workload import INT_COLUMNS, SQL_COLUMNS, Stats, paper_queries

__all__ = ["run"]


def _client(backend: str) -> tuple[Any, str | None]:
    if not backend.startswith("thrift://"):
        return None, "--backend embedded: Phoenix needs an HBase cluster (`hibase cluster " \
                     "start`, then --backend its thrift:// URL)"
    try:
        from ...cluster.phoenix import phoenix_for_backend
    except ImportError as exc:
        return None, f"hibase.cluster.phoenix is not available ({exc})"
    client = phoenix_for_backend(backend)
    if client is None:
        return None, f"no running `hibase cluster` serves {backend}"
    return client, None


def run(backend: str, rows: int, seed: int, repeats: int,
        hibase_answers: list[list[tuple]] | None) -> dict[str, Any]:
    """Load `rows` rows into Phoenix and time the four queries; {"ran": False, "reason"} if
    it cannot run here."""
    client, reason = _client(backend)
    if client is None:
        return {"ran": False, "reason": reason}
    table = f"HIBASE_PAPER_{os.getpid()}"  # a new table, dropped at the end
    with client as px:
        cols = ", ".join(f"{c} {'BIGINT' if c in INT_COLUMNS else 'VARCHAR'}"
                         for c in SQL_COLUMNS)
        px.execute(f"CREATE TABLE {table} (k VARCHAR PRIMARY KEY, {cols})")
        try:
            return _measure(px, table, rows, seed, repeats, hibase_answers)
        finally:
            px.execute(f"DROP TABLE IF EXISTS {table}")


def _measure(px: Any, table: str, rows: int, seed: int, repeats: int,
             hibase_answers: list[list[tuple]] | None) -> dict[str, Any]:
    """Index, load and query the new Phoenix `table`."""
    for name, icols in INDEXES:
        px.execute(f"CREATE INDEX {table}_{name.upper()} ON {table} "
                   f"({', '.join(c.split(':', 1)[1] for c in icols)})")
    stats = Stats()
    data = []
    for key, d in telecom_rows(rows, seed):
        stats.add(key, d)
        data.append((key.decode(), *[int(d[c]) if c.split(b":")[1].decode() in INT_COLUMNS
                                      else d[c].decode() for c in COLUMNS]))
    upsert = f"UPSERT INTO {table} VALUES ({', '.join('?' * (len(SQL_COLUMNS) + 1))})"
    load_s = px.upsert_many(upsert, data)
    out = []
    for i, q in enumerate(paper_queries(stats, table)):
        got = normalize_sql(px.execute(q["sql"], q["params"]))
        times = px.time_query(q["sql"], q["params"], repeats + 1)[1:]  # the first warms up
        same = None if hibase_answers is None else got == hibase_answers[i]
        out.append({"type": q["type"], "rows": len(got), "same_rows": same,
                    "p50_us": statistics.median(times) * 1e6})
    return {"ran": True, "how": px.describe(), "rows": rows, "load_s": load_s,
            "queries": out}
