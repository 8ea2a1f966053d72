"""The offline graph's contract with the Pulumi SDK: the versions it was written against and the
SDK internals it calls. An upgrade that moves one fails here, naming it, before `plan` breaks."""

from __future__ import annotations

import inspect
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from components import graph
from components.graph import GraphMocks, evaluate
from fullserver.clouds.aws import zone_ids as aws_zone_ids

ROOT = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text()
    return dict(re.findall(r'"(pulumi(?:-aws|-gcp)?)~=([0-9.]+)"', text))


def test_the_installed_sdks_are_the_pinned_ones() -> None:
    pins = _pins()
    assert set(pins) == {"pulumi", "pulumi-aws", "pulumi-gcp"}
    for package, pinned in pins.items():
        major_minor = ".".join(pinned.split(".")[:2])
        assert version(package).startswith(major_minor + "."), f"{package} {version(package)} is not ~={pinned}"


@pytest.mark.parametrize(
    ("function", "parameters"),
    [
        ("set_mocks", ["mocks", "project", "stack", "preview", "logger"]),
        ("set_all_config", ["config"]),
        ("run_pulumi_func", ["func"]),
        ("_sync_await", ["awaitable"]),
        ("_get_stack_trace", []),
    ],
)
def test_the_sdk_internals_the_graph_calls_keep_their_shape(function: str, parameters: list[str]) -> None:
    fn = next(f for f in graph.SDK_INTERNALS if f.__name__ == function)
    names = list(inspect.signature(fn).parameters)
    assert names[: len(parameters)] == parameters or set(parameters) <= set(names), names


def test_zones_answer_for_the_region_asked_not_always_us_east_1() -> None:
    assert aws_zone_ids("us-east-1") == ["use1-az1", "use1-az2", "use1-az3"]
    assert aws_zone_ids("eu-central-1")[0] == "euc1-az1"
    assert aws_zone_ids("ap-northeast-1")[0] == "apne1-az1"
    assert aws_zone_ids("us-west-2")[0] == "usw2-az1"


def test_an_aws_invoke_in_a_stack_of_another_region_gets_that_regions_zones() -> None:
    import pulumi_aws as aws

    seen: list[list[str]] = []

    def program() -> None:
        aws.get_availability_zones_output(state="available").names.apply(seen.append)

    evaluate(program, "zones", {"aws:region": "eu-central-1"})
    assert seen == [["eu-central-1a", "eu-central-1b", "eu-central-1c"]]


def test_an_explicit_provider_region_wins() -> None:
    import pulumi
    import pulumi_aws as aws

    seen: list[list[str]] = []

    def program() -> None:
        provider = aws.Provider("west", region="us-west-2")
        aws.get_availability_zones_output(opts=pulumi.InvokeOutputOptions(provider=provider)).zone_ids.apply(
            seen.append
        )

    evaluate(program, "zones", {"aws:region": "eu-central-1"})
    assert seen == [aws_zone_ids("us-west-2")]
    assert isinstance(GraphMocks().aws_region, str)


def test_the_stack_trace_the_graph_skips_is_the_one_the_sdk_sends_with_each_registration() -> None:
    """The graph replaces ``_get_stack_trace`` while a program runs (it is only for the engine's
    messages); if the SDK stopped calling it by that name, the replacement would silently do
    nothing, so the call sites are pinned too."""
    import pulumi.runtime.resource as sdk_resource

    source = inspect.getsource(sdk_resource.register_resource)
    assert "_get_stack_trace()" in source
    assert isinstance(sdk_resource._get_stack_trace(), type(graph._NO_STACK_TRACE))


def test_an_evaluation_leaves_the_process_as_it_found_it() -> None:
    """Collection back on, the SDK's own stack trace back, and the loop's executor its own: the
    caller's runtime (a test session's mocks) keeps the real ones."""
    import asyncio
    import gc

    import pulumi.runtime.resource as sdk_resource
    import pulumi_aws as aws

    trace = sdk_resource._get_stack_trace
    executors: list[object] = []

    def program() -> None:
        executors.append(getattr(asyncio.get_running_loop(), "_default_executor", None))
        aws.get_availability_zones_output(state="available")

    evaluate(program, "restore", {"aws:region": "us-east-1"})
    loop = asyncio.get_event_loop_policy().get_event_loop()
    assert isinstance(executors[0], graph._Inline)
    assert getattr(loop, "_default_executor", None) is not executors[0]
    assert sdk_resource._get_stack_trace is trace
    assert gc.isenabled()


def test_the_inline_executor_hands_a_failure_to_the_awaiting_call() -> None:
    future = graph._Inline().submit(int, "not a number")
    with pytest.raises(ValueError, match="invalid literal"):
        future.result()
    assert graph._Inline().submit(int, "7").result() == 7
