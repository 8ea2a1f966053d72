"""The planning core keeps nothing between calls but in the catalog's memo (issue 36: memoised work
cannot go stale): no function of ``fullserver/`` writes a name its module defines, by ``global``,
by item assignment or by a mutating method. A cache keyed by hand in a module dict outlived
``Catalog.memo.clear()`` and flattered the cold bench (``_offer_refresh``, session 16).

``fullserver/baremetal/`` is the process's side of SSH (its log sink, the descriptors a proxy
withholds from children): state of the process by nature, so not held to this.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.project.repo import ROOT, tracked

MUTATING = {"append", "extend", "insert", "update", "setdefault", "add", "discard", "remove", "pop", "popitem", "clear"}
"""The methods of ``list``, ``dict`` and ``set`` that change the object in place."""


def core_modules() -> list[Path]:
    return [ROOT / p for p in tracked("fullserver/*.py") if not p.startswith("fullserver/baremetal/")]


def _module_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names


def writes(source: str) -> list[str]:
    """``function: name`` for each write of a module-level name inside a function of ``source``."""
    tree = ast.parse(source)
    module = _module_names(tree)
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                found += [f"{function.name}: global {name}" for name in node.names]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if node.func.attr in MUTATING and isinstance(owner, ast.Name) and owner.id in module:
                    found.append(f"{function.name}: {owner.id}.{node.func.attr}")
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    subscripted = target.value if isinstance(target, ast.Subscript) else None
                    if isinstance(subscripted, ast.Name) and subscripted.id in module:
                        found.append(f"{function.name}: {subscripted.id}[...]")
    return found


def test_no_core_function_writes_its_modules_state() -> None:
    found = [f"{p.relative_to(ROOT)}: {w}" for p in core_modules() for w in writes(p.read_text(encoding="utf-8"))]
    assert found == []


def test_a_cache_keyed_by_hand_is_found() -> None:
    source = (
        "_SEEN: dict[str, int] = {}\n"
        "COUNT = 0\n"
        "def refresh(key: str) -> int:\n"
        "    global COUNT\n"
        "    local: dict[str, int] = {}\n"
        "    local[key] = 1\n"
        "    _SEEN[key] = 1\n"
        "    _SEEN.setdefault(key, 2)\n"
        "    return _SEEN[key]\n"
    )
    assert writes(source) == ["refresh: global COUNT", "refresh: _SEEN[...]", "refresh: _SEEN.setdefault"]
