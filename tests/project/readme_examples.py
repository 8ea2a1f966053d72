"""README transcripts that are generated, not typed: each is the output of its own command line.

A block between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->`` in README.md or docs/guide.md is a
``console`` transcript: ``$ `` and the command line, then what the command printed at
``WIDTH`` columns (trailing blanks dropped), run in a temporary copy of the project (its ``Pulumi.yaml``, ``stacks/`` and
``profiles/``), so nothing in the repository changes. ``make readme-examples`` rewrites every block;
``tests/project/test_readme_examples.py`` fails when a block is not what its command prints now
(a price, a rule or a message moved), naming this command to regenerate it.

Price ages ("308 days old") move with the calendar, not with the code: they are compared as
``N days old``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FILES = [README, ROOT / "docs" / "guide.md"]
"""The documents that hold generated blocks: the README's first screen, and the guide."""
WIDTH = 100
"""Columns the transcripts are printed at: a README's code block on GitHub shows about 100."""

EXAMPLES = {
    "plan-summary": "fullserver plan --summary",
    "diff": (
        "fullserver plan --json > base.json"
        " && sed -i 's/acceleratorCount: 1/acceleratorCount: 4/' stacks/Pulumi.exp-aws-spot.yaml"
        " && sed -i 's/profile: fine-tuning/profile: experimentation/' stacks/Pulumi.finetune-gcp-g2.yaml"
        " && fullserver diff --base-plan base.json"
    ),
}
"""Each generated block by name: the command line, run through bash as the README shows it."""

_BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[\w-]+) -->\n```console\n)(?P<body>.*?)(```\n<!-- end generated: (?P=name) -->)", re.S
)
_AGE = re.compile(r"\b\d+ days old\b")


def run(command: str) -> str:
    """``$ command`` and what it prints (stdout, then stderr) in a copy of the project."""
    with tempfile.TemporaryDirectory(prefix="fullserver-readme-") as tmp:
        work = Path(tmp)
        shutil.copy(ROOT / "Pulumi.yaml", work)
        for folder in ("stacks", "profiles"):
            shutil.copytree(ROOT / folder, work / folder)
        bin_dir = Path(sys.executable).parent
        env = {**os.environ, "COLUMNS": str(WIDTH), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        env.pop("FORCE_COLOR", None)
        done = subprocess.run(
            ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False
        )
    if done.returncode != 0:
        raise RuntimeError(f"README example `{command}` exited {done.returncode}: {done.stderr.strip()}")
    printed = "".join(line.rstrip() + "\n" for line in f"{done.stdout}{done.stderr}".splitlines())
    return f"$ {command}\n{printed}"  # rich pads table lines to the width; a README keeps no trailing blanks


def blocks(text: str) -> dict[str, str]:
    """A document's generated blocks by name: their transcripts as written."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(text)}


def all_blocks() -> dict[str, str]:
    """Every generated block of every document in ``FILES``, by name."""
    return {name: body for path in FILES for name, body in blocks(path.read_text(encoding="utf-8")).items()}


def comparable(transcript: str) -> str:
    """A transcript with what moves with the calendar (price ages) written as ``N``."""
    return _AGE.sub("N days old", transcript)


def regenerate(text: str) -> str:
    """``text`` with every generated block replaced by what its command prints now."""
    return _BLOCK.sub(lambda m: m[1] + run(EXAMPLES[m["name"]]) + m[4], text)


if __name__ == "__main__":
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        path.write_text(regenerate(text), encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: regenerated {', '.join(blocks(text))}")
