"""The Kubernetes platforms' cluster keys reach the components from the stack (``fullserver.kube.access``):
the whole program (config -> plan -> ``components.gke``/``components.eks`` ``_args`` -> the component)
under the mock runtime, so a key the plan accepts is one the graph shows."""

from __future__ import annotations

from typing import Any

import pytest

from components.eks import EksEnvironment, eks_args
from components.graph import Graph, GraphError, graph_for_config
from fullserver.kube import kube_plan
from fullserver.platform import Platform
from tests.components.conftest import Build, Plans, spec_of
from tests.core.test_stack_config import stack_config


def _pools(g: Graph) -> list[dict[str, Any]]:
    return [r.inputs for r in g.of_type("container/nodePool:NodePool")]


def test_a_zonal_attached_gke_cluster_gets_its_zone_as_the_pools_location() -> None:
    """A node pool's ``location`` is its cluster's (pulumi-gcp ``NodePool.location``): a zonal
    cluster's is a zone, never the region; the pools' nodes go to that zone too."""
    g = graph_for_config("gke-gpu-attach", stack_config("gke-gpu-attach", clusterLocation="us-central1-c"))
    pools = _pools(g)
    assert len(pools) == 2  # spot and its on-demand fallback
    for pool in pools:
        assert pool["cluster"] == "ml-prod"
        assert pool["location"] == "us-central1-c"
        assert pool["nodeLocations"] == ["us-central1-c"]
    assert g.outputs["connect"].startswith(
        "gcloud container clusters get-credentials ml-prod --location us-central1-c "
    )


def test_a_regional_attached_gke_cluster_keeps_the_region() -> None:
    (pool, *_) = _pools(graph_for_config("gke-gpu-attach", stack_config("gke-gpu-attach")))
    assert pool["location"] == "us-central1"


def test_a_created_gke_cluster_with_a_private_endpoint_denies_its_public_one() -> None:
    g = graph_for_config("gke-tpu-slice", stack_config("gke-tpu-slice", privateEndpoint=True))
    private = g.one("container/cluster:Cluster").inputs["privateClusterConfig"]
    assert private["enablePrivateEndpoint"] is True and private["enablePrivateNodes"] is True
    assert g.one("container/cluster:Cluster").inputs["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": False}
    }


def test_a_created_eks_cluster_with_a_private_endpoint_is_refused_before_the_graph() -> None:
    """pulumi up installs charts through a created EKS cluster's API, unreachable from outside the
    VPC the same up creates (``fullserver.kube.access.unreachable_api_refusal``)."""
    private = stack_config("eks-gpu-cluster", privateEndpoint=True, controlPlaneSourceRanges=None)
    with pytest.raises(GraphError, match="fullserver:privateEndpoint: pulumi up applies NVIDIA's device plugin"):
        graph_for_config("eks-gpu-cluster", private)


def test_a_created_eks_cluster_with_a_private_endpoint_has_no_public_one(plans: Plans, build: Build) -> None:
    """The component as a program in another language may call it (the plan refuses such a stack)."""
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU)
    g = build(lambda: EksEnvironment("p5", eks_args(plan, private_endpoint=True)))
    vpc = g.one("eks/cluster:Cluster").inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is False and vpc["endpointPrivateAccess"] is True
    assert "publicAccessCidrs" not in vpc


def test_irsa_builds_the_clusters_oidc_provider_and_no_pod_identity_agent() -> None:
    g = graph_for_config("eks-gpu-cluster", stack_config("eks-gpu-cluster", clusterIdentity="irsa"))
    oidc = g.one("iam/openIdConnectProvider:OpenIdConnectProvider").inputs
    assert oidc["clientIdLists"] == ["sts.amazonaws.com"]
    assert [a.inputs["addonName"] for a in g.of_type("eks/addon:Addon")] == []
    default = graph_for_config("eks-gpu-cluster", stack_config("eks-gpu-cluster"))
    assert [a.inputs["addonName"] for a in default.of_type("eks/addon:Addon")] == ["eks-pod-identity-agent"]
    assert default.of_type("iam/openIdConnectProvider:OpenIdConnectProvider") == []


SUBNETS = ["subnet-0a1b2c3d", "subnet-0123456789abcdef0"]


def test_given_subnets_are_the_node_groups_on_an_attached_eks_cluster() -> None:
    """Subnets of the cluster's VPC (its private ones, say): the node groups go there, and the
    cluster itself is only read."""
    config = stack_config("exp-aws-l4-spot", platform="eks-gpu", cluster="research", subnets=SUBNETS)
    g = graph_for_config("exp-aws-l4-spot", config)
    groups = [r.inputs for r in g.of_type("eks/nodeGroup:NodeGroup")]
    assert len(groups) == 2
    assert all(group["subnetIds"] == SUBNETS and group["clusterName"] == "research" for group in groups)
    assert g.of_type("eks/cluster:Cluster") == []
    without = graph_for_config(
        "exp-aws-l4-spot", stack_config("exp-aws-l4-spot", platform="eks-gpu", cluster="research")
    )
    (group, *_) = [r.inputs for r in without.of_type("eks/nodeGroup:NodeGroup")]
    assert group["subnetIds"] == ["subnet-use1-az1", "subnet-use1-az2", "subnet-use1-az3"]  # the cluster's own


# --- who reaches a created cluster's API (issue 33, item 6) ----------------------------------------
RANGES = ["203.0.113.0/24", "198.51.100.7/32"]


def _cluster(g: Graph, token: str) -> dict[str, Any]:
    return g.one(token).inputs


def test_no_created_cluster_admits_the_internet_by_default(plans: Plans, build: Build) -> None:
    """EKS: no public endpoint at all (EKS's own default is 0.0.0.0/0); GKE: the IP endpoint
    private and the DNS endpoint taking outside traffic, guarded by IAM."""
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU)  # no ranges (the plan refuses it)
    eks = _cluster(build(lambda: EksEnvironment("p5", eks_args(plan))), "eks/cluster:Cluster")
    assert eks["vpcConfig"]["endpointPublicAccess"] is False and eks["vpcConfig"]["endpointPrivateAccess"] is True
    assert "publicAccessCidrs" not in eks["vpcConfig"]
    gke = _cluster(graph_for_config("gke-tpu-slice", stack_config("gke-tpu-slice")), "container/cluster:Cluster")
    assert gke["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert gke["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": True}}
    assert gke.get("masterAuthorizedNetworksConfig") is None


def test_the_stacks_ranges_are_the_public_endpoints_only_ranges() -> None:
    config = stack_config("eks-gpu-cluster", controlPlaneSourceRanges=RANGES)
    vpc = _cluster(graph_for_config("eks-gpu-cluster", config), "eks/cluster:Cluster")["vpcConfig"]
    assert (vpc["endpointPublicAccess"], vpc["endpointPrivateAccess"], vpc["publicAccessCidrs"]) == (True, True, RANGES)
    config = stack_config("gke-tpu-slice", controlPlaneSourceRanges=RANGES)
    gke = _cluster(graph_for_config("gke-tpu-slice", config), "container/cluster:Cluster")
    assert gke["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert gke["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [
            {"cidrBlock": "203.0.113.0/24", "displayName": "controlPlaneSourceRanges 0"},
            {"cidrBlock": "198.51.100.7/32", "displayName": "controlPlaneSourceRanges 1"},
        ]
    }
    assert gke["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": False}}


def test_opening_to_the_internet_is_said_in_the_graph() -> None:
    config = stack_config("eks-gpu-cluster", controlPlaneOpenToInternet=True, controlPlaneSourceRanges=None)
    vpc = _cluster(graph_for_config("eks-gpu-cluster", config), "eks/cluster:Cluster")["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["0.0.0.0/0"]
    config = stack_config("gke-tpu-slice", controlPlaneOpenToInternet=True)
    gke = _cluster(graph_for_config("gke-tpu-slice", config), "container/cluster:Cluster")
    assert gke["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert gke.get("masterAuthorizedNetworksConfig") is None


def test_the_workloads_provider_and_the_connect_command_use_the_endpoint_that_answers() -> None:
    """serve-gke-l4 applies its workload at pulumi up: without ranges, through the DNS endpoint with
    the system's roots (no cluster CA: Google's front end serves it); with ranges, the IP endpoint."""
    import json

    g = graph_for_config("serve-gke-l4", stack_config("serve-gke-l4"))
    (provider,) = g.of_type("pulumi:providers:kubernetes")
    (cluster,) = json.loads(provider.inputs["kubeconfig"])["clusters"]
    assert cluster["cluster"] == {"server": "https://gke-0123456789abcdef.us-central1.gke.goog"}
    assert g.outputs["connect"].endswith("--project my-ml-project --dns-endpoint")
    g = graph_for_config("serve-gke-l4", stack_config("serve-gke-l4", controlPlaneSourceRanges=RANGES))
    (provider,) = g.of_type("pulumi:providers:kubernetes")
    (cluster,) = json.loads(provider.inputs["kubeconfig"])["clusters"]
    assert cluster["cluster"]["server"] == "https://192.0.2.11" and cluster["cluster"]["certificate-authority-data"]
    assert not g.outputs["connect"].endswith("--dns-endpoint")
