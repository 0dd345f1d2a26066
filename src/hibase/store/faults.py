"""Fault injection at the steps between the HBase store's separate calls, where a writer that
dies leaves work half done (the verified index protocol, region splits). Tests arm a store's
`faults` to stop a writer right after one step and check that readers stay exact and the next
writer finishes the work; unarmed (the default) every check is a comparison with None."""

from __future__ import annotations

from .. import errors

__all__ = ["Faults", "STEPS"]

# index: unverified entries written; data: data rows written (entries not yet verified);
# split-copy: a split's rows copied; split-switch: the new layout recorded
STEPS = ("index", "data", "split-copy", "split-switch")


class Faults:
    """One store's fault points: `arm(step)` makes the store raise right after `step`."""

    __slots__ = ("stop_after",)

    def __init__(self) -> None:
        self.stop_after: str | None = None

    def arm(self, step: str | None) -> None:
        """Stop after `step` (one of STEPS) from now on; None disarms."""
        if step is not None and step not in STEPS:
            raise errors.InvalidArgument(f"unknown fault step {step!r}; one of {STEPS}")
        self.stop_after = step

    def reached(self, step: str) -> None:
        """Called by the store after each step: raises when armed for it."""
        if self.stop_after == step:
            raise errors.BackendError(f"fault injection: writer stopped after the {step} step")
