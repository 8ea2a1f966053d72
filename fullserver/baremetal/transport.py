"""The seam between what we run on a host and how it gets there.

Probes and steps only see ``Runner``: run a shell script (or an argv list) with a deadline,
optionally as root, and get a ``Result``. ``fullserver.baremetal.ssh.SshSession`` is the real
implementation; tests of pure logic may use any object with the same shape.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Result:
    """One finished remote command. Success is decided by exit status only, never by stderr."""

    exit_status: int
    stdout: str
    stderr: str
    truncated: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def tail(self, n: int = 300) -> str:
        text = (self.stderr.strip() or self.stdout.strip()).replace("\n", " | ")
        return text[-n:]


class Runner(Protocol):
    """Runs commands on one host (one connection, one thread)."""

    @property
    def host(self) -> str: ...

    @property
    def is_root(self) -> bool: ...

    @property
    def user(self) -> str:
        """The login user (a service user must never be this one)."""
        ...

    writes: int
    """How many commands flagged ``write=True`` ran (a re-apply with nothing to change runs none)."""

    def run(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | None = None,
        sudo: bool = False,
        stdin: bytes | None = None,
        check: bool = True,
        write: bool = False,
        label: str | None = None,
    ) -> Result: ...


def as_script(command: str | Sequence[str]) -> str:
    """An argv list is quoted word by word (``shlex.join``); a string is a shell script as is."""
    return command if isinstance(command, str) else shlex.join(list(command))


def remote_command(script: str, *, timeout: float, kill_grace: float, sudo: bool) -> str:
    """The exact string sshd runs: ``[sudo -n --] env LC_ALL=C timeout -k G T sh -c SCRIPT``.

    ``timeout -k`` is the remote half of the deadline (it kills what it started, then KILLs
    after the grace); the local half is the select loop in the SSH layer, because a process
    stuck in the kernel ignores even SIGKILL. ``sudo -n`` fails at once instead of prompting.
    ``env`` rather than SSH ``environment=``, which sshd drops unless ``AcceptEnv`` allows it.
    """
    inner = [
        "env",
        "LC_ALL=C",
        "timeout",
        "-k",
        f"{max(1, round(kill_grace))}",
        f"{max(1, round(timeout))}",
        "sh",
        "-c",
        script,
    ]
    if sudo:
        inner = ["sudo", "-n", "--", *inner]
    return shlex.join(inner)
