"""What ``fullserver verify`` measures on a host: commands out, pure parsers in.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from fullserver.baremetal.config import check_path
from fullserver.baremetal.errors import ProbeError
from fullserver.baremetal.probe import SECTION_FUNCTIONS, read_sections
from fullserver.baremetal.shell import q

SCRATCH_PREFIX = ".fullserver-verify."
"""The scratch directory's name prefix (``mktemp -d``): a leftover one is recognisably ours."""


@dataclass(frozen=True)
class Caps:
    """The bounds of every measurement (the bench and the tests shrink them)."""

    fio_seconds: int = 10
    fio_size_mib: int = 1024
    iperf_seconds: int = 5
    iperf_streams: int = 4
    iperf_port: int = 5201
    gpu_seconds: int = 30

    @property
    def disk_deadline(self) -> float:
        """Three fio runs, each bounded, plus setup and cleanup."""
        return 3 * (self.fio_seconds + 15) + 30.0

    @property
    def net_deadline(self) -> float:
        return self.iperf_seconds + 30.0


# --- sections -----------------------------------------------------------------------------------


def sections(text: str) -> dict[str, tuple[int, str]]:
    """``@@fullserver:section NAME`` … ``@@fullserver:end NAME RC`` → ``{name: (rc, text)}``
    (``probe.read_sections``, each section's lines joined back into its text)."""
    return {name: (rc, "\n".join(lines)) for name, (rc, lines) in read_sections(text).items()}


# --- GPUs ---------------------------------------------------------------------------------------


def gpu_script(caps: Caps) -> str:
    """``nvidia-smi -q -x`` and ``nvidia-smi topo -m``, each under its own deadline (a wedged
    driver hangs nvidia-smi), then each GPU's PCIe capability from sysfs (``PCIE_SYSFS_SCRIPT``);
    127 for both nvidia-smi sections, and no PCIe section, when nvidia-smi is not installed."""
    t = caps.gpu_seconds
    return (
        f"{SECTION_FUNCTIONS}\n"
        "if ! command -v nvidia-smi >/dev/null 2>&1; then s xml; e xml 127; s topo; e topo 127; exit 0; fi\n"
        f"s xml; timeout -k 2 {t} nvidia-smi -q -x 2>&1; e xml $?\n"
        f"s topo; timeout -k 2 {t} nvidia-smi topo -m 2>&1; e topo $?\n"
        f"s pcie; {PCIE_SYSFS_SCRIPT}; e pcie 0\n"
    )


PCIE_SYSFS_SCRIPT = (
    "for d in /sys/bus/pci/devices/*; do "
    '[ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] || continue; '
    'case "$(cat "$d/class" 2>/dev/null)" in 0x0300*|0x0302*) ;; *) continue;; esac; '
    'printf \'%s|%s|%s\\n\' "${d##*/}" "$(cat "$d/max_link_width" 2>/dev/null)" '
    '"$(cat "$d/current_link_width" 2>/dev/null)"; done'
)
"""Each NVIDIA GPU's own PCIe capability from sysfs (``bdf|max_link_width|current_link_width``).

NVML's ``max_link_width`` (what ``nvidia-smi -q -x`` shows) is the widest link "possible with
this device *and system*": an x16 GPU in an x8 slot reports max x8, current x8, and would read as
delivering. sysfs ``max_link_width`` is the device's own Link Capabilities register, slot or not."""


def _bdf(bus_id: str) -> str:
    """``00000000:5D:00.0`` (NVML) or ``0000:5d:00.0`` (sysfs) → ``0000:5d:00.0``."""
    domain, _, rest = bus_id.strip().lower().partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return bus_id.strip().lower()


def parse_pcie_sysfs(text: str) -> dict[str, int]:
    """``bdf|max|current`` lines → ``{bdf: the device's own maximum width}`` (unknown: left out)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and int(parts[1]) > 0:
            out[_bdf(parts[0])] = int(parts[1])
    return out


def device_width(gpu: GpuLink, sysfs: dict[str, int]) -> int | None:
    """The widest link this GPU itself supports: its sysfs capability, else NVML's (slot-limited) max."""
    own = sysfs.get(_bdf(gpu.bus_id)) if gpu.bus_id else None
    return max(x for x in (own, gpu.width_max) if x) if (own or gpu.width_max) else None


@dataclass(frozen=True)
class GpuLink:
    """One GPU as ``nvidia-smi -q -x`` shows it. ``gen_max`` is the fastest generation both the GPU
    and its slot support (``max_link_gen``); ``gen_device_max`` the GPU's own; the *current*
    generation is informational only, since an idle GPU down-clocks its link to save power (the
    width does not change at idle, so it is judged)."""

    index: int
    name: str
    bus_id: str
    memory_mib: int | None
    gen: int | None
    gen_max: int | None
    gen_device_max: int | None
    width: int | None
    width_max: int | None
    ecc: str | None
    retired_sbe: int = 0
    retired_dbe: int = 0
    retired_pending: bool = False
    remap_failure: bool = False
    remap_pending: bool = False
    remap_unc: int = 0


def _num(text: str | None) -> int | None:
    """``'16x'``, ``'81559 MiB'``, ``'5'`` → int; ``'N/A'``, ``'[Not Supported]'`` → None."""
    m = re.match(r"\s*(\d+)", text or "")
    return int(m.group(1)) if m else None


def _text(node: ET.Element | None, path: str) -> str | None:
    found = node.find(path) if node is not None else None
    return found.text.strip() if found is not None and found.text is not None else None


def _yes(text: str | None) -> bool:
    return (text or "").strip().lower() == "yes"


def parse_nvidia_xml(host: str, text: str) -> tuple[str, list[GpuLink]]:
    """``nvidia-smi -q -x`` → (driver version, GPUs in index order)."""
    start = text.find("<?xml")
    try:
        root = ET.fromstring(text[start:] if start >= 0 else text)
    except ET.ParseError as exc:
        raise ProbeError(
            host, f"nvidia-smi -q -x printed no XML ({exc}): {text[:80]!r}", "run `nvidia-smi -q -x` on the host"
        ) from None
    driver = _text(root, "driver_version") or "unknown"
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        link = g.find("pci/pci_gpu_link_info")
        minor = _num(_text(g, "minor_number"))
        retired = g.find("retired_pages")
        gpus.append(
            GpuLink(
                index=minor if minor is not None else i,
                name=_text(g, "product_name") or "unknown",
                bus_id=g.get("id") or _text(g, "pci/pci_bus_id") or "",
                memory_mib=_num(_text(g, "fb_memory_usage/total")),
                gen=_num(_text(link, "pcie_gen/current_link_gen")),
                gen_max=_num(_text(link, "pcie_gen/max_link_gen")),
                gen_device_max=_num(_text(link, "pcie_gen/max_device_link_gen"))
                or _num(_text(link, "pcie_gen/max_link_gen")),
                width=_num(_text(link, "link_widths/current_link_width")),
                width_max=_num(_text(link, "link_widths/max_link_width")),
                ecc=_text(g, "ecc_mode/current_ecc"),
                retired_sbe=_num(_text(retired, "multiple_single_bit_retirement/retired_count")) or 0,
                retired_dbe=_num(_text(retired, "double_bit_retirement/retired_count")) or 0,
                retired_pending=_yes(_text(retired, "pending_retirement")) or _yes(_text(retired, "pending_blacklist")),
                remap_failure=_yes(_text(g, "remapped_rows/remapped_row_failure")),
                remap_pending=_yes(_text(g, "remapped_rows/remapped_row_pending")),
                remap_unc=_num(_text(g, "remapped_rows/remapped_row_unc")) or 0,
            )
        )
    return driver, sorted(gpus, key=lambda x: x.index)


@dataclass(frozen=True)
class Topology:
    """``nvidia-smi topo -m``: NVLink count per GPU pair (0: none), each GPU's NUMA node, and each
    GPU's nearest NIC relation (``PIX`` … ``SYS``; ``SYS`` crosses the socket interconnect)."""

    gpus: list[int] = field(default_factory=list)
    nvlinks: dict[tuple[int, int], int] = field(default_factory=dict)
    gpu_numa: dict[int, int | None] = field(default_factory=dict)
    gpu_nic: dict[int, str] = field(default_factory=dict)
    nics: dict[str, str] = field(default_factory=dict)


# Nearest first (nvidia-smi topo -m legend).
NIC_RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
_NV = re.compile(r"^NV(\d+)$")


def parse_topology(text: str) -> Topology:
    """The tab-separated matrix → ``Topology``; the NIC legend (``NIC0: mlx5_0``) names the NICs."""
    lines = [x for x in text.splitlines() if x.strip()]
    header_at = next((i for i, x in enumerate(lines) if x.startswith("\t") and "GPU0" in x), None)
    if header_at is None:
        return Topology()
    cols = [c.strip() for c in lines[header_at].split("\t")[1:]]
    topo = Topology()
    for line in lines[header_at + 1 :]:
        cells = [c.strip() for c in line.split("\t")]
        row = cells[0]
        if not re.fullmatch(r"GPU\d+", row):
            if row.startswith("NIC") or not cells[1:]:
                continue
            break
        gi = int(row[3:])
        topo.gpus.append(gi)
        values = dict(zip(cols, cells[1:], strict=False))
        relations = []
        for col, val in values.items():
            if re.fullmatch(r"GPU\d+", col) and int(col[3:]) != gi:
                m = _NV.match(val)
                a, b = sorted((gi, int(col[3:])))
                topo.nvlinks[(a, b)] = int(m.group(1)) if m else 0
            elif re.fullmatch(r"NIC\d+", col) and val in NIC_RELATIONS:
                relations.append(val)
        numa = values.get("NUMA Affinity", "")
        topo.gpu_numa[gi] = int(numa) if numa.isdigit() else None
        if relations:
            topo.gpu_nic[gi] = min(relations, key=NIC_RELATIONS.index)
    for line in lines:
        m = re.match(r"^\s*(NIC\d+):\s*(\S+)\s*$", line)
        if m:
            topo.nics[m.group(1)] = m.group(2)
    return topo


# --- local scratch (fio) ------------------------------------------------------------------------


@dataclass(frozen=True)
class FioJob:
    read_mb_s: float
    write_mb_s: float
    read_iops: float


FIO_JOBS = {
    # name: (rw, block size, queue depth)
    "seqwrite": ("write", "1M", 16),
    "seqread": ("read", "1M", 16),
    "randread": ("randread", "4k", 32),
}


def fio_args(job: str, caps: Caps) -> list[str]:
    """One capped fio run on ``fio.dat`` inside the current directory (the scratch dir)."""
    rw, bs, depth = FIO_JOBS[job]
    return [
        "fio",
        f"--name={job}",
        "--filename=fio.dat",
        f"--rw={rw}",
        f"--bs={bs}",
        f"--size={caps.fio_size_mib}M",
        f"--runtime={caps.fio_seconds}",
        "--time_based",
        "--ioengine=libaio",
        f"--iodepth={depth}",
        "--direct=1",
        "--output-format=json",
    ]


def disk_script(mountpoint: str, caps: Caps) -> str:
    """Check the scratch mountpoint is a mounted filesystem, make a private directory in it, run
    the three fio jobs there (write first: it lays out the file the reads use), remove it.

    ``findmnt --mountpoint`` answers for that exact path only (a plain directory on ``/`` is not
    a scratch filesystem); the ``trap`` removes the directory on every exit, a killed fio too.
    Only a SIGKILL (the deadline's last resort) skips the trap: a directory of ours older than
    any run can last is removed by the next run (``find -mmin``), never one a run may still use."""
    check_path(mountpoint, "scratch", mountpoint=True)  # never /, /var...: raises ValueError
    m = q(mountpoint)
    t = caps.fio_seconds + 10
    stale = int(caps.disk_deadline // 60) + 1
    runs = "\n".join(
        f"s {job}; timeout -k 2 {t} {' '.join(q(a) for a in fio_args(job, caps))} 2>&1; e {job} $?" for job in FIO_JOBS
    )
    return (
        f"{SECTION_FUNCTIONS}\n"
        f"s mount; findmnt -n -r -o SOURCE,FSTYPE --mountpoint {m}; e mount $?\n"
        f"findmnt -n --mountpoint {m} >/dev/null 2>&1 || exit 0\n"
        "command -v fio >/dev/null 2>&1 || { s fio; e fio 127; exit 0; }\n"
        # fio's file must fit with room to spare: a full scratch is reported, never filled up
        # (statfs of the mounted scratch itself: available blocks x block size, in KiB)
        f"a=$(stat -f -c '%a %S' {m} | awk '{{print int($1 * $2 / 1024)}}'); s avail; echo \"$a\"; e avail 0\n"
        f'[ "${{a:-0}}" -ge {caps.fio_size_mib * 1024 * 5 // 4} ] 2>/dev/null || exit 0\n'
        f"d=$(mktemp -d {m}/{SCRATCH_PREFIX}XXXXXX) || {{ s mktemp; e mktemp 1; exit 0; }}\n"
        # a signal ends the script (the EXIT trap then removes the directory): a trap that only
        # cleaned up would let the shell go on to start the next fio after its deadline
        "trap 'cd /; rm -rf \"$d\"' EXIT; trap 'exit 143' INT TERM HUP\n"
        'cd "$d" || exit 0\n'
        # the directory must sit on the filesystem mounted at the scratch path itself: findmnt
        # follows symlinks (a scratch path linking to / passes it), and the scratch may have been
        # unmounted since (mktemp then made the directory on the filesystem below). Once we are
        # inside it, that filesystem cannot be unmounted from under fio (EBUSY).
        f'w=$(stat -c %m .); [ "$w" = {m} ] || {{ s where; printf \'%s\\n\' "$w"; e where 1; exit 0; }}\n'
        # killed runs' directories, on the verified filesystem only (its mount is pinned by our cwd)
        f"find {m} -mindepth 1 -maxdepth 1 -type d -name '{SCRATCH_PREFIX}*' -mmin +{stale} -exec rm -rf -- {{}} + 2>/dev/null\n"
        f"{runs}\n"
    )


def parse_fio(text: str) -> FioJob:
    """fio's JSON (``jobs[0]``): bytes/s → MB/s (10^6), and IOPS; fio's own error is raised."""
    start = text.find("{")
    data = json.loads(text[start:]) if start >= 0 else {}
    jobs = data.get("jobs") or []
    if not jobs:
        raise ValueError(f"no fio job in output: {text.strip()[:120]!r}")
    job = jobs[0]
    if job.get("error"):
        raise ValueError(f"fio job {job.get('jobname')} failed with error {job['error']}")

    def rate(kind: str) -> float:
        side = job.get(kind) or {}
        bw = side.get("bw_bytes")
        return float(bw if bw is not None else side.get("bw", 0) * 1024) / 1e6

    return FioJob(
        read_mb_s=round(rate("read"), 1),
        write_mb_s=round(rate("write"), 1),
        read_iops=round(float((job.get("read") or {}).get("iops", 0.0)), 1),
    )


# --- network (iperf3) ---------------------------------------------------------------------------


def iperf_server_script(caps: Caps) -> str:
    """One test (``-1``) under a deadline, detached from the session; prints its pid."""
    t = caps.iperf_seconds + 25
    return (
        "command -v iperf3 >/dev/null 2>&1 || exit 127\n"
        f"setsid timeout -k 2 {t} iperf3 -s -1 -p {caps.iperf_port} </dev/null >/dev/null 2>&1 &\n"
        "echo $!"
    )


def iperf_client_script(address: str, caps: Caps) -> str:
    """Multi-stream TCP to the peer; retries for up to 5 s while the peer's server starts."""
    t = caps.iperf_seconds + 15
    client = (
        f"timeout -k 2 {t} iperf3 -c {q(address)} -p {caps.iperf_port} "
        f"-P {caps.iperf_streams} -t {caps.iperf_seconds} -J --connect-timeout 3000"
    )
    return (
        "command -v iperf3 >/dev/null 2>&1 || exit 127\n"
        f'n=0; while :; do o=$({client} 2>&1); rc=$?; case "$o" in *"Connection refused"*) '
        "[ $n -lt 10 ] && { n=$((n+1)); sleep 0.5; continue; };; esac; break; done; printf '%s\\n' \"$o\"; exit $rc"
    )


def iperf_stop_script(pid: str) -> str:
    """Kill the server if it is still there and still iperf3's ``timeout`` (a pid can be reused)."""
    p = q(pid)
    return f"grep -q timeout /proc/{p}/cmdline 2>/dev/null && kill {p} 2>/dev/null; exit 0"


def parse_iperf(text: str) -> float:
    """``iperf3 -J`` → Gbit/s the receiver got (``end.sum_received``); iperf3's error is raised."""
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else {}
    except ValueError:
        raise ValueError(f"iperf3 printed no JSON: {text.strip()[:120]!r}") from None
    if data.get("error"):
        raise ValueError(f"iperf3: {data['error']}")
    bps = ((data.get("end") or {}).get("sum_received") or {}).get("bits_per_second")
    if bps is None:
        raise ValueError("iperf3 JSON has no end.sum_received")
    return round(float(bps) / 1e9, 2)


# --- NIC placement ------------------------------------------------------------------------------

NIC_NUMA_SCRIPT = (
    'for n in /sys/class/net/*; do [ -e "$n/device" ] || continue; '
    'printf \'%s|%s\\n\' "${n##*/}" "$(cat "$n/device/numa_node" 2>/dev/null)"; done; exit 0'
)


def parse_nic_numa(text: str) -> dict[str, int | None]:
    """``name|numa_node`` lines → ``{nic: node}`` (-1 or empty, a single-node box: None)."""
    out: dict[str, int | None] = {}
    for line in text.splitlines():
        name, sep, node = line.partition("|")
        if sep:
            out[name] = int(node) if node.strip().isdigit() else None
    return out
