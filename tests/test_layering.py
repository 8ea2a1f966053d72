"""The floors stay apart: import-linter's contracts (pyproject.toml) run in ``make lint`` and here,
so a violation fails the tests too; and neither the core nor stackops prints anything (only the
command line does: stackops hands it typed events, ``stackops.events``)."""

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
    assert "Contracts: 6 kept, 0 broken." in done.stdout


def _prints(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append(f"{path.relative_to(root)}:{node.lineno}: print()")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            found.append(f"{path.relative_to(root)}:{node.lineno}: sys.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module == "sys":
            found += [
                f"{path.relative_to(root)}:{node.lineno}: from sys import {a.name}"
                for a in node.names
                if a.name in ("stdout", "stderr")
            ]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("echo", "secho"):
            found.append(f"{path.relative_to(root)}:{node.lineno}: {node.func.attr}()")
    return found


def test_the_core_prints_nothing() -> None:
    assert [hit for path in sorted((ROOT / "fullserver").rglob("*.py")) for hit in _prints(path)] == []


def test_stackops_prints_nothing() -> None:
    """stackops hands its events to the ``notify`` it is given; the command line prints them."""
    assert [hit for path in sorted((ROOT / "stackops").rglob("*.py")) for hit in _prints(path)] == []


def test_the_print_finder_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The two tests above pass because nothing prints, not because the finder is blind."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\nfrom sys import stderr\nprint('x')\nsys.stdout.write('x')\nsys.stderr.flush()\ntyper.echo('x')\n"
    )
    found = sorted(hit.split(": ", 1)[1] for hit in _prints(probe, tmp_path))
    assert found == ["echo()", "from sys import stderr", "print()", "sys.stderr", "sys.stdout"]
