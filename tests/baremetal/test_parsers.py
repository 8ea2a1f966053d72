"""Pure tests: probe parsers against captured output, GPU → catalog matching, inventory parsing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from fullserver.baremetal import errors as baremetal_errors
from fullserver.baremetal.audit import audit_facts, match_accelerator
from fullserver.baremetal.errors import ProbeError
from fullserver.baremetal.inventory import inventory_from_data, keys_from_known_hosts, load_inventory, parse_key_line
from fullserver.baremetal.keys import HostKeyLine, check_host_key
from fullserver.baremetal.probe import HostFacts, parse_gpus, parse_lsblk, parse_probe
from fullserver.baremetal.ssh import load_private_key
from fullserver.baremetal.ssh.exit_status import sudo_refused
from fullserver.catalog import load_catalog
from fullserver.errors import EXIT_SHORT, EXIT_UNREACHABLE, InputError
from fullserver.platform import Platform
from fullserver.profiles import load_profiles
from fullserver.workload import DedicatedHost
from fullserver_cli.fleet_view import exit_code

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


def _dgx_without_gpus(gpu_section: str) -> HostFacts:
    text = (GOLDEN / "dgx-h100.txt").read_text()
    head, _, rest = text.partition("@@fullserver:section gpus\n")
    _, _, tail = rest.partition("@@fullserver:end gpus")
    return parse_probe("gpu-01", f"{head}@@fullserver:section gpus\n{gpu_section}\n@@fullserver:end gpus{tail}")


@pytest.mark.parametrize(
    ("gpu_section", "why"),
    [
        ("@@fullserver:absent", "no GPU visible: nvidia-smi is not on PATH"),
        ("@@fullserver:nvidiactl\n@@fullserver:absent", "no GPU visible: /dev/nvidiactl exists but nvidia-smi"),
        ("", "no GPU visible: nvidia-smi lists none"),
    ],
)
def test_gpu_server_showing_no_gpu_is_unverified_not_balanced(gpu_section: str, why: str) -> None:
    facts = _dgx_without_gpus(gpu_section)
    assert facts.gpus == [] and facts.cpu.threads == 224  # everything else of the DGX is there
    audit = audit_facts(facts, load_profiles()["dedicated-steady"], load_catalog())
    assert audit.status == "unverified" and not audit.ok
    assert any(p.startswith(why) for p in audit.problems), audit.problems
    assert exit_code([audit]) == EXIT_SHORT  # `fullserver audit` fails on it


def test_contract_names_where_the_host_falls_short() -> None:
    facts = parse_probe("gpu-01", (GOLDEN / "dgx-h100.txt").read_text())
    seven = facts.model_copy(update={"gpus": facts.gpus[:7]})
    contract = DedicatedHost(accelerator="H100-80GB", accelerator_count=8, vcpus=224, memory_gib=2048, network_gbps=400)
    audit = audit_facts(seven, load_profiles()["dedicated-steady"], load_catalog(), expected=contract)
    assert audit.status == "unverified" and "7 GPUs visible, contract says 8" in audit.summary()


@pytest.mark.parametrize(
    ("stderr", "refused"),
    [
        ("sudo: a password is required\n", True),
        ("sudo: a terminal is required to read the password; either use the -S option\n", True),
        ("ops is not in the sudoers file.  This incident will be reported.\n", True),
        ("Sorry, user ops is not allowed to execute '/usr/bin/env' as root on gpu-01.\n", True),
        ("Sorry, user ops may not run sudo on gpu-01.\n", True),
        ("sudo: mdadm: command not found\n", False),
        ("sh: 1: mdadm: not found\n", False),
        ("mkfs.ext4: not allowed to format a mounted disk\n", False),
    ],
)
def test_only_sudos_own_refusals_mean_no_sudo(stderr: str, refused: bool) -> None:
    assert sudo_refused(stderr) is refused


def test_wrong_passphrase_says_so(tmp_path: Path) -> None:
    key = tmp_path / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "right", "-f", str(key)], check=True)
    text = key.read_text()
    assert load_private_key(text, "k", "right") is not None
    with pytest.raises(InputError, match="wrong passphrase"):
        load_private_key(text, "k", "wrong")
    with pytest.raises(InputError, match="encrypted and no passphrase"):
        load_private_key(text, "k")
    with pytest.raises(InputError, match="not an OpenSSH/PEM"):
        load_private_key("-----BEGIN OPENSSH PRIVATE KEY-----\nbm9wZQ==\n-----END OPENSSH PRIVATE KEY-----\n", "k", "x")


def test_jump_only_entries_are_not_hosts(tmp_path: Path) -> None:
    inv = inventory_from_data(
        [
            {"name": "gpu-01", "address": "10.0.0.1", "jump": "bastion"},
            {"name": "gpu-02", "address": "10.0.0.2"},
            {"name": "bastion", "address": "10.0.0.9"},
            {"name": "gw", "address": "10.0.0.8", "role": "jump"},
            {"name": "gpu-03", "address": "10.0.0.3", "jump": "gpu-02", "role": "gpu"},
        ],
        tmp_path,
        "inv.yaml",
    )
    # gpu-02 only serves as a jump here: without role: gpu it would be passed through, never audited
    assert [e.name for e in inv.hosts] == ["gpu-01", "gpu-03"]
    assert inv.is_jump(inv.entry("bastion")) and inv.is_jump(inv.entry("gw")) and inv.is_jump(inv.entry("gpu-02"))
    with pytest.raises(InputError, match="every host is a jump host"):
        inventory_from_data([{"name": "b", "address": "x", "role": "jump"}], tmp_path, "inv.yaml")


def test_malformed_host_key_is_refused_when_the_inventory_is_read(tmp_path: Path) -> None:
    """Issue 14: the model refuses it (one line naming the field), not the first connection."""
    with pytest.raises(InputError) as exc:
        inventory_from_data([{"name": "a", "address": "10.0.0.1", "hostKeys": ["not a key"]}], tmp_path, "inv.yaml")
    line = exc.value.line()
    assert line.startswith("inv.yaml: hosts[0]: field 'hostKeys[0]': not a public host key: 'not a key'; write")
    assert "\n" not in line
    blob = _real_key().replace("ssh-ed25519", "ssh-rsa", 1)
    with pytest.raises(InputError, match=r"field 'hostKeys\[1\]': host key blob does not match its type ssh-rsa"):
        inventory_from_data([{"name": "a", "address": "x", "hostKeys": [_real_key(), blob]}], tmp_path, "inv.yaml")
    assert check_host_key(_real_key()) == _real_key()
    assert TypeAdapter(list[HostKeyLine]).validate_python([_real_key()]) == [_real_key()]  # for workload.py
    with pytest.raises(ValidationError, match="not a public host key"):
        TypeAdapter(list[HostKeyLine]).validate_python(["not a key"])


def test_key_sources_one_place_for_audit_and_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gpu.key").write_text("gpu key text")
    monkeypatch.setenv("FS_HOP", "hop key text")
    hosts = [
        {"name": "gpu", "address": "10.0.0.1", "jump": "hop", "privateKeyFile": "gpu.key"},
        {"name": "hop", "address": "10.0.0.2", "jump": "gate", "privateKeyEnv": "FS_HOP"},
        {"name": "gate", "address": "10.0.0.3", "role": "jump"},
    ]
    inv = inventory_from_data(hosts, tmp_path, "inv.yaml")
    assert [h.name for h in inv.hops(inv.entry("gpu"))] == ["hop", "gate"]
    assert inv.own_keys() == {"gpu": "gpu key text", "hop": "hop key text"}
    assert inv.key_source(inv.entry("gpu")) == f"inv.yaml: host 'gpu' privateKeyFile {tmp_path / 'gpu.key'}"
    assert inv.key_source(inv.entry("hop")) == "inv.yaml: host 'hop' privateKeyEnv FS_HOP"
    with pytest.raises(InputError, match="host 'gate': no private key source"):
        inv.credentials(inv.entry("gpu"))  # the audit has no default key
    # the provider: texts read by the program (secrets), and private_key for entries without a source
    monkeypatch.delenv("FS_HOP")
    (tmp_path / "gpu.key").unlink()
    inv = inventory_from_data(
        hosts, tmp_path, "hosts", keys={"gpu": "gpu key text", "hop": "hop key text"}, default_key="default"
    )
    assert inv.credentials(inv.entry("gpu")) == ("gpu key text", {"hop": "hop key text", "gate": "default"})
    assert "key text" not in repr(inv)
    (tmp_path / "binary.key").write_bytes(b"\xff\xfe\x00key")
    inv = inventory_from_data([{"name": "b", "address": "x", "privateKeyFile": "binary.key"}], tmp_path, "inv.yaml")
    with pytest.raises(InputError, match=r"binary\.key is not text"):
        inv.private_key(inv.entry("b"))


def test_inventory_file_goes_through_read_yaml(tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    path.write_bytes(b"hosts:\n  - name: caf\xe9\n    address: 10.0.0.1\n")  # Latin-1, not UTF-8
    with pytest.raises(InputError) as exc:
        load_inventory(path)
    assert exc.value.line().startswith(f"{path}: not UTF-8 text: byte 0xe9")
    path.write_text(f"hosts:\n  - name: a\n    address: 10.0.0.1\n    hostKeys: ['{_real_key()}']\n")
    assert [e.name for e in load_inventory(path).hosts] == ["a"]
    path.write_text("")
    with pytest.raises(InputError, match="expected a non-empty list of hosts"):
        load_inventory(path)
    path.write_text("- name: a\n  address: 10.0.0.1\n")  # a bare list: read_yaml takes mappings only
    with pytest.raises(InputError, match="expected a mapping at the top level"):
        load_inventory(path)


def test_exit_codes_come_from_the_one_table() -> None:
    assert baremetal_errors.EXIT_UNREACHABLE is EXIT_UNREACHABLE == 5
    assert "EXIT_UNREACHABLE" in baremetal_errors.__all__


def test_a_cloud_node_is_held_to_its_own_platforms_minimums() -> None:
    """verify after `pulumi up` measures a TPU host against the TPU balance its plan used (RAM 1.1x
    accelerator memory, 100 GiB NVMe per chip), not the bare-metal one (1.4x, 500 GiB)."""
    f = parse_probe("gpu-01", (GOLDEN / "dgx-h100.txt").read_text())
    profile = load_profiles()["fine-tuning"]
    ram = {}
    for p in (Platform.BARE_METAL, Platform.TPU_VM):
        report = audit_facts(f, profile, load_catalog(), platform=p).report
        assert report is not None
        ram[p] = next(x for x in report.lines if x.dimension == "ram")
    assert ram[Platform.BARE_METAL].required == round(1.4 * 8 * 80, 1)
    assert ram[Platform.TPU_VM].required == round(1.1 * 8 * 80, 1)
