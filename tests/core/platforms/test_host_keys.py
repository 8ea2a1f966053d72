"""Each cloud's answer to a node's ``hostKeysCommand``, read into the ``"<type> <base64>"`` lines
verify pins: Compute Engine and TPU guest attributes (gcloud's JSON), EC2 console output (the
block cloud-init prints at first boot)."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from fullserver.baremetal.keys import parse_key_line
from fullserver.nodes import NodeAccess
from fullserver.platforms import aws, gcp, tpu


def _blob(kind: str, body: bytes) -> str:
    """A key blob as SSH encodes it: its type as an SSH string, then the key."""
    return base64.b64encode(struct.pack(">I", len(kind)) + kind.encode() + body).decode()


ED = _blob("ssh-ed25519", struct.pack(">I", 32) + bytes(range(32)))
ECDSA = _blob("ecdsa-sha2-nistp256", struct.pack(">I", 8) + b"nistp256" + struct.pack(">I", 65) + b"\x04" + bytes(64))


def node(name: str) -> NodeAccess:
    return NodeAccess(name=name, private_ip="10.0.0.2", user="ubuntu", keys=True, via="iap")


def test_a_gcp_vm_reads_its_host_keys_from_its_guest_attributes() -> None:
    assert gcp.host_keys_command("train-0", "us-central1-a", "ml") == [
        "gcloud", "compute", "instances", "get-guest-attributes", "train-0", "--zone=us-central1-a",
        "--project=ml", "--query-path=hostkeys/", "--format=json",
    ]  # fmt: skip
    answer = json.dumps(
        [
            {"key": "ecdsa-sha2-nistp256", "namespace": "hostkeys", "value": ECDSA},
            {"key": "ssh-ed25519", "namespace": "hostkeys", "value": ED},
            {"key": "ssh-rsa-cert", "namespace": "hostkeys", "value": "AAAA"},  # not a type SSH pins: skipped
            {"key": "hostname", "namespace": "guestInventory", "value": "train-0"},
        ]
    )
    keys = gcp.parse_host_keys(answer, node("train-0"))
    assert keys == [f"ecdsa-sha2-nistp256 {ECDSA}", f"ssh-ed25519 {ED}"]
    assert [parse_key_line(k, "x").key_type for k in keys] == ["ecdsa-sha2-nistp256", "ssh-ed25519"]


def test_guest_attributes_not_published_yet_are_no_keys_and_a_forged_one_is_refused() -> None:
    assert gcp.parse_host_keys("[]", node("train-0")) == []
    forged = json.dumps([{"key": "ssh-ed25519", "namespace": "hostkeys", "value": ECDSA}])  # another type's blob
    with pytest.raises(ValueError, match="host key ssh-ed25519: host key blob does not match its type ssh-ed25519"):
        gcp.parse_host_keys(forged, node("train-0"))
    with pytest.raises(ValueError, match="expected a JSON list"):
        gcp.parse_host_keys('{"items": []}', node("train-0"))


CONSOLE = f"""[    0.000000] Linux version 6.8.0-1015-aws (buildd@lcy02-amd64-050)
[   14.2] cloud-init[612]: Generating public/private ed25519 key pair.
<14>Nov 23 20:00:01 cloud-init: #############################################################
<14>Nov 23 20:00:01 cloud-init: -----BEGIN SSH HOST KEY FINGERPRINTS-----
<14>Nov 23 20:00:01 cloud-init: 256 SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU root@ip-10-0-1-4 (ED25519)
<14>Nov 23 20:00:01 cloud-init: -----END SSH HOST KEY FINGERPRINTS-----
<14>Nov 23 20:00:01 cloud-init: #############################################################
-----BEGIN SSH HOST KEY KEYS-----
ecdsa-sha2-nistp256 {ECDSA} root@ip-10-0-1-4
ssh-ed25519 {ED} root@ip-10-0-1-4
-----END SSH HOST KEY KEYS-----
[   20.1] cloud-init[700]: Cloud-init v. 24.1.3 finished at Sat, 23 Nov 2026 20:00:02 +0000.
"""


def test_an_ec2_instance_reads_its_host_keys_from_the_console_output() -> None:
    assert aws.host_keys_command("i-0abc", "us-east-1") == [
        "aws", "ec2", "get-console-output", "--instance-id", "i-0abc", "--latest", "--region=us-east-1",
        "--output=json",
    ]  # fmt: skip
    answer = json.dumps({"InstanceId": "i-0abc", "Output": CONSOLE, "Timestamp": "2026-11-23T20:00:05+00:00"})
    assert aws.parse_host_keys(answer, node("i-0abc")) == [f"ecdsa-sha2-nistp256 {ECDSA}", f"ssh-ed25519 {ED}"]


def test_the_latest_boots_block_wins_and_an_instance_that_printed_nothing_has_no_keys() -> None:
    other = _blob("ssh-ed25519", struct.pack(">I", 32) + bytes(32))
    later = (
        CONSOLE
        + f"-----BEGIN SSH HOST KEY KEYS-----\nssh-ed25519 {other} root@ip-10-0-1-4\n-----END SSH HOST KEY KEYS-----\n"
    )
    assert aws.console_host_keys(later) == [f"ssh-ed25519 {other}"]
    assert aws.parse_host_keys(json.dumps({"InstanceId": "i-0abc"}), node("i-0abc")) == []
    # a block still being written (no END yet) is not read as the keys
    assert aws.console_host_keys("-----BEGIN SSH HOST KEY KEYS-----\nssh-ed25519 " + ED + "\n") == []


def test_a_tpu_worker_keeps_only_its_own_workers_host_keys() -> None:
    assert tpu.host_keys_command("slice", "us-west4-a", "ml") == tpu.group_list_command("slice", "us-west4-a", "ml")
    other = _blob("ssh-ed25519", struct.pack(">I", 32) + bytes(32))
    answer = json.dumps(  # gcloud's flattened guest attributes, sorted keys, worker_id each
        [
            {"key": "hostname", "namespace": "", "value": "t1v-n-cca1e90f-w-0", "worker_id": 0},
            {"key": "ssh-ed25519", "namespace": "hostkeys", "value": ED, "worker_id": 0},
            {"key": "hostname", "namespace": "", "value": "t1v-n-cca1e90f-w-1", "worker_id": 1},
            {"key": "ssh-ed25519", "namespace": "hostkeys", "value": other, "worker_id": 1},
        ]
    )
    assert tpu.parse_host_keys(answer, node("slice-w0")) == [f"ssh-ed25519 {ED}"]
    assert tpu.parse_host_keys(answer, node("slice-w1")) == [f"ssh-ed25519 {other}"]
    assert tpu.parse_host_keys(answer, node("slice-w2")) == []
    with pytest.raises(ValueError, match="not a TPU worker row"):
        tpu.parse_host_keys(answer, node("slice"))


def test_a_block_sent_through_logger_is_read_and_a_cut_key_line_is_skipped_not_pinned() -> None:
    logged = (
        "ec2: -----BEGIN SSH HOST KEY KEYS-----\n"
        f"ec2: ecdsa-sha2-nistp256 {ECDSA} root@ip-10-0-1-4\n"
        "ec2: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA[   21.7] nvme nvme1: I/O timeout\n"
        "ec2: -----END SSH HOST KEY KEYS-----\n"
    )
    assert aws.console_host_keys(logged) == [f"ecdsa-sha2-nistp256 {ECDSA}"]


def test_a_worker_id_printed_as_a_string_still_finds_the_worker() -> None:
    answer = json.dumps([{"key": "ssh-ed25519", "namespace": "hostkeys", "value": ED, "worker_id": "1"}])
    assert tpu.parse_host_keys(answer, node("slice-w1")) == [f"ssh-ed25519 {ED}"]
