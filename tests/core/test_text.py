"""``fullserver.text``: what changes how a name displays is named by code point and kind."""

from __future__ import annotations

import pytest

from fullserver.text import display_changing


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("ml\x1bteam", "U+001B, a control character"),
        ("ml\u200bteam", "U+200B, a format character (zero-width or bidi control)"),
        ("ml\u2066team", "U+2066, a format character (zero-width or bidi control)"),
        ("ml\u2028team", "U+2028, a line separator"),
        ("ml\u2029team", "U+2029, a paragraph separator"),
    ],
)
def test_controls_format_characters_and_separators_are_named(text: str, found: str) -> None:
    assert display_changing(text) == found


def test_letters_of_any_script_spaces_and_punctuation_pass() -> None:
    assert display_changing("Zürich ML-team – 東京 (ops)") is None
