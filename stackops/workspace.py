"""One Automation API workspace per run, in a private directory, for this project's program.

Why a private directory instead of the repository root: the project keeps its stack files in
``stacks/`` (``stackConfigDir``), and ``fullserver plan`` plans every file there. An ephemeral
stack's config must not appear in that directory, not even while it runs, and must not be left
behind by a crash. So each run writes a copy of ``Pulumi.yaml`` into a temporary directory, with
``main`` pointing back at the project (Pulumi accepts an absolute ``main``; the Automation API
itself sets one for inline programs) and the virtualenv made absolute, and keeps the stack's
config file next to it.

The ``pulumi`` executable is whatever the Automation API finds: ``$PATH`` by default, or
``<root>/bin/pulumi`` when ``pulumi_root`` is given (``PulumiCommand(root=...)``, which also puts
that directory first on ``PATH`` for the plugins next to it). ``PULUMI_HOME`` only moves the
CLI's own state (plugins, credentials), never the executable.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from fullserver.errors import FullserverError, InputError
from fullserver.yamlio import read_yaml


class StackOpsError(FullserverError):
    """A Pulumi operation failed in a way a person must act on (exit code 2 unless a subclass says)."""


@dataclass(frozen=True)
class PulumiOptions:
    """Where state lives and which CLI runs: the same for the ephemeral runner and the janitor."""

    backend: str | None = None
    """State backend URL (``file://...``, ``s3://...``, ``https://api.pulumi.com``); passed as
    ``PULUMI_BACKEND_URL``, which overrides both ``pulumi login`` and ``backend.url`` in Pulumi.yaml.
    ``None`` uses whatever the environment already selects."""
    pulumi_root: Path | None = None
    """Directory whose ``bin/pulumi`` to run; ``None`` runs ``pulumi`` from ``PATH``."""
    pulumi_home: Path | None = None
    secrets_provider: str | None = None
    """``--secrets-provider`` for new stacks (e.g. ``passphrase``, ``awskms://...``)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for every CLI call (never logged by fullserver)."""

    def describe_backend(self) -> str:
        """The backend in words, for reports that tell a person where to look."""
        url = self.backend or os.environ.get("PULUMI_BACKEND_URL")
        return url or "the backend the Pulumi CLI is logged in to (`pulumi whoami -v`)"

    def env_prefix(self) -> str:
        """The shell prefix that selects the same backend, for copy-paste cleanup commands."""
        url = self.backend or os.environ.get("PULUMI_BACKEND_URL")
        return f"PULUMI_BACKEND_URL={url} " if url else ""

    def env_vars(self) -> dict[str, str]:
        out = {"PULUMI_SKIP_UPDATE_CHECK": "true", **self.env}
        if self.backend:
            out["PULUMI_BACKEND_URL"] = self.backend
        return out


def pulumi_command(opts: PulumiOptions) -> auto.PulumiCommand:
    """The CLI, version-checked by the Automation API; a missing CLI is one clear line, not a traceback."""
    root = str(opts.pulumi_root) if opts.pulumi_root else None
    where = f"{opts.pulumi_root}/bin/pulumi" if root else "pulumi on PATH"
    try:
        return auto.PulumiCommand(root=root)
    except FileNotFoundError:
        raise StackOpsError(
            where,
            "the Pulumi CLI was not found",
            "install it from https://www.pulumi.com/docs/install/ or pass --pulumi-root",
        ) from None
    except auto.errors.InvalidVersionError as exc:
        raise StackOpsError(where, str(exc)) from None
    except OSError as exc:
        raise StackOpsError(where, f"cannot run the Pulumi CLI: {exc}") from None


def project_settings(project_dir: Path) -> dict[str, Any]:
    """The project's Pulumi.yaml, rewritten to run from another directory."""
    path = project_dir / "Pulumi.yaml"
    if not path.is_file():
        raise InputError(str(path), "no Pulumi project file", "run from the repository root or pass --project-dir")
    data = read_yaml(path)
    if "name" not in data:
        raise InputError(str(path), "not a Pulumi project file (no 'name')")
    root = project_dir.resolve()
    data.pop("stackConfigDir", None)
    main = data.get("main")
    data["main"] = str((root / main).resolve()) if isinstance(main, str) else str(root)
    runtime = data.get("runtime")
    if isinstance(runtime, dict):
        options = runtime.get("options")
        if isinstance(options, dict) and isinstance(options.get("virtualenv"), str):
            venv = Path(options["virtualenv"])
            options["virtualenv"] = str(venv if venv.is_absolute() else root / venv)
    return data


def make_workspace(project_dir: Path, work_dir: Path, opts: PulumiOptions) -> auto.LocalWorkspace:
    """A LocalWorkspace in ``work_dir`` running the program in ``project_dir``."""
    settings = project_settings(project_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "Pulumi.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return auto.LocalWorkspace(
        work_dir=str(work_dir),
        pulumi_home=str(opts.pulumi_home) if opts.pulumi_home else None,
        env_vars=opts.env_vars(),
        secrets_provider=opts.secrets_provider,
        pulumi_command=pulumi_command(opts),
    )


def error_line(exc: BaseException) -> str:
    """The most telling line of a CLI failure (its ``error:`` line), for one-line reports."""
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("error:"):
            return ln
    for ln in lines:
        if ln.startswith("stderr:") and ln != "stderr:":
            return ln[len("stderr:") :].strip()
    return lines[-1] if lines else type(exc).__name__


def child_pids() -> list[int]:
    """This process's direct children (Linux ``/proc``; empty elsewhere).

    Needed because the Automation API starts the CLI with its own ``Popen`` and does not expose
    the process: to cancel a running ``pulumi up`` gracefully we send it SIGINT ourselves.
    """
    me = os.getpid()
    out: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        # Field 4 is the parent pid; the command name (field 2) may hold spaces, so split after ')'.
        rest = stat.rsplit(")", 1)[-1].split()
        if len(rest) > 1 and rest[1] == str(me):
            out.append(int(entry))
    return out


def interrupt_children() -> None:
    """Ask running CLI children to cancel (SIGINT is how ``pulumi`` cancels an update cleanly)."""
    for pid in child_pids():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGINT)


def run_cli(ws: auto.LocalWorkspace, args: list[str]) -> auto.CommandResult:
    """A CLI call the Automation API has no method for (``stack ls --tag``), with the same
    working directory and environment its own calls get."""
    env = {"PULUMI_HOME": ws.pulumi_home} if ws.pulumi_home else {}
    return ws.pulumi_command.run(args, ws.work_dir, {**env, **ws.env_vars})


@dataclass
class Teardown:
    """How far a destroy-and-remove got: both flags true means nothing is left."""

    destroyed: bool = False
    removed: bool = False
    attempts: int = 0
    last_error: str = ""


def destroy_and_remove(
    ws: auto.LocalWorkspace,
    name: str,
    *,
    retries: int,
    backoff_s: float,
    max_backoff_s: float,
    say: Callable[[str], None],
    on_output: Callable[[str], None] | None,
    who: str,
) -> Teardown:
    """``destroy`` then ``stack rm``, retrying the step that failed with bounded exponential
    backoff (``backoff_s``, doubling, at most ``max_backoff_s``). A stack that does not exist
    counts as removed: teardown may run before ``stack init`` finished, or after a janitor."""
    t = Teardown()
    for attempt in range(1, retries + 1):
        t.attempts = attempt
        try:
            try:
                stack = auto.Stack.select(name, ws)
            except auto.errors.StackNotFoundError:
                t.destroyed = t.removed = True
                return t
            if not t.destroyed:
                say(f"{who}: pulumi destroy {name} (attempt {attempt}/{retries})")
                stack.destroy(on_output=on_output, message=f"{who} teardown")
                t.destroyed = True
            say(f"{who}: pulumi stack rm {name}")
            ws.remove_stack(name)
            t.removed = True
            return t
        except auto.errors.StackNotFoundError:
            t.destroyed = t.removed = True
            return t
        except Exception as exc:
            t.last_error = error_line(exc)
            step = "stack rm" if t.destroyed else "destroy"
            say(f"{who}: {step} {name} failed (attempt {attempt}/{retries}): {t.last_error}")
            if attempt < retries:
                delay = min(backoff_s * 2 ** (attempt - 1), max_backoff_s)
                say(f"{who}: retrying in {delay:g} s")
                time.sleep(delay)
    return t
