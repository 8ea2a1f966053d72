"""`fullserver plan`'s total is the bill: every billable resource the program creates for an example
stack (the graph ``fullserver plan`` evaluates under mocks) has its cost line, as the resource
ledger (``catalog/data/resources.yaml``) names it, with a figure; test_ledger.py holds every type
to the ledger.
"""

from __future__ import annotations

import pytest

from components.graph import Graph, graph_for_stack_plan
from fullserver.ledger import load_ledger
from tests.components.conftest import Plans


@pytest.fixture(scope="module")
def graphs(plans: Plans) -> dict[str, Graph]:
    return {name: graph_for_stack_plan(plan) for name, plan in plans.items()}


def _public_addresses(g: Graph) -> bool:
    """Nodes or a load balancer holding public IPv4 addresses, each billed per address-hour."""
    for row in g.rows:
        nics = row.inputs.get("networkInterfaces") or []
        if row.type.endswith("launchTemplate:LaunchTemplate") and any(
            n.get("associatePublicIpAddress") == "true" for n in nics
        ):
            return True
        if row.type.endswith(("instance:Instance", "instanceTemplate:InstanceTemplate")) and any(
            n.get("accessConfigs") for n in nics
        ):
            return True
        if row.type == "gcp:tpu/v2Vm:V2Vm" and (row.inputs.get("networkConfig") or {}).get("enableExternalIps"):
            return True
        if row.type == "aws:lb/loadBalancer:LoadBalancer" and row.inputs.get("internal") is False:
            return True
    return False


@pytest.mark.parametrize(
    "stack",
    [
        "batch-tpu-v5e",
        "exp-aws-spot",
        "finetune-gcp-a2",
        "finetune-gcp-g2",
        "serve-aws-realtime",
        "serve-gcp-realtime",
        "train-p5-cluster",
        "train-tpu-v5e",
        "train-tpu-v5p-slice",
    ],
)
def test_every_billable_resource_has_its_cost_line(plans: Plans, graphs: dict[str, Graph], stack: str) -> None:
    plan, g = plans[stack], graphs[stack]
    lines = {line.item: line for line in plan.cost.lines}
    ledger = load_ledger()
    needed = {line for r in g.rows if r.type in ledger.types and (line := ledger.billed_by(r.type)) is not None}
    if any(
        r.type == "aws:autoscaling/policy:Policy" and r.inputs.get("policyType") == "TargetTrackingScaling"
        for r in g.rows
    ):
        needed.add("CloudWatch alarms")
    if _public_addresses(g) or g.of_type("ec2/eip:Eip"):
        needed.add("public IPv4 addresses")
    assert needed - lines.keys() == set(), plan.cost.warnings
    # a priced line is not zero unless it says why (health checks: no charge item)
    for item in needed:
        assert lines[item].usd_month > 0 or "no charge" in lines[item].note, item


def test_a_serving_pool_bills_the_load_balancer_its_service_makes(plans: Plans, graphs: dict[str, Graph]) -> None:
    """serve-gke-l4: the load balancer is no cloud resource of the program but what GKE makes of the
    workload's Gateway (HTTPS, applied in the ConfigGroup; without TLS its LoadBalancer Service); the
    plan bills exactly one."""
    plan, g = plans["serve-gke-l4"], graphs["serve-gke-l4"]
    (group,) = g.of_type("yaml/v2:ConfigGroup")
    objs = group.inputs["objs"]
    assert [o for o in objs if o["kind"] == "Service" and o["spec"]["type"] == "LoadBalancer"] == []
    assert len([o for o in objs if o["kind"] == "Gateway"]) == 1
    assert plan.spec.billables is not None and plan.spec.billables.load_balancer == "gke-passthrough-nlb"
    lines = {line.item: line for line in plan.cost.lines}
    # one global forwarding rule all month, plus the 2,000 GB it carries at 0.008/GiB
    assert lines["load balancer"].usd_month == round(0.025 * 730 + 2000 * 0.008 / 1.073741824, 2)
    assert lines["load balancer"].note.startswith("Gateway (global external ALB): 1 global forwarding rule")
    assert "no charge" in lines["health checks"].note


def test_the_core_decides_what_the_components_build(plans: Plans, graphs: dict[str, Graph]) -> None:
    """The spec's billables and the graph agree: NAT, public addresses, load balancer, zones."""
    for stack, plan in plans.items():
        b, g = plan.spec.billables, graphs[stack]
        if b is None or plan.spec.provider not in ("aws", "gcp"):
            continue
        if plan.spec.kube is not None:  # node pools: a created cluster's NAT (GKE: Cloud NAT), nothing else
            nat = g.of_type("compute/routerNat:RouterNat") + g.of_type("ec2/natGateway:NatGateway")
            assert len(nat) == (1 if b.nat else 0), stack
            assert len(g.of_type("ec2/eip:Eip")) == (b.nat_public_ips if plan.spec.provider == "aws" else 0), stack
            if plan.spec.provider == "aws" and b.nat:
                public = [r for r in g.of_type("ec2/subnet:Subnet") if "-public-" in r.name]
                assert len(public) == b.zones, stack
            continue
        nat = g.of_type("ec2/natGateway:NatGateway") + g.of_type("compute/routerNat:RouterNat")
        assert bool(nat) == b.nat, stack
        assert len(g.of_type("ec2/eip:Eip")) == (b.nat_public_ips if plan.spec.provider == "aws" else 0), stack
        lbs = g.of_type("lb/loadBalancer:LoadBalancer") + g.of_type("compute/globalForwardingRule:GlobalForwardingRule")
        # GCP with HTTPS: two rules on one address (443, and the redirect on 80), billed together
        https_rules = 2 if plan.spec.provider == "gcp" and plan.spec.endpoint and plan.spec.endpoint.tls else 1
        assert len(lbs) == (https_rules if b.load_balancer else 0), stack
        if plan.spec.provider == "aws":
            public = [r for r in g.of_type("ec2/subnet:Subnet") if "-public-" in r.name]
            assert len(public) == b.zones, stack
