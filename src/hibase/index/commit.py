"""How a write's index changes are committed with its data rows: a strategy chosen by what
the store can do (Capabilities), so the store itself knows nothing of index tables' order.

- `AtomicCommit` (embedded: `verified_index_writes` False): index entries, value-count deltas
  and data rows in one atomic batch (`store.commit(staged, kv_writes)`); readers never see one
  without the other.
- `VerifiedCommit` (HBase from the client: index rows and data rows are separate RPCs):
  Phoenix's verified / unverified protocol (PHOENIX-5156), in three phases: (1) every touched
  index entry is written *unverified* (`Unverified(rowkey)`: new entries, and old ones about to
  go), value counts that grow are written; (2) the data rows; (3) new entries are rewritten
  verified with their covered values, old ones deleted, counts that shrink written. A writer
  stopped between phases leaves unverified entries, which readers resolve against the data row
  (index/verified.py: used only if the row still produces exactly that entry) and
  `verify_index(repair=True)` cleans. `store.faults` may stop the writer after phase 1
  ("index") or 2 ("data"): tests kill a writer between steps with it.
- server-side upkeep (HBase with hibase's coprocessor, `Capabilities.server_index_upkeep`): the
  region server keeps an index made there (IndexSpec.server) on every write, whoever writes;
  the client computes nothing for it (`server_kept` splits a table's indexes), so a write of a
  table whose indexes are all server-kept is the data call alone (`store.apply`).
"""

from __future__ import annotations

from typing import Iterable

from .. import errors
from ..store.api import Staged, Store
from ..store.base import CountDelta, KVWrite, Unverified
from .spec import STALE, IndexSpec
from .verified import IndexHooks, is_entry_table

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

    def __init__(self, hooks: IndexHooks) -> None:
        self.hooks = hooks  # tells an entry key's rowkey (and resolves entries on read)

    def commit(self, store: Store, staged: Staged, kv_writes: list[KVWrite]) -> None:
        if not staged:
            store.write_kv(kv_writes)
            return
        phase1: list[KVWrite] = []
        phase3: list[KVWrite] = []
        for name, key, value in kv_writes:
            if is_entry_table(name):
                row = self.hooks.row_of(name, key)
                if row is None:
                    raise errors.BackendError(
                        f"cannot tell the rowkey of index entry {key!r} of {name!r}")
                phase1.append((name, key, Unverified(row)))
                phase3.append((name, key, value))
            elif value is None or isinstance(value, CountDelta) and value < 0:
                phase3.append((name, key, value))  # counts shrink last, grow first
            else:
                phase1.append((name, key, value))
        store.write_kv(phase1)
        store.faults.reached("index")
        store.commit(staged, ())
        store.faults.reached("data")
        store.write_kv(phase3)


def choose(store: Store, hooks: IndexHooks | None) -> CommitStrategy:
    """The strategy `store`'s capabilities call for (hooks: the verified protocol's)."""
    if store.capabilities.verified_index_writes:
        assert hooks is not None
        return VerifiedCommit(hooks)
    return AtomicCommit()


def server_kept(specs: Iterable[IndexSpec]) -> tuple[list[IndexSpec], bool]:
    """(the indexes the client keeps on its writes, whether the region server keeps others):
    an index made where hibase's coprocessor runs (IndexSpec.server) is the server's; a stale
    one (bulk load under way) nobody keeps."""
    specs = list(specs)
    return [s for s in specs if s.state != STALE and not s.server], any(s.server for s in specs)
