"""``GcpGpuArgs``, the one place a GCP GPU ``EnvironmentSpec`` becomes them (``components.args``), and
what they may not ask for."""

from typing import NotRequired, cast

import pulumi

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
from fullserver.platforms import Request, gcp, gcp_capacity
from fullserver.spec import EnvironmentSpec


class GcpGpuArgs(CommonArgs):
    """One or more Compute Engine GPU VMs, or a managed group of them."""

    accelerator: NotRequired[str]
    """The GPU model, e.g. L4."""
    accelerator_type: NotRequired[str]
    """GCE accelerator type to attach, e.g. nvidia-tesla-t4 (N1 only; A2/A3/A4/G2 carry their GPUs)."""
    accelerator_count: int
    compact_placement: bool
    tier1_networking: bool
    serving: NotRequired[ServingArgs]
    project: NotRequired[pulumi.Input[str]]
    capacity_machine_types: NotRequired[list[str]]
    """Spot or on-demand nodes as a regional group over the balanced set (``components.gcp.flexible``):
    its machine types, cheapest first (the template's own first)."""
    capacity_zones: NotRequired[list[str]]
    """The zones the group spreads over: every zone of the region listing a member."""
    capacity_stateful_disks: NotRequired[list[str]]
    """The template disks the group keeps across a VM's recreation (``gcp_capacity.stateful_disks``)."""


# GCP accelerator type names for GPUs attached to N1 hosts: the GCP platform module's table.
GCP_ATTACHED_GPU_TYPES = gcp.ATTACHED_GPU_TYPES


def gcp_args(spec: EnvironmentSpec, project: pulumi.Input[str] | None = None) -> GcpGpuArgs:
    common = common_args(spec)
    extra = {
        "accelerator_count": spec.accelerator_count,
        "compact_placement": spec.network.compact_placement,
        # Per-VM Tier_1: the core's decision (fullserver.billables), which the plan prices.
        "tier1_networking": spec.billables.tier1 if spec.billables is not None else False,
    }
    args = cast(GcpGpuArgs, {**common, **extra})
    if spec.accelerator:
        args["accelerator"] = spec.accelerator
    # An offer named differently from its machine type is a host with GPUs attached (N1).
    if spec.offer != spec.machine_type and spec.accelerator:
        gpu_type = GCP_ATTACHED_GPU_TYPES.get(spec.accelerator)
        if gpu_type is None:
            raise refuse(
                "accelerator",
                f"{spec.accelerator} cannot be attached to {spec.machine_type}",
                "choose a GCP GPU machine type",
            )
        args["accelerator_type"] = gpu_type
    serving = serving_args(spec)
    if serving is not None:
        args["serving"] = serving
    held = spec.capacity
    if held is not None and gcp_capacity.in_group(spec):
        args["capacity_machine_types"] = held.machine_types
        args["capacity_zones"] = held.zones
        args["capacity_stateful_disks"] = gcp_capacity.stateful_disks(spec)
    if project is not None:
        args["project"] = project
    return args


def validate_gcp(args: GcpGpuArgs) -> None:
    """Refuse, before any resource exists, what this shape or this cloud cannot do."""
    check_access(args["access"])
    check_serving(args.get("serving"), Platform.GCP_GPU)
    served = args.get("serving")
    tls = served.get("tls") if served is not None else None
    if tls is not None and (not tls["domains"] or "certificate_arn" in tls):
        raise refuse(
            "serving.tls",
            "HTTPS here is a Google-managed certificate for the stack's domains, and nothing else",
            "re-plan with the core (fullserver:serving.domains)",
        )
    check_boot_disk(args)
    check_data_disk(args)
    check_local_ssds(args)
    serving = args.get("serving")
    disk = args.get("data_disk")
    request = Request(
        shape=args["machine_type"],
        spot=args["spot"],
        reservation=args.get("reservation"),
        zone=args.get("zone"),
        data_disk=disk["kind"] if disk is not None else None,
        image=args.get("image"),
    )
    refusal = gcp.RULES.refusal(request) or gcp.gpu_nic_refusal(args["machine_type"], args["nodes"], args.get("zone"))
    if refusal is not None:
        raise refuse(refusal.field, refusal.what, refusal.hint)
    if serving is not None and args["nodes"] != 1:
        raise refuse("nodes", "a serving group scales replicas of one node; nodes must be 1")
    if args.get("accelerator_type") and not args["accelerator_count"]:
        raise refuse("accelerator_count", "GPUs to attach but a count of 0")
    for z in serving.get("zones", []) if serving is not None else []:
        if not gcp.RULES.zone_in_region(z, args["region"]):
            raise refuse("serving.zones", f"zone {z} is not in the region {args['region']}")
