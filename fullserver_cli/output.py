"""What every command shares on its way out: a console that fits the terminal, JSON, one-line errors."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.console import Console

from fullserver.errors import FullserverError


def console(stderr: bool = False) -> Console:
    """A console as wide as the terminal (``COLUMNS`` wins; 80 when not a terminal).

    Tables fold long cells inside their column instead of wrapping mid-word across the screen.
    """
    return Console(stderr=stderr, soft_wrap=False, highlight=False)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def fail(exc: FullserverError) -> typer.Exit:
    """Print ``error: where: what (hint)`` on one line and return the exit to raise."""
    sys.stderr.write(f"error: {exc.line()}\n")
    return typer.Exit(exc.exit_code)
