"""The GCP nodes' least-privilege identity (GPU VMs and TPUs alike): a service account.

Nodes get only what running and observing them needs; access to datasets (a bucket) is granted
by its owner to the identity this exports, never by a broad project role here:
``roles/logging.logWriter`` and ``roles/monitoring.metricWriter`` (what the Ops Agent and the TPU
runtime write), with the ``cloud-platform`` scope so IAM alone decides access (Compute Engine
"Service accounts" best practice: scopes are legacy, use IAM).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.names import physical

GCP_NODE_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
GCP_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


def gcp_service_account(
    name: str, parent: pulumi.Resource, project: pulumi.Input[str] | None
) -> gcp.serviceaccount.Account:
    # account_id: 6-30 characters, [a-z]([-a-z0-9]*[a-z0-9]), unique in the project (IAM
    # "Creating service accounts"): a long stack name is cut and a hash of it added, so two
    # stacks sharing their first 27 characters never ask for the same id.
    account_id = physical(gcp.serviceaccount.Account, f"fs-{name}", "accountId")
    opts = pulumi.ResourceOptions(parent=parent)
    sa = gcp.serviceaccount.Account(
        f"{name}-sa",
        project=project,
        account_id=account_id,
        display_name=f"fullserver {name} nodes"[:100],  # at most 100 characters
        description="least privilege: write logs and metrics; data access is granted per bucket",
        opts=opts,
    )
    for role in GCP_NODE_ROLES:
        gcp.projects.IAMMember(
            f"{name}-{role.split('/')[-1].replace('.', '-').lower()}",
            project=project if project is not None else sa.project,
            role=role,
            member=sa.email.apply(lambda email: f"serviceAccount:{email}"),
            opts=opts,
        )
    return sa
