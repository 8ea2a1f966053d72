"""Serving on node pools: the LoadBalancer Service per provider and scheme, the API key by
``secretKeyRef``, the HPA's metric, the load balancer's price lines, and what is refused."""

from __future__ import annotations

from typing import Any

import pytest

from fullserver.catalog import load_catalog
from fullserver.errors import FullserverError
from fullserver.kube import kube_plan, serve
from fullserver.kube.manifest import workload
from fullserver.plan import StackPlan, plan_workload
from fullserver.platform import Platform
from fullserver.platforms import gke_gateway, name_rules, rules_for
from fullserver.platforms.eks_pool import EKS_ATTACHED_LB_CONTROLLER, EKS_ATTACHED_METRICS_SERVER, nlb_idle_seconds
from fullserver.profiles import load_profiles
from fullserver.spec import EnvironmentSpec
from fullserver.stacks import workload_from_config

AWS = "service.beta.kubernetes.io/aws-load-balancer-"


API_RANGE = "198.18.0.0/24"
"""Where pulumi up runs: a created cluster's API must admit it (``fullserver.kube.access.check_api_reach``)."""


def _creates_a_cluster(platform: str, more: dict[str, Any]) -> bool:
    return "controlPlaneSourceRanges" in rules_for(Platform(platform)).options and "cluster" not in more


def stack(platform: str, region: str, **more: Any) -> StackPlan:
    config = {
        "fullserver:profile": "realtime-inference",
        "fullserver:platform": platform,
        "fullserver:region": region,
        "fullserver:accelerator": "L4",
        "fullserver:acceleratorCount": 1,
        "fullserver:framework": "pytorch",
        "fullserver:owner": "serving-team",
        "fullserver:egressGbMonth": 2000,
        # plain HTTP unless a test gives TLS: the Service's own shape (HTTPS: its own tests below)
        "fullserver:serving": {"apiKeySecret": "/serving-team/realtime/api-key", "plainHttp": True},
        **({"fullserver:controlPlaneSourceRanges": [API_RANGE]} if _creates_a_cluster(platform, more) else {}),
        **{f"fullserver:{k}": v for k, v in more.items()},
    }
    return plan_workload(
        "s", "stacks/Pulumi.s.yaml", workload_from_config(config, "s"), load_profiles(), load_catalog()
    )


def internal(spec: EnvironmentSpec) -> EnvironmentSpec:
    assert spec.endpoint is not None
    return spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"load_balancer": "internal"})})


def by_kind(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["kind"]: m for m in manifests}


def test_the_realtime_profile_serves_on_both_node_pool_platforms_with_the_vms_balance() -> None:
    """Sizing on the pod's share keeps the profile's balance: GKE takes g2-standard-12 (Vertex AI's
    serving design for one L4, tests/data/reference_designs.yaml), EKS g6.4xlarge."""
    gke, eks = stack("gke-gpu", "us-central1").spec, stack("eks-gpu", "us-east-1").spec
    assert (gke.platform, gke.machine_type) == (Platform.GKE_GPU, "g2-standard-12")
    assert (eks.platform, eks.machine_type) == (Platform.EKS_GPU, "g6.4xlarge")
    for spec in (gke, eks):
        assert spec.kube is not None and spec.endpoint is not None
        assert all(line.ok for line in spec.balance.lines)
        assert (spec.kube.min_replicas, spec.kube.max_replicas) == (2, 8)


def test_gke_services_are_passthrough_network_load_balancers() -> None:
    spec = stack("gke-gpu", "us-central1").spec
    assert spec.kube is not None
    service = by_kind(workload(spec.kube, spec))["Service"]
    assert service["spec"]["type"] == "LoadBalancer" and service["spec"]["externalTrafficPolicy"] == "Local"
    wait = {serve.AWAIT_ANNOTATION: serve.await_seconds(20 * 60)}  # pulumi up's wait (test_manifest)
    plain = {serve.PLAIN_HTTP_ANNOTATION: "true"}  # the stack's plainHttp, for the policy pack
    assert service["metadata"]["annotations"] == {"cloud.google.com/l4-rbs": "enabled", **wait, **plain}
    inner = by_kind(workload(spec.kube, internal(spec)))["Service"]
    assert inner["metadata"]["annotations"] == {"networking.gke.io/load-balancer-type": "Internal", **wait}


def test_eks_services_are_network_load_balancers_of_the_controller_with_ip_targets() -> None:
    spec = stack("eks-gpu", "us-east-1").spec
    assert spec.kube is not None
    service = by_kind(workload(spec.kube, spec))["Service"]
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
    assert "externalTrafficPolicy" not in service["spec"]  # IP targets: the NLB reaches the pods themselves
    assert service["metadata"]["annotations"] == {
        f"{AWS}type": "external",
        f"{AWS}nlb-target-type": "ip",
        f"{AWS}scheme": "internet-facing",
        f"{AWS}healthcheck-protocol": "http",
        f"{AWS}healthcheck-path": "/health",
        f"{AWS}healthcheck-port": "traffic-port",
        # a 10-minute generation that writes nothing keeps its connection (the NLB's default: 350 s)
        f"{AWS}listener-attributes.TCP-80": "tcp.idle_timeout.seconds=600",
        serve.AWAIT_ANNOTATION: serve.await_seconds(20 * 60),
        serve.PLAIN_HTTP_ANNOTATION: "true",
    }
    inner = by_kind(workload(spec.kube, internal(spec)))["Service"]
    assert inner["metadata"]["annotations"][f"{AWS}scheme"] == "internal"


def test_the_api_key_reaches_vllm_from_a_kubernetes_secret_named_never_valued() -> None:
    spec = stack("eks-gpu", "us-east-1").spec
    assert spec.kube is not None
    deployment = by_kind(workload(spec.kube, spec))["Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [
        {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "s-serving", "key": "VLLM_API_KEY"}}}
    ]
    # Applied by hand: the annotation says how to create the Secret, reading the SSM parameter in
    # the caller's shell (the key itself is nowhere in the manifests).
    assert deployment["metadata"]["annotations"][serve.SECRET_ANNOTATION] == (
        "kubectl create secret generic s-serving --namespace default "
        '--from-literal=VLLM_API_KEY="$(aws ssm get-parameter --region us-east-1 --name /serving-team/realtime/api-key '
        '--with-decryption --query Parameter.Value --output text)"'
    )


def test_without_pod_metrics_the_hpa_holds_cpu_and_the_plan_says_what_to_install() -> None:
    for platform, region, install in (
        ("gke-gpu", "us-central1", "Custom Metrics Stackdriver Adapter"),
        ("eks-gpu", "us-east-1", "prometheus-adapter"),
    ):
        plan = stack(platform, region)
        spec = plan.spec
        assert spec.kube is not None
        hpa = by_kind(workload(spec.kube, spec))["HorizontalPodAutoscaler"]
        assert hpa["spec"]["metrics"] == [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
            }
        ]
        (warning,) = [w for w in plan.warnings if "HorizontalPodAutoscaler" in w]
        assert install in warning and "fullserver:serving.podMetrics: true" in warning
        if platform == "gke-gpu":  # the adapter reads Cloud Monitoring as its own Workload Identity principal
            assert "roles/monitoring.viewer" in warning
            assert "subject/ns/custom-metrics/sa/custom-metrics-stackdriver-adapter" in warning


def test_with_pod_metrics_the_hpa_holds_vllms_queue_per_pod() -> None:
    """A second of a replica's capacity at the target utilisation: 4 requests/s x 0.6 -> 2 waiting."""
    gke = stack("gke-gpu", "us-central1", serving={"apiKeySecret": "k", "podMetrics": True, "plainHttp": True})
    spec = gke.spec
    assert spec.kube is not None and spec.endpoint is not None and spec.endpoint.pod_metrics
    assert not [w for w in gke.warnings if "HorizontalPodAutoscaler" in w]
    found = by_kind(workload(spec.kube, spec))
    assert found["HorizontalPodAutoscaler"]["spec"]["metrics"] == [
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"},
                "target": {"type": "AverageValue", "averageValue": "2"},
            },
        }
    ]
    # GKE: Managed Service for Prometheus scrapes the server's named port.
    monitoring = found["PodMonitoring"]
    assert monitoring["apiVersion"] == "monitoring.googleapis.com/v1"
    assert monitoring["spec"] == {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "s"}},
        "endpoints": [{"port": "http", "interval": "15s"}],
    }
    eks = stack("eks-gpu", "us-east-1", serving={"apiKeySecret": "k", "podMetrics": True, "plainHttp": True}).spec
    assert eks.kube is not None
    objects = by_kind(workload(eks.kube, eks))
    assert "PodMonitoring" not in objects  # EKS: Prometheus reads the pods' annotations
    assert objects["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["pods"]["metric"] == {
        "name": "vllm_num_requests_waiting"
    }
    template = objects["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert template == {"prometheus.io/scrape": "true", "prometheus.io/port": "8000", "prometheus.io/path": "/metrics"}


def test_the_load_balancer_is_priced_as_built() -> None:
    eks = stack("eks-gpu", "us-east-1")
    lines = {line.item: line for line in eks.cost.lines}
    # NLB all month + 2,000 GB at 1 GB per NLCU-hour; an internet-facing NLB's three zone addresses.
    assert lines["load balancer"].usd_month == round(0.0225 * 730 + 2000 * 0.006, 2)
    assert lines["load balancer"].note == "NLB 0.0225/h + 2000 GB processed = 2000 NLCU-hours x 0.006"
    assert "3 load balancer x 0.005/h" in lines["public IPv4 addresses"].note
    assert "no charge" in lines["health checks"].note
    gke = stack("gke-gpu", "us-central1")
    line = {line.item: line for line in gke.cost.lines}["load balancer"]
    assert line.note == "passthrough NLB: 1 regional forwarding rule x 0.025/h + 2000 GB processed x 0.008/GiB"
    assert "load balancer" not in {line.item: line for line in gke.cost.lines}["public IPv4 addresses"].note


def test_an_attached_eks_cluster_must_run_the_load_balancer_controller() -> None:
    attached = stack("eks-gpu", "us-east-1", cluster="prod")
    assert EKS_ATTACHED_LB_CONTROLLER in attached.warnings
    assert EKS_ATTACHED_METRICS_SERVER in attached.warnings  # the HPA's CPU metric
    assert EKS_ATTACHED_LB_CONTROLLER not in stack("eks-gpu", "us-east-1").warnings
    # an attached pool still bills the load balancer its Service makes (the cluster's fee it does not)
    assert "load balancer" in {line.item for line in attached.cost.lines}


@pytest.mark.parametrize(
    ("platform", "region", "serving", "key"),
    [
        # an internet-facing endpoint without TLS: the line names the member's key (issue 33)
        ("gke-gpu", "us-central1", {"apiKeySecret": "k"}, "serving.domains"),
        ("eks-gpu", "us-east-1", {"apiKeySecret": "k"}, "serving.certificateArn"),
        (
            "eks-gpu",
            "us-east-1",
            {
                "apiKeySecret": "k",
                "certificateArn": "arn:aws:acm:us-west-2:123456789012:certificate/12345678-1234-1234-1234-123456789012",
            },
            "serving.certificateArn",  # a certificate of another region: ACM certificates are regional
        ),
        ("gcp-gpu", "us-central1", {"apiKeySecret": "k", "podMetrics": True}, "serving.podMetrics"),
    ],
)
def test_what_a_pool_service_cannot_build_is_refused_in_one_line(
    platform: str, region: str, serving: dict[str, Any], key: str
) -> None:
    with pytest.raises(FullserverError) as raised:
        stack(platform, region, serving=serving)
    line = raised.value.line()
    assert f"fullserver:{key}" in line and "\n" not in line


CERT = "arn:aws:acm:us-east-1:123456789012:certificate/12345678-1234-1234-1234-123456789012"


def test_an_eks_certificate_gives_the_nlb_a_tls_listener_and_no_plain_port() -> None:
    plan = stack(
        "eks-gpu", "us-east-1", serving={"apiKeySecret": "k", "certificateArn": CERT, "domains": ["llm.example.com"]}
    )
    spec = plan.spec
    assert spec.kube is not None
    manifests = workload(spec.kube, spec)
    service = by_kind(manifests)["Service"]
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "http", "protocol": "TCP"}]
    annotations = service["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if "ssl" in k or k == serve.HOST_ANNOTATION} == {
        f"{AWS}ssl-cert": CERT,
        f"{AWS}ssl-ports": "443",
        f"{AWS}ssl-negotiation-policy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
        serve.HOST_ANNOTATION: "llm.example.com",
    }
    # a TLS listener's idle timeout is fixed at 350 s: no listener attribute to set
    assert not any("listener-attributes" in k for k in annotations)
    assert serve.endpoint_of(manifests, "k8s-nlb.elb.us-east-1.amazonaws.com") == "https://llm.example.com"
    # without domains the endpoint is the NLB's own name, over TLS
    bare = stack("eks-gpu", "us-east-1", serving={"apiKeySecret": "k", "certificateArn": CERT}).spec
    assert bare.kube is not None
    assert serve.endpoint_of(workload(bare.kube, bare), "nlb.example") == "https://nlb.example"
    # the NLB is priced as without TLS (listeners are not billed apart); the note says what TLS adds
    line = {line.item: line for line in plan.cost.lines}["load balancer"]
    assert line.usd_month == round(0.0225 * 730 + 2000 * 0.006, 2)
    assert "TLS listener" in line.note


GATEWAY_LABELS = {"app.kubernetes.io/name": "s", "app.kubernetes.io/managed-by": "fullserver"}


def test_gke_https_is_a_gateway_with_a_certificate_map_in_front_of_a_clusterip_service() -> None:
    """A passthrough NLB cannot terminate TLS: with serving.domains the Service is a ClusterIP behind a
    Gateway of the global external ALB class, its HTTPS listener alone, its reserved address and its
    Certificate Manager map named (fullserver.platforms.gke_gateway)."""
    plan = stack(
        "gke-gpu", "us-central1", serving={"apiKeySecret": "k", "domains": ["llm.example.com", "api.example.com"]}
    )
    spec = plan.spec
    assert spec.kube is not None and spec.endpoint is not None
    manifests = workload(spec.kube, spec)
    found = by_kind(manifests)
    labels = {**GATEWAY_LABELS, **spec.kube.labels}
    wait = serve.await_seconds(20 * 60)
    service = found["Service"]
    assert service["metadata"]["annotations"] == {
        "cloud.google.com/neg": '{"ingress": true}',
        serve.AWAIT_ANNOTATION: wait,
    }
    assert service["spec"] == {
        "type": "ClusterIP",
        "selector": {"app.kubernetes.io/name": "s"},
        "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
    }
    assert found["Gateway"] == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {
            "name": "s",
            "namespace": "default",
            "labels": labels,
            "annotations": {"networking.gke.io/certmap": "s-certmap"},
        },
        "spec": {
            "gatewayClassName": "gke-l7-global-external-managed",
            "listeners": [{"name": "https", "protocol": "HTTPS", "port": 443}],  # no HTTP listener: nothing in clear
            "addresses": [{"type": "NamedAddress", "value": "s-gateway"}],
        },
    }
    assert found["HTTPRoute"] == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "s", "namespace": "default", "labels": labels},
        "spec": {
            "parentRefs": [{"name": "s", "sectionName": "https"}],
            "hostnames": ["llm.example.com", "api.example.com"],
            "rules": [{"backendRefs": [{"name": "s", "port": 80}]}],
        },
    }
    target = {"group": "", "kind": "Service", "name": "s"}
    assert found["HealthCheckPolicy"] == {
        "apiVersion": "networking.gke.io/v1",
        "kind": "HealthCheckPolicy",
        "metadata": {"name": "s", "namespace": "default", "labels": labels},
        "spec": {
            "default": {
                "checkIntervalSec": 10,
                "healthyThreshold": 2,
                "unhealthyThreshold": 3,
                "config": {
                    "type": "HTTP",
                    "httpHealthCheck": {"portSpecification": "USE_SERVING_PORT", "requestPath": "/health"},
                },
            },
            "targetRef": target,
        },
    }
    # the backend timeout is the request timeout (a generation streams for minutes; GKE's default is 30 s)
    assert found["GCPBackendPolicy"] == {
        "apiVersion": "networking.gke.io/v1",
        "kind": "GCPBackendPolicy",
        "metadata": {"name": "s", "namespace": "default", "labels": labels},
        "spec": {
            "default": {"timeoutSec": 600, "connectionDraining": {"drainingTimeoutSec": 120}},
            "targetRef": target,
        },
    }
    assert serve.lb_service_name(manifests) is None
    assert serve.endpoint_of(manifests, None) == serve.manual_endpoint(manifests) == "https://llm.example.com"
    assert serve.clear_text_of(manifests) is None
    # priced as the Gateway's one global forwarding rule, at the NLB's rate
    line = {line.item: line for line in plan.cost.lines}["load balancer"]
    assert line.note.startswith("Gateway (global external ALB): 1 global forwarding rule x 0.025/h")


def test_the_gateways_cloud_names_fit_their_apis_under_any_stack_name() -> None:
    long = "Team_ML.Serve.v2-" + "x" * 80
    names = gke_gateway.gateway_names(long, ["a.example.com", "b.example.com"])
    assert len(names.entries) == 2 and len(set(names.entries)) == 2
    for token, name in (
        (gke_gateway.GLOBAL_ADDRESS, names.address),
        (gke_gateway.CERTIFICATE, names.certificate),
        (gke_gateway.CERTIFICATE_MAP, names.certificate_map),
        *((gke_gateway.CERTIFICATE_MAP_ENTRY, e) for e in names.entries),
    ):
        assert name_rules(token)[0].problem(name) is None, (token, name)


def test_an_attached_gke_cluster_is_told_it_needs_the_gateway_api() -> None:
    attached = stack(
        "gke-gpu", "us-central1", cluster="ml-prod", serving={"apiKeySecret": "k", "domains": ["llm.example.com"]}
    )
    assert gke_gateway.ATTACHED_GATEWAY in attached.warnings
    created = stack("gke-gpu", "us-central1", serving={"apiKeySecret": "k", "domains": ["llm.example.com"]})
    assert gke_gateway.ATTACHED_GATEWAY not in created.warnings


def test_manifests_tell_an_accepted_risk_from_an_oversight() -> None:
    """The rule read back from the manifests (what the component and the policy pack apply)."""
    for platform, region in (("gke-gpu", "us-central1"), ("eks-gpu", "us-east-1")):
        spec = stack(platform, region).spec
        assert spec.kube is not None
        manifests = workload(spec.kube, spec)
        allowed = serve.clear_text_of(manifests)
        assert allowed is not None and allowed.allowed
        service = next(m for m in manifests if m["kind"] == "Service")
        del service["metadata"]["annotations"][serve.PLAIN_HTTP_ANNOTATION]
        refused = serve.clear_text_of(manifests)
        assert refused is not None and not refused.allowed
        assert serve.clear_text_of(workload(spec.kube, internal(spec))) is None


def test_batch_inference_runs_as_a_job_on_an_elastic_pool() -> None:
    config = {
        "fullserver:profile": "batch-inference",
        "fullserver:platform": "eks-gpu",
        "fullserver:region": "us-east-1",
        "fullserver:accelerator": "L4",
        "fullserver:acceleratorCount": 1,
        "fullserver:framework": "pytorch",
        "fullserver:owner": "batch-team",
        "fullserver:controlPlaneSourceRanges": [API_RANGE],
    }
    spec = plan_workload("b", "b", workload_from_config(config, "b"), load_profiles(), load_catalog()).spec
    assert spec.kube is not None and spec.endpoint is None
    assert [(p.role, p.min_nodes) for p in spec.kube.pools] == [("spot", 0), ("on-demand", 0)]
    assert [m["kind"] for m in workload(spec.kube, spec, image="batch:1")][-1] == "Job"


def test_a_vm_sized_serving_spec_turns_into_the_same_service(plans: dict[str, StackPlan]) -> None:
    """The Python API: a spec sized for gcp-gpu handed to kube_plan gets the GKE Service too."""
    spec = plans["serve-gcp-realtime"].spec
    manifests = workload(kube_plan(spec, Platform.GKE_GPU), spec)
    assert [m["kind"] for m in manifests if m["kind"] in ("Service", "Gateway")] == ["Service", "Gateway"]
    assert serve.manual_endpoint(manifests) == "https://llm.example.com"  # its domains, behind the Gateway


def test_the_nlb_idle_timeout_is_the_request_timeout_within_the_listeners_range() -> None:
    assert [nlb_idle_seconds(t) for t in (30, 600, 9000)] == [60, 600, 6000]
