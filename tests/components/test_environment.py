"""Environment picks the platform's component; the analyzer accepts every public component."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pulumi.provider.experimental.analyzer import Analyzer

from components.aws.environment import AwsGpuEnvironment
from components.environment import Environment, environment_args
from components.gcp.environment import GcpGpuEnvironment
from components.tpu.environment import TpuVmEnvironment
from tests.components.conftest import Build, Plans

PUBLIC = [Environment, TpuVmEnvironment, AwsGpuEnvironment, GcpGpuEnvironment]


@pytest.mark.parametrize(
    ("stack", "changes", "token", "connect"),
    [
        (
            "train-tpu-v5e",
            {},
            "fullserver:index:TpuVmEnvironment",
            # external IP allowed but no SSH ranges: through IAP (the alpha command tunnels)
            r"gcloud alpha compute tpus tpu-vm ssh train-tpu-v5e-tpu --zone us-central1-a --project mock-project"
            r" --worker=0 --tunnel-through-iap",
        ),
        (
            "train-p5-cluster",
            {},
            "fullserver:index:AwsGpuEnvironment",
            # no SSH ingress: Session Manager to the first node
            r"aws ssm start-session --region us-east-1 --target train-p5-cluster-node-0-id",
        ),
        (
            "finetune-gcp-g2",
            {"spot": False, "capacity": None},  # no balanced set: one VM per node (over it, a regional group, below)
            "fullserver:index:GcpGpuEnvironment",
            # public IP but no SSH ranges: through IAP
            r"gcloud compute ssh finetune-gcp-g2-node-0-[0-9a-f]{6} --zone us-central1-a --project mock-project"
            r" --tunnel-through-iap",
        ),
        (
            "finetune-gcp-g2",
            {},
            "fullserver:index:GcpGpuEnvironment",
            # spot over the balanced set: a regional group's first member, through IAP
            r"gcloud compute ssh \$\(gcloud compute instance-groups managed list-instances (finetune-gcp-g2-spot-[0-9a-f]{6})"
            r" --region us-central1 --project mock-project --limit 1 --format=\"value\(instance\.basename\(\)\)\"\)"
            r" --zone \$\(gcloud compute instance-groups managed list-instances \1 --region us-central1"
            r" --project mock-project --limit 1 --format=\"value\(instance\.scope\(zones\)\.segment\(0\)\)\"\)"
            r" --project mock-project --tunnel-through-iap",
        ),
    ],
)
def test_environment_builds_the_platforms_component(
    plans: Plans, build: Build, stack: str, changes: dict[str, Any], token: str, connect: str
) -> None:
    spec = plans[stack].spec.model_copy(update=changes)
    g = build(lambda: Environment(stack, environment_args(spec)))
    components = [r.type for r in g.rows if not r.custom]
    assert "fullserver:index:Environment" in components and token in components
    assert g.outputs["platform"] == plans[stack].spec.platform.value
    assert re.fullmatch(connect, g.outputs["connect"]), g.outputs["connect"]
    # every child is named after the component (URNs do not carry the parent's name)
    assert [r.name for r in g.rows if not r.name.startswith(stack)] == []


def test_the_component_analyzer_accepts_every_public_component() -> None:
    result = Analyzer("fullserver").analyze(PUBLIC)
    defs = result["component_definitions"]
    assert set(defs) == {"Environment", "TpuVmEnvironment", "AwsGpuEnvironment", "GcpGpuEnvironment"}
    assert {"platform", "tpu", "aws", "gcp"} <= set(defs["Environment"].inputs)
    assert {"efaInterfaces", "dataDisk", "access", "serving"} <= set(defs["AwsGpuEnvironment"].inputs)
    assert {"connect", "privateIps", "launchTemplateId"} <= set(defs["AwsGpuEnvironment"].outputs)
    # the way into each node (fullserver.nodes), from every public component
    for component in ("Environment", "TpuVmEnvironment", "AwsGpuEnvironment", "GcpGpuEnvironment"):
        assert {"nodes", "nodeGroups"} <= set(defs[component].outputs), component
    assert {"runtimeVersion", "acceleratorType", "queued"} <= set(defs["TpuVmEnvironment"].inputs)
    assert {"DataDiskArgs", "AccessArgs", "ServingArgs"} <= set(result["type_definitions"])
