"""Compute Engine GPU VMs (``gcp-gpu``): everything fullserver knows about them.

Sources (Google Cloud documentation): "Persistent Disk" and "About Hyperdisk Balanced" (disk
kinds and limits), "GPU machine types" (A3/A4 attach Hyperdisk only; N1 takes attached GPUs),
"About local SSDs" (375 GiB each), "Configure per VM Tier_1 networking performance",
"Networking and GPU machines" and the A3/A4 GPUDirect guides (GPU NICs), VPC "Maximum
transmission unit" and "RDMA network profiles", "Using IAP for TCP forwarding", Cloud Load
Balancing "Health checks overview", "Regions and zones".
"""

from __future__ import annotations

import json
import re

from fullserver.baremetal.keys import KNOWN_KEY_TYPES, parse_key_line
from fullserver.errors import InputError
from fullserver.nodes import NodeAccess, NodeGroupAccess
from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms.base import (
    CAPACITY_RULES,
    CLOUD_LOGIN,
    GPU_SERVING,
    RFC1035,
    DiskKind,
    DiskLimits,
    NameRule,
    PlatformRules,
    Refusal,
    Request,
    ZoneForm,
    disk_kind_refusal,
)
from fullserver.platforms.gcp_autostop import autostop
from fullserver.platforms.gcp_capacity import capacity_steps
from fullserver.platforms.gcp_gpu_nics import GPU_NIC_PLANS as GPU_NIC_PLANS
from fullserver.platforms.gcp_gpu_nics import GpuNicPlan as GpuNicPlan
from fullserver.platforms.gcp_gpu_nics import gpu_nic_plan as gpu_nic_plan
from fullserver.platforms.gcp_gpu_nics import gpu_nic_refusal as gpu_nic_refusal
from fullserver.platforms.network.gcp import LOAD_BALANCER as LOAD_BALANCER
from fullserver.platforms.network.gcp import LOAD_BALANCER_SCHEMES as LOAD_BALANCER_SCHEMES
from fullserver.platforms.network.gcp import NETWORK as NETWORK
from fullserver.platforms.network.gcp import machine_vcpus as machine_vcpus
from fullserver.platforms.network.gcp import tier1_eligible as tier1_eligible
from fullserver.platforms.project import CloudProject
from fullserver.platforms.quota import gcp as quota

# --- names ---------------------------------------------------------------------------------------
# Compute Engine names are lowercase RFC 1035 labels of at most 63 characters ("Resource naming
# convention"); pulumi-gcp autonames them (logical name, "-", seven hex characters) without
# shortening, and lowercases only the names of _LOWERCASED types (provider/resources.go,
# lowercaseAutoName), so a stack named "Team_ML.v2", or one over about 45 characters, fails. A
# managed instance group's baseInstanceName leaves room for the "-xxxx" it appends (58); a service
# account id is 6-30 characters (IAM "Creating service accounts").
_COMPUTE = (
    "network", "subnetwork", "firewall", "router", "routerNat", "address", "globalAddress", "instance",
    "instanceTemplate", "regionInstanceTemplate", "instanceGroupManager", "regionInstanceGroupManager",
    "autoscaler", "regionAutoscaler", "healthCheck", "regionHealthCheck", "backendService",
    "regionBackendService", "forwardingRule", "globalForwardingRule", "targetHttpProxy",
    "targetHttpsProxy", "uRLMap", "disk", "regionDisk", "resourcePolicy", "managedSslCertificate",
    "securityPolicy", "sSLPolicy",
)  # fmt: skip


def _token(resource: str) -> str:
    return f"gcp:compute/{resource}:{resource[0].upper()}{resource[1:]}"


_LOWERCASED = (
    "network", "subnetwork", "router", "routerNat", "backendService", "targetHttpProxy", "targetHttpsProxy",
    "uRLMap", "securityPolicy",
)  # fmt: skip


def compute_name(
    what: str, max_len: int = 63, field: str = "name", autoname: bool = True, lowercases: bool = False
) -> NameRule:
    """A Compute Engine (or Cloud TPU) resource name's rule."""
    return NameRule(
        what, max_len, *RFC1035, "Compute Engine naming", field=field, autoname=autoname, lowercases=lowercases
    )


_MIGS = ("instanceGroupManager", "regionInstanceGroupManager")
_BASE_INSTANCE_NAME = compute_name("baseInstanceName", 58, "baseInstanceName", autoname=False)

NAME_RULES: dict[str, tuple[NameRule, ...]] = {
    **{
        _token(r): (
            compute_name(f"{r} name", lowercases=r in _LOWERCASED),
            *((_BASE_INSTANCE_NAME,) if r in _MIGS else ()),
        )
        for r in _COMPUTE
    },
    "gcp:projects/iAMCustomRole:IAMCustomRole": (
        NameRule(
            "custom role id",
            64,
            "a-zA-Z0-9_.",
            "a-zA-Z0-9_.",
            "a-zA-Z0-9_.",
            "IAM custom roles",
            min_len=3,
            field="roleId",
            autoname=False,
        ),
    ),
    "gcp:serviceaccount/account:Account": (
        NameRule(
            "service account id", 30, *RFC1035, "IAM service accounts", min_len=6, field="accountId", autoname=False
        ),
    ),
}

# --- disks -------------------------------------------------------------------------------------

# pd-balanced and pd-ssd scale performance with size (nothing to provision), up to 64 TiB.
# Hyperdisk Balanced provisions IOPS/throughput: 3,000-160,000 IOPS, at most 500 IOPS per GiB;
# 140-2,400 MiB/s; up to 64 TiB.
PD_BALANCED = DiskKind("pd-balanced", 65_536)
PD_SSD = DiskKind("pd-ssd", 65_536)
HYPERDISK_BALANCED = DiskKind("hyperdisk-balanced", 65_536, DiskLimits(3_000, 160_000, 500, 140, 2_400, None))
DISKS = {k.name: k for k in (PD_BALANCED, PD_SSD, HYPERDISK_BALANCED)}
"""Compute Engine disk kinds; TPU VMs attach the same ones (``fullserver.platforms.tpu``)."""

DATA_DISK_KINDS = ("pd-balanced", "pd-ssd", "hyperdisk-balanced")
HYPERDISK_ONLY = (r"^(a3|a4)", "hyperdisk-balanced")
"""A3 and A4 machine types attach Hyperdisk only; older series use pd-balanced."""

LOCAL_SSD_GIB = 375.0
"""One local SSD partition (NVMe), fixed by Compute Engine."""
DEFAULT_BOOT_DISK_GIB = 10.0
"""The boot disk an instance gets when its initializeParams name no size."""


def machine_series(machine_type: str) -> str:
    """A machine type's series, its name without the size (``a3-highgpu-8g`` -> ``a3-highgpu``,
    ``g2-standard-12`` -> ``g2-standard``): Compute Engine offers a series' sizes in the same zones."""
    return machine_type.rsplit("-", 1)[0]


UNSET_DISK_KIND = "pd-standard"
"""The kind Compute Engine creates when a disk, or an instance's boot disk, names none (the
Compute API's ``AttachedDiskInitializeParams.diskType`` and ``Disk.type`` defaults)."""

# Stable device names in the guest (/dev/disk/by-id): local SSDs on NVMe, and the data disk
# attached with device name "data".
LOCAL_SSD_DEVICES = "/dev/disk/by-id/google-local-nvme-ssd-*"
DATA_DEVICE = "/dev/disk/by-id/google-data"

# --- GPUs and networking -----------------------------------------------------------------------

ATTACHED_GPU_TYPES = {
    # GPU model -> the accelerator type attached to an N1 host ("GPU platforms").
    "T4": "nvidia-tesla-t4",
    "V100-16GB": "nvidia-tesla-v100",
    "P4": "nvidia-tesla-p4",
    "P100": "nvidia-tesla-p100",
}


MAX_MTU = 8896
"""The largest MTU a VPC network takes: large frames raise per-flow throughput of GPU/TPU traffic."""
IAP_SSH_RANGE = "35.235.240.0/20"
"""Where Identity-Aware Proxy TCP forwarding connects from."""
HEALTH_CHECK_RANGES = ("130.211.0.0/22", "35.191.0.0/16")
"""Google front ends that send load-balancer and autohealing health checks."""


def iap_proxy(instance: str, zone: str, project: str, port: int = 22) -> list[str]:
    """IAP TCP forwarding as an SSH ``ProxyCommand``: the tunnel on stdin/stdout. It is what
    ``gcloud compute ssh --tunnel-through-iap`` itself runs as its proxy (``--dry-run`` shows it);
    the node's firewall must admit ``IAP_SSH_RANGE`` and the caller needs
    ``iap.tunnelInstances.accessViaIAP`` (Google Cloud "Using IAP for TCP forwarding")."""
    tunnel = ["gcloud", "compute", "start-iap-tunnel", instance, str(port), "--listen-on-stdin"]
    return [*tunnel, f"--zone={zone}", f"--project={project}", "--verbosity=warning"]


HOST_KEYS_NAMESPACE = "hostkeys"
"""The guest-attribute namespace the guest environment publishes a VM's SSH host keys under at
first boot (``key``: the key type, ``value``: its base64), when the instance has
``enable-guest-attributes: TRUE`` (Compute Engine "Set and query guest attributes"). TPU workers
publish theirs there too, without being asked."""


def host_keys_command(instance: str, zone: str, project: str) -> list[str]:
    """The VM's SSH host keys as the guest environment published them (needs
    ``compute.instances.getGuestAttributes``); until they are published gcloud fails (not found)."""
    where = [f"--zone={zone}", f"--project={project}"]
    query = [f"--query-path={HOST_KEYS_NAMESPACE}/", "--format=json"]
    return ["gcloud", "compute", "instances", "get-guest-attributes", instance, *where, *query]


def guest_host_keys(items: list[object]) -> list[str]:
    """``"<type> <base64>"`` lines from guest attributes as gcloud prints them (``{namespace, key,
    value}`` objects; other namespaces skipped). A key type SSH does not know is skipped too, and
    a value that is not that type's key is refused: it would pin nothing the node presents."""
    lines = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError("a guest attribute that is not an object")
        if item.get("namespace") != HOST_KEYS_NAMESPACE or item.get("key") not in KNOWN_KEY_TYPES:
            continue
        line = f"{item['key']} {item.get('value', '')}"
        try:
            lines.append(parse_key_line(line, "guest attribute").line())
        except InputError as exc:
            raise ValueError(f"host key {item['key']}: {exc.what}") from None
    return lines


def parse_host_keys(stdout: str, node: NodeAccess) -> list[str]:
    """``host_keys_command``'s JSON (a list of guest attributes) -> the node's host key lines."""
    data = json.loads(stdout or "[]")
    if not isinstance(data, list):
        raise ValueError(f"{node.name}: expected a JSON list of guest attributes")
    return guest_host_keys(data)


def group_list_command(base_name: str, region: str, project: str) -> list[str]:
    """The running members of a managed instance group, with their addresses, in one call: a
    group names its instances ``<baseInstanceName>-`` and four random characters (Compute Engine,
    "Basic scenarios for creating managed instance groups"), and ``instances list`` carries the
    network interfaces that ``list-instances`` leaves out."""
    return [
        "gcloud",
        "compute",
        "instances",
        "list",
        f"--project={project}",
        f"--filter=name ~ ^{base_name}-[a-z0-9]{{4}}$ AND status=RUNNING AND zone ~ /zones/{region}-[a-z]$",
        "--format=json",
    ]


def group_members(data: object, group: NodeGroupAccess) -> list[NodeAccess]:
    """``gcloud compute instances list --format=json`` -> one ``NodeAccess`` per instance
    (``networkInterfaces[0].networkIP``; ``accessConfigs[0].natIP`` when it has a public address)."""
    if not isinstance(data, list):
        raise ValueError("expected a JSON list of instances")
    nodes = []
    for item in data:
        if not isinstance(item, dict) or not item.get("name") or not item.get("zone"):
            raise ValueError("an instance without a name or zone")
        nics = item.get("networkInterfaces") or [{}]
        configs = nics[0].get("accessConfigs") or [{}]
        zone = str(item["zone"]).rsplit("/", 1)[-1]
        name = str(item["name"])
        nodes.append(
            NodeAccess(
                name=name,
                private_ip=str(nics[0].get("networkIP", "")),
                public_ip=str(configs[0].get("natIP", "")),
                user=group.user,
                keys=group.keys,
                via=group.via,
                proxy_command=iap_proxy(name, zone, group.project) if group.via == "iap" else [],
            )
        )
    return nodes


SERVING_ZONES = 3
"""A regional managed instance group spreads over three zones unless told which."""
RESERVATION_LABEL = "compute.googleapis.com/reservation-name"
"""The key a specific reservation affinity names a reservation by."""

PROJECT = CloudProject(
    "gcp:project", ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"), "Google Cloud"
)
"""``gcp:project``, else pulumi-gcp's variables in its order (``get_env`` in ``provider.py`` ``Provider``)."""
# --- zones and regions -------------------------------------------------------------------------

ZONES = ZoneForm("-[a-f]", "Google Cloud zones are the region, '-' and a letter a-f, e.g. {region}-a")
"""The letters in use (us-central1-a..c and -f), per https://cloud.google.com/compute/docs/regions-zones."""

REGION_PEERS = {
    # AWS region -> the nearest Google Cloud region, so a comparison does not cross continents.
    "us-east-1": "us-central1",
    "eu-west-1": "europe-west4",
    "eu-central-1": "europe-west4",
    "ap-northeast-1": "asia-northeast1",
    "ap-southeast-1": "asia-southeast1",
}


def data_disk_kind(req: Request) -> Refusal | None:
    if req.data_disk is None:
        return None
    return disk_kind_refusal(req.data_disk, DATA_DISK_KINDS, "{kind} is not a GCE disk type fullserver attaches")


# --- images: the forms of a boot image (pulumi-gcp bootDisk.initializeParams.image): a self link,
# projects/P/global/images/[family/]NAME, global/images/[family/]NAME, family/NAME, P/NAME, or a bare
# name (a Deep Learning VM family here, fullserver.images). Names are RFC 1035 labels of at most 63;
# a project id is 6-30 characters, optionally behind "domain:" ("Resource naming convention").
_IMAGE = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
_PROJECT = r"(?:[a-z0-9][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]"
_LINK = r"(?:https://(?:www|compute)\.googleapis\.com/compute/(?:v1|beta)/)?"
_AWS_AMI = r"ami-(?:[0-9a-f]{8}|[0-9a-f]{17})"
"""An EC2 image id: a valid image *name* by form, but a bare name here is a Deep Learning VM
family, and no family is named so: Compute Engine would refuse it only at ``up``."""
_GCP_IMAGE = (
    rf"(?:{_LINK}projects/{_PROJECT}/)?global/images/(?:family/)?{_IMAGE}|(?:family|{_PROJECT})/{_IMAGE}|{_IMAGE}"
)


def image_form(req: Request) -> Refusal | None:
    """``fullserver:image`` is a Compute Engine image reference by form: it reaches the boot disk as
    it is, so anything else would surface only when Compute Engine refuses the VM."""
    forms = "a Deep Learning VM family, family/NAME, PROJECT/NAME, projects/P/global/images/[family/]NAME or its URL"
    if req.image is not None and re.fullmatch(_AWS_AMI, req.image):
        return Refusal("image", "image", f"'{req.image}' is an AWS AMI id, not a Compute Engine image", f"use {forms}")
    if req.image is None or re.fullmatch(_GCP_IMAGE, req.image):
        return None
    return Refusal("image", "image", f"'{req.image}' is not a Compute Engine image reference", f"use {forms}")


RULES = PlatformRules(
    platform=Platform.GCP_GPU,
    provider="gcp",
    short="gcp",
    components="components.gcp",
    order=20,
    policy_reader="policy.gcp_nodes",
    accelerator_kinds=frozenset({AcceleratorKind.GPU}),
    pricing=frozenset({PricingModel.SPOT_WITH_FALLBACK, PricingModel.ON_DEMAND, PricingModel.RESERVED}),
    options={
        "reservation": "a Compute Engine reservation name",
        "image": "a Compute Engine image",
        "autostopMinutes": "its nodes run the idle agent and stop themselves",
        **CLOUD_LOGIN,
        **GPU_SERVING,
    },
    compact_placement=True,  # a COLLOCATED resource policy
    hourly_gpus=True,
    disk_kinds=DISKS,
    family_disk_kinds=(HYPERDISK_ONLY,),
    default_disk_kind="pd-balanced",
    default_boot_disk_gib=DEFAULT_BOOT_DISK_GIB,
    local_ssd_gib=LOCAL_SSD_GIB,
    local_ssd_price_kind="local-ssd",
    project=PROJECT,
    zone_form=ZONES,
    zone_from_catalog=True,
    unset_zone_warning=(
        "no fullserver:zone set: the VM goes to the gcp provider's default zone (gcp:zone); pick one offering {accelerator}"
    ),
    region_peers=REGION_PEERS,
    no_spot_fallback=(
        "gcp-gpu has no on-demand fallback for spot (Compute Engine has none to configure): when spot capacity "
        "is out, a regional group over the balanced set keeps retrying, while a single spot VM fails pulumi up and "
        "stays stopped after preemption until started again or the stack moves to an on-demand profile"
    ),
    rules=(*CAPACITY_RULES, data_disk_kind, image_form),
    quotas=quota.quotas,
    default_region="us-central1",
    cloud_affinity={"gcp": (3, "the team's cloud is Google Cloud"), "aws": (-3, "the team's cloud is AWS")},
    network=NETWORK,
    group_members=group_members,
    catalog_forms=("shapes", "attachable_gpus"),
    machine_series=machine_series,
    capacity_steps=capacity_steps,
    autostop=autostop,
    host_keys_parser=parse_host_keys,
)

PLATFORMS = (RULES,)
"""What this module registers (``fullserver.platforms`` finds every module's)."""
