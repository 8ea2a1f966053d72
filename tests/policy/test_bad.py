"""Crafted bad resources and stacks: each policy fails on its own case, saying how to fix it.

Most cases start from a real example stack's resource (what the components register) and change
the one property a careless edit or a hand-written program would get wrong.
"""

from __future__ import annotations

from typing import Any

import pytest

from policy import guardrails as g
from tests.policy.conftest import NOT_APPLICABLE, Captured, CapturedStack, policy_resources, violations

admin_ports = violations("no-open-admin-ports")
imdsv2 = violations("imdsv2-required")
encrypted = violations("encrypted-disks")
public_ip = violations("public-ip-by-profile")
expiry = violations("ephemeral-expiry")
balance = violations("balance-minimums")
capacity = violations("production-on-demand-or-reserved")
budget = violations("monthly-budget")

Stacks = dict[str, CapturedStack]


def made(typ: str, props: dict[str, Any], name: str = "hand-written") -> Captured:
    return Captured("crafted", typ, name, props, {**props, "id": f"{name}-id"})


def one_violation(found: list[str], *needles: str) -> str:
    assert len(found) == 1, found
    for needle in needles:
        assert needle in found[0], (needle, found[0])
    return found[0]


# --- 1. admin ports -------------------------------------------------------------------------------


def test_ssh_from_anywhere_in_a_security_group(stacks: Stacks) -> None:
    sg = stacks["exp-aws-spot"].one(g.AWS_SECURITY_GROUP)
    sg.inputs["ingress"][0]["cidrBlocks"] = ["0.0.0.0/0"]
    one_violation(admin_ports(sg), "22 (SSH)", "0.0.0.0/0", "sshSourceRanges", "Session Manager")


def test_all_traffic_from_ipv6_anywhere(stacks: Stacks) -> None:
    sg = stacks["train-p5-cluster"].one(g.AWS_SECURITY_GROUP)
    sg.inputs["ingress"].append({"protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"]})
    msg = one_violation(admin_ports(sg), "::/0", "3389 (RDP)", "8888 (Jupyter)")
    assert "22 (SSH)" in msg


@pytest.mark.parametrize(
    ("typ", "props", "port"),
    [
        (
            g.AWS_SG_INGRESS_RULE,
            {"ipProtocol": "tcp", "fromPort": 3389, "toPort": 3389, "cidrIpv4": "0.0.0.0/0"},
            "3389 (RDP)",
        ),
        (g.AWS_SG_INGRESS_RULE, {"ipProtocol": "-1", "cidrIpv6": "::/0"}, "6443 (Kubernetes API)"),
        (
            g.AWS_SG_RULE,
            {"type": "ingress", "protocol": "tcp", "fromPort": 8000, "toPort": 9000, "cidrBlocks": ["0.0.0.0/0"]},
            "8888 (Jupyter)",
        ),
        (
            g.GCP_FIREWALL,
            {"direction": "INGRESS", "sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp"}]},
            "22 (SSH)",
        ),
        (g.GCP_FIREWALL, {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "all"}]}, "5900 (VNC)"),
        (
            g.GCP_FIREWALL,
            {"sourceRanges": ["10.0.0.0/8", "::/0"], "allows": [{"protocol": "tcp", "ports": ["2375-2376"]}]},
            "2376 (Docker API (TLS))",
        ),
        # No source at all: GCE applies the rule to every source.
        (g.GCP_FIREWALL, {"allows": [{"protocol": "tcp", "ports": ["8888"]}]}, "8888 (Jupyter)"),
    ],
)
def test_admin_ports_from_anywhere(typ: str, props: dict[str, Any], port: str) -> None:
    one_violation(admin_ports(made(typ, props)), port, "restrict the source")


@pytest.mark.parametrize(
    ("typ", "props"),
    [
        (g.AWS_SG_RULE, {"type": "egress", "protocol": "-1", "cidrBlocks": ["0.0.0.0/0"]}),
        (g.AWS_SG_INGRESS_RULE, {"ipProtocol": "tcp", "fromPort": 443, "toPort": 443, "cidrIpv4": "0.0.0.0/0"}),
        (g.GCP_FIREWALL, {"direction": "EGRESS", "destinationRanges": ["0.0.0.0/0"], "allows": [{"protocol": "all"}]}),
        (g.GCP_FIREWALL, {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "icmp"}]}),
        (
            g.GCP_FIREWALL,
            {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp", "ports": ["22"]}], "disabled": True},
        ),
        (g.GCP_FIREWALL, {"sourceRanges": ["203.0.113.0/24"], "allows": [{"protocol": "tcp", "ports": ["22"]}]}),
    ],
)
def test_harmless_rules_pass(typ: str, props: dict[str, Any]) -> None:
    assert admin_ports(made(typ, props)) == []


def test_admin_ports_are_configurable() -> None:
    rule = made(g.AWS_SG_INGRESS_RULE, {"ipProtocol": "tcp", "fromPort": 5432, "toPort": 5432, "cidrIpv4": "0.0.0.0/0"})
    assert admin_ports(rule) == []
    one_violation(admin_ports(rule, {"ports": [5432]}), "5432")


# --- 2. IMDSv2 --------------------------------------------------------------------------------------


def test_launch_template_with_imdsv1(stacks: Stacks) -> None:
    lt = stacks["train-p5-cluster"].one(g.AWS_LAUNCH_TEMPLATE)
    lt.inputs["metadataOptions"]["httpTokens"] = "optional"
    one_violation(imdsv2(lt), "IMDSv1", "optional", 'httpTokens to "required"')


def test_instance_without_template_or_metadata_options() -> None:
    found = imdsv2(made(g.AWS_INSTANCE, {"instanceType": "g5.xlarge", "ami": "ami-1"}))
    one_violation(found, "unset", 'httpTokens to "required"')


def test_instance_from_a_template_defers_to_it(stacks: Stacks) -> None:
    assert imdsv2(stacks["exp-aws-spot"].one(g.AWS_INSTANCE)) == []
    assert imdsv2(made(g.AWS_LAUNCH_TEMPLATE, {"metadataOptions": {"httpEndpoint": "disabled"}})) == []


# --- 3. encrypted disks ----------------------------------------------------------------------------


def test_unencrypted_launch_template_device(stacks: Stacks) -> None:
    lt = stacks["exp-aws-spot"].one(g.AWS_LAUNCH_TEMPLATE)
    lt.inputs["blockDeviceMappings"][0]["ebs"]["encrypted"] = "false"
    one_violation(encrypted(lt), "/dev/sda1", "encrypted: true")


def test_unencrypted_volume(stacks: Stacks) -> None:
    vol = stacks["exp-aws-spot"].one(g.AWS_VOLUME)
    del vol.inputs["encrypted"]
    one_violation(encrypted(vol), "not encrypted", "encrypted: true")


def test_instance_root_and_ebs_blocks() -> None:
    bare = made(g.AWS_INSTANCE, {"instanceType": "g5.xlarge"})
    one_violation(encrypted(bare), "rootBlockDevice.encrypted")
    found = encrypted(
        made(
            g.AWS_INSTANCE,
            {
                "rootBlockDevice": {"encrypted": False},
                "ebsBlockDevices": [{"deviceName": "/dev/sdf", "encrypted": False}],
            },
        )
    )
    assert len(found) == 2 and all("encrypted" in f for f in found)


def test_gcp_cmek_only_on_request(stacks: Stacks) -> None:
    disk = stacks["finetune-gcp-g2"].one(g.GCP_DISK)
    assert encrypted(disk) == [NOT_APPLICABLE]
    one_violation(encrypted(disk, {"requireGcpCmek": True}), "kmsKeySelfLink", "requireGcpCmek")
    disk.inputs["diskEncryptionKey"] = {"kmsKeySelfLink": "projects/p/locations/l/keyRings/r/cryptoKeys/k"}
    assert encrypted(disk, {"requireGcpCmek": True}) == []
    template = stacks["serve-gcp-realtime"].one(g.GCP_TEMPLATE)
    one_violation(encrypted(template, {"requireGcpCmek": True}), "disks[0]")  # the local SSD is exempt


# --- 4. public IPs -----------------------------------------------------------------------------------


def test_public_ip_on_a_production_launch_template(stacks: Stacks) -> None:
    lt = stacks["train-p5-cluster"].one(g.AWS_LAUNCH_TEMPLATE)
    lt.inputs["networkInterfaces"][0]["associatePublicIpAddress"] = "true"
    one_violation(public_ip(lt), "scale-training", "security.public_ip: false", "set it to false", "Session Manager")


def test_public_subnet_and_instance(stacks: Stacks) -> None:
    subnet = stacks["train-p5-cluster"].one(g.AWS_SUBNET, "private-0")
    subnet.inputs["mapPublicIpOnLaunch"] = True
    one_violation(public_ip(subnet), "mapPublicIpOnLaunch", "NAT gateway")
    node = stacks["train-p5-cluster"].one(g.AWS_INSTANCE, "node-0")
    node.inputs["associatePublicIpAddress"] = True
    one_violation(public_ip(node), "scale-training")


def test_external_ip_on_gcp_template_and_tpu(stacks: Stacks) -> None:
    template = stacks["serve-gcp-realtime"].one(g.GCP_TEMPLATE)
    template.inputs["networkInterfaces"][0]["accessConfigs"] = [{"networkTier": "PREMIUM"}]
    one_violation(public_ip(template), "realtime-inference", "Cloud NAT")
    tpu = stacks["batch-tpu-v5e"].one(g.TPU_VM)
    tpu.inputs["networkConfig"]["enableExternalIps"] = True
    one_violation(public_ip(tpu), "batch-inference", "enableExternalIps")


def test_public_ip_allowed_by_the_profile(stacks: Stacks) -> None:
    """fine-tuning allows a public IP: its TPU VM and GPU VM have one and pass."""
    assert stacks["train-tpu-v5e"].one(g.TPU_VM).inputs["networkConfig"]["enableExternalIps"] is True
    assert public_ip(stacks["train-tpu-v5e"].one(g.TPU_VM)) == []
    assert public_ip(stacks["finetune-gcp-a2"].one(g.GCP_INSTANCE)) == []


def test_public_ip_without_a_profile(stacks: Stacks) -> None:
    qr = stacks["train-tpu-v5p-slice"].one(g.TPU_QUEUED)
    qr.inputs["tpu"]["nodeSpecs"][0]["node"]["networkConfig"]["enableExternalIps"] = True
    one_violation(public_ip(qr), "no fullserver-profile label", "label it fullserver-profile=<profile>")
    one_violation(public_ip(qr, stack_tags={"fullserver:profile": "scale-training"}), "scale-training")
    assert public_ip(qr, stack_tags={"fullserver:profile": "fine-tuning"}) == []
    vm = stacks["finetune-gcp-a2"].one(g.GCP_INSTANCE)
    vm.inputs["labels"]["fullserver-profile"] = "no-such-profile"
    one_violation(public_ip(vm), "unknown profile 'no-such-profile'", "experimentation")


# --- 5. expiry ---------------------------------------------------------------------------------------


def test_ephemeral_vm_without_ttl(stacks: Stacks) -> None:
    vm = stacks["finetune-gcp-g2"].one(g.GCP_INSTANCE)
    del vm.inputs["labels"]["fullserver-ttl-hours"]
    one_violation(expiry(vm), "finetune-gcp-g2", "no expiry", "fullserver-ttl-hours=<hours>", "fullserver janitor")
    assert expiry(vm, stack_tags={"fullserver:expires-at": "2030-01-01T00:00:00Z"}) == []
    vm.inputs["labels"]["fullserver-expires-at"] = "2030-01-01t00-00-00z"
    assert expiry(vm) == []


def test_bad_ttl_and_a_missing_lifecycle_label(stacks: Stacks) -> None:
    lt = stacks["exp-aws-spot"].one(g.AWS_LAUNCH_TEMPLATE)
    lt.inputs["tags"]["fullserver-ttl-hours"] = "0"
    for spec in lt.inputs["tagSpecifications"]:
        spec["tags"]["fullserver-ttl-hours"] = "0"
    one_violation(expiry(lt), "not a positive number")
    tpu = stacks["batch-tpu-v5e"].one(g.TPU_VM)
    del tpu.inputs["labels"]["fullserver-ttl-hours"]
    del tpu.inputs["labels"]["fullserver-lifecycle"]
    one_violation(expiry(tpu), "profile 'batch-inference' is ephemeral")


def test_persistent_environments_need_no_expiry(stacks: Stacks) -> None:
    assert expiry(stacks["train-p5-cluster"].one(g.AWS_INSTANCE, "node-0")) == []
    assert expiry(made(g.GCP_INSTANCE, {"labels": {}})) == []


# --- 6. balance ------------------------------------------------------------------------------------


def test_unbalanced_shape_reports_each_short_dimension(stacks: Stacks) -> None:
    stack = stacks["train-p5-cluster"]
    stack.one(g.AWS_LAUNCH_TEMPLATE).outputs["instanceType"] = "g6.xlarge"  # 1 x L4 on 4 vCPUs
    found = balance(stack)
    nodes = [f for f in found if "node-0" in f]
    assert len(nodes) == 4, found  # 4 vCPUs, 16 GiB, 250 GB NVMe, 10 Gbps: every dimension is short
    assert {f.split(" is short of ")[1].split()[0] for f in nodes} == {"cpu", "ram", "nvme", "network"}
    for f in nodes:
        assert "scale-training" in f and "fullserver plan" in f and "g6.xlarge" in f


def test_missing_data_disk_leaves_nvme_short(stacks: Stacks) -> None:
    stack = stacks["finetune-gcp-g2"]
    stack.resources = [r for r in stack.resources if r.type != g.GCP_DISK]
    one_violation(balance(stack), "nvme 375 GiB < 500 GiB", "larger data disk")


def test_tpu_host_short_for_a_stricter_profile(stacks: Stacks) -> None:
    stack = stacks["batch-tpu-v5e"]
    stack.one(g.TPU_VM).outputs["labels"]["fullserver-profile"] = "realtime-inference"
    found = balance(stack)
    assert found and all("realtime-inference" in f and "tpu-vm" in f for f in found)


# --- 7. production capacity ------------------------------------------------------------------------


def test_spot_launch_template_for_scale_training(stacks: Stacks) -> None:
    lt = stacks["train-p5-cluster"].one(g.AWS_LAUNCH_TEMPLATE)
    lt.inputs["instanceMarketOptions"] = {"marketType": "spot"}
    one_violation(capacity(lt), "scale-training", "on-demand or reserved", "remove instanceMarketOptions")


def test_spot_group_and_spot_template(stacks: Stacks) -> None:
    group = made(
        g.AWS_ASG,
        {
            "tags": [{"key": "fullserver-profile", "value": "realtime-inference", "propagateAtLaunch": True}],
            "mixedInstancesPolicy": {"instancesDistribution": {"onDemandPercentageAboveBaseCapacity": 0}},
        },
    )
    one_violation(capacity(group), "realtime-inference", "onDemandPercentageAboveBaseCapacity to 100")
    template = stacks["serve-gcp-realtime"].one(g.GCP_TEMPLATE)
    template.inputs["scheduling"].update({"provisioningModel": "SPOT", "preemptible": True})
    one_violation(capacity(template), "provisioningModel STANDARD")


def test_spot_allowed_for_spot_profiles_and_batch_inference_by_default(stacks: Stacks) -> None:
    assert capacity(stacks["finetune-gcp-g2"].one(g.GCP_INSTANCE)) == []  # fine-tuning is not production
    batch = stacks["batch-tpu-v5e"].one(g.TPU_VM)
    assert capacity(batch) == []  # production stage, but the profile itself prices spot-with-fallback
    one_violation(capacity(batch, {"allowProfileSpot": False}), "batch-inference", "schedulingConfig.spot false")


# --- 8. budget ---------------------------------------------------------------------------------------


def test_over_budget(stacks: Stacks) -> None:
    msg = one_violation(
        budget(stacks["train-p5-cluster"], {"maxMonthlyUsd": 10_000}),
        "policy-time estimate",
        "exceeds maxMonthlyUsd $10,000",
        "p5.48xlarge",
        "raise maxMonthlyUsd",
    )
    assert "x 730 h" in msg


def test_budget_counts_replicas_and_spot(stacks: Stacks) -> None:
    serve = g.estimate_month(policy_resources(stacks["serve-gcp-realtime"]))
    one = g.catalog().offer("g2-standard-12")
    assert one is not None
    assert serve.usd_month >= 2 * one.prices["us-central1"].on_demand * 730
    spot = g.estimate_month(policy_resources(stacks["finetune-gcp-g2"]))
    assert spot.usd_month < one.prices["us-central1"].on_demand * 730


def test_budget_needs_configuring(stacks: Stacks) -> None:
    assert budget(stacks["exp-aws-spot"]) == [NOT_APPLICABLE]
    assert budget(stacks["exp-aws-spot"], {"maxMonthlyUsd": 50_000}) == []
    found = budget(stacks["exp-aws-spot"], {"maxMonthlyUsd": 50, "hoursPerMonth": 100})
    one_violation(found, "x 100 h")


def test_types_missing_from_the_catalog_fail_the_budget_closed(stacks: Stacks) -> None:
    """20 x p3dn.24xlarge is not $0: a machine the catalog cannot price fails the budget, whatever
    the priced part adds up to, and the message names it and both ways out."""
    stack = stacks["exp-aws-spot"]
    stack.resources.append(
        made(
            g.AWS_ASG,
            {
                "desiredCapacity": 20,
                "mixedInstancesPolicy": {"launchTemplate": {"overrides": [{"instanceType": "p3dn.24xlarge"}]}},
            },
            name="big-group",
        )
    )
    est = g.estimate_month(policy_resources(stack))
    assert est.unpriced_compute == [
        "Group 'big-group': 20 x p3dn.24xlarge (p3dn.24xlarge is not in fullserver's catalog)"
    ]
    assert est.unpriced_compute[0] in est.unpriced
    assert est.usd_month < 50_000  # the priced part fits: only the unpriced machines fail it
    one_violation(
        budget(stack, {"maxMonthlyUsd": 50_000}),
        "cannot price 1 compute resource(s)",
        "20 x p3dn.24xlarge",
        "fullserver/catalog/data/",
        "allowUnpriced: true",
    )
    assert budget(stack, {"maxMonthlyUsd": 50_000, "allowUnpriced": True}) == []
    over = one_violation(budget(stack, {"maxMonthlyUsd": 50, "allowUnpriced": True}), "exceeds maxMonthlyUsd $50")
    assert "Not priced: Group 'big-group'" in over


def test_every_kind_of_compute_is_priced_or_named(stacks: Stacks) -> None:
    """CPU machines, GPU hosts and TPUs the catalog does not list, and spot fleets are named as
    unpriced; a spot instance request is priced at spot; a template nothing launches costs nothing."""
    stack = stacks["exp-aws-spot"]
    stack.resources += [
        made(g.GCP_INSTANCE, {"machineType": "e2-medium", "zone": "us-central1-a"}, name="bastion"),
        made(
            g.GCP_INSTANCE,
            {
                "machineType": "n1-standard-8",
                "zone": "us-central1-a",
                "guestAccelerators": [{"type": "nvidia-tesla-k80", "count": 2}],
            },
            name="k80s",
        ),
        made(g.TPU_VM, {"acceleratorType": "v9-8", "zone": "us-central2-b"}, name="future-tpu"),
        made(
            g.AWS_SPOT_FLEET,
            {"targetCapacity": 4, "launchSpecifications": [{"instanceType": "g5.xlarge"}]},
            name="fleet",
        ),
        made(g.AWS_LAUNCH_TEMPLATE, {"instanceType": "x9.mega"}, name="spare-template"),
        made(g.AWS_SPOT_REQUEST, {"instanceType": "g4dn.xlarge", "region": "eu-central-1"}, name="spot-one"),
    ]
    est = g.estimate_month(policy_resources(stack))
    assert est.unpriced_compute == [
        "Instance 'bastion': 1 x e2-medium (e2-medium is not in fullserver's catalog)",
        "Instance 'k80s': 1 x n1-standard-8 + 2 x nvidia-tesla-k80 (n1-standard-8 + 2 x nvidia-tesla-k80 is not "
        "in fullserver's catalog)",
        "V2Vm 'future-tpu': 1 x v9-8 (v9-8 is not in fullserver's catalog)",
        "SpotFleetRequest 'fleet': 4 x spot fleet of g5.xlarge (a spot fleet's cost depends on the types and "
        "weights it picks, which this policy does not model)",
    ]
    g4dn = g.catalog().offer("g4dn.xlarge")
    assert g4dn is not None
    spot = g4dn.prices["eu-central-1"].spot
    assert spot is not None
    [(usd, _)] = [item for item in est.items if item[1].startswith("SpotInstanceRequest 'spot-one'")]
    assert usd == pytest.approx(spot * 730)
    assert balance(stack) == []  # nothing in the catalog to hold the unlisted shapes to


def test_unknown_values_skip_only_their_node(stacks: Stacks) -> None:
    """During preview an unknown prop raises; the stack policies skip that node, not the stack."""
    from pulumi_policy.proxy import UnknownValueError

    class Unknown(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            if key == "machineType":
                raise UnknownValueError("04da6b54-80e4-46f7-96ec-b56ff0331ba9", [key])
            return super().get(key, default)

    stack = stacks["finetune-gcp-g2"]
    vm = stack.one(g.GCP_INSTANCE)
    vm.outputs = Unknown(vm.outputs)
    assert balance(stack) == []
    nodes, skipped = g.accelerator_nodes(policy_resources(stack))
    assert nodes == [] and skipped and "machineType" in skipped[0]
