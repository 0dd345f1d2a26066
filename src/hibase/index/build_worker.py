"""Worker process of the batch index build: the index entries of some regions, computed from a
read-only open of the store. Run as `python -m hibase.index.build_worker` with a JSON job on
stdin, so it depends on nothing in the caller's __main__ (unlike multiprocessing's spawn)."""

from __future__ import annotations

import json
import sys

import msgpack


def main() -> int:
    job = json.loads(sys.stdin.read())
    from ..store.backends import open_store
    from .build import expected_entries_many
    from .spec import IndexSpec

    # HBase: the worker reads through Thrift too
    store = open_store(job["path"], create=False, read_only=True, block_cache_mb=32)
    specs = [IndexSpec.from_json(spec.encode()) for spec in job["specs"]]
    try:
        results = [expected_entries_many(store, specs, bytes.fromhex(start) or None,
                                         bytes.fromhex(stop) or None)
                   for start, stop in job["ranges"]]
    finally:
        store.close()
    with open(job["out"], "wb") as f:
        f.write(msgpack.packb(results, use_bin_type=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
