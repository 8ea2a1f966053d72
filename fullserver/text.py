"""Text that would change how a name displays: the one rule every name and label check asks.

Why: only category Cc (C0/C1 controls) was refused in an owner, so a zero-width joiner (U+200D), a
line separator (U+2028) or a right-to-left override (U+202E) reached every AWS tag unchanged
(GCP's label values are sanitised, AWS tags are not) and showed another name in the console.
Refused: Cc (controls), Cf (format characters: zero-width and bidi controls), Zl and Zp (line and
paragraph separators); Unicode's general categories, as ``unicodedata`` reads them.
"""

from __future__ import annotations

import unicodedata

REFUSED_CATEGORIES = {
    "Cc": "control character",
    "Cf": "format character (zero-width or bidi control)",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}


def display_changing(text: str) -> str | None:
    """What the first character that changes how ``text`` displays is (``U+202E, a format
    character ...``); ``None`` when there is none. Printable ASCII (letters, digits, punctuation,
    symbols and the space) holds none of the refused categories: answered without the loop."""
    if text.isascii() and text.isprintable():
        return None
    for char in text:
        kind = REFUSED_CATEGORIES.get(unicodedata.category(char))
        if kind is not None:
            return f"U+{ord(char):04X}, a {kind}"
    return None
