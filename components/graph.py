"""The resource graph ``pulumi up`` would create, computed offline under Pulumi's mock runtime.

``graph_for_plan`` evaluates ``components.program.deploy`` (the real program after sizing) for
one stack; ``graph_for_config`` runs the whole program from a stack's config. No credentials and
no Pulumi CLI are involved: a ``Mocks`` records every registered resource and answers the few
invokes the components make.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import gc
import json
import logging
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi

# --- the adapter onto the Pulumi SDK's internals --------------------------------------------------
# Evaluating a program offline without the engine needs four SDK functions, three of them private
# (underscore or undocumented module paths), and evaluating it fast a fifth (``_get_stack_trace``,
# see ``offline_speedups``). They are imported here and nowhere else, and
# tests/components/test_graph_contract.py pins their signatures and the SDK versions
# (pyproject.toml) they were written against, so an SDK upgrade that moves them fails one test
# that names what moved instead of breaking `fullserver plan`.
from pulumi.runtime import mocks as pulumi_mocks  # public: set_mocks
from pulumi.runtime import resource as pulumi_resource  # private: _get_stack_trace
from pulumi.runtime.config import set_all_config  # private module: the engine's config hand-off
from pulumi.runtime.proto import source_pb2  # the engine's StackTrace message
from pulumi.runtime.stack import run_pulumi_func  # private: runs a program body as the engine would
from pulumi.runtime.sync_await import _sync_await  # private: drives the SDK's event loop to completion

from components import registry
from fullserver import clouds, naming
from fullserver.errors import FullserverError
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.platforms import rules_for
from fullserver.stacks import SECRET_KEYS

SDK_INTERNALS = (
    pulumi_mocks.set_mocks,
    set_all_config,
    run_pulumi_func,
    _sync_await,
    pulumi_resource._get_stack_trace,
)

PROJECT = "fullserver"


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
    """The stack's exports (``graph_for_config`` / ``graph_for_plan``) or the component's outputs."""
    seconds: float = 0.0
    providers: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """Each custom resource's explicit provider (its inputs: region, project...), by (type, logical
    name); ``{}`` for a resource on its package's default provider."""
    read_ids: dict[tuple[str, str], str | None] = field(default_factory=dict)
    """The id each read (``Resource.get``) asked for, by (type, logical name); ``UNKNOWN`` for an id
    not yet known (in a preview: the engine then skips the read)."""

    def provider_of(self, row: Row) -> dict[str, Any]:
        return self.providers.get((row.type, row.name), {})

    def of_type(self, suffix: str) -> list[Row]:
        """Rows whose type token ends with ``suffix`` (e.g. ``"ec2/launchTemplate:LaunchTemplate"``)."""
        return [r for r in self.rows if r.type.endswith(suffix)]

    def one(self, suffix: str) -> Row:
        rows = self.of_type(suffix)
        if len(rows) != 1:
            raise AssertionError(f"expected one {suffix}, found {len(rows)}: {[r.name for r in rows]}")
        return rows[0]


class GraphMocks(pulumi.runtime.Mocks):
    """Records every resource and returns the outputs a real provider would compute: each cloud
    answers for its own types and invokes (``Cloud.mock_outputs``, ``Cloud.mock_invoke``).

    ``aws_region`` answers invokes that name no region (the stack's own region, as an explicit
    provider or ``aws:region`` would give it)."""

    def __init__(self, aws_region: str = "us-east-1") -> None:
        self.registered: list[tuple[str, str, dict[str, Any], bool]] = []
        self.provider_of: dict[tuple[str, str], dict[str, Any]] = {}
        """Each custom resource's explicit provider inputs by (type, name) ({}: the default one)."""
        self.aws_region = aws_region
        self.zones_without: dict[tuple[str, ...], tuple[str, ...]] = {}
        """Zones that do not offer an instance type (by the offerings filter's types), for tests."""
        self.gke_without_workload_identity: set[str] = set()
        """Existing GKE clusters (by name) whose ``getCluster`` answer has no workload pool."""
        self.notes: dict[str, Any] = {}
        """What a cloud's mocks remember between resources (a launch template's public address)."""
        self._providers: dict[str, dict[str, Any]] = {}
        self._ip = 10
        self.read_ids: dict[tuple[str, str], str | None] = {}

    def next_ip(self, prefix: str) -> str:
        self._ip += 1
        return f"{prefix}.{self._ip}"

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        inputs = dict(args.inputs)
        self.registered.append((args.typ, args.name, inputs, bool(args.custom)))
        if args.resource_id:  # a read's id (a registration's is its import id, "" when none)
            self.read_ids[(args.typ, args.name)] = args.resource_id
        if not args.custom:
            return (None, {})
        if args.typ.startswith("pulumi:providers:"):
            self._providers[f"{args.name}-id"] = inputs
        else:
            self.provider_of[(args.typ, args.name)] = self._provider(getattr(args, "provider", ""))
        return (f"{args.name}-id", {**inputs, **self._computed(args.typ, args.name, inputs)})

    def _provider(self, ref: object) -> dict[str, Any]:
        """The inputs of the explicit provider a reference (``urn::id``) names; {} for none."""
        return self._providers.get(str(ref or "").rsplit("::", 1)[-1], {})

    def region_of(self, args: Mapping[str, Any], provider: object) -> str:
        """The region an invoke asks about: its own argument, else its explicit provider's, else
        the stack's."""
        return str(args.get("region") or self._provider(provider).get("region") or self.aws_region)

    def _computed(self, typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        # Autonaming adds a random suffix; a checksum keeps the mock's names stable across runs.
        out: dict[str, Any] = {"name": inputs.get("name", f"{name}-{zlib.crc32(name.encode()) & 0xFFFFFF:06x}")}
        cloud = clouds.of_type(typ)
        if cloud is not None:
            cloud.mock_outputs(typ, name, inputs, out, self)
        return out

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        cloud = clouds.of_type(args.token)
        answer = cloud.mock_invoke(args.token, args.args, getattr(args, "provider", ""), self) if cloud else None
        return answer or {}


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


def close_event_loop() -> None:
    """Close every event loop the SDK left behind; for a process about to exit.

    ``_sync_await`` creates a loop per thread that needs one (the main thread, and the executor
    threads synchronous invokes run on) and keeps it, since the SDK's own state refers to it.
    Left to the garbage collector at interpreter exit, a loop's ``__del__`` can run after its
    self-pipe is gone and print "Exception ignored in BaseEventLoop.__del__ ... Invalid file
    descriptor: -1" after a successful plan; the command line closes them all first.
    """
    policy = asyncio.get_event_loop_policy()
    try:
        main_loop: asyncio.AbstractEventLoop | None = policy.get_event_loop()
    except RuntimeError:
        main_loop = None
    if main_loop is not None and not main_loop.is_running() and not main_loop.is_closed():
        main_loop.run_until_complete(main_loop.shutdown_asyncgens())
        main_loop.run_until_complete(main_loop.shutdown_default_executor())
    # The executor threads' loops are reachable only through the garbage collector's list.
    for loop in [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]:
        if not loop.is_running() and not loop.is_closed():
            loop.close()


class _Inline(concurrent.futures.ThreadPoolExecutor):
    """Runs each call at once on the event loop's own thread, starting no worker thread.

    Why: the SDK sends every registration and invoke to the engine through the loop's default
    executor (``run_in_executor(None, ...)``), a blocking gRPC call in a real deployment. Offline
    the engine is ``GraphMocks``, which answers in microseconds; handing each call to a pool
    thread and waking the loop again for its answer cost more than the answer (a quarter of a
    graph's CPU time, measured by bench/plan.py). A ``ThreadPoolExecutor`` by type only because
    ``loop.set_default_executor`` accepts nothing else."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting coroutine, as a pool thread would
            future.set_exception(exc)
        return future


_NO_STACK_TRACE = source_pb2.StackTrace()


@contextlib.contextmanager
def offline_speedups() -> Iterator[None]:
    """Evaluations inside run faster, at a cost to everything else the process runs meanwhile;
    both are put back as they were on exit. Opt-in: the command line's graph path and the tests
    that want speed enter it around their evaluations, nothing else is changed.

    * No source stack trace per resource: the SDK walks the Python stack at every registration
      to tell the engine which line created it (``_get_stack_trace``); the mocks never read it,
      and the walk was a sixth of a graph's CPU time.
    * No cyclic garbage collection while the program runs: the SDK makes tens of thousands of
      short-lived futures and callbacks per stack, and each collection they trigger walks the
      whole heap (catalog, profiles, provider SDKs) again; what a run leaves is collected once
      collection is back on.
    """
    trace = pulumi_resource._get_stack_trace
    collecting = gc.isenabled()
    pulumi_resource._get_stack_trace = lambda: _NO_STACK_TRACE
    gc.disable()
    try:
        yield
    finally:
        pulumi_resource._get_stack_trace = trace
        if collecting:
            gc.enable()


@contextlib.contextmanager
def _inline_executor() -> Iterator[None]:
    """``_Inline`` as the running loop's default executor, the loop's own put back afterwards
    (the loop is the thread's, shared with the caller's runtime)."""
    loop = asyncio.get_running_loop()
    previous = getattr(loop, "_default_executor", None)  # asyncio keeps no public getter
    loop.set_default_executor(_Inline())
    try:
        yield
    finally:
        loop._default_executor = previous  # type: ignore[attr-defined]


def _config_region(config: Mapping[str, Any]) -> str | None:
    """The region a cloud's config key names (``Cloud.region_config``: ``aws:region``), if any."""
    keys = (c.region_config for c in clouds.all_clouds() if c.region_config)
    return next((str(config[k]) for k in keys if config.get(k)), None)


def _recorder(into: dict[str, Any], name: str) -> Callable[[Any], None]:
    """A callback that records one stack export's resolved value."""

    def record(value: Any) -> None:
        into[name] = value

    return record


def evaluate(
    program: Callable[[], object],
    stack: str,
    config: dict[str, Any] | None = None,
    aws_region: str | None = None,
    *,
    full: bool = False,
    preview: bool = False,
) -> Graph:
    """Run ``program`` under fresh mocks in a fresh context; return what it registered (with
    ``full``, inputs as registered: scripts and policies whole, numbers as the engine sends them;
    with ``preview``, as ``pulumi preview`` runs it: outputs the mocks do not give are unknown)."""
    region = aws_region or _config_region(config or {}) or "us-east-1"
    mocks = GraphMocks(aws_region=region)
    logger = logging.getLogger(f"fullserver.graph.{stack}")
    logger.propagate = False
    collect = _Collect()
    logger.handlers = [collect]
    started = time.perf_counter()
    exports: dict[str, Any] = {}

    def run() -> None:
        pulumi_mocks.set_mocks(mocks, project=PROJECT, stack=stack, preview=preview, logger=logger)
        secret = [k for k in config or {} if k.split(":", 1)[-1] in SECRET_KEYS]
        set_all_config({k: _config_text(v) for k, v in (config or {}).items()}, secret_keys=secret)

        def body() -> None:
            program()
            # The stack's exports, resolved as the engine would record them.
            root = pulumi.runtime.get_root_resource()
            for name, value in dict(getattr(root, "outputs", {}) or {}).items():
                pulumi.Output.from_input(value).apply(_recorder(exports, name))

        async def main() -> None:
            with _inline_executor():
                await run_pulumi_func(body)

        _sync_await(main())

    try:
        contextvars.Context().run(run)
    except pulumi.RunError as exc:
        raise GraphError(f"stack '{stack}'", str(exc)) from None
    # Registration order depends on async scheduling; name order is stable and groups a node's parts.
    registered = sorted(mocks.registered, key=lambda r: (r[1], r[0]))
    # What the providers would refuse at create time, refused here first (fullserver.naming).
    refused = naming.graph_problems(
        (typ, name, inputs) for typ, name, inputs, custom in registered if custom or naming.creates_objects(typ)
    )
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise GraphError(f"stack '{stack}'", f"{refused[0]}{more}")
    rows = [
        Row(type=typ, name=name, inputs=inputs, custom=custom) if full else _row(typ, name, inputs, custom)
        for typ, name, inputs, custom in registered
        if typ != "pulumi:pulumi:Stack"
    ]
    return Graph(
        stack=stack,
        rows=rows,
        warnings=collect.messages,
        outputs=exports,
        seconds=time.perf_counter() - started,
        providers=dict(mocks.provider_of),
        read_ids=dict(mocks.read_ids),
    )


def graph_for_plan(plan: StackPlan, config: dict[str, Any] | None = None) -> Graph:
    """The graph of ``deploy(plan)``: the program after sizing, for a plan the CLI already made."""
    from components.program import deploy

    entry = registry.entry(plan.spec.platform)
    stand_ins = {**mock_config(plan.spec.platform), **(config or {})}
    return evaluate(lambda: deploy(plan), plan.stack, stand_ins, aws_region=entry.mock_region(plan))


def mock_config(platform: Platform) -> dict[str, Any]:
    """Config the graph stands in for what ``pulumi up`` would have: the platform entry's, and its
    cloud's stand-in for the project the plan has checked is named (``PlatformRules.project``)."""
    rules = rules_for(platform)
    cloud = clouds.cloud(rules.provider)
    checked = rules.project.key if rules.project is not None else None
    stand_in = {k: v for k, v in (cloud.mock_config if cloud else {}).items() if k == checked}
    return {**stand_in, **registry.entry(platform).mock_config}


def graph_for_config(stack: str, config: dict[str, Any], *, full: bool = False) -> Graph:
    """The graph of the whole program (config -> sizing -> Environment) for one stack's config."""
    from components.program import main

    region = _config_region(config) or config.get("fullserver:region")
    return evaluate(main, stack, config, aws_region=str(region) if region else None, full=full)


def graph_for_stack_plan(plan: StackPlan) -> Graph:
    """The graph ``fullserver plan`` shows for one planned stack."""
    if registry.entry(plan.spec.platform).graph_failure_warns:
        return _graph_or_warning(plan)
    return graph_for_plan(plan)


def plan_with_graphs(plans: Iterable[StackPlan]) -> list[tuple[StackPlan, Graph]]:
    """Graphs for many plans (what ``bench/plan.py`` times), each with ``offline_speedups``."""
    return [(plan, fast_graph(plan)) for plan in plans]


def fast_graph(plan: StackPlan) -> Graph:
    """``graph_for_stack_plan`` inside ``offline_speedups``: the command line's graph path."""
    with offline_speedups():
        return graph_for_stack_plan(plan)


def _graph_or_warning(plan: StackPlan) -> Graph:
    """A platform whose entry says so (bare metal) has its graph shown when it evaluates, and a
    failure there becomes a warning instead of stopping the plan of every other stack."""
    try:
        return graph_for_plan(plan)
    except Exception as exc:  # reported, not swallowed: it becomes the graph's warning
        what = exc.what if isinstance(exc, FullserverError) else f"{type(exc).__name__}: {exc}"
        warning = f"{plan.spec.platform.value} resource graph unavailable: {what}"
        return Graph(stack=plan.stack, rows=[], warnings=[warning])


# --- what matters per resource ---------------------------------------------------------------

_BULKY = {
    "userData": "user data",
    "startup-script": "startup script",
    "assumeRolePolicy": "policy",
    "__provider": "dynamic provider",
}


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
