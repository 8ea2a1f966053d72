"""Pure tests: probe parsers against captured output, GPU → catalog matching, inventory parsing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path

import pytest

from fullserver.baremetal.audit import audit_facts, match_accelerator
from fullserver.baremetal.errors import ProbeError
from fullserver.baremetal.inventory import inventory_from_data, keys_from_known_hosts, parse_key_line
from fullserver.baremetal.probe import parse_gpus, parse_lsblk, parse_probe
from fullserver.catalog import load_catalog
from fullserver.errors import InputError
from fullserver.profiles import load_profiles

GOLDEN = Path(__file__).parent / "golden" / "probe"


@pytest.mark.parametrize("case", sorted(p.stem for p in GOLDEN.glob("*.txt")))
def test_probe_golden(case: str) -> None:
    facts = parse_probe("h", (GOLDEN / f"{case}.txt").read_text())
    expected = json.loads((GOLDEN / f"{case}.json").read_text())
    assert facts.model_dump(mode="json") == expected


def test_dgx_h100_facts() -> None:
    f = parse_probe("gpu-01", (GOLDEN / "dgx-h100.txt").read_text())
    assert (f.cpu.sockets, f.cpu.physical_cores, f.cpu.threads, f.cpu.numa_nodes) == (2, 112, 224, 2)
    assert f.gpu_models == {"NVIDIA H100 80GB HBM3": 8} and not f.mixed_gpus
    assert all(g.persistence_mode for g in f.gpus)
    os_disks = [d.name for d in f.disks if d.os_disk]
    assert os_disks == ["nvme0n1", "nvme1n1"]  # RAID1 members under / are not scratch
    assert round(f.local_nvme_gib) == round(8 * 3840755982336 / 2**30)
    assert f.network_gbps == 1 + 2 * 100 + 8 * 400  # RoCE ports counted once, as their NICs
    report = audit_facts(f, load_profiles()["dedicated-steady"], load_catalog())
    assert report.status == "balanced" and report.accelerator == "H100-80GB"


def test_debian_vm_is_real_capture() -> None:
    f = parse_probe("vm", (GOLDEN / "debian12-vm.txt").read_text())
    assert f.os.startswith("Debian GNU/Linux 12") and f.cpu.threads == 2
    assert [d.name for d in f.disks] == ["vda"] and f.disks[0].os_disk  # zram0 (size 0) dropped


ROW = "{i}, NVIDIA H100 80GB HBM3, GPU-0, 00000000:18:00.0, 81559, 550.54.15, Enabled"


def test_mixed_gpus_are_reported() -> None:
    rows = [ROW.format(i=0), "1, NVIDIA A100-SXM4-40GB, GPU-1, 00000000:19:00.0, 40960, 550.54.15, Enabled"]
    gpus, _ = parse_gpus("h", 0, rows)
    f = parse_probe("h", (GOLDEN / "dgx-h100.txt").read_text()).model_copy(update={"gpus": gpus})
    audit = audit_facts(f, load_profiles()["dedicated-steady"], load_catalog())
    assert any("mixed GPU models" in p for p in audit.problems) and audit.status == "unverified"


@pytest.mark.parametrize(
    ("rows", "rc", "message"),
    [
        (["0, NVIDIA H100 80GB HBM3, 81559"], 0, "malformed nvidia-smi output"),
        ([ROW.format(i=0).replace("81559", "80 GiB")], 0, "malformed nvidia-smi memory.total"),
        (
            ["NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."],
            9,
            "nvidia-smi failed (exit 9)",
        ),
        ([], 124, "did not answer within 20s"),
    ],
)
def test_bad_nvidia_smi_is_a_clear_error(rows: list[str], rc: int, message: str) -> None:
    with pytest.raises(ProbeError, match=message.replace("(", r"\(").replace(")", r"\)")) as exc:
        parse_gpus("gpu-07", rc, rows)
    assert exc.value.line().startswith("gpu-07: ")


def test_gb10_unified_memory_is_na() -> None:
    gpus, _ = parse_gpus("spark", 0, ["0, NVIDIA GB10, GPU-9, 0000000F:01:00.0, [N/A], 580.95.05, [N/A]"])
    assert gpus[0].memory_mib is None and gpus[0].persistence_mode is None
    assert match_accelerator(load_catalog(), "NVIDIA GB10", None) is None  # unknown: reported, not guessed


def test_missing_lsblk_and_bad_json() -> None:
    with pytest.raises(ProbeError, match="lsblk is not installed"):
        parse_lsblk("h", 127, [])
    with pytest.raises(ProbeError, match="no JSON"):
        parse_lsblk("h", 0, ["lsblk: unknown column"])


def test_truncated_probe_output() -> None:
    text = (GOLDEN / "debian12-vm.txt").read_text()
    with pytest.raises(ProbeError, match="incomplete"):
        parse_probe("h", text[: len(text) // 2])


@pytest.mark.parametrize(
    ("name", "mib", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", 81559, "H100-80GB"),
        ("NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"),
        ("NVIDIA A100-SXM4-80GB", 81920, "A100-80GB"),
        ("NVIDIA A100 80GB PCIe", 81920, "A100-80GB"),
        ("Tesla T4", 15360, "T4"),
        ("NVIDIA L4", 23034, "L4"),
        ("NVIDIA H200", 143771, "H200-141GB"),
        ("Tesla V100-SXM2-32GB", 32768, None),  # the catalog has only the 16 GB V100
        ("NVIDIA H100 NVL", 95830, None),  # 94 GB: not the 80 GB entry
        ("NVIDIA GeForce RTX 4090", 24564, None),
    ],
)
def test_match_accelerator(name: str, mib: int, expected: str | None) -> None:
    acc = match_accelerator(load_catalog(), name, mib)
    assert (acc.name if acc else None) == expected


def _real_key() -> str:
    blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + bytes(range(32))
    return "ssh-ed25519 " + base64.b64encode(blob).decode()


def test_key_line_and_fingerprint() -> None:
    key = parse_key_line(_real_key() + " root@gpu-01", "x")
    assert key.fingerprint.startswith("SHA256:") and "=" not in key.fingerprint
    with pytest.raises(InputError, match="not a public host key"):
        parse_key_line("ssh-foo AAAA", "x")
    with pytest.raises(InputError, match="does not match its type"):
        parse_key_line(_real_key().replace("ssh-ed25519", "ssh-rsa", 1), "x")


def test_known_hosts_hashed_revoked_and_port(tmp_path: Path) -> None:
    line = _real_key()
    salt = b"0123456789abcdefghij"
    hashed = "|1|{}|{}".format(
        base64.b64encode(salt).decode(),
        base64.b64encode(hmac.new(salt, b"[10.0.0.5]:2222", hashlib.sha1).digest()).decode(),
    )
    other = "ssh-ed25519 " + base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + bytes(32)).decode()
    kh = tmp_path / "known_hosts"
    kh.write_text(
        f"# fleet\n{hashed} {line}\n[10.0.0.5]:2222 {other}\n@revoked [10.0.0.5]:2222 {other}\n@cert-authority *.lab {line}\n10.0.0.5 {other}\nbad line\n"
    )
    keys = keys_from_known_hosts(kh, "10.0.0.5", 2222)
    assert [k.line() for k in keys] == [line]


def test_inventory_defaults_and_errors(tmp_path: Path) -> None:
    inv = inventory_from_data(
        {
            "defaults": {"user": "gpuops", "privateKeyEnv": "FS_KEY"},
            "hosts": [
                {"name": "a", "address": "10.0.0.1", "hostKeys": [_real_key()]},
                {
                    "name": "b",
                    "address": "10.0.0.2",
                    "port": 2222,
                    "hostKeys": [_real_key()],
                    "jump": "a",
                    "privateKeyFile": "k",
                },
            ],
        },
        tmp_path,
        "inv.yaml",
    )
    a, b = inv.entries
    assert a.user == b.user == "gpuops" and a.private_key_env == "FS_KEY" and b.private_key_env is None
    t = inv.target(b)
    assert t.jump is not None and t.jump.name == "a" and t.lookup == "[10.0.0.2]:2222"
    with pytest.raises(InputError, match="no host key pinned"):
        inventory_from_data([{"name": "c", "address": "10.0.0.3"}], tmp_path, "inv.yaml").target(
            inventory_from_data([{"name": "c", "address": "10.0.0.3"}], tmp_path, "inv.yaml").entries[0]
        )
    with pytest.raises(InputError, match="unknown key"):
        inventory_from_data([{"name": "c", "address": "x", "hostkeys": []}], tmp_path, "inv.yaml")
    with pytest.raises(InputError, match="repeat"):
        inventory_from_data([{"name": "c", "address": "x"}, {"name": "c", "address": "y"}], tmp_path, "inv.yaml")
