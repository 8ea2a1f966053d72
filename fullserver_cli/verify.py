"""``fullserver verify INVENTORY --profile P``: measure what each host delivers beside the promise.

Design notes: docs/design/cli.md.
"""

from __future__ import annotations

import getpass
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from fullserver.autostop.plan import idle_sentence
from fullserver.baremetal.config import check_path
from fullserver.baremetal.idle import RENTED, IdleProbe
from fullserver.baremetal.inventory import Inventory, Target, inventory_from_data, load_inventory
from fullserver.baremetal.keys import passphrase_protected
from fullserver.baremetal.measure import Caps
from fullserver.baremetal.proxy import withhold_from_children
from fullserver.baremetal.verify import HostVerify, Promise, verify_fleet
from fullserver.catalog import load_catalog
from fullserver.errors import FullserverError, InputError
from fullserver.kube.verify_job import JobOptions
from fullserver.plan import StackPlan, plan_paths
from fullserver.platform import Platform
from fullserver.platforms import rules_for
from fullserver.profiles import Profile, get_profile, load_profiles
from fullserver.rules import STACK_FILE_GLOB, stack_file, stack_of_file
from fullserver.workload import DedicatedHost
from fullserver_cli.audit import check_keys, idle_mark, idle_probe
from fullserver_cli.cloud_nodes import inventory_hosts, stack_nodes
from fullserver_cli.fleet_view import exit_code, fleet_progress, show_fleet
from fullserver_cli.kube_verify import KubeAccess, verify_kube
from fullserver_cli.output import console
from fullserver_cli.plan import STACKS_DIR
from fullserver_cli.tables import FitTable, table

BARE_METAL_SCRATCH = rules_for(Platform.BARE_METAL).scratch
"""Where fullserver's bare-metal configuration mounts the scratch array unless told otherwise."""

# A Kubernetes pool stack's options (gke-gpu, gke-tpu, eks-gpu: fullserver_cli.kube_verify).
KubeconfigOpt = Annotated[
    Optional[Path],
    typer.Option("--kubeconfig", help="a Kubernetes stack's kubeconfig (default: KUBECONFIG, ~/.kube/config)"),
]
ContextOpt = Annotated[
    Optional[str],
    typer.Option(help="kubeconfig context (default: the one for the stack's cluster, else the current one)"),
]
NamespaceOpt = Annotated[str, typer.Option(help="namespace of the measuring Jobs on a Kubernetes stack")]
NodeOpt = Annotated[
    Optional[list[str]], typer.Option("--node", metavar="NAME", help="measure only this node of the pool (repeatable)")
]
ImageOpt = Annotated[Optional[str], typer.Option(help="the measuring Job's image (default: CUDA base, Ubuntu for TPU)")]
TimeoutOpt = Annotated[
    Optional[int], typer.Option("--timeout", min=30, help="seconds per node's Job, image pull included (default 780)")
]


def verify(
    target: Annotated[
        str,
        typer.Argument(
            help="inventory YAML (hosts, pinned host keys, key source), or a bare-metal, cloud or Kubernetes stack's name"
        ),
    ],
    profile: Annotated[
        Optional[str],
        typer.Option("--profile", "-p", help="profile whose promises apply (an inventory; a stack's is its plan's)"),
    ] = None,
    identity: Annotated[
        Optional[Path],
        typer.Option(
            "--identity",
            "-i",
            help="a stack's SSH private key file (its sshPrivateKey is a Pulumi secret verify does not decrypt)",
        ),
    ] = None,
    passphrase_env: Annotated[
        Optional[str],
        typer.Option(
            "--identity-passphrase-env",
            help="environment variable holding --identity's passphrase (else it is asked for on a terminal)",
        ),
    ] = None,
    known_hosts: Annotated[
        Optional[Path],
        typer.Option("--known-hosts", help="a cloud stack's nodes' host keys (OpenSSH known_hosts), pinned"),
    ] = None,
    user: Annotated[
        Optional[str], typer.Option(help="login user on a cloud stack's nodes (default: the one its outputs name)")
    ] = None,
    backend: Annotated[Optional[str], typer.Option(help="a cloud stack's state backend (PULUMI_BACKEND_URL)")] = None,
    project_dir: Annotated[Path, typer.Option("--project-dir", help="directory holding Pulumi.yaml")] = Path("."),
    pulumi_root: Annotated[Optional[Path], typer.Option(help="use <root>/bin/pulumi instead of PATH")] = None,
    stacks_dir: Annotated[Path, typer.Option("--stacks-dir", help="where the stack configs live")] = STACKS_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    scratch: Annotated[
        Optional[str],
        typer.Option(
            help="mountpoint of the scratch filesystem fio measures (default: /mnt/scratch; /scratch on cloud nodes)"
        ),
    ] = None,
    fio_seconds: Annotated[int, typer.Option(min=1, max=600, help="seconds per fio run (3 runs)")] = 10,
    fio_size_mib: Annotated[int, typer.Option(min=1, max=65536, help="size of fio's file, MiB")] = 1024,
    iperf_seconds: Annotated[int, typer.Option(min=1, max=600, help="seconds of iperf3 per host pair")] = 5,
    iperf_streams: Annotated[int, typer.Option(min=1, max=128, help="parallel iperf3 streams")] = 4,
    iperf_port: Annotated[int, typer.Option(min=1024, max=65000, help="iperf3 server port")] = 5201,
    profiles_dir: Annotated[Optional[Path], typer.Option("--profiles-dir", help="profiles directory")] = None,
    workers: Annotated[int, typer.Option(min=1, help="hosts measured at once (one connection each)")] = 64,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = "default",
    node: NodeOpt = None,
    image: ImageOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Measure what hosts deliver (PCIe, NVLink, NUMA, scratch fio, iperf3) against the plan's promise.

    TARGET is an inventory of bare-metal hosts, a bare-metal stack, or a cloud stack (aws-gpu,
    gcp-gpu, tpu-vm) that is up: its nodes are found from the stack's outputs and reached over SSH,
    IAP or SSM as the stack allows (--known-hosts, --user, --backend, --identity). On a Kubernetes
    stack (gke-gpu, gke-tpu, eks-gpu) each pool node is measured by a Job pinned to it, deleted
    after (CPU, RAM, local NVMe, NICs, GPUs; --kubeconfig, --context, --namespace, --node).
    """
    err = console(stderr=True)
    caps = Caps(fio_seconds, fio_size_mib, iperf_seconds, iperf_streams, iperf_port)
    try:
        cloud = CloudAccess(known_hosts, user, project_dir, backend, pulumi_root)
        kube = kube_stack(target, stacks_dir, profiles_dir, profile)
        if kube is not None:
            jobs = JobOptions(namespace=namespace, image=image, timeout=timeout, caps=caps)
            access = KubeAccess(kubeconfig, context, list(node or []), jobs)
            verify_kube(*kube, access, workers=workers, as_json=as_json, err=err, to_json=to_json, table=host_table)
        found = _targets(target, profile, identity, passphrase_env, cloud, stacks_dir, scratch, profiles_dir)
    except FullserverError as exc:
        sys.stderr.write(f"error: {exc.line()}\n")
        raise typer.Exit(exc.exit_code) from None
    _measure(found, caps, scratch, workers, as_json, err)


def _measure(found: _Targets, caps: Caps, scratch: str | None, workers: int, as_json: bool, err: Console) -> None:
    """Measure every host against the promise, show the fleet and exit with its verdict."""
    promise = Promise(
        profile=found.profile,
        catalog=load_catalog(),
        expect=found.contract,
        scratch=scratch or rules_for(found.platform).scratch,
        platform=found.platform,
        idle=found.idle,
    )
    with fleet_progress(err, "measuring", len(found.hosts)) as done:
        results = verify_fleet(
            found.hosts,
            promise,
            caps,
            expected=found.expected,
            jump_keys=found.jump_keys,
            max_workers=workers,
            on_done=done,
            passphrase=found.key.passphrase if found.key is not None else None,
        )
    show_fleet(results, err, as_json=as_json, to_json=to_json, table=host_table)
    raise typer.Exit(exit_code(results))


@dataclass(frozen=True)
class _Targets:
    """What verify measures: the hosts with their keys, the promise's profile, contract and platform."""

    hosts: list[tuple[Target, str]]
    jump_keys: dict[str, str]
    expected: dict[str, DedicatedHost]
    profile: Profile
    contract: DedicatedHost | None
    platform: Platform
    key: Identity | None
    idle: IdleProbe


def _targets(
    target: str,
    profile: str | None,
    identity: Path | None,
    passphrase_env: str | None,
    cloud: CloudAccess,
    stacks_dir: Path,
    scratch: str | None,
    profiles_dir: Path | None,
) -> _Targets:
    """The hosts of a stack (cloud or bare metal) or of an inventory file, and the promise they keep."""
    profiles = load_profiles(profiles_dir) if profiles_dir else load_profiles()
    try:
        check_path(scratch or BARE_METAL_SCRATCH, "--scratch", mountpoint=True)
    except ValueError as exc:
        raise InputError("--scratch", str(exc).split(": ", 1)[1], "name the scratch filesystem's mountpoint") from None
    stack = stack_path(target, stacks_dir)
    contract: DedicatedHost | None = None
    platform = Platform.BARE_METAL  # an inventory lists rented servers
    key: Identity | None = None
    idle = idle_probe(RENTED)
    if stack is not None:
        key = read_identity(identity, passphrase_env) if identity is not None else None
        inv, prof, contract, platform, idle = stack_inventory(stack, profiles, profile, key, cloud)
    else:
        if identity is not None:
            raise InputError(
                "--identity", "applies to a stack only", "name each host's key in the inventory (privateKeyFile)"
            )
        if profile is None:
            raise InputError(
                "--profile", "an inventory needs the profile whose promises apply", "e.g. --profile fine-tuning"
            )
        prof = get_profile(profile, profiles, where="--profile")
        inv = load_inventory(Path(target))
        check_keys(inv, [*inv.hosts, *(hop for e in inv.hosts for hop in inv.hops(e))])
    return _Targets(
        hosts=[(inv.target(e), inv.private_key(e)) for e in inv.hosts],
        jump_keys={name: k for e in inv.hosts for name, k in inv.jump_keys(e).items()},
        expected={e.name: e.expect for e in inv.hosts if e.expect is not None},
        profile=prof,
        contract=contract,
        platform=platform,
        key=key,
        idle=idle,
    )


def stack_path(target: str, stacks_dir: Path) -> Path | None:
    """The stack file ``target`` names (``NAME`` in ``stacks_dir``, or a ``Pulumi.<env>.yaml``
    path), None for an inventory file; neither is one line naming both and the known stacks."""
    path = Path(target)
    if path.is_file():
        return path if stack_of_file(path.name) is not None else None
    named = stacks_dir / stack_file(target) if "/" not in target and not path.suffix else None
    if named is not None and named.is_file():
        return named
    known = ", ".join(sorted(str(stack_of_file(p.name)) for p in stacks_dir.glob(STACK_FILE_GLOB)))
    raise InputError(
        target,
        f"no such inventory file, and no stack {stacks_dir / stack_file(path.stem if path.suffix else target)}",
        "pass an inventory file, or a stack's name" + (f" (known stacks: {known})" if known else ""),
    )


def kube_stack(
    target: str, stacks_dir: Path, profiles_dir: Path | None, profile: str | None
) -> tuple[StackPlan, dict[str, Profile]] | None:
    """The plan of a Kubernetes pool stack (gke-gpu, gke-tpu, eks-gpu), else None."""
    path = Path(target)
    if not path.is_file() and ("/" in target or path.suffix):
        return None  # an inventory path that does not exist: _targets says so
    stack = stack_path(target, stacks_dir)
    if stack is None:
        return None
    profiles = load_profiles(profiles_dir) if profiles_dir else load_profiles()
    plan = plan_paths([stack], profiles)[0]
    if plan.spec.kube is None:
        return None
    if profile is not None and profile != plan.spec.profile:
        raise InputError(
            "--profile",
            f"stack '{plan.stack}' plans profile '{plan.spec.profile}', not '{profile}'",
            "drop --profile: a stack's promise is its plan's",
        )
    return plan, profiles


@dataclass(frozen=True)
class CloudAccess:
    """How verify reaches a cloud stack's nodes: the ways in its ``pulumi up`` exported (read from
    the backend), host keys pinned from a known_hosts file, ``user`` replacing the exported login."""

    known_hosts: Path | None
    user: str | None
    project_dir: Path
    backend: str | None
    pulumi_root: Path | None


def stack_inventory(
    path: Path,
    profiles: dict[str, Profile],
    profile: str | None,
    identity: Identity | None,
    cloud: CloudAccess | None = None,
) -> tuple[Inventory, Profile, DedicatedHost | None, Platform, IdleProbe]:
    """A bare-metal stack's hosts (``fullserver:dedicated.hosts``, pinned host keys), its plan's
    profile and contract (``dedicated.host``), and the key read from ``--identity``; a cloud
    stack's nodes from its outputs (``cloud_inventory``); the platform whose minimums apply; and
    how its idle hosts are read and priced (a dedicated server at its monthly price, prorated).

    A bare-metal stack is read offline (the stack file and the catalog); a cloud stack's nodes come
    from its backend's outputs and the cloud's CLI. The key's text stays in memory; every message
    names the file, never its content."""
    plan = plan_paths([path], profiles)[0]
    spec, name = plan.spec, plan.stack
    if profile is not None and profile != spec.profile:
        raise InputError(
            "--profile",
            f"stack '{name}' plans profile '{spec.profile}', not '{profile}'",
            "drop --profile: a stack's promise is its plan's",
        )
    idle = idle_probe(idle_sentence(spec, plan.autostop), spec.dedicated.monthly_usd if spec.dedicated else None)
    if rules_for(spec.platform).supply.from_catalog:  # a cloud stack: its nodes are in its outputs
        key = _identity(identity, name)
        inv = cloud_inventory(name, spec.profile, key.text, cloud)
        return inv, get_profile(spec.profile, profiles), None, spec.platform, idle
    dedicated = spec.dedicated
    if dedicated is None or not dedicated.hosts:
        raise InputError(
            f"{path}: field 'fullserver:dedicated.hosts'",
            "no hosts listed",
            "list the servers with their pinned hostKeys (see docs/bare-metal.md)",
        )
    key = _identity(identity, name)
    hosts = [h.model_dump(by_alias=True, exclude_none=True) for h in dedicated.hosts]
    # relative knownHostsFile paths as the stack's program reads them: from the project directory
    inv = inventory_from_data(hosts, Path.cwd(), f"{path}: fullserver:dedicated.hosts", default_key=key.text)
    return inv, get_profile(spec.profile, profiles), dedicated.host, spec.platform, idle


@dataclass(frozen=True)
class Identity:
    """``--identity``: the private key's text and its passphrase, held in memory only (the repr,
    which a traceback or a log may print, names neither)."""

    path: Path
    text: str = field(repr=False)
    passphrase: str | None = field(default=None, repr=False)


def read_identity(path: Path, passphrase_env: str | None) -> Identity:
    """The key from ``--identity``; a protected key's passphrase from ``--identity-passphrase-env``
    or, on a terminal, asked for (never echoed). Checked here, before anything connects: a wrong
    passphrase is one line, not one failure per host."""
    where = f"--identity {path}"
    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(where, f"cannot read the private key: {exc.strerror}", "name a readable key file") from None
    except UnicodeDecodeError:
        raise InputError(where, "not a text file", "name an OpenSSH/PEM private key file") from None
    passphrase = None
    if passphrase_protected(text):
        if passphrase_env is not None:
            withhold_from_children(passphrase_env)  # not for the proxy commands and cloud CLIs verify starts
            passphrase = os.environ.get(passphrase_env)
            if passphrase is None:
                raise InputError(
                    f"--identity-passphrase-env {passphrase_env}", "no such environment variable", "export it first"
                )
        elif sys.stdin.isatty():
            passphrase = getpass.getpass(f"passphrase for {path}: ")
        else:
            raise InputError(
                where,
                "the key is passphrase-protected and there is no terminal to ask on",
                "put the passphrase in an environment variable and name it: --identity-passphrase-env VAR",
            )
    from fullserver.baremetal.ssh import load_private_key  # paramiko loads only when verify runs

    load_private_key(text, where, passphrase)
    return Identity(path, text, passphrase)


def _identity(identity: Identity | None, stack: str) -> Identity:
    """The stack's login key: only ``--identity`` can give it."""
    if identity is None:
        raise InputError(
            "--identity",
            f"stack '{stack}' logs in with a key verify cannot read from the stack (a Pulumi secret, or one"
            " installed from fullserver:sshPublicKeys)",
            "pass the private key's file: --identity ~/.ssh/KEY",
        )
    return identity


def cloud_inventory(stack: str, profile: str, key: str, cloud: CloudAccess | None) -> Inventory:
    """A cloud stack's nodes as an inventory, from its ``pulumi up`` outputs (``nodes``, the
    members of ``nodeGroups``; ``publicIps`` for stacks deployed before those existed): direct
    nodes at their public address, private ones through IAP or Session Manager, each logged into
    with the ``--identity`` key, host keys pinned from ``--known-hosts`` (never trusted on first use)."""
    if cloud is None or cloud.known_hosts is None:
        raise InputError(
            "--known-hosts",
            f"stack '{stack}' is a cloud stack: its nodes' host keys must be pinned",
            "pass a known_hosts file holding them (from the console's serial output or a first login you checked)",
        )
    if not cloud.known_hosts.is_file():
        raise InputError(f"--known-hosts {cloud.known_hosts}", "no such file", "name the known_hosts file")
    from stackops.outputs import read_stack_outputs  # Pulumi's Automation API loads only here
    from stackops.workspace import PulumiOptions

    outputs = read_stack_outputs(
        cloud.project_dir, stack, PulumiOptions(backend=cloud.backend, pulumi_root=cloud.pulumi_root)
    )
    nodes = stack_nodes(stack, outputs, cloud.user)
    if not nodes:
        raise InputError(
            f"stack '{stack}'",
            f"its outputs name no nodes (its way in: {outputs.get('connect') or 'none exported'})",
            "run `pulumi up` for it; a queued TPU slice lists its nodes once it is provisioned"
            f" (then `fullserver verify INVENTORY --profile {profile}` with their addresses)",
        )
    hosts = inventory_hosts(stack, nodes, str(cloud.known_hosts))
    return inventory_from_data(hosts, Path.cwd(), f"stack '{stack}' outputs", default_key=key)


def to_json(r: HostVerify) -> dict[str, object]:
    data = r.model_dump(mode="json", exclude={"lines"})
    data["ok"] = r.ok
    data["lines"] = [{**x.model_dump(mode="json"), "ratio": x.ratio, "ok": x.ok} for x in r.lines]
    return data


def _num(v: float | None, unit: str) -> str:
    return "n/a" if v is None else f"{round(v, 1):g} {unit}"


def host_table(r: HostVerify) -> FitTable:
    colour = {"delivers": "green", "short": "bold red", "unverified": "yellow", "error": "bold red"}[r.status]
    title = Text.assemble((r.name, "bold"), f" {r.address}  ", (r.status.upper(), colour))
    if r.error:
        failed = table("error", title=title)
        failed.add_row(Text(r.error))
        return failed
    t = table(
        "dimension",
        "promised",
        "delivered",
        "ratio",
        "",
        "detail",
        title=title,
        caption=Text(f"{r.gpus}; measured in {r.seconds:.1f}s"),
        narrow=[("dimension", ""), ("promised", "delivered", "ratio"), ("detail",)],
    )
    for x in r.lines:
        mark = (
            Text("n/a", style="dim")
            if x.ok is None
            else Text("ok", style="green")
            if x.ok
            else Text("SHORT", style="bold red")
        )
        t.add_row(
            x.dimension,
            _num(x.promised, x.unit),
            _num(x.delivered, x.unit),
            "n/a" if x.ratio is None else f"{x.ratio:.2f}",
            mark,
            Text(x.detail),
        )
    for p in r.problems:
        t.add_row("problem", "", "", "", Text("!", style="yellow"), Text(p))
    if r.idle is not None:
        t.add_row("idle", "", "", "", idle_mark(r.idle.idle), Text(r.idle.line()))
    return t
