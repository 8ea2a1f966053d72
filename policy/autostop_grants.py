"""Policy ``autostop-grants-scoped``: an idle node may stop its own environment and nothing else.

AWS: a role may set only groups tagged with the stack's environment, and only to 0/0; Google
Cloud: a stop role holds one stop way's permissions, bound on the stack's VMs, or on the project
with an IAM Condition naming the stack's group (Cloud TPU: only Cloud TPU's stop permissions).
The rules are the core's (``aws_autostop.group_stop_problems``, ``fullserver.autostop.grants``);
each cloud's reader finds the grants (``policy.clouds``).
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from policy.clouds import readers
from policy.resources import describe


def check_autostop_grants(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    for reader in readers():
        for r, problem in reader.autostop_grants(resources):
            report(f"{describe(r.resource_type, r.name)} {problem}.", r.urn)


POLICY = StackValidationPolicy(
    name="autostop-grants-scoped",
    description="Every autostop grant lets an idle node stop its own environment only: its own groups, "
    "only to zero, or a stop role of one way's permissions on its own VMs or group.",
    validate=check_autostop_grants,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
)
