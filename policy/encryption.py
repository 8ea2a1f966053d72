"""Policy ``encrypted-disks``: EBS volumes and block devices are encrypted; GCP disks use
customer-managed keys when the config asks for them.

Checkpoints and datasets on a volume outlive the instance; unencrypted EBS leaks via snapshots.
GCP persistent disks are always encrypted at rest, so there the policy only applies on request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from policy.resources import (
    AWS_INSTANCE,
    AWS_LAUNCH_TEMPLATE,
    AWS_VOLUME,
    GCP_DISKS,
    GCP_INSTANCE,
    GCP_TEMPLATES,
    as_list,
    describe,
    prop,
    truthy,
)


def check_encrypted_disks(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Checkpoints and datasets on a volume outlive the instance; unencrypted EBS leaks via snapshots."""
    t, props = args.resource_type, args.props
    what = describe(t, args.name)
    fix = "set encrypted: true (optionally with kmsKeyId), as fullserver's gp3 volumes do"
    if t == AWS_VOLUME:
        if not truthy(props.get("encrypted")):
            report(f"{what} is not encrypted: {fix}.", None)
    elif t == AWS_LAUNCH_TEMPLATE:
        for m in as_list(props.get("blockDeviceMappings")):
            ebs = prop(m, "ebs")
            if ebs is None or truthy(prop(m, "noDevice")) or prop(m, "virtualName"):
                continue  # instance store or a suppressed device
            if not truthy(prop(ebs, "encrypted")):
                report(f"{what}: block device {prop(m, 'deviceName')} is not encrypted: {fix} in its ebs block.", None)
    elif t == AWS_INSTANCE:
        root = prop(props, "rootBlockDevice")
        from_template = prop(props, "launchTemplate") is not None
        if root is None and not from_template:
            report(
                f"{what}: the root volume's encryption follows the AMI snapshot: set rootBlockDevice.encrypted true.",
                None,
            )
        elif root is not None and not truthy(prop(root, "encrypted")):
            report(f"{what}: the root volume is not encrypted: {fix} in rootBlockDevice.", None)
        for ebs in as_list(props.get("ebsBlockDevices")):
            if not truthy(prop(ebs, "encrypted")):
                report(f"{what}: EBS block device {prop(ebs, 'deviceName')} is not encrypted: {fix}.", None)
    elif t in (*GCP_DISKS, GCP_INSTANCE, *GCP_TEMPLATES):
        if not truthy(args.get_config().get("requireGcpCmek")):
            args.not_applicable(
                "GCP persistent disks are always encrypted at rest with Google-managed keys; set requireGcpCmek to "
                "demand customer-managed keys"
            )
        _check_gcp_cmek(t, what, props, report)


def _check_gcp_cmek(t: str, what: str, props: Mapping[str, Any], report: ReportViolation) -> None:
    """With ``requireGcpCmek``: every GCP disk, boot disk and template disk names a Cloud KMS key."""
    fix = "give it a Cloud KMS key (kmsKeySelfLink) or turn requireGcpCmek off"
    if t in GCP_DISKS:
        if not prop(props, "diskEncryptionKey", "kmsKeySelfLink"):
            report(f"{what} uses a Google-managed key but requireGcpCmek is on: {fix} in diskEncryptionKey.", None)
    elif t == GCP_INSTANCE:
        if not prop(props, "bootDisk", "kmsKeySelfLink"):
            report(
                f"{what}: the boot disk uses a Google-managed key but requireGcpCmek is on: {fix} in bootDisk.", None
            )
    else:
        for i, disk in enumerate(as_list(props.get("disks"))):
            if str(prop(disk, "type") or "").upper() == "SCRATCH":
                continue  # local SSDs are encrypted with ephemeral keys; CMEK does not apply
            if not prop(disk, "diskEncryptionKey", "kmsKeySelfLink"):
                report(
                    f"{what}: disks[{i}] uses a Google-managed key but requireGcpCmek is on: {fix} in diskEncryptionKey.",
                    None,
                )


POLICY = ResourceValidationPolicy(
    name="encrypted-disks",
    description="EBS volumes, launch template and instance block devices are encrypted (GCP disks always are; CMEK on request).",
    validate=check_encrypted_disks,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=PolicyConfigSchema(
        properties={
            "requireGcpCmek": {
                "type": "boolean",
                "default": False,
                "description": "Demand customer-managed KMS keys on GCP disks.",
            }
        }
    ),
)
