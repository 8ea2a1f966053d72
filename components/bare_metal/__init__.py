"""Dedicated servers over SSH (``BareMetalEnvironment``) and their registry entry.

The component takes keyword arguments (``components.bare_metal.adapter`` adapts it for other languages);
the graph of a bare-metal stack that cannot be evaluated is a warning of ``fullserver plan``,
not a failure of every other stack's plan.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from components.entry import PlatformEntry
from fullserver.platform import Platform

if TYPE_CHECKING:
    from fullserver.spec import EnvironmentSpec


def _args(spec: EnvironmentSpec, _catalog: Any, _project: Any) -> Any:
    from components.bare_metal.environment import bare_metal_args

    return bare_metal_args(spec)


_LAZY = {
    "BareMetalEnvironment": "components.bare_metal.environment",
    "BareMetalProvider": "components.bare_metal.provider",
}


def __getattr__(name: str) -> Any:
    """Names that resolve here, lazily (asking the registry about bare metal imports no provider):

    * ``BareMetalEnvironment``: the Python API programs use (docs/bare-metal.md);
    * ``BareMetalProvider``: where stacks deployed before this package find their fleet's
      provider. A dynamic resource's state holds its provider pickled *by reference*, and
      ``pulumi destroy`` and ``pulumi refresh`` unpickle the stored one; every ``pulumi up``
      stores ``components.bare_metal.provider``, so this one can go once every bare-metal stack
      has been updated.
    """
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ENTRY = PlatformEntry(
    platform=Platform.BARE_METAL,
    component="components.bare_metal.environment:BareMetalEnvironment",
    args_key="bare_metal",
    args=_args,
    keyword_args=True,
    served="components.bare_metal.adapter:BareMetalEnvironment",
    default_args={},
    mock_config={"fullserver:sshPrivateKey": "mock-private-key"},
    graph_failure_warns=True,
)
