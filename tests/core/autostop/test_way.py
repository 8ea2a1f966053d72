"""How many nodes the stack's outputs say run (``fullserver.autostop.way.running_nodes``)."""

from __future__ import annotations

from fullserver.autostop.way import running_nodes
from fullserver.platforms import aws_autostop, gcp_autostop, tpu_autostop


def test_a_node_counts_as_running_unless_its_platform_s_state_says_stopped() -> None:
    assert running_nodes(["RUNNING", "TERMINATED", "STAGING"], gcp_autostop.STOPPED_STATES) == 2
    assert running_nodes(["stopped", "stopping"], aws_autostop.STOPPED_STATES) == 0
    assert running_nodes(["STOPPED"], tpu_autostop.STOPPED_STATES) == 0


def test_a_state_not_read_counts_as_running_never_as_stopped() -> None:
    assert running_nodes([None], gcp_autostop.STOPPED_STATES) == 1


def test_groups_count_their_target_size() -> None:
    assert running_nodes([], frozenset(), [2, 0, None]) == 2
