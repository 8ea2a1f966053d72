"""A scripted ``Runner`` for engine tests without sshd: answers by command label, records every call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fullserver.baremetal.config import HostLayout
from fullserver.baremetal.errors import CommandFailed
from fullserver.baremetal.transport import Result, as_script

DEFAULTS = {"lock journal": Result(0, "@@acquired\n", ""), "read journal": Result(0, "", "")}


@dataclass
class Call:
    label: str
    text: str
    sudo: bool
    write: bool
    timeout: float | None


@dataclass
class FakeHost:
    """``answers`` maps a label to the results of its successive calls (the last one repeats);
    any other label succeeds with no output."""

    answers: dict[str, list[Result]] = field(default_factory=dict)
    host: str = "h"
    user: str = "ops"
    is_root: bool = False
    writes: int = 0
    calls: list[Call] = field(default_factory=list)
    layout: HostLayout = field(default_factory=HostLayout)

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
    ) -> Result:
        name = label or ""
        self.calls.append(Call(name, as_script(command), sudo, write, timeout))
        if write:
            self.writes += 1
        queue = self.answers.get(name)
        res = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else DEFAULTS.get(name, Result(0, "", ""))
        if check and not res.ok:
            raise CommandFailed(self.host, f"`{name}` exited {res.exit_status}", exit_status=res.exit_status)
        return res

    def labels(self, *, writes_only: bool = False) -> list[str]:
        return [c.label for c in self.calls if c.write or not writes_only]
