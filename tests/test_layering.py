"""The floors stay apart: import-linter's contracts (pyproject.toml) run in ``make lint`` and here,
so a violation fails the tests too; and the core prints nothing (only the command line does)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_hold() -> None:
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    done = subprocess.run([linter, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Contracts: 5 kept, 0 broken." in done.stdout


def _prints(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: print()")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: sys.{node.attr}")
    return found


def test_the_core_prints_nothing() -> None:
    assert [hit for path in sorted((ROOT / "fullserver").rglob("*.py")) for hit in _prints(path)] == []
