"""Stack names: unique, sortable, and valid for Pulumi."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fullserver.errors import InputError
from stackops.naming import stack_name


def test_names_are_unique_sortable_and_valid_pulumi_stack_names() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    names = {stack_name("ci", now) for _ in range(50)}
    assert len(names) == 50
    for n in names:
        assert n.startswith("ci-20260102-030405-") and len(n) <= 100
        assert all(c.isalnum() or c in "-_." for c in n)
    with pytest.raises(InputError):
        stack_name("Bad Prefix", now)
