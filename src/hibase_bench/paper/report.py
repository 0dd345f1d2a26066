"""report.md and the PNG plots of `hibase bench paper`: one section per experiment, our figures
beside the paper's, with a note wherever a claim does not hold here."""

from __future__ import annotations

import os
from typing import Any, TypedDict

__all__ = ["write", "plots", "headline"]

# the paper's figures: (low, high) ranges of speed-ups and import overhead, two ratios
_Paper = TypedDict("_Paper", {
    "cold": tuple[int, int], "hot": tuple[int, int], "hot_over_cold": tuple[int, int],
    "import": tuple[float, float], "index_ratio": float, "hotscore_minus_lru": float})
PAPER: _Paper = {"cold": (65, 3_082), "hot": (343, 17_751), "hot_over_cold": (5, 15),
                 "import": (1.03, 1.12), "index_ratio": 0.47, "hotscore_minus_lru": 0.16}
ENGINES = (("full_scan", "hibase full scan"), ("cold", "hibase cold index"),
           ("hot", "hibase hot index"), ("sqlite_index", "SQLite B-tree"),
           ("sqlite_scan", "SQLite scan"), ("duckdb_scan", "DuckDB scan"),
           ("duckdb_art", "DuckDB ART"))


def _us(r: dict, key: str) -> float | None:
    v = r.get(key)
    if v is None:
        v = r.get(key + "_s")
        return None if v is None else v * 1e6
    return v["p50_us"] if isinstance(v, dict) else v * 1e6


def _ms(us: float | None) -> str:
    if us is None:
        return "-"
    return f"{us / 1e6:.2f} s" if us >= 1e6 else f"{us / 1e3:.3g} ms"


def headline(res: dict) -> dict[str, Any]:
    """The ratios quoted in the README: speed-ups over the scan at the largest size."""
    last = res["queries"][-1]
    qs = last["queries"]
    cov = [q for q in qs if q["type"].endswith("(covered)")] or qs
    return {"rows": last["rows"],
            "hot_over_cold_covered": [min(q["hot_over_cold"] for q in cov),
                                      max(q["hot_over_cold"] for q in cov)],
            "cold": [min(q["speedup_cold"] for q in qs), max(q["speedup_cold"] for q in qs)],
            "hot": [min(q["speedup_hot"] for q in qs), max(q["speedup_hot"] for q in qs)],
            "hot_over_cold": [min(q["hot_over_cold"] for q in qs),
                              max(q["hot_over_cold"] for q in qs)],
            "import_3": res["imports"]["hibase_ratio"]["3"],
            "hotscore_minus_lru_0.2": res["cache"]["hotscore_minus_lru_at_0.2"]}


def plots(res: dict, out: str) -> list[str]:
    """Write the PNGs into `out`; their file names."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=90)
        plt.close(fig)
        names.append(name)

    sizes = [s["rows"] for s in res["queries"]]
    types = [q["type"] for q in res["queries"][0]["queries"]]
    fig, axes = plt.subplots(2, 4, figsize=(15, 7))
    for ax in list(axes.flat)[len(types):]:
        ax.axis("off")
    for i, (ax, t) in enumerate(zip(axes.flat, types)):
        for key, label in ENGINES:
            ys = [_us(s["queries"][i], key) for s in res["queries"]]
            ms = [y / 1e3 for y in ys if y is not None]
            if len(ms) == len(ys):  # the engine ran at every size
                ax.plot(sizes, ms, marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(t, fontsize=9)
        ax.set_xlabel("rows")
        ax.set_ylabel("ms (median)")
        ax.grid(True, alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    save(fig, "query_time.png")

    last = res["queries"][-1]["queries"]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    xs = range(len(last))
    ax.bar([x - 0.2 for x in xs], [q["speedup_cold"] for q in last], 0.4, label="cold / scan")
    ax.bar([x + 0.2 for x in xs], [q["speedup_hot"] for q in last], 0.4, label="hot / scan")
    for lo, hi, c, lab in ((*PAPER["cold"], "C0", "paper cold"), (*PAPER["hot"], "C1",
                                                                   "paper hot")):
        ax.axhspan(lo, hi, color=c, alpha=0.12, label=lab + f" {lo:,}-{hi:,}x")
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{q['type'].replace(' (', chr(10) + '(')}\n{q['rows']:,} rows"
                        for q in last], fontsize=6)
    ax.set_ylabel("speed-up over full scan")
    ax.set_title(f"speed-ups at {res['queries'][-1]['rows']:,} rows", fontsize=9)
    ax.legend(fontsize=7)
    save(fig, "speedups.png")

    c = res["cache"]["results"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in (("hotscore", "hotscore (as published)"), ("lru", "LRU"),
                       ("window-heat", "window-heat (hibase default)"),
                       ("belady", "Belady's MIN")):
        ax.plot([r["ratio"] for r in c], [r[key] for r in c], marker="o", label=label,
                linestyle="--" if key == "belady" else "-")
    ax.set_xlabel("cache size (share of touched records)")
    ax.set_ylabel("hit ratio")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, "cache_hit_ratio.png")

    im = res["imports"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ns = ["0", "1", "2", "3"]
    ax.plot(ns, [im["hibase_ratio"][n] for n in ns], marker="o", label="hibase")
    ax.plot(ns, [im["sqlite_ratio"][n] for n in ns], marker="o", label="SQLite")
    ax.axhspan(*PAPER["import"], color="C2", alpha=0.2, label="paper, 3 indexes: 1.03-1.12")
    ax.set_xlabel("indexes kept on every put")
    ax.set_ylabel("import time / without indexes")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, "import_overhead.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    labels, width = ["by_ip", "by_ip_port", "by_url"], 0.35
    for j, eng in enumerate(("hibase", "sqlite")):
        sz = res["queries"][-1]["sizes"].get(eng)
        if sz:
            ax.bar([x + (j - 0.5) * width for x in range(3)],
                   [sz["per_index"][n] for n in labels], width, label=eng)
    ax.axhline(PAPER["index_ratio"], color="k", linestyle="--", label="paper ~0.47")
    ax.set_xticks(range(3))
    ax.set_xticklabels(labels)
    ax.set_ylabel("index bytes / table bytes")
    ax.legend(fontsize=7)
    save(fig, "index_size.png")

    lo = res["routing"]["local"]["queries"]
    fig, ax = plt.subplots(figsize=(7, 4))
    for j, (m, lab) in enumerate((("global", "global"), ("local_all_regions", "local, every "
                                  "region (hindex)"), ("local_scbf", "local, SCBF-routed"))):
        ax.bar([x + (j - 1) * 0.27 for x in range(len(lo))], [q[m]["median_us"] for q in lo],
               0.27, label=lab)
    ax.set_yscale("log")
    ax.set_xticks(range(len(lo)))
    ax.set_xticklabels([q["query"][:22] for q in lo], fontsize=6, rotation=15)
    ax.set_ylabel("median µs")
    ax.legend(fontsize=7)
    save(fig, "local_routing.png")

    tails = res["routing"]["scbf"]["overflow_tails"]["rows"]
    fig, ax = plt.subplots(figsize=(6, 4))
    bits = [r["counter_bits"] for r in tails]
    ax.plot(bits, [r["exact"] for r in tails], marker="o", label="exact (SCBF = CBF)")
    ax.plot(bits, [r["paper_scbf"] for r in tails], marker="s", label="paper tables 2/3 (SCBF)")
    cb = [(r["counter_bits"], r["paper_cbf"]) for r in tails if r["paper_cbf"]]
    ax.plot([b for b, _ in cb], [v for _, v in cb], marker="^", label="paper table 4 (CBF)")
    ax.set_yscale("log")
    ax.set_xlabel("counter bits")
    ax.set_ylabel("P(counter overflows)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, "scbf_overflow.png")
    return names


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def _range(v: list[float], fmt: str = "{:,.0f}") -> str:
    return f"{fmt.format(v[0])}-{fmt.format(v[1])}"


def write(res: dict, out: str) -> str:
    """Write out/report.md; its path."""
    m, h = res["machine"], headline(res)
    L = [f"# The HiBase paper's evaluation, {res['scale']} scale ({res['backend']})", "",
         f"Command: `hibase bench paper --backend {res['backend']} --scale {res['scale']} "
         f"--out DIR`; {res['elapsed_s']:,} s wall. Machine: {m.get('cpu_count')} CPUs "
         f"({m.get('cpu_model')}), {m.get('mem_total_gib')} GiB RAM, load average "
         f"{m.get('loadavg_start')} at the start, {m.get('loadavg_end')} at the end (a "
         "shared machine: wall times include waiting for a CPU). Versions: "
         + ", ".join(f"{k} {v}" for k, v in res["versions"].items()) + ". Seeds: "
         + ", ".join(f"{k} {v}" for k, v in res["seeds"].items()) + ". Every figure is in "
         "results.json.", "",
         "| | paper | here |", "|---|---|---|",
         f"| index (cold) over full scan | 65x-3,082x | {_range(h['cold'])}x at {h['rows']:,} rows |",
         f"| hot over full scan | 343x-17,751x | {_range(h['hot'])}x |",
         f"| hot over cold, SELECT * | 5-15x | {_range(h['hot_over_cold'], '{:.1f}')}x (all 7) |",
         f"| hot over cold, covered queries | 5-15x | "
         f"{_range(h['hot_over_cold_covered'], '{:.1f}')}x |",
         f"| import with 3 indexes / without | 1.03-1.12 | {h['import_3']:.2f} |",
         f"| hotscore minus LRU hit ratio at 0.2 | +0.16 | {h['hotscore_minus_lru_0.2']:+.3f} |",
         "", "Answers: every engine's rows were compared with hibase's index answer before "
         f"timing; all equal: **{res['all_answers_checked_equal']}**.", "",
         "## 1. Query time of the four query types", "",
         "Paper: 10 nodes, 1.07e9 records on HBase 0.94; here one process, the sizes below. "
         "Median wall time of repeated runs (full scans once). Cold = the persistent index "
         "alone; hot = the in-process hot-index cache; SQLite with the same three B-tree "
         "indexes (mdn and start_time appended: covering); DuckDB scanning and with ART indexes "
         "(its plan says whether it used one). The four query types select * (rows read "
         "after the index); the three indexed ones again as \"(covered)\", selecting f:mdn and "
         "f:start_time, which hibase's index rows carry (the paper's covered columns) and "
         "SQLite's covering indexes hold.", "",
         "![query time](query_time.png)", "![speed-ups](speedups.png)", ""]
    for s in res["queries"]:
        L += [f"### {s['rows']:,} rows", ""]
        rows = []
        for q in s["queries"]:
            rows.append([q["type"], f"{q['rows']:,}"] + [_ms(_us(q, k)) for k, _ in ENGINES]
                        + [f"{q['speedup_cold']:,.0f}x", f"{q['speedup_hot']:,.0f}x",
                           f"{q['hot_over_cold']:.1f}x", q.get("duckdb_art_plan", "-"),
                           "yes" if q["all_same"] else "**NO**"])
        L += _table(["query", "rows"] + [lab for _, lab in ENGINES]
                    + ["scan/cold", "scan/hot", "cold/hot", "DuckDB ART plan", "same rows"],
                    rows) + [""]
    L += ["Notes: the paper's speed-ups are over an HBase scan of 1.07e9 records across 10 "
          "nodes; a scan grows with the table while an index lookup grows with the result, so "
          "the ratios here grow with the size (and with fewer rows returned). The "
          "MDN query is a rowkey range (no secondary index, no cache), so its hot time is its "
          "cold time again. Hot over cold is the whole query: with SELECT * every row is "
          "still read from the table (the cache holds index sets, not rows), so the cache "
          "saves little and the paper's 5-15x does not hold there; on the covered queries "
          "the hot cache answers without touching the store, which is the paper's case, yet "
          "saves only what a local RocksDB read of the index costs (microseconds), where the "
          "paper's cache saved an HBase RPC to a region server: its 5-15x is a network round "
          "trip saved, which an embedded store does not make (with --backend thrift:// it "
          "does). "
          "A hot time above the cold one is the cache's own bookkeeping on a set the "
          "persistent index reads as fast.", "",
          "## 2. Hit ratio against cache size", "",
          f"Workload: `hibase bench cache`'s Brown-style Zipf (s = {res['cache']['zipf']}) point "
          f"and range queries, {res['cache']['queries']:,} queries on {res['cache']['rows']:,} "
          f"rows: {res['cache']['lookups']:,} set lookups over {res['cache']['distinct_sets']:,} "
          "sets; replayed through each policy.", "", "![hit ratio](cache_hit_ratio.png)", ""]
    L += _table(["cache ratio", "hotscore", "LRU", "window-heat (default)", "Belady's MIN"],
                [[r["ratio"], f"{r['hotscore']:.3f}", f"{r['lru']:.3f}",
                  f"{r['window-heat']:.3f}", f"{r['belady']:.3f}"]
                 for r in res["cache"]["results"]])
    d = res["cache"]["hotscore_minus_lru_at_0.2"]
    L += ["", f"Paper: hotscore +0.16 over LRU at 0.2; here {d:+.3f}"
          + ("." if d >= 0.16 else " - the claim does not hold here: hotscore as published "
             "admits new sets only at period ends, so between them the cache serves a stale "
             "top-K; hibase's default (window-heat) decides on every miss "
             f"({res['cache']['window_heat_minus_lru_at_0.2']:+.3f} over LRU)."), "",
          "## 3. Import overhead", ""]
    im = res["imports"]
    L += ["![import overhead](import_overhead.png)", ""]
    L += _table(["indexes", "hibase s", "hibase ratio", "SQLite s", "SQLite ratio"],
                [[n, f"{im['hibase_load_s'][n]:.2f}", f"{im['hibase_ratio'][n]:.2f}",
                  f"{im['sqlite_load_s'][n]:.2f}", f"{im['sqlite_ratio'][n]:.2f}"]
                 for n in ("0", "1", "2", "3")])
    L += ["", f"{im['rows']:,} rows. Paper 1.03-1.12 with 3 indexes; here "
          f"{im['hibase_ratio']['3']:.2f}. The paper's import cost is dominated by HBase's "
          "network and disk writes, which the index rows add little to; in an embedded store "
          "the put itself is cheap, so each index row costs about as much as the data row "
          "does. Single puts: p50 " + ", ".join(f"{k} indexes {v:.0f} µs" for k, v in
                                                 im["single_put_p50_us"].items())
          + f" (upkeep x{im['single_put_upkeep_ratio']:.2f}). Bulk path (load without indexes, "
          f"then the batch build): {im['bulk_load_then_build_s']:.2f} s, "
          f"{im['bulk_vs_streaming']:.2f}x the streaming load with 3 indexes.", "",
          "## 4. Index size against table size", "", "![index size](index_size.png)", ""]
    rows = []
    for s in res["queries"]:
        for eng, sz in s["sizes"].items():
            rows.append([f"{s['rows']:,}", eng] + [f"{sz['per_index'][n]:.2f}" for n in
                                                  ("by_ip", "by_ip_port", "by_url")]
                        + [f"{sz['three_indexes']:.2f}"])
    L += _table(["rows", "engine", "by_ip", "by_ip_port", "by_url", "three"], rows)
    disk = res["queries"][-1]["sizes"].get("hibase", {}).get("on_disk_all_indexes")
    L += ["", "Paper: 3 indexes 337 GB beside a 238 GB table, ~0.47 per index (they "
          "cover columns). Here logical bytes (keys + values): each index row is value + "
          "rowkey + the covered f:mdn and f:start_time (SQLite's covering indexes hold the "
          "same); by_url is large because its URLs average ~115 bytes."
          + (f" On disk (RocksDB's compressed SST files) the three indexes take {disk:.2f} of "
             "the table's bytes." if disk else ""), "",
          "## 5. SCBF tables and local vs global vs routed lookups", "",
          "![SCBF overflow](scbf_overflow.png)", "![routing](local_routing.png)", ""]
    sc = res["routing"]["scbf"]
    L += [f"- {f}" for f in sc["findings"]] + [""]
    lo = res["routing"]["local"]
    L += _table(["query", "rows", "global µs / regions", "hindex µs / regions",
                 "SCBF-routed µs / regions", "same rows"],
                [[q["query"][:40], q["rows"]] + [f"{q[k]['median_us']:,.0f} / "
                                                f"{q[k]['regions_visited']}" for k in
                                                ("global", "local_all_regions", "local_scbf")]
                 + [q["same_rows"]] for q in lo["queries"]])
    L += ["", f"{lo['rows']:,} rows in {lo['regions']} regions of one embedded store.", "",
          "## Apache Phoenix", ""]
    px = res["phoenix"]
    if px.get("ran"):
        ld = px["load_s"]
        L += [f"Driven by: {px['how']}.", "",
              f"Load of {px['rows']:,} rows by UPSERT (batches, committed): no index "
              f"{ld['plain']:.2f} s, 3 global covered indexes {ld['global']:.2f} s "
              f"({px['load_ratio_global']:.2f}x), 3 local covered indexes {ld['local']:.2f} s "
              f"({px['load_ratio_local']:.2f}x); hibase's per-put upkeep ratio is in section 3.",
              ""] + _table(["query", "rows", "global index p50", "uses it", "local index p50",
                            "uses it", "same rows"],
                           [[q["type"], q["rows"], _ms(q["p50_us"]), q["uses_index"],
                             _ms(lq["p50_us"]), lq["uses_index"],
                             q["same_rows"] and lq["same_rows"]]
                            for q, lq in zip(px["queries"], px["queries_local"])])
        L += ["", "Index sizes on HBase are not measured for Phoenix (no Thrift call reports a "
              "table's bytes)."]
    else:
        L += [f"Phoenix: not run ({px['reason']})."]
    L += scale_section(res.get("at_scale"))
    L += ["", "## Sections", ""] + _table(
        ["section", "wall s", "CPU s", "load average after"],
        [[k, v["wall_s"], v["cpu_s"], ", ".join(f"{x:.2f}" for x in v["loadavg_after"])]
         for k, v in res["sections"].items()])
    path = os.path.join(out, "report.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(L) + "\n")
    return path


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def scale_section(sc: dict | None) -> list[str]:
    """The scale section (hibase beside Phoenix on HBase at the bigger sizes) as markdown."""
    if sc is None:
        return []
    L = ["", "## 6. At scale on HBase, Apache Phoenix beside", ""]
    if not sc.get("ran"):
        return L + [f"Not run ({sc['reason']})."]
    sizes = sc["sizes"]
    L += ["Per size each system loads the same generated rows without index, then builds the "
          "paper's three covered indexes (hibase: " + sc["hibase_upkeep"] + "; Phoenix: "
          "`CREATE INDEX ... INCLUDE`, global, then dropped and built again as LOCAL). Bytes: "
          "the table's and the indexes' HBase folders after a flush (no major compaction). "
          "Queries: the first run after the build, and the median of the repeats; hibase cold "
          "= no hot cache (every lookup reads the index table), hot = its in-process cache; "
          "Phoenix's SELECT * on an indexed column carries its INDEX hint on the global "
          "indexes (unhinted, Phoenix scans the table when an index does not cover every "
          "column). Every answer was checked equal to hibase's.", ""]
    head = ["rows", "system", "load", "index build (3)", "table", "indexes", "indexes/table"]
    rows = []
    for s in sizes:
        n, hb, px = s["rows"], s["hibase"], s["phoenix"]
        hib = sum(hb["index_bytes"].values())
        rows.append([f"{n:,}", "hibase", f"{hb['load_s']:,.0f} s ({n / hb['load_s']:,.0f}/s)",
                     f"{hb['index_build_total_s']:,.0f} s", _mb(hb["table_bytes"]), _mb(hib),
                     f"{hib / hb['table_bytes']:.2f}"])
        for kind in ("global", "local"):
            k = px[kind]
            ib = sum(k["index_bytes"].values())
            rows.append([f"{n:,}", f"Phoenix {kind}",
                         f"{px['load_s']:,.0f} s ({n / px['load_s']:,.0f}/s)" if kind ==
                         "global" else "(same)", f"{k['index_build_total_s']:,.0f} s",
                         _mb(px["table_bytes"]), _mb(ib), f"{ib / px['table_bytes']:.2f}"])
    L += _table(head, rows) + [""]
    head = ["rows", "query", "rows out", "hibase first / cold / hot",
            "Phoenix global first / p50", "Phoenix local first / p50"]
    rows = []
    for s in sizes:
        hb, px = s["hibase"], s["phoenix"]
        for i, q in enumerate(hb["queries"]):
            g, lo = px["global"]["queries"][i], px["local"]["queries"][i]
            rows.append([f"{s['rows']:,}", q["type"], f"{q['rows']:,}",
                         f"{_ms(q['first_us'])} / {_ms(q['cold_p50_us'])} / "
                         f"{_ms(q['hot_p50_us'])}",
                         f"{_ms(g['first_us'])} / {_ms(g['p50_us'])}"
                         + ("" if g["uses_index"] else " (no index)"),
                         f"{_ms(lo['first_us'])} / {_ms(lo['p50_us'])}"
                         + ("" if lo["uses_index"] else " (no index)")])
    L += _table(head, rows)
    if len(sizes) > 1:
        a, b = sizes[0], sizes[-1]
        f = b["rows"] / a["rows"]

        def grow(x: float, y: float) -> str:
            return f"{y / x:.1f}x"
        L += ["", f"Growth from {a['rows']:,} to {b['rows']:,} rows ({f:.0f}x the rows): "
              f"hibase load {grow(a['hibase']['load_s'], b['hibase']['load_s'])}, index build "
              f"{grow(a['hibase']['index_build_total_s'], b['hibase']['index_build_total_s'])}"
              f", query medians (cold) "
              + ", ".join(grow(x["cold_p50_us"], y["cold_p50_us"]) for x, y in
                          zip(a["hibase"]["queries"], b["hibase"]["queries"]))
              + f"; Phoenix load {grow(a['phoenix']['load_s'], b['phoenix']['load_s'])}, "
              f"global build {grow(a['phoenix']['global']['index_build_total_s'], b['phoenix']['global']['index_build_total_s'])}"
              f", local build {grow(a['phoenix']['local']['index_build_total_s'], b['phoenix']['local']['index_build_total_s'])}"
              f", global query medians "
              + ", ".join(grow(x["p50_us"], y["p50_us"]) for x, y in
                          zip(a["phoenix"]["global"]["queries"],
                              b["phoenix"]["global"]["queries"])) + "."]
    for note in sc.get("run_notes", []):  # what the operator recorded about the run
        L += ["", f"Run note: {note}"]
    for sk in sc["skipped"]:
        est = sk["estimated_s"]
        L += ["", f"Not run: {sk['rows']:,} rows (estimated "
              + (f"{est / 60:,.0f} min" if est is not None else "unknown")
              + f", {max(sk['left_s'], 0) / 60:,.0f} min of the budget left)."]
    return L
