"""EKS as a member of the node-pool family: its ``PoolRules`` (``fullserver.platforms.pool_rules``).

What the family's core (``fullserver.kube``) asks of an EKS managed node group and its cluster: the
EKS facts themselves (names, AMI types, nodeadm's reservations) are ``fullserver.platforms.eks``'s;
here they are put together as the answers, with what an attached cluster must already run and what
EKS's serving load balancer, secrets and metrics are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fullserver.platforms import eks
from fullserver.platforms.base import Refusal
from fullserver.platforms.gke_reserved import Allocatable
from fullserver.platforms.pool_rules import ClassMember, FabricPod, GpuNodes, PoolRules, SpotFirst, pinned_pods

if TYPE_CHECKING:
    from fullserver.platforms.reads import TlsReads


def gpu_nodes(machine_type: str, accelerator: str | None) -> GpuNodes | Refusal:
    """The accelerated AL2023 AMI (``eks.GPU_AMI_TYPE``), the pinned ``maxPods``; no selector: a
    spot group may run any of its instance types, so the environment's label selects it."""
    return GpuNodes(driver=eks.GPU_AMI_TYPE, resource=eks.GPU_RESOURCE, taint=eks.GPU_TAINT, max_pods=eks.MAX_PODS)


def allocatable(
    vcpus: int, memory_gib: float, disks: int, disk_gib: float, boot_gib: float, pods: int | None
) -> Allocatable:
    """nodeadm's reservations at the ``maxPods`` pinned for the node (``pinned_pods``); ephemeral
    storage on the instance-store RAID0, else the root volume."""
    return eks.allocatable(vcpus, memory_gib, disks * disk_gib, boot_gib, pinned_pods(eks.MAX_PODS, pods))


def kube_reserved(vcpus: int, pods: int | None) -> dict[str, str]:
    """The ``kubeReserved`` pinned beside the node's ``maxPods`` (``pinned_pods``)."""
    return eks.kube_reserved(vcpus, pinned_pods(eks.MAX_PODS, pods))


def system_pool(zone: str | None) -> tuple[str, int]:
    """The system node group's size, whatever the zones."""
    return eks.SYSTEM_INSTANCE_TYPE, eks.SYSTEM_NODES


def credentials_hint(cluster: str, location: str, region: str, project: str | None, dns: bool = False) -> str:
    return f"run `{connect(cluster, location, region, project or '', dns)}`, or pass --kubeconfig / --context"


def connect(cluster: str, location: str, region: str, project: str, dns: bool) -> str:
    """``aws eks update-kubeconfig``: one endpoint name, public or private as the cluster has it."""
    return f"aws eks update-kubeconfig --name {cluster} --region {region}"


API_RANGES_MAX = 40
"""EKS "Public endpoint CIDR ranges per cluster": 40, not adjustable (EKS user guide, service
quotas, quota L-93A74D60: https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html)."""
API_WITHOUT_RANGES = "private endpoint only (inside its VPC; no fullserver:controlPlaneSourceRanges)"
"""A created cluster without ``controlPlaneSourceRanges``: ``endpoint_public_access = false`` beside
``endpoint_private_access = true`` (EKS user guide, "Cluster API server endpoint"): nothing outside
the VPC reaches the API, where EKS's default public endpoint admits 0.0.0.0/0."""
APPLIED_THROUGH_API = (
    "NVIDIA's device plugin",
    "the Cluster Autoscaler or Karpenter (fullserver:nodeProvisioner)",
    "AWS's EFA device plugin (EFA nodes)",
    "the AWS Load Balancer Controller (serving)",
)
"""The Helm releases ``components.eks`` installs on a created cluster through its API
(``_created_cluster_charts``): the last two only where they apply."""


EKS_ATTACHED_PLUGIN = (
    "the existing EKS cluster must already run NVIDIA's device plugin (the AL2023 NVIDIA AMI does not): "
    "without it no pod requesting nvidia.com/gpu schedules; fullserver installs it only on clusters it creates"
)
"""AL2023 NVIDIA AMIs need the plugin installed (EKS user guide, "Install Kubernetes device plugin for GPUs")."""
EKS_ATTACHED_EBS_CSI = (
    "the existing EKS cluster must already run the Amazon EBS CSI driver (EKS add-on aws-ebs-csi-driver): without "
    "it the workload pods' data volumes stay Pending; fullserver installs it only on clusters it creates"
)
"""EKS user guide, "Amazon EBS CSI driver" (add-ons-aws-ebs-csi-driver): an add-on, not on a new cluster."""
EKS_ATTACHED_LB_CONTROLLER = (
    "the existing EKS cluster must already run the AWS Load Balancer Controller, and its subnets carry "
    "kubernetes.io/role/elb (public) or kubernetes.io/role/internal-elb (private): without them the serving "
    "Service gets no Network Load Balancer; fullserver installs the controller only on clusters it creates"
)
"""EKS user guide, "Route TCP and UDP traffic with Network Load Balancers": the controller must be
installed; its subnet discovery reads those tags (``eks.PUBLIC_SUBNET_TAGS``)."""
EKS_ATTACHED_METRICS_SERVER = (
    "the existing EKS cluster must run the Kubernetes Metrics Server (EKS add-on metrics-server) for the "
    "serving HPA's CPU metric; fullserver installs it only on clusters it creates"
)
"""EKS user guide, "View resource usage with the Kubernetes Metrics Server": not deployed by default."""


EFA_POD = FabricPod(
    resource=eks.EFA_RESOURCE,
    hugepages_resource=eks.EFA_HUGEPAGES_RESOURCE,
    pod_hugepages=eks.EFA_POD_HUGEPAGES,
    preallocated_mib=eks.EFA_PREALLOCATED_HUGEPAGES_MIB,
    attached_needs=eks.EFA_ATTACHED_PLUGIN,
)
"""Each pod takes every EFA interface of its node and the huge pages of AWS's NCCL example."""


def _priorities(members: Sequence[ClassMember]) -> str:
    groups = [m.pool for m in members if m.pool is not None]
    return "; ".join(f"{k}: {v[0]}" for k, v in eks.expander_priorities(groups).items())


def _steps(members: Sequence[ClassMember]) -> str:
    return "; ".join(f"{i}. {m.label}" for i, m in enumerate(members, 1))


def spot_first_line(members: Sequence[ClassMember]) -> str:
    """The expander orders the groups; within the spot group EC2 picks among its instance types."""
    return (
        f"on a stockout the Cluster Autoscaler tries, in order: {_steps(members)}; then nothing (the pods wait): "
        f"its --expander={eks.EXPANDER} with the cluster-autoscaler-priority-expander ConfigMap ({_priorities(members)})"
    )


def spot_first_attached(members: Sequence[ClassMember]) -> str:
    first, last = members[0].pool, members[-1].pool
    return (
        f"the existing EKS cluster must grow {first} before {last}: its Cluster Autoscaler with "
        f"--expander={eks.EXPANDER} and a cluster-autoscaler-priority-expander ConfigMap in its namespace giving "
        f"{_priorities(members)}, or Karpenter with a NodePool whose requirements allow these instance types as "
        f"spot and on-demand (karpenter.sh/capacity-type); otherwise it may grow {last} as often as {first} and "
        "the profile's spot share the plan prices does not hold"
    )


SPOT_FIRST = SpotFirst(line=spot_first_line, attached_needs=spot_first_attached)
"""Equal spot and on-demand groups look alike to the Cluster Autoscaler's default expander
(least-waste since 2025, random before: its FAQ), so the priority expander names the spot group first."""


def volume_parameters(kind: str, iops: int | None, mbps: int | None) -> dict[str, str]:
    """``type: gp3`` with ``iops``, ``throughput`` and ``encrypted`` (kubernetes-sigs/aws-ebs-csi-driver
    ``docs/parameters.md``)."""
    params = {"type": kind, "encrypted": "true"}
    if iops:
        params["iops"] = str(iops)
    if mbps:
        params["throughput"] = str(mbps)
    return params


AWS = "service.beta.kubernetes.io/aws-load-balancer-"
EKS_SCHEMES = {"external": "internet-facing", "internal": "internal"}
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
"""The NLB's TLS negotiation policy: the one the VM path's ALB takes (``components.aws.serving``,
which cites the ELB guide's recommendation of TLS 1.3 with 1.2)."""
NLB_TCP_IDLE_SECONDS = (60, 6000)
"""The range of an NLB TCP listener's ``tcp.idle_timeout.seconds`` (default 350 s); a TLS listener's
is 350 s and "can't be modified" (ELB guide, "Update the TCP idle timeout for your Network Load
Balancer listener")."""


def nlb_idle_seconds(request_timeout_seconds: int) -> int:
    """The plain listener's idle timeout: a request that writes nothing for up to the request timeout
    (a long generation without streaming) keeps its connection, as the VM path's ALB does."""
    low, high = NLB_TCP_IDLE_SECONDS
    return max(low, min(request_timeout_seconds, high))


def service_annotations(
    scheme: str, health_path: str, tls: TlsReads | None, request_timeout_seconds: int, lb_port: int
) -> dict[str, str]:
    """The AWS Load Balancer Controller's NLB (``fullserver.kube.serve``), and with
    ``serving.certificateArn`` its TLS listener (``ssl-cert``, ``ssl-ports``,
    ``ssl-negotiation-policy``: the controller's annotations for a TLS listener on those ports);
    without it the plain TCP listener's idle timeout (``listener-attributes.TCP-<port>``, the
    controller's v3.5.0 annotations.md: ``tcp.idle_timeout.seconds=400``) at ``nlb_idle_seconds``."""
    out = {
        f"{AWS}type": "external",
        f"{AWS}nlb-target-type": "ip",
        f"{AWS}scheme": EKS_SCHEMES[scheme],
        f"{AWS}healthcheck-protocol": "http",
        f"{AWS}healthcheck-path": health_path,
        f"{AWS}healthcheck-port": "traffic-port",
    }
    if tls is not None and tls.certificate_arn:
        out |= {
            f"{AWS}ssl-cert": tls.certificate_arn,
            f"{AWS}ssl-ports": str(tls.port),
            f"{AWS}ssl-negotiation-policy": TLS_POLICY,
        }
    elif request_timeout_seconds:
        idle = nlb_idle_seconds(request_timeout_seconds)
        out[f"{AWS}listener-attributes.TCP-{lb_port}"] = f"tcp.idle_timeout.seconds={idle}"
    return out


POD_METRIC_EKS = "vllm_num_requests_waiting"
"""The queue-size gauge as prometheus-adapter exposes it with the rule docs/kubernetes.md gives (a
custom metric name cannot carry vLLM's colon). EKS offers no adapter of its own."""


def delete_volume(handle: str, region: str) -> str:
    """The EBS CSI driver's handle is the volume's id (``vol-...``)."""
    return f"aws ec2 delete-volume --volume-id {handle} --region {region}"


def read_secret(region: str, secret: str) -> list[str]:
    """An SSM SecureString parameter (a name without a leading ``/`` and with one inside gets one)."""
    name = secret if secret.startswith("/") or "/" not in secret else f"/{secret}"
    query = ["--query", "Parameter.Value", "--output", "text"]
    return ["aws", "ssm", "get-parameter", "--region", region, "--name", name, "--with-decryption", *query]


POOL_RULES = PoolRules(
    key="eks",
    sized_as=eks.SIZED_AS,
    cluster_type=eks.CLUSTER_TYPE,
    pool_type=eks.NODE_GROUP_TYPE,
    pool_name_field="nodeGroupName",
    spot_label=eks.CAPACITY_LABEL,
    spot_value="SPOT",
    gpu_nodes=gpu_nodes,
    allocatable=allocatable,
    instance_store_raid0=True,
    efa=True,
    fabric_pod=EFA_POD,
    spot_first=SPOT_FIRST,
    spot_alternatives=True,
    kube_reserved=kube_reserved,
    system_pool=system_pool,
    system_disk=(eks.SYSTEM_DISK_KIND, eks.SYSTEM_DISK_GIB),
    fee_note="EKS cluster fee {usd_hour:.2f}/h on standard support",
    credentials_hint=credentials_hint,
    connect=connect,
    api_ranges_max=API_RANGES_MAX,
    api_without_ranges=API_WITHOUT_RANGES,
    applied_through_api=APPLIED_THROUGH_API,
    attached_needs=(EKS_ATTACHED_PLUGIN,),
    attached_volume_needs=EKS_ATTACHED_EBS_CSI,
    attached_autoscaler=eks.ATTACHED_AUTOSCALER,
    attached_load_balancer=EKS_ATTACHED_LB_CONTROLLER,
    attached_metrics_server=EKS_ATTACHED_METRICS_SERVER,
    volume_provisioner="ebs.csi.aws.com",
    volume_parameters=volume_parameters,
    delete_volume=delete_volume,
    service_annotations=service_annotations,
    pod_metric=POD_METRIC_EKS,
    pod_metrics_install=(
        "Prometheus scraping the pods' prometheus.io/* annotations and prometheus-adapter with a rule exposing "
        f"vllm:num_requests_waiting as {POD_METRIC_EKS} (docs/kubernetes.md, Serving)"
    ),
    read_secret=read_secret,
)
"""What this module registers (``fullserver.platforms`` finds every module's ``POOL_RULES``)."""
