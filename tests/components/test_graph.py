"""Every example stack's resource graph, evaluated by components.graph in its own mock context.

These run beside the conftest's process-wide mocks: the graph function must leave them alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pytest
from typer.testing import CliRunner

from components.graph import Graph, graph_for_config, graph_for_plan, plan_with_graphs
from fullserver.yamlio import read_yaml
from fullserver_cli.app import app
from fullserver_cli.graph_view import summary
from tests.components.conftest import MOCKS, STACKS, Plans

CLOUD_STACKS = [
    "batch-tpu-v5e",
    "exp-aws-l4-spot",
    "exp-aws-spot",
    "finetune-gcp-a2",
    "finetune-gcp-g2",
    "serve-aws-realtime",
    "serve-gcp-realtime",
    "train-p5-cluster",
    "train-tpu-v5e",
    "train-tpu-v5p-slice",
]


@pytest.fixture(scope="module")
def graphs(plans: Plans) -> dict[str, Graph]:
    return {name: graph_for_plan(plans[name]) for name in CLOUD_STACKS}


def test_every_cloud_example_stack_is_covered(plans: Plans) -> None:
    # VM stacks; the Kubernetes node-pool stacks have their own tests (test_kube_stacks.py)
    cloud = sorted(n for n, p in plans.items() if p.spec.platform.value != "bare-metal" and p.spec.kube is None)
    assert cloud == CLOUD_STACKS


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_every_node_is_labelled_and_nothing_is_open_to_the_internet(graphs: dict[str, Graph], stack: str) -> None:
    g = graphs[stack]
    assert g.rows, stack
    for row in g.rows:
        ranges = row.inputs.get("sourceRanges", [])
        assert "0.0.0.0/0" not in ranges, row.name
        for rule in row.inputs.get("ingress", []):
            if row.name.endswith("-lb-sg") and rule.get("fromPort") == rule.get("toPort") in (80, 443):
                continue  # an internet-facing load balancer takes clients on its ports (443, 80's redirect), only there
            assert "0.0.0.0/0" not in rule.get("cidrBlocks", []), row.name
    nodes = (
        g.of_type("tpu/v2Vm:V2Vm")
        + g.of_type("compute/instance:Instance")
        + g.of_type("compute/instanceTemplate:InstanceTemplate")
    )
    for node in nodes:
        assert node.inputs["labels"]["fullserver-environment"] == stack
    for lt in g.of_type("ec2/launchTemplate:LaunchTemplate"):
        assert lt.inputs["metadataOptions"]["httpTokens"] == "required"
        assert all(m["ebs"]["encrypted"] == "true" for m in lt.inputs["blockDeviceMappings"])
        assert lt.inputs["tagSpecifications"][0]["tags"]["fullserver-environment"] == stack
    # every resource pulumi up creates says what matters about it in the plan's table
    assert [r.name for r in g.rows if r.custom and not summary(r).strip()] == []


@pytest.fixture(scope="module")
def on_demand_g2(plans: Plans) -> Graph:
    """finetune-gcp-g2 on demand without a balanced set: one VM per node (over the set, spot or on
    demand, the nodes are a regional group's: ``gcp_capacity.in_group``)."""
    plan = plans["finetune-gcp-g2"]
    return graph_for_plan(
        plan.model_copy(update={"spec": plan.spec.model_copy(update={"spot": False, "capacity": None})})
    )


def test_summaries_show_the_inputs_that_matter(graphs: dict[str, Graph], on_demand_g2: Graph) -> None:
    def row(stack: str, name: str) -> str:
        return summary(next(r for r in graphs[stack].rows if r.name == name))

    assert row("train-p5-cluster", "train-p5-cluster-lt") == (
        "p5.48xlarge, image=resolve:ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04"
        "/latest/ami-id, 32 EFA (cards 0-31), /dev/sda1 gp3 300GiB encrypted=true, IMDS tokens=required, "
        "cluster placement, reservation=open, labelled"
    )
    vm = next(r for r in on_demand_g2.rows if r.name == "finetune-gcp-g2-node-0")
    assert summary(vm) == (
        "g2-standard-12, 1 local SSD, STANDARD onHostMaintenance=TERMINATE, nic=GVNIC external=yes, "
        "boot=pytorch-2-7-cu128-ubuntu-2204-nvidia-570, labelled"
    )
    # spot: the regional group over the balanced set, and its members' template
    spot = [r for r in graphs["finetune-gcp-g2"].rows if r.name == "finetune-gcp-g2-spot"]
    assert sorted(summary(r) for r in spot) == [
        "distributionPolicyTargetShape=BALANCED, waitForInstances=false, targetSize=1, baseInstanceName=finetune-gcp-g2",
        "machineType=g2-standard-12, labelled",
    ]
    assert row("train-tpu-v5p-slice", "train-tpu-v5p-slice-qr") == "v5p-128, runtime=v2-alpha-tpuv5, queued, labelled"
    assert row("train-tpu-v5p-slice", "train-tpu-v5p-slice-internal") == (
        "from=[10.64.0.0/20] allow=[{protocol=tcp}, {protocol=udp}, {protocol=icmp}], to=every node of its network"
    )
    assert row("finetune-gcp-g2", "finetune-gcp-g2-ssh") == (
        "from=[35.235.240.0/20] allow=[{ports=[22], protocol=tcp}], to=[finetune-gcp-g2-node]"
    )
    assert row("train-p5-cluster", "train-p5-cluster-sg") == "in -1:0 from self"


def test_stack_graph_shapes(graphs: dict[str, Graph], on_demand_g2: Graph) -> None:
    counts = {name: {r.type.rsplit(":", 1)[-1] for r in g.rows} for name, g in graphs.items()}
    assert "V2Vm" in counts["train-tpu-v5e"] and "V2Vm" in counts["batch-tpu-v5e"]
    assert "TpuQueuedResource" in counts["train-tpu-v5p-slice"]
    assert {"LaunchTemplate", "PlacementGroup", "Instance"} <= counts["train-p5-cluster"]
    assert {"InstanceTemplate", "RegionInstanceGroupManager", "RegionAutoscaler", "HealthCheck"} <= counts[
        "serve-gcp-realtime"
    ]
    assert len(graphs["train-p5-cluster"].of_type("ec2/instance:Instance")) == 2
    lt = graphs["train-p5-cluster"].one("ec2/launchTemplate:LaunchTemplate").inputs
    assert [n["networkCardIndex"] for n in lt["networkInterfaces"]] == list(range(32))
    assert on_demand_g2.one("compute/instance:Instance").inputs["scratchDisks"] == [{"interface": "NVME", "size": 375}]
    # spot: a regional group over the balanced set, its template carrying the same local SSD
    spot = graphs["finetune-gcp-g2"]
    assert spot.of_type("compute/instance:Instance") == []
    mig = spot.one("RegionInstanceGroupManager").inputs
    assert [s["machineTypes"] for s in mig["instanceFlexibilityPolicy"]["instanceSelections"]] == [
        ["g2-standard-12"],
        ["g2-standard-16"],
    ]
    template = spot.one("compute/instanceTemplate:InstanceTemplate").inputs
    assert template["scheduling"]["provisioningModel"] == "SPOT"
    assert [d for d in template["disks"] if d.get("type") == "SCRATCH"] == [
        {"diskSizeGb": 375, "diskType": "local-ssd", "type": "SCRATCH", "interface": "NVME"}
    ]
    assert graphs["batch-tpu-v5e"].one("tpu/v2Vm:V2Vm").inputs["schedulingConfig"]["spot"] is True
    # the queued slice runs as its own account with its labels: nothing about it to warn of
    assert graphs["train-tpu-v5p-slice"].warnings == []


def test_graph_leaves_the_test_sessions_mocks_alone(plans: Plans) -> None:
    before = pulumi.get_stack()
    MOCKS.registered.clear()
    graph_for_plan(plans["finetune-gcp-g2"])
    assert MOCKS.registered == [] and pulumi.get_stack() == before == "test"


def test_the_real_program_from_stack_config(plans: Plans) -> None:
    config = read_yaml(STACKS / "Pulumi.train-p5-cluster.yaml")["config"]
    g = graph_for_config("train-p5-cluster", config)
    assert len(g.of_type("ec2/instance:Instance")) == 2
    assert {r.type for r in g.rows} == {r.type for r in graph_for_plan(plans["train-p5-cluster"]).rows}


def test_the_program_fails_with_the_cores_one_line_error() -> None:
    config = {**read_yaml(STACKS / "Pulumi.exp-aws-spot.yaml")["config"], "fullserver:nodes": 2}
    with pytest.raises(Exception, match=r"fullserver:nodes: profile 'experimentation' is single-node"):
        graph_for_config("exp-aws-spot", config)


def test_plan_with_graphs_covers_every_stack_including_bare_metal(plans: Plans) -> None:
    out = plan_with_graphs(plans.values())
    assert [p.stack for p, _ in out] == list(plans)
    for plan, g in out:
        assert g.stack == plan.stack
        resources = [r for r in g.rows if r.custom]
        assert resources, plan.stack  # every stack, bare metal included, creates something
        assert all(r.name.startswith(plan.stack) for r in resources), plan.stack
    (bare,) = [g for p, g in out if p.spec.platform.value == "bare-metal"]
    assert bare.warnings == []  # the bare-metal component evaluated instead of degrading to a warning
    assert [r.type for r in bare.rows if r.custom] == ["pulumi-python:dynamic/fullserver:BareMetalFleet"]
    assert "fullserver:index:BareMetalEnvironment" in {r.type for r in bare.rows}


def test_cli_plan_json_includes_the_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(STACKS).parent)
    result = CliRunner().invoke(app, ["plan", "train-p5-cluster", "finetune-gcp-g2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    types = {r["type"] for r in data[0]["resources"]}
    assert "aws:ec2/launchTemplate:LaunchTemplate" in types
    lt = next(r for r in data[0]["resources"] if r["type"].endswith("LaunchTemplate"))
    assert lt["inputs"]["userData"].startswith("<user data")


def test_cli_plan_table_shows_the_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(STACKS).parent)
    result = CliRunner().invoke(app, ["plan", "train-tpu-v5e"])
    assert result.exit_code == 0, result.output
    assert "resources pulumi up creates" in result.stdout and "gcp:tpu:V2Vm" in result.stdout
