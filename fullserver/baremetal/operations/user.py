"""A service user: a local account for key login only, with exactly the given authorized keys."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from fullserver.baremetal.config import HostLayout, check_authorized_key, check_user_name
from fullserver.baremetal.errors import Refusal
from fullserver.baremetal.facts import UserFact, UserState
from fullserver.baremetal.operations.base import Change, HostContext, Record, Status, Step
from fullserver.baremetal.shell import Command, q, write_file_script

FIRST_USER_UID = 1000
"""UIDs below this are system accounts (login.defs UID_MIN): never taken over as a service user."""


class ServiceUserStep(Step[UserState]):
    """A local user (no password; key login only) with exactly the given authorized keys.

    Only a user fullserver creates is ever managed: the login user, a system account (UID below
    1000) or any existing user the journal does not record as created by fullserver is refused.
    The home comes from ``getent passwd`` (a new user's is ``/home/<name>`` under the layout root);
    the undo record says whether the user, the home and its ``.ssh`` existed before (``existed``,
    ``home``, ``home_existed``, ``ssh_existed``) and the original ``authorized_keys`` (None: none),
    and undo removes only what fullserver created — a home that was already there is never deleted.
    """

    def __init__(self, name: str, authorized_keys: Sequence[str]) -> None:
        check_user_name(name, "serviceUser.name")
        self.id = f"user:{name}"
        self.name = name
        self.keys = [check_authorized_key(k, f"serviceUser.authorizedKeys[{i}]") for i, k in enumerate(authorized_keys)]

    def describe(self) -> str:
        return f"service user {self.name} with {len(self.keys)} authorized key(s)"

    def desired(self) -> dict[str, Any]:
        return {"name": self.name, "authorized_keys": self.keys}

    def _home(self, layout: HostLayout) -> str:
        return layout.path(f"/home/{self.name}")

    def _render(self) -> str:
        return "".join(f"{k}\n" for k in self.keys)

    def fact(self, layout: HostLayout) -> UserFact:
        return UserFact(self.name, self._home(layout), label=f"check {self.id}")

    def status(self, facts: UserState) -> Status:
        if not facts.exists:
            return Status(False, "user missing")
        if (facts.authorized_keys or "") != self._render():
            return Status(False, "authorized keys differ")
        return Status(True, "in place")

    def before(self, facts: UserState) -> Record:
        return {
            "existed": facts.exists,
            "home": facts.home,
            "home_existed": facts.home_existed,
            "ssh_existed": facts.ssh_existed,
            "authorized_keys": facts.authorized_keys,
        }

    def admit(self, facts: UserState, ctx: HostContext, journaled: Record | None) -> None:
        if self.name == ctx.login_user:
            raise Refusal(
                f"service user {self.name} is the user fullserver logs in as: refusing to manage its keys",
                "pick another serviceUser.name",
            )
        ours = journaled is not None and journaled.get("existed") is False
        if facts.exists and (not ours or (facts.uid is not None and facts.uid < FIRST_USER_UID)):
            raise Refusal(
                f"user {self.name} already exists (uid {facts.uid}) and was not created by fullserver: "
                "refusing to take it over",
                "pick another serviceUser.name",
            )

    def change(self, facts: UserState, ctx: HostContext, record: Record) -> Change:
        n, home = q(self.name), facts.home
        ssh = home + "/.ssh"
        parts = []
        if not facts.exists:
            parts.append(
                f"mkdir -p {q(posixpath.dirname(home))} && useradd -m -d {q(home)} -s /bin/bash {n} && usermod -p '*' {n}"
            )
        parts.append(f"mkdir -p {q(ssh)}")
        parts.append(write_file_script(f"{ssh}/authorized_keys", self._render(), "0600"))
        parts.append(f"chmod 0700 {q(ssh)} && chown -R {n}: {q(ssh)}")
        return Change((Command(" && ".join(parts), f"apply {self.id}"),), record, record)

    def undo(self, layout: HostLayout, record: Record) -> list[Command]:
        n = q(self.name)
        home = str(record.get("home") or self._home(layout))
        ssh, ak = home + "/.ssh", home + "/.ssh/authorized_keys"
        if record.get("authorized_keys") is not None:
            restore = write_file_script(ak, record["authorized_keys"], "0600")
        else:
            restore = f"rm -f {q(ak)}"
        if record.get("existed") is not False:  # a record from before existing users were refused
            return [Command(restore, f"undo {self.id}")]  # put their keys back
        parts = [f"if id -u {n} >/dev/null 2>&1; then userdel {n}; fi"]
        # Older records lack home_existed: then the home is treated as pre-existing (kept).
        if record.get("home_existed") is False:
            parts.append(f"rm -rf {q(home)}")
        elif record.get("ssh_existed") is False:
            parts.append(f"rm -rf {q(ssh)}")
        else:
            parts.append(restore)
        return [Command(" && ".join(parts), f"undo {self.id}")]
