"""The table the cache tests share, and the two ways they read it: through the index (and the
cache) and by a full scan that touches neither."""

from __future__ import annotations


def make_db(backend, rows=60, values=6, **options):
    """A connection to `backend` (a backends.Backend) with connect() `options`, and its table t:
    rows r000.. with f:a = i % values (int) and f:b (covered by index by_a)."""
    db = backend.connect(**options)
    db.create_table("t", {"f": {}}, columns={"f:a": "int", "f:b": "string"})
    t = db.table("t")
    with t.batch() as b:
        for i in range(rows):
            b.put(b"r%03d" % i, {b"f:a": b"%d" % (i % values), b"f:b": b"b%d" % i})
    db.create_index("t", "by_a", ["f:a"], covering=["f:b"])
    return db, t


def make_node_db(backend, cache):
    """make_db's table of 200 rows (20 values), read through the cache nodes of spec `cache`
    (the Redis and ZooKeeper tests)."""
    return make_db(backend, rows=200, values=20, cache=cache)


def oracle(t, value):
    """Rows with f:a == value by a full scan: no index, no cache."""
    return sorted(k for k, d in t.scan(columns=[b"f:a"]) if d.get(b"f:a") == b"%d" % value)


def found(t, cond):
    """Rows matching `cond` through the planner (index, cache), covered column only."""
    return sorted(k for k, _ in t.where(cond, columns=[b"f:b"]))
