"""Child processes of tests that send them Ctrl-C (SIGINT)."""

from __future__ import annotations

import signal


def as_from_a_terminal() -> None:
    """In the child before exec: SIGINT at its default and unblocked, as a terminal's shell
    starts a command. A pytest-xdist worker late in the default run passes SIGINT on to its
    children ignored or blocked (a child Python then never raises KeyboardInterrupt: Ctrl-C tests
    timed out there and passed alone; the load's stack, dumped by SIGUSR1, sat in its read)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
