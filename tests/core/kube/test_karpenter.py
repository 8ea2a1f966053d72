"""Karpenter on EKS in the plan (``fullserver:nodeProvisioner: karpenter``): the NodePool's requirements
are the balanced set, the capacity table says what Karpenter tries, an attached cluster is told the
NodePool it must run, and what the EC2NodeClass cannot build is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fullserver.errors import FullserverError
from fullserver.kube import karpenter
from fullserver.plan import StackPlan
from tests.core.test_stack_config import plan_offline, stack_config, write_stack

STACK = "exp-eks-l4-karpenter"


def _plan(tmp_path: Path, **changes: object) -> StackPlan:
    return plan_offline(write_stack(tmp_path, STACK, stack_config(STACK, **changes)))


def test_the_node_pool_requires_the_balanced_set_spot_before_on_demand(plans: dict[str, StackPlan]) -> None:
    spec = plans[STACK].spec
    plan = spec.kube
    assert plan is not None and spec.capacity is not None
    assert plan.provisioner == "karpenter"
    assert plan.instance_types == spec.capacity.machine_types  # the set the capacity table lists
    assert len(plan.instance_types) >= 2
    assert karpenter.requirements(plan)[0] == {
        "key": "node.kubernetes.io/instance-type",
        "operator": "In",
        "values": spec.capacity.machine_types,
    }
    assert karpenter.requirements(plan)[-1] == {
        "key": "karpenter.sh/capacity-type",
        "operator": "In",
        "values": ["spot", "on-demand"],
    }
    assert plan.spot_label == ""  # no preference for a managed group's label: the NodePool orders spot first
    assert plan.spot_first.startswith("on a stockout Karpenter's NodePool fullserver-exp-eks-l4-karpenter tries")


def test_the_capacity_table_says_what_karpenter_tries(plans: dict[str, StackPlan]) -> None:
    capacity = plans[STACK].spec.capacity
    assert capacity is not None and capacity.used
    spot, on_demand = capacity.steps
    types = ", ".join(capacity.machine_types)
    assert spot.what.startswith(f"spot (NodePool fullserver-exp-eks-l4-karpenter): any of {types}")
    assert on_demand.what.startswith("no spot offering left: on-demand (NodePool fullserver-exp-eks-l4-karpenter)")
    low = min(m.spot_usd_hour or 0.0 for m in capacity.members)
    assert spot.usd_hour_low == pytest.approx(low)
    assert on_demand.usd_hour_high == pytest.approx(max(m.on_demand_usd_hour for m in capacity.members))
    # a node is spot or on-demand, never both: the peak is the dearest member's on-demand hour
    assert capacity.peak_usd_hour == pytest.approx(capacity.dearest.on_demand_usd_hour)


def test_on_demand_serving_asks_karpenter_for_on_demand_and_may_consolidate(tmp_path: Path) -> None:
    serving = {"apiKeySecret": "/research/api-key", "plainHttp": True}
    spec = _plan(tmp_path, profile="realtime-inference", serving=serving).spec
    assert spec.kube is not None and spec.capacity is not None
    assert karpenter.requirements(spec.kube)[-1]["values"] == ["on-demand"]
    assert [s.what.split(" (")[0] for s in spec.capacity.steps] == ["on-demand"]
    pool = karpenter.node_pool(spec.kube, {})
    assert pool["spec"]["disruption"] == karpenter.SERVING_DISRUPTION
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "720h"
    nodes = spec.kube.max_replicas * spec.kube.nodes_per_replica
    assert pool["spec"]["limits"] == {
        "nodes": str(nodes),
        "nvidia.com/gpu": str(nodes * spec.kube.accelerators_per_node),
    }


def test_an_attached_cluster_is_told_the_node_pool_it_must_run(tmp_path: Path) -> None:
    spec = _plan(tmp_path, cluster="ml-prod", controlPlaneSourceRanges=None).spec
    assert spec.kube is not None
    needs = [w for w in spec.warnings if "must run Karpenter" in w]
    assert len(needs) == 1
    assert "a NodePool named fullserver-exp-eks-l4-karpenter requiring node.kubernetes.io/instance-type In" in needs[0]
    assert "karpenter.sh/capacity-type In spot,on-demand" in needs[0]
    assert "fullserver-environment=exp-eks-l4-karpenter" in needs[0]
    assert not any("Cluster Autoscaler" in w for w in spec.warnings)  # not the node groups' needs


def test_karpenter_is_eks_only(tmp_path: Path) -> None:
    with pytest.raises(FullserverError, match="nodeProvisioner"):
        _plan(tmp_path, platform="gke-gpu", region="us-central1", controlPlaneSourceRanges=None)


def test_efa_nodes_stay_on_node_groups(tmp_path: Path) -> None:
    with pytest.raises(FullserverError, match="fullserver:nodeProvisioner: karpenter: fullserver's EC2NodeClass"):
        plan_offline(
            write_stack(
                tmp_path,
                "eks-gpu-cluster",
                stack_config("eks-gpu-cluster", nodeProvisioner="karpenter"),
            )
        )
