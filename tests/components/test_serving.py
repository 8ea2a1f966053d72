"""Serving groups: model server on every replica, health on its real endpoint, a load balancer in front,
autoscaling on requests per replica (GCP regional MIG + global external ALB; AWS ASG + ALB)."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from typing import Any, cast

import pytest

from components.args import SpecRefused
from components.aws.args import aws_args
from components.aws.environment import AwsGpuEnvironment
from components.aws.network import offering_zones
from components.aws.serving import resource_label
from components.gcp.args import gcp_args
from components.gcp.environment import GcpGpuEnvironment
from components.graph import GraphMocks, graph_for_plan
from components.serving import endpoint_url, server_keep_alive
from fullserver.catalog import Catalog, Offer
from fullserver.sizing import complete_spec
from fullserver.workload import Workload
from tests.components.conftest import Build, Plans, ResourceOpts, plain_http, spec_of


class ZonedCatalog:
    """The real catalog, with zones listed for one shape (the shipped data lists none for GCP GPUs)."""

    def __init__(self, catalog: Catalog, shape: str, zones: tuple[str, ...]) -> None:
        self._catalog, self._shape, self._zones = catalog, shape, zones

    def offer(self, name: str) -> Offer | None:
        offer = self._catalog.offer(name)
        if offer is not None and name == self._shape:
            return dataclasses.replace(offer, zones=self._zones)
        return offer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)


def test_gcp_realtime_serving_is_a_regional_group_behind_a_global_load_balancer(plans: Plans, build: Build) -> None:
    g = build(lambda: GcpGpuEnvironment("srv", gcp_args(plain_http(spec_of(plans, "serve-gcp-realtime")))))
    tmpl = g.one("compute/instanceTemplate:InstanceTemplate").inputs
    assert tmpl["machineType"] == "g2-standard-12"
    assert tmpl["scheduling"]["provisioningModel"] == "STANDARD"
    assert [d.get("type") for d in tmpl["disks"]] == [None, "SCRATCH"]
    assert tmpl["disks"][1]["interface"] == "NVME"
    assert tmpl["networkInterfaces"][0].get("accessConfigs") in (None, [])
    script = tmpl["metadata"]["startup-script"]
    # every replica starts the model server: vLLM's image, sharded over its one GPU, on port 8000
    assert "systemctl enable fullserver-model.service" in script
    assert "vllm/vllm-openai:v0.10.2 --model Qwen/Qwen2.5-1.5B-Instruct --host 0.0.0.0 --port 8000" in script
    assert "--tensor-parallel-size 1" in script and "-p 8000:8000" in script
    # idle connections outlive Google's 600 s backend keepalive: the load balancer closes them, never vLLM
    assert "ENV_ARGS=(--env VLLM_HTTP_TIMEOUT_KEEP_ALIVE=620)" in script
    mig = g.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager").inputs
    assert mig["distributionPolicyTargetShape"] == "BALANCED" and mig["region"] == "us-central1"
    assert mig["namedPorts"] == [{"name": "http", "port": 8000}]
    # autohealing waits the profile's 20 minutes of model load before judging a replica
    assert mig["autoHealingPolicies"] == {"healthCheck": "srv-health-id", "initialDelaySec": 1200}
    hc = g.one("compute/healthCheck:HealthCheck").inputs
    assert hc["httpHealthCheck"] == {"port": 8000, "requestPath": "/health"}
    assert (hc["checkIntervalSec"], hc["healthyThreshold"], hc["unhealthyThreshold"]) == (10, 2, 3)
    health_fw = next(r for r in g.of_type("compute/firewall:Firewall") if r.name == "srv-health").inputs
    assert health_fw["sourceRanges"] == ["130.211.0.0/22", "35.191.0.0/16"]
    assert health_fw["allows"] == [{"protocol": "tcp", "ports": ["8000"]}]
    backend = g.one("compute/backendService:BackendService").inputs
    assert backend["loadBalancingScheme"] == "EXTERNAL_MANAGED" and backend["protocol"] == "HTTP"
    assert backend["portName"] == "http" and backend["healthChecks"] == "srv-health-id"
    assert backend["timeoutSec"] == 600 and backend["connectionDrainingTimeoutSec"] == 120
    (be,) = backend["backends"]
    assert "/srv-mig-" in be["group"]  # the managed group's instance group URL
    assert (be["balancingMode"], be["maxRatePerInstance"], be["capacityScaler"]) == ("RATE", 4, 1)
    assert g.one("compute/uRLMap:URLMap").inputs["defaultService"] == "srv-backend-id"
    assert g.one("compute/targetHttpProxy:TargetHttpProxy").inputs["urlMap"] == "srv-urls-id"
    rule = g.one("compute/globalForwardingRule:GlobalForwardingRule").inputs
    assert {k: rule[k] for k in ("target", "loadBalancingScheme", "ipProtocol", "portRange")} == {
        "target": "srv-proxy-id",
        "loadBalancingScheme": "EXTERNAL_MANAGED",
        "ipProtocol": "TCP",
        "portRange": "80",
    }
    # scaled on the load balancer's utilisation: requests per replica, whatever its GPU count
    policy = g.one("compute/regionAutoscaler:RegionAutoscaler").inputs["autoscalingPolicy"]
    assert (policy["minReplicas"], policy["maxReplicas"], policy["cooldownPeriod"]) == (2, 8, 1200)
    assert policy["loadBalancingUtilization"] == {"target": 0.6} and "metrics" not in policy
    assert g.of_type("compute/instance:Instance") == []
    # no proxy-only subnet: the global external load balancer needs none
    assert [r.name for r in g.of_type("compute/subnetwork:Subnetwork")] == ["srv-subnet"]


def _aws_serving_spec(plans: Plans, **changes: Any) -> Any:
    """serve-aws-realtime on plain HTTP (serving.plainHttp): one listener (HTTPS: test_serving_https)."""
    return plain_http(spec_of(plans, "serve-aws-realtime", **changes))


def test_aws_serving_is_a_group_behind_an_application_load_balancer(plans: Plans, build: Build) -> None:
    g = build(lambda: AwsGpuEnvironment("asg", aws_args(_aws_serving_spec(plans))))
    group = g.one("autoscaling/group:Group").inputs
    assert (group["minSize"], group["maxSize"]) == (2, 8)
    assert len(group["vpcZoneIdentifiers"]) == 3
    assert all("private" in s for s in group["vpcZoneIdentifiers"])
    assert group["targetGroupArns"] == ["arn:aws:lb::123456789012:asg-tg"]
    assert group["waitForCapacityTimeout"] == "0"  # `up` never blocks on GPU capacity in a zone
    assert (group["healthCheckType"], group["healthCheckGracePeriod"], group["defaultInstanceWarmup"]) == (
        "ELB",
        1200,
        1200,
    )
    subnets = {r.inputs["availabilityZone"] for r in g.of_type("ec2/subnet:Subnet") if "private" in r.name}
    assert subnets == {"us-east-1a", "us-east-1b", "us-east-1c"}
    alb = g.one("lb/loadBalancer:LoadBalancer").inputs
    assert alb["loadBalancerType"] == "application" and alb["internal"] is False
    assert sorted(alb["subnets"]) == ["asg-public-0-id", "asg-public-1-id", "asg-public-2-id"]
    assert alb["securityGroups"] == ["asg-lb-sg-id"] and alb["idleTimeout"] == 600
    tg = g.one("lb/targetGroup:TargetGroup").inputs
    assert (tg["port"], tg["protocol"], tg["targetType"], tg["vpcId"]) == (8000, "HTTP", "instance", "asg-vpc-id")
    assert tg["deregistrationDelay"] == 120
    assert tg["healthCheck"] == {
        "enabled": True,
        "protocol": "HTTP",
        "port": "traffic-port",
        "path": "/health",
        "matcher": "200",
        "interval": 10,
        "timeout": 5,
        "healthyThreshold": 2,
        "unhealthyThreshold": 3,
    }
    listener = g.one("lb/listener:Listener").inputs
    assert (listener["port"], listener["protocol"], listener["loadBalancerArn"]) == (
        80,
        "HTTP",
        "arn:aws:lb::123456789012:asg-alb",
    )
    assert listener["defaultActions"] == [{"type": "forward", "targetGroupArn": "arn:aws:lb::123456789012:asg-tg"}]
    # target tracking on requests per target: 4 requests/s x 60 s x 60 % = 144 a minute
    tracking = g.one("autoscaling/policy:Policy").inputs["targetTrackingConfiguration"]
    assert tracking["targetValue"] == 144
    assert tracking["predefinedMetricSpecification"]["predefinedMetricType"] == "ALBRequestCountPerTarget"
    assert "resourceLabel" in tracking["predefinedMetricSpecification"]
    # clients reach the load balancer on port 80 only; the nodes take the server port from it only
    sgs = {r.name: r.inputs for r in g.of_type("ec2/securityGroup:SecurityGroup")}
    assert sgs["asg-lb-sg"]["ingress"] == [
        {"protocol": "tcp", "fromPort": 80, "toPort": 80, "cidrBlocks": ["0.0.0.0/0"], "description": "clients"}
    ]
    assert sgs["asg-lb-sg"]["egress"][0] | {"description": ""} == {
        "protocol": "tcp",
        "fromPort": 8000,
        "toPort": 8000,
        "cidrBlocks": ["10.80.0.0/16"],
        "description": "",
    }
    server = [r for r in sgs["asg-sg"]["ingress"] if r.get("fromPort") == 8000]
    assert server == [
        {
            "protocol": "tcp",
            "fromPort": 8000,
            "toPort": 8000,
            "securityGroups": ["asg-lb-sg-id"],
            "description": "model server, from the load balancer only",
        }
    ]
    lt = g.one("ec2/launchTemplate:LaunchTemplate").inputs
    assert "subnetId" not in lt["networkInterfaces"][0]
    script = base64.b64decode(lt["userData"]).decode()
    assert "--model Qwen/Qwen2.5-7B-Instruct" in script and "--max-model-len 16384" in script
    assert "ENV_ARGS=(--env VLLM_HTTP_TIMEOUT_KEEP_ALIVE=620)" in script  # beyond the ALB's 600 s idle timeout
    # least privilege: Session Manager's actions, and the one token parameter; no managed policy
    assert g.of_type("iam/rolePolicyAttachment:RolePolicyAttachment") == []
    assert lt["metadataOptions"]["httpPutResponseHopLimit"] == 1  # the container cannot take the role


def test_an_internal_aws_load_balancer_sits_in_the_nodes_subnets_and_takes_only_the_vpc(
    plans: Plans, build: Build
) -> None:
    spec = _aws_serving_spec(plans)
    assert spec.endpoint is not None
    spec = spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"load_balancer": "internal"})})
    g = build(lambda: AwsGpuEnvironment("inr", aws_args(spec)))
    alb = g.one("lb/loadBalancer:LoadBalancer").inputs
    assert alb["internal"] is True
    assert sorted(alb["subnets"]) == ["inr-private-0-id", "inr-private-1-id", "inr-private-2-id"]
    lb_sg = next(r for r in g.of_type("ec2/securityGroup:SecurityGroup") if r.name == "inr-lb-sg").inputs
    assert lb_sg["ingress"][0]["cidrBlocks"] == ["10.80.0.0/16"]


def _after(opts: Any) -> list[str]:
    """The logical names of the resources ``opts`` makes a resource wait for."""
    return sorted(d._name for d in (opts.depends_on or []))


def test_the_load_balancer_waits_for_the_internet_gateway_and_the_group_for_the_nodes_way_out(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    # EC2 refuses an internet-facing ALB in a VPC whose gateway is not attached yet ("InvalidSubnet:
    # VPC ... has no internet gateway"); a replica's only user-data run needs the NAT route
    build(lambda: AwsGpuEnvironment("asg", aws_args(_aws_serving_spec(plans))))
    assert _after(resource_options["asg-alb"]) == ["asg-igw"]
    assert _after(resource_options["asg-serving"]) == ["asg-private-0", "asg-private-1", "asg-private-2"]
    spec = _aws_serving_spec(plans)
    spec = spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"load_balancer": "internal"})})
    build(lambda: AwsGpuEnvironment("inr", aws_args(spec)))
    assert _after(resource_options["inr-alb"]) == []
    # GCP: replicas without an external address install and pull through Cloud NAT
    build(lambda: GcpGpuEnvironment("srv", gcp_args(spec_of(plans, "serve-gcp-realtime"))))
    assert _after(resource_options["srv-mig"]) == ["srv-nat"]


def test_an_aws_serving_group_with_a_pinned_zone_is_refused(plans: Plans) -> None:
    args = aws_args(_aws_serving_spec(plans))
    args["zone"] = "us-east-1a"
    with pytest.raises(SpecRefused, match=r"spec\.zone: the serving load balancer spans 3 zones"):
        AwsGpuEnvironment("bad", args)


def test_an_aws_serving_group_in_one_zone_is_refused(plans: Plans) -> None:
    args = aws_args(_aws_serving_spec(plans))
    args["zones"] = 1
    with pytest.raises(SpecRefused, match=r"spec\.zones: an Application Load Balancer needs subnets in 2 zones"):
        AwsGpuEnvironment("bad", args)


def test_an_aws_serving_group_priced_as_spot_is_refused(plans: Plans) -> None:
    # its launch template asks for no spot capacity: the group would run (and bill) on-demand replicas
    args = aws_args(_aws_serving_spec(plans))
    args["spot"] = True
    with pytest.raises(SpecRefused, match=r"spec\.spot: an AWS serving group launches on-demand replicas"):
        AwsGpuEnvironment("bad", args)


def _with_secrets(spec: Any, **secrets: str | None) -> Any:
    assert spec.endpoint is not None
    server = spec.endpoint.server.model_copy(update=secrets)
    return spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"server": server})})


def _secret_policy(g: Any, name: str) -> list[str]:
    [policy] = [r for r in g.of_type("iam/rolePolicy:RolePolicy") if r.name == f"{name}-model-secrets"]
    [statement] = json.loads(policy.inputs["policy"])["Statement"]
    assert (statement["Effect"], statement["Action"]) == ("Allow", "ssm:GetParameter")
    return list(statement["Resource"])


def test_the_servers_secrets_are_readable_by_the_nodes_and_fetched_by_the_server_only(
    plans: Plans, build: Build
) -> None:
    """Exactly the token's and the API key's parameters, in the caller's own partition and account."""
    spec = _with_secrets(_aws_serving_spec(plans), token_secret="hf/token", api_key_secret="/team/api-key")
    g = build(lambda: AwsGpuEnvironment("tok", aws_args(spec)))
    assert _secret_policy(g, "tok") == [
        "arn:aws:ssm:us-east-1:123456789012:parameter/hf/token",
        "arn:aws:ssm:us-east-1:123456789012:parameter/team/api-key",
    ]
    script = base64.b64decode(g.one("ec2/launchTemplate:LaunchTemplate").inputs["userData"]).decode()
    assert 'value="$(aws ssm get-parameter --region us-east-1 --name /hf/token --with-decryption' in script
    assert "printf 'VLLM_API_KEY=%s\\n'" in script
    # a name outside any hierarchy is referenced as created; its ARN is parameter/<name> all the same
    g = build(
        lambda: AwsGpuEnvironment("tok", aws_args(_with_secrets(_aws_serving_spec(plans), token_secret="hf-token")))
    )
    assert _secret_policy(g, "tok") == [
        "arn:aws:ssm:us-east-1:123456789012:parameter/hf-token",
        "arn:aws:ssm:us-east-1:123456789012:parameter/serving-team/realtime/api-key",
    ]
    script = base64.b64decode(g.one("ec2/launchTemplate:LaunchTemplate").inputs["userData"]).decode()
    assert "--name hf-token --with-decryption" in script
    spec = _with_secrets(spec_of(plans, "serve-gcp-realtime"), token_secret="hf-token")
    g = build(lambda: GcpGpuEnvironment("tok", gcp_args(spec)))
    members = {m.inputs["secretId"]: m.inputs for m in g.of_type("secretmanager/secretIamMember:SecretIamMember")}
    assert set(members) == {"hf-token", "serving-realtime-api-key"}
    for member in members.values():
        assert member["role"] == "roles/secretmanager.secretAccessor"
        assert member["member"] == "serviceAccount:fs-tok@mock-project.iam.gserviceaccount.com"
    script = g.one("compute/instanceTemplate:InstanceTemplate").inputs["metadata"]["startup-script"]
    assert 'value="$(gcloud secrets versions access latest --secret=hf-token)"' in script


def test_an_internal_endpoint_without_secrets_lets_nothing_read_secrets(plans: Plans, build: Build) -> None:
    spec = _with_secrets(_aws_serving_spec(plans), token_secret=None, api_key_secret=None)
    assert spec.endpoint is not None
    spec = spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"load_balancer": "internal"})})
    g = build(lambda: AwsGpuEnvironment("nt", aws_args(spec)))
    statements = [
        st for r in g.of_type("iam/rolePolicy:RolePolicy") for st in json.loads(r.inputs["policy"])["Statement"]
    ]
    assert not any(
        "ssm:GetParameter" in str(st["Action"]) or "secretsmanager" in str(st["Action"]) for st in statements
    )
    user_data = base64.b64decode(g.one("ec2/launchTemplate:LaunchTemplate").inputs["userData"]).decode()
    assert "VLLM_API_KEY" not in user_data.split("FULLSERVER_EOF")[1] or "printf 'VLLM_API_KEY" not in user_data


@pytest.mark.parametrize("component", ["aws", "gcp"])
def test_an_external_endpoint_without_an_api_key_is_refused(plans: Plans, component: str) -> None:
    """The internet reaches an external load balancer: vLLM without a key would answer anyone."""
    stack = {"aws": "serve-aws-realtime", "gcp": "serve-gcp-realtime"}[component]
    spec = _with_secrets(spec_of(plans, stack), api_key_secret=None)
    with pytest.raises(
        SpecRefused, match=r"spec\.serving\.server\.api_key_secret: an external endpoint without an API key"
    ):
        if component == "aws":
            AwsGpuEnvironment("open", aws_args(spec))
        else:
            GcpGpuEnvironment("open", gcp_args(spec))


def test_every_aws_invoke_of_a_serving_stack_goes_through_its_explicit_provider(
    plans: Plans, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program's region comes from fullserver:region through an explicit provider; an invoke
    on the default provider (the secret policy's partition and account, once) has no region where
    aws:region is unset, and fails at preview."""
    seen: list[tuple[str, str]] = []
    original = GraphMocks.call

    def record(self: GraphMocks, args: Any) -> dict[str, Any]:
        seen.append((args.token, str(getattr(args, "provider", "") or "")))
        return original(self, args)

    monkeypatch.setattr(GraphMocks, "call", record)
    graph_for_plan(plans["serve-aws-realtime"])
    tokens = {token for token, _ in seen}
    assert {"aws:index/getPartition:getPartition", "aws:index/getCallerIdentity:getCallerIdentity"} <= tokens
    assert [token for token, provider in seen if token.startswith("aws:") and not provider] == []


def test_the_export_says_how_to_call_the_endpoint_with_its_key(plans: Plans) -> None:
    aws_call = graph_for_plan(plans["serve-aws-realtime"]).outputs["call"]
    assert aws_call == (
        'curl -H "Authorization: Bearer $(aws ssm get-parameter --region us-east-1 --name '
        '/serving-team/realtime/api-key --with-decryption --query Parameter.Value --output text)" '
        "https://llm.example.com/v1/models"  # the example's domain, over HTTPS
    )
    gcp_call = graph_for_plan(plans["serve-gcp-realtime"]).outputs["call"]
    assert "$(gcloud secrets versions access latest --secret=serving-realtime-api-key --project=" in gcp_call


def test_both_serving_stacks_export_their_endpoint(plans: Plans) -> None:
    for stack in ("serve-gcp-realtime", "serve-aws-realtime"):
        g = graph_for_plan(plans[stack])
        # HTTPS on the stack's domain; the mock runtime assigns no address: the plan says when it is known
        assert g.outputs["endpoint"] == "https://llm.example.com", stack
        assert g.outputs["dnsTarget"].endswith("known after pulumi up>"), stack
    assert graph_for_plan(plans["serve-aws-realtime"]).outputs["model"] == "Qwen/Qwen2.5-7B-Instruct"


def test_the_endpoint_url_names_the_port_only_when_it_is_not_80() -> None:
    assert endpoint_url("34.1.2.3", 80) == "http://34.1.2.3"
    assert endpoint_url("lb.example", 8080) == "http://lb.example:8080"
    assert resource_label(["app/a/1", "targetgroup/t/2"]) == "app/a/1/targetgroup/t/2"


def test_gcp_serving_group_spreads_over_the_catalogs_zones_of_the_region(
    plans: Plans, catalog: Catalog, build: Build
) -> None:
    zones = ("us-central1-a", "us-central1-b", "us-central1-c", "europe-west4-a")
    zoned = cast(Catalog, ZonedCatalog(catalog, "g2-standard-12", zones))
    work = Workload.model_validate(
        {"profile": "realtime-inference", "region": "us-central1", "serving": {"apiKeySecret": "k", "plainHttp": True}}
    )
    spec = complete_spec(spec_of(plans, "serve-gcp-realtime"), work, zoned)  # the core picks the zones
    args = gcp_args(spec)
    assert args.get("serving", {}).get("zones") == ["us-central1-a", "us-central1-b", "us-central1-c"]
    mig = build(lambda: GcpGpuEnvironment("srv", args)).one(
        "compute/regionInstanceGroupManager:RegionInstanceGroupManager"
    )
    assert mig.inputs["distributionPolicyZones"] == ["us-central1-a", "us-central1-b", "us-central1-c"]
    assert mig.inputs["updatePolicy"]["maxSurgeFixed"] == 3


def test_gcp_serving_group_spreads_over_the_zones_that_sell_the_shape(plans: Plans) -> None:
    """The catalog lists the zones each series is sold in (machine_zones): the regional group
    spans exactly those of its region, so no replica waits in a zone without L4s."""
    g = graph_for_plan(plans["serve-gcp-realtime"])
    mig = g.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager").inputs
    assert mig["distributionPolicyZones"] == ["us-central1-a", "us-central1-b", "us-central1-c"]
    assert not any("no zones are known" in w for w in g.warnings), g.warnings


def test_a_load_balancer_scheme_the_cloud_does_not_build_is_refused_by_the_component(plans: Plans) -> None:
    """GCP builds only the global external Application Load Balancer: args asking for an internal one
    (written by hand, never through the plan) would get an endpoint on the internet, so they are
    refused in the plan's own words (``fullserver.platforms.load_balancer_problem``)."""
    args = gcp_args(spec_of(plans, "serve-gcp-realtime"))
    args["serving"]["load_balancer"] = "internal"
    with pytest.raises(
        SpecRefused,
        match=r"spec\.serving\.load_balancer: gcp-gpu builds no internal load balancer \(it builds: external\)",
    ):
        GcpGpuEnvironment("internal", args)


def test_gcp_serving_zones_outside_the_region_are_refused(plans: Plans) -> None:
    args = gcp_args(spec_of(plans, "serve-gcp-realtime"))
    args["serving"]["zones"] = ["us-central1-a", "us-east1-b"]
    with pytest.raises(SpecRefused, match=r"spec\.serving\.zones: zone us-east1-b is not in the region us-central1"):
        GcpGpuEnvironment("bad", args)


def test_the_alb_takes_one_subnet_per_zone_when_fewer_zones_offer_the_type(
    plans: Plans, build: Build, mocks: GraphMocks
) -> None:
    # three subnets, two offering zones: the third subnet repeats us-east-1a, and an ALB takes one subnet per zone
    mocks.zones_without[("g6.4xlarge",)] = ("us-east-1c",)
    try:
        g = build(lambda: AwsGpuEnvironment("two", aws_args(_aws_serving_spec(plans))))
    finally:
        mocks.zones_without.clear()
    zones = {r.name: r.inputs["availabilityZone"] for r in g.of_type("ec2/subnet:Subnet") if "public" in r.name}
    assert zones == {"two-public-0": "us-east-1a", "two-public-1": "us-east-1b", "two-public-2": "us-east-1a"}
    assert g.one("lb/loadBalancer:LoadBalancer").inputs["subnets"] == ["two-public-0-id", "two-public-1-id"]
    assert len(g.one("autoscaling/group:Group").inputs["vpcZoneIdentifiers"]) == 3


def test_a_serving_region_with_one_zone_offering_the_type_stops_the_deployment(
    plans: Plans, build: Build, mocks: GraphMocks
) -> None:
    mocks.zones_without[("g6.4xlarge",)] = ("us-east-1a", "us-east-1c")
    try:
        with pytest.raises(Exception, match=r"only us-east-1b of us-east-1 offer g6\.4xlarge"):
            build(lambda: AwsGpuEnvironment("one", aws_args(_aws_serving_spec(plans))))
    finally:
        mocks.zones_without.clear()
    with pytest.raises(ValueError, match=r"only us-east-1b of us-east-1 offer g6\.4xlarge, and the serving load"):
        offering_zones("us-east-1", "g6.4xlarge", ["us-east-1a", "us-east-1b"], ["us-east-1b"], at_least=2)
    assert offering_zones("us-east-1", "g6.4xlarge", ["us-east-1a", "us-east-1b"], ["us-east-1b"]) == ["us-east-1b"]


def test_the_server_keeps_idle_connections_open_longer_than_either_load_balancer() -> None:
    assert server_keep_alive(600) == 620  # ALB idle timeout 600 s, Google's backend keepalive 600 s
    assert server_keep_alive(60) == 620  # Google's 600 s still rules
    assert server_keep_alive(1800) == 1820  # the ALB's idle timeout follows the request timeout
    assert server_keep_alive(9000) == 4020  # which the ALB caps at 4,000 s


def test_a_long_or_dotted_stack_name_still_gives_load_balancer_names_elb_accepts(plans: Plans, build: Build) -> None:
    """pulumi-aws autonames an ALB within 255 characters and refuses a target group autoname over
    ELB's 32: the logical names are cut so that ``<logical>-<7 random>`` fits, and made of ELB's
    alphabet, keeping what each one is at the end."""
    stack = "serve_llama.70b-production-eu"
    g = build(lambda: AwsGpuEnvironment(stack, aws_args(_aws_serving_spec(plans))))
    alb, tg = g.one("lb/loadBalancer:LoadBalancer"), g.one("lb/targetGroup:TargetGroup")
    for row in (alb, tg):
        assert len(row.name) + 8 <= 32 and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]", row.name), row.name
    assert alb.name.startswith("serve-llama-7") and alb.name.endswith("-alb") and tg.name.endswith("-tg")
    assert alb.name != tg.name
    short = build(lambda: AwsGpuEnvironment("serve-aws", aws_args(_aws_serving_spec(plans))))
    # a name that fits keeps its logical name: a running stack's load balancer is not replaced
    assert short.one("lb/loadBalancer:LoadBalancer").name == "serve-aws-alb"
    assert short.one("lb/targetGroup:TargetGroup").name == "serve-aws-tg"
