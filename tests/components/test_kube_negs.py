"""Destroy waits for GKE's load-balancer endpoint groups (``components.kube_negs``): the wait sits
between the workload and the node pools and cluster, and its delete, run against an in-process
Kubernetes API (``tests.core.kube.fakeapi``), returns once the NEG controller has deleted every
record of the workload's Services, or fails destroy naming each and the command that deletes its NEGs."""

from __future__ import annotations

from typing import Any

import pytest

from components.eks import EksEnvironment, eks_args
from components.gke import GkeEnvironment, gke_args
from components.graph import graph_for_stack_plan
from components.kube_negs import TYPE, EndpointGroupsGoneProvider
from fullserver.kube import kube_plan
from fullserver.kube.manifest import workload
from fullserver.platform import Platform
from fullserver.platforms.gke_pool import delete_endpoint_group
from tests.components.conftest import Build, Plans, ResourceOpts, depends_on_names, spec_of
from tests.core.kube.fakeapi import FakeCluster, kubeconfig_text, serve, svcneg

LINK = "https://www.googleapis.com/compute/beta/projects/ml-proj/zones/us-central1-a/networkEndpointGroups/k8s1-ab12-default-llm-80-cd34"
SERVICE = "llm"


def test_a_served_gke_workload_waits_on_its_services_endpoint_groups(
    plans: Plans, resource_options: ResourceOpts
) -> None:
    """serve-gke-l4: the Gateway reaches the model server's Service through NEGs; the workload
    waits on the wait, and the wait on the node pools."""
    g = graph_for_stack_plan(plans["serve-gke-l4"])
    (group,) = g.of_type("yaml/v2:ConfigGroup")
    services = sorted(o["metadata"]["name"] for o in group.inputs["objs"] if o["kind"] == "Service")
    gone = g.one(TYPE)
    assert gone.name.endswith("-endpoint-groups")
    assert {k: v for k, v in gone.inputs.items() if k not in ("kubeconfig", "__provider")} == {
        "namespace": "default",
        "services": services,
        "pool": "gke",
        "cluster": plans["serve-gke-l4"].spec.kube.cluster_name,  # type: ignore[union-attr]
    }
    assert services  # the fronted ClusterIP Service


def test_the_workload_waits_on_the_wait_and_the_wait_on_the_pools(
    plans: Plans, build: Build, resource_options: ResourceOpts, group_waits: dict[str, list[str]]
) -> None:
    """Destroy goes in reverse: the workload (its Service, Gateway), then the wait, then the pools."""
    spec = spec_of(plans, "serve-gcp-realtime")
    plan = kube_plan(spec, Platform.GKE_GPU)
    g = build(lambda: GkeEnvironment("sv", gke_args(plan, "proj", workload=workload(plan, spec), deploy_workload=True)))
    assert g.one(TYPE).name == "sv-endpoint-groups"
    assert "sv-endpoint-groups" in group_waits["sv-workload"]
    assert "sv" in depends_on_names(resource_options["sv-endpoint-groups"])  # the GkeNodePools component
    assert resource_options["sv-endpoint-groups"].additional_secret_outputs == ["kubeconfig"]


def test_eks_records_no_endpoint_groups_so_there_is_no_wait(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "serve-aws-realtime")
    plan = kube_plan(spec, Platform.EKS_GPU)
    args = eks_args(plan, ["subnet-0a", "subnet-0b"], "vpc-1", workload=workload(plan, spec), deploy_workload=True)
    g = build(lambda: EksEnvironment("sv", args))
    assert g.of_type(TYPE) == []


def test_a_workload_without_a_service_has_nothing_to_wait_for(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "finetune-gcp-g2")
    plan = kube_plan(spec, Platform.GKE_GPU)
    manifests = workload(plan, spec, image="trainer:1", command=["python", "train.py"])
    assert not [m for m in manifests if m["kind"] == "Service"]
    g = build(lambda: GkeEnvironment("ft", gke_args(plan, "proj", workload=manifests, deploy_workload=True)))
    assert g.of_type(TYPE) == []


def _props(url: str) -> dict[str, Any]:
    return {
        "kubeconfig": kubeconfig_text(url),
        "namespace": "default",
        "services": [SERVICE],
        "pool": "gke",
        "cluster": "ml-prod",
    }


def _provider(wait_seconds: float = 10.0) -> EndpointGroupsGoneProvider:
    provider = EndpointGroupsGoneProvider()
    provider.wait_seconds, provider.poll_seconds = wait_seconds, 0.01
    return provider


def test_destroy_returns_once_no_record_of_the_services_is_left() -> None:
    mine, other = svcneg("k8s1-ab12-default-llm-80-cd34", SERVICE, "default", LINK), svcneg("k8s1-x", "web")
    fake = FakeCluster(nodes=[], negs=[[mine, other], [mine, other], [other]])
    with serve(fake) as url:
        _provider().delete("ml-prod", _props(url))
    assert fake.reads["servicenetworkendpointgroups"] == 3  # another Service's record is not waited for
    (_, path, query) = fake.requests[0]
    assert path == "/apis/networking.gke.io/v1beta1/namespaces/default/servicenetworkendpointgroups"
    assert query["labelSelector"] == [f"networking.gke.io/service-name in ({SERVICE})"]


def test_records_left_after_the_wait_fail_destroy_with_the_commands_that_delete_the_negs() -> None:
    fake = FakeCluster(nodes=[], negs=[[svcneg("k8s1-ab12-default-llm-80-cd34", SERVICE, "default", LINK)]])
    with serve(fake) as url, pytest.raises(RuntimeError) as failed:
        _provider(wait_seconds=0.05).delete("ml-prod", _props(url))
    line = str(failed.value)
    assert "\n" not in line
    assert line.startswith(
        "1 endpoint group record(s) not deleted within 0 s: k8s1-ab12-default-llm-80-cd34 (Service llm)"
    )
    assert (
        "(gcloud compute network-endpoint-groups delete k8s1-ab12-default-llm-80-cd34 --zone us-central1-a "
        "--project ml-proj --quiet)" in line
    )
    assert line.endswith("then destroy again")


def test_a_cluster_that_serves_no_such_records_has_nothing_to_wait_for() -> None:
    fake = FakeCluster(nodes=[], negs=None)
    with serve(fake) as url:
        _provider().delete("ml-prod", _props(url))


def test_an_unreachable_cluster_fails_destroy_naming_the_services_at_stake() -> None:
    with pytest.raises(RuntimeError) as failed:  # every read fails: asked again until the wait ends
        _provider(wait_seconds=0.2).delete("ml-prod", _props("http://127.0.0.1:1"))
    line = str(failed.value)
    assert line.startswith("cluster 'ml-prod': cannot reach its API server: ")
    assert f"Service(s) {SERVICE}" in line and "block the network's deletion" in line and "\n" not in line


def test_another_set_of_services_is_an_update_and_another_cluster_a_replace() -> None:
    """A replace deletes the old wait at the end of up, waiting for records of Services the workload
    still has: only another cluster replaces it."""
    old = _props("https://a.invalid")
    provider = EndpointGroupsGoneProvider()
    grown = provider.diff("id", old, {**old, "services": ["llm", "web"]})
    assert grown.changes and grown.replaces == []
    assert provider.diff("id", old, {**old, "cluster": "ml-other"}).replaces == ["cluster"]
    assert provider.create(old).id == "ml-prod"


def test_refused_credentials_fail_destroy_at_once_not_after_the_wait() -> None:
    fake = FakeCluster(nodes=[], refuse_reads=401)
    with serve(fake) as url, pytest.raises(RuntimeError) as failed:
        _provider(wait_seconds=600.0).delete("ml-prod", _props(url))
    assert "refused your credentials: HTTP 401" in str(failed.value)
    assert len(fake.requests) == 1


def test_gke_names_a_neg_by_its_zone_and_project_from_its_self_link() -> None:
    assert delete_endpoint_group(LINK) == (
        "gcloud compute network-endpoint-groups delete k8s1-ab12-default-llm-80-cd34 --zone us-central1-a "
        "--project ml-proj --quiet"
    )
    # no --quiet where the zone is unknown: gcloud asks for it rather than failing
    assert delete_endpoint_group("k8s1-odd") == "gcloud compute network-endpoint-groups delete k8s1-odd"
