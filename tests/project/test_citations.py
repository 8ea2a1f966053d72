"""Sources a reader can follow (issue 34, item 3): nothing in the repository cites a file outside it.

A docstring, a data file's ``url``/``note`` or a doc that points into the author's workspace (its
shared reference folder, beside the checkout) sends every reader but its author to a path that does
not exist: cite the
primary source (the provider's page, the upstream repository path at a version) instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.project.repo import ROOT, tracked

OUTSIDE = re.compile(r"(?<![~\w])/wor[k]/|shared[/]reference|\.\./share[d]/")  # [k]: the pattern cites nothing itself
"""A path into the author's workspace (``~/work/...`` in a shell example is the reader's own)."""
WORKSPACE_SAMPLE = "/" + "/".join(("work", "shared", "reference", "kubernetes.md"))
CITING = (".py", ".yaml", ".yml", ".md", ".toml", ".json", ".txt")


def tracked_files() -> list[Path]:
    return [ROOT / name for name in tracked() if name.endswith(CITING)]


def outside_citations(paths: list[Path]) -> list[str]:
    """``file:line: text`` for each line citing a path outside the repository."""
    found = []
    for path in paths:
        if path == Path(__file__).resolve() or not path.is_file():  # this file names the pattern
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    return found


def test_no_source_in_the_repository_cites_a_path_outside_it() -> None:
    assert outside_citations(tracked_files()) == []


def test_the_check_finds_a_workspace_path_and_passes_a_readers_own(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    cited = '"""Sources (cited in ``' + WORKSPACE_SAMPLE + '``)."""'  # built, so this file cites nothing
    sample.write_text(cited + '\nx = "~/work/jax-tpu"\n')
    assert [line.split(": ", 1)[1] for line in outside_citations([sample])] == [cited]
