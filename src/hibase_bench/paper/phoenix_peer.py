"""Apache Phoenix as a peer (when --backend is the Thrift URL of a running `hibase cluster`):
the same rows upserted into three Phoenix tables (no index; the paper's indexes as global
covered indexes, `CREATE INDEX ... INCLUDE`; the same as local indexes), each load timed; the
four queries and their covered variants timed inside the JVM (``PhoenixClient.time_query``) on
the global and the local table, answers checked equal to hibase's. Drives ``hibase.cluster.phoenix``; without it the section says why it did not run.
"""

from __future__ import annotations

import statistics
import os
from typing import Any

from hibase.samples.telecom import COLUMNS, telecom_rows
from .engines import INDEXES, normalize_sql
from hibase.samples.workload import COVERED, INT_COLUMNS, SQL_COLUMNS, Stats, paper_queries

__all__ = ["run"]


def _client(backend: str) -> tuple[Any, str | None]:
    if not backend.startswith("thrift://"):
        return None, "--backend embedded: Phoenix needs an HBase cluster (`hibase cluster " \
                     "start`, then --backend its thrift:// URL)"
    try:
        from hibase.cluster.phoenix import phoenix_for_backend
    except ImportError as exc:
        return None, f"hibase.cluster.phoenix is not available ({exc})"
    client = phoenix_for_backend(backend)
    if client is None:
        return None, f"no running `hibase cluster` serves {backend}"
    return client, None


def run(backend: str, rows: int, seed: int, repeats: int,
        hibase_answers: list[list[tuple]] | None) -> dict[str, Any]:
    """Load `rows` rows into three Phoenix tables (no index; global covered indexes; local
    covered indexes), time the loads and the queries on the indexed ones; {"ran": False,
    "reason"} if it cannot run here."""
    client, reason = _client(backend)
    if client is None:
        return {"ran": False, "reason": reason}
    base = f"HIBASE_PAPER_{os.getpid()}"  # new tables, dropped at the end
    with client as px:
        cols = ", ".join(f"{c} {'BIGINT' if c in INT_COLUMNS else 'VARCHAR'}"
                         for c in SQL_COLUMNS)
        made = []
        try:
            for kind in KINDS:
                px.execute(f"CREATE TABLE {base}_{kind} (k VARCHAR PRIMARY KEY, {cols})")
                made.append(f"{base}_{kind}")
            return _measure(px, base, rows, seed, repeats, hibase_answers)
        finally:
            for table in made:
                px.execute(f"DROP TABLE IF EXISTS {table}")


KINDS = ("PLAIN", "GLOBAL", "LOCAL")  # no index; global covered indexes; local covered ones


def _measure(px: Any, base: str, rows: int, seed: int, repeats: int,
             hibase_answers: list[list[tuple]] | None) -> dict[str, Any]:
    """Index (before the load, so every upsert maintains them, as hibase's per-put upkeep),
    load and query the new Phoenix tables."""
    for kind in KINDS[1:]:
        for name, icols in INDEXES:
            keys = [c.split(":", 1)[1] for c in icols]
            include = [c.split(":", 1)[1] for c in COVERED if c not in icols]
            px.execute(f"CREATE {'LOCAL ' if kind == 'LOCAL' else ''}INDEX "
                       f"{base}_{kind}_{name.upper()} ON {base}_{kind} ({', '.join(keys)})"
                       f" INCLUDE ({', '.join(include)})")
    stats = Stats()
    data = []
    for key, d in telecom_rows(rows, seed):
        stats.add(key, d)
        data.append((key.decode(), *[int(d[c]) if c.split(b":")[1].decode() in INT_COLUMNS
                                      else d[c].decode() for c in COLUMNS]))
    load = {}
    for kind in KINDS:
        upsert = (f"UPSERT INTO {base}_{kind} VALUES "
                  f"({', '.join('?' * (len(SQL_COLUMNS) + 1))})")
        load[kind.lower()] = px.upsert_many(upsert, data)
    out: dict[str, list] = {}
    for kind in KINDS[1:]:
        table = f"{base}_{kind}"
        qs = paper_queries(stats, table) + paper_queries(stats, table, covered=True)
        out[kind.lower()] = rows_out = []
        for i, q in enumerate(qs):
            got = normalize_sql(px.execute(q["sql"], q["params"]))
            times = px.time_query(q["sql"], q["params"], repeats + 1)[1:]  # first: warm-up
            same = None if hibase_answers is None else got == hibase_answers[i]
            plan = " ".join(str(r[0]) for r in px.execute("EXPLAIN " + q["sql"], q["params"]))
            rows_out.append({"type": q["type"], "rows": len(got), "same_rows": same,
                             "p50_us": statistics.median(times) * 1e6,
                             "uses_index": f"{table}_" in plan, "plan": plan[:300]})
    return {"ran": True, "how": px.describe(), "rows": rows, "load_s": load,
            "load_ratio_global": load["global"] / load["plain"],
            "load_ratio_local": load["local"] / load["plain"],
            "queries": out["global"], "queries_local": out["local"]}
