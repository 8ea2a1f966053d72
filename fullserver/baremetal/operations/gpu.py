"""GPU persistence mode: keep the NVIDIA driver loaded between CUDA processes."""

from __future__ import annotations

from typing import Any

from fullserver.baremetal.config import HostLayout
from fullserver.baremetal.facts import GpuFact, GpuState
from fullserver.baremetal.operations.base import Change, HostContext, Record, Status, Step
from fullserver.baremetal.shell import Command

PM_TIMEOUT = 180.0
"""``nvidia-smi -pm`` can take well over 25 s on big hosts (Azure/AgentBaker#2829)."""


class GpuPersistenceStep(Step[GpuState]):
    """``nvidia-smi -pm 1``: keep the driver loaded (without it every CUDA start re-initialises).

    Undo record: ``{"was_enabled": bool}``; undo turns persistence off only if it was off before.
    """

    id = "gpu-persistence"

    def describe(self) -> str:
        return "GPU persistence mode on (nvidia-smi -pm 1)"

    def desired(self) -> dict[str, Any]:
        return {"persistence_mode": True}

    def fact(self, layout: HostLayout) -> GpuFact:
        return GpuFact()

    def status(self, facts: GpuState) -> Status:
        off = sum(1 for m in facts.modes if m != "Enabled")
        if off == 0 and facts.modes:
            return Status(True, f"persistence mode on for all {len(facts.modes)} GPUs")
        return Status(False, f"{off} of {len(facts.modes)} GPUs without persistence")

    def before(self, facts: GpuState) -> Record:
        return {"was_enabled": all(m == "Enabled" for m in facts.modes)}

    def change(self, facts: GpuState, ctx: HostContext, record: Record) -> Change:
        pm = Command(("nvidia-smi", "-pm", "1"), "nvidia-smi -pm 1", timeout=PM_TIMEOUT)
        return Change((pm,), record, record)

    def undo(self, layout: HostLayout, record: Record) -> list[Command]:
        if record.get("was_enabled"):
            return []
        return [Command(("nvidia-smi", "-pm", "0"), "nvidia-smi -pm 0", timeout=PM_TIMEOUT)]
