"""RocksDB's failures as hibase errors, translated by their kind in this one place, and the
status checks that keep a bad block from reading as the end of the data.

rocksdict raises a bare ``Exception`` carrying RocksDB's ``Status::ToString()``
(``"<code>: [<subcode>: ]<context>: <file>: <strerror(errno)>"``) and, for the files it writes
itself, Rust ``std::io`` errors (``"... (os error 13)"``) as OSError. The code and the errno are
parsed out and mapped; nothing is matched by searching the text for words. Its iterators stop
quietly on a corrupt block (``valid()`` turns false, the reason sits in ``status()``), so every
stream's end is checked here.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import tempfile
from typing import Any, Callable, Iterator, TypeVar

from ... import errors

__all__ = ["translate", "mapped", "check_status", "checked_items", "verify_end", "CheckedIter",
           "check_manifest", "writable", "shadow_folder", "close_all", "create_column_family"]

# RocksDB's status codes as Status::ToString() spells them
_CODES = frozenset({
    "Corruption", "IO error", "Invalid argument", "NotFound", "Not implemented",
    "Resource busy", "Operation timed out", "Operation aborted", "Shutdown in progress",
    "Result incomplete", "Operation failed. Try again.", "Merge in progress",
    "Column family dropped", "Compaction too large", "Operation expired"})
_ERRNO_OF = {os.strerror(n): n for n in sorted(errno.errorcode, reverse=True)}
_RUST_ERRNO = re.compile(r"\(os error (\d+)\)$")
_PATHS = re.compile(r"/[^\s:,;]+")
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_READ_ONLY = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_BUSY = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EBUSY, errno.ENOLCK})
# errors that stop a store from writing until it is reopened (RocksDB's "background error")
FATAL = (errors.StoreFull, errors.StoreReadOnly, errors.StoreCorrupted)
_SHADOWS: dict[str, str] = {}  # shadow_folder -> the store folder it stands for


def _kind(exc: BaseException) -> tuple[str, int | None, str]:
    """(RocksDB status code or "", errno or None, one-line message) of an engine error."""
    message = " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.errno is not None:
        return "", exc.errno, message
    m = _RUST_ERRNO.search(message)
    if m:
        return "", int(m.group(1)), message
    parts = message.split(": ")
    code = parts[0] if len(parts) > 1 and parts[0] in _CODES else ""
    err = _ERRNO_OF.get(parts[-1]) if len(parts) > 1 else None
    if err is None and code == "IO error" and parts[1] == os.strerror(errno.ENOSPC):
        err = errno.ENOSPC  # RocksDB's kNoSpace subcode
    return code, err, message


def _file(message: str, store: str, filename: str | None) -> str:
    """The file an error names: the first path inside the store folder, else the folder
    (RocksDB appends "The file MANIFEST-n may be corrupted" after the file it failed on)."""
    if filename:
        return filename
    inside = [p for p in _PATHS.findall(message) if p.startswith(store.rstrip("/") + "/")]
    return inside[0] if inside else store


def translate(exc: BaseException, store: str, earlier: errors.HibaseError | None = None
              ) -> errors.HibaseError:
    """The hibase error for an engine or OS error met by the store in folder `store`.

    `earlier` is the first fatal error the store met: RocksDB refuses every later write with an
    error of its own ("Writer has previous error") that carries no errno, reported as that one."""
    if isinstance(exc, errors.HibaseError):
        return exc
    code, err, message = _kind(exc)
    real = _SHADOWS.get(store)
    if real is not None:  # opened through shadow_folder: name the store's own files
        message, store = message.replace(store, real), real
    path = _file(message, store, getattr(exc, "filename", None))
    name = os.path.basename(path)
    if code == "Corruption":
        return errors.StoreCorrupted(f"store {store!r} is corrupted: {message}", path)
    if err in _FULL:
        return errors.StoreFull(f"no space left on the device of store {store!r} "
                                f"(writing {name}); nothing was written", path)
    if err is not None and err in _READ_ONLY:
        return errors.StoreReadOnly(f"cannot write {path!r}: {os.strerror(err)} "
                                    "(open the store with read_only=True to read it)", path)
    if err in _BUSY and name == "LOCK":
        return errors.StoreLocked(
            f"store {store!r} is already open for writing (in another process, or this one) "
            "(open it with read_only=True to read alongside)")
    if err == errno.ENOENT and path != store:
        return errors.StoreCorrupted(f"store {store!r} is missing {name}: {message}", path)
    if code == "IO error" and err is None and earlier is not None:
        return type(earlier)(f"{earlier} (the store refuses writes until it is reopened)",
                             getattr(earlier, "path", None))
    return errors.BackendError(f"store {store!r}: {message}")


def _engine_error(exc: BaseException) -> bool:
    """rocksdict's errors: bare Exception (RocksDB status) or OSError; bugs stay what they are."""
    return type(exc) is Exception or isinstance(exc, OSError)


F = TypeVar("F", bound=Callable[..., Any])


def mapped(method: F) -> F:
    """Translate the engine errors a store method raises. The store provides `path` and
    `_engine_error` (the first fatal error, recorded here). Not for generators: their reads
    verify their own ends (checked_items, check_status), which translate."""
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            if not _engine_error(exc):
                raise
            err = translate(exc, self.path, self._engine_error)
            if isinstance(err, FATAL) and self._engine_error is None:
                self._engine_error = type(err)(str(err), err.path)  # without a traceback
        # Raised outside the except block and unbound on the way out: neither the engine's
        # error nor a reference cycle keeps the failed call's frames, whose locals hold the
        # store's handles (and so its LOCK), alive after the caller handled the error.
        try:
            raise err
        finally:
            del err
    return call  # type: ignore[return-value]


def close_all(views: list[Any]) -> None:
    """Close every rocksdict handle in `views` (emptied), each even when one fails (a full
    disk fails their flush), then raise the first failure. Nothing the raised error's
    traceback holds refers to a handle: a handle kept alive keeps the folder's LOCK."""
    failure = None
    for view in views:
        try:
            view.close()
        except Exception as exc:
            failure = failure or exc.with_traceback(None)
    views.clear()
    view = None  # noqa: F841 - the frame outlives the call in the traceback
    if failure is not None:
        raise failure


def create_column_family(db: Any, name: str, options: Any) -> Any:
    """db.create_column_family, first dropping a family of that name left by a create that
    failed (full disk) or died before its catalog write: it belongs to no table yet."""
    try:
        db.get_column_family_handle(name)
    except Exception:
        pass  # no such family: the usual case
    else:
        db.drop_column_family(name)
    return db.create_column_family(name, options)


def check_status(it: Any, store: str) -> None:
    """Raise the translated error if the raw iterator `it` stopped on an error, not at the end
    (call it when it.valid() turned false)."""
    try:
        it.status()
    except Exception as exc:
        if not _engine_error(exc):
            raise
        raise translate(exc, store) from None


def verify_end(view: Any, last: bytes | None, first: bytes | None, reverse: bool = False) -> None:
    """Called when a (key, value) stream of `view` (an Rdict or a column family) ran out: a
    fresh iterator placed just past `last` (or at `first`) must be valid or report OK, else
    the stream stopped at a corrupt block and its end is not the end of the data
    (StoreCorrupted naming the file)."""
    it = view.iter()
    if last is not None:
        if reverse:
            it.seek_for_prev(last)
            if it.valid():
                it.prev()
        else:
            it.seek(last)
            if it.valid():
                it.next()
    elif first is not None:
        it.seek_for_prev(first) if reverse else it.seek(first)
    else:
        it.seek_to_last() if reverse else it.seek_to_first()
    if not it.valid():
        check_status(it, view.path())


def checked_items(view: Any, first: bytes | None = None, reverse: bool = False
                  ) -> Iterator[tuple[bytes, bytes]]:
    """view.items(from_key=first, backwards=reverse), whose end is verified (verify_end).

    The RocksDB iterator is made here, at the call, not at the first next(): a scan over
    several families makes one per family under the write lock (reads.Reads._views) so all
    see the same writes; made lazily, each saw the database of its first read (torn rows)."""
    return _verified(view.items(backwards=reverse, from_key=first), view, first, reverse)


def _verified(items: Iterator[tuple[bytes, bytes]], view: Any, first: bytes | None,
              reverse: bool) -> Iterator[tuple[bytes, bytes]]:
    last = None
    for last, value in items:
        yield last, value
    verify_end(view, last, first, reverse)


class CheckedIter:
    """A raw rocksdict iterator whose valid() raises StoreCorrupted instead of turning false
    when the iterator stopped on an error (for callers above the store that walk it)."""

    __slots__ = ("_it", "_store", "seek", "seek_for_prev", "seek_to_first", "seek_to_last",
                 "next", "prev", "key", "value")

    def __init__(self, it: Any, store: str):
        self._it, self._store = it, store
        self.seek, self.seek_for_prev = it.seek, it.seek_for_prev
        self.seek_to_first, self.seek_to_last = it.seek_to_first, it.seek_to_last
        self.next, self.prev, self.key, self.value = it.next, it.prev, it.key, it.value

    def valid(self) -> bool:
        if self._it.valid():
            return True
        check_status(self._it, self._store)
        return False


_BLOCK = 32768  # RocksDB's log format (MANIFEST and WAL): 32 KiB blocks of framed records


def check_manifest(folder: str) -> None:
    """Raise StoreCorrupted when the MANIFEST named by CURRENT ends inside a record.

    RocksDB reads a MANIFEST cut short as if its last edits had never been made, so a truncated
    one opens as a store without the files those edits added (issue 15: 0 of 3,200 rows), and
    the files are then deleted as obsolete. Each record is written whole and synced, so a cut
    inside one is damage, not a write a crash interrupted."""
    try:
        with open(os.path.join(folder, "CURRENT"), "rb") as f:
            name = f.read().decode("ascii", "replace").strip()
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError as exc:
        raise errors.StoreCorrupted(f"store {folder!r} is missing {exc.filename!r} "
                                    "(named by CURRENT)", exc.filename) from None
    except OSError as exc:
        raise translate(exc, folder) from None
    pos, size, inside = 0, len(data), False
    while pos < size:
        left = _BLOCK - pos % _BLOCK
        if left < 7:  # a block trailer too short for a header: zero filled
            pos += left
            continue
        if pos + 7 > size:
            break
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        if kind == 0 and length == 0:  # preallocated space: the end of the records
            if data[pos:].strip(b"\0"):
                break
            return
        header = 11 if kind in (5, 6, 7, 8, 11) else 7  # recyclable types carry a log number
        if pos + header + length > size or pos % _BLOCK + header + length > _BLOCK:
            break
        inside = kind in (2, 3, 6, 7)  # FIRST / MIDDLE fragments continue in the next record
        pos += header + length
    else:
        if not inside:
            return
    raise errors.StoreCorrupted(
        f"store {folder!r} is corrupted: {name} is truncated inside a record at byte {pos} of "
        f"{size} (opening it would drop the tables and files recorded after that point)", path)


def writable(folder: str) -> bool:
    """Whether this process can create files in `folder` and rewrite rocksdict's config."""
    config = os.path.join(folder, "rocksdict-config.json")
    return os.access(folder, os.W_OK) and (not os.path.exists(config)
                                           or os.access(config, os.W_OK))


def shadow_folder(folder: str) -> str:
    """A private folder of links to the store's files, for opening a store read-only where the
    folder itself cannot be written: rocksdict rewrites its rocksdict-config.json on every open,
    read-only ones too, and RocksDB starts a LOG file; both land in the private folder."""
    shadow = tempfile.mkdtemp(prefix="hibase-ro-")
    _SHADOWS[shadow] = os.path.abspath(folder)
    for name in os.listdir(folder):
        if name not in ("rocksdict-config.json", "LOCK") and not name.startswith("LOG"):
            os.symlink(os.path.join(os.path.abspath(folder), name), os.path.join(shadow, name))
    return shadow
