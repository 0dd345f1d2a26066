"""Issue 43's full-text figure: CONTAINS(f.body, 'word') through a text index against
f.body LIKE '%word%' (no index can answer it: a full scan, on the SQL engine's path).

``docs`` generated documents (rowkey k, f.body VARCHAR of 10-40 words drawn from a Zipf-like
vocabulary of made-up words) are loaded into an embedded store (or the tables of a hibase URL,
e.g. a `hibase cluster`), then a text index is built. Per probe word (a rare, a medium and a
common one, picked by their document counts), plus two words together and a prefix:

* ``indexed``: the text index lookup and the rows' fetch, median of ``repeats``;
* ``scan``: CONTAINS with the index unused (full_scan=True: each row tokenized), one run;
* ``like``: ``LIKE '%word%'``, the first run (``like_cold``) and the median of ``repeats``
  (the SQL engine keeps a columnar copy of an unchanged table between statements).

``same``: the indexed answer is the scan's; LIKE finds a superset (a substring of another
word matches too), checked as such (``like_superset``).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable

import hibase

__all__ = ["run", "summary"]

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pa", "de", "zu", "ren", "ga",
             "tor", "li", "an", "bel", "cu", "dra", "fo"]
VOCABULARY = 20_000
TARGETS = {"rare": 0.0002, "medium": 0.01, "common": 0.1}  # share of documents


def _vocabulary(rng: random.Random) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def _median(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _rows(answer: Any) -> list:
    return sorted(r[0] for r in answer)


def run(docs: int = 100_000, repeats: int = 5, seed: int = 43, url: str | None = None,
        workdir: str | None = None, progress: bool = False) -> dict[str, Any]:
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf: a few words in most texts
    tmp = None if url else (workdir or tempfile.mkdtemp(prefix="hibase-fulltext-"))
    report: dict[str, Any] = {"docs": docs, "repeats": repeats, "seed": seed,
                              "backend": "hbase" if url else "embedded", "queries": []}
    try:
        report["loadavg_start"] = os.getloadavg()
    except OSError:
        pass
    try:
        db = hibase.connect(url or os.path.join(tmp or ".", "hibase"))
        table = f"fulltext{seed}"
        db.sql(f"CREATE TABLE {table} (k VARCHAR PRIMARY KEY, f.body VARCHAR)")
        doc_freq: dict[str, int] = {}
        t0 = time.perf_counter()
        batch = []
        for i in range(docs):
            words = rng.choices(vocab, weights, k=rng.randint(10, 40))
            for w in set(words):
                doc_freq[w] = doc_freq.get(w, 0) + 1
            batch.append((f"d{i:08d}", " ".join(words) + "."))
            if len(batch) == 20_000 or i == docs - 1:
                db.execute_many(f"UPSERT INTO {table} (k, f.body) VALUES (?, ?)", batch)
                batch = []
                if progress:
                    print(f"loaded {i + 1:,} documents", flush=True)
        report["load_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        built = db.create_index(table, "body_text", ["f:body"], kind="text")
        report["index_build_s"] = time.perf_counter() - t0
        report["index_state"] = built["state"]
        by_freq = sorted(doc_freq.items(), key=lambda kv: kv[1])
        probes = []
        for label, share in TARGETS.items():
            want = max(1, int(share * docs))
            word, _ = min(by_freq, key=lambda kv: (abs(kv[1] - want), kv[0]))
            probes.append((label, word))
        probes.append(("two words", f"{probes[1][1]} {probes[2][1]}"))
        probes.append(("prefix", probes[1][1][:4] + "*"))
        for label, query in probes:
            contains = f"SELECT k FROM {table} WHERE CONTAINS(f.body, '{query}')"
            likes = " AND ".join(f"f.body LIKE '%{w.rstrip('*')}%'" for w in query.split())
            like = f"SELECT k FROM {table} WHERE {likes}"
            plan = db.explain(contains)
            indexed_s, got = _median(lambda: db.sql(contains), repeats)
            scan_s, scanned = _timed(lambda: db.sql(contains, full_scan=True))
            like_cold_s, liked = _timed(lambda: db.sql(like))
            like_s, _ = _median(lambda: db.sql(like), repeats)
            rows = _rows(got)
            q = {"query": label, "words": query, "contains_sql": contains, "like_sql": like,
                 "rows_returned": len(rows), "like_rows": len(liked),
                 "used_text_index": "TEXT INDEX body_text" in plan,
                 "indexed_s": indexed_s, "scan_s": scan_s, "like_cold_s": like_cold_s,
                 "like_s": like_s, "speedup_vs_like": like_s / indexed_s,
                 "speedup_vs_scan": scan_s / indexed_s,
                 "same": rows == _rows(scanned),
                 "like_superset": set(rows) <= set(_rows(liked))}
            report["queries"].append(q)
            if progress:
                print(f"{label}: {len(rows):,} rows, indexed {indexed_s * 1000:.1f} ms, "
                      f"LIKE {like_s * 1000:.1f} ms", flush=True)
        report["verify_ok"] = db.verify_index(table, "body_text")["ok"]
        if url:
            db.delete_table(table, disable=True)
        db.close()
    finally:
        if tmp is not None and workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    report["all_same"] = all(q["same"] and q["like_superset"] and q["used_text_index"]
                             for q in report["queries"])
    try:
        report["loadavg"] = os.getloadavg()
    except OSError:
        pass
    return report


def summary(r: dict) -> list[str]:
    lines = [f"{r['docs']:,} documents ({r['backend']}), load {r['load_s']:.1f} s, text index "
             f"build {r['index_build_s']:.1f} s; medians of {r['repeats']} (scan and LIKE "
             f"cold: one run)"]
    lines.append(f"{'query':10s} {'rows':>7s} {'indexed':>10s} {'scan':>10s} {'LIKE cold':>10s} "
                 f"{'LIKE':>10s} {'x LIKE':>7s} same")
    for q in r["queries"]:
        lines.append(f"{q['query']:10s} {q['rows_returned']:7,d} "
                     f"{q['indexed_s'] * 1000:8.1f}ms {q['scan_s'] * 1000:8.1f}ms "
                     f"{q['like_cold_s'] * 1000:8.1f}ms {q['like_s'] * 1000:8.1f}ms "
                     f"{q['speedup_vs_like']:7.1f} {q['same'] and q['like_superset']}")
    lines.append(f"verify_index ok: {r['verify_ok']}; all same: {r['all_same']}")
    return lines
