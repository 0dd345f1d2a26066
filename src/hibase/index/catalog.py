"""The index catalog: which indexes exist on which table, persisted in the store's meta keys."""

from __future__ import annotations

import difflib
import re
import threading
from typing import Iterable

from ..store.api import Store
from .. import errors
from ..store.schema import split_column
from .local import clear as local_clear
from .local import local_table, local_value_table, routing_table
from .spec import BUILDING, IndexSpec, change_table, index_table, value_table

__all__ = ["IndexCatalog", "close_columns"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def close_columns(col: bytes, declared: Iterable[bytes]) -> list[str]:
    """The declared columns (as family:qualifier text) `col` is probably a typo of, closest
    first, case ignored: c:nmae -> ["c:name"] (qualifiers of its family compared), f:name ->
    ["c:name"] (the same qualifier in another family)."""
    def text(c: bytes) -> str:
        return c.decode("utf-8", "backslashreplace")

    fam, _, qual = text(col).partition(":")
    same = {}
    for c in declared:
        f, _, q = text(c).partition(":")
        if f == fam:
            same[q.lower()] = text(c)
    out = [same[q] for q in difflib.get_close_matches(qual.lower(), list(same), n=2,
                                                      cutoff=0.6)]
    out += [text(c) for c in declared if text(c).partition(":")[2].lower() == qual.lower()
            and text(c) not in out and c != col]
    return out


class IndexCatalog:
    """Index definitions of one store, loaded at open and changed through this object only."""

    def __init__(self, store: Store):
        self.store = store
        self._lock = threading.RLock()
        self._by_table: dict[str, dict[str, IndexSpec]] = {}
        for _, raw in store.meta_items(b"index/"):
            spec = IndexSpec.from_json(raw)
            self._by_table.setdefault(spec.table, {})[spec.name] = spec
        self._state_count_homes()

    def _state_count_homes(self) -> None:
        """Tell the store where each value table's counts live (create_kv's counts_in), for
        value tables an older hibase recorded without it (its HBase store knew the homes by
        name): without this their counts would be read from a table that holds none."""
        known = set(self.store.kv_tables())
        for table, specs in self._by_table.items():
            pairs = [(local_value_table(table), local_table(table)) if s.local
                     else (value_table(table), index_table(table)) for s in specs.values()]
            for name, home in set(pairs):
                if name in known and home in known:
                    self.store.create_kv(name, counts_in=home)

    def refresh(self) -> set[str]:
        """Re-read the definitions if another client changed them (stores shared by several
        clients, such as HBase, offer meta_changed()); returns the tables whose indexes
        may have changed (created, dropped, rebuilt): every table with indexes before or
        after."""
        if not self.store.meta_changed():
            return set()
        before = set(self._by_table)
        by_table: dict[str, dict[str, IndexSpec]] = {}
        for _, raw in self.store.meta_items(b"index/"):
            spec = IndexSpec.from_json(raw)
            mine = self._by_table.get(spec.table, {}).get(spec.name)
            if mine is not None and mine.alias == spec.alias:
                mine.state = spec.state  # keep the object others hold
                spec = mine
            by_table.setdefault(spec.table, {})[spec.name] = spec
        with self._lock:
            self._by_table = by_table
            self._state_count_homes()
        # an index dropped and made again looks the same: every table with indexes counts
        return set(before) | set(by_table)

    def for_table(self, table: str) -> list[IndexSpec]:
        return list(self._by_table.get(table, {}).values())

    def get(self, table: str, name: str) -> IndexSpec:
        self.store.schema(table)  # TableNotFound for an unknown table
        try:
            return self._by_table[table][name]
        except (KeyError, TypeError):  # TypeError: an unhashable name
            raise errors.IndexNotFound(f"no index {name!r} on table {table!r}") from None

    def create(self, table: str, name: str, columns: Iterable, covering: Iterable = (),
               local: bool = False, consistency: str = "strong",
               uncovered: bool = False, where: dict | None = None, kind: str = "") -> IndexSpec:
        """Validate and record a new index in state BUILDING (maintained by writes from now).
        consistency "eventual": the region servers apply writes to it shortly after them
        (where they keep it; clients keep every index at once). uncovered: its entries carry
        no values and are written once (IndexSpec.uncovered). where: a partial index's
        compiled predicate (index/partial.py); it keeps no NULL list. kind "text": a
        full-text index (index/text.py)."""
        schema = self.store.schema(table)
        if kind not in ("", "text"):
            raise errors.SchemaError(f"kind must be 'text' (a full-text index) or omitted, "
                                     f"not {kind!r}")
        if consistency not in ("strong", "eventual"):
            raise errors.SchemaError(
                f"consistency must be 'strong' or 'eventual', not {consistency!r}")
        if not isinstance(name, str) or not _NAME.match(name):
            raise errors.SchemaError(
                f"invalid index name {name!r}: a letter or '_' then letters, digits, '_'")
        if not isinstance(local, bool):
            raise errors.SchemaError(f"local must be True or False, not {local!r}")
        if not isinstance(uncovered, bool):
            raise errors.SchemaError(f"uncovered must be True or False, not {uncovered!r}")
        if where is not None and local:
            raise errors.SchemaError(f"index {name!r}: a partial index (where=) is global; "
                                     "local partial indexes are not supported")
        if local and schema.salt_buckets:
            raise errors.SchemaError(
                f"table {table!r} is salted: its regions hold hash buckets, not rowkey ranges, "
                "so a local index has no region prefix to follow; make a global index")
        cols = [_column(c) for c in _as_list(columns, "columns")]
        if not cols:
            raise errors.SchemaError("an index needs at least one column")
        if len(set(cols)) != len(cols):
            raise errors.SchemaError(f"index {name!r} names a column twice: {cols}")
        types = []
        for col in cols:
            fam, qual = split_column(col)
            schema.check_family(fam)
            near = close_columns(col, schema.columns) if qual is not None else []
            if near and col not in schema.columns:
                raise errors.SchemaError(
                    f"cannot index {col.decode()!r}: the table declares no such column; did "
                    f"you mean {' or '.join(near)}?")
            if qual is None or col not in schema.columns:
                raise errors.SchemaError(
                    f"cannot index {col.decode()!r}: only declared columns can be indexed "
                    f"(declare it first: db.declare_columns(table, "
                    f"{{'{col.decode()}': '<type>'}}), or columns= at create_table)")
            types.append(schema.columns[col])
        cover = [_column(c) for c in _as_list(covering, "covering")]
        if kind:
            _check_text(name, cols, types, cover, local, consistency)
            if uncovered or where is not None:
                raise errors.SchemaError(f"text index {name!r} is neither uncovered nor partial "
                                         "(its entries are tokens and carry nothing)")
        if len(set(cover)) != len(cover):
            raise errors.SchemaError(f"index {name!r} covers a column twice: {cover}")
        if uncovered and cover:
            raise errors.SchemaError(
                f"index {name!r} is uncovered: its entries carry no values, so it covers no "
                f"columns (drop covering=, or make a covered index)")
        for col in cover:
            fam, qual = split_column(col)
            schema.check_family(fam)
            if qual is None:
                raise errors.SchemaError(f"covered columns need 'family:qualifier', got {col!r}")
        with self._lock:
            existing = self._by_table.setdefault(table, {})
            if name in existing:
                raise errors.IndexExists(f"index {name!r} already exists on {table!r}")
            used = {a for s in existing.values() for a in s.aliases}
            free = (a for a in (i.to_bytes(2, "big") for i in range(1, 65536)) if a not in used)
            alias = next(free)
            # global indexes keep a NULL list under a second alias (spec.py); local ones none
            null_alias = None if local or where is not None else next(free)
            # the region server keeps it when hibase's coprocessor runs on the table
            server = self.store.capabilities.server_index_upkeep and \
                self.store.server_upkeep(table)
            if kind:  # a text index keeps no NULL list (a row without text has no token)
                null_alias = None
            spec = IndexSpec(name, table, cols, types, [c for c in cover if c not in cols],
                             alias, local, BUILDING, null_alias, server, consistency,
                             uncovered=uncovered, where=where, kind=kind)
            if spec.lags:  # the region servers record changed rows there (change_table)
                self.store.create_kv(change_table(table))
            # a value table's counts may share its index table's storage (HBase: one
            # mutateRows writes a change's entries and counts)
            if local:
                self.store.create_kv(local_table(table))
                self.store.create_kv(local_value_table(table), counts_in=local_table(table))
                self.store.create_kv(routing_table(table))
            else:
                self.store.create_kv(index_table(table))
                self.store.create_kv(value_table(table), counts_in=index_table(table))
            existing[name] = spec
            self._save(spec)
            return spec

    def set_state(self, spec: IndexSpec, state: str) -> None:
        with self._lock:
            spec.state = state
            self._save(spec)

    def _save(self, spec: IndexSpec) -> None:
        self.store.put_meta(f"index/{spec.table}/{spec.name}".encode(), spec.to_json())

    def drop(self, table: str, name: str) -> None:
        with self._lock:
            spec = self.get(table, name)
            self.clear(spec)
            self.store.put_meta(f"index/{table}/{name}".encode(), None)
            del self._by_table[table][name]
            if not self._by_table[table]:
                self.drop_table(table)

    def clear(self, spec: IndexSpec) -> None:
        """Remove every entry and value count of one index."""
        from ..codec import prefix_successor
        if spec.local:
            local_clear(self.store, spec)
            return
        for kv in (index_table(spec.table), value_table(spec.table)):
            if kv in self.store.kv_tables():
                for alias in spec.aliases:
                    self.store.kv_delete_range(kv, alias, prefix_successor(alias))

    def drop_table(self, table: str) -> None:
        """Forget every index of a dropped table and its key-value tables."""
        with self._lock:
            for spec in list(self._by_table.pop(table, {}).values()):
                self.store.put_meta(f"index/{table}/{spec.name}".encode(), None)
            for kv in (index_table(table), value_table(table), local_table(table),
                       local_value_table(table), routing_table(table), change_table(table)):
                self.store.drop_kv(kv)


def _as_list(value, what: str) -> list:
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise errors.SchemaError(f"{what} must be a list of column names") from None


def _column(col) -> bytes:
    if isinstance(col, str):
        try:
            col = col.encode()
        except UnicodeEncodeError:
            raise errors.SchemaError(f"column {col!r} is not valid text") from None
    if not isinstance(col, bytes) or b":" not in col:
        raise errors.SchemaError(f"column {col!r} must be written 'family:qualifier'")
    return col


def _check_text(name: str, cols: list[bytes], types: list, cover: list[bytes], local: bool,
                consistency: str) -> None:
    """A full-text index's limits, as clear errors: one VARCHAR column, global, strongly
    consistent, nothing covered (its entries are tokens, not values to answer from)."""
    if len(cols) != 1:
        raise errors.SchemaError(f"text index {name!r} takes exactly one column, not "
                                 f"{len(cols)}: {[c.decode() for c in cols]}")
    if types[0].name != "string" or types[0].fixed:  # CHAR(n): padded, not text
        raise errors.SchemaError(
            f"text index {name!r}: column {cols[0].decode()!r} is {types[0]}, not VARCHAR: "
            "only VARCHAR columns hold text to index")
    if cover:
        raise errors.SchemaError(f"text index {name!r} covers no columns (its entries are "
                                 "tokens): no INCLUDE / covering=")
    if local:
        raise errors.SchemaError(f"text index {name!r} cannot be local (global only)")
    if consistency != "strong":
        raise errors.SchemaError(f"text index {name!r} is strongly consistent only "
                                 "(consistency='strong')")
