"""Filtered full scans: the path of every query no rowkey or index answers.

The condition (normalized DNF) is compiled once per query into (1) needles, byte strings a
matching row's raw segments must contain (equalities, IN lists and LIKE prefixes on columns
whose stored bytes are a function of the value: strings, bytes, text integers by their digits,
binary integers), tested by the store's filtered_rows (store/embedded/fastscan.py) before
anything is decoded, and (2) one closure per
atom answering "is this atom TRUE" on the merged cells, with the brute-force evaluator
(evaluate.py) as the reference for every atom kind not specialised here. A row is returned iff
some conjunct has every atom TRUE, exactly as matches_dnf decides.

On the embedded store a big table is scanned by several processes at once, each a contiguous
share of the regions (the parent scans the first share and streams it while worker processes,
`python -m hibase.query.scan_worker`, read the others from a read-only open of the store).
Other stores, and tables with several families or a TTL, take the generic scan.
"""

from __future__ import annotations

import contextlib
from itertools import islice
import operator
import os
import pickle
import subprocess
import sys
import tempfile
import warnings
from typing import Any, Callable, Iterator, Protocol, cast

import msgpack

from .. import codec
from ..errors import ValueTypeError
from .ast import ROWKEY, Between, Compare, In, Like, NotLike
from .evaluate import _in_set, evaluate, matches_dnf
from .normalize import coerce_literal, coerce_literals, coerce_prefix

__all__ = ["full_scan", "compile_conjuncts", "conjunct_test", "quick_test", "scan_share", "project",
           "PARALLEL_MIN_BYTES", "PROCESSES"]

PARALLEL_MIN_BYTES = 32 * 1024 * 1024  # below this, starting workers costs more than it saves
PROCESSES: int | None = None  # processes of a big scan (this one + workers); None: the CPUs
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
_INTS = ("byte", "short", "int", "long")


def _needle(t: codec.ColumnType | None, value: Any) -> bytes | None:
    """Bytes every stored cell equal to `value` contains, or None when there are none (floats
    have many text forms; text integers may carry a sign or leading zeros, not other digits)."""
    try:
        if t is None:
            return value if isinstance(value, bytes) and value else None
        if t.name in ("string", "char"):
            return value.encode("utf-8") if isinstance(value, str) and value else None
        if t.name == "bytes":
            return value if isinstance(value, bytes) and value else None
        if t.name in _INTS and type(value) is int:
            return codec.encode_cell(t, value) if t.binary else b"%d" % abs(value)
    except (ValueTypeError, UnicodeEncodeError):
        return None
    return None


def _atom_needles(atom: Any, types: dict) -> list[bytes] | None:
    """Any-of needles of one atom, or None when it gives none."""
    name = atom.column.name
    if name == ROWKEY or atom.column.cast is not None:  # a cast's text is not in the cell
        return None
    t = types.get(name)
    if isinstance(atom, Compare) and atom.op == "=":
        n = _needle(t, atom.value)
        return [n] if n else None
    if isinstance(atom, In) and atom.values:
        if len(atom.values) > _MAX_IN_NEEDLES:
            return None  # a substring search per value and row costs more than it saves
        found = [n for n in (_needle(t, v) for v in atom.values) if n]
        return found if len(found) == len(atom.values) else None
    if isinstance(atom, Like) and (t is None or t.name in ("string", "char", "bytes")):
        p = atom.prefix
        raw = p.encode("utf-8") if isinstance(p, str) else p
        return [raw] if raw else None
    return None


_MAX_IN_NEEDLES = 16
_SMALL_IN = 8  # longer IN lists are tested by one lookup in a typed frozenset (evaluate's)
_PY_OPS = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _typed_check(atom: Any, types: dict) -> tuple | None:
    """(column, type, literals, condition on v written with them) for a comparison, BETWEEN,
    IN or LIKE on a declared column, the atoms written inline by _conjunct_test; None for the
    others (IS [NOT] NULL, the rowkey, undeclared columns)."""
    name = atom.column.name
    t = types.get(name)
    if name == ROWKEY or t is None or atom.column.cast is not None:
        return None
    if isinstance(atom, Compare):
        lit = coerce_literal(atom.column, atom.value, types)
        return name, t, (lit,), f"v {_PY_OPS[atom.op]} {{0}}"
    if isinstance(atom, Between):
        lo = coerce_literal(atom.column, atom.low, types)
        hi = coerce_literal(atom.column, atom.high, types)
        return name, t, (lo, hi), "{0} <= v <= {1}"
    if isinstance(atom, In) and len(atom.values) > _SMALL_IN:
        return name, t, (_in_set(atom, types),), "v in {0}"  # built once per node
    if isinstance(atom, In) and atom.values:
        lits = coerce_literals(atom.column, atom.values, types)
        # a long list: one hash lookup per row, not a pass over the list
        needles = frozenset(lits) if len(lits) > 8 else lits
        return name, t, (needles,), "v in {0}"  # v is never NaN here, so `in` is ==
    if isinstance(atom, (Like, NotLike)):
        prefix = coerce_prefix(atom.column, atom.prefix, types)
        return name, t, (prefix,), ("v.startswith({0})" if isinstance(atom, Like)
                                    else "not v.startswith({0})")
    return None


def _generate(conj: tuple, types: dict, layout: tuple | None) -> Callable:
    """The source of one conjunct's test, compiled: test(row, cells) reading cells.get(col),
    or with a `layout` (a PUT segment's qualifier list) test(vals) reading vals[position]
    (a column missing from the layout is NULL, so its atom is FALSE)."""
    ns: dict[str, Any] = {"ValueTypeError": ValueTypeError, "evaluate": evaluate, "types": types}
    body = []
    for i, atom in enumerate(conj):
        typed = _typed_check(atom, types)
        if typed is None:  # never with a layout (see layout_tests)
            ns[f"a{i}"] = atom
            body.append(f"    if evaluate(a{i}, row, cells, types) is not True: return False")
            continue
        name, t, lits, cond = typed
        ns[f"n{i}"], ns[f"t{i}"], ns[f"d{i}"] = name, t, codec.cell_decoder(t)
        names = []
        for j, lit in enumerate(lits):  # literals are bound as names, never written as text
            ns[f"l{i}_{j}"] = lit
            names.append(f"l{i}_{j}")
        if layout is None:
            body += [f"    raw = cells.get(n{i})", "    if raw is None: return False"]
        elif name in layout:
            body.append(f"    raw = vals[{layout.index(name)}]")
        else:
            body.append("    return False")
            break
        body += [f"    try: v = d{i}(t{i}, raw)",
                 "    except ValueTypeError: return False",
                 f"    if v != v or not ({cond.format(*names)}): return False"]
    head = "def test(row, cells):" if layout is None else "def test(vals):"
    src = head + "\n" + "\n".join(body + ["    return True"])
    exec(compile(src, "<hibase scan filter>", "exec"), ns)
    return ns["test"]


class ConjunctTest(Protocol):
    """A compiled conjunct test: test(row, cells) -> bool, and whether it reads the rowkey
    (fastscan passes None for the row when no test does)."""

    needs_row: bool

    def __call__(self, row: bytes, cells: dict) -> bool: ...


class RowTest(ConjunctTest, Protocol):
    """A condition's compiled test (compile_conjuncts), with layout_tests' `for_layout`."""

    for_layout: Callable[[list], Callable | None] | None


def conjunct_test(conj: tuple, types: dict) -> ConjunctTest:
    """One function (row, cells) -> every atom of the conjunct TRUE, the same answer as
    evaluate() per atom: typed comparisons written out in its body (a missing cell, one that
    does not decode, or NaN is NULL, so FALSE here), the other atoms through evaluate()."""
    test = cast(ConjunctTest, _generate(conj, types, None))  # needs_row is set just below
    test.needs_row = any(a.column.name == ROWKEY or _typed_check(a, types) is None
                         for a in conj)
    return test


_CMP = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge}


def quick_test(conj: tuple, types: dict) -> Callable[[bytes, dict], bool]:
    """conjunct_test's answer built from closures instead of compiled source: a few µs to
    make (no exec), slower per row; for results too small to repay a compilation. Comparisons
    on declared columns are typed inline, every other atom goes through evaluate()."""
    checks: list[Callable[[bytes, dict], bool]] = []
    for atom in conj:
        name = atom.column.name
        t = types.get(name)
        if isinstance(atom, Compare) and name != ROWKEY and t is not None \
                and atom.column.cast is None:
            checks.append(_compare_check(name, t, _CMP[atom.op],
                                         coerce_literal(atom.column, atom.value, types)))
        else:
            checks.append(_evaluate_check(atom, types))
    if len(checks) == 1:
        return checks[0]
    return lambda row, cells: all(c(row, cells) for c in checks)


def _evaluate_check(atom: Any, types: dict) -> Callable[[bytes, dict], bool]:
    """TRUE of `atom` on one row through evaluate() (the atoms quick_test does not inline)."""
    return lambda row, cells: evaluate(atom, row, cells, types) is True


def _compare_check(name: bytes, t: Any, op: Callable, lit: Any) -> Callable[[bytes, dict], bool]:
    """TRUE of `name op lit` on one row's cells (a missing, malformed or NaN cell is NULL)."""
    dec = codec.cell_decoder(t)

    def check(row: bytes, cells: dict) -> bool:
        raw = cells.get(name)
        if raw is None:
            return False
        try:
            v = dec(t, raw)
        except ValueTypeError:
            return False
        return v == v and op(v, lit)
    return check


_MAX_LAYOUTS = 64  # rows of more column sets than this take the dict path for the rest


def layout_tests(conjuncts: list, types: dict) -> Callable[[list], Callable | None] | None:
    """for_layout(qualifiers) -> test(values) of a row written by one put with those
    qualifiers, equal to the conjuncts' test on dict(zip(qualifiers, values)) but without
    building the dict; None when some atom needs the dict or the rowkey (evaluate() atoms)."""
    if any(_typed_check(a, types) is None for conj in conjuncts for a in conj):
        return None
    cache: dict[tuple, Callable | None] = {}

    def for_layout(quals: list) -> Callable | None:
        key = tuple(quals)
        if key in cache:
            return cache[key]
        if len(cache) >= _MAX_LAYOUTS or len(set(key)) != len(key):
            return None
        tests = [_generate(tuple(conj), types, key) for conj in conjuncts]
        if len(tests) == 1:
            fn = tests[0]
        else:
            def fn(vals: list) -> bool:
                return any(f(vals) for f in tests)
        cache[key] = fn
        return fn
    return for_layout


def compile_conjuncts(conjuncts: list | None, types: dict
                      ) -> tuple[list | None, Callable[[bytes, dict], bool] | None]:
    """(needle alternatives for fastscan, exact row test) of a normalized condition; the
    test's `needs_row` is False when no atom reads the rowkey (fastscan then passes None),
    and its `for_layout` is layout_tests' (None when it has none)."""
    if conjuncts is None:
        return None, None
    needles = []
    for conj in conjuncts:
        found = [n for n in (_atom_needles(a, types) for a in conj) if n]
        needles.append(found)
    tests = [conjunct_test(tuple(conj), types) for conj in conjuncts]
    if len(tests) == 1:
        keep = cast(RowTest, tests[0])  # for_layout is set just below
    else:
        def any_test(row: bytes, cells: dict) -> bool:
            return any(f(row, cells) for f in tests)
        keep = cast(RowTest, any_test)  # needs_row and for_layout are set just below
        keep.needs_row = any(f.needs_row for f in tests)
    keep.for_layout = layout_tests(conjuncts, types)
    return needles, keep


def project(cells: dict, columns: list[bytes] | None) -> dict:
    """The requested columns of a row's cells (a family name: all its columns)."""
    if columns is None:
        return cells
    out = {}
    for col in columns:
        if b":" in col:
            if col in cells:
                out[col] = cells[col]
        else:
            prefix = col + b":"
            out.update((c, v) for c, v in cells.items() if c.startswith(prefix))
    return out


def scan_share(store, table: str, ranges: list[tuple[bytes | None, bytes | None]],
               conjuncts: list | None, types: dict, columns: list[bytes] | None
               ) -> Iterator[tuple[bytes, dict]]:
    """Matching rows of some rowkey ranges, projected: one process's part of a scan."""
    needles, keep = compile_conjuncts(conjuncts, types)
    for start, stop in ranges:
        for row, cells in store.filtered_rows(table, start, stop, needles, keep):
            yield row, project(cells, columns)


def _generic(plan, store, types, conjuncts) -> Iterator[tuple[bytes, dict]]:
    for row, got in store.scan_latest(plan.select.table):
        cells = {c: tv[1] for c, tv in got.items()}
        if conjuncts is not None and not matches_dnf(conjuncts, row, cells, types):
            continue
        data = project(cells, plan.columns)
        if not data and plan.columns is None:
            continue
        yield row, data


def full_scan(plan, store, types, conjuncts, limit, processes: int | None = None
              ) -> Iterator[tuple[bytes, dict]]:
    """Rows matching a full-scan plan in rowkey order, at most `limit`; `processes` None
    chooses by table size, PROCESSES and the CPUs."""
    table = plan.select.table
    if not (store.capabilities.fast_scan and store.fast_scan_supported(table)):
        rows = _generic(plan, store, types, conjuncts)
    else:
        rows = _fast(store, table, types, conjuncts, plan.columns, limit, processes)
    yield from islice(rows, limit)


def _shares(store, table: str, processes: int | None, limit) -> list[list]:
    regions = store.regions(table)
    if processes is None:
        big = sum(r.size for r in regions) >= PARALLEL_MIN_BYTES
        most = PROCESSES or os.cpu_count() or 1
        processes = min(len(regions), most) if big and limit is None else 1
    processes = min(processes, len(regions))
    if processes <= 1:
        return [[(None, None)]]
    # contiguous shares of about equal bytes, so rows come back in key order share by share
    total = sum(max(r.size, 1) for r in regions)
    shares: list[list] = [[]]
    acc = 0
    for r in regions:
        if shares[-1] and acc >= total * len(shares) / processes and len(shares) < processes:
            shares.append([])
        shares[-1].append((r.start or None, r.end or None))
        acc += max(r.size, 1)
    return shares


def _fast(store, table, types, conjuncts, columns, limit, processes):
    shares = _shares(store, table, processes, limit)
    if len(shares) == 1:
        yield from scan_share(store, table, shares[0], conjuncts, types, columns)
        return
    if not store.read_only:
        store.flush()  # workers read SST files and the WAL; flushing makes their replay short
    with tempfile.TemporaryDirectory(prefix="hibase-scan-") as tmp:
        workers = []
        try:
            for i, share in enumerate(shares[1:]):
                out = os.path.join(tmp, f"rows{i}.msgpack")
                job = {"path": store.path, "table": table, "ranges": share, "out": out,
                       "conjuncts": conjuncts, "columns": columns,
                       "types": {c: (t.name, t.binary) for c, t in types.items()}}
                proc = subprocess.Popen([sys.executable, "-m", "hibase.query.scan_worker"],
                                        stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
                workers.append((proc, out, share))
                try:
                    proc.stdin.write(pickle.dumps(job))
                except BrokenPipeError:  # it died before reading: its exit code says so
                    pass
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            yield from scan_share(store, table, shares[0], conjuncts, types, columns)
            for proc, out, share in workers:
                proc.wait()
                if proc.returncode != 0:  # a worker that could not run: scan its share here
                    warnings.warn(f"scan worker failed (exit {proc.returncode}); scanning its "
                                  "regions in this process", RuntimeWarning, stacklevel=2)
                    yield from scan_share(store, table, share, conjuncts, types, columns)
                    continue
                with open(out, "rb") as f:
                    for row, data in msgpack.Unpacker(f, use_list=False, raw=True,
                                                      strict_map_key=False):
                        yield row, data
        finally:
            for proc, _, _ in workers:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
