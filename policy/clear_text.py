"""Policy ``no-api-key-in-clear``: no serving endpoint sends its API key across the internet in
clear unless its stack said so (``fullserver:serving.plainHttp: true``).

Clients send ``Authorization: Bearer <key>`` with every request; over plain HTTP anyone on the path
reads it. The rule is the core's (``fullserver.tls.clear_text``); this reads what the stack builds:
see the design notes.

Design notes: docs/design/policy.md.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from fullserver.kube.serve import clear_text_of
from fullserver.tls import ClearText
from policy.clouds import readers
from policy.resources import describe, plain

CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"


def findings(resources: list[PolicyResource]) -> list[tuple[PolicyResource, ClearText]]:
    """Each resource that would send the key in clear, with the rule's verdict (allowed or not)."""
    out: list[tuple[PolicyResource, ClearText]] = []
    by_type = {t: read for reader in readers() for t, read in reader.CLEAR_TEXT.items()}  # each cloud's
    for r in resources:
        read = by_type.get(r.resource_type)
        if read is not None:
            verdicts = list(read(r))
        elif r.resource_type == CONFIG_GROUP:
            objs = plain(r.props.get("objs"))
            verdicts = [clear_text_of([o for o in objs if isinstance(o, dict)])] if isinstance(objs, list) else []
        else:
            continue
        out.extend((r, v) for v in verdicts if v is not None)
    return out


def check_clear_text(args: StackValidationArgs, report: ReportViolation) -> None:
    for r, verdict in findings(list(args.resources)):
        if not verdict.allowed:
            report(
                f"{describe(r.resource_type, r.name)}: {verdict.what}. Fix: {verdict.hint} in the stack's config.",
                r.urn,
            )


POLICY = StackValidationPolicy(
    name="no-api-key-in-clear",
    description="No internet-facing serving endpoint without TLS (the API key would cross the internet in clear) "
    "unless the stack sets fullserver:serving.plainHttp: true.",
    validate=check_clear_text,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
)
