"""The idle agent's stop on Cloud TPU (``fullserver.platforms.tpu_autostop`` ``TPU_STOP``, ``TPU_DELETE``):
the node calls the Cloud TPU API on itself, ``--async`` (the call returns before the VM goes down);
its grant is ``components.gcp.autostop``'s custom role, on the project (Cloud TPU has no per-node
IAM)."""

from __future__ import annotations

import shlex

from fullserver.platforms import tpu_autostop as tpu

_TPU = """#!/bin/sh
# fullserver: __VERB__ this TPU VM (its service account holds a role of just that)
exec gcloud compute tpus tpu-vm __VERB__ __NODE__ --zone __ZONE__ --async --quiet
"""
VERBS = {tpu.TPU_STOP.key: "stop", tpu.TPU_DELETE.key: "delete"}


def tpu_stop_script(way: str, node: str, zone: str) -> str:
    """The stop command of the way, for the node ``node`` in ``zone``."""
    text = _TPU.replace("__VERB__", VERBS[way])
    return text.replace("__NODE__", shlex.quote(node)).replace("__ZONE__", shlex.quote(zone))
