"""Scans that carry work into the region servers (issue 39): the JSON work description rides in
the Thrift2 scan's attribute ``hibase.scan``, hibase's ScanObserver (coprocessor/java/io/hibase/)
runs it in each region, and the rows it returns come back here, one scan per region range, the
ranges in flight together on the Thrift2 pool.

Each range is a plain HBase scan of [start, stop): if the region splits or moves meanwhile,
HBase's own client scanner (inside the Thrift2 server) reads the daughters or the new server,
and each region part answers for its own rows, so no row is read twice or skipped. A call that
fails is retried by `Rpc.call` (deadline_ms), and a retried range is read again from its start
or from after the last row returned, never added twice."""

from __future__ import annotations

import json
from typing import Any

from ... import errors

__all__ = ["ATTRIBUTE", "AGG_COLUMN_QUALIFIER", "ROW_QUALIFIER", "probe", "run"]

ATTRIBUTE = b"hibase.scan"
AGG_COLUMN_QUALIFIER = b"\x00hibase.agg"  # the cell of a region's partial aggregate
ROW_QUALIFIER = b"\x00hibase.row"  # stands for a matched row none of whose cells was asked for
_PROBE_ROW = b"\xff" * 8 + b"hibase-scan-probe"
CHUNK = 10_000  # rows per getScannerResults


def _scan(store: Any, start: bytes, stop: bytes, columns: list[bytes] | None, work: bytes,
          first_key_only: bool) -> Any:
    idl = store.rpc.t2.idl
    cols = None
    if columns is not None:
        cols = []
        for c in store.rpc.thrift_columns(columns):
            fam, sep, qual = c.partition(b":")
            cols.append(idl.TColumn(family=fam, qualifier=qual if sep else None))
    return idl.TScan(startRow=start, stopRow=stop, columns=cols, caching=CHUNK, maxVersions=1,
                     attributes={ATTRIBUTE: work},
                     filterString=b"FirstKeyOnlyFilter()" if first_key_only else None)


def probe(store: Any, table: str, family: bytes) -> bool:
    """Does the ScanObserver run on `table`'s regions? One scan of an empty key range
    carrying a COUNT(*): with the observer its region answers with a partial-aggregate cell,
    without it with nothing."""
    if store.rpc.t2 is None:
        return False
    work = json.dumps({"v": 1, "mode": "agg", "fam": family.hex(), "cols": [], "where": None,
                       "group": [], "aggs": [["count"]]}).encode()
    scan = _scan(store, _PROBE_ROW, _PROBE_ROW + b"\x00", None, work, False)
    try:
        got = store.rpc.call("getScannerResults", table.encode(), scan, 1, thrift2=True)
    except errors.HibaseError:
        return False
    return any(cv.qualifier == AGG_COLUMN_QUALIFIER for r in got for cv in r.columnValues)


def _range(store: Any, table: str, start: bytes, stop: bytes, columns: list[bytes] | None,
           work: bytes, first_key_only: bool) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """Every row the regions of [start, stop) return for the work, in key order."""
    out: list[tuple[bytes, dict[bytes, bytes]]] = []
    cursor = start
    while True:
        scan = _scan(store, cursor, stop, columns, work, first_key_only)
        got = store.rpc.call("getScannerResults", table.encode(), scan, CHUNK, thrift2=True)
        for r in got:
            out.append((r.row, {cv.family + b":" + cv.qualifier: cv.value
                                for cv in r.columnValues}))
        if len(got) < CHUNK:
            return out
        cursor = got[-1].row + b"\x00"  # the rest of the range, after the last row returned


def run(store: Any, table: str, work: bytes, columns: list[bytes] | None,
        first_key_only: bool = False) -> tuple[int, list[tuple[bytes, dict[bytes, bytes]]]]:
    """(number of regions, the rows they returned in key order) of `work` over `table`: one
    scan per region as HBase has them now, in parallel (at most pool_size in flight)."""
    if store.rpc.t2 is None:
        raise errors.BackendError("a pushed-down scan needs HBase's Thrift2 server "
                                  "(thrift2_port= in the URL)")
    starts = [r.start for r in store.layouts.live(table)] or [b""]
    ranges = [(s, starts[i + 1] if i + 1 < len(starts) else b"")
              for i, s in enumerate(starts)]
    parts = store.rpc.parallel(
        lambda rng: _range(store, table, rng[0], rng[1], columns, work, first_key_only), ranges)
    return len(ranges), [row for part in parts for row in part]
