"""fullserver's guardrail policies (pulumi-policy), importable and testable without the CLI.

``policy/__main__.py`` only hands :func:`pack_args` to ``PolicyPack``, which starts a gRPC server
and blocks forever; everything else lives here so tests can call each policy's ``validate`` with
hand-built ``ResourceValidationArgs`` / ``StackValidationArgs``.

The policies read what fullserver's components actually register (wire names, camelCase):

* the environment's labels (GCP) or tags (AWS): ``fullserver-profile``, ``fullserver-lifecycle``,
  ``fullserver-ttl-hours``, ``fullserver-environment``. The profile named there is loaded from
  ``fullserver.profiles.load_profiles()`` so a policy judges an environment by the same profile
  that sized it. Resources that cannot carry labels (a ``V2QueuedResource`` in pulumi-gcp 10.2)
  fall back to the stack tag ``fullserver:profile`` that ``fullserver ephemeral`` sets.
* shapes are looked up in ``fullserver.catalog.load_catalog()``: an AWS instance type, a GCP
  machine type (plus attached GPUs on N1), a TPU accelerator type.

Resource policies see *inputs*; stack policies see *outputs* and follow references between
resources (an instance to its launch template, a VM to its data disk) through the engine's
property dependencies, falling back to matching ids and self links. During ``pulumi preview`` a
value that is not known yet raises ``UnknownValueError``: resource policies let it propagate (the
analyzer reports the policy as skipped for that resource); stack policies skip only the node it
belongs to and say so.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError
from pulumi_policy.secret import Secret

from fullserver.balance import evaluate
from fullserver.catalog import Catalog, Offer, load_catalog
from fullserver.platform import Platform
from fullserver.profiles import PricingModel, Profile, Stage, load_profiles

PACK_NAME = "fullserver-guardrails"
PACK_DESCRIPTION = (
    "fullserver guardrails: no admin ports from the internet, IMDSv2, encrypted disks, public IPs only where the "
    "profile allows, expiring ephemeral environments, balanced shapes, production on on-demand or reserved "
    "capacity, and a monthly budget."
)

# --- resource type tokens ---------------------------------------------------------------------

AWS_SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
AWS_SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
AWS_SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
AWS_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_SPOT_REQUEST = "aws:ec2/spotInstanceRequest:SpotInstanceRequest"
AWS_SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
AWS_VOLUME = "aws:ebs/volume:Volume"
AWS_VOLUME_ATTACHMENT = "aws:ec2/volumeAttachment:VolumeAttachment"
AWS_SUBNET = "aws:ec2/subnet:Subnet"
AWS_ASG = "aws:autoscaling/group:Group"
GCP_FIREWALL = "gcp:compute/firewall:Firewall"
GCP_INSTANCE = "gcp:compute/instance:Instance"
GCP_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
GCP_REGION_TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
GCP_DISK = "gcp:compute/disk:Disk"
GCP_REGION_DISK = "gcp:compute/regionDisk:RegionDisk"
GCP_MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
GCP_REGION_MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"
GCP_AUTOSCALER = "gcp:compute/autoscaler:Autoscaler"
GCP_REGION_AUTOSCALER = "gcp:compute/regionAutoscaler:RegionAutoscaler"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
TPU_QUEUED = "gcp:tpu/v2QueuedResource:V2QueuedResource"

GCP_TEMPLATES = (GCP_TEMPLATE, GCP_REGION_TEMPLATE)
GCP_DISKS = (GCP_DISK, GCP_REGION_DISK)
# What runs (and bills) an environment's accelerators: the resources expiry and capacity rules watch.
COMPUTE_TYPES = (
    AWS_LAUNCH_TEMPLATE,
    AWS_INSTANCE,
    AWS_SPOT_REQUEST,
    AWS_SPOT_FLEET,
    AWS_ASG,
    GCP_INSTANCE,
    *GCP_TEMPLATES,
    TPU_VM,
    TPU_QUEUED,
)

# --- labels fullserver writes (fullserver/sizing.py) and stack tags (stackops/ephemeral.py) -----

LABEL_PROFILE = "fullserver-profile"
LABEL_ENVIRONMENT = "fullserver-environment"
LABEL_LIFECYCLE = "fullserver-lifecycle"
LABEL_TTL = "fullserver-ttl-hours"
LABEL_EXPIRES = "fullserver-expires-at"
STACK_TAG_PROFILE = "fullserver:profile"
STACK_TAG_EXPIRES = "fullserver:expires-at"

# Ports that administer a machine or expose a notebook/dashboard with code execution; none of them
# may be reachable from the whole internet.
ADMIN_PORTS: dict[int, str] = {
    22: "SSH",
    3389: "RDP",
    5900: "VNC",
    2375: "Docker API",
    2376: "Docker API (TLS)",
    2379: "etcd",
    6443: "Kubernetes API",
    10250: "kubelet",
    8888: "Jupyter",
    6006: "TensorBoard",
    8265: "Ray dashboard",
}
PRODUCTION_STAGES = (Stage.PRODUCTION_INFERENCE, Stage.SCALE_TRAINING)
HOURS_PER_MONTH = 730.0
AWS_ROOT_DEVICES = ("/dev/sda1", "/dev/xvda")
GCP_LOCAL_SSD_GIB = 375.0
GCP_DEFAULT_BOOT_GIB = 10.0

FIX_SSH = (
    "restrict the source to your office or VPN range (fullserver:sshSourceRanges), or remove the rule and connect "
    "through IAP (gcloud ... --tunnel-through-iap) on GCP or Session Manager (aws ssm start-session) on AWS"
)


# --- reading props ----------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A prop without its secret wrapper: guardrails judge shapes and flags, not secret contents."""
    return value.value if isinstance(value, Secret) else value


def _get(obj: Any, *path: str | int) -> Any:
    """A nested prop, or None when any step is missing or of the wrong kind."""
    cur = _plain(obj)
    for step in path:
        if isinstance(step, int):
            if not isinstance(cur, Sequence) or isinstance(cur, str) or step >= len(cur):
                return None
            cur = _plain(cur[step])
        else:
            if not isinstance(cur, Mapping):
                return None
            cur = _plain(cur.get(step))
    return cur


def _list(value: Any) -> list[Any]:
    value = _plain(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(v) for v in value]
    return []


def _truthy(value: Any) -> bool:
    """Booleans as providers spell them: launch templates carry "true"/"false" strings."""
    value = _plain(value)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _num(value: Any) -> float | None:
    value = _plain(value)
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _last(value: Any) -> str:
    """``zones/us-central1-a/machineTypes/a2-highgpu-1g`` -> ``a2-highgpu-1g``; names stay names."""
    text = str(_plain(value) or "")
    return text.rstrip("/").rsplit("/", 1)[-1]


def labels_of(props: Mapping[str, Any]) -> dict[str, str]:
    """The fullserver labels of a resource: GCP ``labels``, AWS ``tags`` (a map, or an Auto Scaling
    group's list of ``{key, value}``) and, under those, a launch template's ``tagSpecifications``."""
    out: dict[str, str] = {}
    for spec in _list(_get(props, "tagSpecifications")):
        tags = _get(spec, "tags")
        if isinstance(tags, Mapping):
            out.update({str(k): str(_plain(v)) for k, v in tags.items()})
    for key in ("tags", "labels"):
        value = _plain(props.get(key))
        if isinstance(value, Mapping):
            out.update({str(k): str(_plain(v)) for k, v in value.items()})
        else:
            for item in _list(value):  # GCP network tags are plain strings: not labels
                if isinstance(item, Mapping) and "key" in item:
                    out[str(_plain(item["key"]))] = str(_plain(item.get("value", "")))
    return out


@functools.cache
def profiles() -> dict[str, Profile]:
    """fullserver's profiles, loaded once per policy-pack process."""
    return load_profiles()


@functools.cache
def catalog() -> Catalog:
    """fullserver's sourced catalog, loaded once per policy-pack process."""
    return load_catalog()


def profile_name(labels: Mapping[str, str], stack_tags: Mapping[str, str]) -> str | None:
    return labels.get(LABEL_PROFILE) or stack_tags.get(STACK_TAG_PROFILE) or None


def profile_for(labels: Mapping[str, str], stack_tags: Mapping[str, str]) -> Profile | None:
    name = profile_name(labels, stack_tags)
    return profiles().get(name) if name else None


def _describe(resource_type: str, name: str) -> str:
    return f"{resource_type.rsplit(':', 1)[-1]} '{name}'"


# --- 1. no admin ports from the internet ---------------------------------------------------------


def _internet(cidr: Any) -> bool:
    """0.0.0.0/0, ::/0 and any other prefix of length 0 (e.g. 10.0.0.0/0 means everything too)."""
    try:
        return ipaddress.ip_network(str(_plain(cidr)).strip(), strict=False).prefixlen == 0
    except ValueError:
        return False


def _aws_ports(protocol: Any, from_port: Any, to_port: Any, ports: Iterable[int]) -> list[int]:
    """Admin ports inside an AWS rule's protocol and port range ("-1" is every protocol and port)."""
    proto = str(_plain(protocol) if _plain(protocol) is not None else "-1").lower()
    if proto in ("-1", "all"):
        return sorted(ports)
    if proto not in ("tcp", "6", "udp", "17"):
        return []
    lo, hi = _num(from_port), _num(to_port)
    if lo is None and hi is None:
        return sorted(ports)
    lo = 0 if lo is None or lo < 0 else lo
    hi = 65535 if hi is None or hi < 0 else hi
    return sorted(p for p in ports if lo <= p <= hi)


def _gcp_ports(allow: Any, ports: Iterable[int]) -> list[int]:
    """Admin ports a GCP ``allows`` entry opens: protocol "all", or tcp/udp/sctp without ports, is all."""
    proto = str(_get(allow, "protocol") or "").lower()
    if proto == "all":
        return sorted(ports)
    if proto not in ("tcp", "udp", "sctp", "6", "17", "132"):
        return []
    ranges = [str(p) for p in _list(_get(allow, "ports"))]
    if not ranges:
        return sorted(ports)
    hit: set[int] = set()
    for r in ranges:
        lo_s, _, hi_s = r.partition("-")
        try:
            lo, hi = int(lo_s), int(hi_s or lo_s)
        except ValueError:
            continue
        hit.update(p for p in ports if lo <= p <= hi)
    return sorted(hit)


def _port_names(ports: Sequence[int]) -> str:
    return ", ".join(f"{p} ({ADMIN_PORTS.get(p, 'admin')})" for p in ports)


def _admin_ports(config: Mapping[str, Any]) -> set[int]:
    configured = config.get("ports")
    if isinstance(configured, Sequence) and not isinstance(configured, str) and configured:
        return {int(p) for p in configured}
    return set(ADMIN_PORTS)


def check_open_admin_ports(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Admin ports open to the internet are how GPU hosts get hijacked for mining; nodes need none."""
    ports = _admin_ports(args.get_config())
    what = _describe(args.resource_type, args.name)
    props = args.props
    rules: list[tuple[Any, Any, Any, list[Any]]] = []  # (protocol, from, to, cidrs)
    if args.resource_type == AWS_SECURITY_GROUP:
        for rule in _list(props.get("ingress")):
            cidrs = _list(_get(rule, "cidrBlocks")) + _list(_get(rule, "ipv6CidrBlocks"))
            rules.append((_get(rule, "protocol"), _get(rule, "fromPort"), _get(rule, "toPort"), cidrs))
    elif args.resource_type == AWS_SG_RULE:
        if str(_plain(props.get("type")) or "").lower() != "ingress":
            return
        cidrs = _list(props.get("cidrBlocks")) + _list(props.get("ipv6CidrBlocks"))
        rules.append((props.get("protocol"), props.get("fromPort"), props.get("toPort"), cidrs))
    elif args.resource_type == AWS_SG_INGRESS_RULE:
        cidrs = [c for c in (props.get("cidrIpv4"), props.get("cidrIpv6")) if c]
        rules.append((props.get("ipProtocol"), props.get("fromPort"), props.get("toPort"), cidrs))
    elif args.resource_type == GCP_FIREWALL:
        if str(_plain(props.get("direction")) or "INGRESS").upper() != "INGRESS" or _truthy(props.get("disabled")):
            return
        sources = _list(props.get("sourceRanges"))
        if not sources and not _list(props.get("sourceTags")) and not _list(props.get("sourceServiceAccounts")):
            sources = ["0.0.0.0/0"]  # GCE: an ingress rule without any source applies to every source
        open_to = [c for c in sources if _internet(c)]
        if not open_to:
            return
        hit = sorted({p for allow in _list(props.get("allows")) for p in _gcp_ports(allow, ports)})
        if hit:
            report(f"{what} allows {_port_names(hit)} from {', '.join(map(str, open_to))}: {FIX_SSH}.", None)
        return
    else:
        return
    for protocol, lo, hi, cidrs in rules:
        open_to = [c for c in cidrs if _internet(c)]
        hit = _aws_ports(protocol, lo, hi, ports) if open_to else []
        if hit:
            report(f"{what} allows {_port_names(hit)} from {', '.join(map(str, open_to))}: {FIX_SSH}.", None)


# --- 2. IMDSv2 -----------------------------------------------------------------------------------


def check_imdsv2(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """IMDSv1 answers any SSRF'd GET with the node's role credentials; session tokens stop that."""
    if args.resource_type not in (AWS_LAUNCH_TEMPLATE, AWS_INSTANCE):
        return
    props = args.props
    meta = _get(props, "metadataOptions")
    if args.resource_type == AWS_INSTANCE and meta is None and _get(props, "launchTemplate") is not None:
        return  # the launch template's metadata options apply; this policy checks the template
    if str(_get(meta, "httpEndpoint") or "enabled").lower() == "disabled":
        return  # no metadata service at all
    tokens = _get(meta, "httpTokens")
    if str(tokens or "").lower() != "required":
        report(
            f"{_describe(args.resource_type, args.name)} allows IMDSv1 (metadataOptions.httpTokens is "
            f'{tokens or "unset"}): set metadataOptions.httpTokens to "required" (with httpPutResponseHopLimit 2 '
            "for containers), as fullserver's launch templates do.",
            None,
        )


# --- 3. encrypted disks ----------------------------------------------------------------------------


def check_encrypted_disks(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Checkpoints and datasets on a volume outlive the instance; unencrypted EBS leaks via snapshots."""
    t, props = args.resource_type, args.props
    what = _describe(t, args.name)
    fix = "set encrypted: true (optionally with kmsKeyId), as fullserver's gp3 volumes do"
    if t == AWS_VOLUME:
        if not _truthy(props.get("encrypted")):
            report(f"{what} is not encrypted: {fix}.", None)
    elif t == AWS_LAUNCH_TEMPLATE:
        for m in _list(props.get("blockDeviceMappings")):
            ebs = _get(m, "ebs")
            if ebs is None or _truthy(_get(m, "noDevice")) or _get(m, "virtualName"):
                continue  # instance store or a suppressed device
            if not _truthy(_get(ebs, "encrypted")):
                report(f"{what}: block device {_get(m, 'deviceName')} is not encrypted: {fix} in its ebs block.", None)
    elif t == AWS_INSTANCE:
        root = _get(props, "rootBlockDevice")
        from_template = _get(props, "launchTemplate") is not None
        if root is None and not from_template:
            report(
                f"{what}: the root volume's encryption follows the AMI snapshot: set rootBlockDevice.encrypted true.",
                None,
            )
        elif root is not None and not _truthy(_get(root, "encrypted")):
            report(f"{what}: the root volume is not encrypted: {fix} in rootBlockDevice.", None)
        for ebs in _list(props.get("ebsBlockDevices")):
            if not _truthy(_get(ebs, "encrypted")):
                report(f"{what}: EBS block device {_get(ebs, 'deviceName')} is not encrypted: {fix}.", None)
    elif t in (*GCP_DISKS, GCP_INSTANCE, *GCP_TEMPLATES):
        if not _truthy(args.get_config().get("requireGcpCmek")):
            args.not_applicable(
                "GCP persistent disks are always encrypted at rest with Google-managed keys; set requireGcpCmek to "
                "demand customer-managed keys"
            )
        _check_gcp_cmek(t, what, props, report)


def _check_gcp_cmek(t: str, what: str, props: Mapping[str, Any], report: ReportViolation) -> None:
    fix = "give it a Cloud KMS key (kmsKeySelfLink) or turn requireGcpCmek off"
    if t in GCP_DISKS:
        if not _get(props, "diskEncryptionKey", "kmsKeySelfLink"):
            report(f"{what} uses a Google-managed key but requireGcpCmek is on: {fix} in diskEncryptionKey.", None)
    elif t == GCP_INSTANCE:
        if not _get(props, "bootDisk", "kmsKeySelfLink"):
            report(
                f"{what}: the boot disk uses a Google-managed key but requireGcpCmek is on: {fix} in bootDisk.", None
            )
    else:
        for i, disk in enumerate(_list(props.get("disks"))):
            if str(_get(disk, "type") or "").upper() == "SCRATCH":
                continue  # local SSDs are encrypted with ephemeral keys; CMEK does not apply
            if not _get(disk, "diskEncryptionKey", "kmsKeySelfLink"):
                report(
                    f"{what}: disks[{i}] uses a Google-managed key but requireGcpCmek is on: {fix} in diskEncryptionKey.",
                    None,
                )


# --- 4. public IPs only where the profile allows ------------------------------------------------


def _public_ip_sources(t: str, props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, how to remove it) for every way this resource asks for an external address."""
    out: list[tuple[str, str]] = []
    if t == AWS_LAUNCH_TEMPLATE:
        for i, nic in enumerate(_list(props.get("networkInterfaces"))):
            if _truthy(_get(nic, "associatePublicIpAddress")):
                out.append((f"networkInterfaces[{i}].associatePublicIpAddress", "set it to false"))
    elif t == AWS_INSTANCE:
        if _truthy(props.get("associatePublicIpAddress")):
            out.append(("associatePublicIpAddress", "set it to false"))
    elif t == AWS_SUBNET:
        if _truthy(props.get("mapPublicIpOnLaunch")):
            out.append(("mapPublicIpOnLaunch", "set it to false and route egress through a NAT gateway"))
    elif t in (GCP_INSTANCE, *GCP_TEMPLATES):
        for i, nic in enumerate(_list(props.get("networkInterfaces"))):
            if _list(_get(nic, "accessConfigs")) or _list(_get(nic, "ipv6AccessConfigs")):
                out.append((f"networkInterfaces[{i}].accessConfigs", "remove the access configs and use Cloud NAT"))
    elif t == TPU_VM:
        configs = [_get(props, "networkConfig"), *_list(props.get("networkConfigs"))]
        if any(_truthy(_get(c, "enableExternalIps")) for c in configs if c is not None):
            out.append(("networkConfig.enableExternalIps", "set it to false and use Cloud NAT"))
    elif t == TPU_QUEUED:
        for i, spec in enumerate(_list(_get(props, "tpu", "nodeSpecs"))):
            if _truthy(_get(spec, "node", "networkConfig", "enableExternalIps")):
                out.append(
                    (f"tpu.nodeSpecs[{i}].node.networkConfig.enableExternalIps", "set it to false and use Cloud NAT")
                )
    return out


def check_public_ip(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A public address bypasses the IAP/Session Manager path; only profiles that accept that get one."""
    sources = _public_ip_sources(args.resource_type, args.props)
    if not sources:
        return
    what = _describe(args.resource_type, args.name)
    labels = labels_of(args.props)
    name = profile_name(labels, args.stack_tags)
    profile = profiles().get(name) if name else None
    where = ", ".join(s for s, _ in sources)
    remove = "; ".join(f"{s}: {how}" for s, how in sources)
    if name is None:
        report(
            f"{what} gets a public IP ({where}) but carries no {LABEL_PROFILE} label or tag, so no profile says it may: "
            f"label it {LABEL_PROFILE}=<profile> (fullserver's components do), or remove the address ({remove}).",
            None,
        )
    elif profile is None:
        report(
            f"{what} gets a public IP ({where}) under unknown profile '{name}': use one of "
            f"{', '.join(sorted(profiles()))} or remove the address ({remove}).",
            None,
        )
    elif not profile.security.public_ip:
        report(
            f"{what} gets a public IP ({where}) but profile '{name}' does not allow one (security.public_ip: false): "
            f"{remove}; reach the nodes through IAP or Session Manager, or use a profile that allows public IPs.",
            None,
        )


# --- 5. every ephemeral environment expires -----------------------------------------------------


def check_ephemeral_expiry(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Ephemeral environments are the ones nobody remembers; without an expiry the janitor cannot act."""
    if args.resource_type not in COMPUTE_TYPES and args.resource_type not in (*GCP_DISKS, AWS_VOLUME):
        return
    labels = labels_of(args.props)
    profile = profile_for(labels, {})
    declared = labels.get(LABEL_LIFECYCLE)
    by_profile = profile is not None and profile.lifecycle.mode == "ephemeral"
    if declared != "ephemeral" and not by_profile:
        return
    ttl = _num(labels.get(LABEL_TTL))
    if (ttl is not None and ttl > 0) or labels.get(LABEL_EXPIRES) or args.stack_tags.get(STACK_TAG_EXPIRES):
        return
    env = labels.get(LABEL_ENVIRONMENT, args.name)
    why = (
        f"{LABEL_LIFECYCLE}=ephemeral"
        if declared == "ephemeral"
        else f"profile '{profile.name if profile else ''}' is ephemeral"
    )
    bad = f" ({LABEL_TTL}={labels[LABEL_TTL]!r} is not a positive number of hours)" if LABEL_TTL in labels else ""
    report(
        f"{_describe(args.resource_type, args.name)} of ephemeral environment '{env}' ({why}) has no expiry{bad}: "
        f"add the label/tag {LABEL_TTL}=<hours> (fullserver sets it from the profile's lifecycle.ttl_hours or "
        f"fullserver:ttlHours) or {LABEL_EXPIRES}, or run it with `fullserver ephemeral`, which tags the stack "
        f"{STACK_TAG_EXPIRES} so `fullserver janitor` destroys it.",
        None,
    )


# --- 7. production capacity is on-demand or reserved --------------------------------------------


def _spot_sources(t: str, props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, how to make it on-demand) for every way this resource asks for interruptible capacity."""
    out: list[tuple[str, str]] = []
    if t in (AWS_LAUNCH_TEMPLATE, AWS_INSTANCE):
        if str(_get(props, "instanceMarketOptions", "marketType") or "").lower() == "spot":
            out.append(("instanceMarketOptions.marketType spot", "remove instanceMarketOptions"))
    elif t in (AWS_SPOT_REQUEST, AWS_SPOT_FLEET):
        out.append(("a spot request", "launch on-demand instances or from a capacity reservation"))
    elif t == AWS_ASG:
        dist = _get(props, "mixedInstancesPolicy", "instancesDistribution")
        if _get(props, "mixedInstancesPolicy") is not None:
            pct = _num(_get(dist, "onDemandPercentageAboveBaseCapacity"))
            if pct is not None and pct < 100:
                out.append(
                    (
                        f"mixedInstancesPolicy with {pct:g}% on-demand above base",
                        "set onDemandPercentageAboveBaseCapacity to 100",
                    )
                )
    elif t in (GCP_INSTANCE, *GCP_TEMPLATES):
        sched = _get(props, "scheduling")
        if str(_get(sched, "provisioningModel") or "").upper() == "SPOT":
            out.append(("scheduling.provisioningModel SPOT", "set provisioningModel STANDARD"))
        elif _truthy(_get(sched, "preemptible")):
            out.append(("scheduling.preemptible", "set preemptible false"))
    elif t == TPU_VM:
        for key in ("spot", "preemptible"):
            if _truthy(_get(props, "schedulingConfig", key)):
                out.append((f"schedulingConfig.{key}", f"set schedulingConfig.{key} false"))
    elif t == TPU_QUEUED:
        if _get(props, "spot") is not None:
            out.append(("spot", "remove the spot block (use guaranteed capacity)"))
        for i, spec in enumerate(_list(_get(props, "tpu", "nodeSpecs"))):
            for key in ("spot", "preemptible"):
                if _truthy(_get(spec, "node", "schedulingConfig", key)):
                    out.append((f"tpu.nodeSpecs[{i}].node.schedulingConfig.{key}", "set it false"))
    return out


def check_production_capacity(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Production serving and scale training lose money and SLOs to preemption; they run on capacity
    that stays. A production-stage profile that itself prices spot (batch-inference: checkpointed,
    retryable batches) is exempt unless ``allowProfileSpot`` is false."""
    sources = _spot_sources(args.resource_type, args.props)
    if not sources:
        return
    profile = profile_for(labels_of(args.props), args.stack_tags)
    if profile is None or profile.stage not in PRODUCTION_STAGES:
        return
    allow = args.get_config().get("allowProfileSpot", True)
    if profile.pricing is PricingModel.SPOT_WITH_FALLBACK and _truthy(allow):
        return
    where = ", ".join(s for s, _ in sources)
    how = "; ".join(h for _, h in sources)
    report(
        f"{_describe(args.resource_type, args.name)} runs on spot/preemptible capacity ({where}) but profile "
        f"'{profile.name}' is production (stage {profile.stage.value}, pricing {profile.pricing.value}), which runs "
        f"on on-demand or reserved capacity only: {how}; or use a spot profile (experimentation, fine-tuning, "
        "batch-inference) for work that tolerates preemption.",
        None,
    )


# --- stack view: references and accelerator nodes -----------------------------------------------


def _ids(resource: PolicyResource) -> set[str]:
    """What other resources may write when they refer to this one (id, self links, ARN)."""
    out: set[str] = set()
    for key in ("id", "selfLink", "selfLinkUnique", "arn"):
        try:
            value = _plain(resource.props.get(key))
        except UnknownValueError:  # not known until the resource exists: nothing can refer to it by value yet
            continue
        if isinstance(value, str) and value:
            out.add(value)
    return out


def _strings(value: Any) -> set[str]:
    value = _plain(value)
    if isinstance(value, str):
        return {value}
    if isinstance(value, Mapping):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, Sequence):
        return {s for v in value for s in _strings(v)}
    return set()


def referenced(
    resource: PolicyResource, prop: str, types: Sequence[str], resources: Sequence[PolicyResource]
) -> list[PolicyResource]:
    """Resources of ``types`` that ``resource.props[prop]`` refers to: the engine's property
    dependencies first (known even during preview), else ids / self links written in the prop."""
    deps = [r for r in (resource.property_dependencies or {}).get(prop, []) if r.resource_type in types]
    if deps:
        return deps
    wanted = _strings(resource.props.get(prop))
    if not wanted:
        return []
    return [r for r in resources if r.resource_type in types and _ids(r) & wanted]


@dataclass
class Disk:
    """A disk that bills per GiB-month (and per provisioned IOPS/throughput above the free baseline)."""

    provider: str
    kind: str
    gib: float
    iops: float = 0.0
    mbps: float = 0.0


@dataclass
class Node:
    """Something that runs machines: ``count`` of one shape, the catalog offer when it has one.

    ``offer`` is ``None`` when the shape is not in the catalog (a CPU box, a GPU type fullserver
    does not list, a spot fleet's mix): the balance policy has nothing to hold it to, and the
    budget policy cannot price it, so it fails closed unless told ``allowUnpriced``."""

    resource: PolicyResource
    platform: Platform
    shape: str
    offer: Offer | None
    region: str | None
    labels: dict[str, str]
    count: float = 1.0
    spot_count: float = 0.0
    local_nvme_gib: float | None = None
    """Local NVMe actually attached, when the resource chooses it (GCP local SSDs); else the offer's."""
    attached_gib: float = 0.0
    """Block storage attached to each machine besides its boot disk."""
    disks: list[Disk] = field(default_factory=list)
    """Disks each machine carries inline (boot, template data disks, local SSDs)."""
    why_unpriced: str = ""
    """Why a node without an offer cannot be priced, when it is not simply a type missing from the catalog."""


def _zone_region(zone: Any) -> str | None:
    text = _last(zone)
    return text.rsplit("-", 1)[0] if text.count("-") >= 2 else None


def _aws_region(resource: PolicyResource, *more: PolicyResource) -> str | None:
    for r in (resource, *more):
        region = _plain(r.props.get("region"))
        if isinstance(region, str) and region:
            return region
    prov = resource.provider
    region = _plain(prov.props.get("region")) if prov is not None else None
    return region if isinstance(region, str) and region else None


def _gcp_offer(machine_type: str, accelerators: list[Any]) -> Offer | None:
    """A GCP offer: the machine type itself (A2/A3/G2 bundle their GPUs), or an N1 host + N GPUs."""
    cat = catalog()
    count = sum(int(_num(_get(a, "count")) or 0) for a in accelerators)
    if not count:
        offer = cat.offer(machine_type)
        return offer if offer is not None and offer.platform is Platform.GCP_GPU else None
    gpu = _last(_get(accelerators[0], "type")).lower().removeprefix("nvidia-").removeprefix("tesla-")
    for offer in cat.offers:
        if (
            offer.platform is not Platform.GCP_GPU
            or offer.machine_type != machine_type
            or offer.host.accelerator_count != count
        ):
            continue
        acc = cat.accelerators.get(offer.host.accelerator or "")
        names = {a.lower() for a in ([acc.name, *acc.aliases] if acc else [])}
        if gpu in names:
            return offer
    return None


def _aws_offer(instance_type: str) -> Offer | None:
    offer = catalog().offer(instance_type)
    return offer if offer is not None and offer.platform is Platform.AWS_GPU else None


def _tpu_offer(accelerator_type: str) -> Offer | None:
    offer = catalog().offer(accelerator_type)
    return offer if offer is not None and offer.platform is Platform.TPU_VM else None


def _disk_size(disks: Sequence[PolicyResource]) -> float:
    return sum(_num(d.props.get("size")) or 0.0 for d in disks)


def _lt_disks(lt: PolicyResource | None) -> tuple[list[Disk], float]:
    """A launch template's EBS volumes (each launched machine gets them) and its non-root GiB."""
    if lt is None:
        return [], 0.0
    disks: list[Disk] = []
    attached = 0.0
    for m in _list(lt.props.get("blockDeviceMappings")):
        ebs = _get(m, "ebs")
        if ebs is None or _get(m, "virtualName"):
            continue
        gib = _num(_get(ebs, "volumeSize")) or 0.0
        disks.append(
            Disk(
                "aws",
                str(_get(ebs, "volumeType") or "gp3"),
                gib,
                _num(_get(ebs, "iops")) or 0.0,
                _num(_get(ebs, "throughput")) or 0.0,
            )
        )
        if _get(m, "deviceName") not in AWS_ROOT_DEVICES:
            attached += gib
    return disks, attached


def _lt_of(resource: PolicyResource, resources: Sequence[PolicyResource]) -> PolicyResource | None:
    for prop in ("launchTemplate", "mixedInstancesPolicy"):
        found = referenced(resource, prop, (AWS_LAUNCH_TEMPLATE,), resources)
        if found:
            return found[0]
    return None


def _aws_node(r: PolicyResource, resources: Sequence[PolicyResource]) -> Node:
    """An instance or a spot instance request (one machine), an Auto Scaling group
    (``desiredCapacity`` machines), each with the launch template it launches from, or a launch
    template nothing in the stack launches yet (no machines: judged for balance, costs nothing)."""
    lt = r if r.resource_type == AWS_LAUNCH_TEMPLATE else _lt_of(r, resources)
    itype = _plain(r.props.get("instanceType")) or (_plain(lt.props.get("instanceType")) if lt is not None else None)
    if r.resource_type == AWS_ASG and not itype:
        overrides = _list(_get(r.props, "mixedInstancesPolicy", "launchTemplate", "overrides"))
        itype = _get(overrides[0], "instanceType") if overrides else None
    offer = _aws_offer(str(itype)) if itype else None
    disks, attached = _lt_disks(lt)
    labels = {**(labels_of(lt.props) if lt is not None else {}), **labels_of(r.props)}
    region = _aws_region(r, *([lt] if lt is not None else []))
    shape = str(itype) if itype else "no instanceType"
    node = Node(r, Platform.AWS_GPU, shape, offer, region, labels, disks=disks, attached_gib=attached)
    if r.resource_type == AWS_LAUNCH_TEMPLATE:
        node.count = 0.0
        return node
    if r.resource_type in (AWS_INSTANCE, AWS_SPOT_REQUEST):
        market = _get(r.props, "instanceMarketOptions", "marketType") or (
            _get(lt.props, "instanceMarketOptions", "marketType") if lt is not None else None
        )
        spot = r.resource_type == AWS_SPOT_REQUEST or str(market or "").lower() == "spot"
        node.spot_count = 1.0 if spot else 0.0
        root = _get(r.props, "rootBlockDevice")
        if root is not None:
            node.disks.append(
                Disk("aws", str(_get(root, "volumeType") or "gp3"), _num(_get(root, "volumeSize")) or 0.0)
            )
        for ebs in _list(r.props.get("ebsBlockDevices")):
            gib = _num(_get(ebs, "volumeSize")) or 0.0
            node.disks.append(Disk("aws", str(_get(ebs, "volumeType") or "gp3"), gib))
            node.attached_gib += gib
        for att in resources:
            if att.resource_type == AWS_VOLUME_ATTACHMENT and r in referenced(
                att, "instanceId", (AWS_INSTANCE, AWS_SPOT_REQUEST), resources
            ):
                node.attached_gib += _disk_size(referenced(att, "volumeId", (AWS_VOLUME,), resources))
        return node
    desired = _num(r.props.get("desiredCapacity"))
    node.count = desired if desired is not None else (_num(r.props.get("minSize")) or 0.0)
    mixed = _get(r.props, "mixedInstancesPolicy")
    if mixed is not None:
        dist = _get(mixed, "instancesDistribution")
        base = _num(_get(dist, "onDemandBaseCapacity")) or 0.0
        pct = _num(_get(dist, "onDemandPercentageAboveBaseCapacity"))
        pct = 100.0 if pct is None else pct
        node.spot_count = node.count - (min(node.count, base) + max(0.0, node.count - base) * pct / 100)
    return node


def _spot_fleet_node(r: PolicyResource) -> Node:
    """A spot fleet: ``targetCapacity`` units of a mix of types the fleet picks at launch time,
    which a list price per type cannot settle: never priced."""
    types = sorted({str(t) for spec in _list(r.props.get("launchSpecifications")) if (t := _get(spec, "instanceType"))})
    count = _num(r.props.get("targetCapacity")) or 1.0
    shape = f"spot fleet of {', '.join(types) or 'launch template configs'}"
    node = Node(r, Platform.AWS_GPU, shape, None, _aws_region(r), labels_of(r.props), count=count, spot_count=count)
    node.why_unpriced = (
        "a spot fleet's cost depends on the types and weights it picks, which this policy does not model"
    )
    return node


def _gcp_spot(scheduling: Any) -> bool:
    return str(_get(scheduling, "provisioningModel") or "").upper() == "SPOT" or _truthy(
        _get(scheduling, "preemptible")
    )


def _template_count(template: PolicyResource, resources: Sequence[PolicyResource]) -> float:
    """Machines a managed group runs from a template: the autoscaler's minimum, else its target size."""
    count = 0.0
    for mig in resources:
        if mig.resource_type not in (GCP_MIG, GCP_REGION_MIG) or template not in referenced(
            mig, "versions", GCP_TEMPLATES, resources
        ):
            continue
        size = _num(mig.props.get("targetSize"))
        for scaler in resources:
            if scaler.resource_type in (GCP_AUTOSCALER, GCP_REGION_AUTOSCALER) and mig in referenced(
                scaler, "target", (GCP_MIG, GCP_REGION_MIG), resources
            ):
                size = _num(_get(scaler.props, "autoscalingPolicy", "minReplicas")) or size
        count += size if size is not None else 1.0
    return count


def _gcp_shape(machine_type: str, accelerators: list[Any]) -> str:
    """``a2-highgpu-1g``, or ``n1-standard-8 + 2 x nvidia-tesla-v100`` for a host with attached GPUs."""
    count = sum(int(_num(_get(a, "count")) or 0) for a in accelerators)
    name = machine_type or "no machineType"
    return f"{name} + {count} x {_last(_get(accelerators[0], 'type'))}" if count else name


def _gcp_instance_node(r: PolicyResource, resources: Sequence[PolicyResource]) -> Node:
    p = r.props
    machine_type, accelerators = _last(p.get("machineType")), _list(p.get("guestAccelerators"))
    offer = _gcp_offer(machine_type, accelerators)
    boot = _get(p, "bootDisk", "initializeParams")
    scratch = [_num(_get(s, "size")) or GCP_LOCAL_SSD_GIB for s in _list(p.get("scratchDisks"))]
    disks = [Disk("gcp", _last(_get(boot, "type") or "pd-standard"), _num(_get(boot, "size")) or GCP_DEFAULT_BOOT_GIB)]
    if scratch:
        disks.append(Disk("gcp", "local-ssd", sum(scratch)))
    attached = _disk_size(referenced(r, "attachedDisks", GCP_DISKS, resources))
    node = Node(
        r,
        Platform.GCP_GPU,
        offer.name if offer is not None else _gcp_shape(machine_type, accelerators),
        offer,
        _zone_region(p.get("zone")),
        labels_of(p),
        disks=disks,
        attached_gib=attached,
    )
    node.local_nvme_gib = sum(scratch)
    node.spot_count = 1.0 if _gcp_spot(p.get("scheduling")) else 0.0
    return node


def _gcp_template_node(r: PolicyResource, resources: Sequence[PolicyResource]) -> Node:
    p = r.props
    machine_type, accelerators = _last(p.get("machineType")), _list(p.get("guestAccelerators"))
    offer = _gcp_offer(machine_type, accelerators)
    disks: list[Disk] = []
    local = attached = 0.0
    for d in _list(p.get("disks")):
        gib = _num(_get(d, "diskSizeGb")) or 0.0
        if str(_get(d, "type") or "").upper() == "SCRATCH" or _get(d, "diskType") == "local-ssd":
            local += gib or GCP_LOCAL_SSD_GIB
            continue
        kind = _last(_get(d, "diskType") or "pd-standard")
        disks.append(
            Disk(
                "gcp",
                kind,
                gib or GCP_DEFAULT_BOOT_GIB,
                _num(_get(d, "provisionedIops")) or 0.0,
                _num(_get(d, "provisionedThroughput")) or 0.0,
            )
        )
        if not _truthy(_get(d, "boot")):
            attached += gib
    if local:
        disks.append(Disk("gcp", "local-ssd", local))
    count = _template_count(r, resources)
    node = Node(
        r,
        Platform.GCP_GPU,
        offer.name if offer is not None else _gcp_shape(machine_type, accelerators),
        offer,
        _plain(p.get("region")) or None,
        labels_of(p),
        count=count,
        local_nvme_gib=local,
        attached_gib=attached,
        disks=disks,
    )
    node.spot_count = count if _gcp_spot(p.get("scheduling")) else 0.0
    return node


def _tpu_nodes(r: PolicyResource, resources: Sequence[PolicyResource]) -> list[Node]:
    p = r.props
    if r.resource_type == TPU_VM:
        accelerator = str(_plain(p.get("acceleratorType")) or "")
        offer = _tpu_offer(accelerator)
        attached = _disk_size(referenced(r, "dataDisks", GCP_DISKS, resources))
        shape = offer.name if offer is not None else accelerator or "no acceleratorType"
        node = Node(r, Platform.TPU_VM, shape, offer, _zone_region(p.get("zone")), labels_of(p), attached_gib=attached)
        spot = _truthy(_get(p, "schedulingConfig", "spot")) or _truthy(_get(p, "schedulingConfig", "preemptible"))
        node.spot_count = 1.0 if spot else 0.0
        return [node]
    nodes = []
    for spec in _list(_get(p, "tpu", "nodeSpecs")):
        accelerator = str(_get(spec, "node", "acceleratorType") or "")
        offer = _tpu_offer(accelerator)
        zone = p.get("zone") or str(_get(spec, "parent") or "").rsplit("/", 1)[-1]
        shape = offer.name if offer is not None else accelerator or "no acceleratorType"
        node = Node(r, Platform.TPU_VM, shape, offer, _zone_region(zone), labels_of(p))
        node.spot_count = 1.0 if _get(p, "spot") is not None else 0.0
        nodes.append(node)
    return nodes


def _nodes_of(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    t = r.resource_type
    found: Node | None = None
    if t in (AWS_INSTANCE, AWS_SPOT_REQUEST, AWS_ASG) or (t == AWS_LAUNCH_TEMPLATE and r.urn not in used_templates):
        found = _aws_node(r, resources)
    elif t == AWS_SPOT_FLEET:
        found = _spot_fleet_node(r)
    elif t == GCP_INSTANCE:
        found = _gcp_instance_node(r, resources)
    elif t in GCP_TEMPLATES:
        found = _gcp_template_node(r, resources)
    elif t in (TPU_VM, TPU_QUEUED):
        return _tpu_nodes(r, resources)
    return [found] if found is not None else []


def accelerator_nodes(resources: Sequence[PolicyResource]) -> tuple[list[Node], list[str]]:
    """Every compute node in the stack (``offer`` is ``None`` for a shape the catalog does not
    list), and what was skipped because a value is not known yet (during preview); an unknown
    value skips only the resource it belongs to."""
    nodes: list[Node] = []
    skipped: list[str] = []
    used: set[str] = set()
    for r in resources:
        if r.resource_type in (AWS_INSTANCE, AWS_SPOT_REQUEST, AWS_ASG):
            try:
                lt = _lt_of(r, resources)
            except UnknownValueError:
                continue
            if lt is not None:
                used.add(lt.urn)
    for r in resources:
        try:
            nodes.extend(_nodes_of(r, resources, used))
        except UnknownValueError as exc:
            skipped.append(f"{_describe(r.resource_type, r.name)}: {exc.message}")
    return nodes, skipped


# --- 6. balance minimums ------------------------------------------------------------------------


def check_balance(args: StackValidationArgs, report: ReportViolation) -> None:
    """A fast accelerator starved of CPU, RAM, NVMe or network wastes what it costs; the profile's
    minimums are the contract sizing met, and hand edits or drift must not break it."""
    nodes, _ = accelerator_nodes(args.resources)
    for node in nodes:
        if node.offer is None:
            continue
        name = profile_name(node.labels, args.stack_tags)
        profile = profiles().get(name) if name else None
        if profile is None:
            continue  # not a fullserver environment (or a queued slice without labels): nothing to hold it to
        balance = profile.balance_for(node.platform)
        update: dict[str, float] = {}
        if node.local_nvme_gib is not None:
            update["local_nvme_gib"] = node.local_nvme_gib
        if balance.nvme_may_be_attached and node.attached_gib:
            update["attached_storage_gib"] = node.attached_gib
        host = node.offer.host.model_copy(update=update) if update else node.offer.host
        result = evaluate(balance, host)
        what = _describe(node.resource.resource_type, node.resource.name)
        for line in result.short:
            hint = {
                "cpu": "a shape with more vCPUs per accelerator",
                "ram": "a shape with more host memory",
                "nvme": "more local SSDs or a larger data disk"
                + ("" if balance.nvme_may_be_attached else " (this profile needs local NVMe)"),
                "network": "a shape with more network bandwidth",
            }.get(line.dimension, "a larger shape")
            report(
                f"{what} ({node.shape}, profile '{profile.name}' on {node.platform.value}) is short of {line.shortfall} "
                f"per node ({line.reason}): re-plan with `fullserver plan` and build the shape it picks, or {hint}.",
                node.resource.urn,
            )


# --- 8. monthly budget ----------------------------------------------------------------------------


def _hourly(offer: Offer, region: str | None, spot: bool) -> tuple[float, str]:
    """The catalog's hourly price; an unknown region takes the dearest listed one (a guard errs high)."""
    price = offer.prices.get(region or "")
    note = ""
    if price is None:
        if not offer.prices:
            raise LookupError(f"{offer.name} has no price in the catalog")
        price = max(offer.prices.values(), key=lambda p: p.on_demand)
        note = f" (not priced in {region or 'an unknown region'}: {price.region} price)"
    if spot and price.spot is not None:
        return price.spot, "spot" + note
    return price.on_demand, "on-demand" + note


def _disk_month(disk: Disk, region: str | None) -> float | None:
    cat = catalog()
    price = cat.storage_price(disk.provider, disk.kind, region or "")
    if price is None:
        same = [p for p in cat.storage_prices if (p.provider, p.kind) == (disk.provider, disk.kind)]
        if not same:
            return None
        price = max(same, key=lambda p: p.usd_gib_month)
    return (
        disk.gib * price.usd_gib_month
        + max(0.0, disk.iops - price.free_iops) * price.usd_iops_month
        + max(0.0, disk.mbps - price.free_mbps) * price.usd_mbps_month
    )


@dataclass
class Estimate:
    """A policy-time monthly estimate from the resources alone (not ``fullserver plan``'s full cost)."""

    usd_month: float = 0.0
    items: list[tuple[float, str]] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)
    """Everything left out of ``usd_month``: compute, disks of unlisted kinds, values unknown in preview."""
    unpriced_compute: list[str] = field(default_factory=list)
    """Machines left out (a type the catalog does not list or price): the budget check fails closed on them."""

    def add(self, usd: float, item: str) -> None:
        self.usd_month += usd
        self.items.append((usd, item))


def estimate_month(resources: Sequence[PolicyResource], hours: float = HOURS_PER_MONTH) -> Estimate:
    """Catalog list price of every accelerator machine x ``hours``, plus the disks the stack creates."""
    est = Estimate()
    nodes, skipped = accelerator_nodes(resources)
    est.unpriced.extend(skipped)
    for node in nodes:
        if node.count <= 0:
            continue  # a template nothing launches: no machines, no cost
        what = _describe(node.resource.resource_type, node.resource.name)
        try:
            if node.offer is None:
                raise LookupError(node.why_unpriced or f"{node.shape} is not in fullserver's catalog")
            od_rate, od_note = _hourly(node.offer, node.region, False)
            spot_rate, spot_note = _hourly(node.offer, node.region, True)
        except LookupError as exc:
            entry = f"{what}: {node.count:g} x {node.shape} ({exc})"
            est.unpriced.append(entry)
            est.unpriced_compute.append(entry)
            continue
        on_demand = node.count - node.spot_count
        usd = (on_demand * od_rate + node.spot_count * spot_rate) * hours
        kinds = " + ".join(
            f"{n:g} x {node.shape} {note} ${rate:,.2f}/h"
            for n, rate, note in ((on_demand, od_rate, od_note), (node.spot_count, spot_rate, spot_note))
            if n > 0
        )
        est.add(usd, f"{what}: {kinds}")
        for inline in node.disks:
            month = _disk_month(inline, node.region)
            if month is None:
                est.unpriced.append(f"{what}: {inline.kind} disk")
            elif month:
                est.add(month * node.count, f"{what}: {node.count:g} x {inline.gib:g} GiB {inline.kind}")
    for r in resources:
        disk: Disk | None = None
        region: str | None = None
        if r.resource_type == AWS_VOLUME:
            disk = Disk(
                "aws",
                str(_plain(r.props.get("type")) or "gp2"),
                _num(r.props.get("size")) or 0.0,
                _num(r.props.get("iops")) or 0.0,
                _num(r.props.get("throughput")) or 0.0,
            )
            region = _aws_region(r)
        elif r.resource_type in GCP_DISKS:
            disk = Disk(
                "gcp",
                _last(r.props.get("type") or "pd-standard"),
                _num(r.props.get("size")) or 0.0,
                _num(r.props.get("provisionedIops")) or 0.0,
                _num(r.props.get("provisionedThroughput")) or 0.0,
            )
            region = _zone_region(r.props.get("zone")) or _plain(r.props.get("region"))
        if disk is None:
            continue
        month = _disk_month(disk, region)
        if month is None:
            est.unpriced.append(f"{_describe(r.resource_type, r.name)}: {disk.kind}")
        else:
            est.add(month, f"{_describe(r.resource_type, r.name)}: {disk.gib:g} GiB {disk.kind}")
    return est


def check_budget(args: StackValidationArgs, report: ReportViolation) -> None:
    """A guard against the expensive typo (nodes: 20, p5 instead of g5): the stack's machines at list
    price must fit the platform team's monthly budget before anything is created. A machine whose
    type the catalog cannot price fails it too (20 x p3dn.24xlarge is not $0), unless the config
    says ``allowUnpriced``: then the priced part alone is held to the budget."""
    config = args.get_config()
    budget = _num(config.get("maxMonthlyUsd"))
    if budget is None:
        args.not_applicable("no maxMonthlyUsd configured for monthly-budget")
        return
    hours = _num(config.get("hoursPerMonth")) or HOURS_PER_MONTH
    est = estimate_month(args.resources, hours)
    if est.unpriced_compute and not _truthy(config.get("allowUnpriced", False)):
        report(
            f"cannot price {len(est.unpriced_compute)} compute resource(s), so the stack cannot be shown to fit "
            f"maxMonthlyUsd ${budget:,.0f} (the priced part is ${est.usd_month:,.0f}/month): "
            f"{'; '.join(est.unpriced_compute)}. Fix: use a shape fullserver's catalog lists (`fullserver catalog`), "
            "add the type with its prices to the catalog (fullserver/catalog/data/), or set allowUnpriced: true in "
            "the monthly-budget policy config to hold only the priced part to the budget.",
            None,
        )
    if est.usd_month <= budget:
        return
    top = "; ".join(item for _, item in sorted(est.items, key=lambda i: -i[0])[:3])
    left_out = f" Not priced: {'; '.join(est.unpriced)}." if est.unpriced else ""
    report(
        f"policy-time estimate ${est.usd_month:,.0f}/month exceeds maxMonthlyUsd ${budget:,.0f} "
        f"(catalog list prices x {hours:g} h, always on, plus disks; excludes egress, NAT, IPs, idle-time savings "
        f"and commitment discounts). Largest: {top}.{left_out} Fix: a smaller shape or fewer nodes/replicas, a spot "
        "profile for interruptible work, or raise maxMonthlyUsd in the policy config; `fullserver plan` shows the "
        "full estimate.",
        None,
    )


# --- the pack -------------------------------------------------------------------------------------

_PORTS_SCHEMA = {
    "type": "array",
    "items": {"type": "integer", "minimum": 1, "maximum": 65535},
    "description": "Ports that must not be open to 0.0.0.0/0 or ::/0 (default: SSH, RDP, VNC, Docker, etcd, "
    "Kubernetes, kubelet, Jupyter, TensorBoard, Ray dashboard).",
}

POLICIES: list[Policy] = [
    ResourceValidationPolicy(
        name="no-open-admin-ports",
        description="No SSH or admin ports (RDP, VNC, Docker, Kubernetes, Jupyter, ...) open from 0.0.0.0/0 or ::/0.",
        validate=check_open_admin_ports,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.CRITICAL,
        config_schema=PolicyConfigSchema(properties={"ports": _PORTS_SCHEMA}),
        remediation_steps=FIX_SSH,
    ),
    ResourceValidationPolicy(
        name="imdsv2-required",
        description="AWS launch templates and instances require IMDSv2 session tokens (metadataOptions.httpTokens).",
        validate=check_imdsv2,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
    ),
    ResourceValidationPolicy(
        name="encrypted-disks",
        description="EBS volumes, launch template and instance block devices are encrypted (GCP disks always are; CMEK on request).",
        validate=check_encrypted_disks,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        config_schema=PolicyConfigSchema(
            properties={
                "requireGcpCmek": {
                    "type": "boolean",
                    "default": False,
                    "description": "Demand customer-managed KMS keys on GCP disks.",
                }
            }
        ),
    ),
    ResourceValidationPolicy(
        name="public-ip-by-profile",
        description="No public IP unless the environment's fullserver profile allows one (security.public_ip).",
        validate=check_public_ip,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
    ),
    ResourceValidationPolicy(
        name="ephemeral-expiry",
        description="Every ephemeral environment carries an expiry (fullserver-ttl-hours or an expires-at tag).",
        validate=check_ephemeral_expiry,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.MEDIUM,
    ),
    StackValidationPolicy(
        name="balance-minimums",
        description="Every accelerator node meets its profile's per-accelerator CPU, RAM, NVMe and network minimums.",
        validate=check_balance,
        enforcement_level=EnforcementLevel.ADVISORY,
        severity=Severity.MEDIUM,
    ),
    ResourceValidationPolicy(
        name="production-on-demand-or-reserved",
        description="Production profiles (production-inference, scale-training) run on on-demand or reserved capacity, not spot.",
        validate=check_production_capacity,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        config_schema=PolicyConfigSchema(
            properties={
                "allowProfileSpot": {
                    "type": "boolean",
                    "default": True,
                    "description": "Let a production-stage profile whose own pricing is spot-with-fallback (batch-inference) use spot.",
                }
            }
        ),
    ),
    StackValidationPolicy(
        name="monthly-budget",
        description="The stack's policy-time monthly estimate (catalog list prices x 730 h, plus disks) is under maxMonthlyUsd.",
        validate=check_budget,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.MEDIUM,
        config_schema=PolicyConfigSchema(
            properties={
                "maxMonthlyUsd": {"type": "number", "minimum": 0, "description": "Monthly budget per stack in USD."},
                "hoursPerMonth": {
                    "type": "number",
                    "minimum": 1,
                    "maximum": 744,
                    "default": HOURS_PER_MONTH,
                    "description": "Hours each machine is assumed to run per month.",
                },
                "allowUnpriced": {
                    "type": "boolean",
                    "default": False,
                    "description": "Pass a stack whose priced part fits even when some machines' types are not in "
                    "the catalog (by default such a stack fails: it cannot be shown to fit).",
                },
            }
        ),
    ),
]


def pack_args() -> dict[str, Any]:
    """Keyword arguments of ``PolicyPack`` (``policy/__main__.py`` passes them unchanged)."""
    return {
        "name": PACK_NAME,
        "policies": POLICIES,
        "enforcement_level": EnforcementLevel.MANDATORY,
        "description": PACK_DESCRIPTION,
        "display_name": "fullserver guardrails",
        "tags": ["fullserver", "aws", "gcp", "security", "cost"],
    }
