"""The optional parts of hibase and the packages each needs (pyproject's extras): the base
install is the embedded product; a part whose packages are missing says which extra to install,
in one line, before it starts any work."""

from __future__ import annotations

import importlib.util

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
    """Raise MissingExtra naming `extra` if any of its modules (or of `modules`) is missing:
    ``require("hbase", "a thrift:// store")`` -> "a thrift:// store needs the hbase extra
    (happybase is not installed): pip install 'hibase[hbase]'"."""
    for module in modules if modules is not None else EXTRAS[extra]:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(f"{what} needs the {extra} extra ({module} is not installed): "
                               f"pip install 'hibase[{extra}]'", extra)
