"""The idle agent on a test-bed sshd host, stopping as a GCP spot group's member does: with the
real stop script of ``components.gcp.autostop`` (not a stand-in), which asks a stand-in metadata
server (``curl``) for the group that created the node and resizes it to 0 through a stand-in
``gcloud`` that records its argv. The agent itself is the one ``test_autostop_agent`` runs."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator

import pytest

from components.gcp.autostop import stop_script
from fullserver.platforms import gcp_autostop as gce
from tests.baremetal.test_autostop_agent import IDLE_SECONDS, Agent
from tests.baremetal.testbed import SshdHost

GROUP = "projects/123456789012/regions/europe-west4/instanceGroupManagers/finetune-gcp-a2-spot-9c0d"
CURL = """#!/bin/sh
# stand-in metadata server: only the created-by attribute, only with the Metadata-Flavor header
case "$*" in
  *"Metadata-Flavor: Google"*/computeMetadata/v1/instance/attributes/created-by) echo '{group}' ;;
  *) exit 22 ;;
esac
"""
GCLOUD = """#!{python}
# stand-in gcloud: records its argv and the time (the agent's stop is this call)
import json, os, sys, time
here = os.path.dirname(os.path.abspath(sys.argv[0]))
with open(os.path.join(here, "..", "gcloud.jsonl"), "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
with open(os.path.join(here, "..", "stops.log"), "a") as fh:
    fh.write(f"{{time.time()}}\\n")
"""


@pytest.fixture
def member(host: SshdHost) -> Iterator[Agent]:
    agent = Agent(host)
    host.stand_in("fullserver-stop", stop_script(gce.GROUP_TO_ZERO.key, local_ssds=0))
    host.stand_in("curl", CURL.format(group=GROUP))
    host.stand_in("gcloud", GCLOUD.format(python=sys.executable))
    try:
        yield agent
    finally:
        agent.close()


def test_an_idle_group_member_resizes_its_own_group_to_zero_once(member: Agent) -> None:
    member.start()
    member.wait_for_stop(within=IDLE_SECONDS + 10)
    calls = [json.loads(line) for line in (member.dir / "gcloud.jsonl").read_text().splitlines()]
    assert calls == [
        [
            "compute",
            "instance-groups",
            "managed",
            "resize",
            "finetune-gcp-a2-spot-9c0d",
            "--size",
            "0",
            "--region",
            "europe-west4",
            "--quiet",
        ]
    ]
    deadline = time.monotonic() + 5
    while "stop requested" not in member.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "stop requested" in member.log()  # the script exited 0: the agent counts it as done
    time.sleep(1.0)
    assert len(member.stops()) == 1


def test_a_busy_gpu_keeps_the_group_at_its_size(member: Agent) -> None:
    member.gpus("64, 20000\n")
    member.start()
    time.sleep(IDLE_SECONDS + 3)
    assert not (member.dir / "gcloud.jsonl").exists()
