"""Benchmark of the Thrift gateway under hostile clients (issue 15, item 4): a happybase client's
call latency alone, then with `idle` idle connections and `garbage` connections that send noise
(random bytes, calls claiming 2 GB strings, frames claiming 2 GB) and stay open; the gateway's
RSS before and at its peak; how the hostile connections were answered; tracebacks logged.

The gateway runs as `hibase serve --thrift` in a child process (its RSS is its own), optionally
from another source tree (`server_src`) to measure an older checkout with the same client.
"""

from __future__ import annotations

import os
import random
import re
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any

__all__ = ["run", "summary"]


def _rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _start(path: str, server_src: str | None, options: list[str],
           log: Any) -> tuple[subprocess.Popen, tuple[str, int]]:
    env = dict(os.environ)
    if server_src:
        env["PYTHONPATH"] = os.path.join(os.path.abspath(server_src), "src")
    proc = subprocess.Popen([sys.executable, "-m", "hibase", "serve", "--thrift", "--port", "0",
                             *options, path], stdout=subprocess.PIPE, stderr=log,
                            text=True, env=env)  # a file: a full pipe would stall the server
    line = proc.stdout.readline() if proc.stdout else ""
    m = re.search(r" on ([\d.]+):(\d+) ", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"the gateway did not start: {line!r}")
    return proc, (m.group(1), int(m.group(2)))


def _garbage(rng: random.Random, i: int) -> bytes:
    kind = i % 4
    if kind == 0:  # random bytes
        return rng.randbytes(rng.randint(1, 4096))
    if kind == 1:  # a call header, then a 2 GB string claimed
        return (struct.pack(">iI", -0x7FFEFFFF, 6) + b"getRow" + struct.pack(">i", i)
                + bytes([11]) + struct.pack(">hi", 1, 2**31 - 1))
    if kind == 2:  # a frame claiming 2 GB, or a buffered call's first bytes
        return struct.pack(">i", 2**31 - 1) + rng.randbytes(64)
    return b"\x80\x01\x00\x01" + rng.randbytes(rng.randint(1, 512))  # a header, then noise


def _open_hostile(addr: tuple[str, int], n: int) -> list[socket.socket]:
    """n non-blocking connects (not waited for one by one: a server that stops accepting
    must not stall the benchmark)."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex(addr)
        socks.append(s)
    return socks


def _connected(socks: list[socket.socket], wait: float) -> list[socket.socket]:
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_WRITE)
    ok: list[socket.socket] = []
    deadline = time.monotonic() + wait
    while len(ok) < len(socks) and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
            s = key.fileobj
            sel.unregister(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:  # type: ignore[union-attr]
                ok.append(s)  # type: ignore[arg-type]
    sel.close()
    return ok


def _closed_by_server(socks: list[socket.socket]) -> int:
    n = 0
    for s in socks:
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    n += 1
                    break
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            n += 1
    return n


def _client_round(addr: tuple[str, int], calls: int, timeout_s: float) -> dict[str, Any]:
    """`calls` alternating put/row calls from a fresh happybase connection; a call that fails
    or times out counts at `timeout_s`."""
    import happybase

    lat: list[float] = []
    errors: list[str] = []
    start = time.perf_counter()
    try:
        conn = happybase.Connection(addr[0], addr[1], timeout=int(timeout_s * 1000))
        t = conn.table("bench")
    except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not stop
        return {"calls": 0, "errors": calls, "first_error": f"connect: {exc!r}"[:200],
                "p50_ms": None, "p99_ms": None, "max_ms": None}
    for i in range(calls):
        t0 = time.perf_counter()
        try:
            if i % 2:
                t.row(b"r%05d" % (i // 2))
            else:
                t.put(b"r%05d" % (i // 2), {b"f:a": b"v%d" % i})
            lat.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc)[:200])
            lat.append(timeout_s)
            try:  # a timed-out socket is out of step: reconnect
                conn.close()
                conn = happybase.Connection(addr[0], addr[1], timeout=int(timeout_s * 1000))
                t = conn.table("bench")
            except Exception:  # noqa: BLE001
                lat.extend([timeout_s] * (calls - i - 1))
                errors.extend(["connect failed"] * (calls - i - 1))
                break
    try:
        conn.close()
    except Exception:  # noqa: BLE001
        pass
    lat.sort()
    return {"calls": len(lat), "errors": len(errors), "first_error": errors[0] if errors else None,
            "elapsed_s": round(time.perf_counter() - start, 3),
            "p50_ms": round(statistics.median(lat) * 1000, 3),
            "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, 3),
            "max_ms": round(lat[-1] * 1000, 3)}


def run(idle: int = 1000, garbage: int = 1000, calls: int = 400, timeout_s: float = 5.0,
        seed: int = 0, server_src: str | None = None, server_options: list[str] | None = None,
        workdir: str | None = None) -> dict[str, Any]:
    """Run the benchmark; a JSON-serializable report."""
    import happybase

    rng = random.Random(seed)
    options = list(server_options or [])
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        log = open(os.path.join(tmp, "server.log"), "w+")
        proc, addr = _start(os.path.join(tmp, "store"), server_src, options, log)
        hostile: list[socket.socket] = []
        try:
            conn = happybase.Connection(addr[0], addr[1], timeout=int(timeout_s * 1000))
            conn.create_table("bench", {"f": {}})
            conn.close()
            _client_round(addr, 50, timeout_s)  # warm up
            rss_before = _rss_mb(proc.pid)
            alone = _client_round(addr, calls, timeout_s)

            t0 = time.perf_counter()
            idle_socks = _open_hostile(addr, idle)
            garbage_socks = _open_hostile(addr, garbage)
            hostile = idle_socks + garbage_socks
            connected = set(_connected(hostile, 5.0))
            sent = 0
            for i, s in enumerate(garbage_socks):
                if s in connected:
                    try:
                        s.send(_garbage(rng, i))
                        sent += 1
                    except OSError:
                        pass
            opened_s = time.perf_counter() - t0
            time.sleep(1.0)  # let the server see them all
            under = _client_round(addr, calls, timeout_s)
            rss_peak = _rss_mb(proc.pid, "VmHWM")
            rss_after = _rss_mb(proc.pid)
            garbage_closed = _closed_by_server([s for s in garbage_socks if s in connected])
            idle_closed = _closed_by_server([s for s in idle_socks if s in connected])
        finally:
            for s in hostile:
                s.close()
            proc.terminate()
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            log.seek(0)
            err = log.read()
            log.close()
    report: dict[str, Any] = {
        "benchmark": "gateway", "server_src": server_src or "this checkout",
        "server_options": options, "idle": idle, "garbage": garbage, "calls": calls,
        "client_timeout_s": timeout_s, "seed": seed,
        "hostile_connected": len(connected), "hostile_open_s": round(opened_s, 3),
        "garbage_sent": sent, "garbage_closed_by_server": garbage_closed,
        "idle_closed_by_server": idle_closed,
        "client_alone": alone, "client_under_hostile": under,
        "rss_mb": {"before": rss_before, "peak": rss_peak, "after_hostile": rss_after},
        "server_log": {"lines": len(err.splitlines()),
                       "tracebacks": err.count("Traceback (most recent call last)"),
                       "memory_errors": err.count("MemoryError")},
    }
    p99 = under.get("p99_ms")
    report["meets_targets"] = {
        "p99 < 1 s under 1,000 idle + 1,000 garbage": bool(
            under["errors"] == 0 and p99 is not None and p99 < 1000),
        "peak RSS < before + 256 MB": bool(rss_before and rss_peak
                                          and rss_peak < rss_before + 256),
        "no tracebacks": report["server_log"]["tracebacks"] == 0,
    }
    return report


def summary(r: dict[str, Any]) -> list[str]:
    a, u, rss = r["client_alone"], r["client_under_hostile"], r["rss_mb"]
    lines = [f"bench gateway ({r['server_src']}): {r['idle']} idle + {r['garbage']} garbage "
             f"connections ({r['hostile_connected']} connected)",
             f"client alone:        p50 {a['p50_ms']} ms  p99 {a['p99_ms']} ms  "
             f"errors {a['errors']}/{a['calls']}",
             f"client under attack: p50 {u['p50_ms']} ms  p99 {u['p99_ms']} ms  "
             f"errors {u['errors']}/{u['calls']}",
             f"server RSS MB: before {rss['before']}, peak {rss['peak']}",
             f"garbage closed by the server: {r['garbage_closed_by_server']}/"
             f"{r['garbage_sent']}; tracebacks logged: {r['server_log']['tracebacks']}"]
    return lines + [f"target {k}: {'met' if v else 'MISSED'}"
                    for k, v in r["meets_targets"].items()]
