"""``fullserver.comparable``: which platforms a stack is compared with across the node-pool line."""

from __future__ import annotations

import pytest

from fullserver.comparable import pool_alternatives
from fullserver.platform import Platform as P
from fullserver.profiles import load_profiles

PROFILES = load_profiles()


@pytest.mark.parametrize(
    ("profile", "chosen", "rows"),
    [
        # A VM stack: the node pools of its accelerators' kind, in the profile's order.
        ("scale-training", P.AWS_GPU, (P.EKS_GPU, P.GKE_GPU)),
        ("scale-training", P.TPU_VM, (P.GKE_TPU,)),
        ("realtime-inference", P.GCP_GPU, (P.GKE_GPU, P.EKS_GPU)),
        # A node-pool stack: the VM platforms and the other cluster platform of its kind.
        ("scale-training", P.EKS_GPU, (P.AWS_GPU, P.GCP_GPU, P.GKE_GPU)),
        ("scale-training", P.GKE_TPU, (P.TPU_VM,)),
        ("fine-tuning", P.GKE_GPU, (P.AWS_GPU, P.GCP_GPU, P.EKS_GPU)),
        # What the profile does not allow is never a row: experimentation has no gke-tpu.
        ("experimentation", P.TPU_VM, ()),
        ("dedicated-steady", P.BARE_METAL, ()),
    ],
)
def test_a_stack_is_compared_across_the_node_pool_line_where_its_profile_allows(
    profile: str, chosen: P, rows: tuple[P, ...]
) -> None:
    assert pool_alternatives(PROFILES[profile].platforms, chosen) == rows
