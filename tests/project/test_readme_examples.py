"""README transcripts are what their commands print today (``tests/project/readme_examples.py``)."""

from __future__ import annotations

import pytest

from tests.project.readme_examples import EXAMPLES, all_blocks, comparable, run


def test_every_example_has_its_block_in_the_readme_or_the_guide() -> None:
    assert set(all_blocks()) == set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_readme_transcript_is_what_the_command_prints_now(name: str) -> None:
    written = all_blocks()[name]
    assert comparable(written) == comparable(run(EXAMPLES[name])), (
        f"README's '{name}' example is out of date: run `make readme-examples` and review the change"
    )
