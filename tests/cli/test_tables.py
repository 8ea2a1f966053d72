"""The one width rule every table of the CLI goes through (``fullserver_cli.tables``).

A table fits the console it is printed on: each column at least its longest word, so cells wrap
at spaces and no word is split or cut; when the words of every column cannot stand side by side,
the columns named together in ``narrow`` share one column, a line each; piped output is 80
columns unless ``COLUMNS`` says otherwise.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rich.console import Console, RenderableType

from fullserver.baremetal.audit import audit_facts
from fullserver.baremetal.probe import parse_probe
from fullserver.baremetal.verify import HostVerify, Line
from fullserver.catalog import load_catalog
from fullserver.profiles import load_profiles
from fullserver_cli import audit, verify
from fullserver_cli.tables import table

ROOT = Path(__file__).resolve().parents[2]
FULLSERVER = Path(sys.executable).with_name("fullserver")
SENTENCE = "a reason long enough to need several lines in any column it is given, with hyphenated-words"


def screen(renderable: RenderableType, width: int) -> list[str]:
    con = Console(width=width, record=True, soft_wrap=False, color_system=None)
    with con.capture() as captured:
        con.print(renderable)
    return captured.get().splitlines()


def whole(words: set[str], lines: list[str]) -> set[str]:
    """Those of ``words`` not found whole among the screen's words."""
    shown = {w.strip(",;:()") for line in lines for w in line.split()}
    return {w for w in words if w.strip(",;:()") not in shown}


WIDTH_CLASSES = {"narrow": range(61, 80), "medium": range(80, 100), "wide": range(100, 121)}
"""Every width from 61 columns (the longest words of the four columns side by side, 52, and the
table's own rules and padding, 9) to 120, in three classes: one test each, every width in it."""


@pytest.mark.parametrize("width_class", list(WIDTH_CLASSES))
def test_every_word_stays_whole_and_no_line_is_wider_than_the_screen(width_class: str) -> None:
    t = table("shape", "region", "USD/hour", "why")
    t.add_row("a3-highgpu-1g", "asia-southeast1", "$14.19", SENTENCE)
    t.add_row("p5.48xlarge", "ap-northeast-1", "$68.80", "short")
    words = set(SENTENCE.split()) | {"a3-highgpu-1g", "asia-southeast1", "ap-northeast-1", "$14.19", "USD/hour"}
    for width in WIDTH_CLASSES[width_class]:
        lines = screen(t, width)
        assert max(len(line) for line in lines) <= width, width
        assert whole(words, lines) == set(), width


def test_the_long_sentences_keep_room_beside_short_columns() -> None:
    """Space beyond the longest words goes where it is wanted: the sentence column gets most."""
    t = table("#", "shape", "why")
    t.add_row("1", "p5.48xlarge", SENTENCE)
    header = screen(t, 60)[0]
    assert header.index("why") < 20 and len(screen(t, 60)) <= 6


def test_columns_named_together_share_one_when_the_screen_is_narrow() -> None:
    t = table("stack", "profile", "platform", "region", narrow=[("stack", "profile"), ("platform", "region")])
    t.add_row("train-tpu-v5p-slice", "realtime-inference", "bare-metal", "asia-southeast1")
    wide, narrow = screen(t, 80), screen(t, 45)
    assert wide[0].split() == ["stack", "profile", "platform", "region"]
    assert [line.split() for line in narrow] == [
        ["stack", "platform"],
        ["profile", "region"],
        [line.strip() for line in narrow[2].split()],  # the rule under the header
        ["train-tpu-v5p-slice", "bare-metal"],
        ["realtime-inference", "asia-southeast1"],
    ]


def test_a_screen_narrower_than_the_words_folds_only_the_longest_rather_than_cropping() -> None:
    t = table("#", "shape", "why")
    t.add_row("1", "a3-highgpu-1g", SENTENCE)
    lines = screen(t, 33)  # the longest words need 1 + 13 + 16, the rules and padding 6
    assert max(len(line) for line in lines) <= 33
    assert whole({"a3-highgpu-1g", "reason", "several"}, lines) == set()
    assert "hyphenated-words" not in "\n".join(lines)  # folded in a column of 13, every letter kept
    assert "hyphenated-words" in "".join(line[20:].strip() for line in lines)


def test_a_tab_in_a_cell_is_measured_as_the_spaces_it_prints_as() -> None:
    """A fact read from a host may hold a tab: rich measures it as nothing but prints up to 8
    spaces, so a column measured by rich alone looked wide enough and lost the cell's end."""
    t = table("fact", "b")
    t.add_row("tab\there", "q")
    lines = screen(t, 15)
    assert max(len(line) for line in lines) <= 15
    assert whole({"tab", "here", "q"}, lines) == set(), lines


def test_a_narrow_layout_names_every_column_once() -> None:
    with pytest.raises(ValueError, match="does not cover the columns"):
        table("stack", "profile", "region", narrow=[("stack", "profile")])


def test_an_audited_hosts_table_fits_80_columns_with_every_fact_whole() -> None:
    facts = parse_probe("gpu-01", (ROOT / "tests/baremetal/golden/probe/dgx-h100.txt").read_text())
    report = audit_facts(facts, load_profiles()["dedicated-steady"], load_catalog())
    lines = screen(audit.host_table(report), 80)
    assert max(len(line) for line in lines) <= 80
    expected = set(facts.cpu.model.split()) | {"gpu-01", "H100", "80GB", "HBM3", facts.kernel, facts.arch}
    assert whole(expected, lines) == set()


def test_a_verified_hosts_table_fits_80_columns_with_every_figure_whole() -> None:
    result = HostVerify(
        name="gpu-01",
        address="[2001:db8::12]:2222",
        status="short",
        lines=[
            Line(dimension="pcie", unit="GB/s", promised=25.0, delivered=11.8, detail="GPU 3 trains at PCIe gen4 x16"),
            Line(dimension="scratch", unit="MiB/s", promised=8000, delivered=None, detail="fio could not run"),
        ],
        problems=["nvlink: 2 of 18 links down on GPU 5 (nvidia-smi nvlink --status)"],
        gpus="8 x NVIDIA H100 80GB HBM3",
        seconds=41.3,
    )
    lines = screen(verify.host_table(result), 80)
    assert max(len(line) for line in lines) <= 80
    expected = {"[2001:db8::12]:2222", "11.8", "0.47", "--status", "nvidia-smi", "HBM3", "41.3s"}
    assert whole(expected, lines) == set()


def test_piped_output_is_80_columns_even_beside_a_wider_terminal() -> None:
    """rich asks stdin and stderr for a size when stdout is a pipe: a 200-column terminal there
    must not widen what goes into the pipe (``| tee log``); ``COLUMNS`` still wins."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    try:
        widths = {}
        for columns in (None, "120"):
            extra = {"COLUMNS": columns} if columns else {}
            done = subprocess.run(
                [str(FULLSERVER), "catalog", "--accelerator", "H100-80GB"],
                cwd=ROOT,
                stdin=follower,
                stderr=follower,
                stdout=subprocess.PIPE,
                text=True,
                env={**env, **extra},
                check=True,
            )
            widths[columns] = max(len(line) for line in done.stdout.splitlines())
    finally:
        os.close(follower)
        os.close(leader)
    assert widths[None] == 80 and widths["120"] == 120
