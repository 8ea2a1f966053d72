"""What the command (or the ``with`` block) gets from the stack: its outputs, secrets only by name.

Design notes: docs/design/stackops.md.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from fullserver.errors import InputError
from fullserver.plan import StackPlan
from stackops.naming import EXPIRES_FORMAT
from stackops.workspace import PulumiOptions, StackOpsError, error_line, make_workspace, run_cli

SECRET_MARK = "[secret]"
"""Stands for a secret output's value wherever the value itself must not go (as Pulumi prints it)."""


def output_env_name(key: str) -> str:
    """``privateIps`` -> ``FULLSERVER_OUTPUT_PRIVATE_IPS``: what a shell script can read."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)
    return "FULLSERVER_OUTPUT_" + re.sub(r"[^A-Za-z0-9]+", "_", snake).strip("_").upper()


def env_text(value: Any) -> str:
    """Strings as they are, everything else as JSON (lists of IPs, cost objects)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""A stack output's name as the programs here export them (``privateIps``, ``connect``)."""


def check_output_names(names: Collection[str]) -> None:
    """Every ``--secret-output`` is an output name by its form, before anything starts.

    Why: an empty or malformed name was refused only by ``shared_outputs``, after stack init,
    ``up``, destroy and rm had run for nothing."""
    for name in names:
        if not OUTPUT_NAME.fullmatch(name):
            raise InputError(
                f"--secret-output '{name}'",
                "is not a stack output name",
                "name an output such as apiToken (letters, digits and '_'), as `pulumi stack output` lists them",
            )


def shared_outputs(raw: Mapping[str, auto.OutputValue], wanted: Collection[str], where: str) -> dict[str, Any]:
    """The outputs with every secret the run did not name replaced by ``SECRET_MARK``.

    A name that is no output at all is refused (one line, listing the outputs): a typo would
    otherwise leave the command without the secret it needs, failing somewhere less clear."""
    unknown = sorted(set(wanted) - set(raw))
    if unknown:
        raise InputError(
            f"--secret-output {', '.join(unknown)}",
            f"{where} has no such output",
            f"its outputs: {', '.join(sorted(raw)) or 'none'}",
        )
    return {k: v.value if not v.secret or k in wanted else SECRET_MARK for k, v in raw.items()}


def write_outputs_file(path: Path, outputs: Mapping[str, Any], secret_names: Collection[str]) -> None:
    """Every output as JSON, mode 0600 from the start, with no secret value in it (named or not)."""
    safe = {k: SECRET_MARK if k in secret_names else v for k, v in outputs.items()}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(safe, fh, indent=2, sort_keys=True)


@dataclass
class EphemeralEnv:
    """What the caller gets inside ``with``: the stack, its outputs and how to pass them on."""

    stack: str
    backend: str
    expires_at: datetime
    outputs: dict[str, Any] = field(repr=False)
    """Every output; a secret one holds ``SECRET_MARK`` unless the run named it. Not in the repr,
    which a failing test or a log may print."""
    secret_outputs: frozenset[str]
    """The names of every secret output, named by the run or not."""
    outputs_file: Path
    plan: StackPlan
    work_dir: Path
    passed_secrets: frozenset[str] = frozenset()
    """The secret outputs the run named: the only ones ``environ()`` holds."""

    def environ(self) -> dict[str, str]:
        """``FULLSERVER_OUTPUT_<NAME>`` per output (a secret one only when named; never
        ``SECRET_MARK``, which a script could take for a value) plus the stack, expiry and the
        JSON file path."""
        env = {
            "FULLSERVER_STACK": self.stack,
            "FULLSERVER_EXPIRES_AT": self.expires_at.strftime(EXPIRES_FORMAT),
            "FULLSERVER_OUTPUTS_FILE": str(self.outputs_file),
        }
        for key, value in self.outputs.items():
            if key in self.secret_outputs and key not in self.passed_secrets:
                continue
            env[output_env_name(key)] = env_text(value)
        return env


def read_stack_outputs(project_dir: Path, stack: str, opts: PulumiOptions) -> dict[str, Any]:
    """A stack's outputs as ``pulumi stack output --json`` prints them: a secret output shows as
    ``[secret]`` (``--show-secrets`` is never passed), so nothing secret is read."""
    with tempfile.TemporaryDirectory(prefix="fullserver-outputs-") as tmp:
        ws = make_workspace(project_dir, Path(tmp), opts)
        try:
            result = run_cli(ws, ["stack", "output", "--json", "--stack", stack])
        except auto.errors.CommandError as exc:
            raise StackOpsError(
                f"stack '{stack}'",
                f"cannot read its outputs: {error_line(exc)}",
                "check the backend (--backend or PULUMI_BACKEND_URL) and that `pulumi up` ran for this stack",
            ) from None
    try:
        data = json.loads(result.stdout or "{}")
    except ValueError:
        raise StackOpsError(
            f"stack '{stack}'", "its outputs are not JSON", "run `pulumi stack output --json`"
        ) from None
    if not isinstance(data, dict):
        raise StackOpsError(f"stack '{stack}'", "its outputs are not a JSON object", "run `pulumi stack output --json`")
    return data
