"""Ports for local servers: picked below the kernel's ephemeral range (where no bind(0) or
outgoing connection lands) and never handed to two processes at once (two clusters started
together once collided on a port: "bind(..) failed: Address already in use")."""

from __future__ import annotations

import subprocess
import sys

from hibase.cluster import local
from hibase.cluster.local import free_port, port_taken

PICK = "from hibase.cluster.local import free_port; print(*[free_port() for _ in range(40)])"


def test_picks_are_free_distinct_and_below_the_ephemeral_range():
    low = local._ephemeral_low()
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(1024 <= p < low for p in ports)
    assert not any(port_taken(p) for p in ports)


def test_processes_picking_at_once_never_get_the_same_port():
    procs = [subprocess.Popen([sys.executable, "-c", PICK], stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    picks = [int(p) for proc in procs for p in proc.communicate(timeout=60)[0].split()]
    assert len(picks) == 160
    assert len(set(picks)) == 160


def test_a_reservation_expires(monkeypatch):
    port = free_port()
    assert not local._reserve(port)  # held by this process's pick
    monkeypatch.setattr(local, "_RESERVED_FOR", -1.0)
    assert local._reserve(port)  # stale: claimed again
