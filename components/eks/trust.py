"""Who may assume the IAM role a cluster's add-on or controller runs as: the EKS Pod Identity agent,
or (IRSA) one service account through the cluster's IAM OIDC provider. The EBS CSI driver and
every Helm-installed controller (``components.eks.controller``) take their role this way (EKS
user guide, "Pod Identity" and "IAM roles for service accounts")."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws.labels import aws_tags
from components.names import logical

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"


def pod_identity_trust() -> str:
    """Pod Identity assumes the role and tags the session (``sts:TagSession``) with the pod's
    cluster, namespace and service account."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
                    "Action": ["sts:AssumeRole", "sts:TagSession"],
                }
            ],
        }
    )


def irsa_trust(provider_arn: str, issuer_url: str, namespace: str, service_account: str) -> str:
    """Only ``namespace/service_account``'s tokens, issued for STS, may assume the role."""
    host = issuer_url.removeprefix("https://")
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Federated": provider_arn},
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": {
                        "StringEquals": {
                            f"{host}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                            f"{host}:aud": "sts.amazonaws.com",
                        }
                    },
                }
            ],
        }
    )


def pod_role(
    name: str,
    tags: dict[str, str],
    oidc: Any,
    namespace: str,
    service_account: str,
    opts: pulumi.ResourceOptions,
) -> aws.iam.Role:
    """The role ``namespace/service_account`` runs as: through the cluster's IAM OIDC provider when
    ``oidc`` is one (IRSA), else through Pod Identity."""
    trust: pulumi.Input[str] = (
        pulumi.Output.all(oidc.arn, oidc.url).apply(
            lambda v: irsa_trust(str(v[0]), str(v[1]), namespace, service_account)
        )
        if oidc is not None
        else pod_identity_trust()
    )
    return aws.iam.Role(logical(aws.iam.Role, name), assume_role_policy=trust, tags=aws_tags(tags, name), opts=opts)


def service_account_role(
    name: str,
    tags: dict[str, str],
    oidc: Any,
    cluster: aws.eks.Cluster,
    namespace: str,
    service_account: str,
    policy: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> tuple[dict[str, Any], list[pulumi.Resource]]:
    """A Helm-installed controller's identity: its role (``pod_role``) with ``policy`` inline, and
    how its service account gets it (a Pod Identity association, or IRSA's role annotation).
    Returns the chart's ``serviceAccount`` values and what its release must wait for (the policy,
    the association), so the controller never starts without its permissions."""
    role = pod_role(name, tags, oidc, namespace, service_account, opts)
    waits: list[pulumi.Resource] = [aws.iam.RolePolicy(name, role=role.name, policy=policy, opts=opts)]
    values: dict[str, Any] = {"name": service_account}
    if oidc is None:
        waits.append(
            aws.eks.PodIdentityAssociation(
                name,
                cluster_name=cluster.name,
                namespace=namespace,
                service_account=service_account,
                role_arn=role.arn,
                tags=aws_tags(tags, name),
                opts=opts,
            )
        )
    else:
        values["annotations"] = {"eks.amazonaws.com/role-arn": role.arn}
    return values, waits
