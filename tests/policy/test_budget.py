"""monthly-budget and the policy-time estimate: over budget or unpriced machines fail."""

from __future__ import annotations

import pytest

from fullserver.kube.cost import volume_usd_hour
from fullserver.kube.manifest import workload
from fullserver.kube.volume import LABEL_GIB, LABEL_IOPS, LABEL_KIND, LABEL_MBPS
from fullserver.rules import HOURS_PER_MONTH, disk_usd_month
from policy.budget import estimate_month
from policy.kube_nodes import EKS_NODE_GROUP, GKE_NODE_POOL
from policy.offers import catalog
from policy.resources import (
    AWS_ASG,
    AWS_LAUNCH_TEMPLATE,
    AWS_SPOT_FLEET,
    AWS_SPOT_REQUEST,
    AWS_VOLUME,
    GCP_DISK,
    GCP_INSTANCE,
    TPU_VM,
)
from tests.components.conftest import plain_http
from tests.policy.conftest import (
    NOT_APPLICABLE,
    Captured,
    CapturedStack,
    Stacks,
    made,
    one_violation,
    policy_resources,
    violations,
)

budget = violations("monthly-budget")
balance = violations("balance-minimums")


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
    serve = estimate_month(policy_resources(stacks["serve-gcp-realtime"]))
    one = catalog().offer("g2-standard-12")
    assert one is not None
    assert serve.usd_month >= 2 * one.prices["us-central1"].on_demand * 730
    spot = estimate_month(policy_resources(stacks["finetune-gcp-g2"]))
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
            AWS_ASG,
            {
                "desiredCapacity": 20,
                "mixedInstancesPolicy": {"launchTemplate": {"overrides": [{"instanceType": "p3dn.24xlarge"}]}},
            },
            name="big-group",
        )
    )
    est = estimate_month(policy_resources(stack))
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
        made(GCP_INSTANCE, {"machineType": "e2-medium", "zone": "us-central1-a"}, name="bastion"),
        made(
            GCP_INSTANCE,
            {
                "machineType": "n1-standard-8",
                "zone": "us-central1-a",
                "guestAccelerators": [{"type": "nvidia-tesla-k80", "count": 2}],
            },
            name="k80s",
        ),
        made(TPU_VM, {"acceleratorType": "v9-8", "zone": "us-central2-b"}, name="future-tpu"),
        made(
            AWS_SPOT_FLEET,
            {"targetCapacity": 4, "launchSpecifications": [{"instanceType": "g5.xlarge"}]},
            name="fleet",
        ),
        made(AWS_LAUNCH_TEMPLATE, {"instanceType": "x9.mega"}, name="spare-template"),
        made(AWS_SPOT_REQUEST, {"instanceType": "g4dn.xlarge", "region": "eu-central-1"}, name="spot-one"),
    ]
    est = estimate_month(policy_resources(stack))
    assert est.unpriced_compute == [
        "Instance 'bastion': 1 x e2-medium (e2-medium is not in fullserver's catalog)",
        "Instance 'k80s': 1 x n1-standard-8 + 2 x nvidia-tesla-k80 (n1-standard-8 + 2 x nvidia-tesla-k80 is not "
        "in fullserver's catalog)",
        "V2Vm 'future-tpu': 1 x v9-8 (v9-8 is not in fullserver's catalog)",
        "SpotFleetRequest 'fleet': 4 x spot fleet of g5.xlarge (a spot fleet's cost depends on the types and "
        "weights it picks, which this policy does not model)",
    ]
    g4dn = catalog().offer("g4dn.xlarge")
    assert g4dn is not None
    spot = g4dn.prices["eu-central-1"].spot
    assert spot is not None
    [(usd, _)] = [item for item in est.items if item[1].startswith("SpotInstanceRequest 'spot-one'")]
    assert usd == pytest.approx(spot * 730)
    assert balance(stack) == []  # nothing in the catalog to hold the unlisted shapes to


def test_estimate_covers_compute_and_disks(captured: dict[str, CapturedStack]) -> None:
    """The policy-time estimate prices every cloud example and is at least the plan's compute at
    the same hourly rate (the plan counts productive hours; the policy a full 730-hour month)."""
    for stack in captured.values():
        if stack.plan.spec.platform.value == "bare-metal":
            continue
        est = estimate_month(policy_resources(stack))
        assert est.unpriced == [], stack.stack
        assert est.usd_month > 0, stack.stack
        assert est.usd_month >= 0.5 * stack.plan.cost.usd_month, stack.stack
    p5 = estimate_month(policy_resources(captured["train-p5-cluster"]))
    offer = catalog().offer("p5.48xlarge")
    assert offer is not None
    compute = 2 * offer.prices["us-east-1"].on_demand * 730
    assert compute <= p5.usd_month < compute * 1.01


def test_a_volume_without_a_kind_is_judged_as_the_provider_creates_it(stacks: Stacks) -> None:
    """An EBS volume that names no type is gp2 and a GCP disk that names none is pd-standard (the
    providers' defaults, from ``fullserver.platforms``), not the gp3 / pd-balanced fullserver
    would have chosen; the catalog prices neither, so both are named as unpriced, never $0."""
    stack = stacks["exp-aws-spot"]
    stack.resources += [
        made(AWS_VOLUME, {"size": 100, "availabilityZone": "us-east-1a", "region": "us-east-1"}, name="bare-ebs"),
        made(GCP_DISK, {"size": 100, "zone": "us-central1-a"}, name="bare-pd"),
    ]
    assert catalog().storage_price("aws", "gp2", "us-east-1") is None
    est = estimate_month(policy_resources(stack))
    assert est.unpriced == ["Volume 'bare-ebs': gp2", "Disk 'bare-pd': pd-standard"]


def test_a_created_cluster_s_system_pool_is_priced_as_its_cpu_machine(captured: dict[str, CapturedStack]) -> None:
    """The untainted system pool / node group of a created cluster is a CPU machine the catalog prices but
    never offers: the budget prices it at that price (GKE: per zone x its zones), never as unpriced."""
    eks = estimate_month(policy_resources(captured["eks-gpu-cluster"]))
    (line,) = [item for _, item in eks.items if "eks-gpu-cluster-system" in item and "m6i.large" in item]
    assert "1 x m6i.large on-demand" in line and line.endswith("us-east-1 price) $0.10/h")
    gke = estimate_month(policy_resources(captured["gke-tpu-slice"]))
    (usd, line) = next((usd, item) for usd, item in gke.items if "gke-tpu-slice-system'" in item)
    assert "1 x e2-standard-4 on-demand" in line  # pinned to the plan's zone: one node
    assert usd == pytest.approx(0.13402 * 730)
    assert eks.unpriced == [] and gke.unpriced == []


def test_the_serving_load_balancers_hours_are_in_the_estimate(stacks: Stacks) -> None:
    """The ALB and Google's forwarding rule of the VM serving stacks, at the network catalog's rate."""
    aws = estimate_month(policy_resources(stacks["serve-aws-realtime"]))
    ((usd, item),) = [(usd, item) for usd, item in aws.items if "alb" in item]
    assert item == "LoadBalancer 'serve-aws-realtime-alb': alb $0.0225/h" and usd == pytest.approx(0.0225 * 730)
    gcp = estimate_month(policy_resources(stacks["serve-gcp-realtime"]))
    assert len([item for _, item in gcp.items if "forwarding-rule" in item]) == 1


@pytest.mark.parametrize(
    ("stack", "item", "rate"), [("serve-gke-l4", "forwarding-rule", 0.025), ("eks", "nlb", 0.0225)]
)
def test_a_node_pools_load_balancer_service_is_priced_from_the_applied_workload(
    stacks: Stacks, stack: str, item: str, rate: float
) -> None:
    """A node pool's load balancer is no cloud resource of the program: the policy reads the
    LoadBalancer Service in the workload's ConfigGroup (a component the engine lists too)."""
    serving = stacks["serve-gke-l4"]
    plan, spec = serving.plan.spec.kube, plain_http(serving.plan.spec)  # the Service's own load balancer
    assert plan is not None
    manifests = workload(plan, spec)
    if stack == "eks":  # the AWS Load Balancer Controller's annotations make it an NLB
        for m in manifests:
            if m["kind"] == "Service":
                m["metadata"]["annotations"] = {"service.beta.kubernetes.io/aws-load-balancer-type": "external"}
    serving.resources.append(made("kubernetes:yaml/v2:ConfigGroup", {"objs": manifests}, name="serve-workload"))
    est = estimate_month(policy_resources(serving))
    ((usd, line),) = [(usd, it) for usd, it in est.items if "Service" in it]
    assert line == f"ConfigGroup 'serve-workload': LoadBalancer Service: {item} ${rate}/h"
    assert usd == pytest.approx(rate * 730)


def test_a_gke_https_gateway_is_priced_as_one_global_forwarding_rule(stacks: Stacks) -> None:
    """serve-gke-l4 serves HTTPS through a Gateway (fullserver.platforms.gke_gateway): its load balancer
    is the Gateway's, built by GKE's controller, read from the applied workload."""
    serving = stacks["serve-gke-l4"]
    plan = serving.plan.spec.kube
    assert plan is not None
    manifests = workload(plan, serving.plan.spec)
    serving.resources.append(made("kubernetes:yaml/v2:ConfigGroup", {"objs": manifests}, name="serve-workload"))
    est = estimate_month(policy_resources(serving))
    ((usd, line),) = [(usd, it) for usd, it in est.items if "ConfigGroup" in it]
    assert line == "ConfigGroup 'serve-workload': Gateway: forwarding-rule $0.025/h"
    assert usd == pytest.approx(0.025 * 730)


def test_pods_data_volumes_are_priced_by_their_kind_as_the_plan_prices_them(captured: dict[str, CapturedStack]) -> None:
    """gke-gpu-attach: every pod mounts a data volume the manifests build (no cloud resource of the
    stack). Its pools' node labels name the volume's size and kind, so the budget prices one volume
    per node at each pool's ceiling, at the price ``fullserver plan`` puts on it."""
    stack = captured["gke-gpu-attach"]
    spec = stack.plan.spec
    assert spec.kube is not None and spec.kube.data_volume is not None
    volume = spec.kube.data_volume
    per_volume_month = volume_usd_hour(spec.kube, spec, catalog())[0] * HOURS_PER_MONTH
    assert per_volume_month > 0
    est = estimate_month(policy_resources(stack))
    lines = [(usd, item) for usd, item in est.items if f"x {volume.size_gib:g} GiB {volume.kind}" in item]
    ceilings = sorted(p.max_nodes for p in spec.kube.pools)
    assert len(lines) == len(spec.kube.pools) == 2  # the spot pool and its on-demand fallback
    assert sorted(usd for usd, _ in lines) == pytest.approx([n * per_volume_month for n in ceilings])
    assert est.unpriced == []


def _labelled_group(labels: dict[str, str]) -> Captured:
    return made(
        EKS_NODE_GROUP,
        {
            "instanceTypes": ["p5.48xlarge"],
            "scalingConfig": {"minSize": 0, "maxSize": 2, "desiredSize": 0},
            "capacityType": "ON_DEMAND",
            "labels": labels,
            "arn": "arn:aws:eks:us-east-1:123456789012:nodegroup/c/g/1",
        },
        name="gpu-group",
    )


def test_an_eks_group_s_volumes_are_priced_with_their_provisioned_iops_and_throughput(stacks: Stacks) -> None:
    """gp3 above its free 3,000 IOPS and 125 MB/s costs more (``disk_usd_month``): the labels carry both."""
    stack = stacks["eks-gpu-cluster"]
    plain = {LABEL_GIB: "500", LABEL_KIND: "gp3"}
    fast = {**plain, LABEL_IOPS: "16000", LABEL_MBPS: "1000"}
    price = catalog().storage_price("aws", "gp3", "us-east-1")
    assert price is not None
    prices = []
    for labels in (plain, fast):
        crafted = stack.copy()
        crafted.resources.append(_labelled_group(labels))
        est = estimate_month(policy_resources(crafted))
        (usd,) = [usd for usd, item in est.items if "gpu-group" in item and "500 GiB gp3" in item]
        prices.append(usd)
    assert prices[0] == pytest.approx(2 * disk_usd_month(price, 500, 0, 0))
    assert prices[1] == pytest.approx(2 * disk_usd_month(price, 500, 16000, 1000)) and prices[1] > prices[0]


def test_an_eks_group_s_root_volumes_are_priced_from_its_launch_template(stacks: Stacks) -> None:
    """The components size a node group's root volume in its launch template, never in ``diskSize``:
    each node of the group's ceiling bills one, as the plan's disks do."""
    stack = stacks["eks-gpu-cluster"]
    group = stack.one(EKS_NODE_GROUP, "-accelerators")
    assert group.outputs.get("diskSize") is None and group.outputs["launchTemplate"]
    (mapping,) = stack.one(AWS_LAUNCH_TEMPLATE, "cluster-lt").outputs["blockDeviceMappings"]
    gib, ceiling = mapping["ebs"]["volumeSize"], group.outputs["scalingConfig"]["maxSize"]
    price = catalog().storage_price("aws", "gp3", "us-east-1")
    assert price is not None
    est = estimate_month(policy_resources(stack))
    (usd,) = [usd for usd, item in est.items if group.name in item and f"{ceiling} x {gib:g} GiB gp3" in item]
    assert usd == pytest.approx(ceiling * disk_usd_month(price, gib, 0, 0))


def test_a_volume_labelled_with_its_size_only_takes_the_platform_s_default_kind(stacks: Stacks) -> None:
    """A pool an older fullserver labelled with the size alone: priced as the default data disk kind
    (EKS gp3), not left out."""
    stack = stacks["eks-gpu-cluster"]
    stack.resources.append(_labelled_group({LABEL_GIB: "200"}))
    est = estimate_month(policy_resources(stack))
    assert any("gpu-group" in item and "2 x 200 GiB gp3" in item for _, item in est.items)
    assert est.unpriced == []


def test_a_tpu_slice_s_every_host_carries_its_own_boot_disk_and_volume(stacks: Stacks) -> None:
    """A TPU slice pool is priced as one slice, but each of its hosts has a boot disk and its pod a volume."""
    stack = stacks["gke-tpu-slice"]
    pool = stack.one(GKE_NODE_POOL, "-accelerators")
    pool.outputs["nodeConfig"]["labels"] = {**pool.outputs["nodeConfig"]["labels"], LABEL_GIB: "100"}
    est = estimate_month(policy_resources(stack))
    items = [item for _, item in est.items if pool.name in item]
    assert any("4 x 100 GiB pd-balanced" in item for item in items)  # four hosts' volumes (default kind)
    boot = pool.outputs["nodeConfig"]["diskSizeGb"]
    assert any(f"4 x {boot:g} GiB" in item for item in items)  # and four boot disks
