"""What a finished command's exit status means: success, a failure, a deadline passed on the host,
sudo refusing, or no status at all (a signal, a lost connection)."""

from __future__ import annotations

from fullserver.baremetal.errors import CommandFailed, CommandTimeout, HostUnreachable, NoSudo
from fullserver.baremetal.transport import Result

SUDO_REFUSALS = (
    "sudo: a password is required",
    "sudo: a terminal is required to read the password",
    "sudo: sorry, you must have a tty to run sudo",
    "is not in the sudoers file",
    "is not allowed to execute",
    "may not run sudo on",
)
"""sudo's own refusal messages (plugins/sudoers); a command's "not found" is not one of them."""


def sudo_refused(stderr: str) -> bool:
    """True when ``stderr`` holds one of sudo's own refusals."""
    s = stderr.lower()
    return any(p in s for p in SUDO_REFUSALS)


def outcome(
    result: Result,
    *,
    host: str,
    user: str,
    what: str,
    limit: float,
    sudo: bool,
    check: bool,
    connected: bool,
) -> Result:
    """``result`` when it counts as done; otherwise the error naming why.

    ``limit`` is the command's deadline in seconds (``timeout -k`` exits 124 or 137 once it has
    passed), ``sudo`` whether it ran through ``sudo -n``, ``check`` whether a non-zero exit is an
    error, and ``connected`` whether the connection was still up when the command ended."""
    status, err = result.exit_status, result.stderr
    if status == -1:
        if not connected:
            raise HostUnreachable(
                host, f"connection lost while running `{what}`", "re-run; steps resume where they stopped"
            )
        raise CommandFailed(
            host,
            f"`{what}` ended without an exit status (killed by a signal?)",
            "check the host's logs",
            stderr=err,
        )
    if status in (124, 137) and result.seconds >= limit - 0.5:
        raise CommandTimeout(
            host,
            f"`{what}` passed its {limit:.0f}s deadline and was killed on the host",
            "raise the command timeout or fix the hang",
        )
    if sudo and status in (1, 127) and sudo_refused(err):
        raise NoSudo(
            host,
            f"user '{user}' may not run `{what}` through sudo -n: {result.tail(120)}",
            f"add a NOPASSWD sudoers rule for {user} (/etc/sudoers.d/fullserver), or log in as root",
            exit_status=status,
            stderr=err,
        )
    if check and status != 0:
        raise CommandFailed(
            host,
            f"`{what}` exited {status}: {result.tail()}",
            "see the command's message",
            exit_status=status,
            stderr=err,
        )
    return result
