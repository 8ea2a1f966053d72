"""The cluster keys in the plan (``fullserver.kube.access``, ``fullserver.sizing.kube_spec``): where
the cluster is, how it is reached, and what the plan says of a private endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fullserver.errors import InputError
from fullserver.kube.access import (
    INTERNET,
    ApiEndpoint,
    api_endpoint,
    check_subnet_id,
    control_plane,
    location_problem,
    through_dns,
    way_in_refusal,
)
from fullserver.kube.pool import KubePlan
from fullserver.netcheck import placeholder_ranges_warning
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
        "provisioner": "cluster-autoscaler",
        "subnets": [],
        "api_ranges": ["203.0.113.0/24"],
        "api_open": False,
    }
    assert not plan.access.zonal


def test_a_gke_private_endpoint_with_nothing_applied_is_in_the_plan_with_what_it_means(tmp_path: Path) -> None:
    gke = _kube(tmp_path, "gke-tpu-slice", privateEndpoint=True)
    assert gke.access is not None and gke.access.private_endpoint
    (said,) = [w for w in gke.warnings if "privateEndpoint" in w]
    assert "from inside its network" in said and "pulumi up applies" not in said


@pytest.mark.parametrize(
    ("stack", "changes", "key"),
    [
        # EKS installs its device plugin and autoscaler through the API of every cluster it creates
        ("eks-gpu-cluster", {"controlPlaneSourceRanges": None}, "controlPlaneSourceRanges"),
        ("eks-gpu-cluster", {"controlPlaneSourceRanges": None, "privateEndpoint": True}, "privateEndpoint"),
        ("eks-gpu-cluster", {"controlPlaneSourceRanges": None, "deployWorkload": True}, "controlPlaneSourceRanges"),
        # GKE applies only the workload, and only when asked
        ("gke-tpu-slice", {"privateEndpoint": True, "deployWorkload": True}, "privateEndpoint"),
    ],
)
def test_a_created_cluster_whose_api_pulumi_up_cannot_reach_is_refused(
    tmp_path: Path, stack: str, changes: dict[str, Any], key: str
) -> None:
    with pytest.raises(InputError) as refused:
        _kube(tmp_path, stack, **changes)
    assert refused.value.where.endswith(f"fullserver:{key}")
    assert "through the created cluster's Kubernetes API" in refused.value.what
    assert "fullserver:controlPlaneSourceRanges" in refused.value.hint


@pytest.mark.parametrize(
    ("stack", "changes"),
    [
        ("eks-gpu-cluster", {}),  # its ranges
        ("eks-gpu-cluster", {"controlPlaneSourceRanges": None, "controlPlaneOpenToInternet": True}),
        ("gke-tpu-slice", {"deployWorkload": True}),  # GKE's IAM-guarded DNS endpoint answers from anywhere
    ],
)
def test_a_created_cluster_pulumi_up_can_reach_is_planned(tmp_path: Path, stack: str, changes: dict[str, Any]) -> None:
    assert _kube(tmp_path, stack, **changes).create_cluster


def test_every_release_installed_through_an_eks_api_is_named(tmp_path: Path) -> None:
    (said,) = [w for w in _kube(tmp_path, "eks-gpu-cluster").warnings if "admits only" in w]
    for release in (
        "NVIDIA's device plugin",
        "the Cluster Autoscaler",
        "EFA device plugin",
        "Load Balancer Controller",
    ):
        assert release in said


def test_documentation_ranges_are_flagged_as_placeholders(tmp_path: Path) -> None:
    (said,) = [w for w in _kube(tmp_path, "eks-gpu-cluster").warnings if "placeholder" in w]
    assert said.startswith("fullserver:controlPlaneSourceRanges: 203.0.113.0/24 is a placeholder")
    assert "pulumi up and kubectl run from" in said
    real = _kube(tmp_path, "eks-gpu-cluster", controlPlaneSourceRanges=["198.18.0.0/24"])
    assert not [w for w in real.warnings if "placeholder" in w]


@pytest.mark.parametrize("ranges", [["192.0.2.0/24"], ["198.51.100.128/25"], ["203.0.113.7/32"], ["2001:db8::/48"]])
def test_each_documentation_block_is_a_placeholder(ranges: list[str]) -> None:
    assert "is a placeholder" in (placeholder_ranges_warning(ranges, "sshSourceRanges", "SSH connects from") or "")


@pytest.mark.parametrize("ranges", [["192.0.3.0/24"], ["10.0.0.0/8"], ["203.0.112.0/23"], []])
def test_other_ranges_are_not_placeholders(ranges: list[str]) -> None:
    """A range merely overlapping a documentation block (203.0.112.0/23) holds real addresses too."""
    assert placeholder_ranges_warning(ranges, "sshSourceRanges", "SSH connects from") is None


def test_ssh_ranges_left_from_the_documentation_are_flagged(tmp_path: Path) -> None:
    spec = plan_offline(write_stack(tmp_path, "exp-aws-spot", stack_config("exp-aws-spot"))).spec
    (said,) = [w for w in spec.warnings if "placeholder" in w]
    assert said.startswith("fullserver:sshSourceRanges: 203.0.113.0/24 is a placeholder")


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
    attached = {"cluster": "prod", "controlPlaneSourceRanges": None}
    plan = _kube(tmp_path, "eks-gpu-cluster", subnets=["subnet-0a1b2c3d"], **attached)
    assert plan.efa_interfaces and plan.access is not None and plan.access.subnets == ["subnet-0a1b2c3d"]
    (warning,) = [w for w in plan.warnings if w.startswith("EFA interfaces and a cluster placement group keep")]
    # Why only a warning: the ids carry no zone, so the plan (offline) cannot tell; it says how to check.
    assert "a subnet id does not say its zone" in warning and "aws ec2 describe-subnets" in warning
    plain = _kube(tmp_path, "eks-gpu-cluster", **attached)
    assert not any("fullserver:subnets" in w for w in plain.warnings)


# --- who reaches a created cluster's API (issue 33, item 6) ----------------------------------------


def test_a_created_eks_cluster_without_ranges_would_have_no_public_endpoint(tmp_path: Path) -> None:
    """EKS's own default admits 0.0.0.0/0; without fullserver:controlPlaneSourceRanges the endpoint
    would be private only (such a stack is refused: pulumi up installs charts through the API)."""
    plan = _kube(tmp_path, "eks-gpu-cluster")
    assert plan.access is not None
    unranged = plan.model_copy(update={"access": plan.access.model_copy(update={"api_ranges": []})})
    assert unranged.access is not None
    assert api_endpoint(unranged) == ApiEndpoint() and not through_dns(unranged)
    assert control_plane(unranged.provider, unranged.access) == (
        "control plane: private endpoint only (inside its VPC; no fullserver:controlPlaneSourceRanges)"
    )


def test_the_stacks_ranges_are_the_only_ones_the_api_admits(tmp_path: Path) -> None:
    ranges = ["203.0.113.0/24", "198.51.100.7/32"]
    for stack in ("eks-gpu-cluster", "gke-tpu-slice"):
        plan = _kube(tmp_path, stack, controlPlaneSourceRanges=ranges, deployWorkload=True)
        assert plan.access is not None and plan.access.api_ranges == ranges
        assert api_endpoint(plan) == ApiEndpoint(public_cidrs=tuple(ranges)) and not through_dns(plan)
        assert control_plane(plan.provider, plan.access) == (
            "control plane: reachable from 203.0.113.0/24, 198.51.100.7/32 only"
        )
        (said,) = [w for w in plan.warnings if "admits only" in w]
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
    plan = _kube(tmp_path, "eks-gpu-cluster", controlPlaneSourceRanges=None, controlPlaneOpenToInternet=True)
    assert api_endpoint(plan) == ApiEndpoint(public_cidrs=INTERNET) and api_endpoint(plan).open_to_internet
    (said,) = [w for w in plan.warnings if "controlPlaneOpenToInternet" in w]
    assert "admits the whole internet" in said and "controlPlaneSourceRanges instead" in said


def test_a_private_endpoint_wins_over_the_members_default(tmp_path: Path) -> None:
    plan = _kube(tmp_path, "gke-tpu-slice", privateEndpoint=True)
    assert api_endpoint(plan) == ApiEndpoint() and not through_dns(plan)
    assert plan.access is not None
    assert control_plane(plan.provider, plan.access) == "control plane: private endpoint only (inside its VPC)"
    assert api_endpoint(plan.model_copy(update={"access": None}), private_endpoint=True) == ApiEndpoint()
