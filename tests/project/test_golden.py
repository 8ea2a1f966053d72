"""Every example stack plans and builds exactly as the golden files say (``tests/project/golden.py``):
refactors change the code, not what a user gets."""

from __future__ import annotations

import difflib

import pytest

from tests.project.golden import GOLDEN, stacks, text


@pytest.mark.parametrize("stack", stacks())
def test_the_plan_and_the_graph_are_what_they_were(stack: str) -> None:
    want = (GOLDEN / f"{stack}.json").read_text(encoding="utf-8")
    got = text(stack)
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now", n=2))
        pytest.fail(f"{stack} changed (python -m tests.project.golden {stack} rewrites it):\n{diff[:6000]}")


def test_every_example_stack_has_a_golden_file() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == stacks()
