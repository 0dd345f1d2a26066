"""Full verification of an embedded store's files (`hibase check`): the MANIFEST's framing,
the write-ahead logs' last records (a torn tail, wal.py), the table files on disk against those
the MANIFEST lists, and every key of every column family read back through RocksDB's block
checksums (a bad block raises instead of ending a scan)."""

from __future__ import annotations

import fcntl
import os
import re
import struct
from typing import Any, Callable

from ... import errors
from .rocks import check_manifest, checked_items, translate
from .wal import wal_problems

__all__ = ["verify_files"]

_SST = re.compile(r"^(\d+)\.sst$")
_FLOCK = "hh4xqqi4x"  # struct flock on Linux: type, whence, start, len, pid


def _writer_pid(folder: str) -> int | None:
    """The pid of another process holding the store's LOCK (RocksDB takes a POSIX write lock
    on it), asked with F_GETLK, which takes no lock itself; None when there is none."""
    try:
        fd = os.open(os.path.join(folder, "LOCK"), os.O_RDONLY)
    except OSError:
        return None
    try:
        got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(_FLOCK, fcntl.F_WRLCK, 0, 0, 0, 0))
    except OSError:
        return None
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack(_FLOCK, got)
    return None if kind == fcntl.F_UNLCK else pid


def _column_families(store: Any) -> list[tuple[str, Any]]:
    """(name, Rdict view) of every column family: the catalog, table families, key-value
    tables (indexes, value tables, local indexes)."""
    out = [("catalog", store._db)]
    for name in store.tables(internal=True):
        for fam, (view, _, _) in store.table(name).fams.items():
            out.append((f"table {name} family {fam.decode()}", view))
    for name in store.kv_tables():
        out.append((f"key-value table {name}", store._kv[name][0]))
    return out


def verify_files(store: Any, progress: Callable[[str, int], None] | None = None
                 ) -> dict[str, Any]:
    """Check every file of an open EmbeddedStore; returns {"ok", "files", "bytes", "keys",
    "column_families", "wal_files" (logs read to their last record; None beside a live
    writer), "problems": [{"file", "problem"}]}. `progress(what, keys)` is called
    as each column family is read."""
    problems: list[dict[str, str]] = []
    try:
        check_manifest(store.path)
    except errors.StoreCorrupted as exc:
        problems.append({"file": exc.path or store.path, "problem": str(exc)})
    live = {f["name"].lstrip("/"): f for f in store._db.live_files()}
    writer = _writer_pid(store.path)
    wal_files = None
    if not writer:  # a live writer's log can be mid-record: only a still log is judged
        wal_files = sum(1 for n in os.listdir(store.path) if n.endswith(".log"))
        problems.extend({"file": p["file"], "problem": p["problem"]}
                        for p in wal_problems(store.path))
    # a writer flushes and compacts meanwhile: the folder's files then differ from those of
    # the MANIFEST as this read-only open saw it, which proves nothing
    on_disk = live.keys() if writer else {n for n in os.listdir(store.path) if _SST.match(n)}
    for name in sorted(live.keys() - on_disk):
        problems.append({"file": os.path.join(store.path, name),
                         "problem": "listed by the MANIFEST but missing from the folder"})
    for name in sorted(on_disk - live.keys()):
        problems.append({"file": os.path.join(store.path, name), "problem":
                         "a table file the MANIFEST does not list (its data is not part of the "
                         "store: a MANIFEST rewound or cut, or a crash's leftover)"})
    keys = 0
    families = _column_families(store)
    for what, view in families:
        n = 0
        try:
            for _ in checked_items(view):
                n += 1
        except Exception as exc:
            err = translate(exc, store.path)
            problems.append({"file": getattr(err, "path", None) or store.path,
                             "problem": f"{what}: {err}"})
        keys += n
        if progress is not None:
            progress(what, n)
    return {"ok": not problems, "files": len(live), "writer_pid": writer, "wal_files": wal_files,
            "bytes": sum(int(f.get("size", 0)) for f in live.values()), "keys": keys,
            "column_families": len(families), "problems": problems}

