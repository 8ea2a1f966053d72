"""``fullserver.errors``: every error is one line a terminal prints as it reads."""

from __future__ import annotations

from fullserver.errors import InputError, shown


def test_an_escape_sequence_in_a_name_is_shown_escaped_so_the_name_printed_is_the_name_to_type() -> None:
    err = InputError("Pulumi.ex\x1b[31mp.yaml", "'ex\x1b[31mp' is not a stack name Pulumi accepts")
    assert err.line() == "Pulumi.ex\\x1b[31mp.yaml: 'ex\\x1b[31mp' is not a stack name Pulumi accepts"
    assert str(err) == err.line()


def test_bells_bidi_overrides_and_zero_width_characters_are_escaped_and_letters_are_not() -> None:
    assert shown("a\x07b\u202ec\u200bd") == "a\\x07b\\u202ec\\u200bd"
    assert shown("Zürich – 東京") == "Zürich – 東京"


def test_line_breaks_still_fold_into_one_line() -> None:
    assert InputError("f", "two\nlines", "a\thint").line() == "f: two lines (a hint)"
