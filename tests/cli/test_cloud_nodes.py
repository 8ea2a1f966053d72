"""A cloud stack's nodes as verify reads them from its outputs (``fullserver_cli.cloud_nodes``)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from fullserver.baremetal.proxy import withhold_from_children
from fullserver.errors import InputError
from fullserver.nodes import NodeAccess, NodeGroupAccess
from fullserver.platforms import aws, gcp
from fullserver_cli import cloud_nodes
from fullserver_cli.cloud_nodes import inventory_hosts, stack_nodes

IAP_NODE = NodeAccess(
    name="train-a-0",
    private_ip="10.128.0.5",
    user="ubuntu",
    keys=True,
    via="iap",
    proxy_command=gcp.iap_proxy("train-a-0", "us-central1-b", "ml-prod"),
)


def _group(**changes: object) -> NodeGroupAccess:
    base = NodeGroupAccess(
        provider="gcp",
        groups=["serve-g"],
        region="us-central1",
        project="ml-prod",
        user="ubuntu",
        keys=True,
        via="iap",
        list_command=gcp.group_list_command("serve-g", "us-central1", "ml-prod"),
    )
    return base.model_copy(update=changes)


def _stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, body: str) -> None:
    exe = tmp_path / tool
    exe.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))


def test_exported_nodes_are_read_as_they_are_and_user_overrides_the_login() -> None:
    outputs = {"nodes": [IAP_NODE.exported()], "publicIps": []}
    assert stack_nodes("s", outputs, None) == [IAP_NODE]
    [node] = stack_nodes("s", outputs, "admin")
    assert node.user == "admin" and node.proxy_command == IAP_NODE.proxy_command


def test_a_stack_from_before_the_nodes_output_is_read_from_its_public_addresses() -> None:
    nodes = stack_nodes("old", {"publicIps": ["34.1.2.3", "34.1.2.4"]}, None)
    assert [(n.name, n.address, n.via, n.user) for n in nodes] == [
        ("old-0", "34.1.2.3", "ssh", "ubuntu"),
        ("old-1", "34.1.2.4", "ssh", "ubuntu"),
    ]


def test_a_group_of_a_kind_no_platform_lists_is_one_line_naming_the_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kinds are the registry's (``platforms.group_kinds``), checked before anything is run."""
    _stand_in(tmp_path, monkeypatch, "gcloud", "raise SystemExit('must not run')")
    outputs = {"nodes": [], "nodeGroups": [_group().exported(), _group(provider="azure").exported()]}
    with pytest.raises(InputError) as err:
        stack_nodes("s", outputs, None)
    assert err.value.line().startswith(
        "stack 's' outputs: nodeGroups[1].provider: 'azure' is none of aws, gcp, tpu (run `pulumi up`"
    )


def test_a_malformed_nodes_output_is_one_line_naming_the_field() -> None:
    bad = {**IAP_NODE.exported(), "via": "telnet"}
    with pytest.raises(InputError) as err:
        stack_nodes("s", {"nodes": [bad]}, None)
    assert err.value.line().startswith(
        "stack 's' outputs: nodes[0].via: Input should be 'ssh', 'iap' or 'ssm' (run `pulumi up`"
    )


def test_gcp_group_members_are_listed_with_gcloud_and_reached_through_iap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = [
        {
            "name": "serve-g-x1b2",
            "zone": "https://www.googleapis.com/compute/v1/projects/ml-prod/zones/us-central1-c",
            "status": "RUNNING",
            "networkInterfaces": [{"networkIP": "10.128.0.9", "accessConfigs": [{"natIP": "34.9.9.9"}]}],
        }
    ]
    _stand_in(
        tmp_path,
        monkeypatch,
        "gcloud",
        f"assert sys.argv[1:] == {gcp.group_list_command('serve-g', 'us-central1', 'ml-prod')[1:]!r}\n"
        f"print({__import__('json').dumps(listing)!r})",
    )
    [node] = stack_nodes("serve", {"nodes": [], "nodeGroups": [_group().exported()]}, None)
    assert (node.name, node.private_ip, node.public_ip, node.via) == ("serve-g-x1b2", "10.128.0.9", "34.9.9.9", "iap")
    assert node.proxy_command == gcp.iap_proxy("serve-g-x1b2", "us-central1-c", "ml-prod")


def test_a_group_listing_that_fails_says_what_the_cli_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(
        tmp_path, monkeypatch, "gcloud", "sys.exit('ERROR: (gcloud.compute.instances.list) Reauthentication required.')"
    )
    with pytest.raises(InputError) as err:
        stack_nodes("serve", {"nodeGroups": [_group().exported()]}, None)
    assert err.value.line().startswith(
        "stack 'serve' group serve-g: listing its members failed: "
        "ERROR: (gcloud.compute.instances.list) Reauthentication required. (check `gcloud compute instances list"
    )


def test_a_missing_cloud_cli_is_named_with_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    group = _group(provider="aws", via="ssm", list_command=aws.group_list_command(["g"], "us-east-1"), groups=["g"])
    with pytest.raises(InputError) as err:
        stack_nodes("serve", {"nodeGroups": [group.exported()]}, None)
    assert err.value.line() == (
        "stack 'serve' group g: 'aws' is not installed "
        "(install the AWS CLI v2 (and, for Session Manager, its Session Manager plugin))"
    )


def test_a_listing_in_another_format_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in(tmp_path, monkeypatch, "gcloud", "print('{\"items\": []}')")
    with pytest.raises(InputError, match="the member list is not what gcloud prints: expected a JSON list"):
        stack_nodes("serve", {"nodeGroups": [_group().exported()]}, None)


def test_inventory_entries_pin_proxied_nodes_by_name_and_peer_at_their_private_address() -> None:
    direct = NodeAccess(name="n1", private_ip="10.0.0.7", public_ip="3.3.3.3", user="ubuntu", keys=True, via="ssh")
    assert inventory_hosts("s", [IAP_NODE, direct], "/k") == [
        {
            "name": "train-a-0",
            "address": "train-a-0",
            "user": "ubuntu",
            "knownHostsFile": "/k",
            "proxyCommand": IAP_NODE.proxy_command,
            "peerAddress": "10.128.0.5",
        },
        {"name": "n1", "address": "3.3.3.3", "user": "ubuntu", "knownHostsFile": "/k", "peerAddress": "10.0.0.7"},
    ]


@pytest.mark.parametrize(
    ("node", "said"),
    [
        (IAP_NODE.model_copy(update={"proxy_command": []}), "it is reached through IAP and no proxy command"),
        (NodeAccess(name="n", private_ip="10.0.0.2", user="u", keys=True, via="ssh"), "it has no public address"),
    ],
)
def test_nodes_verify_cannot_reach_are_refused_by_name(node: NodeAccess, said: str) -> None:
    with pytest.raises(InputError, match=f"^stack 's' node {node.name}: {said}"):
        inventory_hosts("s", [node], "/k")


def test_tpu_workers_behind_iap_are_named_by_their_guest_attributes_when_verify_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TPU VM's IAP instance names are only known to its workers' guest attributes: the group row
    lists them with gcloud, and the exported addresses stay each worker's peer address."""
    from fullserver.platforms import tpu
    from tests.core.platforms.test_ways_in import GUEST_ATTRIBUTES

    command = tpu.group_list_command("batch-tpu", "us-central1-a", "ml-prod")
    group = _group(
        provider="tpu", groups=["batch-tpu"], zone="us-central1-a", list_command=command,
        private_ips=["10.64.0.2", "10.64.0.3"],
    )  # fmt: skip
    _stand_in(tmp_path, monkeypatch, "gcloud", f"assert sys.argv[1:] == {command[1:]!r}\nprint({GUEST_ATTRIBUTES!r})")
    nodes = stack_nodes("batch", {"nodes": [], "nodeGroups": [group.exported()]}, None)
    assert [(n.name, n.private_ip, n.via) for n in nodes] == [
        ("t1v-n-cca1e90f-w-0", "10.64.0.2", "iap"),
        ("t1v-n-cca1e90f-w-1", "10.64.0.3", "iap"),
    ]
    [first, _] = inventory_hosts("batch", nodes, "/k")
    assert first["address"] == "t1v-n-cca1e90f-w-0" and first["peerAddress"] == "10.64.0.2"
    assert first["proxyCommand"] == gcp.iap_proxy("t1v-n-cca1e90f-w-0", "us-central1-a", "ml-prod")
    # a worker still booting is named, not mistaken for a listing gcloud did not print
    booting = [a for a in json.loads(GUEST_ATTRIBUTES) if a["value"] != "t1v-n-cca1e90f-w-1"]
    _stand_in(tmp_path, monkeypatch, "gcloud", f"print({json.dumps(booting)!r})")
    with pytest.raises(InputError, match=r"^TPU batch-tpu worker 1: has published no hostname guest attribute"):
        stack_nodes("batch", {"nodeGroups": [group.exported()]}, None)


def test_a_group_listing_never_sees_a_withheld_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key's text or a passphrase read from our environment is not the cloud CLI's to read."""
    seen = tmp_path / "environ.json"
    monkeypatch.setenv("FULLSERVER_TEST_LIST_SECRET", "s3cret words")
    withhold_from_children("FULLSERVER_TEST_LIST_SECRET")
    _stand_in(
        tmp_path,
        monkeypatch,
        "gcloud",
        f"import json, os\nopen({str(seen)!r}, 'w').write(json.dumps(dict(os.environ)))\nprint('[]')",
    )
    assert stack_nodes("serve", {"nodes": [], "nodeGroups": [_group().exported()]}, None) == []
    environ = json.loads(seen.read_text())
    assert "FULLSERVER_TEST_LIST_SECRET" not in environ and environ["PATH"] == str(tmp_path)
    assert "s3cret words" not in environ.values()


def test_a_hung_group_listing_is_ended_with_its_helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CLI past the listing timeout goes with every process it started (its process group)."""
    helper = tmp_path / "helper.pid"
    monkeypatch.setattr(cloud_nodes, "LIST_TIMEOUT", 1.0)
    _stand_in(
        tmp_path,
        monkeypatch,
        "gcloud",
        "import subprocess, time\n"
        "h = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(helper)!r}, 'w').write(str(h.pid))\n"
        "time.sleep(300)",
    )
    start = time.monotonic()
    with pytest.raises(InputError, match=r"^stack 'serve' group serve-g: listing its members took over 1s"):
        stack_nodes("serve", {"nodeGroups": [_group().exported()]}, None)
    assert time.monotonic() - start < 5
    pid = int(helper.read_text())
    deadline = time.monotonic() + 2
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _running(pid)


def _running(pid: int) -> bool:
    """Whether ``pid`` is still a process (a zombie, dead but not yet reaped, is not running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
