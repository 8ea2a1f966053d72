"""The component package other languages get from ``pulumi package add``: its schema, generated
offline by Pulumi's own analyzer exactly as the plugin's ``__main__.py`` serves it."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import tomllib
import typing
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider

import components
import fullserver
from components.graph import evaluate

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "components"

ANY = "pulumi.json#/Any"
# Where the schema may say Any, and why (each is a follow-up, not a choice made here).
ALLOWED_ANY = {
    "fullserver:index:Environment.bareMetal": "EnvironmentArgs.bare_metal is dict[str, Any] in components/environment.py",
    "fullserver:index:BareMetalEnvironment.hostStatus": "the per-host report of components/bare_metal/provider.py has no declared type",
}


def plugin_main() -> ModuleType:
    """``components/__main__.py`` as a module (its ``if __name__ == "__main__"`` does not run)."""
    return importlib.import_module("components.__main__")


@cache
def schema() -> dict[str, Any]:
    main = plugin_main()
    provider = ComponentProvider(main.COMPONENTS, main.PACKAGE, None, fullserver.__version__)
    assert provider.schema is not None
    result: dict[str, Any] = json.loads(provider.schema)
    return result


def public_components() -> dict[str, type[pulumi.ComponentResource]]:
    """Every public ComponentResource defined in the ``components`` package and its platform
    packages, by class name (a base that constructs nothing, like the outputs contract, is none)."""
    found: dict[str, type[pulumi.ComponentResource]] = {}
    for info in pkgutil.walk_packages(components.__path__, "components."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for name, cls in vars(module).items():
            if (
                inspect.isclass(cls)
                and issubclass(cls, pulumi.ComponentResource)
                and cls.__module__ == module.__name__
                and not name.startswith("_")
                and "__init__" in vars(cls)
            ):
                found[name] = cls
    return found


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def test_plugin_layout_is_what_pulumi_runs() -> None:
    plugin = yaml.safe_load((PLUGIN / "PulumiPlugin.yaml").read_text(encoding="utf-8"))
    # Python component providers support pip with a `venv` virtualenv only: no runtime options.
    assert plugin == {"runtime": "python"}
    requirements = [
        line.strip()
        for line in (PLUGIN / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert requirements == ["-e .."]  # pip runs in components/: `..` is the repository at the same tag
    pyproject = tomllib.loads((PLUGIN.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["name"] == "fullserver"
    source = (PLUGIN / "__main__.py").read_text(encoding="utf-8")
    assert 'if __name__ == "__main__":' in source and "component_provider_host(" in source


def test_schema_names_the_package_and_its_version() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert schema()["name"] == "fullserver"
    assert schema()["version"] == fullserver.__version__ == pyproject["project"]["version"]


def test_every_public_component_is_served() -> None:
    served = {c.__name__ for c in plugin_main().COMPONENTS}
    assert set(public_components()) == served
    assert {f"fullserver:index:{n}" for n in served} == set(schema()["resources"])


def _class_annotations(cls: type) -> dict[str, Any]:
    """Annotations down the MRO below the SDK's own classes, as the analyzer reads outputs."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("components"):
            out.update(inspect.get_annotations(klass, eval_str=True))
    return {k: v for k, v in out.items() if not k.startswith("_")}


def _args_type(cls: type[pulumi.ComponentResource]) -> Any:
    return inspect.get_annotations(cls.__init__, eval_str=True)["args"]


@pytest.mark.parametrize("cls", plugin_main().COMPONENTS, ids=lambda c: c.__name__)
def test_every_input_and_output_is_in_the_schema_and_typed(cls: type[pulumi.ComponentResource]) -> None:
    resource = schema()["resources"][f"fullserver:index:{cls.__name__}"]
    assert resource["isComponent"] is True and resource.get("description")
    args = _args_type(cls)
    inputs = resource["inputProperties"]
    assert set(inputs) == {camel(k) for k in args.__annotations__}  # a TypedDict's own and inherited keys
    assert set(resource.get("requiredInputs", [])) == {camel(k) for k in args.__required_keys__}
    outputs = {k for k, v in _class_annotations(cls).items() if typing.get_origin(v) is pulumi.Output}
    assert outputs, f"{cls.__name__} declares no outputs"
    assert set(resource["properties"]) == {camel(k) for k in outputs}
    for name, prop in [*inputs.items(), *resource["properties"].items()]:
        assert "type" in prop or "$ref" in prop, f"{cls.__name__}.{name} has no type"


def _walk(node: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if node.get("$ref") is not None or node.get("type") is not None:
            found.append((path, node))
        for key, value in node.items():
            if key in ("properties", "inputProperties"):
                for name, prop in value.items():
                    found += _walk(prop, f"{path}.{name}")
            elif key in ("items", "additionalProperties"):
                found += _walk(value, path)
    return found


def test_no_any_where_a_real_type_exists() -> None:
    props = [p for kind in ("resources", "types") for tok, node in schema()[kind].items() for p in _walk(node, tok)]
    anys = {path for path, prop in props if prop.get("$ref") == ANY}
    assert anys == set(ALLOWED_ANY)


def test_every_referenced_type_is_defined() -> None:
    text = json.dumps(schema())
    refs = {r.split("#/types/")[1].split('"')[0] for r in text.split('"$ref": "')[1:] if r.startswith("#/types/")}
    assert refs and refs <= set(schema()["types"])


def test_bare_metal_adapter_builds_from_wire_inputs() -> None:
    """The path another language takes: camelCase inputs mapped by the provider, then the adapter."""
    main = plugin_main()
    provider = ComponentProvider(main.COMPONENTS, main.PACKAGE, None, fullserver.__version__)
    wire = {
        "hosts": [
            {
                "name": "gpu-01",
                "address": "203.0.113.10",
                "user": "ops",
                "hostKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOdxa8FJ42wwS51NSUShy8AnhcSqHlneQjBFh7l9eov/"],
            }
        ],
        "privateKey": "mock-key",
        "profile": "dedicated-steady",
        "config": {"gpuPersistence": True, "serviceUser": {"name": "ml", "authorizedKeys": ["ssh-ed25519 AAAA"]}},
    }
    args: Any = provider.map_inputs(wire, provider._component_defs["BareMetalEnvironment"])
    assert args["hosts"][0]["host_keys"] and args["config"]["service_user"]["authorized_keys"]
    from components.bare_metal.adapter import BareMetalEnvironment

    graph = evaluate(lambda: BareMetalEnvironment("dedicated", args), "package-test")
    fleet = graph.one("BareMetalFleet")
    assert fleet.inputs["hosts"][0]["address"] == "203.0.113.10"
    assert fleet.inputs["config"]["gpu_persistence"] is True
