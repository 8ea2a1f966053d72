"""The host lock: one converge or revert at a time per host, across machines and stacks.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import getpass
import os
import posixpath
import re
import secrets
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from fullserver.baremetal.config import HostLayout
from fullserver.baremetal.errors import BareMetalError, CommandFailed, JournalLocked, StepFailed
from fullserver.baremetal.shell import q
from fullserver.baremetal.transport import Result, Runner

LOCK_WAIT = 60.0
"""Seconds a run waits for another run's journal lock on the same host before giving up."""
LOCK_STALE_AFTER = 3 * 3600
"""Seconds without a heartbeat (a journal write) after which a lock is broken even though its
owner's SSH session still lives (a controller cut off without a FIN). Longer than any one step's
deadline (mkfs: 1800 s), so a working run is never broken."""


@dataclass(frozen=True)
class JournalLock:
    """A held journal lock: the token that proves it is ours, and how the owner is named."""

    token: str
    owner: str
    broke: str | None = None
    """The owner of a stale lock this one replaced, if any (reported, never silent)."""


_SAFE_OWNER = re.compile(r"[^\x20-\x7e]")

# The host-side process of this SSH connection: the nearest sshd ancestor ("sshd: user@notty",
# or sshd-session on OpenSSH >= 9.8). It lives exactly as long as the connection, whatever runs
# below it (sudo, timeout, sh). Written as "pid starttime" (/proc/PID/stat field 22), so a
# recycled pid never passes for the owner. 0 0 when there is none (not over sshd).
_MY_SESSION = """me=0; born=0; p=$$
while [ "$p" -gt 1 ] 2>/dev/null; do
  st=$(cat "/proc/$p/stat" 2>/dev/null) || break
  c=${st#*(}; c=${c%)*}
  set -- ${st##*) }
  case "$c" in sshd*) me=$p; born=${20}; break ;; esac
  p=$2
done
born_of() { x=$(cat "/proc/$1/stat" 2>/dev/null) || return 0; set -- ${x##*) }; echo "${20}"; }
"""

_GUARD = "flock -x -w 30 9 || { echo '@@guard'; exit 3; }\n"


def _lock_script(layout: HostLayout, body: str) -> str:
    """``body`` run with the journal directory ``flock``ed (fd 9), after ``_MY_SESSION``."""
    d, lock = posixpath.dirname(layout.journal), layout.journal_lock
    return (
        f"D={q(d)}; L={q(lock)}\n"
        "command -v flock >/dev/null 2>&1 || { echo '@@noflock'; exit 3; }\n"
        'mkdir -p "$D" && exec 9<"$D" || { echo \'@@nodir\'; exit 3; }\n'
        f"{_MY_SESSION}{body}"
    )


def _owner(purpose: str) -> str:
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = f"uid {os.getuid()}"
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = f"{who}@{socket.gethostname()} pid {os.getpid()} ({purpose}, since {since})"
    return _SAFE_OWNER.sub("?", text)[:200]


def _lock_trouble(r: Runner, res: Result, what: str) -> BareMetalError:
    if "@@noflock" in res.stdout:
        return StepFailed(r.host, "flock is not installed, so the journal cannot be locked", "install util-linux")
    if "@@nodir" in res.stdout:
        return StepFailed(
            r.host,
            f"could not {what}: its directory cannot be created or opened",
            "check the layout root's permissions",
        )
    if "@@guard" in res.stdout:
        return StepFailed(
            r.host,
            f"could not {what}: the journal directory stayed flocked for 30 s",
            "a stuck fullserver command on the host? check `fuser -v /var/lib/fullserver`",
        )
    return CommandFailed(
        r.host,
        f"could not {what}: exited {res.exit_status}: {res.tail()}",
        "see the command's message",
        exit_status=res.exit_status,
        stderr=res.stderr,
    )


def lock_journal(
    r: Runner,
    layout: HostLayout,
    *,
    purpose: str = "converge",
    wait: float = LOCK_WAIT,
    stale_after: float = LOCK_STALE_AFTER,
) -> JournalLock:
    """Take the host's journal lock, waiting up to ``wait`` seconds for another run's; a stale lock
    (see the module docstring) is broken. Raises ``JournalLocked`` naming the owner on timeout.

    One remote command however long it waits (the loop runs on the host), and not a write: the
    lock is bookkeeping, so a converge with nothing to change still runs zero writes."""
    token = secrets.token_hex(16)
    owner = _owner(purpose)
    body = (
        f"T={q(token)}; O={q(owner)}; S={int(stale_after)}; end=$(( $(date +%s) + {max(0, int(wait))} ))\n"
        "while :; do\n"
        f"  {_GUARD}"
        "  state=free; tok=; sp=0; sb=0; old=; age=0\n"
        '  if [ -e "$L" ]; then\n'
        '    { read -r tok; read -r sp sb; read -r old; } < "$L"\n'
        '    age=$(( $(date +%s) - $(stat -c %Y "$L" 2>/dev/null || date +%s) ))\n'
        "    live=unknown\n"
        '    if [ "${sp:-0}" -gt 0 ] 2>/dev/null; then\n'
        '      if [ -n "$sb" ] && [ "$(born_of "$sp")" = "$sb" ]; then live=yes; else live=no; fi\n'
        "    fi\n"
        '    if [ "$tok" = "$T" ]; then state=ours\n'
        '    elif [ "$live" = no ] || [ "$age" -gt "$S" ]; then state=stale\n'
        "    else state=held; fi\n"
        "  fi\n"
        '  if [ "$state" != held ]; then\n'
        '    t=$(mktemp "$L.XXXXXX") && printf \'%s\\n%s %s\\n%s\\n\' "$T" "$me" "$born" "$O" > "$t" \\\n'
        '      && chmod 0600 "$t" && mv -f "$t" "$L" || { rm -f "$t"; echo \'@@write\'; exit 3; }\n'
        '    [ "$state" = stale ] && printf \'@@broke %s\\n\' "$old"\n'
        "    echo '@@acquired'; exit 0\n"
        "  fi\n"
        "  flock -u 9\n"
        '  if [ "$(date +%s)" -ge "$end" ]; then printf \'@@held %s %s\\n\' "$age" "$old"; exit 3; fi\n'
        "  sleep 1\n"
        "done\n"
    )
    start = time.monotonic()
    res = r.run(_lock_script(layout, body), sudo=True, check=False, timeout=wait + 60, label="lock journal")
    out = res.stdout
    if "@@acquired" in out:
        broke = next((ln.removeprefix("@@broke").strip() for ln in out.splitlines() if ln.startswith("@@broke")), None)
        if broke is not None:
            broke = _SAFE_OWNER.sub("?", broke)[:200] or "an unnamed owner"
        return JournalLock(token, owner, broke)
    held = next((ln.removeprefix("@@held ") for ln in out.splitlines() if ln.startswith("@@held ")), None)
    if held is not None:
        age, _, who = held.partition(" ")
        raise JournalLocked(
            r.host,
            _SAFE_OWNER.sub("?", who.strip())[:200] or "an unnamed owner",
            int(age) if age.isdigit() else 0,
            round(time.monotonic() - start),
        )
    raise _lock_trouble(r, res, "lock the journal")


def unlock_journal(r: Runner, layout: HostLayout, lock: JournalLock) -> None:
    """Release the lock if it is still ours (a broken and re-taken lock is left to its new owner)."""
    body = f'{_GUARD}tok=; read -r tok < "$L" 2>/dev/null\nif [ "$tok" = {q(lock.token)} ]; then rm -f "$L"; fi\n'
    res = r.run(_lock_script(layout, body), sudo=True, check=False, label="unlock journal")
    if not res.ok:
        raise _lock_trouble(r, res, "unlock the journal")


@contextmanager
def journal_locked(
    r: Runner, layout: HostLayout, *, purpose: str = "converge", wait: float = LOCK_WAIT
) -> Iterator[JournalLock]:
    """Hold the journal lock for the block. A release that fails (the connection died) is not an
    error: the lock names the connection's sshd session, so it goes stale when that session ends."""
    lock = lock_journal(r, layout, purpose=purpose, wait=wait)
    try:
        yield lock
    finally:
        with suppress(BareMetalError):
            unlock_journal(r, layout, lock)


def write_locked(r: Runner, layout: HostLayout, lock: JournalLock, script: str, label: str) -> None:
    """Run the write ``script`` only while ``lock`` is still ours (checked under the ``flock``),
    touching the lock first: every locked write is the lock's heartbeat."""
    body = (
        f'{_GUARD}tok=; read -r tok < "$L" 2>/dev/null\n'
        f"[ \"$tok\" = {q(lock.token)} ] || {{ echo '@@lost'; exit 3; }}\n"
        f'touch "$L" && {script}\n'
    )
    res = r.run(_lock_script(layout, body), sudo=True, write=True, check=False, label=label)
    if "@@lost" in res.stdout:
        raise StepFailed(
            r.host,
            "the journal lock was broken by another run (stale: no heartbeat for a long time); this run stopped",
            "re-run; steps resume where they stopped",
        )
    if not res.ok:
        raise _lock_trouble(r, res, label)
