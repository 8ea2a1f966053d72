"""Ephemeral stacks: create, ``up``, use, and always destroy and remove.

CI pipelines test ML code against a real environment before production, and nothing may be left
running afterwards. ``ephemeral_stack()`` is the Python API (usable from pytest), and
``run_ephemeral()`` is what ``fullserver ephemeral`` runs. A stack the process could not tear
down is tagged to expire, for ``fullserver janitor`` to destroy.

Design notes: docs/design/stackops.md.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from fullserver.clouds import readers_for
from fullserver.errors import EXIT_INPUT, EXIT_PULUMI, FullserverError, InputError
from fullserver.platforms.quota import QuotaNeed
from fullserver.quotacheck import NoCredentials, Reader, check_all, short_error
from fullserver.quotas import load_quota_table
from fullserver.stacks import cloud_project
from stackops.events import (
    CommandExited,
    CommandKilled,
    CommandNotStarted,
    CommandStarting,
    LeftBehind,
    Notify,
    QuotaCheckSkipped,
    QuotasChecked,
    RunFailed,
    RunInterrupted,
    StackCreating,
    TornDown,
    Updating,
    ignore,
    pulumi_lines,
)
from stackops.leftover import LeftoverStackError, leftover_report
from stackops.limits import (
    MAX_BACKOFF_S,
    MAX_GRACE_S,
    MAX_RETRIES,
    check_count,
    check_seconds,
    check_ttl,
    parse_ttl,
)
from stackops.naming import EXPIRES_FORMAT, TAG_BASE_STACK, TAG_EPHEMERAL, TAG_EXPIRES_AT, TAG_PROFILE, stack_name
from stackops.outputs import EphemeralEnv, check_output_names, shared_outputs, write_outputs_file
from stackops.signals import Interrupted, SignalGuard
from stackops.stackconfig import check_plan, choose_base, config_key, ephemeral_config
from stackops.teardown import destroy_and_remove
from stackops.workspace import (
    PulumiCLI,
    PulumiOptions,
    StackOpsError,
    error_line,
    make_workspace,
    set_secret_config,
)

WORK_DIR_PREFIX = "fullserver-ephemeral-"
"""Each run's workspace is ``<work_root>/fullserver-ephemeral-XXXX``."""


QuotaReaders = Callable[[list[QuotaNeed], str | None], dict[str, Reader]]
"""(the quotas a stack needs, its GCP project) -> a reader per cloud, on the caller's credentials."""


def account_readers(needs: list[QuotaNeed], gcp_project: str | None) -> dict[str, Reader]:
    return readers_for(needs, load_quota_table(), gcp_project)


class PulumiFailed(StackOpsError):
    """``stack init``, a tag or ``up`` failed; teardown still ran and nothing is left."""

    exit_code = EXIT_PULUMI


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
    max_backoff_s: float = MAX_BACKOFF_S
    pass_secret_outputs: Collection[str] = ()
    """Secret stack outputs to hand over in clear, by output name (``--secret-output NAME``):
    the only ones in ``EphemeralEnv.outputs`` and the command's environment. Never on disk."""
    work_root: Path | None = None
    """Where the run's workspace directory goes; ``None`` is the system temp dir (``TMPDIR``)."""
    notify: Notify = ignore
    """Where the run's events go as they happen (``stackops.events``); the command line prints
    them, a Python caller may collect them or log them; dropped by default."""
    pulumi_output: bool = True
    """Pass the Pulumi CLI's own lines (``up``, ``refresh``, ``destroy``) on as ``PulumiOutput`` events."""
    handle_signals: bool = True
    now: datetime | None = None
    quota_readers: QuotaReaders | None = account_readers
    """Reads the account's quotas before anything is created; ``None`` skips the check."""


def check_settings(s: EphemeralSettings) -> timedelta:
    """Every duration and count in range (one line naming the flag); returns the TTL."""
    ttl = check_ttl(s.ttl) if isinstance(s.ttl, timedelta) else parse_ttl(s.ttl)
    check_count("--retries", s.retries, 1, MAX_RETRIES, "attempts")
    check_seconds("--backoff", s.backoff_s, 0.0, MAX_BACKOFF_S)
    check_seconds("max_backoff_s", s.max_backoff_s, 0.0, MAX_BACKOFF_S)
    check_output_names(s.pass_secret_outputs)
    s.pulumi.check()
    if s.max_monthly_usd is not None and not s.max_monthly_usd >= 0:  # nan would pass every budget
        raise InputError("--max-monthly-usd", f"{s.max_monthly_usd:g} is not a budget", "use an amount of USD >= 0")
    return ttl


class EphemeralRun:
    """One stack's life: ``create()`` then ``teardown()``; the context manager wires them up."""

    def __init__(self, s: EphemeralSettings) -> None:
        self.s = s
        self.ttl = check_settings(s)
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
        self.quota_skipped: str | None = None
        """Why the quotas could not be read: said once ``up`` goes on without them, never before
        an error that stops the run first (a missing Pulumi CLI, a failed stack init)."""
        self.up_started = False
        self.up_finished = False

    # -- create -------------------------------------------------------------------------------

    def check_quotas(self) -> None:
        """Each quota the stack needs against the account, before anything exists: a short one
        stops the run in seconds with the quota named (``QuotaShort``, exit 4) instead of failing
        half-way through ``up``. Without credentials to read them, it goes on, and says so when
        ``up`` starts (``quota_skipped``)."""
        readers, needs = self.s.quota_readers, self.plan.quotas
        if readers is None or not needs:
            return
        try:
            found = readers(needs, cloud_project(self.plan.spec.platform, self.config, os.environ))
        except NoCredentials as exc:
            self.quota_skipped = exc.line()
            return
        checked = check_all(needs, found)
        short = short_error(self.where, checked)
        if short is not None:
            raise short
        self.s.notify(QuotasChecked(len(checked)))

    def create(self, guard: SignalGuard) -> EphemeralEnv:
        s, notify = self.s, self.s.notify
        self.check_quotas()
        guard.mode = "defer"
        if s.work_root is not None:
            s.work_root.mkdir(parents=True, exist_ok=True)
        self.work_dir = Path(tempfile.mkdtemp(prefix=WORK_DIR_PREFIX, dir=s.work_root))
        self.ws = make_workspace(s.project_dir, self.work_dir, s.pulumi)
        if isinstance(self.ws.pulumi_command, PulumiCLI):
            guard.watch(self.ws.pulumi_command)
        stack_file = self.work_dir / f"Pulumi.{self.name}.yaml"
        stack_file.write_text(yaml.safe_dump({"config": self.config}, sort_keys=True))
        spec, cost = self.plan.spec, self.plan.cost
        notify(
            StackCreating(
                stack=self.name,
                base=self.base.name,
                offer=spec.offer,
                region=spec.region,
                usd_per_hour=cost.compute_usd_hour,
                expires_at=self.expires_at,
                backend=s.pulumi.describe_backend(),
            )
        )
        guard.checkpoint()
        self.attempted = True  # from here on the stack may exist: teardown must look for it
        try:
            stack = self._init_stack(guard)
            # Tags first, before any other CLI call: from the first one on, the janitor can find the
            # stack (ephemeral first: a stack with it but no expiry is listed, never silently lost).
            tags = {
                TAG_EPHEMERAL: "true",
                TAG_EXPIRES_AT: self.expires_at.strftime(EXPIRES_FORMAT),
                TAG_BASE_STACK: self.base.name,
                TAG_PROFILE: str(self.config.get(config_key("profile"), "")),
            }
            for key, value in tags.items():
                self.ws.set_tag(self.name, key, value)
            for key, value in s.secrets.items():
                set_secret_config(self.ws, self.name, config_key(key), value)
            guard.checkpoint()
            if self.quota_skipped is not None:
                notify(QuotaCheckSkipped(self.quota_skipped))
            notify(Updating(self.name))
            self.up_started = True
            result = stack.up(
                on_output=pulumi_lines(notify, s.pulumi_output), message=f"fullserver ephemeral from {self.base.name}"
            )
            self.up_finished = True
        except auto.errors.CommandError as exc:
            guard.checkpoint()  # a cancelled `up` fails too: report the signal, not the failure
            raise PulumiFailed(f"stack '{self.name}'", f"pulumi failed: {error_line(exc)}") from None
        guard.checkpoint()
        secret_names = frozenset(k for k, v in result.outputs.items() if v.secret)
        outputs = shared_outputs(result.outputs, s.pass_secret_outputs, self.where)
        outputs_file = self.work_dir / "outputs.json"
        write_outputs_file(outputs_file, outputs, secret_names)
        return EphemeralEnv(
            stack=self.name,
            backend=s.pulumi.describe_backend(),
            expires_at=self.expires_at,
            outputs=outputs,
            secret_outputs=secret_names,
            outputs_file=outputs_file,
            plan=self.plan,
            work_dir=self.work_dir,
            passed_secrets=secret_names & frozenset(s.pass_secret_outputs),
        )

    def _init_stack(self, guard: SignalGuard) -> auto.Stack:
        """``pulumi stack init``; when the CLI answers that it failed, no stack exists to look for.

        Why: teardown looked for the stack anyway, and where the backend itself was at fault every
        look failed too, so a stack never created was reported "NOT cleaned up" (exit 7) after
        four destroys. An interrupted init is still looked for (``guard.checkpoint`` first)."""
        assert self.ws is not None
        try:
            return auto.Stack.create(self.name, self.ws)
        except auto.errors.CommandError as exc:
            guard.checkpoint()
            self.attempted = False
            raise PulumiFailed(
                f"stack '{self.name}'",
                f"pulumi stack init failed, so nothing was created: {error_line(exc)}",
                f"check --backend ({self.s.pulumi.describe_backend()}) and that you are logged in to it",
            ) from None

    # -- teardown -----------------------------------------------------------------------------

    def teardown(self) -> None:
        """Destroy then remove, each retried; raise ``LeftoverStackError`` naming what is left."""
        s = self.s
        if not self.attempted or self.ws is None:
            self._drop_work_dir()
            return
        t = destroy_and_remove(
            self.ws,
            self.name,
            retries=s.retries,
            backoff_s=s.backoff_s,
            max_backoff_s=s.max_backoff_s,
            notify=s.notify,
            by="ephemeral",
            pulumi_output=s.pulumi_output,
            refresh=self.up_started and not self.up_finished,
        )
        if t.removed:
            s.notify(TornDown(self.name))
            self._drop_work_dir()
            return
        if self.work_dir:  # kept for the cleanup command, which needs only the config files
            (self.work_dir / "outputs.json").unlink(missing_ok=True)
        report = leftover_report(
            self.name,
            pulumi=s.pulumi,
            work_dir=self.work_dir,
            retries=s.retries,
            expires_at=self.expires_at,
            destroyed=t.destroyed,
            last=t.last_error,
            pending=t.pending,
        )
        raise LeftoverStackError(self.name, report)

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
    ``retries``, ``backoff_s``, ``pass_secret_outputs``, ``work_root``...). Raises
    ``LeftoverStackError`` if teardown fails, after the retries; SIGINT/SIGTERM in the body raise
    ``Interrupted`` after teardown.
    """
    settings = EphemeralSettings(profile=profile, ttl=ttl, base_stack=base_stack, **options)
    with _ephemeral(settings, SignalGuard(settings.handle_signals, settings.notify)) as env:
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
        guard.notify(CommandNotStarted(argv[0], str(exc.strerror)))
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
                    guard.notify(CommandKilled(grace_s))
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        proc.kill()
                    deadline = float("inf")
    finally:
        guard.child = None
    return 128 - code if code < 0 else code


def run_ephemeral(command: Sequence[str], settings: EphemeralSettings, grace_s: float = 30.0) -> int:
    """``fullserver ephemeral -- <command>``: the exit code is the command's, unless interrupted
    (128 + signal), the stack could not be created (2 input, 3 budget, 4 quota, 6 Pulumi) or something
    was left behind (``EXIT_LEFT_BEHIND``, 7, with a ``LeftBehind`` event saying what). Every
    outcome is an event to ``settings.notify``; nothing is raised for them."""
    notify = settings.notify
    if not command:
        notify(RunFailed("ephemeral: no command given (usage: fullserver ephemeral [options] -- <command> [args...])"))
        return EXIT_INPUT
    code = 0
    guard = SignalGuard(settings.handle_signals, notify)
    try:
        check_seconds("--grace", grace_s, 0.0, MAX_GRACE_S)
        with _ephemeral(settings, guard) as env:
            notify(CommandStarting(tuple(command)))
            code = run_command(command, env.environ(), guard, grace_s)
            notify(CommandExited(code))
            guard.checkpoint()
    except Interrupted as exc:
        notify(RunInterrupted(signal.Signals(exc.signum).name))
        return exc.exit_code
    except LeftoverStackError as exc:
        notify(LeftBehind(tuple(exc.report), code))
        return exc.exit_code
    except FullserverError as exc:
        notify(RunFailed(exc.line()))
        return exc.exit_code
    return code


__all__ = [
    "EphemeralEnv",
    "EphemeralSettings",
    "Interrupted",
    "LeftoverStackError",
    "PulumiFailed",
    "PulumiOptions",
    "ephemeral_stack",
    "parse_ttl",
    "run_ephemeral",
]
