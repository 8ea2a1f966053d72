"""Probe a host's hardware in one round trip → ``HostFacts``.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from fullserver.baremetal.errors import ProbeError
from fullserver.baremetal.transport import Runner

GPU_FIELDS = ("index", "name", "uuid", "pci.bus_id", "memory.total", "driver_version", "persistence_mode")
LSBLK_COLUMNS = "NAME,PATH,TYPE,SIZE,MODEL,SERIAL,TRAN,ROTA,FSTYPE,MOUNTPOINTS"
PROBE_TIMEOUT = 60.0

SECTION_FUNCTIONS = (
    's() { printf \'\\n@@fullserver:section %s\\n\' "$1"; }\ne() { printf \'\\n@@fullserver:end %s %s\\n\' "$1" "$2"; }'
)
"""The shell functions a script printing sections starts with (here and ``measure``): ``s NAME``
opens a section, ``e NAME RC`` closes it with the exit status (``read_sections`` reads them)."""

# CPU topology is read by one grep + awk for all CPUs: a loop of `cat`s would fork twice per
# hardware thread (448 processes on a 224-thread host) on every probe and every refresh.
PROBE_SCRIPT = f"""
{SECTION_FUNCTIONS}
s os; cat /etc/os-release; e os $?
s kernel; uname -r -m; e kernel $?
s cpuinfo; grep -m1 -E '^(model name|Model|cpu model)[[:space:]]*:' /proc/cpuinfo; e cpuinfo $?
s cpus
grep -H . /sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id /sys/devices/system/cpu/cpu[0-9]*/topology/core_id 2>/dev/null |
  awk -F: '{{ n = split($1, p, "/"); c = substr(p[6], 4); if (p[n] == "core_id") core[c] = $2; else pkg[c] = $2 }}
           END {{ for (c in core) if (c in pkg) print c, pkg[c], core[c] }}'
e cpus 0
s numa; for n in /sys/devices/system/node/node[0-9]*; do [ -d "$n" ] && echo "${{n##*/}}"; done; e numa 0
s meminfo; grep -E '^(MemTotal|HugePages_Total|Hugepagesize):' /proc/meminfo; e meminfo $?
s lsblk
if command -v lsblk >/dev/null 2>&1; then
  timeout -k 2 15 lsblk -J -b -o {LSBLK_COLUMNS} 2>/dev/null || timeout -k 2 15 lsblk -J -b -o {LSBLK_COLUMNS.replace("MOUNTPOINTS", "MOUNTPOINT")}
  e lsblk $?
else e lsblk 127; fi
s nics
for n in /sys/class/net/*; do
  [ -e "$n" ] || continue
  sp=$(cat "$n/speed" 2>/dev/null) || sp=-1
  [ -e "$n/device" ] && phys=1 || phys=0
  printf '%s|%s|%s|%s|%s|%s\\n' "${{n##*/}}" "$(cat "$n/operstate" 2>/dev/null)" "${{sp:--1}}" "$(cat "$n/mtu" 2>/dev/null)" "$phys" "$(cat "$n/type" 2>/dev/null)"
done; e nics 0
s rdma
for p in /sys/class/infiniband/*/ports/*; do
  [ -d "$p" ] || continue
  d=${{p%/ports/*}}
  printf '%s|%s|%s|%s|%s\\n' "${{d##*/}}" "${{p##*/}}" "$(cat "$p/state" 2>/dev/null)" "$(cat "$p/rate" 2>/dev/null)" "$(cat "$p/link_layer" 2>/dev/null)"
done; e rdma 0
s gpus
[ -e /dev/nvidiactl ] && echo '@@fullserver:nvidiactl'
if command -v nvidia-smi >/dev/null 2>&1; then
  timeout -k 2 20 nvidia-smi --query-gpu={",".join(GPU_FIELDS)} --format=csv,noheader,nounits 2>&1
  e gpus $?
else echo '@@fullserver:absent'; e gpus 0; fi
"""


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CpuFacts(Strict):
    model: str
    sockets: int
    physical_cores: int
    threads: int
    numa_nodes: int


class BlockDevice(Strict):
    """A whole disk; filesystem and mount facts roll up from its partitions and holders."""

    name: str
    path: str
    size_bytes: int
    model: str | None = None
    serial: str | None = None
    transport: str | None = None
    rotational: bool = False
    fstype: str | None = None
    holds_filesystem: bool
    mounted: bool
    mountpoints: list[str] = []
    os_disk: bool = False

    @property
    def nvme(self) -> bool:
        return self.transport == "nvme" or self.name.startswith("nvme")

    @property
    def size_gib(self) -> float:
        return self.size_bytes / 2**30


class Nic(Strict):
    name: str
    operstate: str
    speed_mbps: int | None
    mtu: int | None
    physical: bool
    link_type: int | None = None


class RdmaPort(Strict):
    device: str
    port: int
    state: str
    rate_gbps: float | None
    link_layer: str


class Gpu(Strict):
    index: int
    name: str
    uuid: str
    pci_bus_id: str
    memory_mib: int | None
    driver_version: str
    persistence_mode: bool | None


class HostFacts(Strict):
    """What one host really has (as probed), in stable, sorted order so diffs are quiet."""

    host: str
    os: str
    kernel: str
    arch: str
    cpu: CpuFacts
    memory_bytes: int
    hugepages_total: int = 0
    hugepage_kib: int = 0
    disks: list[BlockDevice] = []
    nics: list[Nic] = []
    rdma: list[RdmaPort] = []
    gpus: list[Gpu] = []
    warnings: list[str] = []

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30

    @property
    def gpu_models(self) -> dict[str, int]:
        return dict(sorted(Counter(g.name for g in self.gpus).items()))

    @property
    def mixed_gpus(self) -> bool:
        return len(self.gpu_models) > 1

    @property
    def local_nvme_gib(self) -> float:
        """NVMe capacity for data: NVMe disks that do not carry the OS (/, /boot, swap)."""
        return sum(d.size_gib for d in self.disks if d.nvme and not d.os_disk)

    @property
    def network_gbps(self) -> float:
        """Physical Ethernet links that are up, plus active InfiniBand ports (RoCE is counted once, as its NIC)."""
        eth = sum(
            (n.speed_mbps or 0) / 1000
            for n in self.nics
            if n.physical and n.operstate == "up" and (n.speed_mbps or 0) > 0 and n.link_type != 32
        )
        ib = sum(p.rate_gbps or 0 for p in self.rdma if p.link_layer == "InfiniBand" and p.state.endswith("ACTIVE"))
        return eth + ib


Sections = dict[str, tuple[int, list[str]]]
_SECTION = re.compile(r"^@@fullserver:section (\w+)$")
_END = re.compile(r"^@@fullserver:end (\w+) (-?\d+)$")
REQUIRED_SECTIONS = ("os", "kernel", "cpuinfo", "cpus", "numa", "meminfo", "lsblk", "nics", "rdma", "gpus")


def read_sections(text: str) -> Sections:
    """Sentinel-delimited sections (``SECTION_FUNCTIONS``) → ``{name: (exit status, lines)}``,
    every line kept; noise outside them is ignored."""
    out: Sections = {}
    current: str | None = None
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        start, end = _SECTION.match(line), _END.match(line)
        if start:
            current, lines = start.group(1), []
        elif end and current == end.group(1):
            out[end.group(1)] = (int(end.group(2)), lines)
            current = None
        elif current is not None:
            lines.append(line)
    return out


def split_sections(host: str, text: str) -> Sections:
    """The probe's sections without blank lines; every one the parsers need must be there."""
    out = {name: (rc, [x for x in lines if x.strip()]) for name, (rc, lines) in read_sections(text).items()}
    missing = [s for s in REQUIRED_SECTIONS if s not in out]
    if missing:
        raise ProbeError(
            host,
            f"probe output is incomplete: no {', '.join(missing)} section",
            "the probe was cut short; re-run, and check the host's shell (/bin/sh) works",
        )
    return out


def parse_os(lines: list[str]) -> str:
    fields = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"')
    return fields.get("PRETTY_NAME") or f"{fields.get('NAME', 'unknown')} {fields.get('VERSION_ID', '')}".strip()


def parse_cpu(host: str, cpuinfo: list[str], cpus: list[str], numa: list[str]) -> CpuFacts:
    model = cpuinfo[0].split(":", 1)[1].strip() if cpuinfo and ":" in cpuinfo[0] else "unknown"
    threads, cores, sockets = 0, set(), set()
    for line in cpus:
        parts = line.split()
        if len(parts) != 3 or not all(p.lstrip("-").isdigit() for p in parts):
            raise ProbeError(
                host, f"unexpected CPU topology line {line[:60]!r}", "expected '<cpu> <package> <core>' from sysfs"
            )
        threads += 1
        sockets.add(parts[1])
        cores.add((parts[1], parts[2]))
    if threads == 0:
        raise ProbeError(host, "no CPU topology in /sys/devices/system/cpu", "is sysfs mounted on the host?")
    return CpuFacts(
        model=model, sockets=len(sockets), physical_cores=len(cores), threads=threads, numa_nodes=max(1, len(numa))
    )


def parse_meminfo(host: str, lines: list[str]) -> tuple[int, int, int]:
    """``(MemTotal bytes, HugePages_Total, Hugepagesize KiB)``."""
    values: dict[str, int] = {}
    for line in lines:
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" and key == "MemTotal" else 1)
    if "MemTotal" not in values:
        raise ProbeError(host, "no MemTotal in /proc/meminfo", "is /proc mounted on the host?")
    return values["MemTotal"], values.get("HugePages_Total", 0), values.get("Hugepagesize", 0)


def _walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = [node]
    for child in node.get("children") or []:
        out += _walk(child)
    return out


def _mounts(node: dict[str, Any]) -> list[str]:
    raw = node.get("mountpoints")
    if raw is None:
        raw = [node.get("mountpoint")]
    return [m for m in raw if m]


def parse_lsblk(host: str, rc: int, lines: list[str]) -> list[BlockDevice]:
    """``lsblk -J -b`` → whole disks (loop devices only when attached to a file)."""
    if rc == 127:
        raise ProbeError(host, "lsblk is not installed", "install util-linux on the host")
    if rc != 0:
        raise ProbeError(
            host, f"lsblk failed (exit {rc}): {' '.join(lines)[:120]}", "run `lsblk -J` on the host to see why"
        )
    try:
        data = json.loads("\n".join(lines))
        devices = data["blockdevices"]
    except (ValueError, KeyError, TypeError):
        raise ProbeError(
            host, f"lsblk printed no JSON: {' '.join(lines)[:120]!r}", "util-linux >= 2.27 is needed for lsblk -J"
        ) from None
    disks = []
    for dev in devices:
        if dev.get("type") not in ("disk", "loop") or not dev.get("size"):
            continue
        tree = _walk(dev)
        mounts = sorted({m for n in tree for m in _mounts(n)})
        fstypes = [n.get("fstype") for n in tree if n.get("fstype")]
        disks.append(
            BlockDevice(
                name=str(dev["name"]),
                path=str(dev.get("path") or f"/dev/{dev['name']}"),
                size_bytes=int(dev["size"]),
                model=(dev.get("model") or "").strip() or None,
                serial=(dev.get("serial") or "").strip() or None,
                transport=dev.get("tran"),
                rotational=dev.get("rota") in (True, "1", 1),
                fstype=dev.get("fstype"),
                holds_filesystem=bool(fstypes) or len(tree) > 1,
                mounted=bool(mounts),
                mountpoints=mounts,
                os_disk=any(m == "/" or m.startswith("/boot") or m == "[SWAP]" for m in mounts),
            )
        )
    return sorted(disks, key=lambda d: d.name)


def parse_nics(host: str, lines: list[str]) -> list[Nic]:
    nics = []
    for line in lines:
        parts = line.split("|")
        if len(parts) != 6:
            raise ProbeError(host, f"unexpected NIC line {line[:60]!r}", "report this host's /sys/class/net layout")
        name, state, speed, mtu, phys, kind = parts
        sp = int(speed) if speed.lstrip("-").isdigit() else -1
        nics.append(
            Nic(
                name=name,
                operstate=state or "unknown",
                speed_mbps=sp if sp > 0 else None,
                mtu=int(mtu) if mtu.isdigit() else None,
                physical=phys == "1",
                link_type=int(kind) if kind.isdigit() else None,
            )
        )
    return sorted(nics, key=lambda n: n.name)


_RATE = re.compile(r"^\s*([\d.]+)\s*Gb/sec")


def parse_rdma(host: str, lines: list[str]) -> list[RdmaPort]:
    ports = []
    for line in lines:
        parts = line.split("|")
        if len(parts) != 5 or not parts[1].isdigit():
            raise ProbeError(
                host,
                f"unexpected InfiniBand port line {line[:60]!r}",
                "report this host's /sys/class/infiniband layout",
            )
        dev, port, state, rate, layer = parts
        m = _RATE.match(rate)
        ports.append(
            RdmaPort(
                device=dev,
                port=int(port),
                state=state.strip(),
                rate_gbps=float(m.group(1)) if m else None,
                link_layer=layer.strip() or "unknown",
            )
        )
    return sorted(ports, key=lambda p: (p.device, p.port))


def _na(value: str) -> bool:
    return value.strip().strip("[]").lower() in ("n/a", "not supported", "unknown error", "")


def parse_gpus(host: str, rc: int, lines: list[str]) -> tuple[list[Gpu], list[str]]:
    """``nvidia-smi --query-gpu=<GPU_FIELDS> --format=csv,noheader,nounits`` → GPUs (+ warnings)."""
    warnings: list[str] = []
    body = [x for x in lines if not x.startswith("@@fullserver:")]
    if "@@fullserver:absent" in lines:
        if "@@fullserver:nvidiactl" in lines:
            warnings.append("/dev/nvidiactl exists but nvidia-smi is not on PATH: GPUs not counted")
        else:
            warnings.append("nvidia-smi is not on PATH (no NVIDIA driver installed?): GPUs not counted")
        return [], warnings
    if rc in (124, 137):
        raise ProbeError(
            host,
            "nvidia-smi did not answer within 20s",
            "the GPU driver may be wedged; check dmesg for Xid errors, or reboot the host",
        )
    if rc != 0:
        raise ProbeError(
            host,
            f"nvidia-smi failed (exit {rc}): {' '.join(body)[:160]}",
            "check the NVIDIA driver is loaded (nvidia-smi on the host)",
        )
    gpus = []
    for row in csv.reader(body, skipinitialspace=True):
        if len(row) != len(GPU_FIELDS) or not row[0].strip().isdigit():
            raise ProbeError(
                host,
                f"malformed nvidia-smi output: {','.join(row)[:120]!r}",
                f"expected {len(GPU_FIELDS)} fields: {','.join(GPU_FIELDS)}",
            )
        index, name, uuid, bus, mem, driver, pm = (c.strip() for c in row)
        if not _na(mem) and not mem.isdigit():
            raise ProbeError(
                host,
                f"malformed nvidia-smi memory.total {mem!r}",
                "expected MiB without units (--format=csv,noheader,nounits)",
            )
        gpus.append(
            Gpu(
                index=int(index),
                name=name,
                uuid=uuid,
                pci_bus_id=bus,
                memory_mib=None if _na(mem) else int(mem),
                driver_version=driver,
                persistence_mode=None if _na(pm) else pm.lower() == "enabled",
            )
        )
    drivers = {g.driver_version for g in gpus}
    if len(drivers) > 1:
        warnings.append(f"GPUs report several driver versions: {', '.join(sorted(drivers))}")
    return sorted(gpus, key=lambda g: g.index), warnings


def parse_probe(host: str, text: str) -> HostFacts:
    """The probe script's whole stdout → ``HostFacts`` (or a ``ProbeError`` naming the host)."""
    sec = split_sections(host, text)
    kernel = (sec["kernel"][1] or ["unknown unknown"])[0].split()
    memory, huge_total, huge_kib = parse_meminfo(host, sec["meminfo"][1])
    gpus, warnings = parse_gpus(host, *sec["gpus"])
    return HostFacts(
        host=host,
        os=parse_os(sec["os"][1]),
        kernel=kernel[0],
        arch=kernel[1] if len(kernel) > 1 else "unknown",
        cpu=parse_cpu(host, sec["cpuinfo"][1], sec["cpus"][1], sec["numa"][1]),
        memory_bytes=memory,
        hugepages_total=huge_total,
        hugepage_kib=huge_kib,
        disks=parse_lsblk(host, *sec["lsblk"]),
        nics=parse_nics(host, sec["nics"][1]),
        rdma=parse_rdma(host, sec["rdma"][1]),
        gpus=gpus,
        warnings=warnings,
    )


def probe(runner: Runner) -> HostFacts:
    """Gather one host's facts in a single command (read-only; no sudo needed)."""
    result = runner.run(PROBE_SCRIPT, timeout=PROBE_TIMEOUT, label="probe", check=False)
    if result.exit_status == 127 and not result.stdout:
        raise ProbeError(
            runner.host,
            f"the probe could not start: {result.tail(120)}",
            "the host needs /bin/sh and coreutils' timeout",
        )
    return parse_probe(runner.host, result.stdout)
