"""The one way a controller is installed on a created EKS cluster (components.eks.controller): for
the Cluster Autoscaler, the AWS Load Balancer Controller and Karpenter alike, under Pod Identity and
IRSA, a role with its inline policy, its credentials' wiring, and a Helm release on the system node
group that waits for all of it, so destroy removes the controller before its permissions."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from components.eks.controller import NODEGROUP_LABEL, merged
from components.graph import Graph
from tests.components.conftest import Build, ResourceOpts
from tests.components.test_kube_serving import build_eks, eks_serving

CONTROLLERS = {
    # role's resource name, release's resource name, Helm release name, where the account's values go
    "cluster-autoscaler": (
        "llm-autoscaler",
        "llm-cluster-autoscaler",
        "cluster-autoscaler",
        ("rbac", "serviceAccount"),
    ),
    "karpenter": ("llm-karpenter", "llm-karpenter", "karpenter", ("serviceAccount",)),
    "lb": (
        "llm-lb-controller",
        "llm-aws-load-balancer-controller",
        "aws-load-balancer-controller",
        ("serviceAccount",),
    ),
}
SERVICE_ACCOUNTS = {
    "cluster-autoscaler": "cluster-autoscaler",
    "karpenter": "karpenter",
    "lb": "aws-load-balancer-controller",
}


def serving_graph(build: Build, provisioner: str, identity: str) -> Graph:
    """A created cluster that serves (so it runs the load balancer controller) and scales with
    ``provisioner``."""
    spec = eks_serving(provisioner=provisioner)
    assert spec.kube is not None and spec.kube.provisioner == provisioner
    return build_eks(build, spec, identity)


def refs(opts: pulumi.ResourceOptions) -> set[tuple[str, str]]:
    deps: Any = opts.depends_on or []
    return {(type(d).__name__, d._name) for d in deps}


@pytest.mark.parametrize("identity", ["pod-identity", "irsa"])
@pytest.mark.parametrize("provisioner", ["cluster-autoscaler", "karpenter"])
def test_every_controller_release_waits_for_its_role_and_sits_on_the_system_group(
    build: Build, resource_options: ResourceOpts, provisioner: str, identity: str
) -> None:
    g = serving_graph(build, provisioner, identity)
    releases = {r.name: r for r in g.of_type("helm.sh/v3:Release")}
    for key in (provisioner, "lb"):
        role, resource, release_name, account_at = CONTROLLERS[key]
        release = releases[resource]
        assert release.inputs["name"] == release_name and release.inputs["namespace"] == "kube-system"
        opts = resource_options[resource]
        assert opts.delete_before_replace is True  # two copies would claim the same service account
        assert opts.provider is not None and type(opts.provider).__name__ == "Provider"
        assert opts.provider._name == "llm-plugin-k8s"  # the created cluster's own provider
        assert type(opts.parent).__name__ == "EksEnvironment"
        waits = refs(opts)
        # Its permissions and the node groups (and the cluster's identity: the Pod Identity agent or
        # the OIDC provider) outlive it on destroy.
        assert {("RolePolicy", role), ("_EksNodeGroups", "llm")} <= waits
        if identity == "pod-identity":
            assert {("PodIdentityAssociation", role), ("Addon", "llm-pod-identity")} <= waits
        else:
            assert ("OpenIdConnectProvider", "llm-oidc") in waits
            assert not any(kind == "PodIdentityAssociation" for kind, _ in waits)
        values = release.inputs["values"]
        assert values["nodeSelector"] == {NODEGROUP_LABEL: "llm-system"}
        account = values
        for key_ in account_at:
            account = account[key_]
        assert account["name"] == SERVICE_ACCOUNTS[key]
        if identity == "irsa":  # the chart annotates the service account with the role it assumes
            assert account["annotations"] == {"eks.amazonaws.com/role-arn": f"arn:aws:iam::123456789012:{role}"}
        else:
            assert "annotations" not in account
        (policy,) = [r for r in g.of_type("iam/rolePolicy:RolePolicy") if r.name == role]
        assert json.loads(policy.inputs["policy"])["Statement"]  # its own document, inline


def test_karpenter_also_waits_for_its_interruption_queue(build: Build, resource_options: ResourceOpts) -> None:
    serving_graph(build, "karpenter", "pod-identity")
    waits = refs(resource_options["llm-karpenter"])
    assert ("QueuePolicy", "llm-karpenter") in waits
    assert {name for kind, name in waits if kind == "EventTarget"} == {
        f"llm-karpenter-{event}" for event in ("health", "spot", "rebalance", "state", "reservation")
    }


def test_values_merge_the_service_account_where_the_chart_takes_it() -> None:
    assert merged({"a": 1}, ("rbac", "serviceAccount"), {"name": "sa"}) == {
        "a": 1,
        "rbac": {"serviceAccount": {"name": "sa"}},
    }
    given = {"serviceAccount": {"create": True}}
    assert merged(given, ("serviceAccount",), {"name": "sa"}) == {"serviceAccount": {"create": True, "name": "sa"}}
    assert given == {"serviceAccount": {"create": True}}  # copied, not changed
    assert merged({"a": 1}, (), {"b": 2}) == {"a": 1, "b": 2}
