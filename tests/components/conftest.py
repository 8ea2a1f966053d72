"""Pulumi mocks for the component tests: installed ONCE here, before any component is imported.

``set_mocks`` is process-global (pytest imports every test module at collection), so only this
conftest installs it. ``components.graph`` evaluates stacks in a fresh ``contextvars.Context``
with its own mocks; the stack tests use it beside these mocks to prove the two coexist.
"""

from __future__ import annotations

import asyncio
import base64
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.graph import Graph, GraphMocks, Row

MOCKS = GraphMocks()
pulumi.runtime.set_mocks(MOCKS, project="fullserver", stack="test", preview=False)

from fullserver.catalog import load_catalog  # noqa: E402  (after set_mocks, per the Pulumi docs)
from fullserver.plan import StackPlan, plan_paths  # noqa: E402
from fullserver.spec import EnvironmentSpec  # noqa: E402
from fullserver.stacks import find_stacks  # noqa: E402

STACKS = Path(__file__).resolve().parents[2] / "stacks"


Plans = dict[str, StackPlan]
run_test: Callable[[Callable[[], Any]], Callable[[], None]] = (
    pulumi.runtime.test
)  # typed alias of the untyped decorator


@pytest.fixture(scope="session")
def plans() -> dict[str, StackPlan]:
    """Every example stack's plan (sized by the core), by stack name."""
    return {p.stack: p for p in plan_paths(find_stacks(STACKS, []))}


@pytest.fixture(scope="session")
def catalog() -> Any:
    return load_catalog()


@pytest.fixture
def mocks() -> Iterator[GraphMocks]:
    MOCKS.registered.clear()
    yield MOCKS
    MOCKS.registered.clear()


OUTPUTS = (
    "connect",
    "private_ips",
    "public_ips",
    "service_account",
    "node_name",
    "group_names",
    "instance_ids",
    "platform",
    "cleanup",
    "instance_role",
    "instance_role_arn",
    "nodes",
    "node_groups",
    "instance_names",
    "endpoint",
    "lb_address",
)

Build = Callable[[Callable[[], Any]], Graph]


def _drain_pending_rpcs() -> None:
    """Let a failed program's other resource registrations finish before the next test runs.

    When one output raises, ``pulumi.runtime.test`` returns with that error while registrations
    depending on the same value are still pending in the shared event loop; left alone, they fail
    during the next test (which then reports this test's error). SDK internals (pulumi 3.272:
    ``SETTINGS.rpc_manager.rpcs``, ``_sync_await``), as ``components.graph`` uses them."""
    from pulumi.runtime.settings import SETTINGS
    from pulumi.runtime.sync_await import _sync_await

    async def settle() -> None:
        # Not only the registrations already sent: outputs still resolving register more resources
        # (a listener after its load balancer); wait for every task of the loop until none is left
        # or none finishes within 5 s.
        for _ in range(100):
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
            rpcs = [r for r in SETTINGS.rpc_manager.rpcs if not r.done()]
            outputs = [o for o in list(SETTINGS.outputs) if not o.done()]
            if not tasks and not rpcs and not outputs:
                return
            waiting = [*tasks, *map(asyncio.ensure_future, [*rpcs, *outputs])]
            done, _pending = await asyncio.wait(waiting, timeout=5)
            if not done:
                return

    _sync_await(settle())
    with SETTINGS.lock:
        SETTINGS.outputs.clear()  # the failed program's outputs: awaited above, never the next test's
    SETTINGS.rpc_manager.clear()


@pytest.fixture(autouse=True)
def _settled() -> Iterator[None]:
    """Every test leaves the shared event loop empty, not only those built through ``build``: a
    component constructed bare to test its refusal (``pytest.raises(SpecRefused)``) may have sent
    registrations that would otherwise land in the next test's graph."""
    yield
    _drain_pending_rpcs()


@pytest.fixture
def build(mocks: GraphMocks) -> Build:
    """Construct a component under the conftest mocks and return what it registered."""

    def run(factory: Callable[[], Any]) -> Graph:
        mocks.registered.clear()
        built: dict[str, Any] = {}

        @run_test
        def program() -> Any:
            component = factory()
            names = [n for n in OUTPUTS if hasattr(component, n)]
            return pulumi.Output.all(*[getattr(component, n) for n in names]).apply(
                lambda values: built.update(zip(names, values, strict=True))
            )

        try:
            program()
        except BaseException:
            _drain_pending_rpcs()
            raise
        # Raw inputs (numbers as the engine sends them, scripts in full) so tests can read everything.
        rows = [
            Row(type=t, name=n, inputs=i, custom=c)
            for t, n, i, c in sorted(mocks.registered, key=lambda r: (r[1], r[0]))
        ]
        return Graph(stack="test", rows=rows, outputs=built)

    return run


def spec_of(plans: dict[str, StackPlan], stack: str, **changes: Any) -> EnvironmentSpec:
    """A stack's spec, optionally changed (to break a rule in a negative test)."""
    spec = plans[stack].spec
    return spec.model_copy(update=changes) if changes else spec


def plain_http(spec: EnvironmentSpec) -> EnvironmentSpec:
    """An example serving spec without its TLS, as a stack with ``serving.plainHttp: true`` plans it:
    the plain load balancer's own shape (the examples serve HTTPS since issue 33)."""
    assert spec.endpoint is not None
    return spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"tls": None, "plain_http": True})})


ResourceOpts = dict[str, pulumi.ResourceOptions]


@pytest.fixture
def resource_options(monkeypatch: pytest.MonkeyPatch) -> ResourceOpts:
    """Each custom resource's options by logical name (``protect``, ``ignore_changes``): the mock
    monitor never sees them, so they are recorded where every provider resource passes through."""
    seen: ResourceOpts = {}
    original = pulumi.CustomResource.__init__

    def record(self: pulumi.CustomResource, t: str, name: str, *args: Any, **kwargs: Any) -> None:
        opts = kwargs.get("opts", args[1] if len(args) > 1 else None)
        seen[name] = opts if opts is not None else pulumi.ResourceOptions()
        original(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.CustomResource, "__init__", record)
    return seen


def rsa_4096_line(i: int) -> str:
    """An RSA-4096 public key line of real size (a 4096-bit modulus is ~716 characters of base64)."""

    def part(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    blob = part(b"ssh-rsa") + part(b"\x01\x00\x01") + part(b"\x00" + bytes([i % 255 + 1]) * 512)
    return f"ssh-rsa {base64.b64encode(blob).decode()} person{i}@laptop"


GROUP = "kubernetes:yaml/v2:ConfigGroup"


@pytest.fixture
def group_waits(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """What each ConfigGroup waits on, by logical name (a component resource: ``resource_options``
    sees only custom ones)."""
    seen: dict[str, list[str]] = {}
    original = pulumi.ComponentResource.__init__

    def record(self: pulumi.ComponentResource, t: str, name: str, *args: Any, **kwargs: Any) -> None:
        opts = kwargs.get("opts", args[1] if len(args) > 1 else None)
        if t == GROUP and opts is not None:
            seen[name] = sorted(depends_on_names(opts))
        original(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.ComponentResource, "__init__", record)
    return seen


def depends_on_names(opts: pulumi.ResourceOptions) -> set[str]:
    """The logical names of what ``opts`` waits on (``depends_on``, a list of resources here)."""
    waits: Any = opts.depends_on or []
    return {d._name for d in waits}
