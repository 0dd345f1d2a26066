"""Region layouts of the HBase backend: the region boundaries local-index rows are keyed by.

HBase splits regions on its own and Thrift1 tells no client. So the HBase store records, per
table, the layout its local indexes follow (catalog meta key ``regions/<table>``:
msgpack ``[[start key, region id], ...]``) and ``regions()`` answers with it. ``follow(table)``
(the index layer calls it before a write computes local rows and before a query plans, at most
once per ``region_check_ms``) compares the layout with HBase's regions: every start key HBase
reports that the layout lacks is a split, and the store's split listeners run for it as on the
embedded store. Their writes cannot be one atomic batch here, so they go out in three steps:

1. the marker ``split/<table>`` = [parent start, split key, left id, right id], then every put
   (the right daughter's rows copied under its start key, both daughters' counts): the old
   layout never reads the new prefix;
2. the new layout (one put; other clients pick it up with the catalog's generation check);
3. every delete (the rows copied in 1, from under the parent's prefix), then the marker goes.

Between 2 and 3 readers drop entries whose rowkey lies outside the region they scan
(index/local.py), so no row is seen twice. A reader still on the old layout when 3 deletes the
parent's copies would miss rows, so local scans on this backend compare the stored layout
(``layout_token``, one get) before and after reading and read again when it changed. A client
that dies between steps leaves the marker: the next ``follow`` (of any client) runs that split
again, and the listeners' rewrite is idempotent (tests stop a split with the store's
``faults.arm("split-copy")`` or ``"split-switch"``). Region merges are not followed: the layout
keeps the finer partition, which is still exact (the merged region's rows sit under two
prefixes, each read with its own range).
"""

from __future__ import annotations

import bisect
import time
from typing import Any

from ... import errors
from .. import cells as C
from ..base import Region
from .kv import META_COL, META_TABLE

__all__ = ["HRegion", "Layouts"]


class HRegion(Region):
    """A region as HBase reports it, with its region server."""

    def __init__(self, table: str, start: bytes, end: bytes, id: int, server: bytes, port: int,
                 name: bytes, version: int):
        super().__init__(table, start, end, id, 0)
        self.server, self.port, self.name, self.version = server, port, name, version

    def info(self) -> dict:
        return {"start_key": self.start, "end_key": self.end, "id": self.id, "name": self.name,
                "version": self.version, "server_name": self.server, "port": self.port}


class _SplitWrites:
    """The SplitBatch a split listener fills: puts and deletes kept apart so puts, layout switch
    and deletes can be ordered."""

    def __init__(self) -> None:
        self.puts: list[tuple[str, bytes, bytes]] = []
        self.deletes: list[tuple[str, bytes, None]] = []

    def put(self, kv: str, key: bytes, value: bytes) -> None:
        self.puts.append((kv, key, value))

    def delete(self, kv: str, key: bytes) -> None:
        self.deletes.append((kv, key, None))


def _layout_key(table: str) -> bytes:
    return b"regions/" + table.encode()


def _marker_key(table: str) -> bytes:
    return b"split/" + table.encode()


class Layouts:
    """The recorded layouts of one HBaseStore's tables, and following HBase's splits."""

    def __init__(self, store: Any, check_s: float):
        self.store = store
        self.check_s = check_s
        self._parsed: dict[str, tuple[bytes, list[HRegion]]] = {}
        self._live: dict[str, list[HRegion]] = {}
        self._checked: dict[str, float] = {}

    def live(self, table: str) -> list[HRegion]:
        """HBase's regions of `table` now (one getTableRegions call; again while a region is
        in transition, which real HBase's Thrift1 server answers with an internal error)."""
        from thriftpy2.thrift import TApplicationException

        deadline = time.monotonic() + 30
        while True:
            try:
                got = self.store.rpc.call("getTableRegions", table.encode())
                break
            except TApplicationException:
                if time.monotonic() > deadline:
                    raise errors.BackendError(
                        f"HBase keeps failing to list the regions of {table!r}") from None
                time.sleep(0.05)
        out = [HRegion(table, r.startKey or b"", r.endKey or b"", r.id, r.serverName or b"",
                       r.port or 0, r.name or b"", r.version or 0) for r in got]
        out.sort(key=lambda r: r.start)
        self._live[table] = out
        return out

    def regions(self, table: str) -> list[HRegion]:
        """The layout local rows follow; HBase's regions while none is recorded (a table
        without local indexes: `follow` records one)."""
        raw = self.store.meta_value(_layout_key(table))
        if raw is None:
            return self.live(table)
        got = self._parsed.get(table)
        if got is not None and got[0] == raw:
            return got[1]
        regions = self._materialize(table, [(bytes(s), i) for s, i in C.unpack(raw)])
        self._parsed[table] = (raw, regions)
        return regions

    def _materialize(self, table: str, pairs: list[tuple[bytes, int]]) -> list[HRegion]:
        """Layout regions with the server of the HBase region holding each one's start."""
        live = self._live.get(table) or self.live(table)
        starts = [r.start for r in live]
        out = []
        for i, (start, rid) in enumerate(pairs):
            end = pairs[i + 1][0] if i + 1 < len(pairs) else b""
            host = live[max(bisect.bisect_right(starts, start) - 1, 0)]
            out.append(HRegion(table, start, end, rid, host.server, host.port, host.name,
                               host.version))
        return out

    def stored(self, table: str) -> bytes:
        """The layout as HBase holds it now, read past this client's copy (b"" when none)."""
        got = self.store.rpc.get_raw(META_TABLE, [b"meta/" + _layout_key(table)], [META_COL])[0]
        return got[META_COL][1] if got else b""

    def _record(self, table: str, pairs: list[tuple[bytes, int]]) -> None:
        self.store.put_meta(_layout_key(table), C.pack([[s, i] for s, i in pairs]))

    def forget(self, table: str) -> None:
        """A dropped table: its layout and any split marker go."""
        for key in (_layout_key(table), _marker_key(table)):
            if self.store.meta_value(key) is not None:
                self.store.put_meta(key, None)
        self._parsed.pop(table, None)
        self._live.pop(table, None)
        self._checked.pop(table, None)

    def follow(self, table: str, force: bool = False) -> int:
        """Apply the splits HBase made since the layout was recorded (at most once per
        `check_s` unless `force`; the first call records HBase's regions as the layout);
        returns how many were applied (a left-over split of a client that died half way
        included)."""
        now = time.monotonic()
        if not force and now - self._checked.get(table, -1e18) < self.check_s:
            return 0
        self._checked[table] = now
        store = self.store
        if store.read_only:
            return 0
        done = 0
        with store.write_lock():
            store.layout_token(table)  # another client's split: read its marker and layout
            marker = store.meta_value(_marker_key(table))
            if marker is not None:
                self._split(table, *C.unpack(marker))
                done += 1
            if store.meta_value(_layout_key(table)) is None:
                self._record(table, _unique_ids(self.live(table)))
                return done
            layout = self.regions(table)
            known = {r.start for r in layout}
            for at in sorted(r.start for r in self.live(table) if r.start not in known):
                layout = self.regions(table)
                parent = layout[bisect.bisect_right([r.start for r in layout], at) - 1]
                rid = max(time.time_ns() // 1000, max(r.id for r in layout) + 1)
                self._split(table, parent.start, at, rid, rid + 1)
                done += 1
        return done

    def _split(self, table: str, start: bytes, at: bytes, left_id: int, right_id: int) -> None:
        """Split the layout's region starting at `start` at `at` (or finish that split: the
        layout may already hold both daughters): listeners' puts, switch, deletes."""
        store = self.store
        layout = self.regions(table)
        pairs = [(r.start, r.id) for r in layout]
        i = next(k for k, r in enumerate(layout) if r.start == start)
        switched = i + 1 < len(layout) and layout[i + 1].start == at
        end = layout[i + 1 + switched].start if i + 1 + switched < len(layout) else b""
        parent = Region(table, start, end, layout[i].id, 0)
        left = Region(table, start, at, left_id, 0)
        right = Region(table, at, end, right_id, 0)
        store.put_meta(_marker_key(table), C.pack([start, at, left_id, right_id]))
        writes = _SplitWrites()
        for listener in store._split_listeners:
            listener(table, parent, left, right, writes)
        store.write_kv(writes.puts)
        self._fault("split-copy")
        if not switched:
            self._record(table, pairs[:i] + [(start, left_id), (at, right_id)] + pairs[i + 1:])
        self._fault("split-switch")
        store.write_kv(writes.deletes)
        store.put_meta(_marker_key(table), None)

    def _fault(self, step: str) -> None:
        """Fault injection (tests): the store's `faults` may stop the split after `step`."""
        self.store.faults.reached(step)


def _unique_ids(regions: list[HRegion]) -> list[tuple[bytes, int]]:
    """(start, id) per region with ids made unique: real HBase gives both daughters of a split
    the same regionId (the split's time), while local indexes and routing key by id."""
    used: set[int] = set()
    out = []
    for r in regions:
        rid = r.id
        while rid in used:
            rid += 1
        used.add(rid)
        out.append((r.start, rid))
    return out
