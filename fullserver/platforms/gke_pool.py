"""GKE as a member of the node-pool family: its ``PoolRules`` (``fullserver.platforms.pool_rules``).

What the family's core (``fullserver.kube``) asks of a GKE pool and its cluster: the GKE facts
themselves (names, labels, TPU vocabulary, reservations) are ``fullserver.platforms.gke``'s; here
they are put together as the answers, with what GKE's serving load balancer, secrets and metrics
are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fullserver.platform import Platform
from fullserver.platforms import gcp, gke, gke_gateway
from fullserver.platforms.base import Refusal
from fullserver.platforms.gke_reserved import Allocatable
from fullserver.platforms.pool_rules import (
    ClassMember,
    EndpointRecords,
    GpuNodes,
    PoolNodes,
    PoolRules,
    SpotFirst,
    TlsFront,
)

if TYPE_CHECKING:
    from fullserver.platforms.reads import TlsReads


def gpu_nodes(machine_type: str, accelerator: str | None) -> GpuNodes | Refusal:
    """GKE's driver (``gpu_driver_version``) and the pool's guest accelerator type, which the
    node selector also picks (``cloud.google.com/gke-accelerator``)."""
    accelerator_type = gke.guest_accelerator(machine_type, accelerator)
    if accelerator_type is None:
        return Refusal("accelerator", "accelerator", f"{machine_type} has no GKE accelerator type here", "use gcp-gpu")
    return GpuNodes(
        driver=gke.GPU_DRIVER,
        resource=gke.GPU_RESOURCE,
        taint=gke.GPU_TAINT,
        accelerator_type=accelerator_type,
        node_selector={gke.ACCELERATOR_LABEL: accelerator_type},
    )


def tpu_nodes(accelerator_type: str, chips: int, hosts: int, topology: str) -> PoolNodes | Refusal:
    """A TPU slice's pool: one node per slice host on the slice's ``ct*`` machine type."""
    shape = gke.tpu_pool_shape(accelerator_type, chips, hosts, topology)
    if shape is None:
        return Refusal(
            "accelerator",
            "tpu.accelerator_type",
            f"{accelerator_type} has no GKE TPU machine type here",
            "use a v5litepod-, v5p- or v6e- type",
        )
    return PoolNodes(
        machine_type=shape.machine_type,
        per_node=shape.chips_per_node,
        resource=gke.TPU_RESOURCE,
        hosts=shape.nodes,
        taint=gke.TPU_TAINT,
        node_selector={gke.TPU_ACCELERATOR_LABEL: shape.accelerator_label, gke.TPU_TOPOLOGY_LABEL: shape.topology},
        driver="",
        tpu_topology=shape.topology if shape.multi_host else None,
        tpu_label=shape.accelerator_label,
        slice_topology=shape.topology,
        compact=shape.multi_host,
        max_pods=gke.MULTI_HOST_MAX_PODS if shape.multi_host else None,
    )


def allocatable(
    vcpus: int, memory_gib: float, local_ssds: int, local_ssd_gib: float, boot_gib: float, pods: int | None
) -> Allocatable:
    """GKE's reservations; ephemeral storage on the local SSDs, else the boot disk (the SSDs' count
    sets their filesystem overhead, not their size). GKE reserves by the machine's size, not its
    pods, so ``pods`` is not read."""
    return gke.allocatable(vcpus, memory_gib, local_ssds, boot_gib)


def gpu_nic_gap(platform: Platform, machine_type: str, nodes: int) -> list[str]:
    """A GKE GPU pool gets none of the GPU NICs its machine's VMs talk over (``gcp.gpu_nic_plan``)."""
    nics = gcp.gpu_nic_plan(machine_type, nodes) if platform is Platform.GKE_GPU else None
    if nics is None:
        return []
    return [
        f"{nodes} {machine_type} nodes talk over {nics.fabric} on the VMs; this GKE pool gets no "
        f"GPU NICs ({nics.gpu_nics} additional networks), so multi-node traffic goes over the primary NIC"
    ]


def fixed_nodes(total: int, zones: int | None) -> int:
    """The nodes a fixed pool builds: ``node_count`` is per zone (``gke.fixed_pool_nodes``)."""
    return gke.fixed_pool_nodes(total, zones)[1]


def unzoned_fixed(pool: str, built: int, planned: int) -> str:
    """A fixed pool without a zone runs ``built`` nodes over the region's default zones."""
    which = f"the fixed GKE pool {pool}" if pool else "this fixed GKE pool"
    return (
        f"no zone for {which}: node_count is per zone, so it runs {built} nodes over the region's "
        f"{gke.REGIONAL_DEFAULT_ZONES} zones for the {planned} planned (priced so); set fullserver:zone to pin it"
    )


def system_pool(zone: str | None) -> tuple[str, int]:
    """``gke.SYSTEM_POOL_NODES_PER_ZONE`` in each zone of the pool: one zone when the plan has one,
    else the regional default."""
    zones = 1 if zone else gke.REGIONAL_DEFAULT_ZONES
    return gke.SYSTEM_POOL_MACHINE_TYPE, gke.SYSTEM_POOL_NODES_PER_ZONE * zones


def credentials_hint(cluster: str, location: str, region: str, project: str | None, dns: bool = False) -> str:
    return f"run `{get_credentials(cluster, location, project or 'PROJECT', dns)}`, or pass --kubeconfig / --context"


def connect(cluster: str, location: str, region: str, project: str, dns: bool) -> str:
    return get_credentials(cluster, location, project, dns)


def get_credentials(cluster: str, location: str, project: str, dns: bool) -> str:
    """``gcloud container clusters get-credentials``; ``dns``: through the cluster's DNS endpoint
    (``--dns-endpoint``, gcloud reference for the command), the way in of a cluster without ranges."""
    flag = " --dns-endpoint" if dns else ""
    return f"gcloud container clusters get-credentials {cluster} --location {location} --project {project}{flag}"


API_RANGES_MAX = 50
"""``master_authorized_networks_config.cidr_blocks``: "up to 50" (Container API v1
``MasterAuthorizedNetworksConfig.cidr_blocks``, https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters)."""
API_WITHOUT_RANGES = (
    "private IP endpoint + DNS endpoint with IAM (container.clusters.connect; no address range admitted)"
)
"""A created cluster without ``controlPlaneSourceRanges``: the IP endpoint private
(``private_cluster_config.enable_private_endpoint``) and the DNS-based endpoint open to external
traffic (``control_plane_endpoints_config.dns_endpoint_config.allow_external_traffic``), which
Google recommends: reachable from any network that reaches Google APIs, every request checked
against IAM before the API server sees it (GKE "About network isolation", capacity.md section 8)."""


GKE_ATTACHED_PD_CSI = (
    "the existing GKE cluster must have the Compute Engine persistent disk CSI driver enabled "
    "(GcePersistentDiskCsiDriver): without it the workload pods' data volumes stay Pending"
)
"""GKE "Using the Compute Engine persistent disk CSI Driver": "In Standard clusters, you must enable" it."""


def volume_parameters(kind: str, iops: int | None, mbps: int | None) -> dict[str, str]:
    """``type`` the disk kind; Hyperdisk kinds take ``provisioned-iops-on-create`` and
    ``provisioned-throughput-on-create`` (``fullserver.kube.volume``)."""
    params = {"type": kind}
    if kind.startswith("hyperdisk"):
        if iops:
            params["provisioned-iops-on-create"] = str(iops)
        if mbps:
            params["provisioned-throughput-on-create"] = f"{mbps}Mi"
    return params


GKE_EXTERNAL = {"cloud.google.com/l4-rbs": "enabled"}
GKE_INTERNAL = {"networking.gke.io/load-balancer-type": "Internal"}


def service_annotations(
    scheme: str, health_path: str, tls: TlsReads | None, request_timeout_seconds: int, lb_port: int
) -> dict[str, str]:
    """A backend-service-based external passthrough NLB, or an internal one (``fullserver.kube.serve``)."""
    return dict(GKE_INTERNAL if scheme == "internal" else GKE_EXTERNAL)


POD_METRIC_GKE = "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"
"""The queue-size gauge as the Custom Metrics Stackdriver Adapter names a Managed Service for
Prometheus metric (``prometheus.googleapis.com|<metric>|<kind>``, GKE "Configure autoscaling for LLM
workloads on GPUs")."""
METRICS_INSTALL = (
    "Managed Service for Prometheus (on by default on GKE) and the Custom Metrics Stackdriver Adapter "
    "(kubectl apply -f https://raw.githubusercontent.com/GoogleCloudPlatform/k8s-stackdriver/master/"
    "custom-metrics-stackdriver-adapter/deploy/production/adapter_new_resource_model.yaml) with the Monitoring "
    "Viewer role for its Kubernetes service account (gcloud projects add-iam-policy-binding projects/<project> "
    "--role roles/monitoring.viewer --member=principal://iam.googleapis.com/projects/<project number>/locations/"
    "global/workloadIdentityPools/<project>.svc.id.goog/subject/ns/custom-metrics/sa/"
    "custom-metrics-stackdriver-adapter)"
)
"""The adapter reads Cloud Monitoring through Workload Identity Federation, so its service account
needs Monitoring Viewer (GKE "Serve an LLM using TPUs on GKE with vLLM", "Set up the Custom Metrics
Stackdriver Adapter": add-iam-policy-binding ... roles/monitoring.viewer)."""


def pod_monitoring(name: str, labels: dict[str, str], selector: dict[str, str], port: str) -> dict[str, Any]:
    """Managed Service for Prometheus scrapes the model server's ``/metrics`` every 15 s (the
    ``PodMonitoring`` of GKE "Configure autoscaling for LLM workloads on GPUs")."""
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"selector": {"matchLabels": selector}, "endpoints": [{"port": port, "interval": "15s"}]},
    }


COMPUTE_CLASS_REFERENCE = "https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass"
"""Google's ComputeClass CRD reference: every field the class below sets is read there (and its
JSON schema, ``tests/data/crds/computeclass.schema.json``, written from it)."""


def class_rules(member: ClassMember) -> list[dict[str, Any]]:
    """A member's priority rules: a pool the stack builds is named (``nodepools``, its nodes carry
    the class's label and taint); a shape of the balanced set without one is one rule per machine
    type (``machineType``, ``gpu`` {``type``, ``count``}, ``spot``), which GKE's node pool
    auto-creation serves (the reference's ``priorities[]`` fields)."""
    if member.pool is not None:
        return [{"nodepools": [member.pool]}]
    gpu = {"gpu": {"type": member.gpu_type, "count": member.gpu_count}} if member.gpu_type else {}
    return [{"machineType": t, **gpu, "spot": member.spot} for t in member.machine_types]


def compute_class(name: str, members: Sequence[ClassMember], labels: dict[str, str]) -> dict[str, Any]:
    """The custom ComputeClass that hands GKE the fallback in the cost model's order
    (``capacity_order``: spot first, then the on-demand pool, then the rest of the set), GKE trying
    each rule in turn when a scale-up of the one before fails (``COMPUTE_CLASS_REFERENCE``).
    ``whenUnsatisfiable: DoNotScaleUp``, said explicitly: when every rule is out the pods wait, never
    on a machine outside the set. ``nodePoolAutoCreation`` only where a member has no pool of the
    stack's to name."""
    auto = any(m.pool is None for m in members)
    return {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "priorities": [rule for m in members for rule in class_rules(m)],
            "whenUnsatisfiable": "DoNotScaleUp",
            "nodePoolAutoCreation": {"enabled": auto},
        },
    }


def _steps(members: Sequence[ClassMember]) -> str:
    return "; ".join(f"{i}. {m.label}" for i, m in enumerate(members, 1))


def spot_first_line(members: Sequence[ClassMember]) -> str:
    return (
        f"on a stockout GKE tries, in order: {_steps(members)}; then nothing (whenUnsatisfiable DoNotScaleUp: "
        "the pods wait): a custom ComputeClass the pods select, its priorities in this order"
    )


def spot_first_attached(members: Sequence[ClassMember]) -> str:
    first, last = (m.pool or m.label for m in (members[0], members[-1]))
    return (
        f"the existing GKE cluster must run GKE {gke.COMPUTE_CLASS_MIN_VERSION} or later for the ComputeClass that "
        f"tries {first} before {last}: on an older one the workload's manifests do not apply"
    )


SPOT_FIRST = SpotFirst(
    line=spot_first_line,
    attached_needs=spot_first_attached,
    class_label=gke.COMPUTE_CLASS_LABEL,
    compute_class=compute_class,
)
"""Two autoscaled pools of one machine type look alike to GKE's autoscaler; a ComputeClass orders them."""


def delete_volume(handle: str, region: str) -> str:
    """The PD CSI driver's handle is ``projects/P/zones/Z/disks/D`` (``regions/R`` for a regional disk)."""
    parts = handle.split("/")
    if len(parts) == 6 and parts[0] == "projects" and parts[2] in ("zones", "regions") and parts[4] == "disks":
        where = "--zone" if parts[2] == "zones" else "--region"
        return f"gcloud compute disks delete {parts[5]} {where} {parts[3]} --project {parts[1]} --quiet"
    return f"gcloud compute disks delete {handle}"  # no --quiet: gcloud asks for the zone


def delete_endpoint_group(self_link: str) -> str:
    """A NEG's self link ends ``projects/P/zones/Z/networkEndpointGroups/N``."""
    parts = self_link.split("/")[-6:]
    if len(parts) == 6 and parts[0] == "projects" and parts[2] == "zones" and parts[4] == "networkEndpointGroups":
        return (
            f"gcloud compute network-endpoint-groups delete {parts[5]} --zone {parts[3]} --project {parts[1]} --quiet"
        )
    return f"gcloud compute network-endpoint-groups delete {self_link}"  # no --quiet: gcloud asks for the zone


NEG_RECORDS = EndpointRecords(
    group="networking.gke.io",
    version="v1beta1",
    plural="servicenetworkendpointgroups",
    service_label="networking.gke.io/service-name",
    delete=delete_endpoint_group,
)
"""GKE's NEG controller keeps one ``ServiceNetworkEndpointGroup`` per Service port until it has deleted
the NEGs (ingress-gce, ``pkg/apis/svcneg``); GKE's "standalone NEGs" page: a cluster deleted before
the controller deletes them leaves the NEGs behind."""


def read_secret(region: str, secret: str) -> list[str]:
    """A Secret Manager secret's latest version."""
    return ["gcloud", "secrets", "versions", "access", "latest", f"--secret={secret}"]


POOL_RULES = PoolRules(
    key="gke",
    sized_as=gke.SIZED_AS,
    cluster_type=gke.CLUSTER_TYPE,
    pool_type=gke.NODE_POOL_TYPE,
    pool_name_field="name",
    spot_label=gke.SPOT_LABEL,
    spot_value="true",
    gpu_nodes=gpu_nodes,
    tpu_nodes=tpu_nodes,
    allocatable=allocatable,
    local_ssd_ephemeral=frozenset({Platform.GKE_GPU}),  # ephemeral_storage_local_ssd_config
    vm_gaps=gpu_nic_gap,
    fixed_nodes=fixed_nodes,
    unzoned_fixed=unzoned_fixed,
    flex_start_warnings=gke.flex_start_warnings,
    spot_first=SPOT_FIRST,
    system_pool=system_pool,
    system_disk=(gke.SYSTEM_POOL_DISK_KIND, gke.SYSTEM_POOL_DISK_GIB),
    fee_note=(
        "GKE cluster fee {usd_hour:.2f}/h; the free tier's {free_tier:.2f}/month credit "
        "applies to {applies_to} clusters only, not this regional one"
    ),
    credentials_hint=credentials_hint,
    connect=connect,
    api_ranges_max=API_RANGES_MAX,
    api_without_ranges=API_WITHOUT_RANGES,
    dns_endpoint=True,
    attached_volume_needs=GKE_ATTACHED_PD_CSI,
    volume_provisioner="pd.csi.storage.gke.io",
    volume_parameters=volume_parameters,
    delete_volume=delete_volume,
    endpoint_records=NEG_RECORDS,
    service_annotations=service_annotations,
    # One pod per node: the load balancer's health check (kube-proxy's per-node check) sends traffic
    # only to nodes with a ready model server, never through the system pool.
    service_spec={"externalTrafficPolicy": "Local"},
    pod_metric=POD_METRIC_GKE,
    pod_metrics_install=METRICS_INSTALL,
    pod_monitoring=pod_monitoring,
    read_secret=read_secret,
    tls_front=TlsFront(gke_gateway.front, gke_gateway.fronted_service, gke_gateway.ATTACHED_GATEWAY),
)
"""What this module registers (``fullserver.platforms`` finds every module's ``POOL_RULES``)."""
