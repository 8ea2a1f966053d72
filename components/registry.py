"""Platform -> its component package, as each platform's ``PlatformRules.components`` names it.

Like pulumi-eks's one map from type name to factory: a platform's package
(``components/<platform>/``) defines ``ENTRY`` in its ``__init__`` (or ``ENTRIES``, by platform,
for a package serving several: ``components.gke``): everything the program, the graph and
verify need to know about the platform. Callers ask the entry; nothing outside a platform's
package compares platform names.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi

from components.args import refuse
from fullserver.platform import Platform
from fullserver.platforms import all_rules

if TYPE_CHECKING:
    from components.outputs import EnvironmentComponent
    from fullserver.catalog import Catalog
    from fullserver.nodes import NodeAccess
    from fullserver.plan import StackPlan
    from fullserver.spec import EnvironmentSpec

PACKAGES: dict[Platform, str] = {r.platform: r.components for r in all_rules()}
"""Each platform's component package (it defines ``ENTRY``), as its ``PlatformRules.components``
names it: the registry adds no line of its own for a new platform."""


def _no_provider(_plan: StackPlan, _project: str | None) -> pulumi.ProviderResource | None:
    return None


def _no_project() -> str | None:
    return None


def _no_exports(_spec: EnvironmentSpec, _inner: pulumi.ComponentResource) -> dict[str, Any]:
    return {}


def _no_region(_plan: StackPlan) -> str | None:
    return None


@dataclass(frozen=True)
class PlatformEntry:
    """What the rest of ``components`` asks a platform (each field: who asks, and what for)."""

    platform: Platform
    component: str
    """The component class as ``module:Class``, imported when an environment is built."""
    args_key: str
    """The ``EnvironmentArgs`` field that carries this platform's args."""
    args: Callable[[EnvironmentSpec, Catalog | None, pulumi.Input[str] | None], Any]
    """Builds the component's args from a spec (spec, catalog, cloud project)."""
    keyword_args: bool = False
    """The component takes its args as keywords (bare metal) rather than one ``args`` TypedDict."""
    served: str | None = None
    """The class other languages get (``module:Class``) where the component cannot be served
    itself (keyword args); ``None``: the component."""
    default_args: dict[str, Any] | None = None
    """Args when ``EnvironmentArgs`` carries none for the platform; ``None``: refuse."""
    provider: Callable[[StackPlan, str | None], pulumi.ProviderResource | None] = _no_provider
    """The program's explicit provider for a plan (and the cloud project), or none."""
    project: Callable[[], str | None] = _no_project
    """The cloud project the stack's config names (``gcp:project``), for args and commands."""
    secret_command: Callable[[EnvironmentSpec, str, str | None], list[str]] | None = None
    """The command that prints a serving secret (spec, secret, project): the ``call`` export's."""
    identity_exports: Mapping[str, str] = field(default_factory=dict)
    """Stack export -> ``Environment`` output naming who the nodes are (to grant them data)."""
    exports: Callable[[EnvironmentSpec, pulumi.ComponentResource], dict[str, Any]] = _no_exports
    """Further stack exports of this platform (spec, the platform's component)."""
    host_keys_parser: Callable[[str, NodeAccess], list[str]] | None = None
    """Reads what a node's ``hostKeysCommand`` printed (``components.node_verify``)."""
    mock_config: Mapping[str, Any] = field(default_factory=dict)
    """Config the offline graph adds (``components.graph``): what ``pulumi up`` would have."""
    mock_region: Callable[[StackPlan], str | None] = _no_region
    """The region the offline graph answers region-less invokes in."""
    graph_failure_warns: bool = False
    """A graph that cannot be evaluated becomes a warning of ``fullserver plan`` (bare metal)."""

    def component_class(self) -> type[EnvironmentComponent]:
        module, _, name = self.component.partition(":")
        cls: type[EnvironmentComponent] = getattr(importlib.import_module(module), name)
        return cls

    def served_class(self) -> type[pulumi.ComponentResource]:
        """What ``components.__main__`` serves for this platform."""
        if self.served is None:
            return self.component_class()
        module, _, name = self.served.partition(":")
        cls: type[pulumi.ComponentResource] = getattr(importlib.import_module(module), name)
        return cls

    def build(self, name: str, args: Any, opts: pulumi.ResourceOptions) -> EnvironmentComponent:
        """The platform's component for ``args`` (this platform's part of ``EnvironmentArgs``)."""
        cls: Any = self.component_class()
        if self.keyword_args:
            built: EnvironmentComponent = cls(name, opts=opts, **args)
        else:
            built = cls(name, args, opts)
        return built


def entry(platform: Platform) -> PlatformEntry:
    """The platform's entry, importing its package on first use."""
    path = PACKAGES[platform]
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name != path:
            raise
        raise refuse(
            "platform",
            f"{platform.value} environments are not available in this build ({path.replace('.', '/')} is missing)",
            "plan another platform, or update fullserver",
        ) from None
    entries: dict[Platform, PlatformEntry] | None = getattr(module, "ENTRIES", None)  # a package of several
    found: PlatformEntry = entries[platform] if entries is not None else module.ENTRY
    return found


def entries() -> list[PlatformEntry]:
    """Every platform's entry (imports every package: for the component provider host)."""
    return [entry(p) for p in PACKAGES]
