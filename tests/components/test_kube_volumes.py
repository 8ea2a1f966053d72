"""Destroy waits for the pods' data volumes (``components.kube_volumes``): the wait sits between the
workload and what deletes the disks (the nodes, the CSI driver, the cluster), and its delete, run
against an in-process Kubernetes API (``tests.core.kube.fakeapi``), returns once no volume of the
environment's StorageClass is left, or fails destroy naming each disk and the command that deletes it."""

from __future__ import annotations

from typing import Any

import pytest

from components.eks import EksEnvironment, eks_args
from components.gke import GkeEnvironment, gke_args
from components.kube_volumes import TYPE, DataVolumesGoneProvider
from fullserver.kube import api as kube_api
from fullserver.kube import kube_plan
from fullserver.kube.manifest import workload
from fullserver.platform import Platform
from tests.components.conftest import Build, Plans, ResourceOpts, depends_on_names, spec_of
from tests.core.kube.fakeapi import FakeCluster, kubeconfig_text, serve, volume

CLASS = "fullserver-llm-data"
SECRET_SIG, SECRET_VALUE_SIG = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
"""How the mock runtime shows a secret input (Pulumi's secret signature)."""


def test_on_eks_the_workload_waits_on_the_volumes_and_they_on_the_nodes_and_the_driver(
    plans: Plans, build: Build, resource_options: ResourceOpts, group_waits: dict[str, list[str]]
) -> None:
    spec = spec_of(plans, "exp-aws-l4-spot")
    plan = kube_plan(spec, Platform.EKS_GPU)
    assert plan.data_volume is not None and plan.create_cluster
    manifests = workload(plan, spec, image="trainer:1", command=["python", "train.py"])
    args = eks_args(plan, ["subnet-0a", "subnet-0b"], "vpc-1", workload=manifests, deploy_workload=True)
    g = build(lambda: EksEnvironment("vol", args))
    gone = g.one(TYPE)
    assert gone.name == "vol-volumes"
    assert {k: v for k, v in gone.inputs.items() if k not in ("kubeconfig", "__provider")} == {
        "storage_class": plan.data_volume.storage_class,
        "pool": "eks",
        "region": "us-east-1",
        "cluster": plan.cluster_name,
    }
    (provider,) = [r for r in g.rows if r.type == "pulumi:providers:kubernetes" and r.name == "vol-k8s"]
    kept = gone.inputs["kubeconfig"]  # the workload's own way in, kept as a secret in the state
    assert kept[SECRET_SIG] == SECRET_VALUE_SIG and kept["value"] == provider.inputs["kubeconfig"]
    # the node groups (the ``EksNodeGroups`` component, named as the environment) and the EBS CSI add-on
    assert {"vol", "vol-ebs-csi"} <= depends_on_names(resource_options["vol-volumes"])
    assert "vol-volumes" in group_waits["vol-workload"]
    assert resource_options["vol-volumes"].additional_secret_outputs == ["kubeconfig"]


def test_on_gke_the_workload_waits_on_the_volumes_and_they_on_the_pools(
    plans: Plans, build: Build, resource_options: ResourceOpts, group_waits: dict[str, list[str]]
) -> None:
    spec = spec_of(plans, "finetune-gcp-g2")
    plan = kube_plan(spec, Platform.GKE_GPU)
    assert plan.data_volume is not None
    manifests = workload(plan, spec, image="trainer:1", command=["python", "train.py"])
    g = build(lambda: GkeEnvironment("ft", gke_args(plan, "proj", workload=manifests, deploy_workload=True)))
    gone = g.one(TYPE).inputs
    assert (gone["storage_class"], gone["pool"], gone["region"]) == (plan.data_volume.storage_class, "gke", plan.region)
    # the node pools (the ``GkeNodePools`` component, named as the environment)
    assert "ft" in depends_on_names(resource_options["ft-volumes"])
    assert "ft-volumes" in group_waits["ft-workload"]


def test_without_a_data_volume_there_is_nothing_to_wait_for(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "serve-gcp-realtime")
    plan = kube_plan(spec, Platform.GKE_GPU)
    assert plan.data_volume is None
    g = build(lambda: GkeEnvironment("dw", gke_args(plan, "proj", workload=workload(plan, spec), deploy_workload=True)))
    assert g.of_type(TYPE) == []


def _props(url: str, pool: str = "eks") -> dict[str, Any]:
    region = "us-east-1" if pool == "eks" else "us-central1"
    return {
        "kubeconfig": kubeconfig_text(url),
        "storage_class": CLASS,
        "pool": pool,
        "region": region,
        "cluster": "ml-prod",
    }


def _provider(wait_seconds: float = 10.0) -> DataVolumesGoneProvider:
    provider = DataVolumesGoneProvider()
    provider.wait_seconds, provider.poll_seconds = wait_seconds, 0.01
    return provider


def test_destroy_returns_once_no_volume_of_the_class_is_left() -> None:
    mine, other = volume("pvc-1", CLASS, "vol-0a", "Bound"), volume("pvc-9", "standard", "vol-0f", "Bound")
    fake = FakeCluster(nodes=[], volumes=[[mine, other], [{**mine, "status": {"phase": "Released"}}, other], [other]])
    with serve(fake) as url:
        _provider().delete("ml-prod/" + CLASS, _props(url))
    assert fake.reads["persistentvolumes"] == 3  # another class's volume is not waited for


def test_volumes_left_after_the_wait_fail_destroy_with_the_commands_that_delete_them() -> None:
    fake = FakeCluster(nodes=[], volumes=[[volume("pvc-1", CLASS, "vol-0a", "Failed")]])
    with serve(fake) as url, pytest.raises(RuntimeError) as failed:
        _provider(wait_seconds=0.05).delete("ml-prod/" + CLASS, _props(url))
    line = str(failed.value)
    assert "\n" not in line
    assert line.startswith(f"1 data volume(s) of StorageClass '{CLASS}' not deleted within 0 s: pvc-1 (Failed)")
    assert "once detached (aws ec2 delete-volume --volume-id vol-0a --region us-east-1); " in line
    assert line.endswith(
        "`pulumi state delete` this resource (`pulumi stack --show-urns` names it), then destroy again"
    )


def test_on_gke_the_command_names_the_disk_by_its_zone() -> None:
    handle = "projects/ml-proj/zones/us-central1-a/disks/pvc-1"
    fake = FakeCluster(nodes=[], volumes=[[volume("pvc-1", CLASS, handle)]])
    with serve(fake) as url, pytest.raises(RuntimeError, match="delete the disks yourself") as failed:
        _provider(wait_seconds=0.05).delete("ml-prod/" + CLASS, _props(url, pool="gke"))
    assert "(gcloud compute disks delete pvc-1 --zone us-central1-a --project ml-proj --quiet)" in str(failed.value)


def test_an_unreachable_cluster_fails_destroy_naming_it_and_the_disks_at_stake() -> None:
    with pytest.raises(RuntimeError) as failed:  # every read fails: asked again until the wait ends
        _provider(wait_seconds=0.2).delete("ml-prod/" + CLASS, _props("http://127.0.0.1:1"))
    line = str(failed.value)
    assert line.startswith("cluster 'ml-prod': cannot reach its API server: ")
    assert f"StorageClass '{CLASS}'" in line and "\n" not in line
    assert "`pulumi state delete` this resource" in line  # the way out when the cluster is gone


def test_a_failed_read_during_the_wait_is_asked_again() -> None:
    fake = FakeCluster(nodes=[], volumes=[[volume("pvc-1", CLASS, "vol-0a")], []])
    with serve(fake) as url:
        calls = {"n": 0}
        real = kube_api.volumes_of_class

        def flaky(c: Any, storage_class: str) -> Any:
            calls["n"] += 1
            if calls["n"] == 1:
                raise kube_api.ClusterUnreachable("cluster 'ml-prod'", "cannot reach its API server: reset")
            return real(c, storage_class)

        with pytest.MonkeyPatch.context() as m:
            m.setattr(kube_api, "volumes_of_class", flaky)
            _provider().delete("ml-prod/" + CLASS, _props(url))
    assert calls["n"] == 3


def test_create_makes_nothing_and_keeps_what_its_delete_reads() -> None:
    props = _props("https://example.invalid")
    made = DataVolumesGoneProvider().create(props)
    assert made.id == "ml-prod/" + CLASS and made.outs == props


def test_a_new_way_in_is_an_update_and_another_class_a_replace() -> None:
    old = _props("https://a.invalid")
    provider = DataVolumesGoneProvider()
    moved = provider.diff("id", old, {**old, "kubeconfig": "other"})
    assert moved.changes and moved.replaces == []
    assert (provider.update("id", old, {**old, "kubeconfig": "other"}).outs or {})["kubeconfig"] == "other"
    renamed = provider.diff("id", old, {**old, "storage_class": "fullserver-other-data"})
    assert renamed.replaces == ["storage_class"]
    assert not provider.diff("id", old, dict(old)).changes
