"""Dump tables to a text file and restore them: a lossless copy of a store's tables, for
backups, moving data between stores (embedded and HBase alike) and between versions.

    from hibase.dump import dump, restore
    with open("backup.hdump", "w") as out:
        dump(db, out)                      # every table; or dump(db, out, ["flights"])
    with open("backup.hdump") as fh:
        restore(other_db, fh)              # creates the tables, writes the cells, builds indexes

The format is JSON lines (UTF-8), one object per line:

- ``{"hibase_dump": 1}`` first;
- per table, ``{"table": name, "families": {family: options}, "columns": {column: type},
  "split_size": bytes, "indexes": [{"name", "columns", "covering", "local"}]}`` (and
  ``"salt_buckets"`` for a salted table), then its rows (user rowkeys):
- ``{"row": key, "cells": [[column, timestamp_ms, value], ...]}``: every version of every cell
  the table keeps (newest first per column), with its timestamp;
- ``{"end": {"tables": n, "rows": n, "cells": n}}`` last, so a cut dump is refused.

Rowkeys, column names and values are written as the command line prints bytes (UTF-8, with
``\\xNN`` for bytes that are not text and control characters, ``\\t \\n \\r``, and ``\\\\`` for
a backslash; hibase.cli.show_bytes / parse_bytes), so a dump is readable and greppable and
every byte string comes back exactly. Restore refuses tables that exist, creates each table with
its families' options and declared column types, writes the cells with their timestamps, then
creates and builds the indexes (from the restored rows, so they are exact). Delete markers,
TTL-expired cells and region boundaries are not copied.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any, Callable, Iterable, Iterator

from . import errors

__all__ = ["dump", "restore", "show_bytes", "parse_bytes", "show_column", "parse_column",
           "FORMAT_VERSION"]

FORMAT_VERSION = 1

_NEEDS_ESCAPE = re.compile("[\x00-\x1f\x7f\\\\\udc80-\udcff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}
_UNESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|[\\ntr])")
_UNNAMED = {b"\\": b"\\", b"n": b"\n", b"t": b"\t", b"r": b"\r"}


def _escape_char(m: re.Match) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code - 0xDC00 if code >= 0xDC80 else code:02x}"


def show_bytes(b: bytes) -> str:
    """Bytes as printable text: UTF-8, with \\xNN for undecodable bytes and control characters,
    \\t \\n \\r, and \\\\ for a backslash (the inverse of parse_bytes)."""
    text = b.decode("utf-8", "surrogateescape")
    return _NEEDS_ESCAPE.sub(_escape_char, text) if _NEEDS_ESCAPE.search(text) else text


def parse_bytes(text: str) -> bytes:
    """A string written by show_bytes (or typed on the command line) as bytes: UTF-8, with
    \\xNN, \\t, \\n, \\r and \\\\ unescaped (any other backslash is kept as is)."""
    raw = text.encode("utf-8", "surrogateescape")
    if b"\\" not in raw:
        return raw
    return _UNESCAPE.sub(lambda m: (bytes([int(m.group(1)[1:], 16)]) if m.group(1)[:1] == b"x"
                                    else _UNNAMED[m.group(1)]), raw)


def show_column(col: bytes) -> str:
    """A column's HBase name b"family:qualifier" as every message and header spells it:
    family.qualifier (Phoenix's spelling), escaped as show_bytes does."""
    return show_bytes(col).replace(":", ".", 1)


def parse_column(text: str) -> bytes:
    """A column typed on the command line, family.qualifier or HBase's family:qualifier (or
    a bare family), as its HBase name b"family:qualifier"; the colon wins when both appear,
    so a qualifier may hold dots (f:a.b)."""
    raw = parse_bytes(text)
    if b":" in raw:
        return raw
    fam, dot, qual = raw.partition(b".")
    return fam + b":" + qual if dot else raw


def _line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def _rows(db: Any, t: Any, multi: bool) -> Iterator[tuple[bytes, list]]:
    """(rowkey, [(column, timestamp, value), ...]) of every row: every kept version (one read
    of the row's versions when `multi`, some family keeping more than one), newest first per
    column."""
    for key, data in t.scan(include_timestamp=True):
        if not multi:
            yield key, [(col, ts, value) for col, (value, ts) in sorted(data.items())]
            continue
        versions = db.store.read_row(t.name.decode(), key, None, None, 1 << 31)
        yield key, [(col, ts, value) for col in sorted(versions)
                    for ts, value in versions[col]]


def dump(db: Any, out: IO[str], tables: Iterable[str] | None = None,
         progress: Callable[[str, int], None] | None = None) -> dict:
    """Write `tables` (default: every table) of Connection `db` to the text stream `out` in
    the format above; returns {"tables", "rows", "cells"}. `progress(table, rows)` is called
    every 1,000 rows."""
    names = list(tables) if tables else [n.decode() for n in db.tables()]
    for name in names:
        db.table(name).schema  # an unknown table fails before anything is written
    counts = {"tables": 0, "rows": 0, "cells": 0}
    out.write(_line({"hibase_dump": FORMAT_VERSION}))
    for name in names:
        t = db.table(name)
        doc = t.schema.to_json()
        indexes = [{"name": d["name"], "columns": list(d["columns"]),
                    "covering": list(d["covering"]), "local": bool(d.get("local"))}
                   for d in db.indexes(name)]
        out.write(_line({"table": name, "families": doc["families"], "columns": doc["columns"],
                         "split_size": doc["split_size"], "indexes": indexes,
                         **({"salt_buckets": doc["salt_buckets"]} if "salt_buckets" in doc
                            else {})}))
        multi = any(o.get("max_versions", 1) != 1 for o in doc["families"].values())
        rows = 0
        for key, cells in _rows(db, t, multi):
            out.write(_line({"row": show_bytes(key),
                             "cells": [[show_bytes(c), ts, show_bytes(v)] for c, ts, v in cells]}))
            rows += 1
            counts["cells"] += len(cells)
            if progress is not None and rows % 1000 == 0:
                progress(name, rows)
        counts["rows"] += rows
        counts["tables"] += 1
    out.write(_line({"end": counts}))
    return counts


def _bad(line: int, why: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(f"not a hibase dump (line {line}): {why}")


def restore(db: Any, lines: Iterable[str], processes: int | None = None,
            progress: Callable[[str, int], None] | None = None) -> dict:
    """Read a dump (lines of text) into Connection `db`: tables (which must not exist yet),
    cells with their timestamps, then each table's indexes, built from the restored rows.
    Returns {"tables", "rows", "cells", "indexes"}. A cut or malformed dump raises
    InvalidArgument naming the line (tables made before it stay)."""
    it = iter(lines)
    first = next(it, "")
    try:
        head = json.loads(first) if first.strip() else None
    except ValueError:
        head = None
    if not isinstance(head, dict) or "hibase_dump" not in head:
        raise _bad(1, "it does not start with {\"hibase_dump\": 1} (make one with "
                      "`hibase dump`)")
    if head["hibase_dump"] != FORMAT_VERSION:
        raise _bad(1, f"format {head['hibase_dump']!r}; this hibase reads {FORMAT_VERSION}")
    counts = {"tables": 0, "rows": 0, "cells": 0, "indexes": 0}
    table: Any = None
    rows = 0

    def finish_table() -> None:
        if table is None:
            return
        for spec in pending_indexes:
            db.create_index(table.name.decode(), spec["name"], spec["columns"],
                            covering=spec.get("covering") or None,
                            local=bool(spec.get("local")), processes=processes)
            counts["indexes"] += 1

    pending_indexes: list[dict] = []
    end = None
    for n, text in enumerate(it, 2):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise _bad(n, f"invalid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise _bad(n, "expected a JSON object")
        if end is not None:
            raise _bad(n, "data after the end line")
        if "row" in obj:
            if table is None:
                raise _bad(n, "a row before any table line")
            key = parse_bytes(obj["row"])
            by_ts: dict[int, dict[bytes, bytes]] = {}
            try:
                for col, ts, value in obj["cells"]:
                    by_ts.setdefault(int(ts), {})[parse_bytes(col)] = parse_bytes(value)
            except (TypeError, ValueError, KeyError):
                raise _bad(n, "a row's cells are [column, timestamp, value] lists") from None
            for ts in sorted(by_ts):  # oldest first, as they were written
                table.put(key, by_ts[ts], timestamp=ts)
                counts["cells"] += len(by_ts[ts])
            rows += 1
            counts["rows"] += 1
            if progress is not None and rows % 1000 == 0:
                progress(table.name.decode(), rows)
        elif "table" in obj:
            finish_table()
            name = obj["table"]
            if name.encode() in db.tables():
                raise errors.TableExists(
                    f"table {name!r} exists: drop it first, or restore into another store")
            db.create_table(name, obj["families"], columns=obj.get("columns") or None,
                            split_size=obj.get("split_size"),
                            salt_buckets=obj.get("salt_buckets"))
            table, pending_indexes, rows = db.table(name), list(obj.get("indexes") or []), 0
            counts["tables"] += 1
        elif "end" in obj:
            finish_table()
            table, end = None, obj["end"]
        else:
            raise _bad(n, f"unknown line with keys {sorted(obj)}")
    if end is None:
        raise errors.InvalidArgument("the dump is cut short: no end line (the tables and rows "
                                     "before the cut were restored, without their indexes)")
    return counts
