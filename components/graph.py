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

import asyncio
import concurrent.futures
import contextlib
import contextvars
import gc
import json
import logging
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pulumi

# --- the adapter onto the Pulumi SDK's internals --------------------------------------------------
# Evaluating a program offline without the engine needs four SDK functions, two of them private
# (underscore or undocumented module paths), and evaluating it fast a fifth (``_get_stack_trace``,
# see ``_offline_runtime``). They are imported here and nowhere else, and
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
from fullserver import naming
from fullserver.errors import FullserverError
from fullserver.plan import StackPlan
from fullserver.stacks import SECRET_KEYS

SDK_INTERNALS = (
    pulumi_mocks.set_mocks,
    set_all_config,
    run_pulumi_func,
    _sync_await,
    pulumi_resource._get_stack_trace,
)

PROJECT = "fullserver"
MOCK_GCP_PROJECT = "mock-project"
MOCK_AWS_ACCOUNT = "123456789012"
"""The account the offline graph's AWS ARNs name (AWS's documentation example account)."""
MOCK_GCP_PROJECT_NUMBER = "123456789012"
MOCK_DEFAULT_VPC = "vpc-default"
MOCK_SECRET_VALUE = "<read from the cloud secret at pulumi up>"
"""What the offline graph reads for a serving secret (a Secret Manager secret, an SSM parameter)."""
MOCK_CA = "bW9jay1jYQ=="
"""A cluster's CA certificate in the offline graph (base64 of ``mock-ca``)."""


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


_DIRECTIONS = {
    "north": "n",
    "south": "s",
    "east": "e",
    "west": "w",
    "central": "c",
    "northeast": "ne",
    "northwest": "nw",
    "southeast": "se",
    "southwest": "sw",
}


def aws_zone_ids(region: str) -> list[str]:
    """Zone ids as AWS spells them for ``region`` (``us-east-1`` -> ``use1-az1``; ``eu-central-1`` ->
    ``euc1-az1``), so a graph for any region reads like that region's own answer."""
    geo, direction, number = [*region.split("-"), "", ""][:3]
    short = f"{geo}{_DIRECTIONS.get(direction, direction[:1])}{number}"
    return [f"{short}-az{i}" for i in (1, 2, 3)]


class GraphMocks(pulumi.runtime.Mocks):
    """Records every resource and returns the outputs a real provider would compute.

    ``aws_region`` answers invokes that name no region (the stack's own region, as an explicit
    provider or ``aws:region`` would give it)."""

    def __init__(self, aws_region: str = "us-east-1") -> None:
        self.registered: list[tuple[str, str, dict[str, Any], bool]] = []
        self.provider_of: dict[tuple[str, str], dict[str, Any]] = {}
        """Each custom resource's explicit provider inputs by (type, name) ({}: the default one)."""
        self._lt_public: dict[str, bool] = {}
        self.aws_region = aws_region
        self.zones_without: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.gke_without_workload_identity: set[str] = set()
        """Existing GKE clusters (by name) whose ``getCluster`` answer has no workload pool."""
        """Zones that do not offer an instance type (by the offerings filter's types), for tests."""
        self._providers: dict[str, dict[str, Any]] = {}
        self._ip = 10
        self.read_ids: dict[tuple[str, str], str | None] = {}

    def _next_ip(self, prefix: str) -> str:
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

    def _region_of(self, args: pulumi.runtime.MockCallArgs) -> str:
        """The region an invoke asks about: its own argument, else its explicit provider's, else
        the stack's."""
        provider = self._provider(getattr(args, "provider", ""))
        return str(args.args.get("region") or provider.get("region") or self.aws_region)

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
        elif typ == "gcp:container/cluster:Cluster":
            # What GKE fills in: the IP endpoint, the CA and the DNS endpoint ("uid.<region>.gke.goog",
            # Container API ``DNSEndpointConfig.endpoint``), so the kubeconfig shows which one it uses.
            location = inputs.get("location", "")
            out["endpoint"] = "192.0.2.11"
            out["masterAuth"] = {"clusterCaCertificate": MOCK_CA}
            endpoints = dict(inputs.get("controlPlaneEndpointsConfig") or {})
            dns = dict(endpoints.get("dnsEndpointConfig") or {})
            endpoints["dnsEndpointConfig"] = {**dns, "endpoint": f"gke-0123456789abcdef.{location}.gke.goog"}
            out["controlPlaneEndpointsConfig"] = endpoints
        elif typ == "gcp:compute/instanceTemplate:InstanceTemplate":
            out["selfLinkUnique"] = out["selfLink"] + "?uniqueId=1"
        elif typ.endswith("InstanceGroupManager:RegionInstanceGroupManager") or typ.endswith(
            "instanceGroupManager:InstanceGroupManager"
        ):
            out["instanceGroup"] = out["selfLink"].replace("instancegroupmanagers", "instanceGroups")
        elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
            out["latestVersion"] = 1
            nics = inputs.get("networkInterfaces") or [{}]
            self._lt_public[f"{name}-id"] = nics[0].get("associatePublicIpAddress") == "true"
        elif typ == "aws:ec2/instance:Instance":
            out["privateIp"] = self._next_ip("10.80.128")
            out["availabilityZone"] = str(inputs.get("availabilityZone") or f"{self.aws_region}a")
            template = str((inputs.get("launchTemplate") or {}).get("id", ""))
            out["publicIp"] = self._next_ip("54.0.0") if self._lt_public.get(template) else ""
        elif typ == "aws:autoscaling/group:Group":
            out["name"] = inputs.get("name", name)
        elif typ == "gcp:projects/iAMCustomRole:IAMCustomRole":
            # the role's name is its full path, what role bindings take (pulumi-gcp IAMCustomRole.name)
            out["name"] = f"projects/{out['project']}/roles/{inputs['roleId']}"
        elif typ == "gcp:compute/globalAddress:GlobalAddress":
            # reserved at `up`: the offline graph names it, so rules sharing it can be seen to
            out["address"] = f"<{name} address, known after pulumi up>"
        return out

    def _subnets(self, args: pulumi.runtime.MockCallArgs) -> list[str]:
        """One subnet per zone of the region (``subnet-<zone id>``, zone ``<region>a`` first),
        narrowed by ``subnet-id`` and ``availability-zone`` filters as EC2 DescribeSubnets does."""
        region = self._region_of(args)
        by_zone = {f"{region}{z}": f"subnet-{i}" for z, i in zip("abc", aws_zone_ids(region), strict=True)}
        found = list(by_zone.values())
        for f in args.args.get("filters") or []:
            values = list(f.get("values") or [])
            if f.get("name") == "subnet-id":
                found = [s for s in found if s in values]
            elif f.get("name") == "availability-zone":
                found = [s for s in found if any(by_zone.get(v) == s for v in values)]
        return found

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            region = self._region_of(args)
            return {"names": [f"{region}{z}" for z in "abc"], "zoneIds": aws_zone_ids(region)}
        if args.token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
            # Every zone of the region offers every type (a test narrows this to check the choice).
            region = self._region_of(args)
            types = [v for f in args.args.get("filters") or [] for v in f.get("values", [])]
            zones = [f"{region}{z}" for z in "abc"]
            offered = [z for z in zones if z not in self.zones_without.get(tuple(types), ())]
            return {
                "id": region,
                "locations": offered,
                "locationTypes": ["availability-zone"] * len(offered),
                "instanceTypes": [types[0] if types else ""] * len(offered),
            }
        if args.token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                "accountId": MOCK_AWS_ACCOUNT,
                "arn": f"arn:aws:iam::{MOCK_AWS_ACCOUNT}:user/mock",
                "userId": "mock",
            }
        if args.token == "aws:ec2/getVpc:getVpc":  # the region's default VPC (a created EKS cluster's)
            return {"id": MOCK_DEFAULT_VPC, "default": True, "cidrBlock": "172.31.0.0/16"}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            return {"id": self._region_of(args), "ids": self._subnets(args)}
        if args.token == "aws:eks/getCluster:getCluster":  # an existing cluster node groups join
            region = self._region_of(args)
            return {
                "name": args.args.get("name"),
                "endpoint": f"https://MOCK.gr7.{region}.eks.amazonaws.com",
                "certificateAuthorities": [{"data": MOCK_CA}],
                "vpcConfig": {
                    "subnetIds": [f"subnet-{z}" for z in aws_zone_ids(region)],
                    "vpcId": "vpc-cluster",
                    "clusterSecurityGroupId": "sg-cluster",
                },
            }
        if args.token == "gcp:container/getCluster:getCluster":
            name = args.args.get("name")
            project = args.args.get("project") or MOCK_GCP_PROJECT
            pools = [] if name in self.gke_without_workload_identity else [{"workloadPool": f"{project}.svc.id.goog"}]
            return {
                "name": name,
                "endpoint": "192.0.2.10",
                "masterAuths": [{"clusterCaCertificate": MOCK_CA}],
                "workloadIdentityConfigs": pools,
            }
        if args.token == "gcp:secretmanager/getSecretVersionAccess:getSecretVersionAccess":
            return {"secret": args.args.get("secret"), "secretData": MOCK_SECRET_VALUE}  # never a real key
        if args.token == "aws:ssm/getParameter:getParameter":
            return {"name": args.args.get("name"), "value": MOCK_SECRET_VALUE, "type": "SecureString"}
        if args.token == "gcp:organizations/getProject:getProject":
            return {"number": MOCK_GCP_PROJECT_NUMBER, "projectId": args.args.get("projectId") or MOCK_GCP_PROJECT}
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
def _offline_runtime() -> Iterator[None]:
    """What an evaluation changes in the process for speed, put back as it was afterwards.

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
    region = aws_region or str((config or {}).get("aws:region") or "us-east-1")
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
        with _offline_runtime():
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
    region = entry.mock_region(plan)
    return evaluate(lambda: deploy(plan), plan.stack, {**entry.mock_config, **(config or {})}, aws_region=region)


def graph_for_config(stack: str, config: dict[str, Any], *, full: bool = False) -> Graph:
    """The graph of the whole program (config -> sizing -> Environment) for one stack's config."""
    from components.program import main

    region = config.get("aws:region") or config.get("fullserver:region")
    return evaluate(main, stack, config, aws_region=str(region) if region else None, full=full)


def graph_for_stack_plan(plan: StackPlan) -> Graph:
    """The graph ``fullserver plan`` shows for one planned stack."""
    if registry.entry(plan.spec.platform).graph_failure_warns:
        return _graph_or_warning(plan)
    return graph_for_plan(plan)


def plan_with_graphs(plans: Iterable[StackPlan]) -> list[tuple[StackPlan, Graph]]:
    """Graphs for many plans (what ``bench/plan.py`` times)."""
    return [(plan, graph_for_stack_plan(plan)) for plan in plans]


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
