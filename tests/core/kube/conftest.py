"""Every example stack's plan, once per session (the kube tests turn their specs into pools)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fullserver.plan import StackPlan, plan_paths
from fullserver.stacks import find_stacks

STACKS = Path(__file__).resolve().parents[3] / "stacks"


@pytest.fixture(scope="session")
def plans() -> dict[str, StackPlan]:
    return {p.stack: p for p in plan_paths(find_stacks(STACKS, []))}
