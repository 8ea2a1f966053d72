"""The balance check: does a host give each accelerator enough CPU, RAM, fast storage and network?

The same ``BalanceReport`` describes a catalog shape during sizing and a probed bare-metal host
during an audit, so a person reads one table whatever the platform.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from fullserver.profiles import Balance, Minimum

if TYPE_CHECKING:  # the catalog builds hosts; the balance reads them
    from fullserver.catalog.model import Accelerator


class Host(BaseModel):
    """What one node provides, in the units the balance minimums use."""

    model_config = ConfigDict(frozen=True)

    accelerator: str | None
    accelerator_count: int
    accelerator_memory_gib: float
    vcpus: int
    physical_cores: int | None = None
    memory_gib: float
    local_nvme_gib: float
    attached_storage_gib: float = 0.0
    network_gbps: float | None
    """``None``: no source publishes it. A minimum on it is then a gap ("not published"): never
    compared as 0 Gbps, never a refusal, and the plan asks for the figure."""

    @classmethod
    def of(
        cls,
        accelerator: Accelerator | None,
        count: int,
        *,
        vcpus: int,
        memory_gib: float,
        local_nvme_gib: float,
        network_gbps: float | None,
        physical_cores: int | None = None,
    ) -> Host:
        """One node with ``count`` of ``accelerator`` (the catalog's model, or none): the one
        builder of a host, whether a catalog shape, a TPU slice's host or a declared server."""
        return cls(
            accelerator=accelerator.name if accelerator else None,
            accelerator_count=count,
            accelerator_memory_gib=accelerator.memory_gib if accelerator else 0.0,
            vcpus=vcpus,
            physical_cores=physical_cores,
            memory_gib=memory_gib,
            local_nvme_gib=local_nvme_gib,
            network_gbps=network_gbps,
        )


class BalanceLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    dimension: str
    unit: str
    required: float
    provided: float
    ok: bool
    reason: str
    note: str = ""

    known: bool = True
    """False when the host's figure is not published: a gap, not a shortfall. The line does not
    refuse the host (a missing figure is not a failed rule); the plan warns and asks for it."""

    @property
    def shortfall(self) -> str:
        if not self.known:
            return f"{self.dimension} not published (needs {_fmt(self.required)} {self.unit})"
        return f"{self.dimension} {_fmt(self.provided)} {self.unit} < {_fmt(self.required)} {self.unit}"


class BalanceReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    lines: list[BalanceLine]

    @property
    def ok(self) -> bool:
        return all(line.ok for line in self.lines)

    @property
    def short(self) -> list[BalanceLine]:
        return [line for line in self.lines if not line.ok]

    @property
    def gaps(self) -> list[BalanceLine]:
        """Minimums that could not be checked because no source publishes the host's figure."""
        return [line for line in self.lines if not line.known]

    def summary(self) -> str:
        short = self.short  # not ``ok``: that is no line short
        if short:
            return "short: " + "; ".join(line.shortfall for line in short)
        gaps = self.gaps
        if gaps:
            return "balanced where published; unchecked: " + "; ".join(line.shortfall for line in gaps)
        return "balanced"


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def _line(
    dimension: str, unit: str, minimum: Minimum, required: float, provided: float, note: str = "", known: bool = True
) -> BalanceLine:
    # Round the requirement up to what can be bought: whole vCPUs, whole GiB. A figure not known
    # is a gap, never a shortfall (``BalanceLine.known``).
    required = math.ceil(required - 1e-9)
    return BalanceLine(
        dimension=dimension,
        unit=unit,
        required=required,
        provided=provided,
        ok=not known or provided + 1e-9 >= required,
        reason=minimum.reason,
        note=note,
        known=known,
    )


def required_attached_gib(balance: Balance, host: Host) -> float:
    """Block storage needed to make up local NVMe the host lacks (0 when none is needed or allowed)."""
    if balance.nvme_gib_per_accelerator is None or not balance.nvme_may_be_attached:
        return 0.0
    need = balance.nvme_gib_per_accelerator.value * max(host.accelerator_count, 1)
    return float(max(0, math.ceil(need - host.local_nvme_gib)))


def _network_line(dimension: str, minimum: Minimum, required: float, gbps: float | None, note: str = "") -> BalanceLine:
    """A host network minimum; an unpublished bandwidth is a gap (``known`` False), never 0 Gbps
    and never a refusal: the rule cannot be checked, so the plan asks for the figure instead."""
    if gbps is None:
        return _line(dimension, "Gbps", minimum, required, 0.0, "no source publishes the host's bandwidth", known=False)
    return _line(dimension, "Gbps", minimum, required, gbps, note)


def evaluate(balance: Balance, host: Host, nodes: int = 1) -> BalanceReport:
    """Compare one node with the minimums; accelerator-less hosts count as one accelerator.

    ``nodes`` is how many nodes the environment has (a multi-host TPU slice counts as one: its
    hosts talk over ICI); minimums between nodes apply only when there is more than one.
    """
    n = max(host.accelerator_count, 1)
    lines: list[BalanceLine] = []

    cpu = balance.cpu_per_accelerator
    if cpu.unit == "core":
        cores = host.physical_cores if host.physical_cores is not None else host.vcpus // 2
        note = "" if host.physical_cores is not None else "cores = vCPUs / 2 (two threads per core)"
        lines.append(_line("cpu", "cores", cpu, cpu.value * n, cores, note))
    else:
        lines.append(_line("cpu", "vCPUs", cpu, cpu.value * n, host.vcpus))

    ratio = balance.ram_per_accelerator_memory
    by_ratio = ratio.value * n * host.accelerator_memory_gib
    floor = balance.ram_floor_gib
    if by_ratio >= floor.value:
        note = f"{ratio.value:g} x {_fmt(n * host.accelerator_memory_gib)} GiB accelerator memory"
        lines.append(_line("ram", "GiB", ratio, by_ratio, host.memory_gib, note))
    else:
        lines.append(_line("ram", "GiB", floor, floor.value, host.memory_gib, "absolute floor"))

    nvme = balance.nvme_gib_per_accelerator
    if nvme is not None:
        provided = host.local_nvme_gib + host.attached_storage_gib
        note = (
            f"includes {_fmt(host.attached_storage_gib)} GiB attached block storage"
            if host.attached_storage_gib
            else ""
        )
        lines.append(_line("nvme", "GiB", nvme, nvme.value * n, provided, note))

    net = balance.network_gbps_per_accelerator
    if net is not None:
        lines.append(_network_line("network", net, net.value * n, host.network_gbps))
    if nodes > 1:
        line = _internode_line(balance, n, host.network_gbps, nodes)
        if line is not None:
            lines.append(line)
    return BalanceReport(lines=lines)


def _internode_line(balance: Balance, n: int, gbps: float | None, nodes: int) -> BalanceLine | None:
    """Traffic between nodes: the per-accelerator minimum, or the per-node floor where that is more.

    The floor exists because a node's share of a gradient all-reduce is the whole gradient whatever
    its accelerator count: a one-GPU node needs as much bandwidth as an eight-GPU one, which a
    per-accelerator minimum alone lets it skip.
    """
    per = balance.internode_network_gbps_per_accelerator
    floor = balance.internode_network_gbps_floor
    by_count = per.value * n if per is not None else 0.0
    if floor is not None and floor.value > by_count:
        return _network_line("internode network", floor, floor.value, gbps, f"{nodes} nodes; per-node floor")
    if per is not None:
        return _network_line("internode network", per, by_count, gbps, f"{nodes} nodes")
    return None
