"""Policy ``public-ip-by-profile``: a resource gets a public address only where its profile allows.

A public address bypasses the IAP / Session Manager path; only profiles that accept that
(``security.public_ip: true``) get one, and a resource without a profile label or stack tag has
no profile to say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from fullserver.rules import LABEL_PROFILE
from policy.labels import labels_of, profile_name, profiles
from policy.resources import (
    AWS_INSTANCE,
    AWS_LAUNCH_TEMPLATE,
    AWS_SUBNET,
    GCP_INSTANCE,
    GCP_TEMPLATES,
    TPU_QUEUED,
    TPU_VM,
    as_list,
    describe,
    prop,
    truthy,
)


def _public_ip_sources(t: str, props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, how to remove it) for every way this resource asks for an external address."""
    out: list[tuple[str, str]] = []
    if t == AWS_LAUNCH_TEMPLATE:
        for i, nic in enumerate(as_list(props.get("networkInterfaces"))):
            if truthy(prop(nic, "associatePublicIpAddress")):
                out.append((f"networkInterfaces[{i}].associatePublicIpAddress", "set it to false"))
    elif t == AWS_INSTANCE:
        if truthy(props.get("associatePublicIpAddress")):
            out.append(("associatePublicIpAddress", "set it to false"))
    elif t == AWS_SUBNET:
        if truthy(props.get("mapPublicIpOnLaunch")):
            out.append(("mapPublicIpOnLaunch", "set it to false and route egress through a NAT gateway"))
    elif t in (GCP_INSTANCE, *GCP_TEMPLATES):
        for i, nic in enumerate(as_list(props.get("networkInterfaces"))):
            if as_list(prop(nic, "accessConfigs")) or as_list(prop(nic, "ipv6AccessConfigs")):
                out.append((f"networkInterfaces[{i}].accessConfigs", "remove the access configs and use Cloud NAT"))
    elif t == TPU_VM:
        configs = [prop(props, "networkConfig"), *as_list(props.get("networkConfigs"))]
        if any(truthy(prop(c, "enableExternalIps")) for c in configs if c is not None):
            out.append(("networkConfig.enableExternalIps", "set it to false and use Cloud NAT"))
    elif t == TPU_QUEUED:
        for i, spec in enumerate(as_list(prop(props, "tpu", "nodeSpecs"))):
            if truthy(prop(spec, "node", "networkConfig", "enableExternalIps")):
                out.append(
                    (f"tpu.nodeSpecs[{i}].node.networkConfig.enableExternalIps", "set it to false and use Cloud NAT")
                )
    return out


def check_public_ip(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A public address bypasses the IAP/Session Manager path; only profiles that accept that get one."""
    sources = _public_ip_sources(args.resource_type, args.props)
    if not sources:
        return
    what = describe(args.resource_type, args.name)
    labels = labels_of(args.props)
    name = profile_name(labels, args.stack_tags)
    profile = profiles().get(name) if name else None
    where = ", ".join(s for s, _ in sources)
    remove = "; ".join(f"{s}: {how}" for s, how in sources)
    if name is None:
        report(
            f"{what} gets a public IP ({where}) but carries no {LABEL_PROFILE} label or tag, so no profile says it may: "
            f"label it {LABEL_PROFILE}=<profile> (fullserver's components do), or remove the address ({remove}).",
            None,
        )
    elif profile is None:
        report(
            f"{what} gets a public IP ({where}) under unknown profile '{name}': use one of "
            f"{', '.join(sorted(profiles()))} or remove the address ({remove}).",
            None,
        )
    elif not profile.security.public_ip:
        report(
            f"{what} gets a public IP ({where}) but profile '{name}' does not allow one (security.public_ip: false): "
            f"{remove}; reach the nodes through IAP or Session Manager, or use a profile that allows public IPs.",
            None,
        )


POLICY = ResourceValidationPolicy(
    name="public-ip-by-profile",
    description="No public IP unless the environment's fullserver profile allows one (security.public_ip).",
    validate=check_public_ip,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
)
