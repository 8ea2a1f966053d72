"""Component arguments, and the one place where an ``EnvironmentSpec`` becomes them.

Args are ``TypedDict``s so the components can later be served to other languages
(``pulumi.provider.experimental``); the analyzer rejects ``Union`` types other than ``Optional``,
so optional fields are ``NotRequired`` and mutually exclusive choices are separate fields.

Design notes: docs/design/components.md.
"""

import math
from typing import Any, NotRequired, TypedDict

from fullserver.baremetal.keys import check_public_key
from fullserver.errors import FullserverError
from fullserver.kube.serve import clear_text_of
from fullserver.netcheck import check_ssh_ranges
from fullserver.platform import Platform
from fullserver.platforms import disk_limits, load_balancer_problem, rules_for
from fullserver.serving import endpoint_problem
from fullserver.spec import EnvironmentSpec
from fullserver.tls import check_certificate_arn, check_domain, clear_text


class SpecRefused(FullserverError):
    """The spec asks for something the component cannot build; raised before any resource exists."""


def refuse(field: str, what: str, hint: str = "") -> SpecRefused:
    return SpecRefused(f"spec.{field}", what, hint)


class DataDiskArgs(TypedDict):
    """A block volume for datasets and checkpoints, sized and provisioned by the core."""

    kind: str
    """gp3, pd-balanced or hyperdisk-balanced."""
    size_gib: int
    iops: NotRequired[int]
    """Provisioned IOPS (gp3, Hyperdisk); omitted where the disk kind scales with size."""
    throughput_mbps: NotRequired[int]
    """Provisioned throughput in MiB/s (gp3, Hyperdisk)."""
    read_only: NotRequired[bool]
    """Attach read-only (the only mode a multi-host TPU slice accepts)."""


class AccessArgs(TypedDict):
    """Who may reach the nodes, and how."""

    ssh_source_ranges: list[str]
    """CIDRs allowed to SSH; never 0.0.0.0/0. Empty means IAP (GCP) or SSM only (AWS)."""
    public_ip: bool
    """Give nodes an external address (only where the profile allows it)."""
    nat: NotRequired[bool]
    """Nodes reach the internet through a NAT gateway / Cloud NAT (the core's ``billables.nat``);
    default: when they have no public address."""
    ssh_public_keys: NotRequired[list[str]]
    """OpenSSH public key lines installed for the nodes' login user (``components.startup.LOGIN_USER``):
    AWS through the boot script, GCP GPU VMs and single-host TPU VMs through ``ssh-keys`` metadata
    (OS Login is then off on those nodes). Without keys: Session Manager (AWS), OS Login (GCP)."""


class TlsArgs(TypedDict):
    """HTTPS on the serving load balancer (``fullserver.tls.Tls``): the plain-HTTP port redirects here."""

    port: int
    certificate_arn: NotRequired[str]
    """AWS: the ACM certificate of the HTTPS listener."""
    domains: list[str]
    """The names clients call; GCP: the Google-managed certificate's."""


class ServingArgs(TypedDict):
    """A managed group of identical balanced nodes behind a load balancer, each running the model
    server (``fullserver.serving.ServingSpec``: the core decided every value)."""

    min_replicas: int
    max_replicas: int
    target_utilisation: float
    """Share of ``requests_per_second`` per replica the autoscaler holds."""
    requests_per_second: float
    """One replica's request capacity (GCP ``max_rate_per_instance``; AWS: times 60 and the target,
    the ``ALBRequestCountPerTarget`` target)."""
    spread_zones: bool
    """Spread replicas across the region's zones."""
    zones: NotRequired[list[str]]
    """The zones to spread over (GCP: the regional group's ``distribution_policy_zones``), from the
    catalog where it lists the zones offering the shape; without them Compute Engine picks the zones."""
    image: str
    """The model server's container image (default ``vllm/vllm-openai``)."""
    server_args: list[str]
    """The server's arguments (model, port, tensor parallel size, the stack's own)."""
    model: str
    port: int
    """The model server's HTTP port: health checks and the load balancer's backends."""
    health_path: str
    """HTTP path answering 200 once the model is loaded (vLLM: /health)."""
    load_balancer: str
    """internal or external."""
    lb_port: int
    initial_delay_seconds: int
    """No health verdict before this: autohealing's initial delay, the ASG's grace period."""
    health_interval_seconds: int
    healthy_threshold: int
    unhealthy_threshold: int
    request_timeout_seconds: int
    drain_seconds: int
    secrets: dict[str, str]
    """The cloud secrets (AWS SSM parameters, GCP Secret Manager secrets) the model server reads,
    by what they are: ``token`` (Hugging Face) and ``api_key`` (the endpoint's). The nodes may read
    exactly these, and each server start fetches them."""
    tls: NotRequired[TlsArgs]
    """HTTPS on the load balancer; absent: plain HTTP on ``lb_port``."""
    plain_http: NotRequired[bool]
    """The stack accepted an internet-facing endpoint without TLS (``serving.plainHttp``,
    ``fullserver.tls.clear_text``); the load balancer says so in a tag or label the policy reads."""


class ShapeLimitArgs(TypedDict):
    """What the machine shape can carry (from the catalog), for plan-time refusals."""

    max_local_ssds: int
    local_ssd_counts: NotRequired[list[int]]
    """Selectable local SSD counts where the shape lets you choose (GCP); all-or-nothing otherwise."""
    max_efa_interfaces: NotRequired[int]


class AutostopArgs(TypedDict):
    """The idle agent the nodes run (``fullserver.autostop``): its minutes and the platform's way
    of stopping (``StopWay.key``), as the plan decided them."""

    minutes: int
    way: str


class CommonArgs(TypedDict):
    """What every cloud environment needs: where, how big, how paid, how reached, how labelled."""

    environment: str
    region: str
    zone: NotRequired[str]
    machine_type: str
    nodes: int
    spot: bool
    """Run on spot capacity (the core decided spot is priced and allowed)."""
    reservation: NotRequired[str]
    """Consume this reservation (AWS cr-... id, GCP reservation name)."""
    boot_disk_gib: int
    boot_disk_kind: str
    """gp3, pd-balanced or hyperdisk-balanced (A3/A4 take Hyperdisk only)."""
    data_disk: NotRequired[DataDiskArgs]
    local_ssd_count: int
    local_ssd_gib: int
    image: NotRequired[str]
    framework: str
    access: AccessArgs
    labels: dict[str, str]
    protect: bool
    """Persistent environments are protected from accidental deletion."""
    shape: ShapeLimitArgs
    autostop: NotRequired[AutostopArgs]


def access_args(spec: EnvironmentSpec) -> AccessArgs:
    access: AccessArgs = {
        "ssh_source_ranges": list(spec.network.ssh_source_ranges),
        "public_ip": spec.network.public_ip,
    }
    if spec.billables is not None:
        access["nat"] = spec.billables.nat
    if spec.network.ssh_public_keys:
        access["ssh_public_keys"] = list(spec.network.ssh_public_keys)
    return access


def common_args(spec: EnvironmentSpec) -> CommonArgs:
    shape = spec.shape_limits
    limits: ShapeLimitArgs = {"max_local_ssds": shape.max_local_ssds if shape else spec.local_nvme_disks}
    if shape and shape.local_ssd_counts:
        limits["local_ssd_counts"] = list(shape.local_ssd_counts)
    args: CommonArgs = {
        "environment": spec.environment,
        "region": spec.region,
        "machine_type": spec.machine_type,
        "nodes": spec.nodes,
        "spot": spec.spot,
        "boot_disk_gib": spec.boot_disk_gib,
        "boot_disk_kind": spec.boot_disk_kind,
        "local_ssd_count": spec.local_nvme_disks,
        "local_ssd_gib": math.ceil(spec.local_nvme_disk_gib),
        "framework": spec.framework,
        "access": access_args(spec),
        "labels": dict(spec.labels),
        "protect": spec.lifecycle.protect,
        "shape": limits,
    }
    if spec.zone:
        args["zone"] = spec.zone
    if spec.reservation:
        args["reservation"] = spec.reservation
    if spec.image:
        args["image"] = spec.image
    if spec.data_disk is not None:
        disk: DataDiskArgs = {"kind": spec.data_disk.kind, "size_gib": spec.data_disk.size_gib}
        if spec.data_disk.iops is not None:
            disk["iops"] = spec.data_disk.iops
        if spec.data_disk.throughput_mbps is not None:
            disk["throughput_mbps"] = spec.data_disk.throughput_mbps
        args["data_disk"] = disk
    return args


def serving_args(spec: EnvironmentSpec) -> ServingArgs | None:
    if spec.serving is None:
        return None
    if spec.endpoint is None:
        raise refuse("endpoint", "a serving spec without its serving path", "plan it with the core (complete_spec)")
    s = spec.endpoint
    args: ServingArgs = {
        "min_replicas": s.min_replicas,
        "max_replicas": s.max_replicas,
        "target_utilisation": s.target_utilisation,
        "requests_per_second": s.replica_requests_per_second,
        "spread_zones": s.spread_zones,
        "image": s.server.image,
        "server_args": list(s.server.args),
        "model": s.server.model,
        "port": s.server.port,
        "health_path": s.server.health_path,
        "load_balancer": s.load_balancer,
        "lb_port": s.lb_port,
        "initial_delay_seconds": s.health_initial_delay_seconds,
        "health_interval_seconds": s.health_interval_seconds,
        "healthy_threshold": s.healthy_threshold,
        "unhealthy_threshold": s.unhealthy_threshold,
        "request_timeout_seconds": s.request_timeout_seconds,
        "drain_seconds": s.drain_seconds,
        "secrets": s.server.secrets,
    }
    if s.zones:
        args["zones"] = list(s.zones)
    if s.tls is not None:
        tls: TlsArgs = {"port": s.tls.port, "domains": list(s.tls.domains)}
        if s.tls.certificate_arn is not None:
            tls["certificate_arn"] = s.tls.certificate_arn
        args["tls"] = tls
    if s.plain_http:
        args["plain_http"] = True
    return args


def check_access(access: AccessArgs) -> None:
    """SSH is never open to much of the internet, whatever wrote the args: by the core's rule
    (``fullserver.netcheck``), called here because args written in another language never passed
    through the core's config validation."""
    try:
        check_ssh_ranges(list(access["ssh_source_ranges"]))
    except ValueError as exc:
        raise refuse("network.ssh_source_ranges", str(exc)) from None
    for i, key in enumerate(access.get("ssh_public_keys", [])):
        try:
            check_public_key(key)
        except ValueError as exc:
            raise refuse(f"network.ssh_public_keys[{i}]", str(exc)) from None


def check_serving(serving: ServingArgs | None, platform: Platform) -> None:
    """A load balancer the platform builds; an endpoint on the internet answers only with its API
    key, and sends it only over TLS unless the stack said otherwise: the core's rules
    (``fullserver.platforms.load_balancer_problem``, ``fullserver.serving.endpoint_problem``,
    ``fullserver.tls.clear_text``), for args that never passed through the core."""
    if serving is None:
        return
    scheme = load_balancer_problem(platform, serving["load_balancer"])
    if scheme is not None:
        raise refuse("serving.load_balancer", *scheme)
    provider = rules_for(platform).provider
    problem = endpoint_problem(serving["load_balancer"], serving["secrets"].get("api_key"))
    if problem is not None:
        raise refuse("serving.server.api_key_secret", *problem)
    exposed = clear_text(provider, serving["load_balancer"], "tls" in serving, serving.get("plain_http", False))
    if exposed is not None and not exposed.allowed:
        raise refuse("serving.tls", exposed.what, exposed.hint)
    tls = serving.get("tls")
    try:  # the core's rules for the certificate and the names (``fullserver.tls``)
        if tls is not None and "certificate_arn" in tls:
            check_certificate_arn(tls["certificate_arn"])
        for domain in tls["domains"] if tls is not None else []:
            if check_domain(domain) != domain:
                raise ValueError(f"'{domain}' is not lowercased")
    except ValueError as exc:
        raise refuse("serving.tls", str(exc), "re-plan with the core") from None


def check_boot_disk(args: CommonArgs) -> None:
    if not args["boot_disk_kind"]:
        raise refuse("boot_disk_kind", "no boot disk kind is set", "re-plan with the core, which sets it")


def check_data_disk(args: CommonArgs) -> None:
    """A positive size, and provisioned IOPS/throughput within the disk kind's limits (the core's
    ``fullserver.platforms.disk_limits``, the one place for them) where the kind provisions them."""
    disk = args.get("data_disk")
    if disk is None:
        return
    size = disk["size_gib"]
    if size <= 0:
        raise refuse("data_disk.size_gib", f"{size} GiB is not a disk size")
    kind = disk["kind"]
    limits = disk_limits(kind)
    if limits is None:
        return
    iops = disk.get("iops", limits.min_iops)
    mbps = disk.get("throughput_mbps", limits.min_mbps)
    max_iops = min(limits.max_iops, limits.iops_per_gib * size)
    if not limits.min_iops <= iops <= max_iops:
        raise refuse(
            "data_disk.iops",
            f"{kind} takes {limits.min_iops}-{max_iops} IOPS at {size} GiB, not {iops}",
            "re-plan with the core, which provisions within the limits",
        )
    per_iops = f" and at most {limits.mbps_per_iops} MiB/s per IOPS ({iops} IOPS)" if limits.mbps_per_iops else ""
    if not limits.min_mbps <= mbps <= limits.max_mbps or (
        limits.mbps_per_iops is not None and mbps > iops * limits.mbps_per_iops
    ):
        raise refuse(
            "data_disk.throughput_mbps",
            f"{kind} takes {limits.min_mbps}-{limits.max_mbps} MiB/s{per_iops}, not {mbps}",
            "re-plan with the core, which provisions within the limits",
        )


def check_local_ssds(args: CommonArgs) -> None:
    """The shape fixes how many local SSDs exist (and which counts can be chosen)."""
    count = args["local_ssd_count"]
    shape = args["shape"]
    if count > shape["max_local_ssds"]:
        raise refuse(
            "local_nvme_disks",
            f"{count} local SSDs requested but {args['machine_type']} has at most {shape['max_local_ssds']}",
            "re-plan with the core, which picks the count the shape allows",
        )
    counts = shape.get("local_ssd_counts")
    if count and counts and count not in counts:
        raise refuse(
            "local_nvme_disks",
            f"{args['machine_type']} takes {', '.join(map(str, counts))} local SSDs, not {count}",
            "re-plan with the core, which picks an allowed count",
        )


def check_workload_exposure(manifests: list[dict[str, Any]]) -> None:
    """A node pool's workload sends no API key in clear across the internet unless its stack said
    so: the core's rule on the manifests as they will be applied (``fullserver.kube.serve.clear_text_of``)."""
    exposed = clear_text_of(manifests)
    if exposed is not None and not exposed.allowed:
        raise refuse("workload", exposed.what, exposed.hint)
