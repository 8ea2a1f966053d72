"""The serving path and the network billables: decided by the core, carried in the spec, priced.

Figures come from ``fullserver/catalog/data/network.yaml``; each expectation shows its arithmetic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fullserver.billables import decide
from fullserver.catalog import load_catalog
from fullserver.catalog.network import GIB, load_network_prices
from fullserver.cost import network_lines
from fullserver.errors import FullserverError, InputError
from fullserver.plan import StackPlan, plan_paths, plan_workload
from fullserver.profiles import Serving, load_profiles
from fullserver.rules import HOURS_PER_MONTH
from fullserver.serving import DEFAULT_MODEL, VLLM_IMAGE, model_server, serving_spec
from fullserver.sizing import complete_spec
from fullserver.stacks import find_stacks
from fullserver.workload import Workload

STACKS = Path(__file__).resolve().parents[2] / "stacks"
H = HOURS_PER_MONTH


@pytest.fixture(scope="module")
def plans() -> dict[str, StackPlan]:
    return {p.stack: p for p in plan_paths(find_stacks(STACKS, []))}


def lines(plan: StackPlan) -> dict[str, float]:
    return {line.item: line.usd_month for line in plan.cost.lines}


KEYED = {"apiKeySecret": "team/api-key", "plainHttp": True}
"""An external endpoint's API key (the realtime-inference profile's load balancer is external), on
plain HTTP said so (``fullserver.tls.clear_text``; HTTPS: ``tests/core/test_tls.py``)."""


def serve(**config: Any) -> StackPlan:
    config["serving"] = KEYED | config.get("serving", {})
    work = Workload.model_validate(
        {"profile": "realtime-inference", "platform": "aws-gpu", "region": "us-east-1", "accelerator": "L4"} | config
    )
    return plan_workload("srv", "stacks/Pulumi.srv.yaml", work, load_profiles(), load_catalog())


# --- the model server ------------------------------------------------------------------------


def test_the_default_server_is_vllm_sharded_over_every_gpu_of_the_replica() -> None:
    server = model_server(model=None, image=None, extra_args=[], port=None, health_path=None, gpus=4)
    assert (server.image, server.model, server.port, server.health_path) == (VLLM_IMAGE, DEFAULT_MODEL, 8000, "/health")
    assert server.args == [
        "--model",
        DEFAULT_MODEL,
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--tensor-parallel-size",
        "4",
    ]
    assert server.default_model


def test_the_stacks_server_choices_override_the_defaults_and_its_args_come_last() -> None:
    plan = serve(
        acceleratorCount=4,
        serving={
            "model": "meta-llama/Llama-3.1-70B-Instruct",
            "image": "registry.example/vllm:pinned",
            "args": ["--max-model-len", "8192"],
            "port": 9000,
            "healthPath": "/ready",
            "requestsPerSecond": 2.5,
            "loadMinutes": 45,
        },
    )
    e = plan.spec.endpoint
    assert e is not None
    assert e.server.image == "registry.example/vllm:pinned" and e.server.tensor_parallel_size == 4
    assert e.server.args[-4:] == ["--tensor-parallel-size", "4", "--max-model-len", "8192"]
    assert (e.server.port, e.server.health_path) == (9000, "/ready")
    assert (e.replica_requests_per_second, e.health_initial_delay_seconds) == (2.5, 45 * 60)
    assert e.requests_per_minute_per_replica == 2.5 * 60 * 0.6
    assert not any("default model" in w for w in plan.spec.warnings)


def test_the_default_model_is_a_smoke_test_and_the_plan_says_so(plans: dict[str, StackPlan]) -> None:
    spec = plans["serve-gcp-realtime"].spec
    assert spec.endpoint is not None and spec.endpoint.server.model == DEFAULT_MODEL
    assert any("serving the default model" in w for w in plans["serve-gcp-realtime"].warnings)


def test_the_profile_decides_the_group_and_the_load_balancer() -> None:
    profile = load_profiles()["realtime-inference"].serving
    assert profile is not None
    server = model_server(model="m", image=None, extra_args=[], port=None, health_path=None, gpus=1)
    spec = serving_spec(profile, server)
    assert (spec.min_replicas, spec.max_replicas, spec.spread_zones) == (2, 8, True)
    assert spec.load_balancer == "external" and spec.lb_port == 80
    assert spec.health_initial_delay_seconds == 20 * 60  # the profile's model_load_minutes
    assert spec.replica_requests_per_second == 4 and spec.target_utilisation == 0.6


def test_serving_keys_on_a_profile_without_serving_are_refused() -> None:
    work = Workload.model_validate(
        {"profile": "fine-tuning", "region": "us-east-1", "accelerator": "L4", "serving": {"model": "m"}}
    )
    with pytest.raises(InputError, match=r"fullserver:serving: profile 'fine-tuning' runs no serving group"):
        plan_workload("x", "x", work, load_profiles(), load_catalog())


def test_a_load_balancer_scheme_the_platform_does_not_build_is_refused_naming_the_profile_field(
    plans: dict[str, StackPlan],
) -> None:
    spec = plans["serve-gcp-realtime"].spec
    assert spec.serving is not None
    internal = spec.model_copy(update={"serving": spec.serving.model_copy(update={"load_balancer": "internal"})})
    work = Workload.model_validate({"profile": "realtime-inference", "region": "us-central1", "serving": KEYED})
    with pytest.raises(FullserverError) as info:
        complete_spec(internal, work, load_catalog())
    assert info.value.line().startswith(
        "profiles/realtime-inference.yaml: serving.load_balancer: gcp-gpu builds no internal load balancer"
    )


# --- what is billed -------------------------------------------------------------------------------


def test_private_nodes_get_nat_and_its_address_public_nodes_their_own(plans: dict[str, StackPlan]) -> None:
    private = plans["serve-gcp-realtime"].spec.billables
    assert private is not None
    assert (private.nat, private.nat_public_ips, private.node_public_ips, private.machines) == (True, 1, 0, 2)
    public = plans["exp-aws-spot"].spec.billables
    assert public is not None and plans["exp-aws-spot"].spec.network.public_ip
    assert (public.nat, public.nat_public_ips, public.node_public_ips) == (False, 0, 1)


def test_an_internet_facing_alb_holds_an_address_per_zone_an_internal_one_none(plans: dict[str, StackPlan]) -> None:
    b = plans["serve-aws-realtime"].spec.billables
    assert b is not None
    assert (b.load_balancer, b.zones, b.lb_public_ips, b.health_checks, b.alarms) == ("alb", 3, 3, 1, 2)
    spec = plans["serve-aws-realtime"].spec
    assert spec.endpoint is not None
    internal = spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"load_balancer": "internal"})})
    assert decide(internal).lb_public_ips == 0


def test_an_alb_always_spans_two_zones_or_more(plans: dict[str, StackPlan]) -> None:
    spec = plans["serve-aws-realtime"].spec
    assert spec.serving is not None
    narrow = spec.model_copy(update={"serving": spec.serving.model_copy(update={"spread_zones": False})})
    assert decide(narrow).zones == 2


def test_tier1_is_decided_for_multi_node_shapes_that_take_it_and_never_silently_free(
    plans: dict[str, StackPlan],
) -> None:
    spec = plans["finetune-gcp-g2"].spec
    assert decide(spec).tier1 is False  # a GPU series never takes Tier_1
    cpu = spec.model_copy(update={"machine_type": "n2-standard-32", "vcpus": 32, "nodes": 2})
    assert decide(cpu).tier1 is True
    assert decide(cpu.model_copy(update={"nodes": 1})).tier1 is False
    warnings: list[str] = []
    work = Workload.model_validate({"profile": "fine-tuning", "region": "us-central1"})
    network_lines(cpu.model_copy(update={"billables": decide(cpu)}), work, 1.0, warnings)
    assert "Tier_1 networking is not in the network catalog: its per-VM hours are not priced" in warnings


def test_bare_metal_bills_no_cloud_network(plans: dict[str, StackPlan]) -> None:
    b = plans["dedicated-h100"].spec.billables
    assert b is not None and (b.nat, b.node_public_ips, b.load_balancer) == (False, 0, "")


# --- what it costs -------------------------------------------------------------------------------


def test_the_gcp_serving_stack_prices_nat_addresses_load_balancer_and_health_checks(
    plans: dict[str, StackPlan],
) -> None:
    got = lines(plans["serve-gcp-realtime"])
    assert got["Cloud NAT"] == round(2 * 0.0014 * H, 2)  # two replicas behind Cloud NAT
    assert got["public IPv4 addresses"] == round(0.005 * H, 2)  # Cloud NAT's one address
    # one global forwarding rule all month + 2,000 GB of responses processed at 0.008 per GiB
    assert got["load balancer"] == round(0.025 * H + 2000 / GIB * 0.008, 2)
    assert got["health checks"] == 0.0
    assert "no charge item" in next(
        li.note for li in plans["serve-gcp-realtime"].cost.lines if li.item == "health checks"
    )


def test_the_aws_serving_stack_prices_nat_addresses_alb_and_alarms(plans: dict[str, StackPlan]) -> None:
    got = lines(plans["serve-aws-realtime"])
    assert got["NAT gateway"] == round(0.045 * H, 2)
    assert got["public IPv4 addresses"] == round((1 + 3) * 0.005 * H, 2)  # the NAT's and the ALB's three
    # ALB hours + LCUs: 2,000 GB processed a month at 1 GB per LCU-hour, 0.008 per LCU-hour
    assert got["load balancer"] == pytest.approx(0.0225 * H + 2000 * 0.008, abs=0.01)
    assert got["CloudWatch alarms"] == 2 * 0.10
    total = sum(got.values())
    assert plans["serve-aws-realtime"].cost.usd_month == pytest.approx(total, abs=0.01)


def test_a_region_without_a_network_price_warns_instead_of_pricing_zero(plans: dict[str, StackPlan]) -> None:
    spec = plans["serve-aws-realtime"].spec.model_copy(update={"region": "eu-central-1"})
    warnings: list[str] = []
    work = Workload.model_validate({"profile": "realtime-inference", "region": "eu-central-1", "serving": KEYED})
    got = {li.item: li for li in network_lines(spec, work, 1.0, warnings)}
    assert "NAT gateway" not in got and "load balancer" not in got
    assert "no NAT gateway price for eu-central-1 in the network catalog: NAT gateway not priced" in warnings
    assert got["public IPv4 addresses"].usd_month == round(4 * 0.005 * H, 2)  # the same in every region


def test_cloud_nat_past_the_sourced_32_vms_warns(plans: dict[str, StackPlan]) -> None:
    spec = plans["serve-gcp-realtime"].spec
    assert spec.billables is not None
    big = spec.model_copy(update={"billables": spec.billables.model_copy(update={"machines": 40})})
    warnings: list[str] = []
    work = Workload.model_validate({"profile": "realtime-inference", "region": "us-central1", "serving": KEYED})
    assert "Cloud NAT" not in {li.item for li in network_lines(big, work, 1.0, warnings)}
    assert warnings == ["Cloud NAT for 40 VMs: the network catalog prices gateways of up to 32"]


def test_ephemeral_environments_pay_network_hours_only_while_they_run(plans: dict[str, StackPlan]) -> None:
    spec = plans["serve-aws-realtime"].spec
    work = Workload.model_validate({"profile": "realtime-inference", "region": "us-east-1", "serving": KEYED})
    half = {li.item: li.usd_month for li in network_lines(spec, work, 0.5, [])}
    assert half["NAT gateway"] == round(0.045 * H * 0.5, 2)


# --- the price file -------------------------------------------------------------------------------


def _price_file(tmp_path: Path, price: dict[str, Any]) -> Path:
    data = {
        "sources": {"s": {"title": "t", "url": "https://example.invalid", "as_of": "2026-01-01"}},
        "prices": [price],
    }
    path = tmp_path / "network.yaml"
    path.write_text(yaml.safe_dump(data))
    load_network_prices.cache_clear()
    return path


def test_every_shipped_network_price_names_a_source_with_a_date() -> None:
    prices = load_network_prices()
    assert prices.sources and all(s.url.startswith("https://") and s.as_of for s in prices.sources.values())


def test_a_regions_network_prices_are_each_items_own_price_there_worked_out_once(tmp_path: Path) -> None:
    own = {"provider": "aws", "item": "alb", "region": "eu-west-1", "usd_hour": 0.03, "source": "s"}
    path = _price_file(tmp_path, own)
    data = yaml.safe_load(path.read_text())
    data["prices"].append({"provider": "aws", "item": "alb", "region": "*", "usd_hour": 0.0225, "source": "s"})
    data["prices"].append({"provider": "aws", "item": "nat-gateway", "region": "*", "usd_hour": 0.045, "source": "s"})
    path.write_text(yaml.safe_dump(data))
    prices = load_network_prices(path)
    load_network_prices.cache_clear()
    ireland = prices.in_region("aws", "eu-west-1")
    assert {item: p.usd_hour for item, p in ireland.items()} == {"alb": 0.03, "nat-gateway": 0.045}
    assert prices.in_region("aws", "us-east-1")["alb"].usd_hour == 0.0225  # no own price: every region's
    assert prices.in_region("gcp", "eu-west-1") == {}
    assert prices.in_region("aws", "eu-west-1") is ireland


@pytest.mark.parametrize(
    ("price", "fragment"),
    [
        ({"provider": "aws", "item": "alb", "region": "*", "usd_hour": 0, "source": "s"}, "must say why"),
        ({"provider": "aws", "item": "alb", "region": "*", "usd_hour": 1, "source": "nope"}, "unknown source"),
        (
            {"provider": "aws", "item": "alb", "region": "*", "usd_hour": 1, "usd_per_gb": 1, "source": "s"},
            "exactly one",
        ),
    ],
)
def test_a_bad_network_price_is_refused_naming_the_file(tmp_path: Path, price: dict[str, Any], fragment: str) -> None:
    path = _price_file(tmp_path, price)
    with pytest.raises(InputError) as info:
        load_network_prices(path)
    assert str(path) in info.value.line() and fragment in info.value.line()
    load_network_prices.cache_clear()


def test_the_serving_profile_block_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="load_balancer"):
        Serving.model_validate({"load_balancer": "public"})
    with pytest.raises(ValueError, match="model_load_minutes"):
        Serving.model_validate({"model_load_minutes": 0})


def test_a_model_load_longer_than_the_clouds_wait_before_judging_a_replica_is_refused(
    plans: dict[str, StackPlan],
) -> None:
    # GCP autohealing initialDelaySec and the AWS default instance warmup both stop at 3600 s
    with pytest.raises(InputError, match=r"^fullserver:serving.loadMinutes: 61 minutes is longer"):
        serve(serving={"loadMinutes": 61})
    assert serve(serving={"loadMinutes": 60}).spec.endpoint is not None
    spec = plans["serve-gcp-realtime"].spec
    assert spec.serving is not None
    slow = spec.model_copy(update={"serving": spec.serving.model_copy(update={"model_load_minutes": 90})})
    work = Workload.model_validate({"profile": "realtime-inference", "region": "us-central1", "serving": KEYED})
    with pytest.raises(InputError) as info:
        complete_spec(slow, work, load_catalog())
    assert info.value.line().startswith("profiles/realtime-inference.yaml: serving.model_load_minutes: 90 minutes")


def test_an_external_endpoint_is_built_only_with_an_api_key() -> None:
    """The profile's external load balancer answers the internet; vLLM without a key answers anyone."""
    with pytest.raises(InputError, match=r"^fullserver:serving.apiKeySecret: an external endpoint without an API key"):
        serve(serving={"apiKeySecret": None, "model": "m"})
    server = serve().spec.endpoint
    assert server is not None and server.server.secrets == {"api_key": "team/api-key"}


def test_a_serving_group_on_a_neuron_accelerator_is_refused_naming_the_accelerator() -> None:
    # inf2 replicas would wait for nvidia-smi forever and fail every health check: no GPU to run vLLM's CUDA image
    with pytest.raises(InputError, match=r"^fullserver:accelerator: Inferentia2 \(inferentia\) is no GPU"):
        serve(accelerator="Inferentia2")
    assert serve(accelerator="L4").spec.endpoint is not None


def test_one_nat_gateway_for_several_zones_is_named_as_a_trade_off_with_its_price(plans: dict[str, StackPlan]) -> None:
    """A NAT gateway lives in one zone: the plan says what a zone outage costs the others and what
    a gateway per zone would cost instead (the component builds one)."""
    plan = plans["serve-aws-realtime"]
    assert plan.spec.billables is not None and plan.spec.billables.zones == 3
    [warning] = [w for w in plan.cost.warnings if "NAT gateway serves" in w]
    nat = lines(plan)["NAT gateway"]
    assert warning.startswith("one NAT gateway serves subnets in 3 zones: if its zone fails")
    assert warning.endswith(f"would cost {2 * nat:,.2f} USD/month more")
    single = plans["train-p5-cluster"]  # one zone (a cluster placement group): nothing to say
    assert not [w for w in single.cost.warnings if "NAT gateway serves" in w]
