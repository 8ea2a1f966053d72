"""Measuring a pool through the Kubernetes API (``fullserver.kube.api``, ``fullserver.kube.verify``),
against an in-process fake API server (``fakeapi``) so the real ``kubernetes`` client runs: the
pool's nodes by its labels, one Job pinned to each, its log read into the verdict, and the Job
deleted - with its pods - on success, on failure, on timeout and on an interrupt."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fullserver.catalog import load_catalog
from fullserver.kube import KubePlan, kube_plan
from fullserver.kube.api import Cluster, ClusterUnreachable, connect, list_nodes, pick_context, run_job
from fullserver.kube.verify import measure_node, measure_pool
from fullserver.kube.verify_job import JOB_PREFIX, JobOptions
from fullserver.kube.verify_lines import Node
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.profiles import load_profiles
from tests.core.kube.fakeapi import OOM_KILLED, PENDING, RUNNING, SUCCEEDED, FakeCluster, kubeconfig, node, serve

LOG = (Path(__file__).parent / "data" / "eks-p5-node.log").read_text()
ALLOCATABLE = {"cpu": "191450m", "memory": "2111990784Ki", "ephemeral-storage": "26717701120Ki", "nvidia.com/gpu": "8"}
HINT = "run `aws eks update-kubeconfig --name ml-prod --region us-east-1`"
FAST = JobOptions(namespace="ml", poll_seconds=0.05, timeout=20)


@pytest.fixture
def plan(plans: dict[str, StackPlan]) -> KubePlan:
    return kube_plan(plans["train-p5-cluster"].spec, Platform.EKS_GPU, cluster="ml-prod")


def _pool_node(plan: KubePlan, name: str) -> dict:  # type: ignore[type-arg]
    return node(name, dict(plan.node_selector), ALLOCATABLE)


def _connect(tmp_path: Path, url: str) -> Cluster:
    return connect("ml-prod", kubeconfig(tmp_path / "config", url), None, HINT)


def _measure(plan: KubePlan, c: Cluster, name: str, opts: JobOptions = FAST):  # type: ignore[no-untyped-def]
    (found,) = [n for n in list_nodes(c, plan.node_selector) if n.name == name]
    return measure_node(c, plan, found, load_profiles()[plan.profile], load_catalog(), opts)


def _deleted_with_background(fake: FakeCluster) -> list[str]:
    assert all(body.get("propagationPolicy") == "Background" for _, body in fake.deleted), fake.deleted
    return [name for name, _ in fake.deleted]


def test_the_pools_nodes_are_listed_by_its_labels(plan: KubePlan, tmp_path: Path) -> None:
    other = node("ip-10-0-9-9.ec2.internal", {"fullserver-environment": "someone-else"}, ALLOCATABLE)
    fake = FakeCluster(nodes=[_pool_node(plan, "ip-10-0-1-23.ec2.internal"), other])
    with serve(fake) as url:
        nodes = list_nodes(_connect(tmp_path, url), plan.node_selector)
    assert nodes == [Node("ip-10-0-1-23.ec2.internal", ALLOCATABLE, ready=True, address="10.0.1.23")]
    (get,) = [q for m, p, q in fake.requests if p == "/api/v1/nodes"]
    assert get["labelSelector"] == ["fullserver-environment=train-p5-cluster"]


def test_a_node_is_measured_by_a_pinned_job_that_is_deleted_after(plan: KubePlan, tmp_path: Path) -> None:
    name = "ip-10-0-1-23.ec2.internal"
    fake = FakeCluster(nodes=[_pool_node(plan, name)], logs={name: LOG}, phases={name: [PENDING, RUNNING, SUCCEEDED]})
    with serve(fake) as url:
        got = _measure(plan, _connect(tmp_path, url), name)
    # the verdict is the log's: GPU 3 trained at x8 of x16
    lines = {x.dimension: x for x in got.lines}
    assert (lines["gpu pcie width"].promised, lines["gpu pcie width"].delivered) == (16, 8)
    assert lines["allocatable nvidia.com/gpu"].delivered == 8
    assert got.status == "short"
    # the p5's ENA link reports no speed: not measurable, named once (fullserver.kube.verify_lines)
    assert [p.split(":")[0] for p in got.problems] == ["network link speed not measurable"]
    # one Job, pinned to the node, created in the namespace asked for, then deleted with its pod
    (created,) = [p for m, p, _ in fake.requests if m == "POST"]
    assert created == "/apis/batch/v1/namespaces/ml/jobs"
    (job_name,) = _deleted_with_background(fake)
    assert job_name.startswith(JOB_PREFIX + "ip-10-0-1-23-ec2-internal-")
    assert fake.jobs == {}
    assert fake.reads[job_name] == 3  # Pending, Running, Succeeded: it waited for the pod
    (log_read,) = [q for m, p, q in fake.requests if p.endswith("/log")]
    assert log_read["container"] == ["measure"]


def test_a_failed_pod_is_reported_and_its_job_deleted(plan: KubePlan, tmp_path: Path) -> None:
    name = "ip-10-0-1-23.ec2.internal"
    fake = FakeCluster(nodes=[_pool_node(plan, name)], logs={name: "Killed\n"}, phases={name: [OOM_KILLED]})
    with serve(fake) as url:
        got = _measure(plan, _connect(tmp_path, url), name)
    assert got.status == "unverified"
    (problem,) = got.problems
    assert "the measuring pod failed (OOMKilled 137): Killed" in problem
    assert len(_deleted_with_background(fake)) == 1 and fake.jobs == {}


def test_a_pod_that_never_runs_times_out_and_its_job_is_deleted(plan: KubePlan, tmp_path: Path) -> None:
    name = "ip-10-0-1-23.ec2.internal"
    fake = FakeCluster(nodes=[_pool_node(plan, name)], phases={name: [PENDING]})
    opts = JobOptions(namespace="ml", poll_seconds=0.05, timeout=1)
    with serve(fake) as url:
        got = _measure(plan, _connect(tmp_path, url), name, opts)
    (problem,) = got.problems
    assert (
        "did not finish within 1s (not scheduled: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu.)" in problem
    )
    assert "holding the node's accelerators keeps it Pending" in problem
    deleted = _deleted_with_background(fake)
    created = [p for m, p, _ in fake.requests if m == "POST"]
    assert len(deleted) == len(created) == 1
    assert fake.jobs == {}


def test_an_interrupt_deletes_every_job_still_running(plan: KubePlan, tmp_path: Path) -> None:
    """Ctrl-C while one node is done and another still Pending: both Jobs are gone after."""
    done, stuck = "ip-10-0-1-23.ec2.internal", "ip-10-0-1-24.ec2.internal"
    fake = FakeCluster(
        nodes=[_pool_node(plan, done), _pool_node(plan, stuck)],
        logs={done: LOG},
        phases={done: [SUCCEEDED], stuck: [PENDING]},
    )

    def interrupt(name: str, _: object) -> None:
        raise KeyboardInterrupt

    with serve(fake) as url:
        c = _connect(tmp_path, url)
        nodes = list_nodes(c, plan.node_selector)
        opts = JobOptions(namespace="ml", poll_seconds=0.05, timeout=60)
        with pytest.raises(KeyboardInterrupt):
            measure_pool(c, plan, nodes, load_profiles()[plan.profile], load_catalog(), opts, on_done=interrupt)
    assert len(_deleted_with_background(fake)) == 2
    assert fake.jobs == {}


def test_a_node_that_is_not_ready_gets_no_job(plan: KubePlan, tmp_path: Path) -> None:
    name = "ip-10-0-1-23.ec2.internal"
    fake = FakeCluster(nodes=[node(name, dict(plan.node_selector), ALLOCATABLE, ready=False)])
    with serve(fake) as url:
        got = _measure(plan, _connect(tmp_path, url), name)
    assert got.status == "unverified"
    assert got.problems == [f"node {name} is not Ready: not measured (`kubectl describe node {name}` says why)"]
    assert not [m for m, _, _ in fake.requests if m == "POST"]


def test_a_refused_job_is_one_line_and_nothing_is_left_to_delete(plan: KubePlan, tmp_path: Path) -> None:
    name = "ip-10-0-1-23.ec2.internal"
    fake = FakeCluster(nodes=[_pool_node(plan, name)], refuse_create=403)
    with serve(fake) as url:
        got = _measure(plan, _connect(tmp_path, url), name)
    assert got.status == "error"
    assert got.error == (
        "cannot create the measuring Job in namespace 'ml': HTTP 403 Forbidden (your identity may create Jobs there,"
        " and the namespace's Pod Security level must allow hostPath (privileged))"
    )
    assert fake.deleted == []


def test_cancel_ends_the_wait_and_deletes_the_job(plan: KubePlan, tmp_path: Path) -> None:
    name = "ip-10-0-1-23.ec2.internal"
    fake = FakeCluster(nodes=[_pool_node(plan, name)], phases={name: [RUNNING]})
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "fullserver-verify-t-abcde", "namespace": "ml"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"kubernetes.io/hostname": name},
                    "containers": [{"name": "measure", "image": "ubuntu:22.04"}],
                }
            }
        },
    }
    with serve(fake) as url, pytest.raises(Exception, match="interrupted before the measuring pod finished"):
        run_job(_connect(tmp_path, url), name, manifest, 60, cancel, poll=0.05)
    assert _deleted_with_background(fake) == ["fullserver-verify-t-abcde"]


def test_an_unreachable_api_server_is_one_line_with_what_to_do(plan: KubePlan, tmp_path: Path) -> None:
    with serve(FakeCluster(nodes=[])) as url:
        pass  # stopped: nothing listens there any more
    c = _connect(tmp_path, url)
    with pytest.raises(ClusterUnreachable) as err:
        list_nodes(c, plan.node_selector)
    line = err.value.line()
    assert line.startswith("cluster 'ml-prod': cannot reach its API server (context 'arn:aws:eks:us-east-1:")
    assert "Connection refused" in line and line.endswith(f"({HINT})")
    assert "\n" not in line


def test_no_kubeconfig_is_one_line_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ClusterUnreachable, match=r"cluster 'ml-prod': no usable kubeconfig: .*\(run `aws eks"):
        connect("ml-prod", tmp_path / "missing", None, HINT)


def test_the_context_for_the_plans_cluster_is_picked_over_the_current_one() -> None:
    contexts = [
        {
            "name": "gke_my-ml-project_us-central1_ml-prod",
            "context": {"cluster": "gke_my-ml-project_us-central1_ml-prod"},
        },
        {"name": "kind-dev", "context": {"cluster": "kind-dev"}},
        {"name": "admin@eks", "context": {"cluster": "arn:aws:eks:us-east-1:111122223333:cluster/train"}},
    ]
    assert pick_context(contexts, "kind-dev", "ml-prod") == "gke_my-ml-project_us-central1_ml-prod"
    assert pick_context(contexts, "kind-dev", "train") == "admin@eks"
    assert pick_context(contexts, "kind-dev", "elsewhere") == "kind-dev"
