"""Karpenter on a created EKS cluster under the mock runtime (``stacks/Pulumi.exp-eks-l4-karpenter.yaml``):
every new resource's inputs, the NodePool and EC2NodeClass against Karpenter's published CRDs, and
the order destroy takes.

Sources: aws/karpenter-provider-aws tag v1.14.1 (commit bde00654cd31): ``pkg/apis/crds/karpenter.sh_nodepools.yaml``
and ``karpenter.k8s.aws_ec2nodeclasses.yaml`` as ``tests/data/crds/{nodepool,ec2nodeclass}.schema.json``
(their CEL rules checked by hand below), ``charts/karpenter/values.yaml``; the getting-started
``cloudformation.yaml`` of ``website/content/en/v1.14`` at 1d927085d (the v1.14.1 docs commit);
pulumi-aws 7.51.1 and pulumi-kubernetes 4.34.2 for the argument names.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from components.eks import EksEnvironment, eks_args
from components.eks.device_plugins import GPU_PRESENT
from components.graph import Graph
from fullserver.clouds.mock import ACCOUNT_NUMBER
from fullserver.kube import KubePlan, karpenter
from fullserver.platforms import eks_karpenter as k
from tests.components.conftest import Build, Plans, spec_of
from tests.crds import validate

STACK = "exp-eks-l4-karpenter"


def _plan(plans: Plans) -> KubePlan:
    plan = spec_of(plans, STACK).kube
    assert plan is not None and plan.provisioner == "karpenter"
    return plan


@pytest.fixture
def graph(plans: Plans, build: Build) -> Graph:
    return build(lambda: EksEnvironment("kp", eks_args(_plan(plans))))


def named(g: Graph, suffix: str, name: str) -> Any:
    (row,) = [r for r in g.of_type(suffix) if r.name == name]
    return row


def _node_role_name(g: Graph) -> str:
    """The node role's physical name, as its policy attachments name it."""
    (name,) = {
        r.inputs["role"]
        for r in g.of_type("iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("kp-karpenter-node-")
    }
    return str(name)


def _custom(g: Graph, kind: str) -> dict[str, Any]:
    row = g.one(f"v1:{kind}").inputs
    return {"apiVersion": row["apiVersion"], "kind": row["kind"], "metadata": row["metadata"], "spec": row["spec"]}


def _ints(obj: Any) -> Any:
    """The mock monitor hands numbers back as floats; the CRDs' integers are integers."""
    if isinstance(obj, dict):
        return {key: _ints(v) for key, v in obj.items()}
    if isinstance(obj, list):
        return [_ints(v) for v in obj]
    return int(obj) if isinstance(obj, float) and obj.is_integer() else obj


def test_no_accelerator_node_groups_and_no_cluster_autoscaler(graph: Graph) -> None:
    (system,) = graph.of_type("eks/nodeGroup:NodeGroup")
    assert system.inputs["nodeGroupName"] == f"{STACK}-system"  # the controller's node
    assert [t.name for t in graph.of_type("ec2/launchTemplate:LaunchTemplate")] == ["kp-system-lt"]
    charts = sorted(r.inputs["chart"] for r in graph.of_type("helm.sh/v3:Release"))
    assert charts == sorted([k.CHART, "nvidia-device-plugin"])
    assert graph.of_type("autoscaling/tag:Tag") == []


def test_the_private_subnets_carry_the_discovery_tag(graph: Graph) -> None:
    for i in range(3):
        tags = named(graph, "ec2/subnet:Subnet", f"kp-private-{i}").inputs["tags"]
        assert tags[k.DISCOVERY_TAG] == STACK
    assert k.DISCOVERY_TAG not in named(graph, "ec2/subnet:Subnet", "kp-public-0").inputs["tags"]


def test_the_interruption_queue_its_policy_and_the_event_rules(graph: Graph) -> None:
    queue = graph.one("sqs/queue:Queue")
    assert queue.inputs["messageRetentionSeconds"] == 300
    assert queue.inputs["sqsManagedSseEnabled"] is True
    arn = f"arn:aws:sqs::{ACCOUNT_NUMBER}:{queue.name}"
    policy = graph.one("sqs/queuePolicy:QueuePolicy").inputs
    assert policy["queueUrl"].startswith(f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT_NUMBER}/kp-karpenter-")
    assert json.loads(policy["policy"]) == {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Action": "sqs:*",
                "Resource": arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Principal": "*",
            },
        ],
    }
    patterns = sorted(
        json.loads(r.inputs["eventPattern"])["detail-type"][0] for r in graph.of_type("cloudwatch/eventRule:EventRule")
    )
    assert patterns == [
        "AWS Health Event",
        "EC2 Capacity Reservation Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
        "EC2 Spot Instance Interruption Warning",
    ]
    assert json.loads(named(graph, "cloudwatch/eventRule:EventRule", "kp-karpenter-health").inputs["eventPattern"])[
        "source"
    ] == ["aws.health"]
    rules = {r.name: r for r in graph.of_type("cloudwatch/eventRule:EventRule")}
    for target in graph.of_type("cloudwatch/eventTarget:EventTarget"):
        assert target.inputs["arn"] == arn
        assert target.inputs["targetId"] == "KarpenterInterruptionQueueTarget"
        assert target.inputs["rule"].startswith(rules[target.name].name + "-")


def test_the_node_role_and_its_access_entry(graph: Graph) -> None:
    role = named(graph, "iam/role:Role", "kp-karpenter-node").inputs
    assert json.loads(role["assumeRolePolicy"])["Statement"] == [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ]
    attached = sorted(
        r.inputs["policyArn"]
        for r in graph.of_type("iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("kp-karpenter-node-")
    )
    assert attached == sorted(k.NODE_POLICIES)
    entry = graph.one("eks/accessEntry:AccessEntry").inputs
    assert entry["type"] == "EC2_LINUX"
    assert entry["clusterName"] == STACK
    assert entry["principalArn"] == f"arn:aws:iam::{ACCOUNT_NUMBER}:kp-karpenter-node"
    assert "kubernetesGroups" not in entry  # EC2_LINUX takes none: EKS maps it to system:nodes


def test_the_controller_runs_as_its_own_least_privilege_role(graph: Graph) -> None:
    association = graph.one("eks/podIdentityAssociation:PodIdentityAssociation").inputs
    assert (association["namespace"], association["serviceAccount"]) == ("kube-system", "karpenter")
    policy = json.loads(graph.one("iam/rolePolicy:RolePolicy").inputs["policy"])
    queue = graph.one("sqs/queue:Queue").name
    assert policy == k.controller_policy(
        STACK,
        "us-east-1",
        f"arn:aws:eks::{ACCOUNT_NUMBER}:kp-cluster",
        f"arn:aws:iam::{ACCOUNT_NUMBER}:kp-karpenter-node",
        f"arn:aws:sqs::{ACCOUNT_NUMBER}:{queue}",
    )
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    assert by_sid["AllowAPIServerEndpointDiscovery"]["Resource"] == (
        f"arn:aws:eks:us-east-1:{ACCOUNT_NUMBER}:cluster/{STACK}"
    )
    assert by_sid["AllowScopedDeletion"]["Condition"]["StringEquals"] == {
        f"aws:ResourceTag/kubernetes.io/cluster/{STACK}": "owned"
    }
    assert by_sid["AllowPassingInstanceRole"]["Resource"] == f"arn:aws:iam::{ACCOUNT_NUMBER}:kp-karpenter-node"
    unscoped = [s["Sid"] for s in policy["Statement"] if s["Resource"] == "*" and "Condition" not in s]
    assert unscoped == ["AllowPricingReadActions", "AllowUnscopedInstanceProfileListAction"]  # as the template
    assert len(graph.one("iam/rolePolicy:RolePolicy").inputs["policy"]) < 10_240  # IAM's inline policy size


def test_the_controller_release(graph: Graph) -> None:
    (release,) = [r.inputs for r in graph.of_type("helm.sh/v3:Release") if r.inputs["chart"] == k.CHART]
    assert release["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert release["version"] == "1.14.1"
    assert release["name"] == "karpenter"
    assert release["namespace"] == "kube-system"
    queue = release["values"]["settings"]["interruptionQueue"]
    assert queue.startswith("kp-karpenter-")  # the queue's autoname (components.names)
    assert release["values"] == {
        "settings": {"clusterName": STACK, "interruptionQueue": queue},
        "serviceAccount": {"name": "karpenter"},
        "replicas": 1,
        "nodeSelector": {"eks.amazonaws.com/nodegroup": f"{STACK}-system"},
    }
    assert "repositoryOpts" not in release  # an OCI chart names its registry itself


def test_the_node_pool_and_node_class_are_the_cores_and_valid_crds(plans: Plans, graph: Graph) -> None:
    plan = _plan(plans)
    pool, node_class = _ints(_custom(graph, "NodePool")), _ints(_custom(graph, "EC2NodeClass"))
    assert pool == karpenter.node_pool(plan, {**plan.node_labels, **GPU_PRESENT})
    role = _node_role_name(graph)
    assert node_class == karpenter.node_class(plan, role, dict(sorted(plan.cloud_labels.items())))
    validate(pool)
    validate(node_class)
    _node_pool_cel(pool)
    _node_class_cel(node_class)
    spec = node_class["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": STACK}}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"aws:eks:cluster-name": STACK}}]
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert spec["blockDeviceMappings"][0]["ebs"]["volumeSize"] == f"{plan.boot_disk_gib}Gi"
    assert spec["instanceStorePolicy"] == "RAID0"  # the g6 shapes' local NVMe
    template = pool["spec"]["template"]["spec"]
    assert template["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert template["expireAfter"] == "Never"
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"  # training: never a busy node


def test_a_broken_node_pool_fails_the_crd_schema(plans: Plans) -> None:
    """The schemas can fail: an unknown field, a policy Karpenter does not have."""
    import jsonschema

    pool = karpenter.node_pool(_plan(plans), {})
    with pytest.raises(jsonschema.ValidationError):
        validate(
            {**pool, "spec": {**pool["spec"], "disruption": {"consolidationPolicy": "Never", "consolidateAfter": "1m"}}}
        )
    with pytest.raises(jsonschema.ValidationError):
        validate({**pool, "spec": {**pool["spec"], "replica": 2}})


def test_destroy_deletes_the_node_pool_before_the_controller(
    graph: Graph, resource_options: Any, plans: Plans, build: Build
) -> None:
    build(lambda: EksEnvironment("kd", eks_args(_plan(plans))))
    pool = [type(d).__name__ for d in resource_options["kd-karpenter-nodepool"].depends_on]
    node_class = [type(d).__name__ for d in resource_options["kd-karpenter-nodeclass"].depends_on]
    assert pool == ["Release", "CustomResource"]  # the controller and its EC2NodeClass outlive it
    assert node_class[0] == "Release" and "AccessEntry" in node_class
    release = {type(d).__name__ for d in resource_options["kd-karpenter"].depends_on}
    assert {"RolePolicy", "PodIdentityAssociation", "QueuePolicy", "EventTarget"} <= release


# --- the CRDs' CEL rules (x-kubernetes-validations) that JSON Schema cannot say ---------------------

_RESTRICTED = re.compile(r"^([^/]*\.)?(karpenter\.sh|karpenter\.k8s\.aws)/")


def _node_pool_cel(pool: dict[str, Any]) -> None:
    template = pool["spec"]["template"]
    for key in template["metadata"]["labels"]:
        assert not _RESTRICTED.match(key) and key != "kubernetes.io/hostname", key
    for req in template["spec"]["requirements"]:
        restricted = _RESTRICTED.match(req["key"]) and req["key"] != "karpenter.sh/capacity-type"
        assert not restricted and req["key"] not in ("karpenter.sh/nodepool", "kubernetes.io/hostname")
        assert req["operator"] != "In" or req["values"], "requirements with operator 'In' must have a value"
    assert all(b.get("schedule") is None and b.get("duration") is None for b in pool["spec"]["disruption"]["budgets"])
    assert "replicas" not in pool["spec"]  # a dynamic NodePool: weight and limits allowed


def _node_class_cel(node_class: dict[str, Any]) -> None:
    spec = node_class["spec"]
    assert ("role" in spec) != ("instanceProfile" in spec), "exactly one of role or instanceProfile"
    (term,) = spec["amiSelectorTerms"]  # an alias stands alone
    assert term["alias"].split("@")[0] in ("al2", "al2023", "bottlerocket")
    assert "amiFamily" not in spec  # the alias implies it
    assert sum(1 for m in spec["blockDeviceMappings"] if m.get("rootVolume")) <= 1
    assert all("volumeSize" in m["ebs"] or "snapshotID" in m["ebs"] for m in spec["blockDeviceMappings"])
    for terms in (spec["subnetSelectorTerms"], spec["securityGroupSelectorTerms"]):
        assert terms and all(t.get("tags") and all(key and value for key, value in t["tags"].items()) for t in terms)
    forbidden = (
        "eks:eks-cluster-name",
        "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim",
        "karpenter.k8s.aws/ec2nodeclass",
    )
    assert not any(key in forbidden or key.startswith("kubernetes.io/cluster") or not key for key in spec["tags"])
    assert set(spec["kubelet"]["kubeReserved"]) <= {"cpu", "memory", "ephemeral-storage", "pid"}
