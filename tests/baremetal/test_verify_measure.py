"""verify's parsers and judgements on recorded outputs (no sshd): what each case must report."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from fullserver.baremetal import measure
from fullserver.baremetal.transport import Result
from fullserver.baremetal.verify import Line, Promise, disk_lines, gpu_lines, numa_placement, verify_host
from fullserver.catalog import load_catalog
from fullserver.profiles import get_profile, load_profiles
from fullserver.workload import DedicatedHost
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
