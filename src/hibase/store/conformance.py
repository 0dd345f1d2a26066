"""Both backends checked against the store contract (store/api.py `Store`) by mypy: each
function below only type-checks while its backend offers every member of the contract with a
compatible signature. Nothing here runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .api import Store
    from .embedded import EmbeddedStore
    from .hbase import HBaseStore

    def _embedded(store: EmbeddedStore) -> Store:
        return store

    def _hbase(store: HBaseStore) -> Store:
        return store
