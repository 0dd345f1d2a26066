"""Kept for code written against hibase.client: Connection and connect live in connection.py,
Table and Batch in table.py."""

from .connection import Connection, connect
from .table import Batch, Table

__all__ = ["Connection", "Table", "Batch", "connect"]
