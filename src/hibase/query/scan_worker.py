"""Worker process of a parallel full scan: the matching rows of some rowkey ranges, read from a
read-only open of the store. Run as `python -m hibase.query.scan_worker` with a pickled job on
stdin (from the scanning process itself); writes msgpack [row, cells] pairs to the job's file."""

from __future__ import annotations

import pickle
import sys

import msgpack


def main() -> int:
    job = pickle.loads(sys.stdin.buffer.read())
    from ..codec import ColumnType
    from ..store.backends import open_store
    from .scan import scan_share

    types = {c: ColumnType(name, binary) for c, (name, binary) in job["types"].items()}
    store = open_store(job["path"], read_only=True, block_cache_mb=32)
    try:
        pack = msgpack.Packer(use_bin_type=True).pack
        with open(job["out"], "wb", buffering=1 << 20) as f:
            write = f.write
            for row, cells in scan_share(store, job["table"], job["ranges"], job["conjuncts"],
                                         types, job["columns"]):
                write(pack((row, cells)))
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
