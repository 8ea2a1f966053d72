"""The Cluster Autoscaler on a created EKS cluster (components.eks.autoscaler): the Helm release
pinned to the cluster's Kubernetes minor, on the system node group, with an IAM role through Pod
Identity or IRSA whose scaling actions stop at this cluster's groups; none on an attached cluster,
whose plan says it must run one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.eks import EksEnvironment, eks_args
from components.eks.autoscaler import DESCRIBE_ACTIONS, SCALE_ACTIONS, autoscaler_policy, chart_for, discovery_tags
from components.graph import Graph, Row
from fullserver.kube import kube_plan
from fullserver.kube.attached import autoscaler_warnings
from fullserver.platform import Platform
from fullserver.platforms import eks
from tests.components.conftest import Build, Plans, ResourceOpts, spec_of


def release(g: Graph, chart: str) -> Row:
    (found,) = [r for r in g.rows if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs["chart"] == chart]
    return found


def autoscaler_role(g: Graph) -> dict[str, Any]:
    (role,) = [r for r in g.of_type("iam/role:Role") if r.name == "exp-autoscaler"]
    return dict(json.loads(role.inputs["assumeRolePolicy"]))


def test_a_created_cluster_runs_the_cluster_autoscaler_with_pod_identity(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU)
    assert plan.create_cluster and all(p.min_nodes == 0 for p in plan.pools)
    g = build(lambda: EksEnvironment("exp", eks_args(plan)))
    assert g.one("eks/cluster:Cluster").inputs["version"] == eks.KUBERNETES_VERSION == "1.35"
    ca = release(g, "cluster-autoscaler").inputs
    # Named after its chart, whatever the stack is called; deleted before a replacement runs beside it.
    assert ca["name"] == "cluster-autoscaler" and ca["chart"] == eks.CLUSTER_AUTOSCALER_CHART
    assert resource_options[release(g, "cluster-autoscaler").name].delete_before_replace is True
    assert ca["version"] == "9.59.0" and ca["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert ca["namespace"] == "kube-system"
    values = ca["values"]
    assert values["autoDiscovery"] == {"clusterName": "exp-aws-l4-spot"}
    assert values["awsRegion"] == "us-east-1" and values["cloudProvider"] == "aws"
    assert values["image"] == {"tag": "v1.35.2"}
    assert values["rbac"] == {"serviceAccount": {"name": "cluster-autoscaler"}}  # no IRSA annotation
    # On the untainted system group: every GPU group is tainted and may sit at zero.
    assert values["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "exp-aws-l4-spot-system"}
    assert "tolerations" not in values
    association = g.one("eks/podIdentityAssociation:PodIdentityAssociation").inputs
    assert association["clusterName"] == "exp-aws-l4-spot"
    assert (association["namespace"], association["serviceAccount"]) == ("kube-system", "cluster-autoscaler")
    assert association["roleArn"] == "arn:aws:iam::123456789012:exp-autoscaler"
    assert autoscaler_role(g)["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ]
    (inline,) = [r.inputs for r in g.of_type("iam/rolePolicy:RolePolicy")]
    assert inline["role"].startswith("exp-autoscaler-")  # the role's name (autonamed)
    assert json.loads(inline["policy"]) == autoscaler_policy("exp-aws-l4-spot")
    # Scale-from-zero hints on both GPU groups' Auto Scaling groups (labels, taint, GPUs).
    keys = {t.inputs["tag"]["key"] for t in g.of_type("autoscaling/tag:Tag")}
    assert "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu" in keys
    assert "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu" in keys


def test_with_irsa_the_role_trusts_the_cluster_oidc_provider(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU)
    g = build(lambda: EksEnvironment("exp", eks_args(plan, identity="irsa")))
    assert g.of_type("eks/podIdentityAssociation:PodIdentityAssociation") == []
    (statement,) = autoscaler_role(g)["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"] == {"Federated": "arn:aws:iam::123456789012:exp-oidc"}
    (condition,) = statement["Condition"].values()
    assert {k.rsplit(":", 1)[1]: v for k, v in condition.items()} == {
        "sub": "system:serviceaccount:kube-system:cluster-autoscaler",
        "aud": "sts.amazonaws.com",
    }
    account = release(g, "cluster-autoscaler").inputs["values"]["rbac"]["serviceAccount"]
    assert account == {
        "name": "cluster-autoscaler",
        "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:exp-autoscaler"},
    }


def test_the_policy_scales_only_this_clusters_groups() -> None:
    describe, scale = autoscaler_policy("c1")["Statement"]
    assert describe["Action"] == list(DESCRIBE_ACTIONS) and describe["Resource"] == ["*"]
    assert "autoscaling:SetDesiredCapacity" not in describe["Action"]
    assert scale["Action"] == list(SCALE_ACTIONS)
    assert scale["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
            "aws:ResourceTag/k8s.io/cluster-autoscaler/c1": "owned",
        }
    }


def test_the_groups_carry_the_tags_the_policy_condition_requires(plans: Plans, build: Build) -> None:
    """Discovery and the scaling condition do not rest on what EKS writes on its Auto Scaling groups
    (no EKS page lists it): every group with a range gets both tags, exactly as the condition asks."""
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU)
    g = build(lambda: EksEnvironment("exp", eks_args(plan)))
    (inline,) = [r.inputs for r in g.of_type("iam/rolePolicy:RolePolicy")]
    _, scale = json.loads(inline["policy"])["Statement"]
    required = {k.removeprefix("aws:ResourceTag/"): v for k, v in scale["Condition"]["StringEquals"].items()}
    assert required == discovery_tags("exp-aws-l4-spot")
    for role in ("spot", "on-demand"):
        written = {
            t.inputs["tag"]["key"]: t.inputs["tag"]["value"]
            for t in g.of_type("autoscaling/tag:Tag")
            if t.name.startswith(f"exp-{role}-")
        }
        assert required.items() <= written.items(), role
    # A fixed group (min = max) has nothing to scale: no tags on it (eks-gpu-cluster's two p5 nodes).
    fixed = spec_of(plans, "eks-gpu-cluster").kube
    assert fixed is not None and all(p.min_nodes == p.max_nodes for p in fixed.pools)
    assert build(lambda: EksEnvironment("p5", eks_args(fixed))).of_type("autoscaling/tag:Tag") == []


def test_the_chart_follows_the_cluster_minor() -> None:
    assert chart_for("1.34") == ("9.53.0", "v1.34.5") and chart_for("1.35.2") == ("9.59.0", "v1.35.2")
    with pytest.raises(
        ValueError, match=r"kubernetes_version: no Cluster Autoscaler release is pinned for Kubernetes 1\.29"
    ):
        chart_for("1.29")


def test_an_unpinned_version_stops_before_the_cluster(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU)
    with pytest.raises(Exception, match="no Cluster Autoscaler release is pinned"):
        build(lambda: EksEnvironment("exp", eks_args(plan, kubernetes_version="1.29")))


def test_an_attached_cluster_gets_no_autoscaler_and_the_plan_says_so(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "exp-aws-l4-spot")
    plan = kube_plan(spec, Platform.EKS_GPU, cluster="research")
    g = build(lambda: EksEnvironment("exp", eks_args(plan, ["subnet-1"], "vpc-1")))
    assert [r for r in g.rows if r.type == "kubernetes:helm.sh/v3:Release"] == []
    assert g.of_type("iam/rolePolicy:RolePolicy") == []
    assert autoscaler_warnings(plan) == [eks.ATTACHED_AUTOSCALER]
    fixed = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU, cluster="prod")
    assert all(p.min_nodes == p.max_nodes for p in fixed.pools) and autoscaler_warnings(fixed) == []
    assert autoscaler_warnings(kube_plan(spec, Platform.EKS_GPU)) == []  # a created cluster runs its own


def test_the_autoscaler_grows_the_spot_group_before_its_on_demand_fallback(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU)
    g = build(lambda: EksEnvironment("exp", eks_args(plan)))
    values = release(g, "cluster-autoscaler").inputs["values"]
    # the chart merges this into its default extraArgs and renders the priority ConfigMap from the map
    assert values["extraArgs"] == {"expander": "priority,least-waste"}
    assert values["expanderPriorities"] == {
        "20": ["^eks-exp-aws-l4-spot-spot-[0-9a-f-]+$"],
        "10": ["^eks-exp-aws-l4-spot-ondemand-[0-9a-f-]+$"],
    }
    # the node groups those names come from
    names = sorted(r.inputs["nodeGroupName"] for r in g.of_type("eks/nodeGroup:NodeGroup"))
    assert names == ["exp-aws-l4-spot-ondemand", "exp-aws-l4-spot-spot", "exp-aws-l4-spot-system"]


def test_one_gpu_group_keeps_the_default_expander(plans: Plans, build: Build) -> None:
    plan = spec_of(plans, "eks-gpu-cluster").kube
    assert plan is not None
    values = release(build(lambda: EksEnvironment("p5", eks_args(plan))), "cluster-autoscaler").inputs["values"]
    assert "extraArgs" not in values and "expanderPriorities" not in values
