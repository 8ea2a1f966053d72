"""Every VM example stack of a non-serving profile boots the idle agent, and its nodes may stop
their own environment and nothing else (``components.autostop``, ``fullserver.autostop``).

The stacks are built through the whole program (``graph_for_config``, with Pulumi.yaml's declared
defaults: ``autostopMinutes: -1`` is the profile's), so what is checked is what ``pulumi up`` sends.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from components.autostop import AGENT, CONFIG, STOP, UNIT, agent_source
from components.graph import Graph, graph_for_config
from tests.components.test_boot_secrets import boot_texts
from tests.components.test_graph import CLOUD_STACKS
from tests.components.test_program_config import _declared_defaults
from tests.core.test_stack_config import stack_config

AGENT_STACKS = {
    "batch-tpu-v5e": 30,
    "exp-aws-l4-spot": 30,
    "exp-aws-spot": 30,
    "finetune-gcp-a2": 60,
    "finetune-gcp-g2": 60,
    "train-tpu-v5e": 60,
}
"""The VM stacks of experimentation, fine-tuning and batch-inference, with their profile's minutes."""
NO_AGENT = {
    "serve-aws-realtime": "serving: its floor is its minimum replicas",
    "serve-gcp-realtime": "serving: its floor is its minimum replicas",
    "train-p5-cluster": "scale-training: persistent and protected, no autostop",
    "train-tpu-v5p-slice": "scale-training, and fullserver's queued slice carries no startup script",
}


@cache
def graph(stack: str) -> Graph:
    return graph_for_config(stack, {**_declared_defaults(), **stack_config(stack)}, full=True)


def scripts(stack: str) -> list[str]:
    return [t for where, t in boot_texts(graph(stack)).items() if where.endswith(("userData", "startup-script"))]


def _heredoc(script: str, path: str) -> str:
    found = re.search(rf"cat > {re.escape(path)} <<'FULLSERVER_EOF'\n(.*?)FULLSERVER_EOF\n", script, re.S)
    assert found, path
    return found.group(1)


def test_every_vm_example_stack_is_classified() -> None:
    assert sorted([*AGENT_STACKS, *NO_AGENT]) == CLOUD_STACKS


@pytest.mark.parametrize("stack", sorted(AGENT_STACKS))
def test_the_agent_is_installed_as_a_service_with_the_profile_s_minutes(stack: str) -> None:
    found = scripts(stack)
    assert found, stack
    for script in found:
        packed = re.search(
            rf"base64 -d <<'FULLSERVER_EOF' \| gunzip > {re.escape(AGENT)}\n(.*?)FULLSERVER_EOF\n", script, re.S
        )
        assert packed, f"{stack}: the agent is not written"
        assert gzip.decompress(base64.b64decode(packed.group(1))).decode() == agent_source()
        config = json.loads(_heredoc(script, CONFIG))
        assert config["idle_seconds"] == AGENT_STACKS[stack] * 60
        assert config["stop"] == [STOP]
        unit = _heredoc(script, f"/etc/systemd/system/{UNIT}")
        assert f"ExecStart=/usr/bin/python3 {AGENT} {CONFIG}" in unit and "Restart=always" in unit
        assert f"systemctl enable {UNIT}" in script


@pytest.mark.parametrize("stack", sorted(NO_AGENT))
def test_stacks_that_never_stop_boot_no_agent(stack: str) -> None:
    assert all(UNIT not in s for s in scripts(stack)), NO_AGENT[stack]
    assert not [r for r in graph(stack).rows if "autostop" in r.name]


def test_spot_groups_may_only_shrink_their_own_environment_to_zero() -> None:
    g = graph("exp-aws-l4-spot")
    rows = [r for r in g.rows if r.name.endswith("-autostop") and r.type == "aws:iam/rolePolicy:RolePolicy"]
    assert len(rows) == 1
    policy = json.loads(rows[0].inputs["policy"])
    describe, update, unprotect = policy["Statement"]
    assert describe["Action"] == "autoscaling:DescribeAutoScalingGroups"  # takes no resource-level permission
    assert update["Action"] == "autoscaling:UpdateAutoScalingGroup"
    assert update["Condition"] == {
        "StringEquals": {"autoscaling:ResourceTag/fullserver-environment": "exp-aws-l4-spot"},
        "NumericEquals": {"autoscaling:MinSize": 0, "autoscaling:MaxSize": 0},
    }
    # the fallback's protected nodes would keep running at desired 0: their protection goes first
    assert unprotect["Action"] == "autoscaling:SetInstanceProtection"
    assert unprotect["Condition"] == {
        "StringEquals": {"autoscaling:ResourceTag/fullserver-environment": "exp-aws-l4-spot"}
    }
    groups = g.of_type("autoscaling/group:Group")
    assert groups and all(
        {"key": "fullserver-environment", "value": "exp-aws-l4-spot", "propagateAtLaunch": True} in r.inputs["tags"]
        for r in groups
    )
    stop = _heredoc(scripts("exp-aws-l4-spot")[0], STOP)
    assert "--min-size 0 --max-size 0 --desired-capacity 0" in stop
    assert "Name=tag:fullserver-environment,Values=exp-aws-l4-spot" in stop


def test_an_aws_instance_stops_itself_and_keeps_its_volumes() -> None:
    g = graph("exp-aws-spot")
    assert g.one("launchTemplate:LaunchTemplate").inputs["instanceInitiatedShutdownBehavior"] == "stop"
    assert not [r for r in g.rows if r.type == "aws:iam/rolePolicy:RolePolicy" and "autostop" in r.name]
    assert "exec shutdown -h now" in _heredoc(scripts("exp-aws-spot")[0], STOP)


def _on_demand(stack: str, project: Path, **changes: object) -> Graph:
    """A fine-tuning stack on demand (a profile of the project's own) in a zonal reservation: one VM
    per node (``gcp_capacity.mig_reason``), or with ``changes``."""
    (project / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (project / "profiles").mkdir(exist_ok=True)
    (project / "profiles" / "on-demand-tuning.yaml").write_text(
        "extends: fine-tuning\ndescription: fine-tuning on demand\npricing: on-demand\n"
    )
    asked = {"reservation": "ml-reservation", **changes}
    config = {**_declared_defaults(), **stack_config(stack, profile="on-demand-tuning", **asked)}
    return graph_for_config(stack, config, full=True)


def test_on_demand_nodes_with_data_stop_as_vms_and_never_as_a_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a reservation, on-demand nodes with /data that autostop stops are VMs of their own,
    each stopping itself and keeping its data disk (``gcp_capacity.STOPPED_WITH_DATA``); with
    autostop off they are a stateful group keeping /data, and nothing stops it."""
    monkeypatch.chdir(tmp_path)
    g = _on_demand("finetune-gcp-g2", tmp_path, reservation=None, zone=None)
    assert not g.of_type("compute/regionInstanceGroupManager:RegionInstanceGroupManager")
    (vm,) = g.of_type("compute/instance:Instance")
    (disk,) = g.of_type("compute/disk:Disk")
    assert disk.inputs["size"] >= 200 and disk.inputs["zone"] == vm.inputs["zone"]  # the 200 GiB dataset, with room
    assert [d["deviceName"] for d in vm.inputs["attachedDisks"]] == ["data"]
    assert g.one("iAMCustomRole:IAMCustomRole").inputs["permissions"] == [
        "compute.instances.get",
        "compute.instances.stop",
    ]
    (binding,) = g.of_type("compute/instanceIAMMember:InstanceIAMMember")
    assert binding.inputs["zone"] == vm.inputs["zone"] and binding.inputs["instanceName"].startswith(
        "finetune-gcp-g2-node-0"
    )
    assert "gcloud compute instances stop" in _heredoc(_scripts(g)[0], STOP)
    kept = _on_demand("finetune-gcp-g2", tmp_path, reservation=None, zone=None, autostopMinutes=0)
    mig = kept.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager").inputs
    assert mig["statefulDisks"] == [{"deviceName": "data", "deleteRule": "ON_PERMANENT_INSTANCE_DELETION"}]
    assert not kept.of_type("compute/instance:Instance") and not kept.of_type("iAMCustomRole:IAMCustomRole")
    assert all(UNIT not in s for s in _scripts(kept)) and not [r for r in kept.rows if "autostop" in r.name]


def _scripts(g: Graph) -> list[str]:
    return [t for where, t in boot_texts(g).items() if where.endswith(("userData", "startup-script"))]


GROUP_PERMISSIONS = [
    "compute.instanceGroupManagers.get",
    "compute.instanceGroupManagers.update",
    "compute.regionOperations.get",
]


@pytest.mark.parametrize("stack", ["finetune-gcp-g2", "finetune-gcp-a2"])
def test_a_gcp_spot_group_s_members_may_resize_their_own_group_and_nothing_else(stack: str) -> None:
    """A group's member must not stop itself (the group would recreate it): it resizes its group to
    0, under a role of just that, granted on the project under a condition naming that group."""
    g = graph(stack)
    (mig,) = g.of_type("compute/regionInstanceGroupManager:RegionInstanceGroupManager")
    role = g.one("iAMCustomRole:IAMCustomRole").inputs
    assert role["permissions"] == GROUP_PERMISSIONS
    (binding,) = [r for r in g.of_type("projects/iAMMember:IAMMember") if r.name.endswith("-autostop")]
    assert binding.inputs["role"] == f"projects/{role['project']}/roles/{role['roleId']}"
    assert binding.inputs["member"] == f"serviceAccount:fs-{stack}@mock-project.iam.gserviceaccount.com"
    assert binding.inputs["project"] == role["project"] == mig.inputs["project"] == "my-ml-project"
    group = binding.inputs["condition"]["title"].removeprefix("fullserver autostop ")
    assert group.startswith(f"{stack}-spot")  # the group's own name, as the provider made it
    where = f"projects/my-ml-project/regions/{mig.inputs['region']}"
    assert binding.inputs["condition"]["expression"] == (
        f'resource.name == "{where}/instanceGroupManagers/{group}" || resource.name.startsWith("{where}/operations/")'
    )
    assert not g.of_type("compute/instanceIAMMember:InstanceIAMMember")


def test_a_group_s_member_finds_its_group_on_the_metadata_server_and_resizes_it_to_zero() -> None:
    stop = _heredoc(scripts("finetune-gcp-g2")[0], STOP)
    assert "md attributes/created-by" in stop
    assert 'gcloud compute instance-groups managed resize "${group##*/}" --size 0 --region "$region"' in stop
    assert "instances stop" not in stop


def test_a_stopped_gcp_group_is_restored_by_up_with_no_start_command() -> None:
    assert _start(graph("finetune-gcp-g2")) == (True, [])


def test_a_gcp_vm_may_stop_itself_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    g = _on_demand("finetune-gcp-g2", tmp_path)
    role = g.one("iAMCustomRole:IAMCustomRole").inputs
    assert role["permissions"] == ["compute.instances.get", "compute.instances.stop"]
    (vm,) = g.of_type("compute/instance:Instance")
    (binding,) = g.of_type("compute/instanceIAMMember:InstanceIAMMember")
    assert binding.inputs["instanceName"] == vm.inputs.get("name", binding.inputs["instanceName"])
    assert binding.inputs["role"] == f"projects/{role['project']}/roles/{role['roleId']}"
    assert (
        binding.inputs["member"]
        == "serviceAccount:"
        + g.one("serviceaccount/account:Account").inputs["accountId"]
        + "@mock-project.iam.gserviceaccount.com"
    )
    assert binding.inputs["zone"] == vm.inputs["zone"]
    assert "--discard-local-ssd=true --async" in _heredoc(_scripts(g)[0], STOP)  # its local SSD
    a2 = _on_demand("finetune-gcp-a2", tmp_path)
    assert "--discard-local-ssd=false --async" in _heredoc(_scripts(a2)[0], STOP)


def test_a_tpu_vm_may_stop_tpu_nodes_and_do_nothing_else() -> None:
    g = graph("train-tpu-v5e")
    role = g.one("iAMCustomRole:IAMCustomRole").inputs
    assert role["permissions"] == ["tpu.nodes.get", "tpu.nodes.stop", "tpu.operations.get"]
    bindings = [r for r in g.of_type("projects/iAMMember:IAMMember") if r.name.endswith("-autostop")]
    assert [b.inputs["role"] for b in bindings] == [f"projects/{role['project']}/roles/{role['roleId']}"]
    node = g.one("tpu/v2Vm:V2Vm").inputs
    stop = _heredoc(scripts("train-tpu-v5e")[0], STOP)
    assert f"gcloud compute tpus tpu-vm stop {node['name']} --zone {node['zone']} --async --quiet" in stop


def _start(g: Graph) -> tuple[bool, list[list[str]]]:
    """The stack's ``autostop`` output as ``fullserver start`` reads it (``fullserver.autostop.start``)."""
    auto = g.outputs["autostop"]
    return auto["restoredByUp"], auto["startCommands"]


def test_an_aws_instance_is_started_again_by_its_own_start_command() -> None:
    g = graph("exp-aws-spot")
    (instance,) = g.of_type("ec2/instance:Instance")
    assert _start(g) == (
        False,
        [["aws", "ec2", "start-instances", "--instance-ids", f"{instance.name}-id", "--region", "us-east-1"]],
    )


def test_spot_groups_set_to_zero_are_restored_by_up_with_no_start_command() -> None:
    assert _start(graph("exp-aws-l4-spot")) == (True, [])


def test_a_stopped_gcp_vm_is_started_again_by_its_name_zone_and_project() -> None:
    # N1 with an attached T4: single VMs (fullserver.platforms.gcp_capacity.mig_reason), not a spot group
    config = {**_declared_defaults(), **stack_config("finetune-gcp-a2"), "fullserver:accelerator": "T4"}
    g = graph_for_config("finetune-gcp-a2", config, full=True)
    (vm,) = g.of_type("compute/instance:Instance")
    (binding,) = g.of_type("compute/instanceIAMMember:InstanceIAMMember")  # the VM's own name, resolved
    assert _start(g) == (
        False,
        [
            [
                "gcloud",
                "compute",
                "instances",
                "start",
                binding.inputs["instanceName"],
                "--zone",
                vm.inputs["zone"],
                "--project",
                vm.inputs["project"],
            ]
        ],
    )
    assert binding.inputs["instanceName"].startswith("finetune-gcp-a2-node-0")


@pytest.mark.parametrize("stack", ["train-tpu-v5e", "batch-tpu-v5e"])
def test_a_stopped_single_host_tpu_is_started_again_by_gcloud(stack: str) -> None:
    node = graph(stack).one("tpu/v2Vm:V2Vm").inputs
    assert _start(graph(stack)) == (
        False,
        [
            [
                "gcloud",
                "compute",
                "tpus",
                "tpu-vm",
                "start",
                node["name"],
                "--zone",
                node["zone"],
                "--project",
                "my-ml-project",
            ]
        ],
    )


@pytest.mark.parametrize("stack", sorted(AGENT_STACKS))
def test_the_autostop_output_counts_the_nodes_the_provider_read_running(stack: str) -> None:
    auto = graph(stack).outputs["autostop"]
    assert (auto["runningNodes"], auto["stoppedNow"]) == (1, False)


@pytest.mark.parametrize(
    ("stack", "kind", "read"),
    [
        ("finetune-gcp-g2", ":RegionInstanceGroupManager", {"targetSize": 0}),  # the member resized it to 0
        ("exp-aws-l4-spot", "autoscaling/group:Group", {"desiredCapacity": 0}),  # both groups at 0
        ("exp-aws-spot", "ec2/instance:Instance", {"instanceState": "stopped"}),
        ("train-tpu-v5e", "tpu/v2Vm:V2Vm", {"state": "STOPPED"}),
    ],
)
def test_the_autostop_output_says_stopped_when_the_provider_reads_the_nodes_stopped(
    stack: str, kind: str, read: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``pulumi up --refresh`` (or ``refresh --run-program``) hands the program after a stop."""
    from components.graph import GraphMocks

    computed = GraphMocks._computed

    def stopped(self: GraphMocks, typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        return {**computed(self, typ, name, inputs), **(read if typ.endswith(kind) else {})}

    monkeypatch.setattr(GraphMocks, "_computed", stopped)
    auto = graph_for_config(stack, {**_declared_defaults(), **stack_config(stack)}, full=True).outputs["autostop"]
    assert (auto["runningNodes"], auto["stoppedNow"]) == (0, True)
