"""A figure names a source its file lists, so its date can be looked up and its staleness warned."""

from __future__ import annotations

import pytest

from fullserver.errors import InputError
from fullserver.sources import check_cited


def test_a_listed_source_passes() -> None:
    check_cited("quotas.yaml: quotas.p", "aws-docs", {"aws-docs": object()})


def test_an_optional_source_left_out_passes() -> None:
    check_cited("quotas.yaml: capacity_paths[0]", None, {})


def test_an_unlisted_source_is_refused_naming_the_row_and_the_fix() -> None:
    with pytest.raises(InputError) as info:
        check_cited("quotas.yaml: quotas.p", "nowhere", {"aws-docs": object()})
    assert str(info.value) == "quotas.yaml: quotas.p: names unknown source 'nowhere' (add it under sources)"
