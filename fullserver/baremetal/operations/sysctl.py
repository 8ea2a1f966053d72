"""Kernel parameters: network tuning for large transfers, and huge pages."""

from __future__ import annotations

import posixpath
from typing import Any

from fullserver.baremetal.config import HostLayout, check_sysctl
from fullserver.baremetal.errors import Failure, Refusal
from fullserver.baremetal.facts import SysctlFact, SysctlState
from fullserver.baremetal.operations.base import Change, HostContext, Record, Status, Step
from fullserver.baremetal.shell import Command, q, write_file_script

NETWORK_SYSCTLS: dict[str, str] = {
    # Large-transfer TCP buffers (dataset and checkpoint streams over 25-400 Gbps links); the
    # values follow the ESnet host-tuning guide for 100G hosts (fasterdata.es.net/host-tuning).
    "net.core.rmem_max": "268435456",
    "net.core.wmem_max": "268435456",
    "net.ipv4.tcp_rmem": "4096 87380 268435456",
    "net.ipv4.tcp_wmem": "4096 65536 268435456",
    "net.core.netdev_max_backlog": "250000",
    "net.ipv4.tcp_mtu_probing": "1",
}


class SysctlStep(Step[SysctlState]):
    """Kernel parameters, set now (``/proc/sys``) and persisted (``/etc/sysctl.d/<conf>``).

    The undo record holds the original value of every key fullserver ever set (``previous``) and
    the conf file's original content (``conf``: None when it did not exist), both restored on undo.
    An update keeps the *oldest* originals: the journaled original of every key, plus originals for
    keys the update adds; keys the update drops are restored at once.
    """

    def __init__(
        self, values: dict[str, str], *, id: str = "sysctl", conf: str = "/etc/sysctl.d/90-fullserver.conf"
    ) -> None:
        for k, v in values.items():
            check_sysctl(k, v, "networkTuning")
        self.values = dict(sorted(values.items()))
        self.id = id
        self.conf = conf

    def describe(self) -> str:
        return f"sysctl {', '.join(f'{k}={v}' for k, v in self.values.items())} (persisted in {self.conf})"

    def desired(self) -> dict[str, Any]:
        return {"values": self.values, "conf": self.conf}

    def _proc(self, layout: HostLayout, key: str) -> str:
        return posixpath.join(layout.sysctl_dir, key.replace(".", "/"))

    def _render(self) -> str:
        return "# managed by fullserver; removed when the environment is deleted\n" + "".join(
            f"{k} = {v}\n" for k, v in self.values.items()
        )

    def _set(self, layout: HostLayout, values: dict[str, str]) -> list[str]:
        return [f"printf '%s\\n' {q(v)} > {q(self._proc(layout, k))}" for k, v in values.items()]

    def fact(self, layout: HostLayout) -> SysctlFact:
        return SysctlFact(
            {k: self._proc(layout, k) for k in self.values}, layout.path(self.conf), label=f"check {self.id}"
        )

    def status(self, facts: SysctlState) -> Status:
        missing = [k for k in self.values if not facts.values.get(k)]
        if missing:
            raise Refusal(
                f"kernel parameter(s) not found: {', '.join(missing)}",
                "drop them from the config or load the module that provides them",
            )
        wrong = [k for k, v in self.values.items() if facts.values.get(k) != " ".join(v.split())]
        if wrong:
            return Status(False, "differs: " + ", ".join(f"{k}={facts.values.get(k)}" for k in wrong))
        if facts.conf != self._render():
            return Status(False, f"{self.conf} not persisted")
        return Status(True, "in place")

    def before(self, facts: SysctlState) -> Record:
        return {"previous": {k: facts.values[k] for k in self.values}, "conf": facts.conf}

    def merge_undo(self, journaled: Record | None, now: Record) -> Record:
        if journaled is None:
            return now
        return {
            "previous": {**now.get("previous", {}), **journaled.get("previous", {})},
            "conf": journaled.get("conf"),  # records without it (older journals) mean: remove the file
        }

    def change(self, facts: SysctlState, ctx: HostContext, record: Record) -> Change:
        previous: dict[str, str] = record.get("previous", {})
        dropped = {k: v for k, v in previous.items() if k not in self.values}  # an update no longer sets them
        parts = [write_file_script(ctx.layout.path(self.conf), self._render())]
        parts += self._set(ctx.layout, self.values) + self._set(ctx.layout, dropped)
        keep = {"previous": {k: v for k, v in previous.items() if k in self.values}, "conf": record.get("conf")}
        return Change((Command(" && ".join(parts), f"apply {self.id}"),), record, keep)

    def undo(self, layout: HostLayout, record: Record) -> list[Command]:
        parts = self._set(layout, record.get("previous", {}))
        conf, original = layout.path(self.conf), record.get("conf")
        parts.append(write_file_script(conf, original) if isinstance(original, str) else f"rm -f {q(conf)}")
        return [Command(" && ".join(parts), f"undo {self.id}")]


class HugepagesStep(SysctlStep):
    """Reserve N default-size (2 MiB) huge pages; the verify fails if the kernel gave fewer."""

    def __init__(self, count: int) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"hugepages: {count!r} is not a page count (a whole number >= 0)")
        super().__init__(
            {"vm.nr_hugepages": str(count)}, id="hugepages", conf="/etc/sysctl.d/91-fullserver-hugepages.conf"
        )
        self.count = count

    def describe(self) -> str:
        return f"reserve {self.count} huge pages (vm.nr_hugepages, persisted in {self.conf})"

    def unverified(self, facts: SysctlState, status: Status) -> Failure:
        return Failure(
            f"the kernel reserved {facts.values.get('vm.nr_hugepages', '?')} of {self.count} huge pages",
            "memory is fragmented: ask for fewer, or reserve them at boot (hugepages= on the kernel command line)",
        )
