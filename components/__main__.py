"""fullserver's components as a Pulumi package any language can use (``pulumi package add``).

Pulumi runs a Python component plugin as ``python <plugin directory>`` in the plugin's own
virtualenv (``venv``, made from ``requirements.txt``, which installs this checkout so the
components run with the same core, catalog and profiles they were written against). The schema
is inferred from the type annotations of the classes listed below (``pulumi.provider.
experimental``): ``args`` TypedDicts become inputs, class annotations become outputs.

Design notes: docs/design/components.md.
"""

import pulumi
from pulumi.provider.experimental import component_provider_host

import fullserver
from components import registry
from components.environment import Environment

PACKAGE = "fullserver"
"""The package name: the first part of every type token (``fullserver:index:Environment``)."""


def _served(entry: registry.PlatformEntry) -> type[pulumi.ComponentResource]:
    """The class other languages get for a platform (its component, or its adapter)."""
    return entry.served_class()


COMPONENTS: list[type[pulumi.ComponentResource]] = [Environment, *dict.fromkeys(_served(e) for e in registry.entries())]
"""Every component the package serves (the analyzer's schema covers exactly these): ``Environment``
and every registered platform's (once: ``gke-gpu`` and ``gke-tpu`` share ``GkeEnvironment``)."""


if __name__ == "__main__":
    component_provider_host(COMPONENTS, PACKAGE, version=fullserver.__version__)
