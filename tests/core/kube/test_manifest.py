"""The workload manifests: requests within the node's allocatable, probes, tolerations, indexed Jobs."""

from __future__ import annotations

import jsonschema
import pytest

from fullserver import naming
from fullserver.kube import KubePlan, kube_plan
from fullserver.kube.manifest import (
    TPU_WORKER_WEBHOOK,
    fits_node,
    resources,
    serving,
    training_job,
    workload,
    workload_name,
)
from fullserver.kube.serve import secret_name
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.platforms import name_rules
from fullserver.platforms.kubernetes import CONFIG_GROUP_TYPE, JOB_TTL_HOURS, JOB_TYPE, SERVICE_TYPE
from tests.crds import validate


def test_serving_objects_for_a_serving_spec(plans: dict[str, StackPlan]) -> None:
    spec = plans["serve-aws-realtime"].spec
    plan = kube_plan(spec, Platform.EKS_GPU, cluster="prod")
    deployment, service, hpa = workload(plan, spec)
    assert spec.endpoint is not None
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == spec.endpoint.server.image
    assert container["args"] == spec.endpoint.server.args
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": 8000}
    # The startup probe waits the profile's model load time (20 minutes) before liveness judges.
    assert container["startupProbe"]["failureThreshold"] * container["startupProbe"]["periodSeconds"] == 20 * 60
    assert {"name": "shm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert pod["volumes"] == [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert "affinity" not in pod  # no spot pool to prefer
    assert "replicas" not in deployment["spec"]  # the HPA's own (its minReplicas: 2); an apply would reset it
    # A LoadBalancer Service: clients on 443 (the example's ACM certificate on the NLB's TLS listener),
    # the server's named port behind it (fullserver.kube.serve).
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "http", "protocol": "TCP"}]
    assert container["ports"] == [{"containerPort": 8000, "name": "http"}]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 8)
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
    # a replica that took 20 minutes to load is not removed on a shorter dip
    assert hpa["spec"]["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 20 * 60}}


def test_pulumi_up_waits_for_a_model_server_past_its_ten_minute_default(plans: dict[str, StackPlan]) -> None:
    """pulumi-kubernetes fails a Deployment or a Service not ready after 10 minutes; a LoadBalancer
    Service is ready once its endpoints are, so both wait for the node, the image and the load."""
    spec = plans["serve-aws-realtime"].spec
    plan = kube_plan(spec, Platform.EKS_GPU, cluster="prod")
    deployment, service, _ = workload(plan, spec)
    for obj in (deployment, service):
        assert int(obj["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) == 20 * 60 + 20 * 60
        assert int(obj["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) > 10 * 60


def test_requests_equal_limits_and_fit_the_allocatable(plans: dict[str, StackPlan]) -> None:
    plan = kube_plan(plans["serve-gcp-realtime"].spec, Platform.GKE_GPU)
    got = resources(plan)
    assert got["requests"] == got["limits"]
    assert got["requests"]["nvidia.com/gpu"] == "1"
    assert got["requests"]["cpu"] == f"{plan.pod.resources.cpu_m}m"
    assert int(got["requests"]["memory"].removesuffix("Mi")) <= plan.node_allocatable.memory_mib
    assert int(got["requests"]["ephemeral-storage"].removesuffix("Mi")) <= plan.node_allocatable.ephemeral_mib
    assert fits_node(plan)
    crowded = plan.model_copy(update={"pods_per_node": 2})
    assert not fits_node(crowded)


def test_a_single_node_job_is_not_indexed(plans: dict[str, StackPlan]) -> None:
    spec = plans["train-tpu-v5e"].spec
    plan = kube_plan(spec, Platform.GKE_TPU)
    (job,) = training_job(plan, "jax:1", ["python", "train.py"])
    assert job["kind"] == "Job" and "completionMode" not in job["spec"]
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 1
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and "hostNetwork" not in pod
    assert pod["containers"][0]["resources"]["limits"]["google.com/tpu"] == "8"
    # spot with fallback: the pod prefers GKE's spot nodes.
    assert pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 100


def test_a_multi_node_gpu_job_is_indexed_without_host_networking(plans: dict[str, StackPlan]) -> None:
    plan = kube_plan(plans["train-p5-cluster"].spec, Platform.EKS_GPU)
    job, service = training_job(plan, "trainer:1", ["torchrun", "train.py"])
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["parallelism"] == 2
    assert "hostNetwork" not in job["spec"]["template"]["spec"]
    assert service["spec"] == {"clusterIP": "None", "selector": {"job-name": job["metadata"]["name"]}}


def test_a_multi_host_tpu_job_is_what_gke_s_tpu_webhook_gives_its_worker_variables(
    plans: dict[str, StackPlan],
) -> None:
    """gke-tpu-slice: four hosts. GKE injects TPU_WORKER_ID and TPU_WORKER_HOSTNAMES into a Job with
    completionMode Indexed, a subdomain, parallelism > 1 and google.com/tpu requests
    (``TPU_WORKER_WEBHOOK``): the Job has all four, and sets neither variable itself (a second
    definition would hide the first); the headless Service gives the subdomain its DNS names."""
    plan = plans["gke-tpu-slice"].spec.kube
    assert plan is not None and plan.nodes_per_replica == 4
    job, service = training_job(plan, "jax:1", ["python", "train.py"])
    name = job["metadata"]["name"]
    pod = job["spec"]["template"]["spec"]
    assert job["spec"]["completionMode"] == "Indexed"
    assert pod["subdomain"] == service["metadata"]["name"] == name
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 4
    (container,) = pod["containers"]
    assert (
        int(container["resources"]["requests"]["google.com/tpu"])
        == int(container["resources"]["limits"]["google.com/tpu"])
        == 4
    )
    assert not any(e["name"].startswith("TPU_WORKER") for e in container.get("env", []))
    assert service["spec"] == {"clusterIP": "None", "selector": {"job-name": name}}
    assert "completionMode: Indexed, subdomain, parallelism > 1" in TPU_WORKER_WEBHOOK
    # A GPU job's pods find each other their own way (torchrun's rendezvous): no TPU variables.
    gpu_job, _ = training_job(kube_plan(plans["train-p5-cluster"].spec, Platform.EKS_GPU), "t:1", ["torchrun"])
    assert "env" not in gpu_job["spec"]["template"]["spec"]["containers"][0]


def test_a_finished_job_is_removed_a_day_later_and_every_job_is_a_valid_batch_v1_job(
    plans: dict[str, StackPlan],
) -> None:
    """Kubernetes' TTL-after-finished controller deletes the Job ``JOB_TTL_HOURS`` after it ends
    (its pods with it); every example's Job passes the Job schema written from the API reference
    (``tests/data/crds/job.schema.json``), which refuses a misspelt or mistyped field."""
    slice_plan = plans["gke-tpu-slice"].spec.kube
    assert slice_plan is not None
    kube_plans = [
        kube_plan(plans["train-tpu-v5e"].spec, Platform.GKE_TPU),
        kube_plan(plans["train-p5-cluster"].spec, Platform.EKS_GPU),
        slice_plan,
    ]
    jobs = [training_job(plan, "trainer:1", ["python", "train.py"])[0] for plan in kube_plans]
    for job in jobs:
        assert job["spec"]["ttlSecondsAfterFinished"] == JOB_TTL_HOURS * 3600 == 86_400
        validate(job)
    wrong = {**jobs[0], "spec": {**jobs[0]["spec"], "ttlSecondsAfterFinished": "1d"}}
    with pytest.raises(jsonschema.ValidationError, match="'1d' is not of type 'integer'"):
        validate(wrong)
    misspelt = {**jobs[0], "spec": {**jobs[0]["spec"], "ttlSecondAfterFinished": 60}}
    with pytest.raises(jsonschema.ValidationError, match="ttlSecondAfterFinished"):
        validate(misspelt)
    assert plans["gke-gpu-attach"].autostop is not None
    assert plans["gke-gpu-attach"].autostop.off.endswith("a finished training Job is removed 24 h after it ends")


def test_a_job_needs_an_image_and_serving_an_endpoint(plans: dict[str, StackPlan]) -> None:
    spec = plans["train-p5-cluster"].spec
    plan = kube_plan(spec, Platform.EKS_GPU)
    with pytest.raises(ValueError, match="image"):
        workload(plan, spec)
    with pytest.raises(ValueError, match="no serving endpoint"):
        serving(plan, spec)


def test_kubeconfigs_exec_the_clouds_credential_plugins() -> None:
    import json

    from fullserver.kube.kubeconfig import eks_kubeconfig, gke_kubeconfig

    gke = json.loads(gke_kubeconfig("c", "34.1.2.3", "Q0E="))
    assert gke["clusters"][0]["cluster"] == {"server": "https://34.1.2.3", "certificate-authority-data": "Q0E="}
    assert gke["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    eks = json.loads(eks_kubeconfig("e", "https://x.eks.amazonaws.com", "Q0E=", "us-east-1"))
    assert eks["clusters"][0]["cluster"]["server"] == "https://x.eks.amazonaws.com"
    assert eks["users"][0]["user"]["exec"]["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert "token" not in json.dumps(eks["users"][0]["user"]).replace("get-token", "")


REALISTIC = ["Team_ML.Serve.v2", "ci-20261126-081700-a1b2c3", "mlplatform-serve-realtime-staging-east", "A" * 100]
"""Stack names Pulumi takes: upper case, '_' and '.'; `fullserver ephemeral`'s; long; the longest."""


def _renamed(plans: dict[str, StackPlan], stack: str, environment: str) -> KubePlan:
    plan = plans[stack].spec.kube
    assert plan is not None
    return plan.model_copy(update={"environment": environment})


def test_an_example_stack_keeps_its_workload_name(plans: dict[str, StackPlan]) -> None:
    """A name that already fits is kept: `pulumi up` replaces no object of an existing stack."""
    for stack in ("serve-gke-l4", "gke-tpu-slice", "gke-gpu-attach", "eks-gpu-cluster"):
        plan = plans[stack].spec.kube
        assert plan is not None and workload_name(plan) == stack


@pytest.mark.parametrize("environment", REALISTIC)
def test_an_indexed_job_s_name_leaves_its_pods_hostnames_within_a_dns_label(
    plans: dict[str, StackPlan], environment: str
) -> None:
    """gke-tpu-slice's four pods are <job>-0 ... <job>-3 as hostnames under the headless Service's
    subdomain: each a DNS label of at most 63, as the Job's name and the Service's are."""
    plan = _renamed(plans, "gke-tpu-slice", environment)
    job, service = training_job(plan, "jax:1", ["python", "train.py"])
    name = job["metadata"]["name"]
    assert service["metadata"]["name"] == job["spec"]["template"]["spec"]["subdomain"] == name
    assert service["spec"]["selector"] == {"job-name": name}
    label = name_rules(JOB_TYPE)[1]  # the pod subdomain's rule: an RFC 1123 label
    assert all(label.problem(f"{name}-{i}") is None for i in range(plan.nodes_per_replica))
    assert naming.graph_problems([(JOB_TYPE, name, job), (SERVICE_TYPE, name, service)]) == []


@pytest.mark.parametrize("environment", REALISTIC)
def test_serving_objects_take_names_their_apis_accept_under_any_stack_name(
    plans: dict[str, StackPlan], environment: str
) -> None:
    spec = plans["serve-gke-l4"].spec.model_copy(update={"environment": environment})
    plan = _renamed(plans, "serve-gke-l4", environment)
    manifests = workload(plan, spec)
    assert naming.graph_problems([(CONFIG_GROUP_TYPE, "workload", {"objs": manifests})]) == []
    name = workload_name(plan)
    assert {m["metadata"]["name"] for m in manifests} == {name}
    env = manifests[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {e["valueFrom"]["secretKeyRef"]["name"] for e in env} == {secret_name(name)}
    assert name_rules("kubernetes:core/v1:Secret")[0].problem(secret_name(name)) is None


def test_two_stacks_differing_only_in_case_or_punctuation_get_different_workload_names(
    plans: dict[str, StackPlan],
) -> None:
    names = {workload_name(_renamed(plans, "serve-gke-l4", e)) for e in ("team-ml", "Team-ML", "team_ml", "team.ml")}
    assert len(names) == 4 and "team-ml" in names
