"""Nothing kept that nothing uses (issue 36: safe to change): a function or constant left behind by
a change misleads the next reader into keeping it true.

A module-level function, class or constant, or a method or property, of the project's packages is
used when its name occurs in some tracked file besides its own definition (code, tests, docs, data,
the Makefile). A definition its decorator registers (a validator, a command) is used by it, and a
method that overrides its base class's (a library's callback) by the library.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections import Counter
from pathlib import Path

from tests.project.repo import ROOT, tracked

PACKAGES = ("fullserver", "fullserver_cli", "components", "policy", "stackops")
WORD = re.compile(r"\b[A-Za-z_]\w*\b")
NOT_REGISTERING = {"property", "functools.cached_property", "cached_property", "classmethod", "staticmethod"}
"""Decorators that change how a method is called, not who calls it."""


def defined(tree: ast.Module) -> list[tuple[str | None, str, bool]]:
    """(class, name, whether the class has bases) of what a module defines: undecorated functions and
    classes and constants at its top level (class ``None``), and its classes' methods and properties."""
    names: list[tuple[str | None, str, bool]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.decorator_list:
            names.append((None, node.name, False))
        elif isinstance(node, ast.Assign):
            names += [(None, target.id, False) for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append((None, node.target.id, False))
        if isinstance(node, ast.ClassDef):
            names += [
                (node.name, method.name, bool(node.bases))
                for method in node.body
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                and all(ast.unparse(d) in NOT_REGISTERING for d in method.decorator_list)
            ]
    return [name for name in names if not name[1].startswith("__")]


def overrides(module: str, owner: str, name: str) -> bool:
    """``owner.name`` in ``module`` overrides a base class's (a library calls it by that name)."""
    cls = getattr(importlib.import_module(module), owner)
    return any(name in vars(base) for base in cls.__mro__[1:])


def unused(files: list[Path], root: Path = ROOT) -> list[str]:
    """``module: name`` for each name ``defined`` in one of the packages that no other text names."""
    texts = {path: path.read_text(encoding="utf-8", errors="replace") for path in files}
    words = Counter(word for text in texts.values() for word in WORD.findall(text))
    found = []
    for path, text in texts.items():
        module = path.relative_to(root).with_suffix("")
        if path.suffix != ".py" or module.parts[0] not in PACKAGES:
            continue
        for owner, name, based in defined(ast.parse(text)):
            dotted = ".".join(module.parts[:-1] if module.name == "__init__" else module.parts)
            if words[name] < 2 and not (owner and based and overrides(dotted, owner, name)):
                found.append(f"{module}.py: {f'{owner}.' if owner else ''}{name}")
    return found


def test_every_function_and_constant_is_used_somewhere() -> None:
    assert unused([ROOT / name for name in tracked()]) == []


def test_a_left_over_function_is_found(tmp_path: Path) -> None:
    package = tmp_path / "fullserver"
    package.mkdir()
    (package / "rates.py").write_text(
        "import functools\n\n"
        "LIMIT = 3\n"
        "def used() -> int:\n    return LIMIT\n\n"
        "def left_over() -> int:\n    return 0\n\n"
        "@functools.cache\ndef registered() -> int:\n    return 1\n\n"
        "class Rate:\n"
        "    @property\n    def gone(self) -> int:\n        return 2\n\n"
        "    def __repr__(self) -> str:\n        return ''\n"
    )
    # "fullserver" + ".…": tests/project/test_references.py reads this file, and no such module exists
    (tmp_path / "caller.md").write_text("`fullserver" + ".rates.used`, `fullserver" + ".rates.Rate`\n")
    found = unused(sorted(tmp_path.rglob("*.*")), root=tmp_path)
    assert found == ["fullserver/rates.py: left_over", "fullserver/rates.py: Rate.gone"]


def test_a_librarys_callback_is_used_by_the_library() -> None:
    assert overrides("fullserver.baremetal.ssh.host_keys", "PinnedKeyPolicy", "missing_host_key")
    assert not overrides("fullserver.kube.cost", "KubeCost", "max_usd_month")
