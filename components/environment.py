"""``Environment``: the one component stacks use; it builds the platform's component from the spec.

The args name the platform and carry that platform's args (mutually exclusive fields rather than
a ``Union``, which the component analyzer rejects). Which component builds a platform, and from
which field, is the platform's entry in ``components.registry``; each platform's component (and
its provider SDK) is imported only when a stack uses it.
"""

from typing import Any, NotRequired, Optional, TypedDict, cast

import pulumi

from components import registry
from components.args import refuse
from components.aws.args import AwsGpuArgs
from components.eks.args import EksArgs
from components.gcp.args import GcpGpuArgs
from components.gke.args import GkeArgs
from components.outputs import OUTPUTS, EnvironmentComponent
from components.tpu.args import TpuVmArgs
from fullserver.catalog import Catalog
from fullserver.platform import Platform
from fullserver.spec import EnvironmentSpec

TOKEN = "fullserver:index:Environment"


class EnvironmentArgs(TypedDict):
    """Exactly one of ``tpu``, ``aws``, ``gcp``, ``bare_metal``, ``gke_gpu``, ``gke_tpu`` and
    ``eks_gpu``, matching ``platform``.

    Why one field per platform, written out here (the one registration a platform adds in
    ``components`` besides its own package), rather than one field typed by the registry:

    * the component analyzer refuses a ``Union`` (pulumi 3.272.0,
      ``pulumi/provider/experimental/analyzer.py``, ``Analyzer.analyze_property``: "Union types
      are not supported"), so the platforms' args cannot share a field;
    * a ``TypedDict`` built from the registry at import time (the functional form) would give the
      analyzer its annotations, but it reads each field's description from the class's source
      (``Analyzer.get_docstring`` parses ``inspect.getsource``) and mypy cannot check a
      ``TypedDict`` made at run time, so the schema would lose its docs and the program its types.

    ``tests/components/test_registry.py`` holds these fields to the registry: each platform's
    ``PlatformEntry.args_key`` is one of them, and there is no other."""

    platform: str
    tpu: NotRequired[TpuVmArgs]
    aws: NotRequired[AwsGpuArgs]
    gcp: NotRequired[GcpGpuArgs]
    bare_metal: NotRequired[dict[str, Any]]
    """Args of ``components.bare_metal.BareMetalEnvironment`` (its own contract)."""
    gke_gpu: NotRequired[GkeArgs]
    gke_tpu: NotRequired[GkeArgs]
    eks_gpu: NotRequired[EksArgs]


def environment_args(
    spec: EnvironmentSpec, catalog: Catalog | None = None, project: pulumi.Input[str] | None = None
) -> EnvironmentArgs:
    """The Environment's args for a spec: the platform and that platform's args, under the key its
    registry entry names."""
    entry = registry.entry(spec.platform)
    args: dict[str, Any] = {"platform": spec.platform.value, entry.args_key: entry.args(spec, catalog, project)}
    return cast(EnvironmentArgs, args)


def _entry(platform: str) -> registry.PlatformEntry:
    try:
        return registry.entry(Platform(platform))
    except ValueError:
        raise refuse(
            "platform", f"no args for platform '{platform}'", "pass exactly the args of the platform named"
        ) from None


class Environment(EnvironmentComponent):
    """A balanced environment on the spec's platform."""

    platform: pulumi.Output[str]

    def __init__(self, name: str, args: EnvironmentArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TOKEN, name, {}, opts)
        platform = args["platform"]
        entry = _entry(platform)
        own: Any = args.get(entry.args_key, entry.default_args)
        if own is None:
            raise refuse(
                "platform", f"no args for platform '{platform}'", "pass exactly the args of the platform named"
            )
        self.inner = entry.build(name, own, pulumi.ResourceOptions(parent=self))
        self.platform = pulumi.Output.from_input(platform)
        for output in OUTPUTS:
            setattr(self, output, getattr(self.inner, output))
        self.register({"platform": self.platform})
