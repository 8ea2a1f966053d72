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


def test_every_ascii_character_is_judged_by_its_category() -> None:
    """The printable-ASCII shortcut answers as the per-character rule: DEL and the C0 controls
    (tab and line breaks too) are refused, every other ASCII character passes."""
    for code in range(128):
        char = chr(code)
        refused = code < 0x20 or code == 0x7F
        assert (display_changing(f"a{char}b") is not None) is refused, hex(code)
