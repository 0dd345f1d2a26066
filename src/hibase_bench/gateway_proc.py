"""The backends a remote benchmark runs on: ``check_backend`` reads the --backend value, and
``Gateway`` runs ``hibase serve --thrift`` in a subprocess for the "gateway" backend (shared by
the query and round-trip benchmarks)."""

from __future__ import annotations

import ctypes
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from hibase import errors
from hibase.store.hbase import parse_url

__all__ = ["check_backend", "Gateway", "GATEWAY_START_TIMEOUT_S", "GATEWAY_STOP_TIMEOUT_S"]

GATEWAY_START_TIMEOUT_S = 60.0
GATEWAY_STOP_TIMEOUT_S = 30.0
_CLIENT_URL = re.compile(r"hibase clients: (thrift://\S+)")  # printed by hibase serve


def check_backend(backend: str) -> str:
    """`backend` if it is "embedded", "gateway" or a well-formed thrift:// URL, else
    InvalidArgument saying what is accepted."""
    if backend in ("embedded", "gateway"):
        return backend
    if not isinstance(backend, str) or not backend.startswith("thrift://"):
        raise errors.InvalidArgument(
            f"backend must be 'embedded', 'gateway' or a thrift://HOST:PORT URL, not "
            f"{backend!r}")
    parse_url(backend)
    return backend


# -- the gateway subprocess ---------------------------------------------------------------------

def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: SIGTERM the gateway if the benchmark process dies without stopping it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Gateway:
    """``hibase serve --thrift --port 0 --thrift2-port 0 FOLDER`` in a subprocess; ``url`` (with
    its thrift2_port) once entered, stopped
    with SIGTERM on exit (killed if it has not stopped within GATEWAY_STOP_TIMEOUT_S)."""

    def __init__(self, folder: str):
        self.folder = folder
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.returncode: int | None = None
        self._logs: list[Any] = []

    def __enter__(self) -> "Gateway":
        out = tempfile.TemporaryFile()
        err = tempfile.TemporaryFile()
        self._logs = [out, err]
        cmd = [sys.executable, "-m", "hibase", "serve", "--thrift", "--host", "127.0.0.1",
               "--port", "0", "--thrift2-port", "0", self.folder]
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
            deadline = time.monotonic() + GATEWAY_START_TIMEOUT_S
            while True:
                out.seek(0)
                m = _CLIENT_URL.search(out.read().decode("utf-8", "replace"))
                if m:  # Thrift1 and the Thrift2 port of its one-call short scans
                    self.url = m.group(1)
                    return self
                if self.proc.poll() is not None:
                    raise errors.BackendUnavailable(
                        f"the gateway (`{' '.join(cmd[2:])}`) exited with code "
                        f"{self.proc.returncode} before serving: {self._stderr_tail()}")
                if time.monotonic() > deadline:
                    raise errors.BackendUnavailable(
                        f"the gateway (`{' '.join(cmd[2:])}`) printed no port within "
                        f"{GATEWAY_START_TIMEOUT_S:.0f} s: {self._stderr_tail()}")
                time.sleep(0.02)
        except BaseException:
            self.stop()
            raise

    def _stderr_tail(self) -> str:
        err = self._logs[1]
        err.seek(0)
        text = " ".join(err.read().decode("utf-8", "replace").split())
        return text[-600:] or "(nothing on stderr)"

    def stop(self) -> int | None:
        """SIGTERM, wait, kill if needed; the exit code (0: stopped cleanly)."""
        p = self.proc
        if p is not None and self.returncode is None:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(GATEWAY_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            self.returncode = p.returncode
        for f in self._logs:
            f.close()
        self._logs = []
        return self.returncode

    def __exit__(self, *exc: Any) -> None:
        self.stop()
