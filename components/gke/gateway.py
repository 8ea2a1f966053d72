"""The Google Cloud side of a GKE serving Gateway (``fullserver.platforms.gke_gateway``): the
reserved address the Gateway takes and the Certificate Manager certificate its map serves.

Inputs follow pulumi-gcp 10.2 (its SDK docstrings, and the Terraform provider's examples they
come from): see the design notes.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.names import logical
from fullserver.platforms.gke_gateway import Front


def gateway_resources(
    name: str, front: Front, project: pulumi.Input[str], labels: dict[str, str], parent: pulumi.Resource
) -> tuple[gcp.compute.GlobalAddress, list[pulumi.Resource]]:
    """The Gateway's address, and everything the Gateway needs before it is applied."""
    opts = pulumi.ResourceOptions(parent=parent)
    names = front.names
    address = gcp.compute.GlobalAddress(
        logical(gcp.compute.GlobalAddress, f"{name}-gateway"),
        name=names.address,
        project=project,
        address_type="EXTERNAL",
        labels=labels,
        opts=opts,
    )
    certificate = gcp.certificatemanager.Certificate(
        f"{name}-cert",
        name=names.certificate,
        project=project,
        scope="DEFAULT",
        managed={"domains": list(front.domains)},
        labels=labels,
        opts=opts,
    )
    certificate_map = gcp.certificatemanager.CertificateMap(
        f"{name}-certmap", name=names.certificate_map, project=project, labels=labels, opts=opts
    )
    entries = [
        gcp.certificatemanager.CertificateMapEntry(
            f"{name}-entry{i}",
            name=entry,
            project=project,
            map=certificate_map.name,
            certificates=[certificate.id],
            hostname=domain,
            labels=labels,
            opts=opts,
        )
        for i, (entry, domain) in enumerate(zip(names.entries, front.domains, strict=True))
    ]
    return address, [address, certificate, certificate_map, *entries]
