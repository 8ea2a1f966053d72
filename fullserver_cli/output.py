"""What every command shares on its way out: a console that fits the terminal, JSON, one-line errors."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from fullserver.errors import FullserverError

STACKS_DIR = Path("stacks")
"""Where every command looks for stack configs unless ``--stacks-dir`` says otherwise."""


def console(stderr: bool = False) -> Console:
    """A console as wide as the terminal it writes to; ``COLUMNS`` wins; 80 when it writes to a
    pipe or a file.

    Why 80 for a pipe: rich would otherwise ask whichever of stdin, stdout and stderr is still a
    terminal, so ``fullserver audit ... | tee log`` came out as wide as the terminal, and a log
    read elsewhere at 80 columns wrapped every line. Tables fit this width (``tables``).
    No emoji codes: cells carry a stack's values (``:fire:`` in an image tag is text, not a picture).
    """
    stream = sys.stderr if stderr else sys.stdout
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(stderr=stderr, soft_wrap=False, highlight=False, emoji=False, width=80 if piped else None)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def fail(exc: FullserverError) -> typer.Exit:
    """Print ``error: where: what (hint)`` on one line and return the exit to raise."""
    sys.stderr.write(f"error: {exc.line()}\n")
    return typer.Exit(exc.exit_code)
