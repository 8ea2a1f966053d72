"""The three Kubernetes example stacks end to end (issue 24): sized, priced and built offline.

Each stack plans (``fullserver.plan``) and its program runs under the mock runtime
(``components.graph``); every pool carries the accelerator, the driver path, the taint, the
profile's autoscaling floor and the planned machine shape, the exported manifests' requests fit
the node's allocatable, and the plan's cost carries the cluster fee.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.graph import Graph, graph_for_stack_plan
from fullserver.kube.manifest import fits_node
from fullserver.plan import StackPlan, plan_paths

ROOT = Path(__file__).resolve().parents[2]
STACKS = ("gke-gpu-attach", "gke-tpu-slice", "eks-gpu-cluster", "serve-gke-l4")


@pytest.fixture(scope="module")
def planned() -> dict[str, tuple[StackPlan, Graph]]:
    out = {}
    for name in STACKS:
        (plan,) = plan_paths([ROOT / "stacks" / f"Pulumi.{name}.yaml"])
        out[name] = (plan, graph_for_stack_plan(plan))
    return out


def _floor(inputs: dict[str, Any]) -> int:
    scaling = inputs.get("autoscaling") or {}
    for key in ("minNodeCount", "totalMinNodeCount"):
        if key in scaling:
            return int(scaling[key])
    return int(inputs["nodeCount"])


def _requests(manifests: list[dict[str, Any]]) -> list[dict[str, str]]:
    found = []
    for m in manifests:
        template = (m.get("spec") or {}).get("template") or {}
        for c in (template.get("spec") or {}).get("containers", []):
            found.append(c["resources"]["requests"])
    return found


@pytest.mark.parametrize("name", ["gke-gpu-attach", "gke-tpu-slice"])
def test_gke_pools_are_the_plan(planned: dict[str, tuple[StackPlan, Graph]], name: str) -> None:
    plan, graph = planned[name]
    kube = plan.spec.kube
    assert kube is not None and plan.spec.platform.value == name.rsplit("-", 1)[0].replace("-attach", "")
    pools = [r for r in graph.of_type("container/nodePool:NodePool") if not r.name.endswith("-system")]
    assert len(pools) == len(kube.pools)
    by_name = {p.name: p for p in kube.pools}
    for row in pools:
        pool = by_name[row.inputs["name"]]
        config = row.inputs["nodeConfig"]
        assert config["machineType"] == kube.machine_type
        assert _floor(row.inputs) == pool.min_nodes
        assert {"key": kube.accelerator_resource, "value": "present", "effect": "NO_SCHEDULE"} in config["taints"]
        assert config["spot"] is pool.spot
        if kube.accelerator_type is not None:  # GPUs: the accelerator and GKE's driver
            (gpu,) = config["guestAccelerators"]
            assert gpu["type"] == kube.accelerator_type and gpu["count"] == kube.accelerators_per_node
            assert gpu["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "LATEST"}
        else:  # a multi-host TPU slice: all of its hosts, COMPACT with the topology
            assert row.inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
            assert kube.machine_type == "ct5lp-hightpu-4t" and pool.min_nodes == pool.max_nodes == 4


def test_gke_attached_pool_touches_no_cluster(planned: dict[str, tuple[StackPlan, Graph]]) -> None:
    plan, graph = planned["gke-gpu-attach"]
    assert graph.of_type("container/cluster:Cluster") == [] and graph.of_type("compute/routerNat:RouterNat") == []
    assert {r.inputs["cluster"] for r in graph.of_type("container/nodePool:NodePool")} == {"ml-prod"}
    fee = next(line for line in plan.cost.lines if line.item == "cluster fee")
    assert fee.usd_month == 0 and "existing cluster 'ml-prod'" in fee.note
    assert [p.min_nodes for p in plan.spec.kube.pools] == [0, 0]  # type: ignore[union-attr]  # elastic: from zero


def test_eks_node_group_and_device_plugin(planned: dict[str, tuple[StackPlan, Graph]]) -> None:
    plan, graph = planned["eks-gpu-cluster"]
    kube = plan.spec.kube
    assert kube is not None
    (group,) = [r for r in graph.of_type("eks/nodeGroup:NodeGroup") if not r.name.endswith("-system")]
    assert group.inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    assert group.inputs["instanceTypes"] == [kube.machine_type] == ["p5.48xlarge"]
    assert group.inputs["scalingConfig"]["minSize"] == kube.pools[0].min_nodes == 2  # steady: fixed at its nodes
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in group.inputs["taints"]
    assert group.inputs["labels"]["nvidia.com/gpu.present"] == "true"
    releases = {r.inputs["chart"]: r for r in graph.of_type("helm.sh/v3:Release")}
    # p5.48xlarge nodes have 32 EFA interfaces: AWS's EFA device plugin serves them to the pods
    assert sorted(releases) == ["aws-efa-k8s-device-plugin", "cluster-autoscaler", "nvidia-device-plugin"]
    release = releases["nvidia-device-plugin"]
    assert release.inputs["version"] == "0.17.4"
    assert {r.inputs["name"] for r in releases.values()} == set(releases)  # each named after its chart
    assert release.inputs["values"]["mofedEnabled"] is False  # the EFA plugin owns /dev/infiniband
    efa = releases["aws-efa-k8s-device-plugin"].inputs["values"]
    assert efa["supportedInstanceLabels"]["values"] == ["p5.48xlarge"]
    # the autoscaler's chart matches the created cluster's minor (1.35 -> chart 9.59.0)
    assert releases["cluster-autoscaler"].inputs["version"] == "9.59.0"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in release.inputs["values"][
        "tolerations"
    ]
    (cluster,) = graph.of_type("eks/cluster:Cluster")
    assert cluster.inputs["upgradePolicy"] == {"supportType": "STANDARD"} and cluster.inputs["version"] == "1.35"


@pytest.mark.parametrize("name", STACKS)
def test_manifests_fit_the_node_and_the_fee_is_priced(planned: dict[str, tuple[StackPlan, Graph]], name: str) -> None:
    plan, graph = planned[name]
    kube = plan.spec.kube
    assert kube is not None and fits_node(kube)
    manifests = graph.outputs["workload"]
    requests = _requests(manifests)
    share = {**kube.pod.resources.quantities, kube.accelerator_resource: str(kube.pod.accelerators), **kube.pod.devices}
    assert requests and all(r == share for r in requests)
    if kube.efa_interfaces:  # every EFA interface of the node and the huge pages of AWS's NCCL example
        assert kube.pod.devices == {"vpc.amazonaws.com/efa": str(kube.efa_interfaces), "hugepages-2Mi": "5120Mi"}
    assert kube.pod.resources.fits_in(kube.node_allocatable)
    assert graph.outputs["cluster"] == kube.cluster_name
    items = {line.item: line for line in plan.cost.lines}
    assert "cluster fee" in items and "node pools (range)" in items
    if kube.create_cluster:
        assert items["cluster fee"].usd_month == pytest.approx(0.10 * 730)
    assert plan.cost.usd_month >= items["cluster fee"].usd_month + items["compute"].usd_month
