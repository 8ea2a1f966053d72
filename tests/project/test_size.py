"""Size, as a specification (issue 23): no function over 80 lines, no module over 600 lines, in
``fullserver/``, ``fullserver_cli/``, ``components/`` and ``stackops/``; no module docstring over 10
lines there or in ``policy/`` (issue 36: longer reasoning goes to ``docs/design/``).

A function is measured from its first decorator (or its ``def`` line) to its last line, nested
functions and methods included, each on its own. A module is measured in lines. Why these limits:
a function longer than a screen and a half is read in pieces and changed by guesswork, and a module
over 600 lines holds more than one idea; splitting along meaning (one step, one concept per
module) is what keeps both under.

There is no allowlist: what grows past a limit is split before it lands.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fullserver", "fullserver_cli", "components", "stackops")
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600
DOCSTRING_PACKAGES = (*PACKAGES, "policy")
MAX_MODULE_DOCSTRING_LINES = 10


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """Every function in ``tree`` as (qualname, lines), nested ones as ``outer.<locals>.inner``."""
    found: list[tuple[str, int]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            qualname = prefix + node.name
            found.append((qualname, end - first + 1))
            found += _functions(node, f"{qualname}.<locals>.")
        elif isinstance(node, ast.ClassDef):
            found += _functions(node, f"{prefix}{node.name}.")
        else:
            found += _functions(node, prefix)
    return found


def offenders(root: Path = ROOT) -> dict[tuple[str, str | None], int]:
    """Every function over ``MAX_FUNCTION_LINES`` and module over ``MAX_MODULE_LINES`` under the
    packages, keyed by (file, qualname or None for the module), with its length in lines."""
    out: dict[tuple[str, str | None], int] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if ".venv" in path.parts:
                continue
            rel = path.relative_to(root).as_posix()
            text = path.read_text()
            length = len(text.splitlines())
            if length > MAX_MODULE_LINES:
                out[(rel, None)] = length
            for qualname, lines in _functions(ast.parse(text, rel)):
                if lines > MAX_FUNCTION_LINES:
                    out[(rel, qualname)] = lines
    return out


def _name(key: tuple[str, str | None]) -> str:
    file, qualname = key
    return f"{file}:{qualname or '(module)'}"


def test_no_function_or_module_is_too_long() -> None:
    new = {_name(key): lines for key, lines in offenders().items()}
    assert not new, f"over the limits (functions {MAX_FUNCTION_LINES} lines, modules {MAX_MODULE_LINES}): " + ", ".join(
        f"{name} ({lines} lines)" for name, lines in sorted(new.items())
    )


BODY = "    x = 1\n"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f():\n" + BODY * 80, {"f": 81}),
        ("def f():\n" + BODY * 79, {}),  # 80 lines: at the limit
        ("@a\n@b\ndef f():\n" + BODY * 78, {"f": 81}),  # from the first decorator
        ("async def f():\n" + BODY * 80, {"f": 81}),
        ("class C:\n    def m(self):\n" + "    " + (BODY * 80).replace("\n    ", "\n        "), {"C.m": 81}),
        (
            "def f():\n    def g():\n" + "    " + (BODY * 80).replace("\n    ", "\n        "),
            {"f": 82, "f.<locals>.g": 81},
        ),
    ],
    ids=["81-lines", "80-lines", "decorated", "async", "method", "nested"],
)
def test_what_counts_as_a_function_and_its_length(tmp_path: Path, source: str, expected: dict[str, int]) -> None:
    """From the first decorator (or the ``def``) to the last line; methods and nested functions by
    their qualified names."""
    package = tmp_path / "fullserver"
    package.mkdir()
    (package / "m.py").write_text(source)
    assert {name: lines for (_, name), lines in offenders(tmp_path).items() if name} == expected


def test_a_module_over_600_lines_is_found(tmp_path: Path) -> None:
    package = tmp_path / "stackops"
    package.mkdir()
    (package / "long.py").write_text("x = 1\n" * 601)
    (package / "short.py").write_text("x = 1\n" * 600)
    assert offenders(tmp_path) == {("stackops/long.py", None): 601}


def long_module_docstrings(root: Path = ROOT) -> dict[str, int]:
    """Every module docstring over ``MAX_MODULE_DOCSTRING_LINES`` under the packages, by file, with
    its length from the opening quotes' line to the closing quotes' line."""
    out: dict[str, int] = {}
    for package in DOCSTRING_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if ".venv" in path.parts:
                continue
            rel = path.relative_to(root).as_posix()
            body = ast.parse(path.read_text(), rel).body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines = (first.end_lineno or first.lineno) - first.lineno + 1
                if lines > MAX_MODULE_DOCSTRING_LINES:
                    out[rel] = lines
    return out


def test_module_docstrings_fit_in_10_lines() -> None:
    """What a module is and why, in a few lines; the longer reasoning and its sources live in
    ``docs/design/<topic>.md``, which the docstring points to."""
    long = long_module_docstrings()
    assert not long, (
        f"module docstrings over {MAX_MODULE_DOCSTRING_LINES} lines (move the reasoning to docs/design/): "
        + ", ".join(f"{file} ({lines} lines)" for file, lines in sorted(long.items()))
    )


def test_a_module_docstring_over_10_lines_is_found(tmp_path: Path) -> None:
    """The closing quotes' line counts; a function's docstring and a module without one do not."""
    package = tmp_path / "policy"
    package.mkdir()
    (package / "long.py").write_text('"""Summary.\n' + "more\n" * 9 + '"""\nx = 1\n')
    (package / "short.py").write_text('"""Summary.\n' + "more\n" * 8 + '"""\nx = 1\n')
    (package / "function.py").write_text('def f():\n    """' + "more\n" * 20 + '"""\n')
    (package / "none.py").write_text("x = 1\n")
    assert long_module_docstrings(tmp_path) == {"policy/long.py": 11}
