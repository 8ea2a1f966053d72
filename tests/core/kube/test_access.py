"""The cluster keys in the plan (``fullserver.kube.access``, ``fullserver.sizing.kube_spec``): where
the cluster is, how it is reached, and what the plan says of a private endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fullserver.kube.access import check_subnet_id, location_problem, private_endpoint_warning, way_in_refusal
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
