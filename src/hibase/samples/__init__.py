"""Sample data shipped with hibase: the demo's generated telecom records (``telecom``), the
paper's query workload (``workload``), and small real data sets for the tutorials.

``ubuntu_releases.csv``: every Ubuntu release (version, codename, series, and the dates it was
created, released and reached its ends of life), from Debian's ``distro-info-data`` package
(``/usr/share/distro-info/ubuntu.csv``, version 0.58+deb12u6), with the header's hyphens
written as underscores (``eol-server`` -> ``eol_server``) so that SQL can name each column, and
every line given all nine fields (the original leaves out trailing empty ones).
Copyright 2009-2023 Benjamin Drung, 2009-2021 Stefano Rivera; ISC licence, in
``ubuntu_releases.LICENSE`` beside it.

``python -m hibase.samples`` lists the files; ``python -m hibase.samples NAME`` writes one to
standard output.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["names", "read"]


def names() -> list[str]:
    """The data files shipped here (``ubuntu_releases.csv``, ...)."""
    return sorted(p.name for p in resources.files(__name__).iterdir()
                  if p.name.endswith(".csv"))


def read(name: str) -> bytes:
    """The bytes of the shipped data file ``name`` (one of ``names()``)."""
    if name not in names():
        raise FileNotFoundError(f"no sample {name!r} (samples: {', '.join(names())})")
    return resources.files(__name__).joinpath(name).read_bytes()
