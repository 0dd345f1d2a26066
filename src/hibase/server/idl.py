"""The Hbase.thrift IDL (Thrift1, the one happybase ships), loaded once with thriftpy2 under the
module name happybase gives it, so the gateway and happybase clients in one process share it."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from types import ModuleType

from .. import errors
from ..extras import require

__all__ = ["load_idl"]

_IDL_MODULE = "Hbase_thrift"  # the module name happybase gives the same IDL

_idl_lock = threading.Lock()


def load_idl() -> ModuleType:
    """The Hbase.thrift module (structs, exceptions, the Hbase service), loaded with thriftpy2
    from happybase's package (shared with happybase when it is imported in this process)."""
    with _idl_lock:
        loaded = sys.modules.get(_IDL_MODULE)
        if loaded is not None and hasattr(loaded, "Hbase"):
            return loaded
        require("hbase", "the Thrift gateway")
        import thriftpy2
        spec = importlib.util.find_spec("happybase")
        path = None
        if spec is not None and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                candidate = os.path.join(folder, "Hbase.thrift")
                if os.path.isfile(candidate):
                    path = candidate
                    break
        if path is None:
            raise errors.BackendUnavailable(
                "the Thrift gateway serves the Hbase.thrift IDL that happybase ships; "
                "install it: pip install 'happybase>=1.2'")
        return thriftpy2.load(path, module_name=_IDL_MODULE)
