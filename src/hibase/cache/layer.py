"""The hot-index cache in front of the persistent index: HiBase's cache layer.

:class:`HotCache` is what ``IndexManager.cache`` holds. Every point lookup of one index value
(``read``) asks the backend first; a hit answers from the cached set without touching the store,
a miss loads the set from the persistent index and, if the policy admits it, stores it. Every
write hands its index changes to ``apply`` right after its commit (under the store's write lock),
which patches the cached sets the write touched and voids fills that raced it (backend tokens,
see cache/backend.py). So a query issued after a write returned never sees a stale or missing row.

Who runs the policy:

* ``memory`` and static ``redis://`` lists: this object, with one :class:`Policy` for the whole
  cache (``policy.access`` on every lookup; its Decision is obeyed: admit -> store the loaded
  set, evict -> delete those sets from the backend).
* ``zk://``: the cache-node services, one per Redis node (cache/node.py); clients report visits
  with their reads and the node decides admission and runs the period's replacement.

A backend failure is never a query failure: a read that cannot use the cache loads from the
persistent index (a miss). If patching the cache after a write fails in an unexpected way, the
cache drops everything it holds and, failing that, turns itself off.
"""

from __future__ import annotations

import logging
import threading
from contextlib import nullcontext
from typing import Any, Callable

from .backend import NODE, SKIP, STORE, Backend, Ops, cache_key, table_prefix
from .policy import Policy

__all__ = ["HotCache"]

log = logging.getLogger(__name__)


class HotCache:
    """Policy + backend: ``read(spec, vkey, loader)``, ``apply(changes)``, ``stats()``."""

    def __init__(self, backend: Backend, policy: Policy | None) -> None:
        if policy is None and not backend.node_managed:
            raise ValueError("a policy is needed unless the cache nodes run it")
        self.backend = backend
        self.policy = policy
        self._lock = threading.RLock()
        self._local = backend.local
        # value-table walks issue their point lookups in parallel only for remote backends
        self.parallel = not backend.local
        self._broken = False
        self._reset_counters()

    def _reset_counters(self) -> None:
        self._hits = self._misses = self._fills = self._refused = self._garbage = 0
        self._errors = 0

    def _io(self) -> Any:
        """Backend calls of a local backend run under the cache lock; remote ones outside."""
        return self._lock if self._local else nullcontext()

    # -- the lookup path ----------------------------------------------------------------------
    def read(self, spec: Any, vkey: bytes, loader: Callable[[], list], tag: bytes = b"") -> list:
        """The set of one index value: from the cache, else `loader()` (then maybe cached).
        `tag` names the index's state the caller reads (backend.py: a set stored under another
        tag is a miss)."""
        if self._broken:
            return loader()
        key = cache_key(spec.table, vkey)
        try:
            with self._io():
                found = self.backend.get(key, tag)
                if found.entries is not None:
                    self._hit(key, found.entries)
                    return found.entries
        except Exception:  # pragma: no cover - backends handle their own errors
            log.exception("cache lookup failed; reading the index")
            self._errors += 1
            return loader()
        entries = loader()
        try:
            self._miss(key, found.token, entries, found.garbage, tag)
        except Exception:  # pragma: no cover
            log.exception("cache fill failed")
            self._errors += 1
        return entries

    def _hit(self, key: bytes, entries: list) -> None:
        evict: list = []
        with self._lock:
            self._hits += 1
            if self.policy is not None:
                decision = self.policy.access(key, len(entries))
                evict = list(decision.evict)
                if not decision.hit and not decision.admit:
                    evict.append(key)  # stored without the policy's consent (a race): drop
            if self._local and evict:
                self.backend.delete(evict)
                return
        if evict:
            self.backend.delete(evict)

    def _miss(self, key: bytes, token: Any, entries: list, garbage: bool, tag: bytes) -> None:
        evict: list = []
        with self._lock:
            self._misses += 1
            self._garbage += garbage
            if self.policy is None:
                mode = NODE
            else:
                decision = self.policy.access(key, len(entries))
                evict = decision.evict
                # the policy believes it cached (the backend lost it, or a fill was refused):
                # store it again so policy and backend agree
                mode = STORE if decision.admit or decision.hit else SKIP
            if self._local:
                if evict:
                    self.backend.delete(evict)
                stored = self.backend.fill(key, token, entries, mode, tag)
        if not self._local:
            if evict:
                self.backend.delete(evict)
            stored = self.backend.fill(key, token, entries, mode, tag) if token is not None \
                else False
        with self._lock:
            if stored:
                self._fills += 1
            elif mode == STORE:
                self._refused += 1

    # -- the write path -----------------------------------------------------------------------
    def apply(self, changes: list) -> None:
        """Patch cached sets for committed index changes (``index.maintain.Change`` tuples):
        the row leaves its old value's set and enters (or updates in) its new value's set."""
        if self._broken or not changes:
            return
        ops: Ops = {}
        prefixes: dict[str, bytes] = {}
        for c in changes:
            table, old_key, new_key = c.spec.table, c.old_key, c.new_key
            p = prefixes.get(table) or prefixes.setdefault(table, cache_key(table, b""))
            if old_key is not None and old_key != new_key:
                ops.setdefault(p + old_key, []).append((c.row, None))
            if new_key is not None:
                ops.setdefault(p + new_key, []).append((c.row, list(c.covered)))
        try:
            with self._io():
                sizes = self.backend.patch(ops)
                evict = self._resized(sizes)
                if self._local and evict:
                    self.backend.delete(evict)
            if not self._local and evict:
                self.backend.delete(evict)
        except Exception:
            log.exception("patching the cache after a write failed; dropping the cache")
            self._errors += 1
            try:
                self.invalidate()
            except Exception:
                log.exception("dropping the cache failed; the cache is now off")
                self._broken = True

    def _resized(self, sizes: dict[bytes, int]) -> list:
        if self.policy is None or not sizes:
            return []
        evict: list = []
        with self._lock:
            for key, size in sizes.items():
                evict += self.policy.resize(key, size)
        return evict

    # -- management ---------------------------------------------------------------------------
    def invalidate(self, table: str | None = None) -> None:
        """Drop the cached sets of `table` (every set if None) and void fills in flight: after
        an index is dropped, rebuilt or repaired, its sets may no longer match the index."""
        prefix = b"" if table is None else table_prefix(table)
        with self._lock:
            if self.policy is not None:
                for key in list(self.policy):  # the layer's keys are bytes (cache_key)
                    if isinstance(key, bytes) and key.startswith(prefix):
                        self.policy.discard(key)
            if self._local:
                self.backend.invalidate(prefix)
                return
        self.backend.invalidate(prefix)

    def clear(self) -> None:
        """Drop everything and reset the hit / miss counters (not the policy's history)."""
        self.invalidate()
        with self._lock:
            self._reset_counters()

    def stats(self) -> dict:
        """hits, misses, hit_ratio (lookups seen by this client), evictions, sets, records
        (the policy's, or summed over the cache nodes), and details of policy and backend."""
        with self._lock:
            hits, misses = self._hits, self._misses
            out: dict[str, Any] = {
                "backend": self.backend.name,
                "hits": hits, "misses": misses,
                "hit_ratio": hits / (hits + misses) if hits + misses else 0.0,
                "fills": self._fills, "refused_fills": self._refused,
                "garbage": self._garbage, "errors": self._errors, "enabled": not self._broken,
            }
            if self.policy is not None:
                p = self.policy.stats
                out.update(policy=p["policy"], capacity=p["capacity"],
                           evictions=p["evictions"], admissions=p["admissions"],
                           sets=p["sets"], records=p["records"],
                           policy_stats=p)
            if self._local:
                out.update(self.backend.stats())
                return out
        backend = self.backend.stats()
        if self.policy is None:  # the nodes run the policy: their counters
            nodes = backend.get("node_stats", [])
            out["policy"] = ",".join(sorted({n.get("policy", "?") for n in nodes})) or None
            for field in ("capacity", "evictions", "admissions", "sets", "records"):
                out[field] = sum(int(n.get(field, 0)) for n in nodes)
        out.update(backend)
        return out

    def close(self) -> None:
        self.backend.close()

    def __repr__(self) -> str:
        return f"<HotCache backend={self.backend.name} policy={getattr(self.policy, 'name', None)}>"
