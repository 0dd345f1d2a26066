"""The index build as a job on a distributed engine: a map-only MapReduce job over the table's
HBase regions (io.hibase.IndexBuildJob, cluster/mapreduce.py), one map task per region, as the
seed papers build static data and as Phoenix's IndexTool does. `hibase index create|build ...
--distributed`, `Connection.create_index(..., job=MapReduceJob())`, `build_index(...,
job=MapReduceJob())`.

This module does what build.py does around the scan and leaves the rows to the job:

- an index the region server keeps (IndexSpec.server: hibase's IndexObserver runs on the table)
  goes stale (the coprocessor stops writing it), is cleared, becomes `building` (the
  coprocessor keeps every write from then on) and each map task sends its region's row keys as
  reindex requests, which the coprocessor answers under each row's lock by writing the row's
  entry and count unless a write did already (build.py's _build_server, spread over tasks).
  Safe against concurrent writes of any client: nothing the job computes can be stale.
- a client-kept index (no coprocessor on the table): under this process's write lock the
  index is cleared and each map task computes its rows' entries with HibaseCodec (the Python
  build's bytes) and writes them verified, then its value counts in a count cell of its own.
  That is the one-process build's guarantee and no more: writers of this process wait, those
  of other processes are not stopped (on HBase the store's write lock is process-local).
  Local client-kept indexes are not built this way (their rows depend on the recorded region
  layout): the error says to build them without --distributed.

The embedded store has no HBase regions to run a job over: a one-line error says so.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Protocol

from .. import errors
from .build import counted, rebuild_server_kept
from .spec import BUILDING, READY, index_table

__all__ = ["BuildJob", "build_distributed"]


class BuildJob(Protocol):
    """A distributed engine's run of the build (cluster/mapreduce.py's MapReduceJob): handed
    in from above, since the engines live above the index layer."""

    def check(self, store: Any) -> None:
        """Refuse (one-line HibaseError) a store the job cannot run on, before any change."""

    def run(self, store: Any, mode: str, spec_json: bytes, table: str, index_kv: str,
            regions: int) -> dict[str, Any]:
        """Run the job over `table`'s regions, writing key-value table `index_kv` (mode
        "reindex": ask the coprocessor per row; "entries": write the entries); its report:
        {"rows", "seconds", "tasks": [{"rows", "ms"}, ...], "log", ...}."""
        ...


def build_distributed(indexer, table: str, name: str, job: BuildJob, *,
                      progress: Callable[[int, int], Any] | None = None) -> dict[str, Any]:
    """Rebuild index `name` of `table` with the MapReduce job; returns build_index's stats
    ({"rows_indexed", "values", "regions"}) and "job": the job's report (tasks with rows and
    milliseconds each, rows/s per task and in total, the log's path)."""
    store, catalog = indexer.store, indexer.catalog
    job.check(store)  # a missing JDK or configuration changes nothing
    spec = catalog.get(table, name)
    if spec.local and not spec.server:
        raise errors.InvalidArgument(
            f"index {name!r} is a local index kept by the clients (hibase's coprocessor does "
            "not run on the table): --distributed builds global indexes and server-kept ones; "
            "build it without --distributed")
    if not spec.server and store.schema(table).salt_buckets:
        raise errors.InvalidArgument(
            f"table {table!r} is salted and its index {name!r} is kept by the clients: the "
            "job's entries would carry stored (salted) rowkeys; build it without "
            "--distributed, or where hibase's coprocessor keeps it")
    try:
        if spec.state != BUILDING:
            catalog.set_state(spec, BUILDING)  # as IndexManager.build: others stop querying
        indexer._wait_lease()  # every writer maintains it (or knows it changed) from here
        indexer._follow_splits(table, [spec], force=True)
        regions = len(store.regions(table))
        body = json.loads(spec.to_json())
        body.update(upkeep="server", state="building")  # the Java side's Spec fields
        run = lambda mode: job.run(  # noqa: E731
            store, mode, json.dumps(body).encode(), table, index_table(table), regions)
        t0 = time.perf_counter()
        if spec.server:
            report = rebuild_server_kept(store, catalog, spec, lambda: run("reindex"))
        else:
            with store.write_lock():
                catalog.clear(spec)
                report = run("entries")
                catalog.set_state(spec, READY)
        seconds = time.perf_counter() - t0
        if progress:
            progress(regions, regions)
    finally:
        indexer._entries_changed(table)
    rows, values = counted(store, spec)
    for t in report["tasks"]:
        t["rows_per_s"] = round(t["rows"] / (t["ms"] / 1000), 1) if t["ms"] else None
    report["rows_per_s"] = round(report["rows"] / report["seconds"], 1) \
        if report["seconds"] else None
    report["build_seconds"] = round(seconds, 3)  # the job plus the state changes around it
    return {"rows_indexed": rows, "values": values, "regions": regions, "job": report}
