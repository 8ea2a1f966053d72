"""``TpuVmArgs``, the one place a TPU ``EnvironmentSpec`` becomes them (``components.args``), and what
they may not ask for."""

from typing import NotRequired, cast

import pulumi

from components.args import CommonArgs, check_access, check_data_disk, common_args, refuse
from fullserver.platforms import Request, tpu
from fullserver.spec import EnvironmentSpec


class TpuVmArgs(CommonArgs):
    """A Cloud TPU VM (single host) or slice (multi-host)."""

    accelerator_type: str
    topology: str
    runtime_version: str
    hosts: int
    queued: bool
    """Request capacity through a queued resource (always for multi-host slices)."""
    project: NotRequired[pulumi.Input[str]]
    """GCP project; default: the provider's project."""


def tpu_args(spec: EnvironmentSpec, project: pulumi.Input[str] | None = None) -> TpuVmArgs:
    if spec.tpu is None:
        raise refuse("tpu", "a tpu-vm spec needs its TPU section", "size the workload with the core")
    common = common_args(spec)
    extra = {
        "accelerator_type": spec.tpu.accelerator_type,
        "topology": spec.tpu.topology,
        "runtime_version": spec.tpu.runtime_version,
        "hosts": spec.tpu.hosts,
        "queued": spec.tpu.queued,
    }
    args = cast(TpuVmArgs, {**common, **extra})
    if project is not None:
        args["project"] = project
    return args


def validate_tpu(args: TpuVmArgs) -> None:
    """Refuse, before any resource exists, what a TPU environment cannot be."""
    check_access(args["access"])
    check_data_disk(args)
    disk = args.get("data_disk")
    request = Request(
        shape=args["accelerator_type"],
        hosts=args["hosts"],
        spot=args["spot"],
        reservation=args.get("reservation"),
        zone=args.get("zone"),
        queued=args["queued"],
        queued_asked=args["queued"],
        data_disk=disk["kind"] if disk is not None else None,
        data_disk_read_only=bool(disk and disk.get("read_only", False)),
        local_ssds=args["local_ssd_count"],
    )
    refusal = tpu.RULES.refusal(request)
    if refusal is not None:
        raise refuse(refusal.field, refusal.what, refusal.hint)
