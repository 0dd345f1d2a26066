"""An index definition and the byte layout of its rows.

Global index row (in the table's index key-value table, one per user table):

    alias (2 bytes) | encoded value(s) | user rowkey   ->   msgpack [covered values...]

Value-table row (per index, HiBase's value table): alias | encoded value(s) -> row count (8 bytes).
Encoded values are codec's order-preserving, self-delimiting keys, so a composite index answers any
prefix of its columns with one range scan, and the rowkey is simply the rest of the key.

A row has an entry when its first indexed column is present. Later columns may be missing: each
of them is written as 0x00 (NULL, sorting first) or 0x01 + its encoding, so a lookup on a prefix of
a composite index also finds the rows that lack the trailing columns.

NULL list (global indexes made since it exists, as Phoenix keeps NULL keys): a row that exists
(has a visible cell in some family) but lacks the first indexed column has the entry

    null alias (2 bytes) | user rowkey   ->   msgpack [covered values...]

and the value-table row null alias -> row count. The null alias is a second alias the catalog
gives the index, so the NULL list is one more "value" (its value key is the bare null alias,
which `value_key([None, ...])` returns) that no range of the index's own alias can reach: IS
NULL on the first column is a point lookup, counted, cached and verified like any value.
A deleted row (no cell left) has no entry at all. Older indexes (null_alias None) keep none.

Partial indexes (`where`, issue 43): a row has an entry only while the index's predicate is
TRUE on its cells (index/partial.py); they keep no NULL list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .. import codec, errors
from . import partial
from ..store.base import count_settled, decode_count, encode_count  # re-exported: counts

NULL, PRESENT = b"\x00", b"\x01"

__all__ = ["IndexSpec", "index_table", "value_table", "local_table", "local_value_table",
           "routing_table", "change_table", "region_prefix", "split_key", "raw_values", "expiring",
           "needed_columns",
           "encode_count", "decode_count", "count_settled", "BUILDING", "READY", "STALE"]

# building: maintained by writes, not used by queries until its build finishes; ready: used;
# stale: neither (a bulk load suspended it; a build makes it ready again)
BUILDING, READY, STALE = "building", "ready", "stale"


def local_table(table: str) -> str:
    """The key-value table holding every local index row of `table`."""
    return f"__lidx__{table}"


def local_value_table(table: str) -> str:
    """The key-value table holding the per-region value counts of `table`'s local indexes."""
    return f"__lval__{table}"


def change_table(table: str) -> str:
    """The key-value table where the region servers record changed rows of `table` for its
    eventually consistent indexes (one row per changed data row, in time order: the
    writer's stamp, its incarnation, the escaped rowkey; the value holds the row's entry
    keys before the change), applied by the region's own consumer
    (coprocessor/java/io/hibase/ChangeConsumer.java)."""
    return f"__chg__{table}"


def routing_table(table: str) -> str:
    """The key-value table holding the persisted routing filters of `table` (routing.py)."""
    return f"__lrt__{table}"


def region_prefix(start: bytes) -> bytes:
    """The key prefix of one region's local rows: its start key, escaped and terminated."""
    return codec.escape_bytes(start)


def split_key(key: bytes) -> tuple[bytes, int]:
    """(region start key, position after the region prefix) of a local key."""
    return codec.unescape_bytes(key, 0)


def index_table(table: str) -> str:
    """The key-value table holding every global index of `table`."""
    return f"__idx__{table}"


def value_table(table: str) -> str:
    """The key-value table holding the value tables (value -> row count) of `table`'s indexes."""
    return f"__val__{table}"


@dataclass
class IndexSpec:
    """One secondary index: its columns (in order), their types, covered columns, alias."""

    name: str
    table: str
    columns: list[bytes]
    types: list[codec.ColumnType]
    covering: list[bytes] = field(default_factory=list)
    alias: bytes = b"\x00\x00"
    local: bool = False
    state: str = BUILDING
    null_alias: bytes | None = None  # the NULL list's alias (see module doc); None: no list
    # kept by the region server's coprocessor (HBase with hibase's IndexObserver), not by
    # the clients: writes compute no index rows for it (IndexManager.write)
    server: bool = False
    # "strong" (an entry never says what the row does not) or "eventual": the region server
    # records each changed row and applies it to the entries shortly after the write
    # (Phoenix 5.3's eventually consistent indexes); only a server-kept index lags (`lags`)
    consistency: str = "strong"
    # some cell the entries depend on can expire (a family's TTL: `expiring`), so entries and
    # value-table counts may outlive their cells: queries take entries as candidates (rows
    # fetched and checked) and no answer from counts. Not stored: the table's schema says it,
    # and the IndexManager sets it on the specs it hands out (ready, verify)
    expires: bool = field(default=False, compare=False)
    # Phoenix's UNCOVERED INDEX: entries carry no column values, so a write stores each new
    # entry once, in its final form (no unverified mark, no verified rewrite), and never marks
    # the old one; readers on stores with the verified protocol check every entry against its
    # data row (index/verified.py), which a query on it reads anyway
    uncovered: bool = False
    # a partial index (issue 43): its predicate compiled as index/partial.py says; a row has
    # an entry only when it is TRUE. None: every row (a full index)
    where: dict | None = None
    # "text": a full-text index (index/text.py): one entry per distinct token of its one
    # VARCHAR column, alias | token | rowkey; "" for the others (one entry per row)
    kind: str = ""

    @property
    def lags(self) -> bool:
        """Whether the entries may lag behind the rows: an eventual index the region servers
        keep. Queries use its entries as they are; no count or order of it answers alone."""
        return self.server and self.consistency == "eventual"

    @property
    def aliases(self) -> list[bytes]:
        """Every alias the index's entries and counts live under (its own, its NULL list's)."""
        return [self.alias] if self.null_alias is None else [self.alias, self.null_alias]

    @property
    def needed(self) -> list[bytes]:
        """Every column whose value the index rows depend on."""
        return list(dict.fromkeys([*self.columns, *self.covering, *self._where_columns()]))

    def _where_columns(self) -> list[bytes]:
        return [] if self.where is None else partial.columns(self.where)

    # -- keys --------------------------------------------------------------------------------
    def encode_values(self, values: Sequence[Any]) -> bytes:
        """Leading values (the first required; later ones may be None) as key bytes."""
        types = self.types
        out = [codec.encode_key(types[0], values[0])] if values else []
        for t, v in zip(types[1:], values[1:]):
            out.append(NULL if v is None else PRESENT + codec.encode_key(t, v))
        return b"".join(out)

    def column_bound(self, position: int, value: Any) -> bytes:
        """The key bytes of `value` in column `position`, for range bounds."""
        enc = codec.encode_key(self.types[position], value)
        return enc if position == 0 else PRESENT + enc

    def entry_key(self, values: Sequence[Any], row: bytes) -> bytes:
        return self.value_key(values) + row

    def value_key(self, values: Sequence[Any]) -> bytes:
        """alias | encoded values; the null alias for a row lacking the first column."""
        if values[0] is None:
            if self.null_alias is None:
                raise ValueError(f"index {self.name!r} keeps no NULL entries")
            return self.null_alias
        return self.alias + self.encode_values(values)

    def cells_key(self, cells: dict, timestamped: bool = False) -> bytes | None:
        """The value key of a row's entry from its cells ({column: raw}, or {column: (ts, raw)}
        with `timestamped`), without building the values; None when the row has no entry:
        it lacks the first column (and the index keeps no NULL list, or the row has no cell
        at all: `cells` must then hold every column of the row). NaN counts as NULL, and so
        does a cell that does not parse as its type (another writer's), as queries read it."""
        if not cells:
            return None
        if self.where is not None and not partial.holds(self.where, cells, timestamped):
            return None
        cell_key = codec.cell_key
        parts = [self.alias]
        for i, (col, t) in enumerate(zip(self.columns, self.types)):
            cell = cells.get(col)
            try:
                k = None if cell is None else cell_key(t, cell[1] if timestamped else cell)
            except errors.ValueTypeError:  # another writer's cell that does not parse: NULL
                k = None
            if i == 0:
                if k is None:
                    return self.null_alias
                parts.append(k)
            else:
                parts.append(NULL if k is None else PRESENT + k)
        return b"".join(parts)

    def null_values(self) -> list[None]:
        """The values of a NULL-list entry (every column NULL: later ones are not kept)."""
        return [None] * len(self.types)

    def prefix_key(self, values: Sequence[Any]) -> bytes:
        """Key prefix of every entry whose leading columns equal `values`."""
        return self.alias + self.encode_values(values)

    def _decode(self, key: bytes, pos: int, first: int) -> tuple[list[Any], int]:
        values: list[Any] = []
        for i in range(first, len(self.types)):
            if i > 0:
                flag = key[pos:pos + 1]
                pos += 1
                if flag == NULL:
                    values.append(None)
                    continue
            v, pos = codec.decode_key(self.types[i], key, pos)
            values.append(v)
        return values, pos

    def split_entry(self, key: bytes) -> tuple[list[Any], bytes]:
        """(values, user rowkey) of an index entry key (NULL-list entries included)."""
        if self.null_alias is not None and key[:2] == self.null_alias:
            return self.null_values(), key[2:]
        values, pos = self._decode(key, len(self.alias), 0)
        return values, key[pos:]

    def entry_row(self, key: bytes, prefix_len: int = 0, known: int = 0) -> bytes:
        """The user rowkey of an entry key; when the first `known` values' encoding length
        (`prefix_len`, alias included) is known, only the rest is decoded."""
        if known == len(self.types):
            return key[prefix_len:]
        _, pos = self._decode(key, prefix_len or len(self.alias), known)
        return key[pos:]

    # -- persistence -------------------------------------------------------------------------
    def to_json(self) -> bytes:
        extra: dict[str, Any] = {"upkeep": "server"} if self.server else {}
        if self.consistency != "strong":
            extra["consistency"] = self.consistency
        if self.uncovered:
            extra["uncovered"] = True
        if self.where is not None:
            extra["where"] = self.where
        if self.kind:
            extra["kind"] = self.kind
        return json.dumps({
            "name": self.name, "table": self.table,
            "columns": [c.decode() for c in self.columns],
            "types": [str(t) for t in self.types],
            "covering": [c.decode() for c in self.covering],
            "alias": self.alias.hex(), "local": self.local, "state": self.state,
            "null_alias": self.null_alias.hex() if self.null_alias is not None else None,
            **extra}).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "IndexSpec":
        d = json.loads(raw)
        return cls(d["name"], d["table"], [c.encode() for c in d["columns"]],
                   [codec.parse_type(t) for t in d["types"]],
                   [c.encode() for c in d["covering"]], bytes.fromhex(d["alias"]),
                   d["local"], d["state"],
                   bytes.fromhex(d["null_alias"]) if d.get("null_alias") else None,
                   d.get("upkeep") == "server", d.get("consistency", "strong"),
                   uncovered=d.get("uncovered", False), where=d.get("where"),
                   kind=d.get("kind", ""))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "table": self.table,
                "columns": [c.decode() for c in self.columns],
                "types": [str(t) for t in self.types],
                "covering": [c.decode() for c in self.covering],
                "local": self.local, "state": self.state, "alias": self.alias.hex(),
                "null_list": self.null_alias is not None, "consistency": self.consistency,
                "uncovered": self.uncovered,
                **({"upkeep": "server"} if self.server else {}),
                **({"where": self.where["sql"]} if self.where is not None else {}),
                **({"kind": self.kind} if self.kind else {})}


def expiring(spec: IndexSpec, ttls: dict[bytes, int]) -> bool:
    """Whether cells `spec`'s entries depend on can expire: a family of its columns (indexed or
    covered) has a TTL (`ttls`: family -> seconds, families without one left out), or, for an
    index keeping a NULL list, any family (a row whose cells all expired has no entry, one
    whose indexed cell expired belongs in the list). HBase's TTL is per cell and nothing
    rewrites an entry when its cell expires, so such an index's entries and counts may say
    more than the table holds (docs/architecture.md, "Tables with a TTL")."""
    if not ttls:
        return False
    if spec.null_alias is not None:
        return True
    return any(c.split(b":", 1)[0] in ttls for c in spec.needed)


def raw_values(spec: IndexSpec, cells: dict[bytes, bytes], bad: codec.BadCells | None = None,
               row: bytes = b"") -> list[Any] | None:
    """The index values of a {column: value} row (no timestamps), as scans with with_ts=False
    give; None when the row has no entry. With a NULL list `cells` must hold every column of
    the row (whether any cell is left decides the entry). NaN is unordered, so like the query
    evaluator the index treats it as NULL; so is a cell that does not parse as its type
    (another writer's), counted in `bad` (as `row`) when given."""
    if spec.where is not None and not partial.holds(spec.where, cells):
        return None
    out = []
    for col, t in zip(spec.columns, spec.types):
        raw = cells.get(col)
        if raw is None:
            v = None
        else:
            try:
                v = codec.decode_cell(t, raw)
            except errors.ValueTypeError:
                v = None
                if bad is not None:
                    bad.add(row, col)
        out.append(None if v != v else v)
    if out[0] is None:
        return spec.null_values() if spec.null_alias is not None and cells else None
    return out


def needed_columns(specs: Iterable[IndexSpec]) -> list[bytes] | None:
    """The columns whose values index upkeep of `specs` reads; None (every column) when some
    index keeps a NULL list, whose entries depend on whether the row has any cell at all."""
    specs = list(specs)
    if any(s.null_alias is not None for s in specs):
        return None
    return list(dict.fromkeys(c for s in specs for c in s.needed))
