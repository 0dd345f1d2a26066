"""The index layer's face: what the query layer (and anything above) may use of it.

`IndexManager` keeps a store's indexes exact on every write and owns the routing of local-index
lookups (`manager.router`, passed to the lookups below); the functions read index entries and
value counts in key ranges. Everything else in index/ is its own business."""

from .local import Route, count_routed, is_point, plan_route
from .local import scan_entries as scan_local
from .lookup import (KeyRange, count_points, count_values, key_range, null_range, scan_entries,
                     scan_entry_keys, scan_points, walk_values)
from .manager import IndexManager
from .spec import IndexSpec, index_table, value_table
from .text import TextQuery, contains_text, parse_text_query, text_query_text

__all__ = ["IndexManager", "IndexSpec", "KeyRange", "Route", "count_points", "count_routed",
           "count_values", "index_table", "is_point", "key_range", "null_range", "plan_route", "scan_entries",
           "scan_entry_keys",
           "scan_local", "scan_points", "value_table", "walk_values",
           "TextQuery", "contains_text", "parse_text_query", "text_query_text"]
