"""Ephemeral stacks: create, ``up``, use, and always destroy and remove.

CI pipelines test ML code against a real environment before production, and nothing may be left
running afterwards. ``ephemeral_stack()`` is the Python API (usable from pytest)::

    with ephemeral_stack(profile="experimentation", ttl="2h", base_stack="exp-aws-spot") as env:
        ssh(env.outputs["connect"])

and ``run_ephemeral()`` is what ``fullserver ephemeral [--profile P] [--stack BASE] [--ttl 2h] --
<command>`` runs: the command gets the stack outputs in its environment.

The stack is uniquely named (``<prefix>-<UTC time>-<random>``), its config is copied from a base
stack file under ``stacks/`` with ``fullserver:ttlHours`` set (so every cloud label carries the
TTL), and right after ``stack init``, before any other CLI call, it is tagged
``fullserver:ephemeral=true`` and ``fullserver:expires-at=<ISO UTC>``, so that if this process dies
(SIGKILL, a lost runner) ``fullserver janitor`` still finds and destroys it once it has expired.
Secret config is set after the tags, through stdin (``set_secret_config``), never on argv.

Teardown runs on success, on failure, on Ctrl-C (SIGINT) and on SIGTERM. A signal during a Pulumi
operation makes the CLI cancel with exactly one SIGINT, however many signals arrive (a second would
make it terminate at once and leave pending operations); after an interrupted or failed ``up``,
``pulumi refresh`` runs before ``destroy``. During teardown signals are noted and do not interrupt
it: the CLI runs in its own session, so a terminal's Ctrl-C does not reach it either. A failed
destroy is retried with bounded exponential backoff; if it still fails, or the state still lists
pending operations, ``LeftoverStackError`` says exactly what is left (stack, backend, the
directory holding its config) and the command that cleans it up, with exit code 5.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any, Literal

import yaml
from pulumi import automation as auto

from fullserver.catalog import load_catalog
from fullserver.errors import FullserverError, InputError
from fullserver.plan import StackPlan, check_budget, plan_workload
from fullserver.profiles import get_profile, load_profiles
from fullserver.workload import CONFIG_NAMESPACE, workload_from_config
from fullserver.yamlio import read_yaml
from stackops import EXIT_LEFTOVER
from stackops.workspace import (
    PulumiCLI,
    PulumiOptions,
    Say,
    StackOpsError,
    destroy_and_remove,
    error_line,
    make_workspace,
    say_stderr,
    set_secret_config,
)

TAG_EPHEMERAL = "fullserver:ephemeral"
TAG_EXPIRES_AT = "fullserver:expires-at"
TAG_BASE_STACK = "fullserver:base-stack"
TAG_PROFILE = "fullserver:profile"
EXIT_PULUMI = 6
"""A Pulumi operation (init, tag, up) failed; the stack was torn down, nothing is left."""
EXPIRES_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

_TTL_PART = re.compile(r"(\d+(?:\.\d+)?)([dhms])")
_PREFIX = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}

# --------------------------------------------------------------------------------------------
# Pure helpers: TTL, names, config


def parse_ttl(text: str) -> timedelta:
    """``2h``, ``90m``, ``1h30m``, ``1d``; a bare number is hours (as ``ttlHours`` is)."""
    s = text.strip().lower()
    try:
        hours = float(s)
    except ValueError:
        pass
    else:
        if hours <= 0 or not math.isfinite(hours):
            raise InputError("--ttl", f"'{text}' is not a positive duration", "e.g. 2h, 90m, 1h30m")
        return timedelta(hours=hours)
    pos, seconds = 0, 0.0
    for m in _TTL_PART.finditer(s):
        if m.start() != pos:
            break
        seconds += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or seconds <= 0:
        raise InputError("--ttl", f"'{text}' is not a duration", "use e.g. 2h, 90m, 1h30m or 1d")
    return timedelta(seconds=seconds)


def stack_name(prefix: str, now: datetime) -> str:
    """Unique and sortable: ``ci-20260101-120000-3fa9c2`` (Pulumi allows 100 chars of ``[A-Za-z0-9-_.]``)."""
    if not _PREFIX.match(prefix):
        raise InputError(
            "--prefix", f"'{prefix}' is not a valid stack name prefix", "use lowercase letters, digits and '-'"
        )
    return f"{prefix}-{now.astimezone(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _key(name: str) -> str:
    return name if ":" in name else f"{CONFIG_NAMESPACE}:{name}"


def output_env_name(key: str) -> str:
    """``privateIps`` -> ``FULLSERVER_OUTPUT_PRIVATE_IPS``: what a shell script can read."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)
    return "FULLSERVER_OUTPUT_" + re.sub(r"[^A-Za-z0-9]+", "_", snake).strip("_").upper()


def env_text(value: Any) -> str:
    """Strings as they are, everything else as JSON (lists of IPs, cost objects)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


@dataclass(frozen=True)
class BaseStack:
    name: str
    path: Path
    config: dict[str, Any]


def choose_base(stacks_dir: Path, profile: str | None, base_stack: str | None) -> BaseStack:
    """The named base stack, else the first stack file (by name) whose profile is ``profile``."""
    if base_stack:
        path = Path(base_stack) if base_stack.endswith(".yaml") else stacks_dir / f"Pulumi.{base_stack}.yaml"
        if not path.is_file():
            known = ", ".join(p.name[len("Pulumi.") : -len(".yaml")] for p in sorted(stacks_dir.glob("Pulumi.*.yaml")))
            raise InputError(f"--stack {base_stack}", f"no file {path}", f"known stacks: {known or 'none'}")
        return BaseStack(path.name[len("Pulumi.") : -len(".yaml")], path, _config_of(path))
    if not profile:
        raise InputError("ephemeral", "no base stack and no profile", "pass --stack <base> or --profile <name>")
    for path in sorted(stacks_dir.glob("Pulumi.*.yaml")):
        config = _config_of(path)
        if config.get(_key("profile")) == profile:
            return BaseStack(path.name[len("Pulumi.") : -len(".yaml")], path, config)
    raise InputError(
        f"--profile {profile}", f"no stack under {stacks_dir} uses this profile", "pass --stack <base> to name one"
    )


def _config_of(path: Path) -> dict[str, Any]:
    config = read_yaml(path).get("config", {})
    if not isinstance(config, dict):
        raise InputError(f"{path}: field 'config'", "expected a mapping of keys to values")
    return {str(k): v for k, v in config.items()}


def ephemeral_config(
    base: BaseStack, *, profile: str | None, ttl: timedelta, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """The base stack's config with the profile, ``ttlHours`` (whole hours, rounded up: the
    project declares it an integer) and the caller's overrides applied."""
    config: dict[str, Any] = {}
    for key, value in base.config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            raise InputError(
                f"{base.path}: {key}",
                "is a secret encrypted for the base stack and cannot be copied",
                "pass it to the ephemeral stack with secrets={...} instead",
            )
        config[key] = value
    for key, value in overrides.items():
        config[_key(key)] = value
    if profile:
        config[_key("profile")] = profile
    config[_key("ttlHours")] = max(1, math.ceil(ttl.total_seconds() / 3600 - 1e-9))
    return config


def check_plan(
    name: str, where: str, config: dict[str, Any], ttl: timedelta, max_monthly_usd: float | None
) -> StackPlan:
    """Plan offline before creating anything: bad config or a blown budget costs nothing."""
    workload = workload_from_config(config, where)
    profiles = load_profiles()
    profile = get_profile(workload.profile, profiles)
    life = profile.lifecycle
    if life.mode != "ephemeral" or life.ttl_hours is None:
        raise InputError(
            f"profile '{profile.name}'",
            "is persistent" + (" and protected" if life.protect else "") + "; an ephemeral stack would be left running",
            "use an ephemeral profile: "
            + ", ".join(sorted(p.name for p in profiles.values() if p.lifecycle.mode == "ephemeral")),
        )
    if ttl > timedelta(hours=life.ttl_hours):
        raise InputError(
            "--ttl", f"{ttl} exceeds profile '{profile.name}''s TTL of {life.ttl_hours:g} h", "ask for less"
        )
    plan = plan_workload(name, where, workload, profiles, load_catalog())
    check_budget([plan], max_monthly_usd)
    return plan


# --------------------------------------------------------------------------------------------
# Signals


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; a BaseException like KeyboardInterrupt so ``except Exception``
    in user code cannot swallow it and skip the teardown."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


Mode = Literal["raise", "defer", "shield"]


class SignalGuard:
    """Turns SIGINT/SIGTERM into a teardown instead of a dead process.

    ``defer`` while Pulumi commands run: note the signal and ask the running CLI to cancel with
    one SIGINT (its graceful cancel: in-flight operations finish and the state is saved), then
    raise once it returns. Exactly one interrupt is ever forwarded to Pulumi, whichever signals
    arrive and however many: the CLI treats a second one as "terminate now" and leaves pending
    operations behind. The CLI runs in its own session (``PulumiCLI``), so a terminal's Ctrl-C
    reaches only us. ``raise`` in the caller's code. ``shield`` during teardown: note and carry
    on, forwarding nothing. While a command started by ``run_command`` runs, signals are
    forwarded to its process group instead.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, enabled: bool = True, say: Say = say_stderr) -> None:
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.mode: Mode = "raise"
        self.pending: int | None = None
        self.child: subprocess.Popen[bytes] | None = None
        self.cli: PulumiCLI | None = None
        self.forwarded = False
        """The one SIGINT has gone to a Pulumi CLI: no other will."""
        self.say = say
        self._old: dict[int, Any] = {}

    def watch(self, cli: PulumiCLI) -> None:
        """Forward to this CLI's processes; one started just after a signal still gets its SIGINT."""
        self.cli = cli
        cli.on_start = self._cli_started

    def __enter__(self) -> SignalGuard:
        if self.enabled:
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.pending is None:
            self.pending = signum
        if self.mode == "shield":
            self.say(f"fullserver ephemeral: {name} received; teardown is running and will finish first")
            return
        child = self.child
        if child is not None and child.poll() is None:
            self.say(f"fullserver ephemeral: {name} received; passing it to the command, then tearing down")
            with suppress(OSError):
                os.killpg(child.pid, signum)
            return
        if self.mode == "defer":
            if self._interrupt_pulumi():
                self.say(f"fullserver ephemeral: {name} received; cancelling the Pulumi operation, then tearing down")
            elif self.forwarded:
                self.say(
                    f"fullserver ephemeral: {name} received; the Pulumi operation is already cancelling (another "
                    "interrupt would abort it and leave pending operations), then tearing down"
                )
            else:
                self.say(f"fullserver ephemeral: {name} received; cancelling, then tearing down")
            return
        raise Interrupted(signum)

    def _interrupt_pulumi(self) -> bool:
        """SIGINT to the running CLI, once per run; ``False`` when none runs or one was sent."""
        proc = self.cli.process if self.cli is not None else None
        if self.forwarded or proc is None or proc.poll() is not None:
            return False
        self.forwarded = True
        with suppress(OSError):
            os.kill(proc.pid, signal.SIGINT)
        return True

    def _cli_started(self, proc: subprocess.Popen[str]) -> None:
        if self.mode == "defer" and self.pending is not None:
            self._interrupt_pulumi()

    def checkpoint(self) -> None:
        if self.pending is not None and self.mode != "shield":
            raise Interrupted(self.pending)


# --------------------------------------------------------------------------------------------
# The stack


class PulumiFailed(StackOpsError):
    """``stack init``, a tag or ``up`` failed; teardown still ran."""

    exit_code = EXIT_PULUMI


class LeftoverStackError(StackOpsError):
    """Teardown failed after every retry: something is left and a person must act."""

    exit_code = EXIT_LEFTOVER

    def __init__(self, stack: str, report: list[str]) -> None:
        self.stack = stack
        self.report = report
        super().__init__(f"stack '{stack}'", "was not cleaned up", report[0] if report else "")


@dataclass
class EphemeralEnv:
    """What the caller gets inside ``with``: the stack, its outputs and how to pass them on."""

    stack: str
    backend: str
    expires_at: datetime
    outputs: dict[str, Any]
    secret_outputs: frozenset[str]
    outputs_file: Path
    plan: StackPlan
    work_dir: Path

    def environ(self) -> dict[str, str]:
        """``FULLSERVER_OUTPUT_<NAME>`` per output plus the stack, expiry and the JSON file path."""
        env = {
            "FULLSERVER_STACK": self.stack,
            "FULLSERVER_EXPIRES_AT": self.expires_at.strftime(EXPIRES_FORMAT),
            "FULLSERVER_OUTPUTS_FILE": str(self.outputs_file),
        }
        for key, value in self.outputs.items():
            env[output_env_name(key)] = env_text(value)
        return env


@dataclass
class EphemeralSettings:
    """Everything that shapes one ephemeral run (the keyword arguments of ``ephemeral_stack``)."""

    profile: str | None = None
    ttl: str | timedelta = "2h"
    base_stack: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    prefix: str = "ci"
    stacks_dir: Path = Path("stacks")
    project_dir: Path = Path(".")
    max_monthly_usd: float | None = None
    pulumi: PulumiOptions = field(default_factory=PulumiOptions)
    retries: int = 4
    backoff_s: float = 5.0
    max_backoff_s: float = 60.0
    say: Say = say_stderr
    on_output: Say | None = say_stderr
    handle_signals: bool = True
    now: datetime | None = None


class EphemeralRun:
    """One stack's life: ``create()`` then ``teardown()``; the context manager wires them up."""

    def __init__(self, s: EphemeralSettings) -> None:
        self.s = s
        self.ttl = s.ttl if isinstance(s.ttl, timedelta) else parse_ttl(s.ttl)
        if s.retries < 1:
            raise InputError("retries", "must be at least 1")
        now = (s.now or datetime.now(UTC)).astimezone(UTC)
        self.name = stack_name(s.prefix, now)
        self.expires_at = (now + self.ttl).replace(microsecond=0)
        self.base = choose_base(s.stacks_dir, s.profile, s.base_stack)
        self.config = ephemeral_config(self.base, profile=s.profile, ttl=self.ttl, overrides=s.config)
        self.where = f"ephemeral stack '{self.name}' (from {self.base.path})"
        self.plan = check_plan(self.name, self.where, self.config, self.ttl, s.max_monthly_usd)
        self.work_dir: Path | None = None
        self.ws: auto.LocalWorkspace | None = None
        self.attempted = False
        self.up_started = False
        self.up_finished = False

    # -- create -------------------------------------------------------------------------------

    def create(self, guard: SignalGuard) -> EphemeralEnv:
        s, say = self.s, self.s.say
        guard.mode = "defer"
        self.work_dir = Path(tempfile.mkdtemp(prefix="fullserver-ephemeral-"))
        self.ws = make_workspace(s.project_dir, self.work_dir, s.pulumi)
        if isinstance(self.ws.pulumi_command, PulumiCLI):
            guard.watch(self.ws.pulumi_command)
        stack_file = self.work_dir / f"Pulumi.{self.name}.yaml"
        stack_file.write_text(yaml.safe_dump({"config": self.config}, sort_keys=True))
        spec, cost = self.plan.spec, self.plan.cost
        say(
            f"fullserver ephemeral: stack {self.name} from {self.base.name}: {spec.offer} in {spec.region}, "
            f"~${cost.usd_hour:,.2f}/h, expires {self.expires_at.strftime(EXPIRES_FORMAT)}, backend "
            f"{s.pulumi.describe_backend()}"
        )
        guard.checkpoint()
        self.attempted = True  # from here on the stack may exist: teardown must look for it
        try:
            stack = auto.Stack.create(self.name, self.ws)
            # Tags first, before any other CLI call: from the first one on, the janitor can find the
            # stack (ephemeral first: a stack with it but no expiry is listed, never silently lost).
            tags = {
                TAG_EPHEMERAL: "true",
                TAG_EXPIRES_AT: self.expires_at.strftime(EXPIRES_FORMAT),
                TAG_BASE_STACK: self.base.name,
                TAG_PROFILE: str(self.config.get(_key("profile"), "")),
            }
            for key, value in tags.items():
                self.ws.set_tag(self.name, key, value)
            for key, value in s.secrets.items():
                set_secret_config(self.ws, self.name, _key(key), value)
            guard.checkpoint()
            say(f"fullserver ephemeral: pulumi up {self.name}")
            self.up_started = True
            result = stack.up(on_output=s.on_output, message=f"fullserver ephemeral from {self.base.name}")
            self.up_finished = True
        except auto.errors.CommandError as exc:
            guard.checkpoint()  # a cancelled `up` fails too: report the signal, not the failure
            raise PulumiFailed(f"stack '{self.name}'", f"pulumi failed: {error_line(exc)}") from None
        guard.checkpoint()
        outputs = {k: v.value for k, v in result.outputs.items()}
        outputs_file = self.work_dir / "outputs.json"
        fd = os.open(outputs_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(outputs, fh, indent=2, sort_keys=True)
        return EphemeralEnv(
            stack=self.name,
            backend=s.pulumi.describe_backend(),
            expires_at=self.expires_at,
            outputs=outputs,
            secret_outputs=frozenset(k for k, v in result.outputs.items() if v.secret),
            outputs_file=outputs_file,
            plan=self.plan,
            work_dir=self.work_dir,
        )

    # -- teardown -----------------------------------------------------------------------------

    def teardown(self) -> None:
        """Destroy then remove, each retried; raise ``LeftoverStackError`` naming what is left."""
        s, say = self.s, self.s.say
        if not self.attempted or self.ws is None:
            self._drop_work_dir()
            return
        t = destroy_and_remove(
            self.ws,
            self.name,
            retries=s.retries,
            backoff_s=s.backoff_s,
            max_backoff_s=s.max_backoff_s,
            say=say,
            on_output=s.on_output,
            who="fullserver ephemeral",
            refresh=self.up_started and not self.up_finished,
        )
        if t.removed:
            say(f"fullserver ephemeral: {self.name} destroyed and removed")
            self._drop_work_dir()
            return
        raise LeftoverStackError(self.name, self._leftover_report(t.destroyed, t.last_error, t.pending))

    def _leftover_report(self, destroyed: bool, last: str, pending: Sequence[str] = ()) -> list[str]:
        p = self.s.pulumi
        cwd = f" --cwd {self.work_dir}" if self.work_dir else ""
        if self.work_dir:
            (self.work_dir / "outputs.json").unlink(missing_ok=True)  # may hold secrets
        if pending:
            return [
                f"stack '{self.name}' was NOT removed: {last}",
                "  left behind: operations a Pulumi CLI started and never finished; a pending create is a cloud "
                "resource the state has no id for, so destroy could not delete it",
                f"  backend:     {p.describe_backend()}",
                f"  config:      {self.work_dir} (Pulumi.yaml and Pulumi.{self.name}.yaml, kept for the cleanup)",
                "  clean up:    find each resource in the cloud console (it carries the fullserver labels), then "
                f"{p.env_prefix()}pulumi refresh --stack {self.name}{cwd} interactively (import the ones that "
                f"exist, clear the others), then {p.env_prefix()}pulumi destroy --yes --remove --stack {self.name}{cwd}",
            ]
        if destroyed:
            what = "the empty stack record (its resources were destroyed)"
            cmd = f"{p.env_prefix()}pulumi stack rm --yes {self.name}{cwd}"
        else:
            what = "the stack and possibly running cloud resources"
            cmd = f"{p.env_prefix()}pulumi destroy --yes --remove --stack {self.name}{cwd}"
        backend_flag = f" --backend {p.backend}" if p.backend else ""
        return [
            f"stack '{self.name}' was NOT cleaned up after {self.s.retries} attempt(s); last error: {last}",
            f"  left behind: {what}",
            f"  backend:     {p.describe_backend()}",
            f"  config:      {self.work_dir} (Pulumi.yaml and Pulumi.{self.name}.yaml, kept for the cleanup)",
            f"  clean up:    {cmd}",
            f"  or:          fullserver janitor{backend_flag} --destroy   (tagged {TAG_EPHEMERAL}=true, "
            f"{TAG_EXPIRES_AT}={self.expires_at.strftime(EXPIRES_FORMAT)})",
        ]

    def _drop_work_dir(self) -> None:
        if self.work_dir is not None:
            shutil.rmtree(self.work_dir, ignore_errors=True)


@contextmanager
def ephemeral_stack(
    profile: str | None = None,
    ttl: str | timedelta = "2h",
    base_stack: str | None = None,
    **options: Any,
) -> Iterator[EphemeralEnv]:
    """Create, ``up`` and yield an ephemeral stack; always destroy and remove it on the way out.

    Keyword options are the fields of ``EphemeralSettings`` (``config``, ``secrets``, ``prefix``,
    ``stacks_dir``, ``project_dir``, ``pulumi=PulumiOptions(backend=..., pulumi_root=...)``,
    ``retries``, ``backoff_s``...). Raises ``LeftoverStackError`` if teardown fails, after the
    retries; SIGINT/SIGTERM in the body raise ``Interrupted`` after teardown.
    """
    settings = EphemeralSettings(profile=profile, ttl=ttl, base_stack=base_stack, **options)
    with _ephemeral(settings, SignalGuard(settings.handle_signals, settings.say)) as env:
        yield env


@contextmanager
def _ephemeral(settings: EphemeralSettings, guard: SignalGuard) -> Iterator[EphemeralEnv]:
    run = EphemeralRun(settings)  # validates and plans offline: nothing exists yet
    with guard:
        try:
            env = run.create(guard)
            guard.mode = "raise"
            guard.checkpoint()
            yield env
        except BaseException:
            guard.mode = "shield"
            run.teardown()
            raise
        guard.mode = "shield"
        run.teardown()
        if guard.pending is not None:
            raise Interrupted(guard.pending)


# --------------------------------------------------------------------------------------------
# The command line behind `fullserver ephemeral`


def run_command(argv: Sequence[str], env: Mapping[str, str], guard: SignalGuard, grace_s: float) -> int:
    """Run the user's command in its own process group (so one Ctrl-C reaches it once, through
    us); on a signal it gets ``grace_s`` seconds to exit before SIGKILL. Returns a shell-style code."""
    try:
        proc = subprocess.Popen(list(argv), env={**os.environ, **env}, stdin=subprocess.DEVNULL, process_group=0)
    except OSError as exc:
        guard.say(f"fullserver ephemeral: cannot run {argv[0]!r}: {exc.strerror}")
        return 127
    guard.child = proc
    deadline: float | None = None
    try:
        while True:
            try:
                code = proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if guard.pending is not None and deadline is None:
                    deadline = time.monotonic() + grace_s
                if deadline is not None and time.monotonic() > deadline:
                    guard.say(f"fullserver ephemeral: command still running after {grace_s:g} s; killing it")
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        proc.kill()
                    deadline = math.inf
    finally:
        guard.child = None
    return 128 - code if code < 0 else code


def run_ephemeral(command: Sequence[str], settings: EphemeralSettings, grace_s: float = 30.0) -> int:
    """``fullserver ephemeral -- <command>``: the exit code is the command's, unless interrupted
    (128 + signal), the stack could not be created (2 input, 3 budget, 6 Pulumi) or something
    was left behind (5, with the report on stderr)."""
    say = settings.say
    if not command:
        say("error: ephemeral: no command given (usage: fullserver ephemeral [options] -- <command> [args...])")
        return 2
    code = 0
    guard = SignalGuard(settings.handle_signals, say)
    try:
        with _ephemeral(settings, guard) as env:
            say(f"fullserver ephemeral: running {' '.join(command)}")
            code = run_command(command, env.environ(), guard, grace_s)
            say(f"fullserver ephemeral: command exited with {code}")
            guard.checkpoint()
    except Interrupted as exc:
        say(f"fullserver ephemeral: {exc}; the stack was torn down")
        return exc.exit_code
    except LeftoverStackError as exc:
        for line in exc.report:
            say(("error: " if line is exc.report[0] else "") + line)
        if code:
            say(f"(the command itself exited with {code})")
        return exc.exit_code
    except FullserverError as exc:
        say(f"error: {exc.line()}")
        return exc.exit_code
    return code


__all__ = [
    "EXIT_LEFTOVER",
    "EphemeralEnv",
    "EphemeralSettings",
    "Interrupted",
    "LeftoverStackError",
    "PulumiOptions",
    "ephemeral_stack",
    "parse_ttl",
    "run_ephemeral",
]
