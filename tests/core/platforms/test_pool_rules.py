"""fullserver.platforms.pool_rules: every node-pool platform has one member that answers the
family's core, found by the registry, and the members' answers hang together."""

from __future__ import annotations

from typing import get_args

import pytest

from fullserver.naming import fit_name
from fullserver.platform import AcceleratorKind, Platform
from fullserver.platforms import all_rules, pool_member, pool_member_of, pool_members, rules_for
from fullserver.platforms.base import Refusal
from fullserver.platforms.pool_rules import PoolKey, PoolRules

MEMBERS = list(pool_members())


def test_each_node_pool_platform_has_exactly_one_member() -> None:
    pools = {r.platform for r in all_rules() if r.core == "fullserver.kube"}
    claimed = [p for member in MEMBERS for p in member.sized_as]
    assert sorted(claimed) == sorted(pools)  # no platform twice, none missing
    assert all(pool_member_of(r.platform) is None for r in all_rules() if r.platform not in pools)


def test_the_members_are_the_plan_keys() -> None:
    assert sorted(m.key for m in MEMBERS) == sorted(get_args(PoolKey))
    assert all(pool_member(m.key) is m for m in MEMBERS)
    with pytest.raises(KeyError):
        pool_member("aks")


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: m.key)
def test_a_members_nodes_are_sized_as_a_vm_platform_of_the_same_cloud(member: PoolRules) -> None:
    for pool, vm in member.sized_as.items():
        assert rules_for(vm).core == "" and rules_for(vm).provider == rules_for(pool).provider


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: m.key)
def test_a_member_names_its_cluster_and_pools_as_its_provider_takes(member: PoolRules) -> None:
    long = "a-team-environment-name-" * 5
    cluster = fit_name(member.cluster_type, long)
    pool = fit_name(member.pool_type, long, member.pool_name_field)
    assert cluster and pool and len(pool) < len(long)


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: m.key)
def test_a_members_capabilities_hang_together(member: PoolRules) -> None:
    platforms = list(member.sized_as)
    tpu = any(AcceleratorKind.TPU in rules_for(p).accelerator_kinds for p in platforms)
    assert (member.tpu_nodes is not None) == tpu
    flex = any("flexStart" in rules_for(p).options for p in platforms)
    assert (member.flex_start_warnings is not None) == flex
    assert (member.fixed_nodes is None) == (member.unzoned_fixed is None)
    assert member.local_ssd_ephemeral <= set(platforms)
    assert not (member.local_ssd_ephemeral and member.instance_store_raid0)  # one place for ephemeral storage


def test_a_gke_gpu_pool_names_its_accelerator_and_an_eks_group_its_ami() -> None:
    gke, eks = pool_member_of(Platform.GKE_GPU), pool_member_of(Platform.EKS_GPU)
    assert gke is not None and eks is not None
    found = gke.gpu_nodes("a3-highgpu-8g", "H100")
    assert not isinstance(found, Refusal) and found.node_selector == {
        "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"
    }
    refused = gke.gpu_nodes("c3-standard-8", None)
    assert isinstance(refused, Refusal) and refused.key == "accelerator"
    group = eks.gpu_nodes("p5.48xlarge", "H100")
    assert not isinstance(group, Refusal) and group.driver == "AL2023_x86_64_NVIDIA" and not group.node_selector


def test_each_member_reads_its_clouds_secret_store() -> None:
    assert pool_member("gke").read_secret("us-central1", "api-key")[:3] == ["gcloud", "secrets", "versions"]
    aws = pool_member("eks").read_secret("us-east-1", "team/api-key")
    assert aws[:3] == ["aws", "ssm", "get-parameter"] and "/team/api-key" in aws
