"""``fullserver plan --pin``: the chosen place written into the stack file, as a reviewed edit.

The edit is line by line, not a YAML dump: every comment, blank line, key order and quoting of
the file stays as it was. ``fullserver:region`` and ``fullserver:platform`` are replaced where they
are, or added after ``fullserver:location``; a comment above them says when and why. A
stack already pinned to the winner is left byte for byte, so ``--pin`` is idempotent, and the
result is read back and compared with the intended config before it is written.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import yaml

from fullserver.errors import InputError
from fullserver.placement import PIN_COMMAND, Placement
from fullserver.workload import CONFIG_NAMESPACE

PIN_MARK = f"# pinned by `{PIN_COMMAND}`"


def pin_comment(placement: Placement, today: dt.date) -> str:
    """When and why, in one comment line: the winner, the runner-up and what the choice saves."""
    return f"{PIN_MARK} on {today.isoformat()}: {placement.verdict()}; up never moves it, --pin again to re-choose"


def _key_line(key: str, indent: str) -> re.Pattern[str]:
    return re.compile(
        rf"^{re.escape(indent)}{re.escape(CONFIG_NAMESPACE)}:{key}:[ \t]*(?P<value>[^#\n]*?)[ \t]*(#.*)?$"
    )


def _config_indent(lines: list[str], where: str) -> tuple[int, str]:
    """The line after ``config:`` and the indentation of its keys."""
    for i, line in enumerate(lines):
        if line.rstrip() == "config:":
            for following in lines[i + 1 :]:
                if following.strip() and not following.lstrip().startswith("#"):
                    return i + 1, following[: len(following) - len(following.lstrip())]
    raise InputError(
        where, "has no block 'config:' section to pin", "set fullserver:region and fullserver:platform by hand"
    )


def _block_end(lines: list[str], start: int, indent: str) -> int:
    """The index after the key at ``start`` and its value's lines (deeper, or ``- `` items at its indent)."""
    end = start + 1
    while end < len(lines):
        line = lines[end]
        deeper = line.startswith(indent + " ") or line.startswith(indent + "\t")
        if not (deeper or line.startswith(indent + "- ")) or not line.strip():
            break
        end += 1
    return end


def pin_text(text: str, platform: str, region: str, comment: str, where: str) -> str:
    """``text`` with the region and platform pinned (``text`` itself when already pinned to them)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    first, indent = _config_indent(lines, where)
    wanted = {"platform": platform, "region": region}
    found: dict[str, tuple[int, str]] = {}
    for i, line in enumerate(lines[first:], start=first):
        for key in wanted:
            match = _key_line(key, indent).match(line.rstrip("\n"))
            if match is not None:
                found[key] = (i, match["value"])
    current = {key: str(yaml.safe_load(value or "''")) for key, (_, value) in found.items()}
    if current == wanted:
        return text
    for key, (i, _) in found.items():
        lines[i] = f"{indent}{CONFIG_NAMESPACE}:{key}: {wanted[key]}\n"
    missing = [f"{indent}{CONFIG_NAMESPACE}:{k}: {wanted[k]}\n" for k in wanted if k not in found]
    if missing:
        location = _key_line("location", indent)
        at = next((i for i, line in enumerate(lines) if i >= first and location.match(line.rstrip("\n"))), None)
        if at is None:
            raise InputError(where, "names no fullserver:location to pin", "plan --pin pins stacks with a location")
        end = _block_end(lines, at, indent)
        lines[end:end] = missing
    lines = [line for line in lines if not line.lstrip().startswith(PIN_MARK)]
    pinned_at = [i for i, line in enumerate(lines) for k in wanted if _key_line(k, indent).match(line.rstrip("\n"))]
    lines.insert(min(pinned_at), f"{indent}{comment}\n")  # above the first of the two keys
    out = "".join(lines)
    _check_same_config(text, out, wanted, where)
    return out


def _check_same_config(before: str, after: str, wanted: dict[str, str], where: str) -> None:
    """The edit changed exactly the two keys: anything else means the file's form was not understood."""
    old, new = yaml.safe_load(before), yaml.safe_load(after)
    expected = {**old["config"], **{f"{CONFIG_NAMESPACE}:{k}": v for k, v in wanted.items()}}
    if new != {**old, "config": expected}:
        raise InputError(
            where, "could not be pinned line by line", "set fullserver:region and fullserver:platform by hand"
        )


def pin_stack(path: Path, placement: Placement, today: dt.date) -> bool:
    """Write the winner into the stack file; whether the file changed."""
    text = path.read_text(encoding="utf-8")
    winner = placement.winner
    new = pin_text(text, winner.platform.value, winner.region, pin_comment(placement, today), str(path))
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True
