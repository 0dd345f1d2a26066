"""Cache policies by name: the one place that knows every policy class (window-heat builds on
policy.py, so the registry sits above both)."""

from __future__ import annotations

from typing import Any

from hibase.errors import InvalidArgument

from .policy import (POLICY_NAMES, HotscorePerRecordPolicy, HotscorePolicy, LRUPolicy, NoCache,
                     Policy, _check_int)
from .window_heat import WindowHeatPolicy

__all__ = ["make_policy", "POLICY_NAMES"]


def make_policy(name: str | None, capacity: int, **options: Any) -> Policy:
    """Build a policy by name: "window-heat" (hibase's default, cache/window_heat.py),
    "hotscore" (as published), "hotscore-per-record", "lru", or None / "none". Options go to
    the constructor (alpha, count_period; hotscore's fill_gaps, epsilon; window-heat's window,
    adapt)."""
    key = "none" if name is None else str(name).strip().lower().replace("_", "-")
    classes: dict[str, type[Policy]] = {
        "window-heat": WindowHeatPolicy, "hotscore": HotscorePolicy,
        "hotscore-per-record": HotscorePerRecordPolicy, "lru": LRUPolicy,
    }
    if key == "none":
        if options:
            raise InvalidArgument(f"policy 'none' takes no options, got {sorted(options)}")
        _check_int("capacity", capacity, 0)
        return NoCache()
    if key not in classes:
        raise InvalidArgument(f"unknown cache policy {name!r}; choose one of {POLICY_NAMES}")
    try:
        return classes[key](capacity, **options)
    except TypeError as exc:
        raise InvalidArgument(f"bad options for policy {key!r}: {exc}") from None
