"""Local NVMe scratch: one filesystem over the local disks (mdadm RAID0, or the one disk).

Formatting destroys data, so this step is mostly refusals: a disk is formatted only when it is
*proven* blank, whatever the consent says (see ``ScratchStep``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from fullserver.baremetal.config import FS_LABEL, FS_TYPE, HostLayout, check_device, check_path
from fullserver.baremetal.errors import Failure, Refusal
from fullserver.baremetal.facts import SCRATCH_MARK, ScratchFact, ScratchState, parse_export, parse_wipefs
from fullserver.baremetal.operations.base import Change, HostContext, Record, Status, Step
from fullserver.baremetal.shell import Command, fstab_escape, q, rewrite_file_script

MDADM_CONF = "/etc/mdadm/mdadm.conf"
NEW_UUID = "<UUID of the new filesystem>"
"""Stands in, in a plan, for the UUID ``mkfs`` has not made yet."""


class ScratchStep(Step[ScratchState]):
    """Local NVMe as one scratch filesystem: RAID0 over several disks (mdadm), or the one disk.

    A disk is formatted only when it is *proven* blank, whatever the consent says: ``blkid -p``
    must exit 2 (nothing found) — any exit other than 0 (found: refused unless it is our own
    array member or filesystem) and 2 means it could not tell (8: ambivalent or colliding
    signatures, 4: error) and is refused; ``wipefs --no-act --json`` (which lists *every*
    signature, end-of-disk ones included) must list none but ours where wipefs is installed;
    ``lsblk`` must succeed and show no partition, holder or mount. With ``consent_to_format`` it
    creates the array and the filesystem on such disks; without it, it only re-assembles and
    mounts what it made before. A change of devices or mountpoint undoes the old scratch first
    (unmount, fstab, mdadm.conf, stop the array), then applies the new one; a new filesystem type
    or label on the same disks is refused before anything is undone (``change_refusal``).

    Applying takes up to three rounds, each decided from freshly read facts: the array (assemble
    or create), the filesystem (``mkfs``; refused if the array holds a foreign one), then mount +
    fstab (by the filesystem's UUID) + mdadm.conf. Undo record: ``{"mountpoint", "devices",
    "array"}`` (the array None for one disk).
    """

    id = "scratch"
    ARRAY_NAME = "fullserver-scratch"
    undo_before_change = True

    def __init__(
        self,
        devices: Sequence[str],
        *,
        mountpoint: str = "/mnt/scratch",
        fstype: str = "ext4",
        label: str = "fs-scratch",
        consent_to_format: bool = False,
        array: str | None = None,
    ) -> None:
        if not devices:
            raise ValueError("scratch.devices: at least one device is needed")
        if len(set(devices)) != len(devices):
            raise ValueError("scratch.devices: a device is listed twice")
        self.devices = [check_device(d, f"scratch.devices[{i}]") for i, d in enumerate(devices)]
        self.mountpoint = check_path(mountpoint, "scratch.mountpoint", mountpoint=True)
        if not FS_TYPE.match(fstype) or not FS_LABEL.match(label):
            raise ValueError(f"scratch.fstype {fstype!r} / label {label!r}: letters and digits only")
        self.fstype = fstype
        self.label = label
        self.consent = consent_to_format
        self.array = check_device(array or f"/dev/md/{self.ARRAY_NAME}", "scratch.array")

    @property
    def raid(self) -> bool:
        return len(self.devices) > 1

    @property
    def target(self) -> str:
        return self.array if self.raid else self.devices[0]

    def describe(self) -> str:
        layout = f"RAID0 {self.array} over {', '.join(self.devices)}" if self.raid else self.devices[0]
        return f"scratch {self.fstype} '{self.label}' on {layout}, mounted at {self.mountpoint} and in fstab"

    def desired(self) -> dict[str, Any]:
        return {
            "devices": self.devices,
            "mountpoint": self.mountpoint,
            "fstype": self.fstype,
            "label": self.label,
            "array": self.array if self.raid else None,
        }

    def change_refusal(self, journaled: Mapping[str, Any]) -> Refusal | None:
        """The same disks made anew (another ``fstype`` or ``label``): after the undo they would
        hold a filesystem that is not ours and be refused, the old scratch already unmounted."""
        made = (journaled.get("fstype"), journaled.get("label"))
        if journaled.get("devices") != self.devices or made == (self.fstype, self.label):
            return None
        return Refusal(
            f"scratch on {', '.join(self.devices)} is {made[0]} '{made[1]}'; {self.fstype} '{self.label}' "
            "on the same disks means formatting them again",
            "keep fstype and label as they are, or remove the scratch step (undone, its data kept), "
            "wipe the disks and add it again with consent_to_format",
        )

    def fact(self, layout: HostLayout) -> ScratchFact:
        return ScratchFact(
            tuple(self.devices),
            self.target,
            self.raid,
            layout.path(self.mountpoint),
            layout.path("/etc/fstab"),
            layout.path(MDADM_CONF),
            self.ARRAY_NAME,
        )

    def _ours_fs(self, info: dict[str, str] | None) -> bool:
        return bool(info) and info is not None and info.get("TYPE") == self.fstype and info.get("LABEL") == self.label

    def _ours_member(self, blkid: dict[str, str]) -> bool:
        label = blkid.get("LABEL", "")
        return blkid.get("TYPE") == "linux_raid_member" and (
            label == self.ARRAY_NAME or label.endswith(f":{self.ARRAY_NAME}")
        )

    def _reals(self, s: ScratchState) -> list[str]:
        return sorted(info.real if info is not None else "" for info in s.devs.values())

    def status(self, facts: ScratchState) -> Status:
        s = facts
        missing = [d for d in self.devices if s.devs.get(d) is None]
        if missing:
            raise Refusal(
                f"scratch device(s) not found: {', '.join(missing)}",
                "check the device paths (prefer /dev/disk/by-id/...)",
            )
        mounted_here = bool(s.mounted) and s.mounted in (s.real, self.target)
        fields = s.fstab.split()
        fstab_ok = len(fields) > 1 and fields[1] == fstab_escape(self.mountpoint)
        members_ok = not self.raid or (sorted(s.members) == self._reals(s) and s.mdconf > 0)
        ours = self._ours_fs(s.target)
        if ours and mounted_here and fstab_ok and members_ok:
            return Status(True, "in place")
        return Status(
            False,
            f"fs={'ours' if ours else 'none'} mounted={'yes' if mounted_here else 'no'} "
            f"fstab={'yes' if fstab_ok else 'no'}" + ("" if members_ok else " array-members=differ"),
        )

    def before(self, facts: ScratchState) -> Record:
        return {"mountpoint": self.mountpoint, "devices": self.devices, "array": self.array if self.raid else None}

    def _refuse_unsafe(self, s: ScratchState) -> None:
        """Never touch a disk that is not *proven* blank (or ours), whatever the consent says."""
        for d in self.devices:
            dev = s.devs[d]
            assert dev is not None  # status refused missing devices
            blkid = parse_export(dev.blkid[1]) if dev.blkid is not None and dev.blkid[0] == 0 else {}
            kind = blkid.get("TYPE") or blkid.get("PTTYPE")
            ours = self._ours_member(blkid) if self.raid else self._ours_fs(blkid)
            wipe = f"if its data is truly unwanted, wipe it yourself (wipefs -a {d}) and re-run"
            mnt_rc = dev.mnt[0] if dev.mnt is not None else None
            kids_rc = dev.kids[0] if dev.kids is not None else None
            if mnt_rc != 0 or kids_rc != 0:
                raise Refusal(
                    f"lsblk failed on {d} (exit {mnt_rc}/{kids_rc}): cannot tell whether it is "
                    "mounted or partitioned, refusing to format it",
                    f"run lsblk {d} on the host to see why",
                )
            mounts = dev.mnt[1].split() if dev.mnt is not None else []
            if mounts:
                raise Refusal(
                    f"{d} is mounted at {', '.join(mounts)}: refusing to use it for scratch",
                    "unmount it and remove it from fstab first, or pick other devices",
                )
            rc = dev.blkid[0] if dev.blkid is not None else None
            if rc not in (0, 2):
                raise Refusal(
                    f"blkid -p exited {rc} on {d}: cannot prove it is blank (ambivalent or colliding signatures, "
                    "or a probing error), refusing to format it",
                    f"inspect it with wipefs --no-act {d}; {wipe}",
                )
            if rc == 0 and not ours:
                raise Refusal(f"{d} holds a {kind or 'unknown'} signature: refusing to format it", wipe)
            if s.wipefs:
                sigs = parse_wipefs(dev.wipe[1]) if dev.wipe is not None and dev.wipe[0] == 0 else None
                if sigs is None:
                    raise Refusal(
                        f"wipefs --no-act failed on {d} (exit {dev.wipe[0] if dev.wipe else None}): "
                        "cannot prove it is blank",
                        f"run wipefs --no-act {d} on the host to see why",
                    )
                foreign = [x for x in sigs if not (ours and x.get("type") == kind)]
                if foreign:
                    found = ", ".join(f"{x.get('type')} at {x.get('offset')}" for x in foreign)
                    raise Refusal(f"{d} holds signature(s) {found}: refusing to format it", wipe)
            kids = dev.kids[1].strip() if dev.kids is not None else "1"
            if (int(kids) if kids.isdigit() else 2 if kids else 1) > 1 and not ours:
                raise Refusal(f"{d} has partitions or holders: refusing to format it", "pick whole, unused disks")

    def _assemblable(self, s: ScratchState) -> bool:
        """Every device is a member of one array of ours, of exactly these many devices."""
        seen: set[tuple[str, str]] = set()
        for d in self.devices:
            dev = s.devs[d]
            if dev is None:
                return False
            md = parse_export(dev.mdexam[1]) if dev.mdexam is not None and dev.mdexam[0] == 0 else {}
            blkid = parse_export(dev.blkid[1]) if dev.blkid is not None else {}
            if not self._ours_member(blkid) or not md.get("MD_UUID"):
                return False
            seen.add((md["MD_UUID"], md.get("MD_DEVICES", "")))
        return len(seen) == 1 and next(iter(seen))[1] == str(len(self.devices))

    def admit(self, facts: ScratchState, ctx: HostContext, journaled: Record | None) -> None:
        """Refusals come before anything is written (journal included)."""
        s = facts
        if self.status(s).done:
            return
        if self.raid and not s.md:
            raise Failure(
                "the kernel has no md (software RAID) driver: /proc/mdstat is missing",
                "load it (modprobe raid0), or use a single scratch device",
            )
        if self.raid and s.target is not None and s.members and sorted(s.members) != self._reals(s):
            raise Refusal(
                f"{self.array} is assembled from {', '.join(sorted(s.members))}, not from the configured "
                f"{', '.join(self.devices)}",
                f"if that array is unwanted, unmount it and stop it (mdadm --stop {self.array}), then re-run",
            )
        if not self._ours_fs(s.target):
            self._refuse_unsafe(s)

    def _need_consent(self) -> None:
        if not self.consent:
            raise Refusal(
                f"creating scratch on {', '.join(self.devices)} would format them",
                "set scratch.format: true in the config to consent (blank disks only)",
            )

    def _mkfs(self) -> Command:
        return Command((f"mkfs.{self.fstype}", "-q", "-L", self.label, self.target), f"mkfs.{self.fstype}", 1800)

    def _mount(self, layout: HostLayout, uuid: str, mounted: bool) -> Command:
        mp, fstab = layout.path(self.mountpoint), layout.path("/etc/fstab")
        parts = [f"mkdir -p {q(mp)}"]
        if not mounted:
            parts.append(f"mount -t {q(self.fstype)} -o noatime {q(self.target)} {q(mp)}")
        line = (
            f"UUID={uuid} {fstab_escape(self.mountpoint)} {self.fstype} "
            f"defaults,noatime,nofail,x-systemd.device-timeout=10s 0 2 {SCRATCH_MARK}"
        )
        parts.append(rewrite_file_script(fstab, SCRATCH_MARK, line))
        if self.raid:
            conf = layout.path(MDADM_CONF)
            parts.append(
                f"mkdir -p {q(posixpath.dirname(conf))} && {{ grep -qF {q(self.ARRAY_NAME)} {q(conf)} 2>/dev/null || "
                f"mdadm --detail --brief {q(self.array)} >> {q(conf)}; }}"
            )
        return Command(" && ".join(parts), "mount scratch")

    def change(self, facts: ScratchState, ctx: HostContext, record: Record) -> Change:
        """One round: the array, else the filesystem, else mount + fstab + mdadm.conf."""
        s, target = facts, facts.target
        if not self._ours_fs(target):
            mount_later = self._mount(ctx.layout, NEW_UUID, False).text
            if self.raid and target is None:
                if self._assemblable(s):
                    assemble = Command(("mdadm", "--assemble", self.array, *self.devices), "mdadm --assemble")
                    then = (f"{self._mkfs().text}  # only if the assembled array holds no filesystem", mount_later)
                    return Change((assemble,), record, record, final=False, then=then)
                self._need_consent()
                # --run only skips mdadm's "appears to contain ... continue?" question, which would
                # otherwise fail on our closed stdin: the disks were just proven blank (or members of
                # our own earlier array) by _refuse_unsafe.
                create = Command(
                    (
                        "mdadm",
                        "--create",
                        self.array,
                        "--run",
                        "--level=0",
                        f"--raid-devices={len(self.devices)}",
                        f"--name={self.ARRAY_NAME}",
                        *self.devices,
                    ),
                    "mdadm --create",
                    300,
                )
                return Change((create,), record, record, final=False, then=(self._mkfs().text, mount_later))
            if target and target.get("TYPE"):
                raise Refusal(
                    f"{self.target} holds a {target['TYPE']} filesystem that is not ours", "pick other devices"
                )
            self._need_consent()
            return Change((self._mkfs(),), record, record, final=False, then=(mount_later,))
        assert target is not None  # ours
        uuid = target.get("UUID", "")
        if not uuid:
            raise Failure(f"{self.target} has no filesystem UUID after mkfs", "check dmesg")
        mounted = bool(s.mounted) and s.mounted in (s.real, self.target)
        return Change((self._mount(ctx.layout, uuid, mounted),), record, record)

    def undo(self, layout: HostLayout, record: Record) -> list[Command]:
        """Unmount and forget (fstab, mdadm.conf, stop the array); the data stays on the disks.

        Uses the record's mountpoint and array (the scratch being undone may be an older one
        than this step's), falling back to this step's for records that lack them."""
        mp = layout.path(str(record.get("mountpoint") or self.mountpoint))
        array = record.get("array", self.array if self.raid else None)
        fstab, conf = layout.path("/etc/fstab"), layout.path(MDADM_CONF)
        parts = [
            f"if findmnt -n --mountpoint {q(mp)} >/dev/null 2>&1; then umount {q(mp)}; fi",
            f"if [ -f {q(fstab)} ]; then {rewrite_file_script(fstab, SCRATCH_MARK)}; fi",
        ]
        if array:
            parts.append(f"if [ -f {q(conf)} ]; then {rewrite_file_script(conf, self.ARRAY_NAME)}; fi")
            parts.append(f"if [ -b {q(array)} ]; then mdadm --stop {q(array)}; fi")
        return [Command(" && ".join(parts), "undo scratch")]
