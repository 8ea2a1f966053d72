"""The repository the project's own tests read: its root and the files git tracks in it."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tracked(*patterns: str) -> list[str]:
    """The paths (relative to ``ROOT``) of the files git tracks, under ``patterns`` where given (git
    pathspecs: ``*.py``, ``fullserver``), that the working tree has: what a commit would hold."""
    listed = subprocess.run(
        ["git", "ls-files", "--", *patterns], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [name for name in listed.splitlines() if (ROOT / name).is_file()]
