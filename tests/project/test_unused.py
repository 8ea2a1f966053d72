"""Nothing kept that nothing uses (issue 36: safe to change): a function or constant left behind by
a change misleads the next reader into keeping it true.

A module-level function, class or constant of the project's packages is used when its name occurs
in some tracked file besides its own definition (code, tests, docs, data, the Makefile): a decorated
definition is used by its decorator (a validator, a command), so it is left out.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fullserver", "fullserver_cli", "components", "policy", "stackops")
WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def tracked() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / name for name in listed.splitlines() if (ROOT / name).is_file()]


def defined(tree: ast.Module) -> list[str]:
    """The names a module defines at its top level: undecorated functions and classes, and constants."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.decorator_list:
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [target.id for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [name for name in names if not name.startswith("__")]


def unused(files: list[Path], root: Path = ROOT) -> list[str]:
    """``module: name`` for each name ``defined`` in one of the packages that no other text names."""
    texts = {path: path.read_text(encoding="utf-8", errors="replace") for path in files}
    words = Counter(word for text in texts.values() for word in WORD.findall(text))
    return [
        f"{path.relative_to(root)}: {name}"
        for path, text in texts.items()
        if path.suffix == ".py" and path.relative_to(root).parts[0] in PACKAGES
        for name in defined(ast.parse(text))
        if words[name] < 2
    ]


def test_every_function_and_constant_is_used_somewhere() -> None:
    assert unused(tracked()) == []


def test_a_left_over_function_is_found(tmp_path: Path) -> None:
    package = tmp_path / "fullserver"
    package.mkdir()
    (package / "rates.py").write_text(
        "import functools\n\n"
        "LIMIT = 3\n"
        "def used() -> int:\n    return LIMIT\n\n"
        "def left_over() -> int:\n    return 0\n\n"
        "@functools.cache\ndef registered() -> int:\n    return 1\n"
    )
    (tmp_path / "caller.md").write_text("`fullserver.rates.used`\n")
    assert unused(sorted(tmp_path.rglob("*.*")), root=tmp_path) == ["fullserver/rates.py: left_over"]
