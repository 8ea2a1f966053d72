"""The suite's worker groups hold: tests marked ``xdist_group`` run on one worker (the sshd test beds,
``tests/conftest.py``; the ledger's matrix and the terminal screens, built once). pytest 9.2 with
pytest-xdist 3.8 stopped grouping without a word (pytest-xdist#1386), so a lock that moves either
is checked here by a two-worker session over a file of grouped tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("i", range(6))
def test_records_its_worker(i):
    out = os.environ["GROUP_OUT"]
    with open(os.path.join(out, f"test-{i}"), "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_a_marked_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | {"GROUP_OUT": str(out)}
    args = ["-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider", "-q", "tests"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:]
    workers = {p.name: p.read_text() for p in out.iterdir()}
    assert len(workers) == 6 and len(set(workers.values())) == 1, workers
