"""The ways into cloud nodes (``fullserver.platforms.aws`` / ``gcp`` / ``tpu``: proxy commands, the
listing of a group's members and the reading of its answer), against answers in the clouds' own
format.

The answers are shaped as the CLIs print them: ``aws ec2 describe-instances --output json``
(EC2 API ``DescribeInstances``: ``Reservations[].Instances[]``; ``PublicIpAddress`` is absent for
an instance without a public address, ``PublicDnsName`` is then empty) and ``gcloud compute
instances list --format=json`` (Compute Engine API ``instances`` resource: ``zone`` as a URL,
``networkInterfaces[].networkIP``, ``accessConfigs[].natIP`` only with an external address), and
``gcloud compute tpus tpu-vm get-guest-attributes --format=json`` (the TPU API's
``GetGuestAttributesResponse`` flattened by gcloud's ``TransformGuestAttributes`` into one object
per attribute, keys sorted by its JSON printer; host key values are the base64 part alone, as the
guest environment writes them under ``hostkeys/``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fullserver.errors import InputError
from fullserver.nodes import NodeAccess, NodeGroupAccess
from fullserver.platforms import aws, gcp, tpu

COMPUTE = "https://www.googleapis.com/compute/v1/projects/ml-prod"


def _aws_instance(iid: str, private: str, public: str | None, group: str) -> dict[str, Any]:
    item: dict[str, Any] = {
        "AmiLaunchIndex": 0,
        "ImageId": "ami-0abcdef1234567890",
        "InstanceId": iid,
        "InstanceType": "g6.xlarge",
        "LaunchTime": "2026-11-23T18:02:11+00:00",
        "Placement": {"AvailabilityZone": "us-east-1b", "GroupName": "", "Tenancy": "default"},
        "PrivateDnsName": f"ip-{private.replace('.', '-')}.ec2.internal",
        "PrivateIpAddress": private,
        "PublicDnsName": "",
        "State": {"Code": 16, "Name": "running"},
        "SubnetId": "subnet-0123456789abcdef0",
        "VpcId": "vpc-0123456789abcdef0",
        "NetworkInterfaces": [{"PrivateIpAddress": private, "Status": "in-use"}],
        "Tags": [{"Key": "aws:autoscaling:groupName", "Value": group}],
    }
    if public is not None:
        item["PublicIpAddress"] = public
        item["PublicDnsName"] = f"ec2-{public.replace('.', '-')}.compute-1.amazonaws.com"
    return item


def _describe_instances(*reservations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "Reservations": [
            {"Groups": [], "Instances": instances, "OwnerId": "123456789012", "ReservationId": f"r-0{i}a1b2c3d4e5f6a7b"}
            for i, instances in enumerate(reservations)
        ]
    }


def _gce_instance(name: str, zone: str, private: str, public: str | None) -> dict[str, Any]:
    nic: dict[str, Any] = {
        "kind": "compute#networkInterface",
        "name": "nic0",
        "network": f"{COMPUTE}/global/networks/serve-g-net",
        "networkIP": private,
        "nicType": "GVNIC",
        "stackType": "IPV4_ONLY",
        "subnetwork": f"{COMPUTE}/regions/us-central1/subnetworks/serve-g-subnet",
    }
    if public is not None:
        nic["accessConfigs"] = [
            {
                "kind": "compute#accessConfig",
                "name": "External NAT",
                "natIP": public,
                "networkTier": "PREMIUM",
                "type": "ONE_TO_ONE_NAT",
            }
        ]
    return {
        "kind": "compute#instance",
        "id": "4812398811450123456",
        "name": name,
        "machineType": f"{COMPUTE}/zones/{zone}/machineTypes/g2-standard-12",
        "networkInterfaces": [nic],
        "status": "RUNNING",
        "zone": f"{COMPUTE}/zones/{zone}",
    }


def _group(provider: str, **changes: Any) -> NodeGroupAccess:
    fields: dict[str, Any] = {
        "provider": provider,
        "groups": ["g"],
        "region": "us-east-1" if provider == "aws" else "us-central1",
        "zone": "us-central1-a" if provider == "tpu" else "",
        "project": "" if provider == "aws" else "ml-prod",
        "user": "ubuntu",
        "keys": True,
        "via": "ssm" if provider == "aws" else "iap",
        "list_command": ["true"],
    }
    return NodeGroupAccess(**{**fields, **changes})


# --- AWS ------------------------------------------------------------------------------------------


def test_session_manager_carries_ssh_to_an_instance_by_its_id() -> None:
    assert aws.ssm_proxy("i-0abc1234def567890", "eu-west-1") == [
        "aws", "ssm", "start-session", "--target", "i-0abc1234def567890",
        "--document-name", "AWS-StartSSHSession", "--parameters", "portNumber=22", "--region=eu-west-1",
    ]  # fmt: skip
    assert aws.ssm_proxy("i-1", "eu-west-1", port=2222)[8] == "portNumber=2222"


def test_one_listing_covers_a_spot_group_and_its_fallback() -> None:
    assert aws.group_list_command(["sp-spot-1a2b", "sp-ondemand-3c4d"], "us-east-1") == [
        "aws", "ec2", "describe-instances", "--region=us-east-1", "--filters",
        "Name=tag:aws:autoscaling:groupName,Values=sp-spot-1a2b,sp-ondemand-3c4d",
        "Name=instance-state-name,Values=running", "--output=json",
    ]  # fmt: skip


def test_describe_instances_becomes_one_node_per_instance_across_reservations() -> None:
    answer = _describe_instances(
        [_aws_instance("i-0abc1234def567890", "10.0.1.23", None, "srv-serving")],
        [
            _aws_instance("i-0fed9876cba543210", "10.0.2.7", "54.210.3.4", "srv-serving"),
            _aws_instance("i-0123456789abcdef0", "10.0.3.9", None, "srv-serving"),
        ],
    )
    nodes = aws.group_members(answer, _group("aws"))
    assert [(n.name, n.private_ip, n.public_ip) for n in nodes] == [
        ("i-0abc1234def567890", "10.0.1.23", ""),  # a private instance has no PublicIpAddress at all
        ("i-0fed9876cba543210", "10.0.2.7", "54.210.3.4"),
        ("i-0123456789abcdef0", "10.0.3.9", ""),
    ]
    assert all(n.via == "ssm" and n.user == "ubuntu" and n.keys for n in nodes)
    assert nodes[0].proxy_command == aws.ssm_proxy("i-0abc1234def567890", "us-east-1")
    assert nodes[0].address == "i-0abc1234def567890"  # through the proxy, the node is named, not addressed


def test_members_of_a_group_reached_directly_carry_no_proxy() -> None:
    answer = _describe_instances([_aws_instance("i-0fed9876cba543210", "10.0.2.7", "54.210.3.4", "g")])
    [node] = aws.group_members(answer, _group("aws", via="ssh"))
    assert node.proxy_command == [] and node.address == "54.210.3.4"


def test_an_empty_group_has_no_members_and_a_wrong_answer_is_refused() -> None:
    assert aws.group_members({"Reservations": []}, _group("aws")) == []
    with pytest.raises(ValueError, match="Reservations"):
        aws.group_members([], _group("aws"))
    with pytest.raises(ValueError, match="InstanceId"):
        aws.group_members({"Reservations": [{"Instances": [{"PrivateIpAddress": "10.0.0.1"}]}]}, _group("aws"))


# --- GCP ------------------------------------------------------------------------------------------


def test_iap_carries_ssh_to_an_instance_by_its_name_and_zone() -> None:
    assert gcp.iap_proxy("train-a-0", "us-central1-b", "ml-prod") == [
        "gcloud", "compute", "start-iap-tunnel", "train-a-0", "22", "--listen-on-stdin",
        "--zone=us-central1-b", "--project=ml-prod", "--verbosity=warning",
    ]  # fmt: skip


def test_a_managed_group_is_listed_by_the_names_it_gives_its_instances() -> None:
    command = gcp.group_list_command("serve-g", "us-central1", "ml-prod")
    assert command[:5] == ["gcloud", "compute", "instances", "list", "--project=ml-prod"]
    assert command[-1] == "--format=json"
    assert command[5] == (
        "--filter=name ~ ^serve-g-[a-z0-9]{4}$ AND status=RUNNING AND zone ~ /zones/us-central1-[a-z]$"
    )


def test_instances_list_becomes_one_node_per_instance_in_its_own_zone() -> None:
    answer = [
        _gce_instance("serve-g-x1b2", "us-central1-c", "10.64.0.5", None),
        _gce_instance("serve-g-9qzt", "us-central1-a", "10.64.0.6", "34.118.2.9"),
    ]
    nodes = gcp.group_members(answer, _group("gcp"))
    assert [(n.name, n.private_ip, n.public_ip) for n in nodes] == [
        ("serve-g-x1b2", "10.64.0.5", ""),
        ("serve-g-9qzt", "10.64.0.6", "34.118.2.9"),
    ]
    # each tunnel names the zone its instance is in (the last part of the zone URL)
    assert nodes[0].proxy_command == gcp.iap_proxy("serve-g-x1b2", "us-central1-c", "ml-prod")
    assert nodes[1].proxy_command == gcp.iap_proxy("serve-g-9qzt", "us-central1-a", "ml-prod")
    assert all(isinstance(n, NodeAccess) and n.via == "iap" for n in nodes)


def test_gce_members_reached_directly_carry_no_proxy_and_a_wrong_answer_is_refused() -> None:
    answer = [_gce_instance("serve-g-9qzt", "us-central1-a", "10.64.0.6", "34.118.2.9")]
    [node] = gcp.group_members(answer, _group("gcp", via="ssh"))
    assert node.proxy_command == [] and node.address == "34.118.2.9"
    assert gcp.group_members([], _group("gcp")) == []
    with pytest.raises(ValueError, match="list"):
        gcp.group_members({"items": []}, _group("gcp"))
    with pytest.raises(ValueError, match="name or zone"):
        gcp.group_members([{"name": "serve-g-x1b2"}], _group("gcp"))


def test_the_exported_shape_is_camel_case_as_stack_outputs_are() -> None:
    node = NodeAccess(name="i-1", private_ip="10.0.0.1", user="ubuntu", keys=False, via="ssm", proxy_command=["x"])
    assert node.exported() == {
        "name": "i-1",
        "privateIp": "10.0.0.1",
        "publicIp": "",
        "user": "ubuntu",
        "keys": False,
        "via": "ssm",
        "proxyCommand": ["x"],
        "hostKeysCommand": [],
    }
    assert NodeAccess.model_validate(node.exported()) == node  # verify reads the stack output back


# --- TPU VMs --------------------------------------------------------------------------------------

# A two-worker TPU VM as `gcloud compute tpus tpu-vm get-guest-attributes NODE --format=json` prints
# it: one object per attribute, worker by worker.
GUEST_ATTRIBUTES = """[
  {
    "key": "hostname",
    "namespace": "deviceInfo",
    "value": "t1v-n-cca1e90f-w-0",
    "worker_id": 0
  },
  {
    "key": "ssh-ed25519",
    "namespace": "hostkeys",
    "value": "AAAAC3NzaC1lZDI1NTE5AAAAIFSAXvud+8VbF9j9c6Uchf8n9RpbHbh2ztp4bXLm1tk1",
    "worker_id": 0
  },
  {
    "key": "hostname",
    "namespace": "deviceInfo",
    "value": "t1v-n-cca1e90f-w-1",
    "worker_id": 1
  },
  {
    "key": "ssh-ed25519",
    "namespace": "hostkeys",
    "value": "AAAAC3NzaC1lZDI1NTE5AAAAIFDD1fRFVsw+bbNuttWJsPaLkGVRlg66WS0/PyeGXILW",
    "worker_id": 1
  }
]
"""


def test_a_tpu_vms_workers_are_listed_by_their_guest_attributes() -> None:
    assert tpu.group_list_command("batch-tpu", "us-central1-a", "ml-prod") == [
        "gcloud", "compute", "tpus", "tpu-vm", "get-guest-attributes", "batch-tpu",
        "--zone=us-central1-a", "--project=ml-prod", "--format=json",
    ]  # fmt: skip


def test_each_worker_is_reached_through_iap_at_the_instance_its_hostname_attribute_names() -> None:
    group = _group("tpu", groups=["batch-tpu"], private_ips=["10.64.0.2", "10.64.0.3"])
    nodes = tpu.group_members(json.loads(GUEST_ATTRIBUTES), group)
    assert [(n.name, n.private_ip, n.public_ip, n.via) for n in nodes] == [
        ("t1v-n-cca1e90f-w-0", "10.64.0.2", "", "iap"),  # the address exported for worker 0
        ("t1v-n-cca1e90f-w-1", "10.64.0.3", "", "iap"),
    ]
    assert nodes[1].proxy_command == gcp.iap_proxy("t1v-n-cca1e90f-w-1", "us-central1-a", "ml-prod")
    assert nodes[1].address == "t1v-n-cca1e90f-w-1"  # the name its host key is pinned under
    assert all(n.user == "ubuntu" and n.keys for n in nodes)
    # gcloud lists worker by worker; the workers stay in worker order whatever the order of entries
    shuffled = list(reversed(json.loads(GUEST_ATTRIBUTES)))
    assert [n.name for n in tpu.group_members(shuffled, group)] == [n.name for n in nodes]


def test_a_worker_that_has_not_published_its_hostname_stops_the_listing() -> None:
    """Still booting: verifying without it would measure a smaller slice than the stack built."""
    answer = [a for a in json.loads(GUEST_ATTRIBUTES) if (a["worker_id"], a["key"]) != (1, "hostname")]
    group = _group("tpu", groups=["batch-tpu"], private_ips=["10.64.0.2", "10.64.0.3"])
    with pytest.raises(InputError, match=r"TPU batch-tpu worker 1: has published no hostname"):
        tpu.group_members(answer, group)
    # a worker the exported addresses do not cover is still reached, without a peer address
    [only] = tpu.group_members(json.loads(GUEST_ATTRIBUTES)[:2], _group("tpu", groups=["batch-tpu"]))
    assert (only.name, only.private_ip) == ("t1v-n-cca1e90f-w-0", "")


def test_an_answer_not_shaped_as_gcloud_prints_it_is_refused() -> None:
    group = _group("tpu", groups=["batch-tpu"])
    with pytest.raises(ValueError, match="list"):  # the REST response, not gcloud's flattened list
        tpu.group_members({"guestAttributes": [{"queryPath": "", "queryValue": {"items": []}}]}, group)
    with pytest.raises(ValueError, match="worker_id"):
        tpu.group_members([{"key": "hostname", "namespace": "deviceInfo", "value": "t1v-n-1-w-0"}], group)
    with pytest.raises(ValueError, match="key"):
        tpu.group_members([{"worker_id": 0}], group)
