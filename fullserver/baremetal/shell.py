"""Shell text for remote commands: quoting, atomic file writes, and the ``Command`` a step runs.

Every value that reaches a remote shell is validated when the config is read
(``fullserver.baremetal.config``) *and* quoted here (``shlex.quote``; ``printf '%s'`` for data), so
a config value can never become a command. A step's commands are plain data (``Command``): the
plan shows exactly the text the engine runs.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from fullserver.baremetal.transport import as_script

_MODE = re.compile(r"0[0-7]{3}")


def q(s: str) -> str:
    """One shell word, whatever ``s`` holds (single-quoted unless it is plainly safe)."""
    return shlex.quote(s)


def write_file_script(path: str, content: str, mode: str = "0644") -> str:
    """Atomic write: a temp file next to the target, then rename (no half-written file, ever)."""
    assert _MODE.fullmatch(mode)
    d = posixpath.dirname(path)
    return (
        f"mkdir -p {q(d)} && t=$(mktemp {q(path)}.XXXXXX) && printf '%s' {q(content)} > \"$t\" "
        f'&& chmod {mode} "$t" && mv -f "$t" {q(path)}'
    )


def rewrite_file_script(path: str, drop_marker: str, append: str | None = None, mode: str = "0644") -> str:
    """Atomic rewrite of a line file: lines containing ``drop_marker`` removed, ``append`` (one line)
    added. A missing file counts as empty; a file grep cannot read aborts (never truncates it).
    One brace group, so it composes with ``&&``."""
    assert _MODE.fullmatch(mode)
    add = f" && printf '%s\\n' {q(append)}" if append is not None else ""
    p = q(path)
    return (
        f"{{ mkdir -p {q(posixpath.dirname(path))} && t=$(mktemp {p}.XXXXXX) && "
        f'{{ {{ if [ -e {p} ]; then grep -vF -- {q(drop_marker)} {p} || [ $? -eq 1 ]; fi{add}; }} > "$t" '
        f'&& chmod {mode} "$t" && mv -f "$t" {p}; }} || {{ rm -f "$t"; false; }}; }}'
    )


def fstab_escape(path: str) -> str:
    """fstab fields are whitespace separated: spaces, tabs and backslashes are written octal."""
    return path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")


@dataclass(frozen=True, slots=True)
class Command:
    """One remote command a step runs, as data: the plan prints ``text``, the engine runs it.

    ``cmd`` is a shell script, or an argv tuple (quoted word by word). Every step command runs as
    root (``sudo -n`` for a non-root login) and counts as a write (a converge with nothing to
    change runs none); ``timeout`` overrides the session's per-command deadline for slow ones
    (``mkfs``, ``nvidia-smi -pm``)."""

    cmd: str | tuple[str, ...]
    label: str
    timeout: float | None = None

    @property
    def text(self) -> str:
        """The exact shell text sshd runs (before the transport's ``sudo``/``timeout`` wrapper)."""
        return as_script(self.cmd)

    def __str__(self) -> str:
        return self.text
