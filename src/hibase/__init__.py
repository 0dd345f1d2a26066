"""hibase: fast, exact secondary indexes for HBase-style tables.

    import hibase
    db = hibase.connect("data/")
"""

from . import errors
from .connection import Connection, connect
from .table import Batch, Table

__all__ = ["connect", "Connection", "Table", "Batch", "errors", "__version__"]
__version__ = "0.1.0"
