"""The Kubernetes platforms' cluster keys reach the components from the stack (``fullserver.kube.access``):
the whole program (config -> plan -> ``components.gke``/``components.eks`` ``_args`` -> the component)
under the mock runtime, so a key the plan accepts is one the graph shows."""

from __future__ import annotations

from typing import Any

from components.graph import Graph, graph_for_config
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
    plain = graph_for_config("gke-tpu-slice", stack_config("gke-tpu-slice"))
    assert plain.one("container/cluster:Cluster").inputs["privateClusterConfig"]["enablePrivateEndpoint"] is False


def test_a_created_eks_cluster_with_a_private_endpoint_has_no_public_one() -> None:
    g = graph_for_config("eks-gpu-cluster", stack_config("eks-gpu-cluster", privateEndpoint=True))
    vpc = g.one("eks/cluster:Cluster").inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is False and vpc["endpointPrivateAccess"] is True
    plain = graph_for_config("eks-gpu-cluster", stack_config("eks-gpu-cluster"))
    assert plain.one("eks/cluster:Cluster").inputs["vpcConfig"]["endpointPublicAccess"] is True


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
