"""Peak memory and time of one SQL statement holding a long string literal (issue 24: a 10 MB
literal peaked at 2.4 GB inside sqlglot before statements were bounded).

    python benchmarks/statement_size.py 10000000     # one run per process: ru_maxrss is a peak
"""

import resource
import sys
import tempfile
import time

import hibase

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
with tempfile.TemporaryDirectory() as folder:
    db = hibase.connect(folder)
    db.create_table("t", {"f": {}}, columns={"f:a": "string"})
    t0 = time.perf_counter()
    try:
        db.sql("SELECT * FROM t WHERE f.a = '" + "x" * n + "'")
        outcome = "answered"
    except hibase.errors.HibaseError as exc:
        outcome = type(exc).__name__
    took = time.perf_counter() - t0
    db.close()
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"literal of {n:,} bytes: {outcome} in {took:.2f} s, peak RSS {peak_mb} MB")
