"""``fullserver plan``'s cluster and pools rows say where a node-pool platform's cluster is and how
it is reached (``fullserver_cli.render``, ``KubePlan.access``)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_render import shown
from tests.core.test_stack_config import plan_offline, stack_config, write_stack


def test_a_zonal_cluster_and_its_pools_zone_are_shown(tmp_path: Path) -> None:
    plan = plan_offline(write_stack(tmp_path, "z", stack_config("gke-gpu-attach", clusterLocation="us-central1-c")))
    text = shown(plan)
    assert "ml-prod in us-central1-c (existing: attached" in text
    assert "pools in us-central1-c: z-spot: spot 0-1 x g2-standard-48" in text


def test_a_private_endpoint_irsa_and_subnets_are_shown(tmp_path: Path) -> None:
    created = stack_config("gke-tpu-slice", privateEndpoint=True)
    text = shown(plan_offline(write_stack(tmp_path, "p", created)))
    assert "(created: GKE, its fee in the cost); control plane: private endpoint only (inside its VPC)" in text
    irsa = stack_config("eks-gpu-cluster", clusterIdentity="irsa")
    assert "pod credentials: IRSA (IAM OIDC provider)" in shown(plan_offline(write_stack(tmp_path, "i", irsa)))
    attached = stack_config(
        "eks-gpu-cluster", cluster="prod", subnets=["subnet-0a1b2c3d"], controlPlaneSourceRanges=None
    )
    text = shown(plan_offline(write_stack(tmp_path, "a", attached)))
    assert "prod in us-east-1 (existing: attached, its fee not this stack's); node groups in subnet-0a1b2c3d" in text


def test_the_cluster_row_says_who_can_reach_the_api(tmp_path: Path) -> None:
    """Issue 33: "a plan line states who can reach the API"."""
    ranged = stack_config("eks-gpu-cluster", controlPlaneSourceRanges=["203.0.113.0/24"])
    text = shown(plan_offline(write_stack(tmp_path, "r", ranged)))
    assert "(created: EKS, its fee in the cost); control plane: reachable from 203.0.113.0/24 only;" in text
    text = shown(plan_offline(write_stack(tmp_path, "g", stack_config("gke-tpu-slice"))))
    assert "(created: GKE, its fee in the cost); control plane: private IP endpoint + DNS endpoint with IAM" in text
