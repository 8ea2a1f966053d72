"""Karpenter on EKS (``fullserver:nodeProvisioner: karpenter``): the pinned release, the names its
objects and AWS resources take, its interruption events and its IAM, as aws/karpenter-provider-aws
v1.14.1 publishes them (``fullserver.kube.karpenter`` builds the NodePool and EC2NodeClass).

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fullserver.platforms.base import NameRule
from fullserver.platforms.kubernetes import RFC1123

CHART = "oci://public.ecr.aws/karpenter/karpenter"
CHART_VERSION = "1.14.1"
"""The controller's Helm chart, pinned (``helm upgrade --install karpenter oci://public.ecr.aws/karpenter/karpenter
--version 1.14.1``: the v1.14 getting-started guide; ``charts/karpenter/Chart.yaml`` version and appVersion
1.14.1 at aws/karpenter-provider-aws 1d927085d, the v1.14.1 release's docs commit). It carries the CRDs
(``charts/karpenter/crds/``) the NodePool and EC2NodeClass need. Kubernetes 1.35 needs Karpenter >= 1.9."""
RELEASE = "karpenter"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "karpenter"
"""The guide's namespace and service account (``KARPENTER_NAMESPACE=kube-system``)."""
NODE_POOL_TYPE = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS_TYPE = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
QUEUE_TYPE = "aws:sqs/queue:Queue"
RULE_TYPE = "aws:cloudwatch/eventRule:EventRule"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
DISCOVERY_TAG = "karpenter.sh/discovery"
"""The subnets' tag the EC2NodeClass selects them by (the guide's ``karpenter.sh/discovery: <cluster>``)."""
CLUSTER_SG_TAG = "aws:eks:cluster-name"
"""EKS tags the cluster security group it creates with ``aws:eks:cluster-name: <cluster>`` (EKS user guide,
"View Amazon EKS security group requirements for clusters"): the nodes join it, as managed groups' do."""
AMI_ALIAS = "al2023@latest"
"""EKS's AL2023 AMIs; for a GPU instance type Karpenter picks the NVIDIA variant itself (EC2NodeClass
``amiSelectorTerms.alias``: "an alias implies amiFamily"; accelerated AMIs need no NodeClass of their own)."""
ROOT_DEVICE = "/dev/xvda"
RETENTION_SECONDS = 300
"""The interruption queue keeps a message five minutes (getting-started ``cloudformation.yaml``:
``MessageRetentionPeriod: 300``, ``SqsManagedSseEnabled: true``)."""
EVENTS: dict[str, dict[str, list[str]]] = {
    "health": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "reservation": {"source": ["aws.ec2"], "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"]},
}
"""The EventBridge rules' patterns, each sent to the queue (``cloudformation.yaml``: ScheduledChangeRule,
SpotInterruptionRule, RebalanceRule, InstanceStateChangeRule, CapacityReservationInterruptionRule)."""
NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
)
"""``KarpenterNodeRole``'s managed policies (``cloudformation.yaml``)."""
ACCESS_ENTRY_TYPE = "EC2_LINUX"
"""The node role's access entry: EKS maps it to ``system:nodes`` (pulumi-aws 7.51.1 ``eks.AccessEntry.type``)."""

NAME_RULES: dict[str, tuple[NameRule, ...]] = {
    # a NodePool's and an EC2NodeClass's names are node label values (karpenter.sh/nodepool,
    # karpenter.k8s.aws/ec2nodeclass): a DNS-1123 subdomain of at most 63 characters
    NODE_POOL_TYPE: (
        NameRule("NodePool name", 63, *RFC1123, "Kubernetes object names", field="metadata.name", separator="."),
    ),
    NODE_CLASS_TYPE: (
        NameRule("EC2NodeClass name", 63, *RFC1123, "Kubernetes object names", field="metadata.name", separator="."),
    ),
    QUEUE_TYPE: (NameRule("SQS queue name", 80, *("A-Za-z0-9_-",) * 3, "SQS CreateQueue QueueName"),),
    RULE_TYPE: (NameRule("EventBridge rule name", 64, *(r"A-Za-z0-9._-",) * 3, "EventBridge PutRule Name"),),
}


def _arns(partition: str, region: str, kinds: tuple[str, ...]) -> list[str]:
    return [f"arn:{partition}:ec2:{region}:*:{kind}/*" for kind in kinds]


_TAGGED = ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")


@dataclass(frozen=True)
class _Scope:
    """What the template's ``${...}`` stand for: partition, region, account and cluster."""

    partition: str
    region: str
    account: str
    cluster: str

    @property
    def owned(self) -> dict[str, str]:
        return {f"aws:ResourceTag/kubernetes.io/cluster/{self.cluster}": "owned"}

    @property
    def request(self) -> dict[str, str]:
        return {
            f"aws:RequestTag/kubernetes.io/cluster/{self.cluster}": "owned",
            "aws:RequestTag/eks:eks-cluster-name": self.cluster,
        }

    @property
    def profiles(self) -> str:
        return f"arn:{self.partition}:iam::{self.account}:instance-profile/*"


_NODEPOOL = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
_NODE_CLASS = "karpenter.k8s.aws/ec2nodeclass"


def controller_policy(
    cluster: str, region: str, cluster_arn: str, node_role_arn: str, queue_arn: str
) -> dict[str, Any]:
    """The controller's permissions: the getting-started template's six policies (NodeLifecycle,
    IAMIntegration, EKSIntegration, Interruption, ZonalShift, ResourceDiscovery) in one inline
    document (about 7,700 characters at the longest names, under IAM's 10,240 for a role's inline
    policies), scoped as the template scopes them: to this cluster by its ``kubernetes.io/cluster/<name>``
    and ``eks:eks-cluster-name`` tags, its region, its node role and its queue. The partition and
    account are the cluster ARN's (``arn:<partition>:eks:<region>:<account>:cluster/<name>``)."""
    _, partition, _, _, account, _ = cluster_arn.split(":", 5)
    scope = _Scope(partition, region, account, cluster)
    statements = [*_node_lifecycle(scope), *_iam_integration(scope, node_role_arn), *_discovery(scope, queue_arn)]
    return {"Version": "2012-10-17", "Statement": statements}


def _node_lifecycle(s: _Scope) -> list[dict[str, Any]]:
    """``NodeLifecyclePolicy``: launch, tag and terminate only this cluster's NodePool instances."""
    partition, region, owned, request, nodepool = s.partition, s.region, s.owned, s.request, _NODEPOOL
    return [
        _allow(
            "AllowScopedEC2InstanceAccessActions",
            ["ec2:RunInstances", "ec2:CreateFleet"],
            [
                f"arn:{partition}:ec2:{region}::image/*",
                f"arn:{partition}:ec2:{region}::snapshot/*",
                *_arns(partition, region, ("security-group", "subnet", "capacity-reservation", "placement-group")),
            ],
        ),
        _allow(
            "AllowScopedEC2LaunchTemplateAccessActions",
            ["ec2:RunInstances", "ec2:CreateFleet"],
            f"arn:{partition}:ec2:{region}:*:launch-template/*",
            {"StringEquals": owned, "StringLike": nodepool},
        ),
        _allow(
            "AllowScopedEC2InstanceActionsWithTags",
            ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            _arns(partition, region, _TAGGED),
            {"StringEquals": request, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}},
        ),
        _allow(
            "AllowScopedResourceCreationTagging",
            "ec2:CreateTags",
            _arns(partition, region, _TAGGED),
            {
                "StringEquals": {
                    **request,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        ),
        _allow(
            "AllowScopedResourceTagging",
            "ec2:CreateTags",
            f"arn:{partition}:ec2:{region}:*:instance/*",
            {
                "StringEquals": owned,
                "StringLike": nodepool,
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": s.cluster},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        ),
        _allow(
            "AllowScopedDeletion",
            ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            _arns(partition, region, ("instance", "launch-template")),
            {"StringEquals": owned, "StringLike": nodepool},
        ),
    ]


def _iam_integration(s: _Scope, node_role_arn: str) -> list[dict[str, Any]]:
    """``IAMIntegrationPolicy``: pass the node role, manage this cluster's instance profiles."""
    owned, request, profiles, node_class = s.owned, s.request, s.profiles, _NODE_CLASS
    region = s.region
    regional = {"aws:RequestTag/topology.kubernetes.io/region": region}
    return [
        _allow(
            "AllowPassingInstanceRole",
            "iam:PassRole",
            node_role_arn,
            {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        ),
        _allow(
            "AllowScopedInstanceProfileCreationActions",
            ["iam:CreateInstanceProfile"],
            profiles,
            {"StringEquals": {**request, **regional}, "StringLike": {f"aws:RequestTag/{node_class}": "*"}},
        ),
        _allow(
            "AllowScopedInstanceProfileTagActions",
            ["iam:TagInstanceProfile"],
            profiles,
            {
                "StringEquals": {
                    **owned,
                    "aws:ResourceTag/topology.kubernetes.io/region": region,
                    **request,
                    **regional,
                },
                "StringLike": {f"aws:ResourceTag/{node_class}": "*", f"aws:RequestTag/{node_class}": "*"},
            },
        ),
        _allow(
            "AllowScopedInstanceProfileActions",
            ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            profiles,
            {
                "StringEquals": {**owned, "aws:ResourceTag/topology.kubernetes.io/region": region},
                "StringLike": {f"aws:ResourceTag/{node_class}": "*"},
            },
        ),
    ]


def _discovery(s: _Scope, queue_arn: str) -> list[dict[str, Any]]:
    """``EKSIntegrationPolicy``, ``InterruptionPolicy``, ``ZonalShiftPolicy``, ``ResourceDiscoveryPolicy``."""
    partition, region, profiles = s.partition, s.region, s.profiles
    cluster_arn = f"arn:{partition}:eks:{region}:{s.account}:cluster/{s.cluster}"
    return [
        _allow("AllowAPIServerEndpointDiscovery", "eks:DescribeCluster", cluster_arn),
        _allow(
            "AllowInterruptionQueueActions", ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"], queue_arn
        ),
        _allow(
            "AllowZonalShiftStatusReadOnly",
            ["arc-zonal-shift:GetManagedResource"],
            "*",
            {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster_arn}},
        ),
        _allow("AllowRegionalReadActions", list(READ_ACTIONS), "*", {"StringEquals": {"aws:RequestedRegion": region}}),
        _allow("AllowSSMReadActions", "ssm:GetParameter", f"arn:{partition}:ssm:{region}::parameter/aws/service/*"),
        _allow("AllowPricingReadActions", "pricing:GetProducts", "*"),
        _allow("AllowUnscopedInstanceProfileListAction", "iam:ListInstanceProfiles", "*"),
        _allow("AllowInstanceProfileReadActions", "iam:GetInstanceProfile", profiles),
    ]


READ_ACTIONS = (
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceStatus",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
)
"""``ResourceDiscoveryPolicy``'s regional read actions."""


def _allow(sid: str, action: str | list[str], resource: str | list[str], condition: Any = None) -> dict[str, Any]:
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    if condition:
        statement["Condition"] = condition
    return statement


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge (and SQS) may send to the queue; nothing reaches it without TLS (``cloudformation.yaml``:
    ``KarpenterInterruptionQueuePolicy``, its ``DenyHTTP`` statement)."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Principal": "*",
            },
        ],
    }
