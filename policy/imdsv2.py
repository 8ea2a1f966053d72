"""Policy ``imdsv2-required``: AWS launch templates and instances require IMDSv2 session tokens.

IMDSv1 answers any SSRF'd GET with the node's role credentials; session tokens stop that.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from policy.resources import AWS_INSTANCE, AWS_LAUNCH_TEMPLATE, describe, prop


def check_imdsv2(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """IMDSv1 answers any SSRF'd GET with the node's role credentials; session tokens stop that."""
    if args.resource_type not in (AWS_LAUNCH_TEMPLATE, AWS_INSTANCE):
        return
    props = args.props
    meta = prop(props, "metadataOptions")
    if args.resource_type == AWS_INSTANCE and meta is None and prop(props, "launchTemplate") is not None:
        return  # the launch template's metadata options apply; this policy checks the template
    if str(prop(meta, "httpEndpoint") or "enabled").lower() == "disabled":
        return  # no metadata service at all
    tokens = prop(meta, "httpTokens")
    if str(tokens or "").lower() != "required":
        report(
            f"{describe(args.resource_type, args.name)} allows IMDSv1 (metadataOptions.httpTokens is "
            f'{tokens or "unset"}): set metadataOptions.httpTokens to "required" (with httpPutResponseHopLimit 1, '
            "so containers cannot take the node's role), as fullserver's launch templates do.",
            None,
        )


POLICY = ResourceValidationPolicy(
    name="imdsv2-required",
    description="AWS launch templates and instances require IMDSv2 session tokens (metadataOptions.httpTokens).",
    validate=check_imdsv2,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
)
