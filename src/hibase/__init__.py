"""hibase: fast, exact secondary indexes for HBase-style tables.

    import hibase
    db = hibase.connect("data/")
"""

from . import errors
from .client import Batch, Connection, Table, connect

__all__ = ["connect", "Connection", "Table", "Batch", "errors", "__version__"]
__version__ = "0.1.0"
