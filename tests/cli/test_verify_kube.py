"""``fullserver verify STACK`` on a Kubernetes pool stack: the command line end to end against an
in-process fake API server (``tests.core.kube.fakeapi``): the same table, JSON and exit codes as
the SSH path, ``--node`` choosing nodes, and one line when the cluster cannot be reached."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fullserver.errors import EXIT_INPUT, EXIT_SHORT, EXIT_UNREACHABLE
from fullserver_cli.app import app
from tests.core.kube.fakeapi import SUCCEEDED, FakeCluster, kubeconfig, node, serve

ROOT = Path(__file__).resolve().parents[2]
LOG = (ROOT / "tests" / "core" / "kube" / "data" / "eks-p5-node.log").read_text()
LABELS = {"fullserver-environment": "eks-gpu-cluster"}  # the eks-gpu-cluster pool's selector
ALLOCATABLE = {"cpu": "191450m", "memory": "2111990784Ki", "ephemeral-storage": "26717701120Ki", "nvidia.com/gpu": "8"}
NODES = ["ip-10-0-1-23.ec2.internal", "ip-10-0-1-24.ec2.internal"]
runner = CliRunner()


def _verify(tmp_path: Path, url: str, *args: str) -> tuple[int, str, str]:
    config = kubeconfig(tmp_path / "config", url, "arn:aws:eks:us-east-1:111122223333:cluster/eks-gpu-cluster")
    stacks = str(ROOT / "stacks")
    result = runner.invoke(
        app, ["verify", "eks-gpu-cluster", "--stacks-dir", stacks, "--kubeconfig", str(config), *args]
    )
    return result.exit_code, result.stdout, result.stderr


def test_every_pool_node_is_measured_and_shown_as_the_ssh_path_shows_it(tmp_path: Path) -> None:
    fake = FakeCluster(
        nodes=[node(n, LABELS, ALLOCATABLE) for n in NODES],
        logs=dict.fromkeys(NODES, LOG),
        phases={n: [SUCCEEDED] for n in NODES},
    )
    with serve(fake) as url:
        code, out, err = _verify(tmp_path, url, "--json", "--namespace", "ml")
    hosts = json.loads(out)
    assert [h["name"] for h in hosts] == NODES
    assert all(h["status"] == "short" for h in hosts)
    width = next(x for x in hosts[0]["lines"] if x["dimension"] == "gpu pcie width")
    assert (width["promised"], width["delivered"], width["ok"]) == (16, 8, False)
    assert code == EXIT_SHORT
    assert f"short: {NODES[0]}: " in err
    assert len(fake.deleted) == 2 and fake.jobs == {}


def test_node_measures_only_the_nodes_named(tmp_path: Path) -> None:
    fake = FakeCluster(nodes=[node(n, LABELS, ALLOCATABLE) for n in NODES], logs=dict.fromkeys(NODES, LOG))
    with serve(fake) as url:
        code, out, _ = _verify(tmp_path, url, "--json", "--node", NODES[1])
    assert [h["name"] for h in json.loads(out)] == [NODES[1]]
    assert [p for m, p, _ in fake.requests if m == "POST"] == ["/apis/batch/v1/namespaces/default/jobs"]
    with serve(fake) as url:
        code, _, err = _verify(tmp_path, url, "--node", "ip-10-9-9-9.ec2.internal")
    assert code == EXIT_INPUT
    assert err.strip() == (
        "error: --node ip-10-9-9-9.ec2.internal: not a node of the pool of stack 'eks-gpu-cluster' "
        f"(its nodes: {', '.join(NODES)})"
    )


def test_a_pool_with_no_node_up_is_one_line(tmp_path: Path) -> None:
    with serve(FakeCluster(nodes=[])) as url:
        code, _, err = _verify(tmp_path, url)
    assert code == EXIT_SHORT
    assert err.startswith(
        "error: stack 'eks-gpu-cluster': no node of its pool is up in cluster 'eks-gpu-cluster' (context "
        "'arn:aws:eks:us-east-1:111122223333:cluster/eks-gpu-cluster', labels fullserver-environment=eks-gpu-cluster)"
    )
    assert len(err.strip().splitlines()) == 1


def test_an_unreachable_cluster_is_one_line_saying_how_to_get_credentials(tmp_path: Path) -> None:
    with serve(FakeCluster(nodes=[])) as url:
        pass  # stopped
    code, _, err = _verify(tmp_path, url)
    assert code == EXIT_UNREACHABLE
    (line,) = err.strip().splitlines()
    assert line.startswith("error: cluster 'eks-gpu-cluster': cannot reach its API server")
    assert line.endswith(
        "(run `aws eks update-kubeconfig --name eks-gpu-cluster --region us-east-1`, or pass --kubeconfig / --context)"
    )
