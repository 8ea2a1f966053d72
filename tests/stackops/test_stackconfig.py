"""An ephemeral stack's config: the base stack's, with the TTL, profile and overrides."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from fullserver.errors import InputError
from stackops.stackconfig import BaseStack, ephemeral_config


def test_config_is_the_base_stack_with_ttl_profile_and_overrides() -> None:
    base = BaseStack(
        "b",
        Path("Pulumi.b.yaml"),
        {"fullserver:profile": "fine-tuning", "fullserver:region": "us-east-1", "aws:region": "us-east-1"},
    )
    config = ephemeral_config(
        base,
        profile="experimentation",
        ttl=timedelta(minutes=90),
        overrides={"region": "eu-central-1", "gcp:project": "p"},
    )
    assert config == {
        "fullserver:profile": "experimentation",
        "fullserver:region": "eu-central-1",
        "aws:region": "us-east-1",
        "gcp:project": "p",
        "fullserver:ttlHours": 2,  # whole hours, rounded up: Pulumi.yaml declares an integer
    }


def test_a_secret_in_the_base_stack_cannot_be_copied() -> None:
    base = BaseStack("b", Path("Pulumi.b.yaml"), {"fullserver:token": {"secure": "v1:abc"}})
    with pytest.raises(InputError, match="secrets="):
        ephemeral_config(base, profile=None, ttl=timedelta(hours=1), overrides={})
