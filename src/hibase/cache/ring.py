"""The consistent-hash ring that places cache keys on cache nodes (SPEC §1).

An MD5 (ketama) ring with virtual nodes, from uhashring: each node owns many small arcs, a key
belongs to the first node point clockwise from its hash. Removing a node moves only its keys (to
the next points clockwise); adding one takes only the keys of its own arcs.

>>> ring = Ring(["redis://a:6379/0", "redis://b:6379/0"])
>>> ring.node_for(b"t\\x00\\x00\\x01k") in ring.nodes
True
>>> Ring([]).node_for(b"k") is None
True
"""

from __future__ import annotations

from typing import Iterable

from uhashring import HashRing

__all__ = ["Ring", "VNODES"]

VNODES = 64  # virtual nodes per cache node (x4 ketama points each)


class Ring:
    """An immutable ring over node names (normalized Redis URLs)."""

    def __init__(self, nodes: Iterable[str], vnodes: int = VNODES) -> None:
        self.nodes = tuple(sorted(set(nodes)))
        self._only = self.nodes[0] if len(self.nodes) == 1 else None
        self._ring = HashRing({n: {"vnodes": vnodes} for n in self.nodes}, hash_fn="ketama") \
            if len(self.nodes) > 1 else None

    def node_for(self, key: bytes) -> str | None:
        """The node that owns `key`, or None on an empty ring."""
        if self._ring is None:
            return self._only
        return self._ring.get_node(key.decode("latin-1"))

    def __len__(self) -> int:
        return len(self.nodes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ring) and other.nodes == self.nodes

    def __hash__(self) -> int:
        return hash(self.nodes)

    def __repr__(self) -> str:
        return f"Ring({list(self.nodes)})"
