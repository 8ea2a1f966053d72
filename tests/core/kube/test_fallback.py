"""``fullserver.kube.fallback``: with a spot pool and its on-demand fallback, the plan says which one
the autoscaler grows first and what tells it so: EKS the Cluster Autoscaler's priority expander over
the Auto Scaling groups' names, GKE a ComputeClass the pools are bound to and the pods select."""

from __future__ import annotations

import re

import pytest

from fullserver.catalog import load_catalog
from fullserver.kube import kube_plan
from fullserver.kube.cost import kube_cost
from fullserver.kube.fallback import class_name
from fullserver.kube.manifest import workload
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.platforms import eks, gke
from fullserver.profiles import load_profiles
from tests.crds import validate

UUID_SUFFIX = "-6ebc2b82-8f1f-c8ee-b3d2-8d2a9e0e6a2b"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_eks_tries_the_spot_group_first_through_the_priority_expander(plans: dict[str, StackPlan]) -> None:
    plan = kube_plan(plans["exp-aws-l4-spot"].spec, Platform.EKS_GPU)
    spot, fallback = (p.name for p in plan.pools)
    assert (spot, fallback) == ("exp-aws-l4-spot-spot", "exp-aws-l4-spot-ondemand")
    priorities = eks.expander_priorities([spot, fallback])
    assert priorities == {
        "20": ["^eks-exp-aws-l4-spot-spot-[0-9a-f-]+$"],
        "10": ["^eks-exp-aws-l4-spot-ondemand-[0-9a-f-]+$"],
    }
    # EKS names a managed group's Auto Scaling group eks-<node group>-<uuid>: each pattern takes its own
    high, low = (re.compile(priorities[k][0]) for k in ("20", "10"))
    assert high.match(f"eks-{spot}{UUID_SUFFIX}") and not high.match(f"eks-{fallback}{UUID_SUFFIX}")
    assert low.match(f"eks-{fallback}{UUID_SUFFIX}") and not low.match(f"eks-{spot}{UUID_SUFFIX}")
    # the plan says what the cloud tries in order on a stockout: the spot group's types, then on-demand
    assert plan.spot_first.startswith(
        f"on a stockout the Cluster Autoscaler tries, in order: 1. {spot}: spot {', '.join(plan.instance_types)}; "
        f"2. {fallback}: on-demand {plan.machine_type}; then nothing (the pods wait)"
    )
    assert len(plan.instance_types) > 1  # the spot group runs the balanced alternatives too
    assert f"--expander={eks.EXPANDER}" in plan.spot_first
    assert plan.compute_class is None and len(plan.taints) == 1  # nothing to bind on EKS
    assert not any("priority-expander" in w for w in plan.warnings)  # a created cluster: fullserver configures it


def test_an_attached_eks_cluster_is_told_how_to_order_its_groups(plans: dict[str, StackPlan]) -> None:
    plan = kube_plan(plans["exp-aws-l4-spot"].spec, Platform.EKS_GPU, cluster="ml-prod")
    (needs,) = [w for w in plan.warnings if "priority-expander" in w]
    assert needs.startswith(
        "the existing EKS cluster must grow exp-aws-l4-spot-spot before exp-aws-l4-spot-ondemand: its Cluster "
        "Autoscaler with --expander=priority,least-waste"
    )
    assert "20: ^eks-exp-aws-l4-spot-spot-[0-9a-f-]+$; 10: ^eks-exp-aws-l4-spot-ondemand-[0-9a-f-]+$" in needs
    # or what the later round builds: Karpenter with a NodePool over the same types
    assert "or Karpenter with a NodePool" in needs and "karpenter.sh/capacity-type" in needs


def test_the_expander_ranks_groups_in_the_order_given_ten_apart() -> None:
    """The highest value wins (the priority expander's readme), so the first group gets the most."""
    assert eks.expander_priorities(["a-spot", "b-spot", "c-ondemand"]) == {
        "30": ["^eks-a-spot-[0-9a-f-]+$"],
        "20": ["^eks-b-spot-[0-9a-f-]+$"],
        "10": ["^eks-c-ondemand-[0-9a-f-]+$"],
    }


def test_gke_binds_both_pools_to_a_compute_class_that_names_the_spot_pool_first(plans: dict[str, StackPlan]) -> None:
    stack = plans["gke-gpu-attach"]
    plan = stack.spec.kube
    assert plan is not None and plan.compute_class == "fullserver-gke-gpu-attach"
    spot, fallback = (p.name for p in plan.pools)
    # the pools carry the class's label and NoSchedule taint (GKE, manually created node pools)
    assert plan.node_labels["cloud.google.com/compute-class"] == "fullserver-gke-gpu-attach"
    assert [t.model_dump() for t in plan.taints] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "cloud.google.com/compute-class", "value": "fullserver-gke-gpu-attach", "effect": "NoSchedule"},
    ]
    manifests = workload(plan, stack.spec, image="trainer:1", command=["python", "train.py"])
    assert [m["kind"] for m in manifests] == ["StorageClass", "ComputeClass", "Job"]
    compute_class = manifests[1]
    validate(compute_class)  # against the schema written from Google's reference (tests/data/crds)
    assert compute_class == {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": "fullserver-gke-gpu-attach", "labels": manifests[2]["metadata"]["labels"]},
        "spec": {
            "priorities": [{"nodepools": [spot]}, {"nodepools": [fallback]}],
            "whenUnsatisfiable": "DoNotScaleUp",
            "nodePoolAutoCreation": {"enabled": False},
        },
    }
    pod = manifests[2]["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["cloud.google.com/compute-class"] == "fullserver-gke-gpu-attach"
    assert {"key": "cloud.google.com/compute-class", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert plan.spot_first.startswith(
        f"on a stockout GKE tries, in order: 1. {spot}: spot {plan.machine_type}; "
        f"2. {fallback}: on-demand {plan.machine_type}; then nothing (whenUnsatisfiable DoNotScaleUp"
    )
    # attached: the cluster must be new enough for ComputeClasses
    assert any(gke.COMPUTE_CLASS_MIN_VERSION in w and "ComputeClass" in w for w in plan.warnings)


@pytest.mark.parametrize("stack", ["serve-gke-l4", "gke-tpu-slice", "eks-gpu-cluster"])
def test_one_pool_needs_no_order(plans: dict[str, StackPlan], stack: str) -> None:
    plan = plans[stack].spec.kube
    assert plan is not None and len(plan.pools) == 1
    assert plan.spot_first == "" and plan.compute_class is None
    assert "cloud.google.com/compute-class" not in plan.node_selector


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ("gke-gpu-attach", "fullserver-gke-gpu-attach"),
        # fitted like every program-set name (fullserver.naming): a hash of the whole original keeps
        # two environments that differ only in case, '_' or past character 63 apart
        ("Team_ML.Serve.v2", "fullserver-team-ml-serve-391792-v2"),
        ("x" * 100, "fullserver-" + "x" * 45 + "-8e355c"),
    ],
)
def test_a_compute_class_name_is_a_label_value_gke_does_not_reserve(environment: str, expected: str) -> None:
    name = class_name(environment)
    assert name == expected and len(name) <= 63 and DNS_LABEL.match(name)
    assert not name.startswith(("gke", "autopilot"))
    assert class_name("team-ml-serve-v2") != class_name("Team_ML.Serve.v2")


def test_the_pools_cost_says_which_pool_is_grown_first(plans: dict[str, StackPlan]) -> None:
    stack = plans["gke-gpu-attach"]
    assert stack.spec.kube is not None
    cost = kube_cost(stack.spec.kube, stack.spec, load_profiles()[stack.spec.profile], load_catalog())
    spot, fallback = cost.pools
    assert spot.note.startswith("spot, grown first;")
    assert fallback.note.startswith("on-demand fallback, grown when spot is out;")
    (line,) = [c for c in stack.cost.lines if c.item == "node pools (range)"]
    assert line.note.endswith("80% of hours on the spot pool the autoscaler grows first)")
