"""``AwsGpuArgs``, the one place an AWS ``EnvironmentSpec`` becomes them (``components.args``), and
what they may not ask for."""

from typing import NotRequired, cast

from components.args import (
    CommonArgs,
    ServingArgs,
    check_access,
    check_boot_disk,
    check_data_disk,
    check_local_ssds,
    check_serving,
    common_args,
    refuse,
    serving_args,
)
from fullserver.platform import Platform
from fullserver.platforms import Request
from fullserver.platforms import aws as ec2
from fullserver.spec import EnvironmentSpec


class AwsGpuArgs(CommonArgs):
    """One or more AWS accelerator instances from one launch template."""

    efa_interfaces: int
    """EFA devices per node (0: none); one per network card."""
    compact_placement: bool
    capacity_block: bool
    accelerator_kind: str
    """gpu, trainium or inferentia: picks the Deep Learning AMI."""
    spot_instance_types: NotRequired[list[str]]
    """Other balanced instance types the spot group may launch (its ``overrides``, after
    ``machine_type``): the balanced set's other members (``fullserver.capacity``)."""
    fallback_instance_types: NotRequired[list[str]]
    """Every type of the set, cheapest on demand first: the on-demand fallback group's
    ``overrides``, filled in this order (``prioritized``)."""
    serving: NotRequired[ServingArgs]
    zones: NotRequired[int]
    """Zones the subnets span (the core's ``billables.zones``: a serving group 3 when spread, else 2,
    as an ALB needs two; spot nodes without compact placement 3; otherwise 1); default 1."""


def aws_args(spec: EnvironmentSpec) -> AwsGpuArgs:
    common = common_args(spec)
    if spec.shape_limits is not None:
        common["shape"]["max_efa_interfaces"] = spec.shape_limits.efa_interfaces
    kind = spec.accelerator_kind.value if spec.accelerator_kind is not None else "gpu"
    extra = {
        "efa_interfaces": spec.network.efa_interfaces,
        "compact_placement": spec.network.compact_placement,
        "capacity_block": spec.capacity_block,
        "accelerator_kind": kind,
    }
    args = cast(AwsGpuArgs, {**common, **extra})
    held = spec.capacity
    if spec.spot and held is not None and held.used:
        args["spot_instance_types"] = held.machine_types[1:]
        by_price = sorted(held.members, key=lambda m: (m.on_demand_usd_hour, m.machine_type))
        args["fallback_instance_types"] = [m.machine_type for m in by_price]
    serving = serving_args(spec)
    if serving is not None:
        args["serving"] = serving
    if spec.billables is not None:
        args["zones"] = spec.billables.zones
    return args


def validate_aws(args: AwsGpuArgs) -> None:
    """Refuse, before any resource exists, what this shape or this cloud cannot do."""
    check_access(args["access"])
    check_serving(args.get("serving"), Platform.AWS_GPU)
    served = args.get("serving")
    tls = served.get("tls") if served is not None else None
    if tls is not None and "certificate_arn" not in tls:
        raise refuse(
            "serving.tls.certificate_arn",
            "an HTTPS listener needs an ACM certificate",
            "re-plan with the core (fullserver:serving.certificateArn)",
        )
    check_boot_disk(args)
    check_data_disk(args)  # gp3 IOPS/throughput limits: fullserver.platforms.aws
    check_local_ssds(args)
    disk = args.get("data_disk")
    request = Request(
        shape=args["machine_type"],
        spot=args["spot"],
        reservation=args.get("reservation"),
        zone=args.get("zone"),
        capacity_block=args["capacity_block"],
        data_disk=disk["kind"] if disk is not None else None,
        image=args.get("image"),
    )
    refusal = (
        ec2.efa_refusal(
            args["efa_interfaces"],
            args["shape"].get("max_efa_interfaces"),
            args["nodes"],
            args["machine_type"],
            args["access"]["public_ip"],
        )
        or ec2.RULES.refusal(request)
        or ec2.boot_disk_refusal(args["boot_disk_kind"])
    )
    if refusal is not None:
        raise refuse(refusal.field, refusal.what, refusal.hint)
    serving = args.get("serving")
    if serving is not None and args["nodes"] != 1:
        raise refuse("nodes", "a serving group scales replicas of one node; nodes must be 1")
    if serving is not None and args["spot"]:
        # the plan would price spot replicas the group never asks for (no spot market in its template)
        raise refuse(
            "spot",
            "an AWS serving group launches on-demand replicas from its launch template, not spot",
            "serve on AWS from an on-demand profile (realtime-inference)",
        )
    if serving is not None and args.get("zone") and args.get("zones", 1) > 1:
        raise refuse(
            "zone",
            f"the serving load balancer spans {args.get('zones')} zones, and a pinned zone gives its subnets one",
            "remove fullserver:zone: the group's subnets go to the zones offering the instance type",
        )
    if serving is not None and args.get("zones", 1) < ec2.LB_MIN_ZONES:
        raise refuse(
            "zones",
            f"an Application Load Balancer needs subnets in {ec2.LB_MIN_ZONES} zones or more, not {args.get('zones', 1)}",
            "re-plan with the core, which sets the zones",
        )
