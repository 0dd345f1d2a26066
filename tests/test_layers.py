"""The package's layering, read from the source (docs/architecture.md draws it): each package
imports only packages below it, index/ and cache/ never each other, no circle of imports (those
inside functions too), and no private name imported from another package."""

from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "hibase"
ROOTS = (ROOT, SRC / "hibase_bench")

# lower number = lower layer; equal numbers are siblings that must not import each other
LAYERS = {
    "errors": 0, "extras": 0.5, "codec": 1, "store": 2, "index": 3, "cache": 3, "query": 4,
    "sql": 4.9,  # executes statements through a Connection it is handed
    "table": 5, "connection": 5.1,
    "hibase": 6,  # the package itself re-exports connect, Connection, Table, Batch
    "dbapi": 6.5, "sqlalchemy": 6.6,  # PEP 249 over Connection; the SQLAlchemy dialect over it
    "samples": 1,  # generated sample data (the demo's and the benchmarks' telecom records)
    "coprocessor": 6.9,  # the region-server Java (sources, pom) and its Maven build; no imports
    "server": 7, "cluster": 7, "dump": 7.5, "load": 8, "check": 8, "demo": 9, "cli": 10,
    "hibase_bench": 8,  # the sibling package of benchmarks (src/hibase_bench), above the library
    "__main__": 11,
}


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(p for root in ROOTS for p in root.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = ast.parse(path.read_text(), str(path))
    return out


MODULES = _modules()


def _is_package(mod: str) -> bool:
    return (ROOT.parent / mod.replace(".", "/") / "__init__.py").exists()


def _walk(node: ast.AST):
    """ast.walk without the bodies of `if TYPE_CHECKING:` (imports for annotations only)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and ast.unparse(child.test).endswith("TYPE_CHECKING"):
            yield from (n for c in child.orelse for n in [c, *_walk(c)])
            continue
        yield child
        yield from _walk(child)


def _imports(mod: str, tree: ast.Module, top_level_only: bool, type_checking: bool = False):
    """(imported hibase module, imported names) of one module's import statements (with those
    under `if TYPE_CHECKING:` when type_checking)."""
    nodes = tree.body if top_level_only else list(ast.walk(tree) if type_checking else _walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("hibase", "hibase_bench"):
                    yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if _is_package(mod) else mod.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] not in ("hibase", "hibase_bench"):
                continue
            names = [a.name for a in node.names]
            subs = [n for n in names if f"{target}.{n}" in MODULES]
            for n in subs:  # `from .. import errors` imports the module errors
                yield f"{target}.{n}", []
            rest = [n for n in names if n not in subs]
            if rest or not subs:
                yield target, rest


def _package(mod: str) -> str:
    if mod.split(".")[0] == "hibase_bench":
        return "hibase_bench"
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "hibase"


def test_every_package_has_a_layer():
    assert {_package(m) for m in MODULES} <= set(LAYERS)


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_imports_run_down_the_layers(mod):
    mine = _package(mod)
    for target, names in _imports(mod, MODULES[mod], top_level_only=False):
        theirs = _package(target)
        if theirs == mine:
            continue
        assert LAYERS[theirs] < LAYERS[mine], f"{mod} imports {target} ({theirs} is not below {mine})"
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        assert not private, f"{mod} imports private {private} from another package ({target})"


def test_no_circle_of_imports():
    """No circle of imports, those made inside functions included (a call-time import is a
    circle deferred, not removed): store/api once imported both backends to open a store.
    Imports for annotations only count too: table.py once imported Connection for its type
    (it names what it needs in a Protocol instead), store/hbase/rpc.py once kv.py's constant."""
    graph = {m: {t for t, _ in _imports(m, tree, top_level_only=False, type_checking=True)
                 if t in MODULES and t != m}
             for m, tree in MODULES.items()}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError("import circle: " + " -> ".join(path[path.index(t):] + [t]))
            if t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if _package(m) == "query"))
def test_query_uses_only_the_index_face(mod):
    """query/ reaches the index layer through hibase.index (its __init__), never its modules."""
    for target, _ in _imports(mod, MODULES[mod], top_level_only=False):
        assert not target.startswith("hibase.index."), f"{mod} imports {target}"


def test_no_probe_of_the_store_in_index_or_query():
    """Optional store behaviour is read from store.capabilities, not found by hasattr/getattr."""
    for mod, tree in MODULES.items():
        if _package(mod) not in ("index", "query"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("hasattr", "getattr") and node.args:
                probed = ast.unparse(node.args[0])
                assert "store" not in probed and "indexer" not in probed, \
                    f"{mod}:{node.lineno} probes {probed}"


def _private_names_defined(tree: ast.Module) -> set[str]:
    """Private names a module defines: functions, classes, assignments, self._x attributes."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name.split(".")[-1])
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.isidentifier():  # setattr(obj, "_x", ...), __slots__
            out.add(node.value)
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


def test_no_private_attribute_reached_across_packages():
    """`x._name` only where x's package defines `_name` (the Thrift handler once called the
    Connection's `_write`; the benchmarks read the store's `_tables`)."""
    defined: dict[str, set[str]] = {}
    for mod, tree in MODULES.items():
        defined.setdefault(_package(mod), set()).update(_private_names_defined(tree))
    # namedtuple's API; happybase's ConnectionPool has no close(), its _queue holds the sockets
    stdlib_ok = {"_replace", "_asdict", "_fields", "_make", "_queue",
                 # SQLAlchemy's compiler API: a dialect's limit_clause reads these (as
                 # SQLAlchemy's own dialects do)
                 "_limit_clause", "_offset_clause"}
    bad = []
    for mod, tree in MODULES.items():
        own = defined[_package(mod)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") and node.attr not in stdlib_ok:
                base = node.value
                if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                    continue
                if node.attr not in own:
                    bad.append(f"{mod}:{node.lineno} {ast.unparse(node)}")
    assert not bad, bad


# the index layer's key-value table names (index/spec.py, index/local.py)
_INDEX_TABLE_NAMES = ("__idx__", "__lidx__", "__val__", "__lval__")


def _store_modules_naming_index_tables() -> list[str]:
    bad = []
    for mod, tree in MODULES.items():
        if _package(mod) != "store":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and any(n in node.value for n in _INDEX_TABLE_NAMES) \
                    and not _is_docstring(tree, node):
                bad.append(f"{mod}:{node.lineno} {node.value!r}")
    return bad


def _is_docstring(tree: ast.Module, node: ast.Constant) -> bool:
    for owner in ast.walk(tree):
        if isinstance(owner, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = owner.body
            if body and isinstance(body[0], ast.Expr) and body[0].value is node:
                return True
    return False


def test_index_commit_lives_in_index():
    """The order in which index entries and data rows are written and how unverified entries
    are resolved (the verified protocol) are index/'s (commit.py, verified.py): the store
    calls no index hook (no row_of / resolve / index_hooks)."""
    for mod, tree in MODULES.items():
        if _package(mod) != "store":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("row_of", "resolve",
                                                                   "index_hooks"):
                raise AssertionError(f"{mod}:{node.lineno} calls the index layer back")


def test_store_names_no_index_table():
    """Nothing under store/ names an index or value table (string literals included): which
    key-value tables hold index entries is the index layer's knowledge."""
    bad = _store_modules_naming_index_tables()
    assert not bad, bad
