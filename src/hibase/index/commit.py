"""How a write's index changes are committed with its data rows: a strategy chosen by what
the store can do (Capabilities), so the store itself knows nothing of index tables' order.

- `AtomicCommit` (embedded: `verified_index_writes` False): index entries, value-count deltas
  and data rows in one atomic batch (`store.commit(staged, kv_writes)`); readers never see one
  without the other.
- `VerifiedCommit` (HBase from the client: index rows and data rows are separate RPCs):
  Phoenix's verified / unverified protocol (PHOENIX-5156), in three phases: (1) every touched
  index entry is written *unverified* (with its rowkey: new entries, and old ones about to
  go; index/verified.py has the stored values), value counts that grow are written and every
  changed count marked pending; (2) the data rows; (3) new entries are rewritten verified with
  their covered values, old ones deleted, counts that shrink written and unmarked. A writer
  stopped between phases leaves unverified entries, which readers resolve against the data row
  (index/verified.py: used only if the row still produces exactly that entry), and pending
  counts, from which no answer is taken (store.base.count_settled); `verify_index(repair=True)`
  cleans both. An uncovered index's new entries are written once, in their final form, in
  phase 1 (readers check each against its row: IndexSpec.uncovered). `store.faults` may stop
  the writer after phase 1 ("index") or 2 ("data"): tests kill a writer between steps with it.
- server-side upkeep (HBase with hibase's coprocessor, `Capabilities.server_index_upkeep`): the
  region server keeps an index made there (IndexSpec.server) on every write, whoever writes;
  the client computes nothing for it (`server_kept` splits a table's indexes), so a write of a
  table whose indexes are all server-kept is the data call alone (`store.apply`).
"""

from __future__ import annotations

from typing import Iterable

from .. import errors
from ..store.api import Staged, Store
from ..store.base import CountDelta, KVWrite, now_ms
from . import verified
from .catalog import IndexCatalog
from .spec import STALE, IndexSpec
from .verified import is_entry_table

__all__ = ["CommitStrategy", "AtomicCommit", "VerifiedCommit", "choose", "server_kept"]


class CommitStrategy:
    """Commits a staged batch with its index writes (the caller holds the write lock)."""

    name = ""

    def commit(self, store: Store, staged: Staged, kv_writes: list[KVWrite]) -> None:
        raise NotImplementedError


class AtomicCommit(CommitStrategy):
    """Everything in one atomic store batch."""

    name = "atomic"

    def commit(self, store: Store, staged: Staged, kv_writes: list[KVWrite]) -> None:
        store.commit(staged, kv_writes)


class VerifiedCommit(CommitStrategy):
    """The three phases of the module docstring."""

    name = "verified"

    def __init__(self, catalog: IndexCatalog) -> None:
        self.catalog = catalog  # tells an entry key's index, hence its rowkey
        self._last = 0  # the last timestamp a phase was written at

    def _stamp(self) -> int:
        """Phase 1's timestamp (phase 3 writes at it + 1), above every earlier phase of this
        writer. A call the writer gave up on (a timeout) may still be retried by HBase's
        Thrift server and land after the writer's later phases: with HBase's own time a late
        phase 1 would turn a verified entry back to unverified, a late phase 3 would put an
        entry back after a later write deleted it; at its own older timestamp it lands under
        them. Taken once per commit (never per row), so it stays at the clock."""
        self._last = max(now_ms(), self._last + 1) + 1
        return self._last - 1

    def commit(self, store: Store, staged: Staged, kv_writes: list[KVWrite]) -> None:
        phase1: list[KVWrite] = []
        phase3: list[KVWrite] = []
        if not staged:
            store.write_kv([(n, k, _verified_value(n, v)) for n, k, v in kv_writes])
            return
        specs_of: dict[str, list[IndexSpec]] = {}  # per index table: its table's indexes
        for name, key, value in kv_writes:
            if is_entry_table(name):
                specs = specs_of.get(name)
                if specs is None:
                    split = verified.entry_table_of(name)
                    specs = specs_of[name] = self.catalog.for_table(split[0]) if split else []
                found = verified.entry_of(specs, name, key)
                if found is None:
                    raise errors.BackendError(
                        f"cannot tell the rowkey of index entry {key!r} of {name!r}")
                spec, row = found
                if spec.uncovered:
                    # readers check its every entry against the row: a new one is written in
                    # its final form before the data, an old one deleted after, neither marked
                    (phase3 if value is None else phase1).append(
                        (name, key, _verified_value(name, value)))
                    continue
                phase1.append((name, key, verified.pending(row)))
                phase3.append((name, key, _verified_value(name, value)))
            elif isinstance(value, CountDelta):
                # a count grows before the data and shrinks after (never below the rows), and
                # is pending from the first phase to the last: readers take no answer from it
                # meanwhile, nor after a writer that died between them (base.count_settled)
                phase1.append((name, key, CountDelta(max(value, 0), pending=1)))
                phase3.append((name, key, CountDelta(min(value, 0), pending=-1)))
            elif value is None:
                phase3.append((name, key, value))
            else:
                phase1.append((name, key, value))
        ts = self._stamp()
        store.write_kv(phase1, ts=ts)
        store.faults.reached("index")
        store.commit(staged, ())
        store.faults.reached("data")
        store.write_kv(phase3, ts=ts + 1)


def _verified_value(name: str, value: bytes | CountDelta | None) -> bytes | CountDelta | None:
    """A key-value value as the verified protocol stores it: an index entry's payload marked
    verified, anything else as it is."""
    if value is None or isinstance(value, CountDelta) or not is_entry_table(name):
        return value
    return verified.VERIFIED + value


def choose(store: Store, catalog: IndexCatalog) -> CommitStrategy:
    """The strategy `store`'s capabilities call for."""
    if store.capabilities.verified_index_writes:
        return VerifiedCommit(catalog)
    return AtomicCommit()


def server_kept(specs: Iterable[IndexSpec]) -> tuple[list[IndexSpec], bool]:
    """(the indexes the client keeps on its writes, whether the region server keeps others):
    an index made where hibase's coprocessor runs (IndexSpec.server) is the server's; a stale
    one (bulk load under way) nobody keeps."""
    specs = list(specs)
    return [s for s in specs if s.state != STALE and not s.server], any(s.server for s in specs)
