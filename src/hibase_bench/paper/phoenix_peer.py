"""Apache Phoenix as a peer (when --backend is the Thrift URL of a running `hibase cluster`):
the same rows upserted into three Phoenix tables (no index; the paper's indexes as global
covered indexes, `CREATE INDEX ... INCLUDE`; the same as local indexes), each load timed; the
four queries and their covered variants timed inside the JVM (``PhoenixClient.time_query``) on
the global and the local table, answers checked equal to hibase's. Drives ``hibase.cluster.phoenix``; without it the section says why it did not run.
"""

from __future__ import annotations

import statistics
import os
from typing import Any, Callable

from hibase.samples.telecom import COLUMNS, telecom_rows
from .engines import INDEXES, normalize_sql, sql_schema
from hibase.samples.workload import COVERED, INT_COLUMNS, SQL_COLUMNS, Stats, paper_queries

__all__ = ["run", "index_statement", "upsert_statement", "phoenix_row", "time_queries"]


def index_statement(table: str, index: str, cols: list[str], local: bool) -> str:
    """CREATE [LOCAL] INDEX of the paper's index on `cols`, carrying COVERED (INCLUDE)."""
    keys = [c.split(":", 1)[1] for c in cols]
    include = [c.split(":", 1)[1] for c in COVERED if c not in cols]
    return (f"CREATE {'LOCAL ' if local else ''}INDEX {index} ON {table} ({', '.join(keys)})"
            f" INCLUDE ({', '.join(include)})")


def upsert_statement(table: str) -> str:
    """UPSERT of one telecom row (rowkey k, then SQL_COLUMNS) into `table`."""
    return f"UPSERT INTO {table} VALUES ({', '.join('?' * (len(SQL_COLUMNS) + 1))})"


def phoenix_row(key: bytes, data: dict[bytes, bytes]) -> tuple:
    """A generated telecom row as upsert_statement's parameters (numbers as int)."""
    return (key.decode(), *[int(data[c]) if c.split(b":")[1].decode() in INT_COLUMNS
                            else data[c].decode() for c in COLUMNS])


def time_queries(px: Any, table: str, qs: list[dict[str, Any]], repeats: int,
                 answers: list[list[tuple]] | None,
                 sql_of: Callable[[dict[str, Any]], str] = lambda q: q["sql"]
                 ) -> list[dict[str, Any]]:
    """Each query (its SQL `sql_of(q)`) read once for its rows, then timed inside the JVM
    `repeats` + 1 times (the first run apart, p50 of the rest), with its plan and whether it
    reads one of `table`'s indexes; rows checked against `answers` (None: unchecked)."""
    out = []
    for i, q in enumerate(qs):
        sql = sql_of(q)
        got = normalize_sql(px.execute(sql, q["params"]))
        times = px.time_query(sql, q["params"], repeats + 1)
        plan = " ".join(str(r[0]) for r in px.execute("EXPLAIN " + sql, q["params"]))
        out.append({"type": q["type"], "covered": "columns" in q, "rows": len(got), "sql": sql,
                    "same_rows": None if answers is None else got == answers[i],
                    "first_us": times[0] * 1e6, "p50_us": statistics.median(times[1:]) * 1e6,
                    "uses_index": f"{table}_" in plan, "plan": plan[:300]})
    return out


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
        made = []
        try:
            for kind in KINDS:
                px.execute(sql_schema(f"{base}_{kind}", "VARCHAR"))
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
            px.execute(index_statement(f"{base}_{kind}", f"{base}_{kind}_{name.upper()}",
                                       icols, kind == "LOCAL"))
    stats = Stats()
    data = []
    for key, d in telecom_rows(rows, seed):
        stats.add(key, d)
        data.append(phoenix_row(key, d))
    load = {}
    for kind in KINDS:
        load[kind.lower()] = px.upsert_many(upsert_statement(f"{base}_{kind}"), data)
    out: dict[str, list] = {}
    for kind in KINDS[1:]:
        table = f"{base}_{kind}"
        qs = paper_queries(stats, table) + paper_queries(stats, table, covered=True)
        out[kind.lower()] = time_queries(px, table, qs, repeats, hibase_answers)
    return {"ran": True, "how": px.describe(), "rows": rows, "load_s": load,
            "load_ratio_global": load["global"] / load["plain"],
            "load_ratio_local": load["local"] / load["plain"],
            "queries": out["global"], "queries_local": out["local"]}
