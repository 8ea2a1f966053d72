"""The cluster keys in the plan (``fullserver.kube.access``, ``fullserver.sizing.kube_spec``): where
the cluster is, how it is reached, and what the plan says of a private endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fullserver.kube.access import (
    INTERNET,
    ApiEndpoint,
    api_endpoint,
    check_subnet_id,
    control_plane,
    location_problem,
    private_endpoint_warning,
    through_dns,
    way_in_refusal,
)
from fullserver.kube.pool import KubePlan
from tests.core.test_stack_config import plan_offline, stack_config, write_stack


def _kube(tmp_path: Path, stack: str, **changes: Any) -> KubePlan:
    plan = plan_offline(write_stack(tmp_path, stack, stack_config(stack, **changes))).spec.kube
    assert plan is not None
    return plan


def test_a_zonal_cluster_puts_the_pools_in_its_zone(tmp_path: Path) -> None:
    plan = _kube(tmp_path, "gke-gpu-attach", clusterLocation="us-central1-c")
    assert plan.access is not None and plan.access.location == "us-central1-c" and plan.access.zonal
    assert plan.zone == "us-central1-c"


def test_a_named_zone_beside_a_zonal_cluster_is_kept(tmp_path: Path) -> None:
    """Nodes may be in other zones of a zonal cluster's region (pulumi-gcp ``NodePool.node_locations``)."""
    plan = _kube(tmp_path, "gke-gpu-attach", clusterLocation="us-central1-c", zone="us-central1-a")
    assert plan.access is not None and (plan.access.location, plan.zone) == ("us-central1-c", "us-central1-a")


def test_without_the_keys_the_cluster_is_in_the_region_with_pod_identity(tmp_path: Path) -> None:
    plan = _kube(tmp_path, "eks-gpu-cluster")
    assert plan.access is not None
    assert plan.access.model_dump() == {
        "location": "us-east-1",
        "private_endpoint": False,
        "identity": "pod-identity",
        "subnets": [],
        "api_ranges": [],
        "api_open": False,
    }
    assert not plan.access.zonal


def test_a_private_endpoint_is_in_the_plan_with_what_it_means(tmp_path: Path) -> None:
    plan = _kube(tmp_path, "eks-gpu-cluster", privateEndpoint=True, clusterIdentity="irsa")
    assert plan.access is not None and plan.access.private_endpoint and plan.access.identity == "irsa"
    (said,) = [w for w in plan.warnings if "privateEndpoint" in w]
    assert "NVIDIA's device plugin" in said and "run pulumi up from there too" in said
    gke = _kube(tmp_path, "gke-tpu-slice", privateEndpoint=True)
    (said,) = [w for w in gke.warnings if "privateEndpoint" in w]
    assert "pulumi up applies" not in said  # nothing is applied through a GKE cluster's API unless asked


def test_private_endpoint_warning_names_the_workload_when_it_is_applied() -> None:
    assert "applies the workload through it" in private_endpoint_warning("gke", True)
    assert "NVIDIA's device plugin and the workload" in private_endpoint_warning("eks", True)


@pytest.mark.parametrize("subnet", ["subnet-0a1b2c3d", "subnet-0123456789abcdef0"])
def test_subnet_ids_take_ec2s_two_forms(subnet: str) -> None:
    assert check_subnet_id(subnet) == subnet


@pytest.mark.parametrize("subnet", ["subnet-0a1b2c3", "subnet-0123456789abcdef", "sg-0a1b2c3d", "subnet-0A1B2C3D", ""])
def test_other_subnet_ids_are_refused(subnet: str) -> None:
    with pytest.raises(ValueError, match="is not a subnet id"):
        check_subnet_id(subnet)


def test_a_location_is_the_region_or_one_of_its_zones() -> None:
    assert location_problem("us-central1", "us-central1") is None
    assert location_problem("us-central1-f", "us-central1") is None
    assert location_problem("us-east1", "us-central1") is not None
    assert location_problem("us-central1-ab", "us-central1") is not None
    assert location_problem("us-central1-q", "us-central1") == (
        "'us-central1-q' is not a zone of region us-central1 (Google Cloud zones are the region, '-' and a letter a-f, "
        "e.g. us-central1-a)"
    )


def test_each_key_belongs_to_one_way_in() -> None:
    def refused(attached: bool, **keys: bool) -> str | None:
        flags = {"location": False, "private_endpoint": False, "identity": False, "subnets": False} | keys
        found = way_in_refusal(attached=attached, **flags)
        return found[0] if found else None

    assert refused(True, location=True, subnets=True) is None
    assert refused(False, private_endpoint=True, identity=True) is None
    assert refused(True, private_endpoint=True) == "privateEndpoint"
    assert refused(True, identity=True) == "clusterIdentity"
    assert refused(False, location=True) == "clusterLocation"
    assert refused(False, subnets=True) == "subnets"


def test_given_subnets_with_efa_must_be_of_one_zone(tmp_path: Path) -> None:
    plan = _kube(tmp_path, "eks-gpu-cluster", cluster="prod", subnets=["subnet-0a1b2c3d"])
    assert plan.efa_interfaces and plan.access is not None and plan.access.subnets == ["subnet-0a1b2c3d"]
    (warning,) = [w for w in plan.warnings if w.startswith("EFA interfaces and a cluster placement group keep")]
    # Why only a warning: the ids carry no zone, so the plan (offline) cannot tell; it says how to check.
    assert "a subnet id does not say its zone" in warning and "aws ec2 describe-subnets" in warning
    plain = _kube(tmp_path, "eks-gpu-cluster", cluster="prod")
    assert not any("fullserver:subnets" in w for w in plain.warnings)


# --- who reaches a created cluster's API (issue 33, item 6) ----------------------------------------


def test_a_created_eks_cluster_without_ranges_has_no_public_endpoint_and_says_where_to_run(tmp_path: Path) -> None:
    """EKS's own default admits 0.0.0.0/0; without fullserver:controlPlaneSourceRanges the plan builds
    no public endpoint, and warns that pulumi up (which installs charts through the API) must run
    inside the VPC."""
    plan = _kube(tmp_path, "eks-gpu-cluster")
    assert api_endpoint(plan) == ApiEndpoint() and not through_dns(plan)
    assert plan.access is not None
    assert control_plane(plan.provider, plan.access) == (
        "control plane: private endpoint only (inside its VPC; no fullserver:controlPlaneSourceRanges)"
    )
    (said,) = [w for w in plan.warnings if "has no public endpoint" in w]
    assert "pulumi up applies NVIDIA's device plugin through it, so run pulumi up from there too" in said


def test_the_stacks_ranges_are_the_only_ones_the_api_admits(tmp_path: Path) -> None:
    ranges = ["203.0.113.0/24", "198.51.100.7/32"]
    for stack in ("eks-gpu-cluster", "gke-tpu-slice"):
        plan = _kube(tmp_path, stack, controlPlaneSourceRanges=ranges, deployWorkload=True)
        assert plan.access is not None and plan.access.api_ranges == ranges
        assert api_endpoint(plan) == ApiEndpoint(public_cidrs=tuple(ranges)) and not through_dns(plan)
        assert control_plane(plan.provider, plan.access) == (
            "control plane: reachable from 203.0.113.0/24, 198.51.100.7/32 only"
        )
        (said,) = [w for w in plan.warnings if "controlPlaneSourceRanges" in w]
        assert "run kubectl and fullserver verify from an address in them" in said
        assert "the workload through it, so run pulumi up from there too" in said


def test_a_created_gke_cluster_without_ranges_is_reached_through_its_dns_endpoint(tmp_path: Path) -> None:
    """Google's recommended way in: the IP endpoint private, the DNS endpoint guarded by IAM; the
    plan names it and warns of nothing, since pulumi up reaches it from anywhere with credentials."""
    plan = _kube(tmp_path, "gke-tpu-slice")
    assert api_endpoint(plan) == ApiEndpoint(dns=True) and through_dns(plan)
    assert plan.access is not None
    assert control_plane(plan.provider, plan.access).startswith(
        "control plane: private IP endpoint + DNS endpoint with IAM (container.clusters.connect"
    )
    assert not [w for w in plan.warnings if "control plane" in w or "Kubernetes API" in w]
    attached = _kube(tmp_path, "gke-gpu-attach")
    assert not through_dns(attached)  # an existing cluster's endpoint is its own


def test_opening_the_api_to_the_internet_is_one_key_and_a_warning(tmp_path: Path) -> None:
    plan = _kube(tmp_path, "eks-gpu-cluster", controlPlaneOpenToInternet=True)
    assert api_endpoint(plan) == ApiEndpoint(public_cidrs=INTERNET) and api_endpoint(plan).open_to_internet
    (said,) = [w for w in plan.warnings if "controlPlaneOpenToInternet" in w]
    assert "admits the whole internet" in said and "controlPlaneSourceRanges instead" in said


def test_a_private_endpoint_wins_over_the_members_default(tmp_path: Path) -> None:
    plan = _kube(tmp_path, "gke-tpu-slice", privateEndpoint=True)
    assert api_endpoint(plan) == ApiEndpoint() and not through_dns(plan)
    assert plan.access is not None
    assert control_plane(plan.provider, plan.access) == "control plane: private endpoint only (inside its VPC)"
    assert api_endpoint(plan.model_copy(update={"access": None}), private_endpoint=True) == ApiEndpoint()
