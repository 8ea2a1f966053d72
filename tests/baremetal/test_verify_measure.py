"""verify's parsers and judgements on recorded outputs (no sshd): what each case must report."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from fullserver.baremetal import measure
from fullserver.baremetal.errors import AuthFailed, CommandTimeout, HostUnreachable, ProbeError
from fullserver.baremetal.transport import Result
from fullserver.baremetal.verify import (
    Line,
    Promise,
    disk_lines,
    failed_host,
    gpu_lines,
    gpu_problems,
    numa_placement,
    verify_host,
)
from fullserver.catalog import load_catalog
from fullserver.errors import EXIT_SHORT, EXIT_UNREACHABLE, FullserverError
from fullserver.profiles import get_profile, load_profiles
from fullserver.workload import DedicatedHost
from fullserver_cli.fleet_view import exit_code
from tests.baremetal.fakehost import FakeHost

GOLDEN = Path(__file__).parent / "golden" / "verify"


def read(name: str) -> str:
    return (GOLDEN / name).read_text()


def lines_by_name(lines: list[Line]) -> dict[str, Line]:
    return {x.dimension: x for x in lines}


def test_dgx_h100_names_the_gpu_at_x8_the_missing_nvlink_and_the_pending_remap() -> None:
    driver, gpus = measure.parse_nvidia_xml("gpu-01", read("dgx-h100.xml"))
    topo = measure.parse_topology(read("dgx-h100-topo.txt"))
    assert driver == "550.54.15"
    assert [g.index for g in gpus] == list(range(8))
    assert gpus[3].width == 8 and gpus[3].width_max == 16 and gpus[3].bus_id == "00000000:5D:00.0"
    assert gpus[0].memory_mib == 81559 and gpus[0].gen_device_max == 5

    got = lines_by_name(gpu_lines(gpus, topo, {}))
    width = got["gpu pcie width"]
    assert (width.promised, width.delivered, width.ratio, width.ok) == (16, 8, 0.5, False)
    assert width.detail == "GPU 3 (00000000:5D:00.0) at x8 of x16"
    nvlink = got["nvlink"]
    assert (nvlink.promised, nvlink.delivered, nvlink.ok) == (18, 17, False)
    assert nvlink.detail == "GPU 2-5 NV17"
    health = got["gpu memory health"]
    assert (health.promised, health.delivered) == (8, 7)
    assert health.detail == "GPU 6: row remap pending (reset the GPU)"
    assert got["gpu pcie gen"].ok is True
    assert (got["gpu-nic numa"].delivered, got["gpu-nic numa"].ok) == (8, True)


def test_v100_retired_pages_and_pending_retirement_make_the_gpu_unhealthy() -> None:
    _, gpus = measure.parse_nvidia_xml("v100", read("v100-retired.xml"))
    assert (gpus[1].retired_dbe, gpus[1].retired_sbe, gpus[1].retired_pending) == (2, 0, True)
    assert gpus[0].gen_device_max == 3  # no max_device_link_gen before driver 5xx: max_link_gen
    got = lines_by_name(gpu_lines(gpus, measure.Topology(), {}))
    assert got["gpu memory health"].delivered == 1
    assert got["gpu memory health"].detail == (
        "GPU 1: 2 pages retired (2 double-bit), page retirement pending (reset the GPU)"
    )
    assert "nvlink" not in got and "gpu-nic numa" not in got  # no topology: nothing judged, nothing invented


def test_a_gen5_gpu_in_a_gen4_slot_is_short_while_idle_down_clocking_is_not() -> None:
    _, gpus = measure.parse_nvidia_xml("pcie", read("h100-pcie-gen4-slot.xml"))
    got = lines_by_name(gpu_lines(gpus, measure.Topology(), {}))
    gen = got["gpu pcie gen"]
    assert (gen.promised, gen.delivered, gen.ok) == (5, 4, False)
    assert gen.detail == "GPU 0 in a gen 4 slot (GPU supports gen 5)"
    assert got["gpu memory health"].detail == "GPU 0: ECC disabled"

    in_gen5_slot = [replace(gpus[0], gen_max=5)]  # the same GPU, idle at gen 1 in a gen 5 slot
    gen5 = lines_by_name(gpu_lines(in_gen5_slot, measure.Topology(), {}))["gpu pcie gen"]
    assert gen5.ok is True and gen5.detail == "now below max on GPU 0 (idle GPUs down-clock the link)"


def test_a_gpu_whose_every_nic_is_across_the_socket_link_is_named() -> None:
    _, gpus = measure.parse_nvidia_xml("pcie", read("v100-retired.xml"))
    topo = measure.parse_topology(read("pcie-far-nic-topo.txt"))
    assert topo.nics == {"NIC0": "mlx5_0"} and topo.gpu_numa == {0: 0, 1: 1}
    assert topo.nvlinks == {(0, 1): 0}
    placed = numa_placement(gpus, topo, {})
    assert placed == (1, "GPU 1: every NIC is across the socket link (SYS)")
    assert "nvlink" not in lines_by_name(gpu_lines(gpus, topo, {}))  # PCIe-only GPUs promise no NVLink


def test_numa_falls_back_to_sysfs_when_topo_lists_no_nic() -> None:
    _, gpus = measure.parse_nvidia_xml("pcie", read("v100-retired.xml"))
    topo = measure.Topology(gpus=[0, 1], gpu_numa={0: 0, 1: 1})
    assert numa_placement(gpus, topo, measure.parse_nic_numa("eth0|0\neth1|0\n")) == (
        1,
        "GPU 1 on NUMA node 1, no NIC there",
    )
    assert numa_placement(gpus, topo, measure.parse_nic_numa("eth0|-1\n")) is None  # nothing known: not judged


@pytest.mark.parametrize(
    ("name", "read_mb_s", "write_mb_s", "iops"),
    [
        ("fio-seqwrite-ext4-loop.json", 0.0, 6458.0, 0.0),
        ("fio-randread-ext4-loop.json", 847.6, 0.0, 206939.5),
    ],
)
def test_fio_json_gives_mb_per_second_and_iops(name: str, read_mb_s: float, write_mb_s: float, iops: float) -> None:
    assert measure.parse_fio(read(name)) == measure.FioJob(read_mb_s, write_mb_s, iops)


def test_fio_failure_is_an_error_not_a_zero() -> None:
    with pytest.raises(ValueError, match="seqwrite failed with error 30"):
        measure.parse_fio(read("fio-seqwrite-readonly.json"))
    with pytest.raises(ValueError, match="no fio job"):
        measure.parse_fio("fio: engine libaio not loadable\n")


def test_iperf3_json_gives_received_gbps_and_its_error() -> None:
    assert measure.parse_iperf(read("iperf3-loopback-2streams.json")) == 21.16
    with pytest.raises(ValueError, match="unable to connect to server: Connection refused"):
        measure.parse_iperf(read("iperf3-refused.json"))


def _promise(profile: str, scratch: str = "/mnt/scratch") -> Promise:
    return Promise(profile=get_profile(profile, load_profiles()), catalog=load_catalog(), scratch=scratch)


def test_scratch_promise_is_the_profiles_storage_minimum_per_accelerator_or_none() -> None:
    out = {
        "mount": (0, "/dev/loop3 ext4"),
        "avail": (0, "88000"),
        "seqwrite": (0, read("fio-seqwrite-ext4-loop.json")),
        "seqread": (0, read("fio-randread-ext4-loop.json").replace('"jobname" : "randread"', '"jobname" : "seqread"')),
        "randread": (0, read("fio-randread-ext4-loop.json")),
    }
    tuned = lines_by_name(disk_lines(out, _promise("fine-tuning"), 8, measure.Caps(fio_size_mib=16))[0])
    assert tuned["scratch seq write"].promised == 250 * 8
    assert tuned["scratch 4k read"].promised == 3000 * 8 and tuned["scratch 4k read"].delivered == 206939.5
    assert tuned["scratch seq read"].detail == "/mnt/scratch (/dev/loop3)"
    plain = lines_by_name(disk_lines(out, _promise("scale-training"), 8, measure.Caps(fio_size_mib=16))[0])
    assert plain["scratch seq write"].promised is None  # no figure promised: shown, ratio n/a, not judged
    assert plain["scratch seq write"].ratio is None and plain["scratch seq write"].ok is None


def test_an_unmounted_scratch_is_never_measured() -> None:
    lines, problems = disk_lines({"mount": (1, "")}, _promise("fine-tuning", "/data/scratch"), 1, measure.Caps())
    assert lines == []
    assert problems == [
        "no filesystem mounted at /data/scratch: scratch throughput not measured (verify never touches an unmounted disk)"
    ]


def test_disk_script_checks_the_mount_and_works_only_in_its_own_directory(tmp_path: Path) -> None:
    """Run the real script on a plain directory (not a mountpoint): it must stop at findmnt and
    create nothing there."""
    odd = tmp_path / "not mounted; touch pwned"
    odd.mkdir()
    script = measure.disk_script(str(odd), measure.Caps(fio_seconds=1, fio_size_mib=1))
    res = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    sec = measure.sections(res.stdout)
    assert sec["mount"][0] != 0 and "seqwrite" not in sec
    assert list(odd.iterdir()) == [] and not (tmp_path / "pwned").exists()
    assert f"--mountpoint '{odd}'" in script and f"mktemp -d '{odd}'/{measure.SCRATCH_PREFIX}XXXXXX" in script


def test_ratio_and_verdict_of_a_line() -> None:
    assert Line(dimension="x", unit="Gbps", promised=100, delivered=25).ratio == 0.25
    assert Line(dimension="x", unit="Gbps", promised=100, delivered=25).ok is False
    assert Line(dimension="x", unit="Gbps", promised=None, delivered=25).ok is None
    assert Line(dimension="x", unit="Gbps", promised=10, delivered=None).ratio is None


def _section(name: str, rc: int, text: str) -> str:
    return f"\n@@fullserver:section {name}\n{text}\n@@fullserver:end {name} {rc}\n"


def test_a_dgx_with_a_port_trained_at_half_rate_and_no_scratch_mounted() -> None:
    """The whole first phase on one host without sshd: the DGX H100 probe capture with one NDR
    port at 200 Gb/s, the GPU report above, no filesystem at the scratch mountpoint."""
    probe_text = (GOLDEN.parent / "probe" / "dgx-h100.txt").read_text()
    degraded = probe_text.replace("mlx5_3|1|4: ACTIVE|400 Gb/sec (4X NDR)", "mlx5_3|1|4: ACTIVE|200 Gb/sec (4X HDR)")
    assert degraded != probe_text
    gpus = _section("xml", 0, read("dgx-h100.xml")) + _section("topo", 0, read("dgx-h100-topo.txt"))
    host = FakeHost(
        answers={
            "probe": [Result(0, degraded, "")],
            "verify gpus": [Result(0, gpus, "")],
            "verify nic numa": [Result(0, "", "")],
            "verify scratch": [Result(0, _section("mount", 1, ""), "")],
        },
        host="gpu-07",
    )
    contract = DedicatedHost(
        accelerator="H100-80GB", accelerator_count=8, vcpus=224, memory_gib=2048, network_gbps=3400
    )
    promise = Promise(profile=get_profile("fine-tuning", load_profiles()), catalog=load_catalog(), expect=contract)
    r = verify_host(host, promise, measure.Caps(), "gpu-07", "192.0.2.17:22")
    got = lines_by_name(r.lines)
    link = got["network link (contract)"]
    assert (link.promised, link.delivered, link.ok) == (3400, 3201, False)
    assert link.detail == "mlx5_3/1 at 200 of 400 Gb/s"
    assert got["rdma ports active"].delivered == 10  # the port is up, only slow
    assert got["gpu pcie width"].detail == "GPU 3 (00000000:5D:00.0) at x8 of x16"
    assert not [x for x in r.lines if x.dimension.startswith("scratch")]
    assert r.status == "short"
    assert "network link (contract) 3201 < 3400 Gbps (mlx5_3/1 at 200 of 400 Gb/s)" in r.summary()
    assert [c.label for c in host.calls] == ["probe", "verify gpus", "verify nic numa", "verify scratch"]
    assert not any(c.write for c in host.calls)  # verify changes nothing on the host


# --- review fixes: each case below was read wrongly or run unsafely before ----------------------


def test_a_gpu_in_an_x8_slot_is_short_though_nvml_says_x8_of_x8() -> None:
    """NVML's maximum is the slot's: an x16 H100 in an x8 slot shows ``max_link_width 8x`` and
    ``current 8x``. sysfs ``max_link_width`` is the GPU's own, so the promise stays x16."""
    _, gpus = measure.parse_nvidia_xml("gpu-01", read("dgx-h100.xml"))
    in_x8_slot = [replace(gpus[0], width=8, width_max=8), *gpus[1:3]]
    sysfs = measure.parse_pcie_sysfs("0000:18:00.0|16|8\n0000:2a:00.0|16|16\n0000:3a:00.0||\n")
    assert sysfs == {"0000:18:00.0": 16, "0000:2a:00.0": 16}
    width = lines_by_name(gpu_lines(in_x8_slot, measure.Topology(), {}, sysfs))["gpu pcie width"]
    assert (width.promised, width.delivered, width.ok) == (16, 8, False)
    assert width.detail == "GPU 0 (00000000:18:00.0) at x8 of x16"


def test_a_gpu_whose_link_width_is_not_reported_is_not_verified() -> None:
    _, gpus = measure.parse_nvidia_xml("gpu-01", read("dgx-h100.xml"))
    unknown = [replace(gpus[0], width=None), replace(gpus[1], gen_max=None, width=None), gpus[2]]
    assert "gpu pcie width" in lines_by_name(gpu_lines(unknown, measure.Topology(), {}))  # GPU 2 still judged
    assert gpu_problems(unknown) == [
        "GPU 0 (00000000:18:00.0): PCIe link width not reported by nvidia-smi: not measured",
        "GPU 1 (00000000:2A:00.0): PCIe link width and generation not reported by nvidia-smi: not measured",
    ]
    assert gpu_problems(gpus) == []


def _gpu_host(topo: tuple[int, str], pcie: str = "", scratch: Result | None = None) -> FakeHost:
    probe_text = (GOLDEN.parent / "probe" / "dgx-h100.txt").read_text()
    gpus = _section("xml", 0, read("dgx-h100.xml")) + _section("topo", topo[0], topo[1]) + _section("pcie", 0, pcie)
    return FakeHost(
        answers={
            "probe": [Result(0, probe_text, "")],
            "verify gpus": [Result(0, gpus, "")],
            "verify scratch": [scratch or Result(0, _section("mount", 1, ""), "")],
        },
        host="gpu-07",
    )


def test_measure_host_reads_each_gpus_own_width_from_sysfs() -> None:
    xml = read("dgx-h100.xml")
    first_gpu_x8 = xml.replace("<max_link_width>16x</max_link_width>", "<max_link_width>8x</max_link_width>", 1)
    first_gpu_x8 = first_gpu_x8.replace(
        "<current_link_width>16x</current_link_width>", "<current_link_width>8x</current_link_width>", 1
    )
    host = _gpu_host((0, read("dgx-h100-topo.txt")), "0000:18:00.0|16|8\n")
    host.answers["verify gpus"] = [
        Result(
            0,
            _section("xml", 0, first_gpu_x8)
            + _section("topo", 0, read("dgx-h100-topo.txt"))
            + _section("pcie", 0, "0000:18:00.0|16|8\n"),
            "",
        )
    ]
    r = verify_host(host, _promise("fine-tuning"), measure.Caps(), "gpu-07", "192.0.2.17:22")
    assert "GPU 0 (00000000:18:00.0) at x8 of x16" in lines_by_name(r.lines)["gpu pcie width"].detail


def test_a_failed_topology_is_a_problem_not_a_pass() -> None:
    host = _gpu_host((124, "timeout"))
    r = verify_host(host, _promise("fine-tuning"), measure.Caps(), "gpu-07", "192.0.2.17:22")
    assert "nvlink" not in lines_by_name(r.lines)
    assert "nvidia-smi topo -m failed (exit 124): NVLink and GPU-NIC NUMA placement not measured: timeout" in r.problems


@pytest.mark.parametrize("scratch", ["/", "/var", "/mnt/scratch/../.."])
def test_a_scratch_that_is_a_system_directory_never_reaches_fio(scratch: str) -> None:
    """The CLI and the config refuse these too; the core refuses them again before any command."""
    host = _gpu_host((0, read("dgx-h100-topo.txt")))
    r = verify_host(host, _promise("fine-tuning", scratch), measure.Caps(), "gpu-07", "192.0.2.17:22")
    assert "verify scratch" not in [c.label for c in host.calls]
    assert any(p.startswith("scratch: ") and p.endswith("scratch throughput not measured") for p in r.problems)
    with pytest.raises(ValueError):
        measure.disk_script(scratch, measure.Caps())


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (HostUnreachable("h", "connection refused"), "error", EXIT_UNREACHABLE),
        (AuthFailed("h", "key refused"), "error", EXIT_UNREACHABLE),
        (CommandTimeout("h", "`verify scratch` passed its deadline"), "unverified", EXIT_SHORT),
        (ProbeError("h", "nvidia-smi -q -x printed no XML"), "unverified", EXIT_SHORT),
    ],
)
def test_only_a_host_that_could_not_be_reached_is_unreachable(error: FullserverError, status: str, code: int) -> None:
    r = failed_host("h", "192.0.2.1:22", error)
    assert r.status == status and exit_code([r]) == code
    assert error.what in r.summary()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "scratch"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@needs_root
def test_a_scratch_path_that_is_a_symlink_to_a_mounted_filesystem_is_not_measured(tmp_path: Path, tmpfs: Path) -> None:
    """findmnt --mountpoint follows symlinks (a link to / passes it): the script checks the
    directory it made is on the filesystem mounted at the scratch path itself, before any fio."""
    link = tmp_path / "link"
    link.symlink_to(tmpfs)
    script = measure.disk_script(str(link), measure.Caps(fio_seconds=1, fio_size_mib=1))
    res = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    sec = measure.sections(res.stdout)
    assert sec["mount"][0] == 0  # findmnt alone would have let it through
    assert (sec["where"][0], sec["where"][1].strip()) == (1, str(tmpfs)) and "seqwrite" not in sec
    assert list(tmpfs.iterdir()) == []
    _, problems = disk_lines(sec, _promise("fine-tuning", str(link)), 1, measure.Caps(fio_size_mib=1))
    assert problems == [
        f"{link} resolves to the filesystem at {tmpfs}, not the one mounted at {link} "
        "(a symlink, or unmounted meanwhile): scratch throughput not measured"
    ]


@needs_root
def test_a_terminated_disk_script_starts_no_further_fio_and_leaves_nothing(tmp_path: Path, tmpfs: Path) -> None:
    """The transport's deadline sends TERM: the script must stop there, not clean up and go on."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fio = bin_dir / "fio"
    fio.write_text('#!/bin/sh\nsleep 2\necho "{\\"jobs\\": []}"\n')
    fio.chmod(0o755)
    script = measure.disk_script(str(tmpfs), measure.Caps(fio_seconds=1, fio_size_mib=1))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    res = subprocess.run(
        ["timeout", "-k", "20", "1", "sh", "-c", script], capture_output=True, text=True, timeout=60, env=env
    )
    sec = measure.sections(res.stdout)
    assert "seqwrite" not in sec or sec["seqwrite"][1].strip()  # the running one may finish
    assert "seqread" not in sec and "randread" not in sec
    assert list(tmpfs.iterdir()) == []
