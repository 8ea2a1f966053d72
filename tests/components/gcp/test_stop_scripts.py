"""The Compute Engine stop scripts the idle agent runs (``components.gcp.autostop``), run by
``/bin/sh`` as the agent runs them, against a stand-in ``curl`` that answers as the metadata server
does and a stand-in ``gcloud`` that records its argv: what reaches the cloud is what is checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.gcp.autostop import stop_script
from fullserver.platforms import gcp_autostop as gce

GROUP = "projects/123456789012/regions/us-central1/instanceGroupManagers/finetune-gcp-g2-spot-5f1a2b"
CURL = """#!{python}
# stand-in metadata server: `curl -fsS -H 'Metadata-Flavor: Google' URL`, answered from a JSON map
import json, sys
if "Metadata-Flavor: Google" not in sys.argv:
    sys.exit(22)
key = sys.argv[-1].split("/computeMetadata/v1/instance/", 1)[1]
answers = json.load(open({answers!r}))
if key not in answers:
    sys.stderr.write("curl: (22) The requested URL returned error: 404\\n")
    sys.exit(22)
sys.stdout.write(answers[key])
"""
GCLOUD = """#!{python}
import json, sys
with open({log!r}, "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
"""


class Node:
    """A node's PATH with the stand-ins first, its metadata, and the gcloud calls it made."""

    def __init__(self, tmp: Path, metadata: dict[str, str]) -> None:
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.log = tmp / "gcloud.jsonl"
        answers = tmp / "metadata.json"
        answers.write_text(json.dumps(metadata))
        (self.bin / "curl").write_text(CURL.format(python=sys.executable, answers=str(answers)))
        (self.bin / "gcloud").write_text(GCLOUD.format(python=sys.executable, log=str(self.log)))
        for exe in self.bin.iterdir():
            exe.chmod(0o755)
        self.script = tmp / "fullserver-autostop-stop"

    def run(self, script: str) -> subprocess.CompletedProcess[str]:
        self.script.write_text(script)
        self.script.chmod(0o755)
        env = {**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}"}
        return subprocess.run([str(self.script)], env=env, capture_output=True, text=True, timeout=30)

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


def test_a_group_s_member_resizes_the_group_that_created_it_to_zero(tmp_path: Path) -> None:
    node = Node(tmp_path, {"attributes/created-by": GROUP, "name": "finetune-gcp-g2-x1z9"})
    done = node.run(stop_script(gce.GROUP_TO_ZERO.key, local_ssds=1))
    assert done.returncode == 0, done.stderr
    assert node.calls() == [
        [
            "compute",
            "instance-groups",
            "managed",
            "resize",
            "finetune-gcp-g2-spot-5f1a2b",
            "--size",
            "0",
            "--region",
            "us-central1",
            "--quiet",
        ]
    ]


@pytest.mark.parametrize(
    "created_by",
    [
        None,  # a VM no group made: the metadata server has no created-by
        "projects/123456789012/zones/us-central1-a/instanceGroupManagers/other",  # a zonal group
    ],
)
def test_a_node_outside_a_regional_group_resizes_nothing_and_says_why(tmp_path: Path, created_by: str | None) -> None:
    node = Node(tmp_path, {"attributes/created-by": created_by} if created_by else {})
    done = node.run(stop_script(gce.GROUP_TO_ZERO.key, local_ssds=0))
    assert done.returncode != 0
    assert node.calls() == []
    if created_by:
        assert "not a member of a regional managed instance group" in done.stderr


def test_a_single_vm_stops_itself_by_its_own_name_and_zone(tmp_path: Path) -> None:
    node = Node(tmp_path, {"name": "ft-node-0", "zone": "projects/123456789012/zones/us-central1-a"})
    done = node.run(stop_script(gce.INSTANCE_STOP.key, local_ssds=1))
    assert done.returncode == 0, done.stderr
    assert node.calls() == [
        [
            "compute",
            "instances",
            "stop",
            "ft-node-0",
            "--zone",
            "us-central1-a",
            "--discard-local-ssd=true",
            "--async",
            "--quiet",
        ]
    ]


def test_a_way_compute_engine_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="no Compute Engine stop for autostop way 'tpu-stop'"):
        stop_script("tpu-stop", local_ssds=0)
