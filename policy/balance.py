"""Policy ``balance-minimums`` (stack): every accelerator node meets its profile's minimums.

A fast accelerator starved of CPU, RAM, NVMe or network wastes what it costs. The profile's
per-accelerator minimums are the contract sizing met, and the judgement is the core's own
(``fullserver.balance.evaluate``) on the catalog's host figures, with the local SSDs and data disks
the resources actually attach, so hand edits or drift cannot break the contract unnoticed.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from fullserver.balance import evaluate
from policy.labels import profile_for
from policy.resources import describe
from policy.stack_nodes import accelerator_nodes


def check_balance(args: StackValidationArgs, report: ReportViolation) -> None:
    """A fast accelerator starved of CPU, RAM, NVMe or network wastes what it costs; the profile's
    minimums are the contract sizing met, and hand edits or drift must not break it."""
    nodes, _ = accelerator_nodes(args.resources)
    for node in nodes:
        if node.offer is None:
            continue
        profile = profile_for(node.labels, args.stack_tags)
        if profile is None:
            continue  # not a fullserver environment: nothing to hold it to
        balance = profile.balance_for(node.platform)
        update: dict[str, float] = {}
        if node.local_nvme_gib is not None:
            update["local_nvme_gib"] = node.local_nvme_gib
        if balance.nvme_may_be_attached and node.attached_gib:
            update["attached_storage_gib"] = node.attached_gib
        host = node.offer.host.model_copy(update=update) if update else node.offer.host
        result = evaluate(balance, host)
        what = describe(node.resource.resource_type, node.resource.name)
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


POLICY = StackValidationPolicy(
    name="balance-minimums",
    description="Every accelerator node meets its profile's per-accelerator CPU, RAM, NVMe and network minimums.",
    validate=check_balance,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
)
