"""Planning a stack file: the first error a person sees is the one to fix first."""

from __future__ import annotations

from pathlib import Path

import pytest

from fullserver.errors import InputError
from fullserver.plan import plan_paths

KNOWN = "batch-inference, dedicated-steady, experimentation, fine-tuning, realtime-inference, scale-training"


def test_a_stack_naming_an_unknown_profile_is_told_so_before_anything_else(tmp_path: Path) -> None:
    """The profile decides what the other keys must be, so it is named (with the known ones)
    even when those keys are wrong too; it used to say "an accelerator is needed"."""
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(
        "config:\n  fullserver:profile: fine-tunning\n  fullserver:region: us-east-1\n  fullserver:platform: aws-gpu\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        plan_paths([path])
    assert str(err.value) == (
        f"{path}: fullserver:profile: unknown profile 'fine-tunning' (did you mean fine-tuning? known profiles: {KNOWN})"
    )


def test_a_stack_with_a_known_profile_keeps_its_own_error(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(
        "config:\n  fullserver:profile: fine-tuning\n  fullserver:region: us-east-1\n  fullserver:platform: aws-gpu\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        plan_paths([path])
    assert "unknown profile" not in str(err.value)
    assert "accelerator" in str(err.value)
