"""What the prose points at exists (issue 36: safe to change): a rename is not done until the
docstrings and docs that name the old name say the new one.

Every dotted name of the project's packages (``fullserver.cost.estimate``) between backticks in a
tracked source file or doc is a module, or an attribute or model field of one; every repository
path into its code or data between backticks in a doc (``fullserver/cost.py``) exists, and so does
every file a relative Markdown link points at.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path

from pydantic import BaseModel

from tests.project.repo import ROOT, tracked

PACKAGES = ("fullserver", "fullserver_cli", "components", "policy", "stackops")
NAME = re.compile(r"`{1,2}((?:" + "|".join(PACKAGES) + r")\.[A-Za-z_][\w.]*\w)(?:\(\))?`{1,2}")
"""A dotted name in backticks, single (Markdown) or double (reST docstrings), maybe called."""
PATH = re.compile(r"`((?:fullserver|fullserver_cli|components|stackops|tests|bench|stacks|profiles)/[\w./-]*)`")
"""A path in a doc's backticks into the project's code or data (``fullserver/cost.py``); ``docs/…``
and ``templates/…`` are left out: the docs cite upstream repositories' files by those names too."""
LINK = re.compile(r"\]\(([^)\s]+)\)")
"""A Markdown link's target, ``[text](target)``."""
CODE_SPAN = re.compile(r"``.*?``|`[^`\n]*`")
"""Inline code, where ``[a-z](...)`` is a pattern, not a link."""
FILE_LIKE = re.compile(r"(\.(py|md|yaml|yml|json|toml|txt)|/)$")
"""A path that names a file or a folder, not a name a program makes at run time (``components/venv``)."""


def tracked_with(*suffixes: str) -> list[Path]:
    return [ROOT / name for name in tracked() if name.endswith(suffixes)]


def resolves(name: str) -> bool:
    """``name`` is a module, or an attribute (a pydantic or dataclass field too) reached from one."""
    parts = name.split(".")
    if "__main__" in parts:  # a program: named by its file, never run by importing it here
        return (ROOT / Path(*parts[: parts.index("__main__") + 1])).with_suffix(".py").exists()
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        return _walk(found, parts[split:])
    return False


def _walk(found: object, rest: list[str]) -> bool:
    for part in rest:
        if isinstance(found, type) and issubclass(found, BaseModel) and part in found.model_fields:
            return True  # a field's value has no attribute of its own to check
        if dataclasses.is_dataclass(found) and part in {f.name for f in dataclasses.fields(found)}:
            return True
        if not hasattr(found, part):
            return False
        found = getattr(found, part)
    return True


def dangling_names(paths: list[Path]) -> list[str]:
    """``file: name`` for each backticked dotted name that does not resolve (``resolves``)."""
    known: dict[str, bool] = {}
    found = []
    for path in paths:
        for name in NAME.findall(path.read_text(encoding="utf-8")):
            if name not in known:
                known[name] = resolves(name)
            if not known[name]:
                found.append(f"{_shown(path)}: {name}")
    return found


def dangling_paths(docs: list[Path]) -> list[str]:
    """``file: path`` for each backticked repository path in ``docs`` that does not exist."""
    return [
        f"{_shown(doc)}: {ref}"
        for doc in docs
        for ref in PATH.findall(doc.read_text(encoding="utf-8"))
        if FILE_LIKE.search(ref) and not (ROOT / ref).exists()
    ]


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def broken_links(docs: list[Path]) -> list[str]:
    """``file: target`` for each relative link in ``docs`` whose file does not exist."""
    found = []
    for doc in docs:
        for target in LINK.findall(CODE_SPAN.sub("", doc.read_text(encoding="utf-8"))):
            path = target.split("#", 1)[0]
            if path and not re.match(r"[a-z][a-z0-9+.-]*:", path) and not (doc.parent / path).exists():
                found.append(f"{_shown(doc)}: {target}")
    return found


def test_every_name_the_prose_gives_exists() -> None:
    assert dangling_names(tracked_with(".py", ".md")) == []


def test_every_path_the_docs_give_exists() -> None:
    assert dangling_paths(tracked_with(".md")) == []


def test_every_relative_link_the_docs_give_leads_somewhere() -> None:
    assert broken_links(tracked_with(".md")) == []


def test_a_renamed_function_is_found_where_the_prose_still_names_it(tmp_path: Path) -> None:
    stale = tmp_path / "note.md"
    stale.write_text(
        # "fullserver" + ".…": this file is scanned too, and only the note's names are to be stale
        "Priced by `fullserver.cost.estimate` and ``fullserver" + ".cost.estimate_gone``, sized in"
        " `fullserver/sizing.py`; ``fullserver.spec.EnvironmentSpec.offer`` is a field. See [the guide](guide.md),"
        " [its sizing part](guide.md#sizing), [Pulumi](https://www.pulumi.com/docs/) and `[a-z](-[a-z])?`.\n"
    )
    (tmp_path / "guide.md").write_text("# Guide\n")
    assert [line.split(": ")[1] for line in dangling_names([stale])] == ["fullserver.cost.estimate_gone"]
    assert [line.split(": ")[1] for line in dangling_paths([stale])] == ["fullserver/sizing.py"]
    assert broken_links([stale]) == []
    (tmp_path / "guide.md").unlink()
    assert [line.split(": ")[1] for line in broken_links([stale])] == ["guide.md", "guide.md#sizing"]


def test_a_module_alone_resolves() -> None:
    assert resolves("fullserver.cost")
    assert not resolves("fullserver.costs")
    assert resolves("fullserver.spec.EnvironmentSpec.offer")  # a pydantic field: not a class attribute
    assert resolves("components.__main__")
    assert not resolves("fullserver.__main__")
