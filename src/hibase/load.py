"""Bulk loading of CSV and JSON-lines files into a table, in the manner of HBase's ImportTsv.

    from hibase.load import load_file
    stats = load_file(db.table("calls"), "calls.csv", "csv", rowkey="{mdn}:{ts}", family="f")
    stats["rows"], stats["rejected"], stats["replaced"], stats["records"], stats["seconds"]

Rules:

- The rowkey is one input column (`rowkey_column=`, which is then not stored as a cell unless it
  is also in `columns_map`), or a template of columns (`rowkey="{mdn}:{ts}"`, `{{`/`}}` for
  literal braces), whose columns are stored as cells too.
- Every other input column `name` becomes the cell `family:name`, where `family` is the given
  default (or the table's only family), unless `columns_map` maps it (`{"name": "f:q"}`); an input
  column already named `fam:qual` (or `fam.qual`, the spelling hibase's output prints) for a
  family of the table is that column.
- CSV: the header row names the columns; empty fields make no cell (as ImportTsv). JSON lines:
  one object per line; `null` makes no cell, strings are stored as UTF-8, other values as their
  JSON text. Bytes that are not UTF-8 pass through unchanged.
- Values are text; a column declared binary (`"long binary"`) gets its `Bytes.toBytes` layout.
- A bad row (unparsable line, missing rowkey column, a value that does not parse as its column's
  declared type...) is rejected with its line number and the load goes on; with `strict=True`
  the load stops there with LoadError: every row before it is written, nothing from it on.
- The file may be gzip, bz2 or xz compressed (told by its first bytes); one that is not text
  (NUL bytes, mostly non-UTF-8 bytes) is refused before anything is written. An input with no
  key column takes `rowkey_auto="row"` (row numbers), `"uuid"` or `"ulid"`.
- Writes go through `table.batch()`, sent every `batch_size` cells; a tqdm bar on stderr
  follows the bytes read.

Every record read is accounted for: `records` = `rows` (new rows) + `rejected` + `replaced` +
`skipped` + `empty` (a record with no value: it writes nothing).

- Records are what Python's csv module reads (lines end at \n, a \r\n pair too; blank lines
  are no records), with one exception, an unclosed quote: csv swallows every line after it
  into one field, up to the next quote, or to the end of the file. So a record csv reads
  cleanly over several lines must also read in csv's strict mode (its quoted fields closed,
  each closing quote followed by the delimiter or the line's end); if not, its first line,
  where the quote opened, is rejected as one record and reading starts again at the next
  line, so the records after it load (a user counting lines expects that; a quoted field
  holding line breaks that closes properly is still one record). A record csv itself fails
  on is one rejected record, however many lines it covered (the message names them).
- A repeated rowkey (a key an earlier record of this load wrote, or a row the table held
  before the load) is counted, never silent: `on_duplicate="replace"` (the default, as an
  HBase put) makes the row the new record: the record's put, after a delete of the cells
  the earlier record (or row) has in the columns this load writes and the new record has
  not, so no cell of the earlier record stays (columns this load does not write stay, as a
  put leaves them); it counts as `replaced`, not in `rows`, so `rows` is what the load adds
  to COUNT(*). `"skip"` keeps the first (`skipped`), `"error"` rejects the repeat as a bad
  row (with `strict`, the load stops there). Records with no value take no part. Cost: uuid and ulid keys are not checked (they do not repeat); other keys are kept
  in memory while the table was empty before the load (up to about 64 MiB of keys), else
  looked up in the table with one multi-get per batch (where the rows this load already
  wrote are too). Another writer putting the same keys during the load is not seen.
- Rows are checked and their repeats decided as each batch is written, in file order, so
  rejected rows are reported (and `strict` stops) in file order. JSON lines: a record is a
  line that is not blank.

Loading into a new table, `detect_types(path)` reads the file once first and names a type for
each input column (long, double, string; see its doc), `cell_types(...)` keys them by the cell
columns the load will write, for `create_table(..., columns=...)`: what `hibase load --create`
does, so numbers compare as numbers in SQL.
"""

from __future__ import annotations

import csv
import json
import lzma
import math
import os
import re
import sys
import time
import zlib
from collections import deque
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, Protocol, runtime_checkable

from tqdm import tqdm

from . import codec, errors

__all__ = ["load_file", "LoadError", "RowKeyTemplate", "AutoKey", "ROWKEY_AUTO", "text_to_cell",
           "cell_to_text", "detect_format", "detect_types", "cell_column", "cell_types",
           "FORMATS", "open_input", "check_text", "compression_of", "ON_DUPLICATE"]

FORMATS = ("csv", "jsonl")
_MAX_ERRORS_KEPT = 100
csv.field_size_limit(2**31 - 1)  # HBase cells can be large; the csv module's 128 KiB is not


class LoadError(errors.InvalidArgument):
    """A load stopped (strict mode, or bad setup); `line` is the input line, `stats` the counts
    so far (rows already written stay written)."""

    def __init__(self, message: str, line: int | None = None, stats: dict | None = None):
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line
        self.stats = stats or {}


class _Reject(Exception):
    """One input row cannot be loaded."""


class RowKeyTemplate:
    """An ImportTsv-like rowkey built from columns: ``"{mdn}:{ts}"``."""

    def __init__(self, template: str):
        self.template = template
        self.parts: list[tuple[bool, str]] = []  # (is_field, text)
        lit: list[str] = []
        i = 0
        while i < len(template):
            c = template[i]
            if c in "{}" and template.startswith(c * 2, i):
                lit.append(c)
                i += 2
            elif c == "{":
                j = template.find("}", i + 1)
                if j < 0 or j == i + 1:
                    raise errors.InvalidArgument(
                        f"rowkey template {template!r}: '{{' at {i} needs a column name and '}}'")
                if lit:
                    self.parts.append((False, "".join(lit)))
                    lit = []
                self.parts.append((True, template[i + 1:j]))
                i = j + 1
            elif c == "}":
                raise errors.InvalidArgument(
                    f"rowkey template {template!r}: single '}}' at {i} (write '}}}}')")
            else:
                lit.append(c)
                i += 1
        if lit:
            self.parts.append((False, "".join(lit)))
        self.fields = [text for is_field, text in self.parts if is_field]
        if not self.fields:
            raise errors.InvalidArgument(
                f"rowkey template {template!r} names no column; write e.g. '{{id}}' or "
                "'{a}:{b}'")
        # what render joins: a column's name (str) or literal bytes
        self._parts: list[str | bytes] = [t if f else t.encode("utf-8", "surrogateescape")
                                          for f, t in self.parts]

    @classmethod
    def column(cls, name: str) -> "RowKeyTemplate":
        """The rowkey is exactly one column's value."""
        t = cls.__new__(cls)
        t.template, t.parts, t.fields, t._parts = name, [(True, name)], [name], [name]
        return t

    def render(self, record: Mapping[str, bytes | None]) -> bytes:
        out = []
        for part in self._parts:
            if isinstance(part, str):
                value = record.get(part)
                if not value:
                    raise _Reject(f"rowkey column {part!r} is missing or empty")
                out.append(value)
            else:
                out.append(part)
        return b"".join(out)


ROWKEY_AUTO = ("row", "uuid", "ulid")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class AutoKey:
    """Rowkeys for an input with no key column: ``row`` the data row's number (1, 2, ...)
    zero-padded to 12 digits so keys sort in file order and loading the file again rewrites the
    same rows; ``uuid`` a random UUID4 (36 characters); ``ulid`` a ULID (26 characters, sorting
    by creation time, increasing within one load)."""

    fields: list[str] = []

    def __init__(self, kind: str):
        if kind not in ROWKEY_AUTO:
            raise errors.InvalidArgument(f"rowkey_auto must be one of {ROWKEY_AUTO}, not {kind!r}")
        self.kind, self.n, self._last = kind, 0, (0, 0)

    def render(self, record: Any) -> bytes:
        self.n += 1
        if self.kind == "row":
            return b"%012d" % self.n
        if self.kind == "uuid":
            import uuid

            return str(uuid.uuid4()).encode()
        ms = time.time_ns() // 1_000_000
        last_ms, last_rand = self._last
        rand = last_rand + 1 if ms <= last_ms else int.from_bytes(os.urandom(10), "big")
        ms = max(ms, last_ms)
        self._last = (ms, rand)
        value = (ms << 80) | (rand & ((1 << 80) - 1))
        return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1)).encode()


def text_to_cell(ctype: codec.ColumnType | None, raw: bytes) -> bytes:
    """The cell bytes for a value given as text: unchanged, except for a column declared binary,
    whose text (``42``) is parsed and written in its ``Bytes.toBytes`` layout."""
    if ctype is None or not ctype.binary:
        return raw
    value = codec.decode_cell(codec.ColumnType(ctype.name, False), raw)
    return codec.encode_cell(ctype, value)


def cell_to_text(ctype: codec.ColumnType | None, raw: bytes) -> bytes:
    """The inverse of text_to_cell, for display; cells that do not decode are returned as is."""
    if ctype is None or not ctype.binary:
        return raw
    try:
        value = codec.decode_cell(ctype, raw)
        return codec.encode_cell(codec.ColumnType(ctype.name, False), value)
    except errors.HibaseError:
        return raw


def cell_column(name: str, families: Iterable[str], family: str | None,
                columns_map: Mapping[str, str] | None = None) -> str | None:
    """The cell ``family:qualifier`` that load_file stores input column `name` as: its
    `columns_map` target; itself when it is already ``fam:qual`` for one of `families`, or
    ``fam.qual`` (the spelling hibase's --csv output prints, so it loads back); else
    ``family:name`` under the default `family`; None when it has none."""
    if columns_map and name in columns_map:
        return columns_map[name]
    for mark in (":", "."):
        fam, sep, qual = name.partition(mark)
        if sep and qual and fam in families:
            return f"{fam}:{qual}"
    return None if family is None else f"{family}:{name}"


def detect_format(path: str) -> str:
    """'jsonl' for .jsonl / .ndjson / .json files (also compressed: .jsonl.gz), else 'csv'."""
    return ("jsonl" if _format_path(path).lower().endswith((".jsonl", ".ndjson", ".json"))
            else "csv")


# -- input files: compressed or not, text or not -----------------------------------------------

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))
_EXTENSIONS = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".xz": "xz"}
_SNIFF = 8192


def compression_of(path: str, head: bytes = b"") -> str | None:
    """'gzip', 'bz2' or 'xz' by the file's first bytes (`head`), else by its extension; None
    for a plain file."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head:
        return None
    return _EXTENSIONS.get(os.path.splitext(path.lower())[1])


def _format_path(path: str) -> str:
    """The path without a compression extension (`a.jsonl.gz` is JSON lines)."""
    base, ext = os.path.splitext(path)
    return base if ext.lower() in _EXTENSIONS else path


@runtime_checkable
class PeekableStream(Protocol):
    """What open_input gives to read: a binary stream that can look ahead without consuming
    (io.BufferedReader, or gzip's, bz2's and lzma's file objects)."""

    def read(self, size: int = ..., /) -> bytes: ...
    def peek(self, size: int, /) -> bytes: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...


def open_input(path: str) -> tuple[PeekableStream, IO[bytes]]:
    """(decompressed binary stream, raw stream) for `path` ("-": stdin): gzip, bz2 and xz are
    recognized by their first bytes, so a compressed file loads whatever its name. The raw
    stream is what to close and what progress follows (its position in the file)."""
    import io

    raw: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")
    # a stdin that cannot peek (a test runner's) is buffered; typeshed wants a raw stream
    # there (readinto...), which IO[bytes] does not promise
    buffered = (raw if isinstance(raw, PeekableStream)
                else io.BufferedReader(raw))  # type: ignore[type-var]
    head = buffered.peek(8)[:8]
    kind = compression_of(path, head)
    if kind is None:
        return buffered, raw
    import bz2
    import gzip
    import lzma

    if kind == "gzip":
        return gzip.GzipFile(fileobj=buffered), raw
    opener = {"bz2": bz2.BZ2File, "xz": lzma.LZMAFile}[kind]
    return opener(buffered), raw


def binary_reason(sample: bytes) -> str | None:
    """Why the first bytes of a (decompressed) input are not CSV or JSON-lines text, or None:
    NUL bytes, or mostly bytes that are neither UTF-8 nor printable."""
    if not sample:
        return None
    if sample[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "it is UTF-16 text: convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8"
    if b"\x00" in sample:
        return "it holds NUL bytes"
    text = sample.decode("utf-8", "surrogateescape")
    odd = sum(1 for c in text if "\udc80" <= c <= "\udcff" or (c < " " and c not in "\t\n\r"))
    if len(text) >= 64 and odd * 10 > len(text) * 3:  # Latin-1 text passes, random bytes not
        return f"{odd} of its first {len(text)} characters are not text"
    return None


def check_text(path: str) -> None:
    """Raise LoadError when `path` (decompressed) does not look like CSV or JSON-lines text:
    before a load creates or writes anything. Stdin is not read here."""
    if path == "-":
        return
    try:
        fh, src = open_input(path)
        try:
            sample = fh.read(_SNIFF)
        finally:
            src.close()
    except (OSError, EOFError, ValueError) as exc:  # a corrupt gzip/bz2/xz stream
        raise LoadError(f"cannot read {path}: {exc}") from None
    reason = binary_reason(sample)
    if reason is not None:
        raise LoadError(f"{path} is not a CSV or JSON-lines text file ({reason}); gzip, bz2 "
                        "and xz compressed text is read as is")


# -- readers: (line number, record or None, error or None) --------------------------------------

class _Progress:
    """Counts the bytes read; feeds a tqdm bar once one is attached (after the header)."""

    def __init__(self, stats: dict):
        self.stats, self.bar, self.pending = stats, None, 0

    def add(self, n: int) -> None:
        self.stats["bytes"] += n
        self.pending += n
        if self.bar is not None and self.pending >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self.bar is not None:
            self.bar.update(self.pending)
            self.pending = 0


def _lines(fh: Iterable[bytes], progress: _Progress) -> Iterator[str]:
    first = True
    for raw in fh:
        progress.add(len(raw))
        line = raw.decode("utf-8", "surrogateescape")
        if first:
            line, first = line.removeprefix("\ufeff"), False
        yield line
    progress.flush()


def _unescaped(raw: bytes | None) -> bytes | None:
    """A field written as the command line prints bytes, as those bytes."""
    if not raw or b"\\" not in raw:
        return raw
    from .dump import parse_bytes

    return parse_bytes(raw.decode("utf-8", "surrogateescape"))


def _clip(text: str, limit: int = 200) -> str:
    """Text for a one-line message: control characters and undecodable bytes as \\xNN, cut
    to `limit` characters."""
    from .dump import show_bytes

    shown = show_bytes(text.encode("utf-8", "surrogateescape"))
    return shown if len(shown) <= limit else shown[:limit - 3] + "..."


class _LineSource:
    """The lines csv.reader reads, numbered from 1: `taken` holds the (number, line) pairs it
    took for the record being read, `again` lines to hand out again before reading on (what is
    left of a run-on record after its first line)."""

    __slots__ = ("lines", "again", "taken", "n")

    def __init__(self, lines: Iterator[str]):
        self.lines, self.n = lines, 0
        self.again: deque[tuple[int, str]] = deque()
        self.taken: list[tuple[int, str]] = []

    def __iter__(self) -> "_LineSource":
        return self

    def __next__(self) -> str:
        if self.again:
            item = self.again.popleft()
        else:
            self.n += 1
            item = (self.n, next(self.lines))
        self.taken.append(item)
        return item[1]


def _run_on(taken: list[tuple[int, str]], delimiter: str) -> str | None:
    """Why a record csv read cleanly over several lines (`taken`) is a quoted field running
    on, or None when it reads in csv's strict mode too (a quoted field holding line breaks)."""
    strict = csv.reader([text for _, text in taken], delimiter=delimiter, strict=True)
    try:
        for _ in strict:
            pass
        return None
    except csv.Error as exc:
        error = str(exc)
    first, last = taken[0][0], taken[-1][0]
    if "unexpected end of data" in error:
        how = f"it runs on to the end of the file (line {last})"
    else:
        where = taken[min(max(strict.line_num, 1), len(taken)) - 1][0]
        how = (f"the quote that ends it, on line {where}, is followed by more text instead of "
               "the delimiter or the line's end")
    return (f"a quoted field opened on line {first} does not close ({how}; csv would read "
            f"lines {first}-{last} as one record): this line is rejected, reading goes on at "
            f"line {first + 1}")


def _csv_records(lines: Iterator[str], delimiter: str,
                 null_string: str | None = None) -> tuple[list[str], Iterator[tuple]]:
    src = _LineSource(lines)
    reader = csv.reader(src, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise LoadError("the CSV file is empty (it needs a header row naming the columns)")
    except csv.Error as exc:
        raise LoadError(f"cannot read the CSV header: {exc}", 1) from None
    if len(src.taken) > 1:
        why = _run_on(src.taken, delimiter)
        if why is not None:
            raise LoadError(f"cannot read the CSV header: {why.rpartition(': this line')[0]}", 1)
    names = [h.strip() for h in header]
    dup = sorted({n for n in names if names.count(n) > 1})
    if "" in names or dup:
        shown = ", ".join(f"'{h}'" if h else "''" for h in names[:20])
        raise LoadError("the CSV header needs distinct, non-empty column names, not "
                        f"{_clip(shown)}" + (f" (repeated: {', '.join(dup)})" if dup else "")
                        + " (is the first line a header?)", 1)
    width = len(names)

    def records() -> Iterator[tuple]:
        while True:
            taken = src.taken = []
            error = None
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                fields, error = [], exc
            line = taken[0][0]
            if error is not None:
                span = f" (lines {line}-{taken[-1][0]}, one record)" if len(taken) > 1 else ""
                yield line, None, f"malformed CSV{span}: {error}"
                continue
            if len(taken) > 1:
                why = _run_on(taken, delimiter)
                if why is not None:
                    src.again.extendleft(reversed(taken[1:]))
                    yield line, None, why
                    continue
            if not fields:
                continue  # blank line
            if len(fields) != width:
                yield line, None, f"{len(fields)} fields, the header has {width}"
                continue
            yield line, {n: f.encode("utf-8", "surrogateescape")
                         if f and f != null_string else None
                         for n, f in zip(names, fields)}, None

    return names, records()


def _json_value(v: Any) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogateescape")


def _jsonl_records(lines: Iterator[str]) -> Iterator[tuple]:
    for line, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            yield line, None, f"invalid JSON: {exc}"
            continue
        if not isinstance(obj, dict):
            yield line, None, f"expected a JSON object, got {type(obj).__name__}"
            continue
        yield line, {str(k): _json_value(v) for k, v in obj.items()}, None


# -- the loader --------------------------------------------------------------------------------

ON_DUPLICATE = ("replace", "skip", "error")
_SEEN_MAX_BYTES = 64 << 20  # keys remembered in memory (about 72 bytes each besides the key)


def load_file(table: Any, path: str, format: str | None = None, rowkey: str | None = None,
              columns_map: Mapping[str, str] | None = None, batch_size: int = 1000,
              progress: bool = False, *, rowkey_column: str | None = None,
              family: str | None = None, strict: bool = False, delimiter: str = ",",
              on_reject: Callable[[int, str], None] | None = None,
              rowkey_auto: str | None = None, unescape: bool = False,
              on_duplicate: str = "replace", null_string: str | None = None,
              stats: dict | None = None) -> dict:
    """Load a CSV or JSON-lines file (``"-"``: stdin) into `table` (a hibase Table).

    Exactly one of `rowkey` (a template such as ``"{mdn}:{ts}"``), `rowkey_column` and
    `rowkey_auto` (``"row"``, ``"uuid"``, ``"ulid"``: see AutoKey, for inputs with no key
    column) is given. The file may be gzip, bz2 or xz compressed (told by its first bytes); a
    file that is not text is refused before anything is written (check_text). `unescape`
    reads ``\\xNN``, ``\\t``, ``\\n``, ``\\r`` and ``\\\\`` in values (and the rowkey) as
    the bytes they stand for, as the command line prints bytes (hibase.dump.parse_bytes).
    `on_duplicate` says what a record whose rowkey is already taken does (``"replace"``,
    ``"skip"``, ``"error"``: see the module's doc). A CSV value equal to `null_string`
    (e.g. ``"NA"``) is NULL, as an empty field is: no cell. `stats`, when given, is the dict
    the counts are kept in as the load goes (and returned): what was written when the load
    stops on an exception that carries no counts (KeyboardInterrupt).

    Returns ``{"records", "rows", "replaced", "skipped", "rejected", "empty", "lines", "bytes",
    "seconds", "rows_per_second", "errors", "on_duplicate"}``: every record read lands in
    exactly one of rows (new rows), replaced, skipped, rejected and empty (no values), so they
    add up to `records`; `errors` holds the first rejected rows as (line, message), and every
    one also goes to `on_reject(line, message)` when given. Raises LoadError for a bad setup
    (before anything is written) and, with `strict`, at the first bad row."""
    if [rowkey, rowkey_column, rowkey_auto].count(None) != 2:
        raise errors.InvalidArgument("give exactly one of rowkey (a template), rowkey_column "
                                     "and rowkey_auto")
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise errors.InvalidArgument(f"unknown format {fmt!r}; use one of {FORMATS}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise errors.InvalidArgument("batch_size must be an int >= 1")
    if on_duplicate not in ON_DUPLICATE:
        raise errors.InvalidArgument(f"on_duplicate must be one of {ON_DUPLICATE}, not "
                                     f"{on_duplicate!r}")
    key: RowKeyTemplate | AutoKey
    if rowkey is not None:
        key = RowKeyTemplate(rowkey)
    elif rowkey_column is not None:
        key = RowKeyTemplate.column(rowkey_column)
    else:
        assert rowkey_auto is not None  # exactly one of the three (checked above)
        key = AutoKey(rowkey_auto)
    schema = table.schema
    families = {f.decode() for f in schema.families}
    if family is None and len(families) == 1:
        family = next(iter(families))
    if family is not None:
        schema.check_family(family.encode())
    mapped: dict[str, bytes] = {}
    for name, target in (columns_map or {}).items():
        fam, sep, qual = target.partition(":")
        if not sep or not qual:
            raise errors.InvalidArgument(
                f"map {name}={target}: the target must be 'family:qualifier'")
        schema.check_family(fam.encode())
        mapped[name] = target.encode("utf-8", "surrogateescape")
    types = schema.columns
    skip = {rowkey_column} - set(mapped) if rowkey_column is not None else set()
    resolved: dict[str, bytes | None] = {}

    def resolve(name: str) -> bytes:
        col = resolved.get(name)
        if col is None:
            if name in mapped:
                col = mapped[name]
            else:
                cell = cell_column(name, families, family)
                if cell is None:
                    raise _Reject(f"column {name!r} has no family: pass a default family or "
                                  f"map it (families: {', '.join(sorted(families))})")
                col = cell.encode("utf-8", "surrogateescape")
            resolved[name] = col
        return col

    stats = {} if stats is None else stats
    stats.update({"records": 0, "rows": 0, "replaced": 0, "skipped": 0, "rejected": 0,
                  "empty": 0, "lines": 0, "bytes": 0, "seconds": 0.0, "rows_per_second": 0.0,
                  "errors": [], "on_duplicate": on_duplicate})
    started = time.perf_counter()

    def finish() -> dict:
        secs = time.perf_counter() - started
        stats["seconds"] = secs
        stats["rows_per_second"] = stats["rows"] / secs if secs > 0 else 0.0
        return stats

    def reject(line: int, message: str) -> None:
        stats["rejected"] += 1
        if len(stats["errors"]) < _MAX_ERRORS_KEPT:
            stats["errors"].append((line, message))
        if on_reject is not None:
            on_reject(line, message)

    # Repeated rowkeys: uuid and ulid keys cannot repeat; other keys are remembered in `seen`
    # while the table was empty before the load (and the keys fit in _SEEN_MAX_BYTES), else
    # looked up in the table, one multi-get per batch (rows this load wrote are there too).
    check = not (isinstance(key, AutoKey) and key.kind != "row")
    seen: set[bytes] | None = None
    seen_bytes = 0
    if check:
        first = table.scan(limit=1, batch_size=1)
        try:
            if next(first, None) is None:
                seen = set()
        finally:
            getattr(first, "close", lambda: None)()
    # records read and not yet written, in file order: (line, rowkey, cells), or (line, None,
    # why it is rejected); a put is checked when it joins the batch, so every rejected row is
    # reported (and --strict stops) in file order
    pending: list[tuple[int, bytes | None, Any]] = []
    pending_cells = 0

    def bad(batch: Any, line: int, message: str) -> None:
        reject(line, message)
        if strict:
            batch.send()  # every row before the bad one is written, nothing from it on
            finish()
            raise LoadError(message, line, stats)

    def flush(batch: Any) -> None:
        """Write the pending rows, in file order, deciding on each repeated rowkey."""
        nonlocal pending_cells, seen, seen_bytes
        entries, pending[:] = list(pending), []
        pending_cells = 0
        # the cells, as far as known, of each row already taken: the rows the table holds
        # (asked when `seen` is not kept), the rows this batch writes (`here`); a row in
        # `seen` written by an earlier batch: not known (None)
        known = (dict(table.rows(list(dict.fromkeys(r for _, r, d in entries if r and d))))
                 if check and seen is None else {})
        here: dict[bytes, dict] = {}
        first: dict[bytes, int] = {}  # rowkey: line of its first record in this batch
        fresh = 0  # memory the new keys take in `seen`
        for line, row, data in entries:
            if row is None:
                bad(batch, line, data)
                continue
            earlier: dict | None = None
            repeat = False
            if check and data:
                if row in here:
                    earlier, repeat = here[row], True
                elif row in known:
                    earlier, repeat = known[row], True
                elif seen is not None and row in seen:
                    repeat = True
            if not repeat:
                try:
                    batch.put(row, data)  # checks the row first
                except errors.InvalidArgument as exc:
                    bad(batch, line, str(exc))
                    continue
                if not data:
                    stats["empty"] += 1
                    continue
                stats["rows"] += 1
                if check:
                    here[row], first[row] = data, line
                    fresh += len(row) + 72
            elif on_duplicate == "replace":
                # no cell of the earlier record stays: its cells in the columns this load
                # writes that the new record has not are deleted (other columns stay)
                try:
                    schema.check_put(row, data)
                except errors.InvalidArgument as exc:
                    bad(batch, line, str(exc))
                    continue
                written = {c for c in resolved.values() if c is not None}
                stale = (written if earlier is None else written.intersection(earlier))
                stale = stale.difference(data)
                if stale:
                    batch.delete(row, sorted(stale))
                batch.put(row, data)
                stats["replaced"] += 1
                here[row] = data
                first.setdefault(row, line)
            elif on_duplicate == "skip":
                stats["skipped"] += 1
            else:
                where = (f"line {first[row]}" if row in first else "an earlier line"
                         if seen is not None else "a row already in the table (from before "
                         "the load or an earlier line)")
                bad(batch, line, f"rowkey {_clip(row.decode('utf-8', 'surrogateescape'), 80)!r}"
                                 f" repeats {where} (--on-duplicate error)")
        if seen is not None:
            seen.update(here)
            seen_bytes += fresh
            if seen_bytes > _SEEN_MAX_BYTES:
                seen = None  # from now on the table answers: what this load wrote is in it
        batch.send()

    stdin = path == "-"
    check_text(path)
    fh, src = open_input(path)
    compressed = fh is not src
    counter = _Progress(stats)
    try:
        if stdin:
            reason = binary_reason(fh.peek(_SNIFF)[:_SNIFF])
            if reason is not None:
                raise LoadError(f"standard input is not CSV or JSON-lines text ({reason})")
        lines = _lines(fh, counter)
        if fmt == "csv":
            names, records = _csv_records(lines, delimiter, null_string)
            missing = [f for f in key.fields if f not in names]
            if missing:
                raise LoadError(f"rowkey column(s) {', '.join(missing)} not in the CSV header "
                                f"({_clip(', '.join(names))}); files without a key column "
                                "load with --rowkey-auto", 1)
            for name in names:
                if name not in skip:
                    try:
                        resolve(name)
                    except _Reject as exc:
                        raise LoadError(str(exc), 1) from None
        else:
            records = _jsonl_records(lines)
        if progress:
            counter.bar = tqdm(total=None if stdin or compressed
                               else os.fstat(src.fileno()).st_size,
                               initial=stats["bytes"], unit="B", unit_scale=True,
                               unit_divisor=1024, file=sys.stderr, mininterval=0.25,
                               desc=f"load {table.name.decode()}")
            counter.pending = 0  # already in `initial`
        with table.batch() as batch:
            try:
                for line, record, problem in records:
                    stats["lines"] = line
                    stats["records"] += 1
                    data: dict[bytes, bytes] = {}
                    try:
                        if problem is not None:
                            raise _Reject(problem)
                        if unescape:
                            record = {n: _unescaped(v) for n, v in record.items()}
                        row = key.render(record)
                        for name, raw in record.items():
                            if raw is None or name in skip:
                                continue
                            col = resolve(name)
                            try:
                                data[col] = text_to_cell(types.get(col), raw)
                            except errors.ValueTypeError as exc:
                                raise errors.ValueTypeError(
                                    f"column {codec.column_text(col)!r}: {exc}") from None
                    except (_Reject, errors.InvalidArgument) as exc:
                        pending.append((line, None, str(exc)))
                        if strict:
                            flush(batch)  # raises at the first bad row
                        continue
                    pending.append((line, row, data))
                    pending_cells += len(data)
                    if pending_cells >= batch_size or len(pending) >= batch_size:
                        flush(batch)
            except (EOFError, lzma.LZMAError, zlib.error, OSError, KeyboardInterrupt):
                # the rows read before a truncated or corrupt part, or a Ctrl-C, are written
                flush(batch)
                raise
            flush(batch)
    except (EOFError, lzma.LZMAError, zlib.error, OSError) as exc:  # a truncated or corrupt
        raise LoadError(f"cannot read {'standard input' if stdin else path} after line "
                        f"{stats['lines']}: {exc}; the {stats['rows'] + stats['replaced']} "
                        "row(s) read before it are written (loading the whole file again "
                        "rewrites them)", None, finish()) from None
    finally:
        if counter.bar is not None:
            counter.flush()
            counter.bar.close()
        if not stdin:
            src.close()
    return finish()


# -- type detection (for a table the load creates) ----------------------------------------------

_LONG = codec.ColumnType("long")
_DOUBLE = codec.ColumnType("double")
_STRING = codec.ColumnType("string")
_BYTES = codec.ColumnType("bytes")
_DATE = codec.ColumnType("date")
_TIMESTAMP = codec.ColumnType("timestamp")
_BOOLEAN = codec.ColumnType("boolean")
_LEADING_ZERO = re.compile(rb"[+-]?0[0-9]")


class _Seen:
    """What the values of one input column allow so far."""

    __slots__ = ("values", "long", "number", "utf8", "date", "timestamp", "boolean")

    def __init__(self) -> None:
        self.values, self.long, self.number, self.utf8 = 0, True, True, True
        # ISO dates ('2024-01-02'), timestamps ('2024-01-02 13:45:00', dates among them) and
        # true / false (any case) give DATE, TIMESTAMP and BOOLEAN columns
        self.date = self.timestamp = self.boolean = True

    def add(self, raw: bytes, text: bool = False) -> None:
        """One stored value; `text`: a JSON string (or bool, object, array), text whatever it
        looks like."""
        self.values += 1
        for kind, t in (("date", _DATE), ("timestamp", _TIMESTAMP), ("boolean", _BOOLEAN)):
            if getattr(self, kind):
                try:
                    codec.decode_cell(t, raw)
                except errors.ValueTypeError:
                    setattr(self, kind, False)
        if self.number:
            if text or _LEADING_ZERO.match(raw):  # 007, 02134: identifiers, not numbers
                self.number = self.long = False
            else:
                if self.long:
                    try:
                        codec.decode_cell(_LONG, raw)
                        return  # ASCII digits: UTF-8 too
                    except errors.ValueTypeError:
                        self.long = False
                try:
                    if math.isfinite(codec.decode_cell(_DOUBLE, raw)):
                        return
                except errors.ValueTypeError:
                    pass
                self.number = False  # nan, inf, 1e999, text
        if self.utf8:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                self.utf8 = False

    @property
    def type(self) -> codec.ColumnType | None:
        if not self.values:
            return None
        if not self.utf8:
            return _BYTES
        for kind, t in (("date", _DATE), ("timestamp", _TIMESTAMP), ("boolean", _BOOLEAN)):
            if getattr(self, kind):
                return t
        if self.number:
            return _LONG if self.long else _DOUBLE
        return _STRING


def detect_types(path: str, format: str | None = None, *, delimiter: str = ",",
                 progress: bool = False, null_string: str | None = None
                 ) -> dict[str, codec.ColumnType | None]:
    """The type of each input column of a CSV or JSON-lines file, from every value in it (one
    pass over the whole file, so the type fits every row the load will write), keyed by input
    column name in the order first seen; None for a column with no value at all.

    - every value a decimal integer in signed 64-bit range: ``long``;
    - every value a finite number (integers, decimals, exponents; an integer beyond 64 bits
      too, so such a column is ``double`` and compares approximately): ``double``.
      ``nan``, ``inf`` and ``infinity`` are not numbers here (a text column holding "inf"
      stays text), nor are numbers written with a leading zero (``007``, ``02134``: codes,
      whose zeros a number would drop), nor values with spaces;
    - else ``string``, or ``bytes`` when some value is not UTF-8.

    Empty CSV fields and JSON nulls make no cell and are not looked at. JSON numbers are judged
    by the text the load stores for them (``1`` long, ``1.0`` double); JSON strings, booleans,
    objects and arrays are text (``"42"`` is a string). Rows the load would reject (wrong
    number of CSV fields, a line that is not a JSON object) are skipped. `progress` draws a
    bar on stderr once the pass takes more than a second. The file cannot be stdin ("-").
    CSV values equal to `null_string` are NULL (not looked at), as in load_file. A file that
    cannot be read to its end (a truncated or corrupt gzip...) raises LoadError."""
    if path == "-":
        raise errors.InvalidArgument("type detection reads the file before the load; it "
                                     "cannot read stdin twice (save it to a file)")
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise errors.InvalidArgument(f"unknown format {fmt!r}; use one of {FORMATS}")
    seen: dict[str, _Seen] = {}
    stats: dict[str, Any] = {"bytes": 0}
    counter = _Progress(stats)
    check_text(path)
    fh, src = open_input(path)
    with src:
        if progress:
            counter.bar = tqdm(total=None if fh is not src else os.fstat(src.fileno()).st_size,
                               unit="B", unit_scale=True,
                               unit_divisor=1024, file=sys.stderr, mininterval=0.25, delay=1.0,
                               leave=False, desc="detecting types")
        try:
            lines = _lines(fh, counter)
            if fmt == "csv":
                names, records = _csv_records(lines, delimiter, null_string)
                seen = {n: _Seen() for n in names}
                for line, record, _ in records:
                    stats["lines"] = line
                    if record is not None:
                        for name, raw in record.items():
                            if raw is not None:
                                seen[name].add(raw)
            else:
                for at, text in enumerate(lines, 1):
                    stats["lines"] = at
                    if not text.strip():
                        continue
                    try:
                        obj = json.loads(text)
                    except ValueError:
                        continue
                    if not isinstance(obj, dict):
                        continue
                    for key, value in obj.items():
                        col = seen.get(key)
                        if col is None:
                            col = seen[key] = _Seen()
                        raw = _json_value(value)
                        if raw is not None:  # JSON null: no value
                            number = isinstance(value, (int, float)) and \
                                not isinstance(value, bool)
                            col.add(raw, text=not number)
        except (EOFError, lzma.LZMAError, zlib.error, OSError) as exc:  # truncated, corrupt
            raise LoadError(f"cannot read {path} after line {stats.get('lines', 0)} while "
                            f"detecting the column types: {exc}; nothing was written (the "
                            "table was not created)") from None
        finally:
            if counter.bar is not None:
                counter.bar.close()
    return {name: col.type for name, col in seen.items()}


def _widen(a: codec.ColumnType | None, b: codec.ColumnType | None) -> codec.ColumnType | None:
    """One type for the values of two input columns stored in the same cell column."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if _BYTES in (a, b):
        return _BYTES
    if {a, b} == {_LONG, _DOUBLE}:
        return _DOUBLE
    return _STRING


def cell_types(detected: Mapping[str, codec.ColumnType | None], families: Iterable[str],
               family: str | None, columns_map: Mapping[str, str] | None = None,
               rowkey_column: str | None = None) -> dict[str, codec.ColumnType | None]:
    """detect_types' answer keyed by the cell columns load_file stores the input columns as
    (`family`, `columns_map` and `rowkey_column` as load_file takes them): the rowkey column is
    left out unless mapped, columns with no family are left out (the load refuses them), and
    input columns landing in one cell column get one type that fits both."""
    families = set(families)
    out: dict[str, codec.ColumnType | None] = {}
    for name, ctype in detected.items():
        if name == rowkey_column and not (columns_map and name in columns_map):
            continue
        cell = cell_column(name, families, family, columns_map)
        if cell is not None:
            out[cell] = _widen(out[cell], ctype) if cell in out else ctype
    return out
