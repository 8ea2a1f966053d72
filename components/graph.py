"""The resource graph ``pulumi up`` would create, computed offline under Pulumi's mock runtime.

``graph_for_plan`` evaluates ``components.program.deploy`` (the real program after sizing) for
one stack; ``graph_for_config`` runs the whole program from a stack's config. No credentials and
no Pulumi CLI are involved: a ``Mocks`` records every registered resource and answers the few
invokes the components make.

Isolation: ``pulumi.runtime.set_mocks`` is process-global *through context variables* (settings,
the root stack resource, config all live in ``contextvars``). Each evaluation runs inside a fresh
``contextvars.Context``, so it installs its own mocks and config there and leaves the caller's
runtime (for example a test session's mocks from ``conftest.py``) untouched, without a
subprocess. It must not be called from inside a running Pulumi program or ``@pulumi.runtime.test``.
"""

from __future__ import annotations

import contextvars
import json
import logging
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from fullserver.errors import FullserverError
from fullserver.plan import StackPlan

PROJECT = "fullserver"
MOCK_GCP_PROJECT = "mock-project"


class GraphError(FullserverError):
    """The program refused the stack (a component's plan-time refusal, a config error)."""


@dataclass(frozen=True)
class Row:
    """One resource: its type token, logical name and inputs (scripts and policies shortened)."""

    type: str
    name: str
    inputs: dict[str, Any]
    custom: bool = True

    def as_json(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "inputs": self.inputs}


@dataclass
class Graph:
    stack: str
    rows: list[Row]
    warnings: list[str] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def of_type(self, suffix: str) -> list[Row]:
        """Rows whose type token ends with ``suffix`` (e.g. ``"ec2/launchTemplate:LaunchTemplate"``)."""
        return [r for r in self.rows if r.type.endswith(suffix)]

    def one(self, suffix: str) -> Row:
        rows = self.of_type(suffix)
        if len(rows) != 1:
            raise AssertionError(f"expected one {suffix}, found {len(rows)}: {[r.name for r in rows]}")
        return rows[0]


class GraphMocks(pulumi.runtime.Mocks):
    """Records every resource and returns the outputs a real provider would compute."""

    def __init__(self) -> None:
        self.registered: list[tuple[str, str, dict[str, Any], bool]] = []
        self._ip = 10

    def _next_ip(self, prefix: str) -> str:
        self._ip += 1
        return f"{prefix}.{self._ip}"

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        inputs = dict(args.inputs)
        self.registered.append((args.typ, args.name, inputs, bool(args.custom)))
        if not args.custom:
            return (None, {})
        return (f"{args.name}-id", {**inputs, **self._computed(args.typ, args.name, inputs)})

    def _computed(self, typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        # Autonaming adds a random suffix; a checksum keeps the mock's names stable across runs.
        out: dict[str, Any] = {"name": inputs.get("name", f"{name}-{zlib.crc32(name.encode()) & 0xFFFFFF:06x}")}
        if typ.startswith("gcp:"):
            out["selfLink"] = (
                f"https://www.googleapis.com/compute/v1/projects/{MOCK_GCP_PROJECT}/{typ.split(':')[-1].lower()}s/{out['name']}"
            )
            out["project"] = inputs.get("project", MOCK_GCP_PROJECT)
        if typ.startswith("aws:"):
            out["arn"] = f"arn:aws:{typ.split(':')[1].split('/')[0]}::123456789012:{name}"
        if typ == "gcp:serviceaccount/account:Account":
            out["email"] = f"{inputs['accountId']}@{MOCK_GCP_PROJECT}.iam.gserviceaccount.com"
        elif typ == "gcp:tpu/v2Vm:V2Vm":
            public = bool((inputs.get("networkConfig") or {}).get("enableExternalIps"))
            hosts = 1
            out["networkEndpoints"] = [
                {
                    "ipAddress": self._next_ip("10.64.0"),
                    "accessConfigs": [{"externalIp": self._next_ip("34.1.0")}] if public else [],
                }
                for _ in range(hosts)
            ]
        elif typ == "gcp:compute/instance:Instance":
            nics = []
            for nic in inputs.get("networkInterfaces", []):
                acs = [{**ac, "natIp": self._next_ip("34.2.0")} for ac in nic.get("accessConfigs", [])]
                nics.append({**nic, "networkIp": self._next_ip("10.64.0"), "accessConfigs": acs})
            out["networkInterfaces"] = nics
        elif typ == "gcp:compute/instanceTemplate:InstanceTemplate":
            out["selfLinkUnique"] = out["selfLink"] + "?uniqueId=1"
        elif typ.endswith("InstanceGroupManager:RegionInstanceGroupManager") or typ.endswith(
            "instanceGroupManager:InstanceGroupManager"
        ):
            out["instanceGroup"] = out["selfLink"].replace("instancegroupmanagers", "instanceGroups")
        elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
            out["latestVersion"] = 1
        elif typ == "aws:ec2/instance:Instance":
            out["privateIp"] = self._next_ip("10.80.128")
            out["availabilityZone"] = "us-east-1a"
            out["publicIp"] = ""
        elif typ == "aws:autoscaling/group:Group":
            out["name"] = inputs.get("name", name)
        return out

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            region = args.args.get("region", "us-east-1")
            return {"names": [f"{region}{z}" for z in "abc"], "zoneIds": [f"use1-az{i}" for i in (1, 2, 4)]}
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {
                "project": MOCK_GCP_PROJECT,
                "region": "us-central1",
                "zone": "us-central1-a",
                "accessToken": "mock",
            }
        return {}


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _config_text(value: Any) -> str:
    """Config as the Pulumi engine hands it to a program: JSON for objects, arrays and booleans."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def evaluate(program: Callable[[], object], stack: str, config: dict[str, Any] | None = None) -> Graph:
    """Run ``program`` under fresh mocks in a fresh context; return what it registered."""
    mocks = GraphMocks()
    logger = logging.getLogger(f"fullserver.graph.{stack}")
    logger.propagate = False
    collect = _Collect()
    logger.handlers = [collect]
    started = time.perf_counter()

    def run() -> None:
        pulumi_mocks.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, logger=logger)
        set_all_config({k: _config_text(v) for k, v in (config or {}).items()})

        def body() -> None:
            program()

        _sync_await(run_pulumi_func(body))

    try:
        contextvars.Context().run(run)
    except pulumi.RunError as exc:
        raise GraphError(f"stack '{stack}'", str(exc)) from None
    # Registration order depends on async scheduling; name order is stable and groups a node's parts.
    registered = sorted(mocks.registered, key=lambda r: (r[1], r[0]))
    rows = [_row(typ, name, inputs, custom) for typ, name, inputs, custom in registered if typ != "pulumi:pulumi:Stack"]
    return Graph(stack=stack, rows=rows, warnings=collect.messages, seconds=time.perf_counter() - started)


def graph_for_plan(plan: StackPlan, config: dict[str, Any] | None = None) -> Graph:
    """The graph of ``deploy(plan)``: the program after sizing, for a plan the CLI already made."""
    from components.program import deploy

    gcp = {"gcp:project": MOCK_GCP_PROJECT} if plan.spec.provider == "gcp" else {}
    return evaluate(lambda: deploy(plan), plan.stack, {**gcp, **(config or {})})


def graph_for_config(stack: str, config: dict[str, Any]) -> Graph:
    """The graph of the whole program (config -> sizing -> Environment) for one stack's config."""
    from components.program import main

    return evaluate(main, stack, config)


def graph_for_stack_plan(plan: StackPlan) -> Graph:
    """The graph ``fullserver plan`` shows for one planned stack."""
    return _bare_metal_graph(plan) if plan.spec.platform.value == "bare-metal" else graph_for_plan(plan)


def plan_with_graphs(plans: Iterable[StackPlan]) -> list[tuple[StackPlan, Graph]]:
    """Graphs for many plans (what ``bench/plan.py`` times)."""
    return [(plan, graph_for_stack_plan(plan)) for plan in plans]


def _bare_metal_graph(plan: StackPlan) -> Graph:
    """Bare metal is a colleague's component, still landing: its graph is shown when it evaluates,
    and a failure there becomes a warning instead of stopping the plan of every other stack."""
    try:
        return graph_for_plan(plan, {"fullserver:sshPrivateKey": "mock-private-key"})
    except Exception as exc:  # reported, not swallowed: it becomes the graph's warning
        what = exc.what if isinstance(exc, FullserverError) else f"{type(exc).__name__}: {exc}"
        return Graph(stack=plan.stack, rows=[], warnings=[f"bare-metal resource graph unavailable: {what}"])


# --- what matters per resource ---------------------------------------------------------------

_BULKY = {"userData": "user data", "startup-script": "startup script", "assumeRolePolicy": "policy"}


def _clean(value: Any) -> Any:
    """Inputs as JSON-friendly values; scripts and policies shortened to their size."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _BULKY and isinstance(v, str):
                out[k] = f"<{_BULKY[k]}, {len(v)} bytes>"
            else:
                out[k] = _clean(v)
        return out
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _row(typ: str, name: str, inputs: dict[str, Any], custom: bool) -> Row:
    return Row(type=typ, name=name, inputs=_clean(inputs), custom=custom)


def rows_json(graph: Graph) -> list[dict[str, Any]]:
    return [r.as_json() for r in graph.rows if r.custom]
