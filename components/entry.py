"""What the rest of ``components`` asks a platform: its ``PlatformEntry``.

Each platform's package defines its entry with this (``components.registry`` finds it by the
package its ``PlatformRules.components`` names); kept apart from the registry, which imports the
packages, so that no package imports back what imports it (``tests/project/test_import_cycles.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi

from fullserver.platform import Platform

if TYPE_CHECKING:
    from components.outputs import EnvironmentComponent
    from fullserver.catalog import Catalog
    from fullserver.plan import StackPlan
    from fullserver.spec import EnvironmentSpec


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
