"""The program and a stack with ``fullserver:location``: refused until pinned, then exactly the
environment a hand-written stack of the same region and platform builds."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.graph import Graph, GraphError, graph_for_config
from fullserver.pinning import pin_stack
from fullserver.plan import plan_paths

UNPINNED = """\
# Four T4s for experiments, wherever they are cheapest in the US.
config:
  fullserver:profile: experimentation
  fullserver:location:
  - us
  fullserver:owner: ml-team
  fullserver:accelerator: T4
  fullserver:acceleratorCount: 4
  fullserver:datasetGib: 200
  fullserver:datasetLocation: s3://team-data/imagenet@us-east-1
  gcp:project: example-project
"""

BY_HAND = """\
config:
  fullserver:profile: experimentation
  fullserver:platform: gcp-gpu
  fullserver:region: us-central1
  fullserver:owner: ml-team
  fullserver:accelerator: T4
  fullserver:acceleratorCount: 4
  fullserver:datasetGib: 200
  fullserver:datasetLocation: s3://team-data/imagenet@us-east-1
  gcp:project: example-project
"""


def _config(text: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(text)["config"]
    return config


def _document(graph: Graph) -> str:
    """Everything the graph holds that pulumi up would act on, as bytes to compare."""
    rows = [r.as_json() for r in graph.rows]
    providers = {f"{t} {n}": p for (t, n), p in graph.providers.items()}
    body = {"rows": rows, "outputs": graph.outputs, "providers": providers, "warnings": graph.warnings}
    return json.dumps(body, sort_keys=True, default=str)


def test_the_program_refuses_an_unpinned_location_in_one_line_naming_the_command() -> None:
    with pytest.raises(GraphError) as info:
        graph_for_config("t4-us", _config(UNPINNED))
    line = str(info.value)
    assert line.endswith(
        "stacks/Pulumi.t4-us.yaml: fullserver:location: is not pinned: the plan would choose gcp-gpu in "
        "us-central1, and up never chooses a place (run `fullserver plan --pin t4-us` and commit the stack file)"
    ), line
    assert "\n" not in line


def test_a_pinned_stacks_graph_is_byte_identical_to_the_hand_written_ones(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.t4-us.yaml"
    path.write_text(UNPINNED, encoding="utf-8")
    (plan,) = plan_paths([path])
    assert plan.placement is not None
    assert pin_stack(path, plan.placement, dt.date(2026, 12, 2))
    pinned = graph_for_config("t4-us", _config(path.read_text(encoding="utf-8")))
    by_hand = graph_for_config("t4-us", _config(BY_HAND))
    assert pinned.rows, "the pinned stack builds"
    assert _document(pinned) == _document(by_hand)
