"""One Automation API workspace per run, in a private directory, for this project's program.

Design notes: docs/design/stackops.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
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


BACKEND_SCHEMES = ("file", "s3", "gs", "azblob", "https", "http")
"""What ``pulumi login`` takes: the DIY backends ``file://``, ``s3://``, ``gs://``, ``azblob://``
(https://www.pulumi.com/docs/iac/operations/stack-management/using-a-diy-backend/) and a Pulumi
Cloud, ``https://`` or a self-hosted one's URL (https://www.pulumi.com/docs/iac/cli/commands/pulumi_login/)."""


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

    def check(self) -> None:
        """The backend URL is one ``pulumi login`` takes, by its scheme, before anything runs:
        ``--backend 'not a url'`` failed every ``stack init`` and ``destroy`` instead."""
        if self.backend is None:
            return
        scheme, sep, rest = self.backend.partition("://")
        if not sep or scheme not in BACKEND_SCHEMES or not rest:
            raise InputError(
                "--backend",
                f"'{self.backend}' is not a Pulumi state backend URL",
                f"use {', '.join(f'{s}://...' for s in BACKEND_SCHEMES)}; nothing was created",
            )

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


class PulumiCLI(auto.PulumiCommand):
    """The Automation API's ``PulumiCommand`` (same arguments, environment and errors), except that
    each CLI process starts in its own session with stdin from ``/dev/null`` or the text given.

    * A terminal's Ctrl-C (sent to the foreground process group) never reaches the CLI: whoever owns
      this object decides whether it gets an interrupt. ``process`` is the running CLI and
      ``on_start`` is called with it as soon as it exists, so a signal that arrived a moment
      earlier can still be passed on (``SignalGuard`` in ``stackops.signals`` does both).
    * ``stdin`` lets ``pulumi config set KEY --secret`` read a secret from a pipe instead of argv,
      where any local user could read it in ``/proc/<pid>/cmdline``.
    * Interrupted without an owner deciding (a ``KeyboardInterrupt`` in the janitor), it asks the
      CLI once to cancel and waits for it to save its state before re-raising: a CLI cut off
      mid-operation, or killed by a closed output pipe, leaves pending operations behind.
    """

    def __init__(self, root: str | None = None) -> None:
        super().__init__(root=root)
        self.process: subprocess.Popen[str] | None = None
        self.on_start: Callable[[subprocess.Popen[str]], None] | None = None

    def run(
        self,
        args: list[str],
        cwd: str,
        additional_env: Mapping[str, str],
        on_output: Callable[[str], Any] | None = None,
        on_error: Callable[[str], Any] | None = None,
        *,
        stdin: str | None = None,
    ) -> auto.CommandResult:
        args = list(args)
        sep = args.index("--") if "--" in args else len(args)
        if "--non-interactive" not in args[:sep]:
            args.insert(0, "--non-interactive")
        env = {**os.environ, **additional_env, "PULUMI_AUTOMATION_API": "true"}
        if os.path.isabs(self.command):  # as the Automation API does: plugins next to the CLI first
            env["PATH"] = os.pathsep.join([os.path.dirname(self.command), env.get("PATH", "")])
        out: list[str] = []
        err: list[str] = []
        proc = subprocess.Popen(
            [self.command, *args],
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            encoding="utf-8",
            start_new_session=True,
        )
        self.process = proc
        readers = [
            threading.Thread(target=_consume, args=(proc.stdout, on_output, out), daemon=True),
            threading.Thread(target=_consume, args=(proc.stderr, on_error, err), daemon=True),
        ]
        for t in readers:
            t.start()
        try:
            if self.on_start is not None:
                self.on_start(proc)
            if stdin is not None and proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.write(stdin)
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
            code = proc.wait()
        except BaseException:
            _cancel_and_wait(proc)
            raise
        finally:
            self.process = None
            for t in readers:
                t.join()
        result = auto.CommandResult(stdout="\n".join(out), stderr="\n".join(err), code=code)
        if code != 0:
            raise auto.errors.create_command_error(result)
        return result


def _consume(stream: Any, callback: Callable[[str], Any] | None, chunks: list[str]) -> None:
    for line in iter(stream.readline, ""):
        stripped = line.rstrip()
        if callback:
            callback(stripped)
        chunks.append(stripped)
    stream.close()


def _cancel_and_wait(proc: subprocess.Popen[str]) -> None:
    """One SIGINT (the CLI's graceful cancel), then wait for it to exit, whatever else arrives."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGINT)
    while proc.poll() is None:
        with contextlib.suppress(KeyboardInterrupt):
            proc.wait()


def pulumi_command(opts: PulumiOptions) -> PulumiCLI:
    """The CLI, version-checked by the Automation API; a missing CLI is one clear line, not a traceback."""
    root = str(opts.pulumi_root) if opts.pulumi_root else None
    where = f"{opts.pulumi_root}/bin/pulumi" if root else "pulumi on PATH"
    try:
        return PulumiCLI(root=root)
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


def run_cli(ws: auto.LocalWorkspace, args: list[str], *, stdin: str | None = None) -> auto.CommandResult:
    """A CLI call the Automation API has no method for (``stack ls --tag``), with the same
    working directory and environment its own calls get."""
    env = {"PULUMI_HOME": ws.pulumi_home} if ws.pulumi_home else {}
    cli = ws.pulumi_command
    if stdin is not None:
        if not isinstance(cli, PulumiCLI):
            raise TypeError("passing stdin needs the workspace made by make_workspace()")
        return cli.run(args, ws.work_dir, {**env, **ws.env_vars}, stdin=stdin)
    return cli.run(args, ws.work_dir, {**env, **ws.env_vars})


def set_secret_config(ws: auto.LocalWorkspace, stack: str, key: str, value: str) -> None:
    """``pulumi config set KEY --secret --stack NAME`` with the value on stdin, never on argv.

    The Automation API's ``set_config`` / ``set_all_config`` / ``set_all_config_json`` all put the
    value on the command line, where every local user can read it (``ps``, ``/proc/<pid>/cmdline``)
    while the CLI runs. ``config set`` reads the value from stdin when none is given and stdin is
    not a terminal, and drops one trailing newline: the value is sent with one, so it arrives exact.
    """
    run_cli(ws, ["config", "set", key, "--secret", "--stack", stack], stdin=value + "\n")
