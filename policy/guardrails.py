"""fullserver's guardrail policy pack (pulumi-policy): the policies, and the ``PolicyPack`` arguments.

``policy/__main__.py`` only hands :func:`pack_args` to ``PolicyPack``, which starts a gRPC server
and blocks forever; everything else is importable, so tests can call each policy's ``validate``
with hand-built ``ResourceValidationArgs`` / ``StackValidationArgs``. One module per policy holds
its check and its ``Policy`` object; what they share lives beside them: see the design notes.

Design notes: docs/design/policy.md.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, Policy

from fullserver.clouds import all_clouds
from policy import (
    admin_ports,
    autostop_grants,
    balance,
    budget,
    capacity,
    clear_text,
    encryption,
    expiry,
    imdsv2,
    public_ip,
)

PACK_NAME = "fullserver-guardrails"
PACK_DESCRIPTION = (
    "fullserver guardrails: no admin ports from the internet, IMDSv2, encrypted disks, public IPs only where the "
    "profile allows, no API key in clear, autostop grants scoped to their own environment, expiring ephemeral environments, balanced shapes, production on on-demand or reserved "
    "capacity, and a monthly budget."
)

POLICIES: list[Policy] = [
    admin_ports.POLICY,
    imdsv2.POLICY,
    encryption.POLICY,
    public_ip.POLICY,
    clear_text.POLICY,
    autostop_grants.POLICY,
    expiry.POLICY,
    balance.POLICY,
    capacity.POLICY,
    budget.POLICY,
]


def pack_args() -> dict[str, Any]:
    """Keyword arguments of ``PolicyPack`` (``policy/__main__.py`` passes them unchanged)."""
    return {
        "name": PACK_NAME,
        "policies": POLICIES,
        "enforcement_level": EnforcementLevel.MANDATORY,
        "description": PACK_DESCRIPTION,
        "display_name": "fullserver guardrails",
        "tags": ["fullserver", *(c.key for c in all_clouds()), "security", "cost"],
    }
