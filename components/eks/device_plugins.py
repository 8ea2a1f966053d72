"""The device plugins of a created EKS cluster's GPU nodes, as Helm releases through the cluster's
provider (``components.eks.controller.chart_release``): NVIDIA's (every GPU node) and AWS's EFA
plugin (nodes with EFA interfaces), in ``kube-system``, needing no IAM role."""

from typing import Any

import pulumi

from components.eks.controller import Chart, chart_release
from fullserver.kube import KubePlan
from fullserver.platforms import eks

NAMESPACE = "kube-system"
DEVICE_PLUGIN_CHART = Chart("nvidia-device-plugin", "0.17.4", "https://nvidia.github.io/k8s-device-plugin")
"""NVIDIA's device plugin chart, pinned: the EKS user guide ("Install Kubernetes device plugin for
GPUs", ml-eks-k8s-device-plugin) says AL2023 NVIDIA AMIs need it installed (Helm, other tooling or
the GPU Operator; Bottlerocket NVIDIA AMIs ship it) and lists chart 0.17.4 from this repository."""
EFA_PLUGIN_CHART = Chart(*eks.EFA_DEVICE_PLUGIN_CHART)
GPU_PRESENT = {"nvidia.com/gpu.present": "true"}
"""On every GPU node and the plugin's node selector. Chart 0.17.4's default ``affinity`` is
required node affinity with three alternative terms: NFD's ``feature.node.kubernetes.io/pci-10de.present``,
NFD's ``cpu-model.vendor_id=NVIDIA``, or this label ("We allow a GPU deployment to be forced by
setting the following label to true"); NFD is installed only with ``nfd.enabled``/``gfd.enabled``,
both off by default (NVIDIA/k8s-device-plugin@v0.17.4: deployments/helm/nvidia-device-plugin/
values.yaml and Chart.yaml). So without NFD the plugin schedules on exactly the nodes carrying
this label. nodeadm sets it itself only from kubelet 1.35 on (awslabs/amazon-eks-ami:
nodeadm/internal/kubelet/config.go, ``NvidiaGPULabel``), hence the node group's label."""


def device_plugin_values(plan: KubePlan) -> dict[str, Any]:
    """NVIDIA's device plugin's values: the GPU taint tolerated, the GPU nodes selected, and on EFA
    nodes ``mofedEnabled: false``. From v0.19.0 the plugin's ``--mofed-enabled`` defaults to true and
    mounts every ``/dev/infiniband/uverbs*`` into GPU containers, which conflicts with the EFA
    plugin's allocation (NVIDIA/k8s-device-plugin v0.19.0 ``cmd/nvidia-device-plugin/main.go``);
    the pinned 0.17.4 defaults it to false and its chart sets ``MOFED_ENABLED`` from a boolean
    ``mofedEnabled`` (``deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml``
    at v0.17.4), so saying false keeps it off across a move of the pin."""
    values: dict[str, Any] = {
        "tolerations": [{"key": eks.GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": dict(GPU_PRESENT),
    }
    if plan.efa_interfaces:
        values["mofedEnabled"] = False
    return values


def device_plugin(
    name: str, plan: KubePlan, provider: pulumi.ProviderResource, parent: pulumi.Resource, after: list[pulumi.Resource]
) -> None:
    """NVIDIA's device plugin on a created cluster (``DEVICE_PLUGIN_CHART``): the AL2023 NVIDIA AMI
    does not run it, and without it no pod requesting ``nvidia.com/gpu`` schedules."""
    chart_release(
        f"{name}-nvidia-device-plugin",
        DEVICE_PLUGIN_CHART,
        NAMESPACE,
        device_plugin_values(plan),
        provider,
        parent,
        after,
    )


def efa_plugin_values(plan: KubePlan) -> dict[str, Any]:
    """The EFA plugin's values (``eks.EFA_DEVICE_PLUGIN_CHART``): its required node affinity narrowed
    to the node groups' instance types (the chart's own list replaced, so a type newer than the chart
    still gets the plugin), the node groups' taints tolerated (the chart tolerates only
    ``CriticalAddonsOnly``) and the environment's nodes selected."""
    return {
        "supportedInstanceLabels": {"keys": ["node.kubernetes.io/instance-type"], "values": list(plan.instance_types)},
        "tolerations": [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in plan.taints],
        "nodeSelector": dict(plan.node_selector),
    }


def efa_plugin(
    name: str, plan: KubePlan, provider: pulumi.ProviderResource, parent: pulumi.Resource, after: list[pulumi.Resource]
) -> Any:
    """AWS's EFA device plugin on a created cluster whose nodes have EFA interfaces: the AL2023 NVIDIA
    AMI carries the EFA software but not the plugin, so without it no pod gets ``vpc.amazonaws.com/efa``
    (EKS user guide, "Manage EFA devices"). In ``kube-system``, as the user guide installs it."""
    return chart_release(
        f"{name}-efa-device-plugin", EFA_PLUGIN_CHART, NAMESPACE, efa_plugin_values(plan), provider, parent, after
    )
