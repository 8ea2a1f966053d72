"""Serving on node pools under the mock runtime: the pods' Secret (the API key read from the cloud's
store, kept secret), the LoadBalancer Service in the applied workload and the endpoint read back
from it, and on a created EKS cluster the AWS Load Balancer Controller with its IAM role."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from components.args import SpecRefused
from components.aws.labels import aws_tags
from components.eks import EksEnvironment, eks_args
from components.eks.load_balancer import POLICY_FILE
from components.gke import GkeEnvironment, gke_args
from components.graph import Graph
from fullserver.catalog import load_catalog
from fullserver.clouds.mock import SECRET_VALUE as MOCK_SECRET_VALUE
from fullserver.kube.manifest import default_workload
from fullserver.kube.serve import AWAIT_ANNOTATION, PLAIN_HTTP_ANNOTATION
from fullserver.plan import plan_workload
from fullserver.profiles import load_profiles
from fullserver.rules import gcp_labels
from fullserver.spec import EnvironmentSpec
from fullserver.stacks import workload_from_config
from tests.components.conftest import Build, Plans, ResourceOpts, spec_of

SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_VALUE_SIG = "1b47061264138c4ac30d75fd1eb44270"
MOCK_VALUE_BASE64 = base64.b64encode(MOCK_SECRET_VALUE.encode()).decode()
ENDPOINT_BEFORE_UP = "http://<load balancer address, known after pulumi up>"


def eks_serving(cluster: str | None = None, provisioner: str = "cluster-autoscaler", **serving: Any) -> EnvironmentSpec:
    config = {
        "fullserver:profile": "realtime-inference",
        "fullserver:platform": "eks-gpu",
        "fullserver:region": "us-east-1",
        "fullserver:accelerator": "L4",
        "fullserver:acceleratorCount": 1,
        "fullserver:framework": "pytorch",
        "fullserver:owner": "serving-team",
        "fullserver:deployWorkload": True,
        "fullserver:nodeProvisioner": provisioner,
        "fullserver:serving": {
            "apiKeySecret": "serving-team/api-key",
            "tokenSecret": "hf-token",
            **({} if "certificateArn" in serving else {"plainHttp": True}),  # the plain NLB, said so
            **serving,
        },
        # an existing cluster, or a created one whose API pulumi up reaches (fullserver.kube.access)
        **({"fullserver:cluster": cluster} if cluster else {"fullserver:controlPlaneSourceRanges": ["198.18.0.0/24"]}),
    }
    return plan_workload("llm", "llm", workload_from_config(config, "llm"), load_profiles(), load_catalog()).spec


def build_eks(build: Build, spec: EnvironmentSpec, identity: str = "pod-identity") -> Graph:
    plan, endpoint = spec.kube, spec.endpoint
    assert plan is not None and endpoint is not None
    args = eks_args(
        plan,
        identity="irsa" if identity == "irsa" else "pod-identity",
        workload=default_workload(plan, spec),
        deploy_workload=True,
        serving_secrets=endpoint.server.secrets,
    )
    return build(lambda: EksEnvironment("llm", args))


def secret_inputs(g: Graph) -> dict[str, Any]:
    return g.one("core/v1:Secret").inputs


def test_gke_serving_stack_applies_its_secret_service_and_reads_the_endpoint(build: Build) -> None:
    spec = gke_serving(plainHttp=True)
    plan, endpoint = spec.kube, spec.endpoint
    assert plan is not None and endpoint is not None
    args = gke_args(
        plan,
        "proj",
        workload=default_workload(plan, spec),
        deploy_workload=True,
        serving_secrets=endpoint.server.secrets,
    )
    assert args["serving_secrets"] == {"api_key": "api-key"}
    g = build(lambda: GkeEnvironment("serve", args))
    secret = secret_inputs(g)
    assert secret["type"] == "Opaque"
    assert secret["metadata"] == {
        "name": "llm-serving",
        "namespace": "default",
        "labels": {"app.kubernetes.io/managed-by": "fullserver"},
    }
    # The key read from Secret Manager travels as a Pulumi secret, never as plain text.
    # as data (base64): Kubernetes warns stringData "does not work well with server-side apply"
    assert "stringData" not in secret
    assert secret["data"] == {SECRET_SIG: SECRET_VALUE_SIG, "value": {"VLLM_API_KEY": MOCK_VALUE_BASE64}}
    (group,) = g.of_type("yaml/v2:ConfigGroup")
    objs = {o["kind"]: o for o in group.inputs["objs"]}
    assert set(objs) == {"Deployment", "Service", "HorizontalPodAutoscaler"}
    env = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [
        {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "llm-serving", "key": "VLLM_API_KEY"}}}
    ]
    assert MOCK_SECRET_VALUE not in json.dumps(group.inputs)
    service = objs["Service"]
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["metadata"]["annotations"] == {
        "cloud.google.com/l4-rbs": "enabled",
        AWAIT_ANNOTATION: "2400",
        PLAIN_HTTP_ANNOTATION: "true",  # the stack's plainHttp: the policy pack reads it
    }
    # pulumi up waits for the model server: a node from zero, the image and 20 minutes' load (not 10 minutes)
    assert objs["Deployment"]["metadata"]["annotations"][AWAIT_ANNOTATION] == "2400"
    # The endpoint: the Service read back after the group, its address once the load balancer has one.
    (read,) = [r for r in g.of_type("core/v1:Service") if r.name == "serve-endpoint"]
    assert not read.custom or read.inputs == {}
    assert g.outputs["endpoint"] == ENDPOINT_BEFORE_UP
    assert g.of_type("compute/globalAddress:GlobalAddress") == []  # no Gateway without TLS


def test_gke_https_builds_the_gateways_address_and_managed_certificate_before_the_gateway(
    plans: Plans, build: Build
) -> None:
    """serve-gke-l4: the Gateway API on the created cluster; a reserved global address, a
    Certificate Manager certificate for the domains, its map and one entry per domain, every one
    named as the Gateway's manifests name them; the workload waits for all of them."""
    spec = spec_of(plans, "serve-gke-l4")
    plan, endpoint = spec.kube, spec.endpoint
    assert plan is not None and endpoint is not None and plan.deploy_workload
    args = gke_args(
        plan,
        "proj",
        workload=default_workload(plan, spec),
        deploy_workload=True,
        serving_secrets=endpoint.server.secrets,
    )
    g = build(lambda: GkeEnvironment("serve", args))
    labels = gcp_labels(plan.cloud_labels)
    assert g.one("container/cluster:Cluster").inputs["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    address = g.one("compute/globalAddress:GlobalAddress")
    assert address.inputs == {
        "name": "serve-gke-l4-gateway",
        "project": "proj",
        "addressType": "EXTERNAL",
        "labels": labels,
    }
    assert g.one("certificatemanager/certificate:Certificate").inputs == {
        "name": "serve-gke-l4-cert",
        "project": "proj",
        "scope": "DEFAULT",
        "managed": {"domains": ["llm.example.com"]},
        "labels": labels,
    }
    assert g.one("certificatemanager/certificateMap:CertificateMap").inputs == {
        "name": "serve-gke-l4-certmap",
        "project": "proj",
        "labels": labels,
    }
    assert g.one("certificatemanager/certificateMapEntry:CertificateMapEntry").inputs == {
        "name": "serve-gke-l4-entry0",
        "project": "proj",
        "map": "serve-gke-l4-certmap",
        "certificates": ["serve-cert-id"],
        "hostname": "llm.example.com",
        "labels": labels,
    }
    (group,) = g.of_type("yaml/v2:ConfigGroup")
    objs = {o["kind"]: o for o in group.inputs["objs"]}
    assert {"Gateway", "HTTPRoute", "HealthCheckPolicy", "GCPBackendPolicy"} <= set(objs)
    gateway = objs["Gateway"]
    assert gateway["metadata"]["annotations"] == {"networking.gke.io/certmap": "serve-gke-l4-certmap"}
    assert gateway["spec"]["addresses"] == [{"type": "NamedAddress", "value": "serve-gke-l4-gateway"}]
    assert objs["Service"]["spec"]["type"] == "ClusterIP"
    assert not g.of_type("core/v1:Service")  # no load balancer to read back: the address is the stack's own
    assert g.outputs["endpoint"] == "https://llm.example.com"
    # where llm.example.com must point (the program's dnsTarget): the reserved address, known at up
    assert g.outputs["lb_address"] == "<serve-gateway address, known after pulumi up>"


def test_gke_manifests_applied_by_hand_still_get_their_address_and_certificate(build: Build) -> None:
    spec = gke_serving(domains=["llm.example.com"])
    plan = spec.kube
    assert plan is not None
    g = build(lambda: GkeEnvironment("llm", gke_args(plan, "proj", workload=default_workload(plan, spec))))
    assert g.one("compute/globalAddress:GlobalAddress").inputs["name"] == "llm-gateway"
    assert g.one("certificatemanager/certificate:Certificate").inputs["managed"] == {"domains": ["llm.example.com"]}
    assert g.of_type("yaml/v2:ConfigGroup") == []
    assert g.outputs["endpoint"] == "https://llm.example.com"


def test_a_workload_that_would_send_its_key_in_clear_is_refused_before_anything_is_built(build: Build) -> None:
    """Args that never passed through the core: the Service's plainHttp annotation removed."""
    spec = gke_serving()
    plan = spec.kube
    assert plan is not None
    workload = default_workload(plan, spec)
    service = next(m for m in workload if m["kind"] == "Service")
    del service["metadata"]["annotations"][PLAIN_HTTP_ANNOTATION]
    with pytest.raises(SpecRefused, match=r"^spec\.workload: the internet-facing endpoint has no TLS"):
        GkeEnvironment("llm", gke_args(plan, "proj", workload=workload))


def test_created_eks_cluster_gets_the_load_balancer_controller_with_its_role(
    build: Build, resource_options: ResourceOpts
) -> None:
    spec = eks_serving()
    assert spec.kube is not None
    g = build_eks(build, spec)
    (release,) = [r for r in g.of_type("helm.sh/v3:Release") if r.name == "llm-aws-load-balancer-controller"]
    assert release.inputs["chart"] == "aws-load-balancer-controller" and release.inputs["version"] == "3.5.0"
    # Named after its chart (the EKS guide's own install), deleted before a second one would run.
    assert release.inputs["name"] == "aws-load-balancer-controller"
    assert resource_options[release.name].delete_before_replace is True
    assert release.inputs["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    assert release.inputs["namespace"] == "kube-system"
    assert release.inputs["values"] == {
        "clusterName": "llm",
        "region": "us-east-1",
        "vpcId": "llm-vpc-id",  # the created VPC: IMDS (hop limit 1) would not tell the pod
        "serviceAccount": {"create": True, "name": "aws-load-balancer-controller"},
        "nodeSelector": {"eks.amazonaws.com/nodegroup": "llm-system"},
        # no Service webhook to refuse the other charts' Services while its pods start (#4140)
        "enableServiceMutatorWebhook": False,
    }
    (policy,) = [r for r in g.of_type("iam/rolePolicy:RolePolicy") if r.name == "llm-lb-controller"]
    assert json.loads(policy.inputs["policy"]) == json.loads(POLICY_FILE.read_text())
    (role,) = [r for r in g.of_type("iam/role:Role") if r.name == "llm-lb-controller"]
    assert policy.inputs["role"].startswith("llm-lb-controller-")  # the role's auto-name
    assert role.inputs["tags"] == aws_tags(spec.kube.cloud_labels, "llm-lb-controller")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    (association,) = [r for r in g.of_type("eks/podIdentityAssociation:PodIdentityAssociation") if "lb" in r.name]
    assert association.inputs["serviceAccount"] == "aws-load-balancer-controller"
    assert association.inputs["namespace"] == "kube-system" and association.inputs["clusterName"] == "llm"
    assert association.inputs["roleArn"] == "arn:aws:iam::123456789012:llm-lb-controller"
    assert association.inputs["tags"] == aws_tags(spec.kube.cloud_labels, "llm-lb-controller")
    # The HPA's CPU metric: the Metrics Server add-on, which EKS does not deploy by default.
    (addon,) = [r for r in g.of_type("eks/addon:Addon") if r.inputs["addonName"] == "metrics-server"]
    assert addon.inputs == {
        "clusterName": "llm",
        "addonName": "metrics-server",
        "tags": aws_tags(spec.kube.cloud_labels, "metrics-server"),
    }
    # The subnets the controller discovers: public for internet-facing, private for internal.
    subnets = g.of_type("ec2/subnet:Subnet")
    assert all(r.inputs["tags"]["kubernetes.io/role/elb"] == "1" for r in subnets if "-public-" in r.name)
    assert all(r.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1" for r in subnets if "-private-" in r.name)


def test_eks_serving_secrets_come_from_ssm_and_stay_secret(build: Build) -> None:
    g = build_eks(build, eks_serving())
    secret = secret_inputs(g)
    assert secret["metadata"]["name"] == "llm-serving"
    assert secret["data"] == {
        SECRET_SIG: SECRET_VALUE_SIG,
        "value": {"HF_TOKEN": MOCK_VALUE_BASE64, "VLLM_API_KEY": MOCK_VALUE_BASE64},
    }
    (group,) = g.of_type("yaml/v2:ConfigGroup")
    service = next(o for o in group.inputs["objs"] if o["kind"] == "Service")
    assert (
        service["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internet-facing"
    )
    assert g.outputs["endpoint"] == ENDPOINT_BEFORE_UP


def test_irsa_gives_the_controller_its_role_through_the_service_account(build: Build) -> None:
    g = build_eks(build, eks_serving(), identity="irsa")
    (release,) = [r for r in g.of_type("helm.sh/v3:Release") if r.name == "llm-aws-load-balancer-controller"]
    account = release.inputs["values"]["serviceAccount"]
    assert account["annotations"] == {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:llm-lb-controller"}
    assert not [r for r in g.of_type("eks/podIdentityAssociation:PodIdentityAssociation") if "lb" in r.name]
    (role,) = [r for r in g.of_type("iam/role:Role") if r.name == "llm-lb-controller"]
    condition = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Condition"]["StringEquals"]
    assert "system:serviceaccount:kube-system:aws-load-balancer-controller" in condition.values()


@pytest.mark.parametrize("deploy", [True, False])
def test_an_attached_eks_cluster_gets_no_controller(build: Build, deploy: bool) -> None:
    spec = eks_serving(cluster="prod")
    plan, endpoint = spec.kube, spec.endpoint
    assert plan is not None and endpoint is not None
    args = eks_args(plan, workload=default_workload(plan, spec), deploy_workload=deploy)
    g = build(lambda: EksEnvironment("llm", args))
    assert g.of_type("helm.sh/v3:Release") == [] and g.of_type("iam/role:Role")[0].name == "llm-nodes"
    assert g.of_type("eks/addon:Addon") == []  # the cluster's own: the plan says what it must run
    if not deploy:  # applied by hand: where the address is read
        assert g.outputs["endpoint"] == ("http://<address of Service llm: kubectl get service llm --namespace default>")
        assert g.of_type("core/v1:Secret") == []


def test_an_eks_tls_endpoint_is_https_on_the_named_host(build: Build) -> None:
    cert = "arn:aws:acm:us-east-1:123456789012:certificate/12345678-1234-1234-1234-123456789012"
    g = build_eks(build, eks_serving(certificateArn=cert, domains=["llm.example.com"]))
    (group,) = g.of_type("yaml/v2:ConfigGroup")
    service = next(o for o in group.inputs["objs"] if o["kind"] == "Service")
    assert service["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == cert
    assert g.outputs["endpoint"] == "https://llm.example.com"


def gke_serving(**serving: Any) -> EnvironmentSpec:
    config = {
        "gcp:project": "my-ml-project",
        "fullserver:profile": "realtime-inference",
        "fullserver:platform": "gke-gpu",
        "fullserver:region": "us-central1",
        "fullserver:accelerator": "L4",
        "fullserver:acceleratorCount": 1,
        "fullserver:framework": "pytorch",
        "fullserver:owner": "serving-team",
        "fullserver:serving": {
            "apiKeySecret": "api-key",
            **({} if "domains" in serving else {"plainHttp": True}),
            **serving,
        },
    }
    return plan_workload("llm", "llm", workload_from_config(config, "llm"), load_profiles(), load_catalog()).spec


@pytest.mark.parametrize("pod_metrics", [True, False])
def test_a_created_gke_cluster_collects_the_pods_metrics_its_hpa_reads(build: Build, pod_metrics: bool) -> None:
    """With podMetrics the manifests hold a PodMonitoring, whose CRD and collectors come with
    managed collection: the created cluster says it on; without, GKE's default stands."""
    spec = gke_serving(podMetrics=pod_metrics)
    plan = spec.kube
    assert plan is not None and plan.create_cluster
    workload = default_workload(plan, spec)
    assert any(m["kind"] == "PodMonitoring" for m in workload) is pod_metrics
    g = build(lambda: GkeEnvironment("llm", gke_args(plan, "proj", workload=workload)))
    cluster = g.one("container/cluster:Cluster").inputs
    if pod_metrics:
        assert cluster["monitoringConfig"] == {"managedPrometheus": {"enabled": True}}
    else:
        assert "monitoringConfig" not in cluster
