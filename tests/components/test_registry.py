"""The registry: every platform has one package and one entry, and nothing else in ``components``
asks which platform it is looking at."""

from __future__ import annotations

import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from components import graph, registry
from components.environment import EnvironmentArgs
from components.outputs import OUTPUTS, EnvironmentComponent
from fullserver.platform import Platform
from fullserver.platforms import all_rules, rules_for

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = ROOT / "components"
PLATFORM_PACKAGES = {COMPONENTS / p.rsplit(".", 1)[-1] for p in registry.PACKAGES.values()}


def test_every_platform_has_a_package_and_an_entry_of_its_own() -> None:
    assert set(registry.PACKAGES) == set(Platform)
    keys = set(typing.get_type_hints(EnvironmentArgs)) - {"platform"}
    for platform in Platform:
        entry = registry.entry(platform)
        assert entry.platform is platform
        assert entry.args_key in keys
        cls = entry.component_class()
        assert issubclass(cls, EnvironmentComponent), f"{cls.__name__} does not share the outputs contract"
    assert sorted(registry.entry(p).args_key for p in Platform) == sorted(keys)


def test_the_outputs_contract_is_declared_once() -> None:
    declared = {k for k in EnvironmentComponent.__annotations__ if not k.startswith("_")}
    assert declared == set(OUTPUTS)
    for platform in Platform:
        own = set(vars(registry.entry(platform).component_class()).get("__annotations__", {}))
        assert not own & declared, f"{platform.value} declares contract outputs again: {sorted(own & declared)}"


def _outside_platform_packages() -> list[Path]:
    return [p for p in COMPONENTS.rglob("*.py") if not any(pkg in p.parents for pkg in PLATFORM_PACKAGES)]


@pytest.mark.parametrize(
    "pattern",
    [
        r'== "(aws|gcp|bare-metal|tpu-vm|aws-gpu|gcp-gpu)"',
        r"\bis Platform\.",
        r"\bprovider ==",
        r"\.provider == ",
        r"^\s*(from|import) fullserver\.platforms\.(aws|gcp|tpu|bare_metal)\b",
        r"^\s*from fullserver\.platforms import .*\b(aws|gcp|tpu|bare_metal)\b",
    ],
)
def test_nothing_outside_a_platforms_package_asks_about_the_platform(pattern: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _outside_platform_packages()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(pattern, line)
    ]
    assert found == []


@pytest.mark.parametrize(
    ("platform", "loaded", "not_loaded"),
    [
        (Platform.AWS_GPU, "pulumi_aws", "pulumi_gcp"),
        (Platform.GCP_GPU, "pulumi_gcp", "pulumi_aws"),
        (Platform.TPU_VM, "pulumi_gcp", "pulumi_aws"),
    ],
)
def test_a_platform_loads_only_its_own_sdk(platform: Platform, loaded: str, not_loaded: str) -> None:
    """Asking the registry loads no SDK; building the component loads its cloud's only."""
    code = (
        "import sys\n"
        "from components import registry\n"
        "from fullserver.platform import Platform\n"
        f"entry = registry.entry(Platform({platform.value!r}))\n"
        "assert 'pulumi_aws' not in sys.modules and 'pulumi_gcp' not in sys.modules, 'the entry loaded an SDK'\n"
        "entry.component_class()\n"
        f"assert {loaded!r} in sys.modules and {not_loaded!r} not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_an_unknown_platform_is_refused_by_name() -> None:
    from components.args import SpecRefused
    from components.environment import Environment
    from components.graph import evaluate

    with pytest.raises(SpecRefused, match="no args for platform 'mainframe'"):
        evaluate(lambda: Environment("x", {"platform": "mainframe"}), "unknown-platform")


# ``serialize_provider`` of each provider as the code before the per-platform packages wrote it
# (commit 5beba3b): what the ``__provider`` input of an existing stack's state holds.
OLD_PICKLES = {
    "components.tpu_vm": "gASVNgAAAAAAAACMEWNvbXBvbmVudHMudHB1X3ZtlIwZVHB1UXVldWVkUmVzb3VyY2VQcm92aWRlcpSTlCmBlC4=",
    "components.bare_metal": "gASVMgAAAAAAAACMFWNvbXBvbmVudHMuYmFyZV9tZXRhbJSMEUJhcmVNZXRhbFByb3ZpZGVylJOUKYGULg==",
}


def test_providers_pickled_before_the_packages_still_unpickle() -> None:
    """State written before the per-platform packages holds dynamic providers pickled by
    reference to their old modules; ``pulumi destroy`` and ``refresh`` unpickle those."""
    import base64

    import dill

    from components.bare_metal.provider import BareMetalProvider
    from components.tpu.queued import TpuQueuedResourceProvider

    assert isinstance(dill.loads(base64.b64decode(OLD_PICKLES["components.tpu_vm"])), TpuQueuedResourceProvider)
    assert isinstance(dill.loads(base64.b64decode(OLD_PICKLES["components.bare_metal"])), BareMetalProvider)


def test_the_bare_metal_python_api_keeps_its_documented_path() -> None:
    """docs/bare-metal.md: ``components.bare_metal.BareMetalEnvironment(name, hosts=..., ...)``."""
    import components.bare_metal
    from components.bare_metal.environment import BareMetalEnvironment

    assert components.bare_metal.BareMetalEnvironment is BareMetalEnvironment


def test_the_graph_stands_in_a_project_only_where_the_plan_demands_one() -> None:
    """The offline graph's "mock-project" stands for the project the plan has checked is named
    (``fullserver.stacks.cloud_project``); a platform whose graph got a stand-in without that check
    planned a stack ``pulumi up`` then refused."""
    keys = {r.project.key for r in all_rules() if r.project is not None}
    assert keys == {"gcp:project"}
    for platform in Platform:
        project = rules_for(platform).project
        stand_ins = set(graph.mock_config(platform)) & keys
        assert stand_ins == ({project.key} if project is not None else set()), platform
