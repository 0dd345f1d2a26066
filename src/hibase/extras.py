"""The optional parts of hibase and the packages each needs (pyproject's extras): the base
install is the embedded product; a part whose packages are missing says which extra to install,
in one line, before it starts any work."""

from __future__ import annotations

import importlib

from .errors import MissingExtra

__all__ = ["EXTRAS", "require"]

EXTRAS = {
    "hbase": ("thriftpy2", "happybase"),
    "cache": ("redis", "kazoo", "uhashring"),
    "cluster": ("thriftpy2", "happybase", "redis", "kazoo", "uhashring"),
    "bench": ("matplotlib",),
}
"""Each extra and the modules it brings (the import names)."""


def require(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise MissingExtra naming `extra` if any of its modules (or of `modules`) cannot be
    imported: ``require("hbase", "a thrift:// store")`` -> "a thrift:// store needs
    happybase: pip install 'hibase[hbase]'". The part about to start imports them anyway."""
    for module in modules if modules is not None else EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtra(f"{what} needs {module}: pip install 'hibase[{extra}]'",
                               extra) from None
