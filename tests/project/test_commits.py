"""Commit subjects fit in 72 characters (issue 36): a subject is a line in ``git log --oneline``,
not a paragraph; the reasoning goes in the body.

History up to ``SINCE`` is left as it was written (rewriting published commits would break every
clone); every commit after it is held to the rule.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SINCE = "a24cb68"  # the last commit before the rule
MAX_SUBJECT = 72
WRITTEN_BEFORE_THE_TEST = {"28925ed", "411b1b0"}  # 75 and 74 characters, merged as they were


def _subjects() -> list[tuple[str, str]]:
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{SINCE}^{{commit}}"], capture_output=True, check=False
    )
    if known.returncode != 0:
        pytest.skip(f"a shallow clone: {SINCE} is not in its history")
    log = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--format=%h%x00%s", f"{SINCE}..HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [tuple(line.split("\0", 1)) for line in log.splitlines()]  # type: ignore[misc]


def test_every_commit_subject_since_the_rule_fits_in_72_characters() -> None:
    long = [
        f"{sha} ({len(subject)}): {subject[:60]}…"
        for sha, subject in _subjects()
        if len(subject) > MAX_SUBJECT and sha[:7] not in WRITTEN_BEFORE_THE_TEST
    ]
    assert not long, "commit subjects over 72 characters:\n" + "\n".join(long)
