"""A whole-store verification (`hibase check DIR`): every file read back through its checksums,
every index compared with its table, the routing filters of local indexes checked for false
negatives, every declared column's newest cells parsed by their type. Read-only: it changes
nothing, so it is safe on a store that looks damaged.

A cell that does not parse as its declared type (written by a client that skips hibase's
checks) is a warning, not a problem: reads, queries and indexes all treat it as NULL, so the
store is consistent; the report counts such cells and names the first few (row and column)."""

from __future__ import annotations

import os
from typing import Any, Callable

from . import errors
from .codec import BadCells
from .connection import connect

__all__ = ["check_store"]


def check_store(path: str, progress: Callable[[str, int], None] | None = None
                ) -> dict[str, Any]:
    """{"ok", "store", "files": verify_files' report (None on HBase), "indexes": [verify
    reports], "problems": [{"file"/"index", "problem"}], "bad_cells": {"count", "examples":
    [{"table", "row", "column"}]}}; never raises a HibaseError met while checking: it becomes
    a problem of the report. Bad cells (see the module docstring) leave "ok" as it is."""
    report: dict[str, Any] = {"store": path, "files": None, "indexes": [], "problems": [],
                              "bad_cells": {"count": 0, "examples": []}}
    problems = report["problems"]
    try:
        db = connect(path, create=False, read_only=True, cache=None)
    except errors.HibaseError as exc:
        problems.append({"file": getattr(exc, "path", None) or path,
                         "problem": f"cannot open: {exc}"})
        if os.path.isdir(path):  # a damaged log fails the open: say which, and where
            from .store.embedded.wal import wal_problems
            try:
                problems.extend({"file": p["file"], "problem": p["problem"]}
                                for p in wal_problems(path))
            except OSError:
                pass
        report["ok"] = False
        return report
    try:
        if db.store.capabilities.local_files:
            from .store.embedded.check import verify_files
            files = verify_files(db.store, progress)
            report["files"] = {k: v for k, v in files.items() if k != "problems"}
            problems.extend(files["problems"])
        for name in db.tables():  # happybase's shape: bytes
            table = name.decode() if isinstance(name, bytes) else name
            try:
                _check_cells(db, table, report["bad_cells"], progress)
            except errors.HibaseError as exc:
                problems.append({"table": table, "problem": f"cannot read its cells: {exc}"})
            for spec in db.indexes(table):
                if spec["state"] != "ready":  # mid-build: nothing to compare yet
                    report["indexes"].append({"index": spec["name"], "table": table,
                                              "state": spec["state"], "ok": True})
                    continue
                try:
                    r = db.verify_index(table, spec["name"])
                except errors.HibaseError as exc:
                    problems.append({"index": f"{table}.{spec['name']}",
                                     "problem": f"cannot verify: {exc}"})
                    continue
                report["indexes"].append(r)
                if progress is not None:
                    progress(f"index {table}.{spec['name']}", r["entries"])
                r["state"] = spec["state"]
                if not r["ok"]:
                    routing = r.get("routing") or {}
                    problems.append({"index": f"{table}.{spec['name']}", "problem": (
                        f"missing {r['missing']}, extra {r['extra']}, wrong covered values "
                        f"{r['wrong_covered']}, wrong counts {r['bad_counts']}, routing false "
                        f"negatives {routing.get('false_negatives', 0)} "
                        "(hibase index verify ... --repair fixes them)")})
    finally:
        try:
            db.close()
        except errors.HibaseError:
            pass
    report["ok"] = not problems
    return report


def _check_cells(db: Any, table: str, out: dict[str, Any],
                 progress: Callable[[str, int], None] | None) -> None:
    """Parse the newest cell of every declared column of `table` by its type; count those
    that do not parse in `out` ({"count", "examples"}, examples naming table, row, column)."""
    t = db.table(table)
    types = t.schema.columns
    if not types or not t.schema.enabled:  # a disabled table cannot be read (as in HBase)
        return
    bad = BadCells()
    n = 0
    for row, cells in t.scan(columns=list(types)):
        for col, raw in cells.items():
            ctype = types.get(col)
            if ctype is not None:
                bad.decode(ctype, raw, row, col)
        n += 1
    if progress is not None:
        progress(f"cells of {table}", n)
    out["count"] += bad.count
    keep = BadCells.KEEP - len(out["examples"])
    out["examples"] += [{"table": table, "row": r, "column": c} for r, c in bad.examples[:keep]]
