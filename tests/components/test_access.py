"""Every component refuses SSH sources the core would refuse, by the core's own rule.

Components are served to other languages, where the core's validation of the stack config is not
in the path, so ``components.args.check_access`` calls ``fullserver.netcheck.check_ssh_ranges``
itself. The spec here is edited without validation, as args written by hand would be.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from components.args import SpecRefused
from components.aws.args import aws_args
from components.aws.environment import AwsGpuEnvironment
from components.gcp.args import gcp_args
from components.gcp.environment import GcpGpuEnvironment
from components.tpu.args import tpu_args
from components.tpu.environment import TpuVmEnvironment
from fullserver.netcheck import check_ssh_ranges
from fullserver.spec import EnvironmentSpec
from tests.components.conftest import Plans

BUILDERS: dict[str, tuple[str, Callable[[EnvironmentSpec], Any]]] = {
    "aws-gpu": ("exp-aws-spot", lambda spec: AwsGpuEnvironment("bad", aws_args(spec))),
    "gcp-gpu": ("finetune-gcp-g2", lambda spec: GcpGpuEnvironment("bad", gcp_args(spec))),
    "tpu-vm": ("train-tpu-v5e", lambda spec: TpuVmEnvironment("bad", tpu_args(spec))),
}
WIDE = {
    "split-internet": ["0.0.0.0/1", "128.0.0.0/1"],
    "two-8": ["12.0.0.0/8", "11.0.0.0/8"],
    "host-bits": ["203.0.113.7/24"],
}


@pytest.mark.parametrize("ranges", WIDE.values(), ids=WIDE.keys())
@pytest.mark.parametrize("platform", BUILDERS)
def test_refuses_what_the_core_refuses(plans: Plans, platform: str, ranges: list[str]) -> None:
    stack, build = BUILDERS[platform]
    spec = plans[stack].spec
    spec = spec.model_copy(update={"network": spec.network.model_copy(update={"ssh_source_ranges": ranges})})
    with pytest.raises(ValueError) as core:
        check_ssh_ranges(ranges)
    with pytest.raises(SpecRefused, match=re.escape(f"spec.network.ssh_source_ranges: {core.value}")):
        build(spec)
