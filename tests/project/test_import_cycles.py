"""No import cycle between the project's modules: not at run time, not through ``TYPE_CHECKING``.

A cycle works only while the modules happen to be imported in one order, or while a lazy import
waits until the other side is done, so a new import elsewhere breaks it (issue 36: the cloud
component packages imported ``components.graph``, which reaches them through the registry).
Run-time edges are every import statement (a function's lazy ones too) read from the source, and
every registry's ``importlib.import_module`` measured in a fresh interpreter that imports every
module and calls each registry's loader (``LOADERS``). ``TYPE_CHECKING`` imports are added for
the core, where mypy follows them.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fullserver", "fullserver_cli", "components", "stackops", "policy")

LOADERS = ("components.registry:entries", "fullserver.clouds:all_clouds", "policy.clouds:readers")
"""The registries that import their members by name when first asked (``fullserver.platforms`` and
``policy.stack_nodes`` do at import)."""

PROBE = r"""
import builtins, importlib, importlib.util, json, sys

packages = tuple(sys.argv[1].split(","))
names = sys.argv[2].split(",")
edges = set()


def initialising(name):
    spec = getattr(sys.modules.get(name), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def record(importer, targets, any_time=False):
    if importer.startswith(packages) and (any_time or initialising(importer)):
        edges.update((importer, t) for t in targets if t.startswith(packages) and t != importer)


real_import, real_import_module = builtins.__import__, importlib.import_module


def traced_import(name, globals=None, locals=None, fromlist=(), level=0):
    module = real_import(name, globals, locals, fromlist, level)
    importer = (globals or {}).get("__name__", "")
    base = importlib.util.resolve_name("." * level + name, (globals or {}).get("__package__")) if level else name
    subs = [f"{base}.{f}" for f in fromlist or () if f"{base}.{f}" in sys.modules]
    record(importer, subs + ([base] if len(subs) < len(fromlist or ()) or not fromlist else []))
    return module


def traced_import_module(name, package=None):
    module = real_import_module(name, package)
    record(sys._getframe(1).f_globals.get("__name__", ""), [module.__name__], any_time=True)
    return module


builtins.__import__, importlib.import_module = traced_import, traced_import_module
for name in names:
    real_import_module(name)
for loader in sys.argv[3].split(","):
    module, _, function = loader.partition(":")
    getattr(real_import_module(module), function)()
print(json.dumps(sorted(edges)))
"""


def modules(root: Path = ROOT) -> list[str]:
    """Every module of the project's packages (``__main__`` modules run a program: left out)."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] != "__main__":
                found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def runtime_edges(root: Path = ROOT) -> dict[str, set[str]]:
    """Who imports whom while it is being imported, measured in a fresh interpreter at ``root``."""
    argv = [sys.executable, "-c", PROBE, ",".join(PACKAGES), ",".join(modules(root)), ",".join(LOADERS)]
    out = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=True).stdout
    graph: dict[str, set[str]] = {}
    for importer, imported in json.loads(out.splitlines()[-1]):
        graph.setdefault(importer, set()).add(imported)
    return graph


def source_edges(root: Path = ROOT, package: str = "", type_checking: bool = False) -> dict[str, set[str]]:
    """Every import statement of the modules (of ``package``, or all), a function's included; with
    ``type_checking``, the ``if TYPE_CHECKING:`` ones too."""
    known = set(modules(root))
    graph: dict[str, set[str]] = {}
    for module in sorted(m for m in known if m == package or m.startswith(f"{package}.") or not package):
        path = root / module.replace(".", "/")
        tree = ast.parse((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text())
        graph[module] = set(_imports(tree, known, type_checking)) - {module}
    return graph


def _imports(tree: ast.AST, known: set[str], type_checking: bool) -> Iterable[str]:
    skipped = (
        set() if type_checking else {id(n) for n in ast.walk(tree) if _type_checking_block(n) for n in ast.walk(n)}
    )
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known]
            yield from subs
            if len(subs) < len(node.names) and node.module in known:
                yield node.module


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def merged(*graphs: Mapping[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for graph in graphs:
        for module, imported in graph.items():
            out.setdefault(module, set()).update(imported)
    return out


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


KNOWN_RUNTIME_CYCLES: tuple[list[str], ...] = ()
"""Issue 36: none remain (the registry's packages import ``components.entry``, a leaf; naming's
fitting is ``fullserver.platforms.name_rule``'s); a new one fails here."""


def test_no_module_imports_one_that_imports_it_back_at_run_time() -> None:
    found = [g for g in cycles(merged(runtime_edges(), source_edges())) if g not in KNOWN_RUNTIME_CYCLES]
    assert found == [], "import cycles (each group imports itself back, at import or later):\n" + "\n".join(
        " -> ".join(group) for group in found
    )


KNOWN_CORE_TYPE_CHECKING_CYCLES = 0
"""Issue 36: none remain. The platforms read core values through ``platforms.reads``, the balanced
set reads offers through its own Protocol, ``KubePlan`` is a value apart from its builder
(``kube.model``) and the cluster keys are read through ``kube.access.StackKeys``."""


def test_type_checking_imports_close_no_new_cycle_through_the_core() -> None:
    found = cycles(source_edges(package="fullserver", type_checking=True))
    clouds = [g for g in found if any(m.startswith("fullserver.clouds") for m in g)]
    assert clouds == [], f"the clouds' registry is in an import cycle: {clouds}"
    assert len(found) <= KNOWN_CORE_TYPE_CHECKING_CYCLES, "\n".join(" -> ".join(g) for g in found)


def test_cycles_are_found_and_a_lazy_import_is_not_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    known = {"p", "p.q", "p.r"}
    source = "from p import q, helper\nif TYPE_CHECKING:\n    import p.r\ndef f():\n    from p import r\n"
    assert sorted(_imports(ast.parse(source), known, False)) == ["p", "p.q", "p.r"]
    assert sorted(_imports(ast.parse(source.replace("from p import r", "pass")), known, False)) == ["p", "p.q"]
    assert sorted(_imports(ast.parse(source.replace("from p import r", "pass")), known, True)) == ["p", "p.q", "p.r"]
