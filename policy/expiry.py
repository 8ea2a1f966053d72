"""Policy ``ephemeral-expiry``: every ephemeral environment carries an expiry.

Ephemeral environments are the ones nobody remembers; without an expiry (a TTL label, an
expires-at label, or the stack tag ``fullserver ephemeral`` writes) ``fullserver janitor`` cannot
act on them.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from fullserver.rules import LABEL_ENVIRONMENT, LABEL_EXPIRES, LABEL_LIFECYCLE, LABEL_TTL, TAG_EXPIRES_AT
from policy.labels import labels_of, profile_for
from policy.resources import AWS_VOLUME, COMPUTE_TYPES, GCP_DISKS, describe, number


def check_ephemeral_expiry(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Ephemeral environments are the ones nobody remembers; without an expiry the janitor cannot act."""
    if args.resource_type not in COMPUTE_TYPES and args.resource_type not in (*GCP_DISKS, AWS_VOLUME):
        return
    labels = labels_of(args.props)
    profile = profile_for(labels, {})
    declared = labels.get(LABEL_LIFECYCLE)
    by_profile = profile is not None and profile.lifecycle.mode == "ephemeral"
    if declared != "ephemeral" and not by_profile:
        return
    ttl = number(labels.get(LABEL_TTL))
    if (ttl is not None and ttl > 0) or labels.get(LABEL_EXPIRES) or args.stack_tags.get(TAG_EXPIRES_AT):
        return
    env = labels.get(LABEL_ENVIRONMENT, args.name)
    why = (
        f"{LABEL_LIFECYCLE}=ephemeral"
        if declared == "ephemeral"
        else f"profile '{profile.name if profile else ''}' is ephemeral"
    )
    bad = f" ({LABEL_TTL}={labels[LABEL_TTL]!r} is not a positive number of hours)" if LABEL_TTL in labels else ""
    report(
        f"{describe(args.resource_type, args.name)} of ephemeral environment '{env}' ({why}) has no expiry{bad}: "
        f"add the label/tag {LABEL_TTL}=<hours> (fullserver sets it from the profile's lifecycle.ttl_hours or "
        f"fullserver:ttlHours) or {LABEL_EXPIRES}, or run it with `fullserver ephemeral`, which tags the stack "
        f"{TAG_EXPIRES_AT} so `fullserver janitor` destroys it.",
        None,
    )


POLICY = ResourceValidationPolicy(
    name="ephemeral-expiry",
    description="Every ephemeral environment carries an expiry (fullserver-ttl-hours or an expires-at tag).",
    validate=check_ephemeral_expiry,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
)
