"""Benchmark of the split counting Bloom filter against the paper (SPEC §3): table 1 recomputed,
false-positive rates measured, counter-overflow tails computed exactly and overflows simulated.

``run()`` returns a JSON-serializable report; the CLI prints it. The paper's own numbers sit next
to each recomputed one, with a flag wherever they differ by more than a factor of 2.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

from hibase.errors import InvalidArgument
from hibase.index.scbf import (
    CountingBloomFilter, SplitCountingBloomFilter, binomial_tail, optimal_parameters,
    poisson_tail,
)

__all__ = ["run", "PAPER_M", "PAPER_TABLE1", "PAPER_SCBF_OVERFLOW", "PAPER_CBF_OVERFLOW"]

PAPER_M = 368_640  # "45 KB": 45 * 1024 * 8 counters
# Table 1: P -> (k, m, n).
PAPER_TABLE1 = {1e-3: (10, 36_864, 25_639), 1e-4: (14, 26_331, 19_229),
                1e-5: (17, 21_684, 15_383), 1e-6: (20, 18_432, 12_819)}
# Tables 2/3 (SCBF) and 4 (CBF, from Fan et al.): counter bits -> P(counter load >= 2^bits).
PAPER_SCBF_OVERFLOW = {1: 0.03388, 2: 1.80e-4, 3: 4.48e-10, 4: 1.54e-23, 5: 3.89e-55}
PAPER_CBF_OVERFLOW = {1: 0.1534, 2: 5.56e-3, 3: 7.15e-7, 4: 2.22e-16}

LN2 = math.log(2.0)
_FPR = 1e-3                       # the table-1 row used for measurements
_SIM_BITS = (1, 2, 3)             # 4 bits would need ~1e11 filters to see one overflow
_SIM_SEEDS = 3


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def _ratio_flag(paper: float | None, exact: float) -> tuple[float | None, bool | None]:
    """paper / exact and whether they differ by more than a factor of 2."""
    if paper is None:
        return None, None
    r = paper / exact
    return _sig(r), not 0.5 <= r <= 2.0


def _table1() -> dict[str, Any]:
    rows = []
    for p, (pk, pm, pn) in PAPER_TABLE1.items():
        k, m, n = optimal_parameters(PAPER_M, p)
        f = 1.0 - (1.0 - 1.0 / m) ** n
        rows.append({
            "fpr": p, "k": k, "m": m, "capacity": n,
            "paper": {"k": pk, "m": pm, "n": pn},
            "matches": (k, m, n) == (pk, pm, pn),
            "n_if_m_ln2": math.floor(m * LN2),
            "fill_at_capacity": _sig(f, 6),
            "fpr_at_capacity": _sig(f ** k),
        })
    return {
        "counters": PAPER_M,
        "formula": "k = ceil(log2(1/P)), m = floor(M/k), n = floor(M (ln 2)^2 / |ln P|)",
        "rows": rows,
        "note": ("n uses the target P, not 2^-k, and is truncated (rounding gives 25,640); the "
                 "paper's other expression n = m ln 2 gives smaller values (column n_if_m_ln2) "
                 "because k is rounded up. Filled to n the fill is a little above 1/2 and the "
                 "FPR f^k stays within "
                 f"{max(abs(r['fpr_at_capacity'] / r['fpr'] - 1) for r in rows):.1%} of P."),
    }


def _measure_fpr(probes: int, seed: int) -> dict[str, Any]:
    k, m, n = optimal_parameters(PAPER_M, _FPR)
    out: dict[str, Any] = {"fpr_target": _FPR, "counters": PAPER_M, "k": k, "items": n,
                           "probes": probes}
    for name, cls, pred_fill in (
            ("scbf", SplitCountingBloomFilter, 1.0 - (1.0 - 1.0 / m) ** n),
            ("cbf", CountingBloomFilter, 1.0 - (1.0 - 1.0 / PAPER_M) ** (n * k))):
        f = cls.optimal(PAPER_M, _FPR, seed=seed)
        for i in range(n):
            f.add(b"in:%d:%d" % (seed, i))
        t0 = time.perf_counter()
        fp = 0
        for i in range(probes):
            if b"out:%d:%d" % (seed, i) in f:
                fp += 1
        secs = time.perf_counter() - t0
        rate = fp / probes
        predicted = pred_fill ** k
        sd = math.sqrt(predicted * (1.0 - predicted) / probes)
        out[name] = {
            "false_positives": fp, "rate": _sig(rate), "predicted": _sig(predicted),
            "z_vs_predicted": round((rate - predicted) / sd, 2) if sd else None,
            "ci95": [_sig(max(0.0, rate - 1.96 * math.sqrt(rate * (1 - rate) / probes))),
                     _sig(rate + 1.96 * math.sqrt(rate * (1 - rate) / probes))],
            "fill_ratio": _sig(f.fill_ratio(), 6), "estimated_fpr": _sig(f.estimated_fpr()),
            "overflows": f.overflows, "bytes": f.nbytes,
            "probe_us": round(secs / probes * 1e6, 2),
        }
    return out


def _overflow_tails() -> dict[str, Any]:
    k, m, n = optimal_parameters(PAPER_M, _FPR)
    rows = []
    for bits in range(1, 6):
        j = 2 ** bits
        exact = poisson_tail(j)
        ex = float(exact)
        paper, cbf = PAPER_SCBF_OVERFLOW.get(bits), PAPER_CBF_OVERFLOW.get(bits)
        p_ratio, p_flag = _ratio_flag(paper, ex)
        c_ratio, c_flag = _ratio_flag(cbf, ex)
        rows.append({
            "counter_bits": bits, "j": j,
            "exact": ex, "exact_digits": f"{exact:.15e}",
            "binomial_scbf": float(binomial_tail(j, n, Fraction(1, m))),
            "binomial_cbf": float(binomial_tail(j, n * k, Fraction(1, PAPER_M))),
            "bound_e_ln2_over_j_pow_j": (math.e * LN2 / j) ** j,
            "bound_with_stirling": (math.e * LN2 / j) ** j / math.sqrt(2 * math.pi * j),
            "paper_scbf": paper, "paper_scbf_over_exact": p_ratio, "paper_scbf_flag": p_flag,
            "paper_formula_ln2_over_j_pow_j_over_sqrt_2pi_j":
                (LN2 / j) ** j / math.sqrt(2 * math.pi * j),
            "paper_cbf": cbf, "paper_cbf_over_exact": c_ratio, "paper_cbf_flag": c_flag,
            "cbf_double_precision_1_minus_head": 1.0 - sum(
                0.5 * LN2 ** i / math.factorial(i) for i in range(j)),
        })
    under = [1 / r["paper_scbf_over_exact"] for r in rows]
    return {
        "load": "Poisson(ln 2): per-counter load at the optimum, in an SCBF (n/m) and a CBF (nk/M)",
        "binomial_at": {"n": n, "m": m, "k": k, "note": "table-1 row P = 0.001, load n/m = "
                        f"{n / m:.5f}"},
        "rows": rows,
        "note": ("Tables 2/3 equal (ln 2/j)^j / sqrt(2 pi j): Stirling's bound with the factor "
                 f"e^j dropped, so they understate the overflow probability {min(under):.3g}x "
                 f"(1 bit) to {max(under):.3g}x (5 bits). The exact SCBF tail equals the CBF "
                 "tail (same load ln 2), so the paper's 'SCBF overflows less than CBF' does not "
                 "hold. Table 4 is right except 4 bits: 2.22e-16 is 1 - sum(head) in doubles "
                 "(column cbf_double_precision_1_minus_head). The bound (e ln 2/j)^j holds."),
    }


def _excess(c: int, n: int, p: float) -> float:
    """E[(X - c)+] for X ~ Binomial(n, p): increments lost by a counter that saturates at c."""
    lq, lp, base = math.log1p(-p), math.log(p), math.lgamma(n + 1)
    total = 0.0
    for x in range(c + 1, min(n, c + 400) + 1):
        pmf = math.exp(base - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * lp + (n - x) * lq)
        total += (x - c) * pmf
        if x > n * p and pmf < 1e-300:
            break
    return total


def _simulate_overflow(seed: int, seeds: int) -> dict[str, Any]:
    k, m, n = optimal_parameters(PAPER_M, _FPR)
    rows: list[dict[str, Any]] = [{"counter_bits": b, "seeds": seeds} for b in _SIM_BITS]
    for name, cls, size, draws, slots in (
            ("scbf", SplitCountingBloomFilter, k * m, n, m),
            ("cbf", CountingBloomFilter, PAPER_M, n * k, PAPER_M)):
        # per counter width: overflowed counters, saturated counters, overflow events per seed
        runs: dict[int, list[tuple[int, int, int, bool]]] = {b: [] for b in _SIM_BITS}
        for s in range(seed, seed + seeds):
            # One fill per width (same seed, so the same positions); the true loads come along.
            filters = [cls.optimal(PAPER_M, _FPR, counter_bits=b, seed=s) for b in _SIM_BITS]
            loads = bytearray(size)
            for i in range(n):
                item = b"ovf:%d:%d" % (s, i)
                for f in filters:
                    f.add(item)
                for pos in filters[0].positions(item):
                    loads[pos] += 1  # loads stay far below 256
            hist = [loads.count(v) for v in range(max(loads) + 1)]
            for b, f in zip(_SIM_BITS, filters):
                top = (1 << b) - 1
                lost = sum((v - top) * c for v, c in enumerate(hist) if v > top)
                runs[b].append((sum(hist[top + 1:]), sum(hist[top:]), f.overflows,
                                f.overflows == lost))
        for row, b in zip(rows, _SIM_BITS):
            top = (1 << b) - 1
            over, sat, events, ok = (list(t) for t in zip(*runs[b]))
            expected = size * float(binomial_tail(top + 1, draws, Fraction(1, slots)))
            mean = sum(over) / len(over)
            row[name] = {
                "counters": size,
                "overflowed_counters": over, "mean": _sig(mean), "expected": _sig(expected),
                "mean_over_expected": _sig(mean / expected) if expected else None,
                "saturated_counters": sat,
                "expected_saturated": _sig(
                    size * float(binomial_tail(top, draws, Fraction(1, slots)))),
                "overflow_events": events,
                "expected_overflow_events": _sig(size * _excess(top, draws, 1.0 / slots)),
                "events_match_loads": all(ok),
            }
    return {
        "setup": f"M = {PAPER_M}, P = {_FPR}, k = {k}, each filter filled with n = {n} items",
        "definitions": {
            "overflowed_counters": "counters whose true load reached 2^bits (lost an increment)",
            "saturated_counters": "counters stuck at 2^bits - 1 (load >= 2^bits - 1)",
            "overflow_events": "the filter's `overflows`: increments lost to saturation",
            "expected": "counters * P(Binomial load >= 2^bits)",
            "events_match_loads": "overflows == sum over counters of max(0, load - (2^bits - 1))",
        },
        "rows": rows,
    }


def _findings(report: dict[str, Any]) -> list[str]:
    out = []
    t1 = report["table1"]["rows"]
    bad = [r["fpr"] for r in t1 if not r["matches"]]
    out.append("table 1: all four rows reproduced" if not bad
               else f"table 1: rows for P in {bad} differ")
    fp = report["false_positives"]
    out.append(f"measured FPR at capacity (target {fp['fpr_target']}): SCBF {fp['scbf']['rate']}"
               f", CBF {fp['cbf']['rate']} over {fp['probes']} probes")
    tails = report["overflow_tails"]["rows"]
    flagged = [r["counter_bits"] for r in tails if r["paper_scbf_flag"]]
    out.append(f"tables 2/3 (SCBF overflow) off by more than 2x for counter bits {flagged}; "
               "they follow (ln 2/j)^j / sqrt(2 pi j), not an exact tail")
    flagged = [r["counter_bits"] for r in tails if r["paper_cbf_flag"]]
    out.append(f"table 4 (CBF overflow) off by more than 2x for counter bits {flagged}")
    out.append("exact overflow tails of SCBF and CBF are equal at the optimum (load ln 2); "
               f"4-bit counters: P(overflow) = {tails[3]['exact']:.3g} per counter in both")
    sim = report["overflow_simulation"]["rows"]
    out.append("simulated overflowed counters per filter (SCBF mean / CBF mean / expected): " +
               "; ".join(f"{r['counter_bits']} bit: {r['scbf']['mean']} / {r['cbf']['mean']} / "
                         f"{r['scbf']['expected']}" for r in sim))
    return out


def run(probes: int = 1_000_000, seed: int = 1, overflow_seeds: int = _SIM_SEEDS
        ) -> dict[str, Any]:
    """Recompute the paper's SCBF tables and measure FPR and overflows; see the module docstring.

    ``probes`` absent items are queried against each of the two filters (the dominant cost,
    about 5 us a probe in CPython); ``seed`` picks the hash keys and item sets;
    ``overflow_seeds`` is the number of fills per design and counter width in the simulation.
    """
    if isinstance(probes, bool) or not isinstance(probes, int) or probes < 1:
        raise InvalidArgument(f"probes must be a positive int, got {probes!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise InvalidArgument(f"seed must be a non-negative int, got {seed!r}")
    if isinstance(overflow_seeds, bool) or not isinstance(overflow_seeds, int) \
            or not 1 <= overflow_seeds <= 1000:
        raise InvalidArgument(f"overflow_seeds must be in [1, 1000], got {overflow_seeds!r}")
    t0 = time.perf_counter()
    report: dict[str, Any] = {"benchmark": "scbf", "probes": probes, "seed": seed}
    report["table1"] = _table1()
    report["false_positives"] = _measure_fpr(probes, seed)
    report["overflow_tails"] = _overflow_tails()
    report["overflow_simulation"] = _simulate_overflow(seed, overflow_seeds)
    report["findings"] = _findings(report)
    report["elapsed_s"] = round(time.perf_counter() - t0, 2)
    return report
