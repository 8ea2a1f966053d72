"""Amazon EKS GPU managed node groups (``eks-gpu``): everything fullserver knows about them.

An EKS node is an EC2 instance: instance types, prices, zones, EBS and EFA are EC2's
(``fullserver.platforms.aws``), so a node group is sized as ``aws-gpu`` sizes the same workload
(``SIZED_AS``) and then turned into a group (``fullserver.kube.pool``). What EKS adds lives here:
names, AMI types, the nodeadm ``NodeConfig`` a launch template passes, and the node's allocatable.

Design notes: docs/design/platforms.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms import aws, gke
from fullserver.platforms.base import CAPACITY_RULES, GPU_SERVING, NameRule, PlatformRules, Refusal, Request
from fullserver.platforms.network.kube import EKS_NETWORK
from fullserver.platforms.quota import eks as quota

CLUSTER_TYPE = "aws:eks/cluster:Cluster"
NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
_EKS = "A-Za-z0-9_-", "A-Za-z0-9", "A-Za-z0-9_-"
NAME_RULES: dict[str, tuple[NameRule, ...]] = {
    CLUSTER_TYPE: (NameRule("EKS cluster name", 100, *_EKS, "EKS CreateCluster", autoname=False),),
    NODE_GROUP_TYPE: (
        NameRule("EKS node group name", 63, *_EKS, "EKS CreateNodegroup", field="nodeGroupName", autoname=False),
    ),
}

GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
"""The accelerated AL2023 AMI: NVIDIA driver and container toolkit installed; the NVIDIA device
plugin is not (install it, or the GPU Operator). AL2 AMIs ended 2025-11-26."""
# A cluster fullserver creates gets one untainted managed node group besides the GPU groups: every
# GPU group is tainted ``nvidia.com/gpu`` and may sit at zero, and CoreDNS (an EKS default add-on)
# does not tolerate that taint, so without it cluster DNS never runs (the same holds on GKE,
# ``fullserver.platforms.gke.SYSTEM_POOL_DISK_KIND``'s note). ``AL2023_x86_64_STANDARD`` is EKS's plain
# AL2023 AMI type (aws-cdk ``NodegroupAmiType.AL2023_X86_64_STANDARD``); one m6i.large is
# fullserver's choice, not a sourced size.
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
SYSTEM_INSTANCE_TYPE = "m6i.large"
SYSTEM_NODES = 1
SYSTEM_DISK_GIB = 20
SYSTEM_DISK_KIND = "gp3"
"""The system node's root volume, built by its own launch template (``components.eks``): 20 GiB,
EKS's own default size ("The default disk size is 20 GiB for Linux", EKS API
``CreateNodegroup.diskSize``), as encrypted gp3 where EKS's default launch template would make it
gp2 (aws/containers-roadmap#1417), which the catalog does not price."""
CLUSTER_ZONES = 3
"""A created cluster's VPC (``components.eks.network``) has a public and a private subnet in each
of three zones, the nodes' zone first, behind one NAT gateway with its Elastic IP in the nodes'
zone (``fullserver.billables`` prices exactly that). EKS takes the control plane's subnets "in at
least two different Availability Zones", none in the zones it refuses (``CONTROL_PLANE_EXCLUDED_ZONE_IDS``),
so with the nodes' zone possibly refused, three zones always leave two
(awsdocs/amazon-eks-user-guide: latest/ug/networking/network-reqs.adoc). Nodes go into the private
subnets: a node with more than one network interface (EFA) gets no public IPv4 address ("You
cannot specify more than one network interface in the request", EC2
``InstanceNetworkInterfaceSpecification.AssociatePublicIpAddress``), so it reaches ECR and the
device plugin's registry through the NAT gateway."""
CONTROL_PLANE_EXCLUDED_ZONE_IDS = frozenset({"use1-az3", "usw1-az2", "cac1-az3"})
"""Zone ids EKS refuses for a cluster's subnets (network-reqs.adoc, "Disallowed Availability Zone
IDs": us-east-1 ``use1-az3``, us-west-1 ``usw1-az2``, ca-central-1 ``cac1-az3``; read 2026-11-26).
Nodes may run there, in subnets the cluster was not given."""
PUBLIC_SUBNET_TAGS = {"kubernetes.io/role/elb": "1"}
PRIVATE_SUBNET_TAGS = {"kubernetes.io/role/internal-elb": "1"}
"""Where load balancers go: network-reqs.adoc ("If you want to deploy load balancers to a subnet,
the subnet must have the following tag") and the AWS Load Balancer Controller's subnet
discovery (kubernetes-sigs.github.io/aws-load-balancer-controller, deploy/subnet_discovery:
``kubernetes.io/role/elb`` public, ``kubernetes.io/role/internal-elb`` private, value ``1`` or
empty; the ``kubernetes.io/cluster/<name>`` tag only for controller 2.1.1 and older)."""
KUBERNETES_VERSION = "1.35"
"""A created cluster's Kubernetes version (unless the component's ``kubernetes_version`` argument
names one; no stack key sets it), pinned rather than EKS's
default because the Cluster Autoscaler must match it: the newest EKS version on standard support
found (EKS release 2026-01-27/28, standard support to 2027-03-27: endoflife.date/amazon-eks and the
aws-samples EKS version calendar "last verified 2026-04-24"; read 2026-11-26). 1.34 leaves standard
support on 2026-12-02 (awsdocs/amazon-eks-user-guide: latest/ug/versioning/kubernetes-versions.adoc),
and ``upgrade_policy.support_type = STANDARD`` would upgrade it at once."""
CLUSTER_AUTOSCALER_CHART = "cluster-autoscaler"
CLUSTER_AUTOSCALER_REPO = "https://kubernetes.github.io/autoscaler"
CLUSTER_AUTOSCALER: dict[str, tuple[str, str]] = {
    "1.33": ("9.51.0", "v1.33.6"),
    "1.34": ("9.53.0", "v1.34.5"),
    "1.35": ("9.59.0", "v1.35.2"),
}
"""Kubernetes minor -> (chart version, image tag) of the Cluster Autoscaler. "We recommend using
Cluster Autoscaler with the Kubernetes control plane version for which it was meant ... always use
the latest Cluster Autoscaler release that corresponds to the minor version" (kubernetes/autoscaler:
cluster-autoscaler/README.md, Releases). Each chart is the newest whose ``appVersion`` has that minor
(cluster-autoscaler/charts/cluster-autoscaler/Chart.yaml at the chart tags: 9.51.0 -> 1.33.0;
9.52.x -> 1.34.1 and 9.53.0 -> 1.34.2; 9.54.0-9.59.0 -> 1.35.0; read in the 2026-08-22 snapshot), and
each tag the minor's newest release (git tags cluster-autoscaler-1.33.6, -1.34.5, -1.35.2, all of
2026-07-22, whose ``version.go`` says the same). The images exist at
``registry.k8s.io/autoscaling/cluster-autoscaler`` (the chart's ``image.repository``): kubernetes/k8s.io
PR #9760 "Add cluster-autoscaler releases: 1.33.6, 1.34.5, 1.35.2, 1.36.1", merged 2026-07-22, promoted
them (digests v1.33.6 ``sha256:7b44e0f0...``, v1.34.5 ``sha256:5c3a5644...``, v1.35.2 ``sha256:aac369dc...``
from the staging registry, as its description lists them). The chart's own default tag is its
``appVersion`` (v1.35.0 in 9.59.0): ``image.tag`` overrides it with the patch release."""
ATTACHED_AUTOSCALER = (
    "the existing EKS cluster must run the Cluster Autoscaler for these node groups to grow (from zero or "
    "within their range): EKS scales no managed node group itself; fullserver installs it only on clusters it creates"
)
"""Create-managed-node-group.adoc: "Amazon EKS doesn't automatically scale your node group in or out.
However, you can configure the Kubernetes Cluster Autoscaler to do this for you." """
GPU_RESOURCE = gke.GPU_RESOURCE
GPU_TAINT = (GPU_RESOURCE, "present", "NoSchedule")
"""No EKS page says EKS taints GPU nodes itself: fullserver declares the taint through the EKS API."""
EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""What the EFA device plugin advertises, one per interface; a pod requests it in requests and limits
and each interface goes to one pod (awsdocs/amazon-eks-user-guide: latest/ug/ml/device-management-efa.adoc)."""
EFA_DEVICE_PLUGIN_CHART = ("aws-efa-k8s-device-plugin", "v0.5.30", "https://aws.github.io/eks-charts")
"""AWS's EFA device plugin, pinned: the AL2023 accelerated AMIs carry the EFA host software but not
the plugin (device-management-efa.adoc), so without it no pod gets an interface and NCCL falls back
to TCP. Chart v0.5.30, image v0.5.20 (aws/eks-charts @5239609, 2026-08-03:
``stable/aws-efa-k8s-device-plugin/Chart.yaml``). Its DaemonSet requires node affinity on
``node.kubernetes.io/instance-type`` in ``supportedInstanceLabels.values`` and tolerates only
``CriticalAddonsOnly`` besides the chart's ``tolerations`` (``templates/daemonset.yaml``)."""
EFA_HUGEPAGES_RESOURCE = "hugepages-2Mi"
EFA_PREALLOCATED_HUGEPAGES_MIB = 5128 * 2.0
""""Amazon EC2 instances with the EFA driver installed pre-allocate 5128 2MiB Huge Pages"
(awsdocs/amazon-eks-user-guide: latest/ug/ml/node-efa.adoc @0743cb1a): kubelet takes them off the
node's allocatable memory (Kubernetes HugePages KEP, "Pre-allocated huge pages reduce the amount of
allocatable memory on a node")."""
EFA_POD_HUGEPAGES = "5120Mi"
"""What each worker of the user guide's NCCL test requests of ``hugepages-2Mi`` (node-efa.adoc, one
worker per p5.48xlarge, as here one pod per node)."""
EFA_ATTACHED_PLUGIN = (
    "the existing EKS cluster must already run AWS's EFA device plugin (chart aws-efa-k8s-device-plugin from "
    "https://aws.github.io/eks-charts) tolerating nvidia.com/gpu on these instance types, and NVIDIA's device "
    "plugin with mofedEnabled false: without it no pod gets vpc.amazonaws.com/efa and training falls back to TCP; "
    "fullserver installs it only on clusters it creates"
)
"""NVIDIA's device plugin from v0.19.0 mounts every ``/dev/infiniband/uverbs*`` into GPU containers
by default (``--mofed-enabled`` defaults to true: NVIDIA/k8s-device-plugin v0.19.0
``cmd/nvidia-device-plugin/main.go``), which conflicts with the EFA plugin's allocation."""
EXPANDER = "priority,least-waste"
"""The Cluster Autoscaler's expanders, chained: the priority expander first (the spot group), then
least-waste, the default since 2025-01-20, among groups of one priority (kubernetes/autoscaler
``cluster-autoscaler/FAQ.md``: "a comma list chains expanders")."""


def expander_priorities(groups: Sequence[str]) -> dict[str, list[str]]:
    """The priority expander's priorities for node groups in the order to grow them (the cost
    model's: ``pool_rules.capacity_order``): a positive integer to a list of regular expressions
    over node group names, here the Auto Scaling groups', the highest value first and ten apart
    (kubernetes/autoscaler ``cluster-autoscaler/expander/priority/readme.md``: the highest wins,
    groups of one value are tied). EKS names a managed group's Auto Scaling group
    ``eks-<node group name>-<uuid>`` (aws/containers-roadmap#1304; terraform-aws-eks#3007), so each
    expression matches its group's name between ``eks-`` and the id. A node group name is letters,
    digits, ``-`` and ``_`` (``NAME_RULES``), none special in a regular expression. The keys are
    strings: the chart renders them with ``int`` (``templates/priority-expander-configmap.yaml``)."""
    top = 10 * len(groups)
    return {str(top - 10 * i): [f"^eks-{group}-[0-9a-f-]+$"] for i, group in enumerate(groups)}


CAPACITY_LABEL = "eks.amazonaws.com/capacityType"
TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
"""Kubernetes' taint effects as the EKS API spells them."""
NODECONFIG_CONTENT_TYPE = "application/node.eks.aws"
ROOT_DEVICE = "/dev/xvda"
"""AL2023's root device."""

# --- reservations (nodeadm defaults on AL2023) -----------------------------------------------------
MAX_PODS = 110
"""The most pods pinned in a node's NodeConfig (``kubelet.config.maxPods``), so the memory
reservation that depends on it is known before the node exists (nodeadm's own fallback when it
lacks ENI data, and Kubernetes' recommended limit per node)."""


EPHEMERAL_RESERVED_MIB = 1024.0
MEMORY_EVICTION_MIB = 100.0
NODEFS_EVICTION_RATIO = 0.1


def memory_reserved_mib(max_pods: int = MAX_PODS) -> int:
    """nodeadm's kube-reserved memory: 11 MiB per pod + 255 MiB."""
    return 11 * max_pods + 255


def kube_reserved(vcpus: int, max_pods: int = MAX_PODS) -> dict[str, str]:
    """The ``kubeReserved`` fullserver writes into the NodeConfig: nodeadm's own defaults, pinned."""
    return {
        "cpu": f"{gke.cpu_reserved_m(vcpus)}m",
        "memory": f"{memory_reserved_mib(max_pods)}Mi",
        "ephemeral-storage": f"{int(EPHEMERAL_RESERVED_MIB)}Mi",
    }


def allocatable(
    vcpus: int, memory_gib: float, instance_store_gib: float, root_gib: float, max_pods: int = MAX_PODS
) -> gke.Allocatable:
    """An AL2023 node's allocatable: ephemeral storage on the instance-store RAID0 when there is
    one (nodeadm ``localStorage``), else on the root volume. The kernel's share of memory is
    estimated with the same Linux formula as GKE's (reserved.go) - an estimate on EC2."""
    physical = memory_gib * gke.GIB_MIB
    memory = physical - gke.kernel_reserved_mib(physical)
    ephemeral = (instance_store_gib or root_gib) * gke.GIB_MIB
    capacity = gke.NodeResources(vcpus * 1000, memory, ephemeral)
    reserved = gke.NodeResources(
        gke.cpu_reserved_m(vcpus),
        memory_reserved_mib(max_pods) + MEMORY_EVICTION_MIB,
        EPHEMERAL_RESERVED_MIB + NODEFS_EVICTION_RATIO * ephemeral,
    )
    return gke.Allocatable(capacity, reserved)


def gpu_only(req: Request) -> Refusal | None:
    """Neuron AMIs and device plugins are another path: EKS pools here are NVIDIA GPU groups."""
    if not req.shape.startswith(("trn", "inf")):
        return None
    return Refusal(
        "accelerator",
        "accelerator",
        f"{req.shape} is a Neuron instance; eks-gpu builds NVIDIA GPU node groups",
        "use aws-gpu for Trainium and Inferentia",
    )


SIZED_AS = {Platform.EKS_GPU: Platform.AWS_GPU}


RULES = PlatformRules(
    platform=Platform.EKS_GPU,
    short="eks-gpu",
    components="components.eks",
    order=70,
    core="fullserver.kube",
    policy_reader="policy.kube_nodes",
    provider="aws",
    accelerator_kinds=frozenset({AcceleratorKind.GPU}),
    pricing=frozenset({PricingModel.SPOT_WITH_FALLBACK, PricingModel.ON_DEMAND, PricingModel.RESERVED}),
    options={
        **{k: v for k, v in gke.KUBE_OPTIONS.items() if k != "flexStart"},
        "clusterIdentity": "a created EKS cluster's Pod Identity Agent or IAM OIDC provider (IRSA)",
        "nodeProvisioner": "Karpenter or the Cluster Autoscaler grows an EKS cluster's accelerator nodes",
        "subnets": "the subnets of an existing EKS cluster's VPC for the node groups",
        **GPU_SERVING,  # a LoadBalancer Service: an NLB through the AWS Load Balancer Controller
        "serving.certificateArn": "an ACM certificate for the Network Load Balancer's TLS listener",
    },
    lacks={
        "clusterLocation": "an EKS cluster lives in the stack's region (fullserver:region); it has no other location"
    },
    compact_placement=True,  # a cluster placement group in the launch template
    cluster_zones=CLUSTER_ZONES,  # a created cluster's own VPC (components.eks.network)
    network=EKS_NETWORK,
    disk_kinds=aws.DISKS,
    default_disk_kind="gp3",
    zone_form=aws.ZONES,
    region_peers=aws.REGION_PEERS,
    rules=(*CAPACITY_RULES, gpu_only, aws.data_disk_kind),
    quotas=quota.quotas,
    autostop=gke.pools_stop,
)


MIME_BOUNDARY = "==FULLSERVER=="


def node_config(*, raid0: bool, max_pods: int, kube_reserved: dict[str, str]) -> dict[str, object]:
    """The nodeadm ``NodeConfig`` fullserver adds to a managed node group's launch template: the
    pinned ``maxPods`` and ``kubeReserved`` (so allocatable is known), and the instance store as
    one RAID0 array for kubelet and containerd (``spec.instance.localStorage.strategy: RAID0``,
    mounted at ``/mnt/k8s-disks/``). EKS merges it with its own NodeConfig (cluster endpoint,
    CA), as the template names no AMI.

    ``kubeReserved`` carries all three of nodeadm's keys (cpu, memory, ephemeral-storage), so the
    result is ours however it merges: nodeadm merges NodeConfig documents key by key, later ones
    overriding (``nodeadm/internal/api/merge.go``, mergo ``WithOverride``), and writes the merged
    ``kubelet.config`` as the drop-in ``config.json.d/40-nodeadm.conf`` over its generated config
    (``internal/kubelet/config.go``, ``writeKubeletConfig``), which kubelet merges map by map:
    "Individual fields in maps ... can be selectively overridden" (kubernetes/website:
    docs/reference/node/kubelet-config-directory-merging.md). A partial map would have merged
    into nodeadm's defaults, not replaced them. ``maxPods``: the managed group's own NodeConfig
    sets it too (eksctl-io/eksctl#8037), and which document comes last is not documented; the
    pinned ``kubeReserved`` keeps allocatable as planned either way."""
    spec: dict[str, object] = {"kubelet": {"config": {"maxPods": max_pods, "kubeReserved": dict(kube_reserved)}}}
    if raid0:
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}


def user_data(config: dict[str, object]) -> str:
    """A launch template's user data: MIME multi-part, the NodeConfig as its
    ``application/node.eks.aws`` part (JSON, which nodeadm's YAML reader takes)."""
    return "\r\n".join(
        [
            "MIME-Version: 1.0",
            f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"',
            "",
            f"--{MIME_BOUNDARY}",
            f"Content-Type: {NODECONFIG_CONTENT_TYPE}",
            "",
            json.dumps(config, indent=2, sort_keys=True),
            "",
            f"--{MIME_BOUNDARY}--",
            "",
        ]
    )


PLATFORMS = (RULES,)
"""What this module registers (``fullserver.platforms`` finds every module's)."""
