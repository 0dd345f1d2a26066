"""The embedded store's open tables: schema, family handles and regions, and column-family
names."""

from __future__ import annotations

import bisect

from ..base import Region
from ..schema import TableSchema

__all__ = ["Table", "cf_name"]


def cf_name(table: str, family: bytes) -> str:
    return f"t/{table}/{family.decode()}"


class Table:
    """An open table: its schema, family handles and regions (kept sorted by start key)."""

    __slots__ = ("schema", "fams", "regions", "starts")

    def __init__(self, schema: TableSchema, fams: dict, regions: list[Region]):
        self.schema = schema
        self.fams = fams  # family -> (Rdict view, ColumnFamily handle, FamilyOptions)
        self.regions = regions
        self.starts = [r.start for r in regions]

    def region_of(self, row: bytes) -> Region:
        return self.regions[bisect.bisect_right(self.starts, row) - 1]
