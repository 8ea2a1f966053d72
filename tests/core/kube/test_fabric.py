"""``fullserver.kube.fabric``: pods on EFA nodes request every interface and the fabric's huge pages,
and the node's allocatable memory holds back the huge pages the EFA driver pre-allocates, so the
pod's request still fits its node."""

from __future__ import annotations

from fullserver.kube import kube_plan
from fullserver.kube.fabric import fabric_reserved, pod_devices
from fullserver.kube.manifest import default_workload, fits_node, resources
from fullserver.kube.pool import node_reservations
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.platforms import eks, pool_member


def test_a_p5_pod_requests_all_32_efa_interfaces_and_the_nccl_huge_pages(plans: dict[str, StackPlan]) -> None:
    plan = plans["eks-gpu-cluster"].spec.kube
    assert plan is not None and plan.efa_interfaces == 32
    assert plan.pod.devices == {"vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "5120Mi"}
    (job,) = [m for m in default_workload(plan, plans["eks-gpu-cluster"].spec) if m["kind"] == "Job"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    for side in ("requests", "limits"):  # extended resources and huge pages: requests equal limits
        assert container["resources"][side]["vpc.amazonaws.com/efa"] == "32"
        assert container["resources"][side]["hugepages-2Mi"] == "5120Mi"
        assert container["resources"][side]["nvidia.com/gpu"] == "8"
    assert container["resources"] == resources(plan)


def test_the_efa_drivers_huge_pages_come_off_the_nodes_allocatable_memory(plans: dict[str, StackPlan]) -> None:
    spec = plans["eks-gpu-cluster"].spec
    plan = spec.kube
    assert plan is not None
    args = (Platform.EKS_GPU, spec.vcpus, spec.memory_gib, spec.local_nvme_disks, spec.local_nvme_disk_gib, 300)
    pods = plan.max_pods  # the p5's VPC CNI addresses 100 pods
    plain, held = node_reservations(*args, pods=pods), node_reservations(*args, efa_interfaces=32, pods=pods)
    # 5128 pages of 2 MiB (EKS user guide): kubelet reports that much less memory
    assert held.allocatable.memory_mib == plain.allocatable.memory_mib - 10256
    assert held.capacity == plain.capacity and held.allocatable.cpu_m == plain.allocatable.cpu_m
    assert plan.node_allocatable.memory_mib == int(held.allocatable.memory_mib)
    # the pod's memory request still fits what kubelet offers (the DaemonSet allowance stays free)
    assert plan.pod.resources.memory_mib == plan.node_allocatable.memory_mib - 1024
    assert fits_node(plan)


def test_nodes_without_interfaces_keep_every_mib_and_request_no_devices(plans: dict[str, StackPlan]) -> None:
    rules = pool_member("eks")
    found = node_reservations(Platform.EKS_GPU, 8, 32, 0, 0, 150)
    assert fabric_reserved(rules, found, 0) == found
    assert pod_devices(rules, 0) == {}
    assert pod_devices(pool_member("gke"), 32) == {}  # GKE pools get no EFA (PoolRules.efa)
    plan = kube_plan(plans["exp-aws-l4-spot"].spec, Platform.EKS_GPU)
    assert plan.efa_interfaces == 0 and plan.pod.devices == {}


def test_an_attached_cluster_is_told_to_run_the_efa_plugin(plans: dict[str, StackPlan]) -> None:
    attached = kube_plan(plans["train-p5-cluster"].spec, Platform.EKS_GPU, cluster="ml-prod")
    created = kube_plan(plans["train-p5-cluster"].spec, Platform.EKS_GPU)
    assert eks.EFA_ATTACHED_PLUGIN in attached.warnings
    assert eks.EFA_ATTACHED_PLUGIN not in created.warnings  # components.eks installs it
    assert "aws-efa-k8s-device-plugin" in eks.EFA_ATTACHED_PLUGIN and "mofedEnabled false" in eks.EFA_ATTACHED_PLUGIN
