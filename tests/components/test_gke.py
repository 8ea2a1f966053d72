"""GkeEnvironment under the mock runtime: a GPU pool on an existing cluster, spot with its on-demand
fallback, a multi-host TPU slice pool on a new private regional cluster, flex-start."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.gke import GkeEnvironment, gke_args
from components.graph import Graph
from fullserver.catalog import Catalog
from fullserver.kube import KubePlan, kube_plan
from fullserver.kube.manifest import fits_node, workload
from fullserver.naming import graph_problems
from fullserver.plan import plan_workload
from fullserver.platform import Platform, PricingModel
from fullserver.profiles import load_profiles
from fullserver.spec import EnvironmentSpec
from fullserver.stacks import workload_from_config
from tests.components.conftest import Build, Plans, ResourceOpts, spec_of
from tests.crds import validate


def tpu_slice(catalog: Catalog, accelerator: str = "v5litepod-16", profile: str = "scale-training") -> EnvironmentSpec:
    """What the core sizes for a multi-host TPU slice on tpu-vm (the GKE pool's nodes)."""
    config = {
        "fullserver:profile": profile,
        "fullserver:platform": "tpu-vm",
        "fullserver:region": "us-central1",
        "fullserver:zone": "us-central1-a",
        "fullserver:accelerator": accelerator,
        "fullserver:framework": "jax",
        "fullserver:owner": "research-jax",
    }
    return plan_workload("slice-job", "s", workload_from_config(config, "s"), load_profiles(), catalog).spec


def pools(g: Graph) -> dict[str, dict[str, Any]]:
    return {row.inputs["name"]: row.inputs for row in g.of_type("container/nodePool:NodePool")}


def test_gpu_serving_pool_on_an_existing_cluster(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "serve-gcp-realtime")
    plan = kube_plan(spec, Platform.GKE_GPU, cluster="ml-prod")
    g = build(
        lambda: GkeEnvironment(
            "serve", gke_args(plan, "proj", cluster_location="us-central1", workload=workload(plan, spec))
        )
    )
    assert g.of_type("container/cluster:Cluster") == []  # attached: nothing of the cluster is touched
    assert g.of_type("compute/network:Network") == []
    assert "serve-gcp-realtime-system" not in pools(g)  # the cluster's own pools run its system pods
    (pool,) = pools(g).values()
    assert pool["name"] == "serve-gcp-realtime-gpu" and pool["cluster"] == "ml-prod"
    assert pool["location"] == "us-central1"
    # Serving: the profile's replicas are the pool's floor and ceiling (one node per replica).
    assert pool["autoscaling"] == {"totalMinNodeCount": 2, "totalMaxNodeCount": 8, "locationPolicy": "ANY"}
    # initial_node_count is per zone and this pool spans the region's three zones (GKE "Autoscaling
    # a cluster": nodes "in each location"): the floor of 2 divided among them, not 2 in each.
    assert "nodeLocations" not in pool and pool["initialNodeCount"] == 1 and "nodeCount" not in pool
    config = pool["nodeConfig"]
    assert config["machineType"] == spec.machine_type == "g2-standard-12"
    assert config["guestAccelerators"] == [
        {"type": "nvidia-l4", "count": 1, "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}
    ]
    assert config["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert config["labels"] == {
        "fullserver-profile": "realtime-inference",
        "fullserver-environment": "serve-gcp-realtime",
        "fullserver-owner": "serving-team",
        "fullserver-lifecycle": "persistent",
        "fullserver-stage": "production-inference",
    }
    assert config["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 1}
    assert config["spot"] is False and config["imageType"] == "COS_CONTAINERD"
    assert config["diskSizeGb"] == 150 and config["diskType"] == "pd-balanced"
    assert config["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    account = g.one("serviceaccount/account:Account").inputs["accountId"]
    assert config["serviceAccount"] == f"{account}@mock-project.iam.gserviceaccount.com"
    assert config["oauthScopes"] == ["https://www.googleapis.com/auth/cloud-platform"]
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert "placementPolicy" not in pool and "queuedProvisioning" not in pool
    roles = sorted(r.inputs["role"] for r in g.of_type("projects/iAMMember:IAMMember"))
    # GKE's least-privilege node role and image pulls (GKE "Configure GKE node service accounts").
    assert roles == ["roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount"]
    # The workload: Deployment + Service + HPA whose pod fits the node's allocatable.
    manifests = g.outputs.get("workload") or workload(plan, spec)
    kinds = [m["kind"] for m in manifests]
    # the stack's domains: HTTPS through a Gateway in front of the Service (fullserver.platforms.gke_gateway)
    front = ["Gateway", "HTTPRoute", "HealthCheckPolicy", "GCPBackendPolicy"]
    assert kinds == ["Deployment", "Service", *front, "HorizontalPodAutoscaler"]
    container = manifests[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert manifests[-1]["spec"]["minReplicas"] == 2 and manifests[-1]["spec"]["maxReplicas"] == 8
    assert fits_node(plan)


def test_spot_with_fallback_builds_a_spot_pool_and_an_on_demand_pool(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "finetune-gcp-g2")
    plan = kube_plan(spec, Platform.GKE_GPU, cluster="research")
    g = build(lambda: GkeEnvironment("ft", gke_args(plan, "proj")))
    found = pools(g)
    spot, fallback = found["finetune-gcp-g2-spot"], found["finetune-gcp-g2-ondemand"]
    assert spot["nodeConfig"]["spot"] is True and fallback["nodeConfig"]["spot"] is False
    # Elastic (ephemeral fine-tuning): both scale from zero in the spec's zone.
    for pool in (spot, fallback):
        assert pool["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 1, "locationPolicy": "ANY"}
        assert pool["nodeLocations"] == ["us-central1-a"]
        assert pool["nodeConfig"]["labels"]["fullserver-ttl-hours"] == "72"
        # bound to the ComputeClass that names the spot pool first (GKE: label and NoSchedule taint)
        assert pool["nodeConfig"]["labels"]["cloud.google.com/compute-class"] == "fullserver-finetune-gcp-g2"
        assert pool["nodeConfig"]["taints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
            {"key": "cloud.google.com/compute-class", "value": "fullserver-finetune-gcp-g2", "effect": "NO_SCHEDULE"},
        ]
    storage, compute_class, job = workload(plan, spec, image="trainer:1", command=["python", "train.py"])
    assert compute_class["kind"] == "ComputeClass" and compute_class["spec"]["priorities"] == [
        {"nodepools": ["finetune-gcp-g2-spot"]},
        {"nodepools": ["finetune-gcp-g2-ondemand"]},
    ]
    pod = job["spec"]["template"]["spec"]
    assert pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"] == {
        "matchExpressions": [{"key": "cloud.google.com/gke-spot", "operator": "In", "values": ["true"]}]
    }
    # The VM's pd-balanced data disk is each pod's data volume, on the environment's own class.
    disk = spec.data_disk
    assert disk is not None and plan.data_volume is not None and plan.data_volume.size_gib == disk.size_gib
    assert storage["kind"] == "StorageClass" and storage["metadata"]["name"] == "fullserver-finetune-gcp-g2-data"
    assert storage["provisioner"] == "pd.csi.storage.gke.io" and storage["parameters"] == {"type": "pd-balanced"}
    assert storage["volumeBindingMode"] == "WaitForFirstConsumer" and storage["reclaimPolicy"] == "Delete"
    (volume,) = pod["volumes"]
    claim = volume["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim == {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "fullserver-finetune-gcp-g2-data",
        "resources": {"requests": {"storage": f"{disk.size_gib}Gi"}},
    }
    assert pod["containers"][0]["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    for pool in (spot, fallback):  # the balance policy reads the volume off the pool, the budget its kind too
        assert pool["nodeConfig"]["labels"]["fullserver-pod-data-gib"] == str(disk.size_gib)
        assert pool["nodeConfig"]["labels"]["fullserver-pod-data-kind"] == disk.kind == "pd-balanced"
    assert "Compute Engine persistent disk CSI driver" in " ".join(plan.warnings)  # attached: it must have it


def test_multi_host_tpu_slice_pool_on_a_new_private_cluster(catalog: Catalog, build: Build) -> None:
    spec = tpu_slice(catalog)
    plan = kube_plan(spec, Platform.GKE_TPU)
    g = build(lambda: GkeEnvironment("slice", gke_args(plan, "proj", workload=[])))
    cluster = g.one("container/cluster:Cluster").inputs
    assert cluster["name"] == "slice-job" and cluster["location"] == "us-central1"  # regional
    assert cluster["removeDefaultNodePool"] is True and cluster["initialNodeCount"] == 1
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "proj.svc.id.goog"}
    assert cluster["privateClusterConfig"] == {
        "enablePrivateNodes": True,
        "enablePrivateEndpoint": True,  # no ranges: the API through its DNS endpoint, with IAM
        "masterIpv4CidrBlock": "172.16.0.32/28",
    }
    assert cluster["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": True}}
    assert cluster["releaseChannel"] == {"channel": "REGULAR"}
    assert cluster["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "pods",
        "servicesSecondaryRangeName": "services",
    }
    assert cluster["deletionProtection"] is True  # scale-training protects its environments
    assert g.one("compute/routerNat:RouterNat").inputs["natIpAllocateOption"] == "AUTO_ONLY"
    subnet = g.one("compute/subnetwork:Subnetwork").inputs
    assert subnet["privateIpGoogleAccess"] is True
    assert [r["rangeName"] for r in subnet["secondaryIpRanges"]] == ["pods", "services"]
    found = pools(g)
    assert sorted(found) == ["slice-job-system", "slice-job-tpu"]
    # The created cluster's untainted system pool: GKE's own Deployments (kube-dns) tolerate no
    # accelerator taint (fullserver.platforms.gke.SYSTEM_POOL_MACHINE_TYPE).
    system = found["slice-job-system"]
    assert system["nodeConfig"]["machineType"] == "e2-standard-4" and "taints" not in system["nodeConfig"]
    assert system["nodeCount"] == 1 and system["nodeLocations"] == ["us-central1-a"]
    assert system["nodeConfig"]["serviceAccount"] == found["slice-job-tpu"]["nodeConfig"]["serviceAccount"]
    assert system["cluster"] == found["slice-job-tpu"]["cluster"] and "autoscaling" not in system
    pool = found["slice-job-tpu"]
    assert pool["nodeConfig"]["machineType"] == "ct5lp-hightpu-4t"
    assert "guestAccelerators" not in pool["nodeConfig"]  # TPU pools name the machine type only
    assert pool["nodeConfig"]["taints"] == [{"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
    assert pool["maxPodsPerNode"] == 15 and pool["nodeLocations"] == ["us-central1-a"]
    # Steady (persistent scale-training): the whole slice, fixed.
    assert pool["nodeCount"] == 4 and "autoscaling" not in pool
    assert plan.pools[0].max_nodes == spec.nodes == 4
    job, service = workload(plan, spec, image="jax:1", command=["python", "train.py"])
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 4
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "4x4",
        "fullserver-environment": "slice-job",
    }
    assert pool["nodeConfig"]["labels"]["fullserver-environment"] == "slice-job"
    assert pod["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["containers"][0]["resources"]["limits"]["google.com/tpu"] == "4"
    assert service["spec"]["clusterIP"] == "None" and pod["subdomain"] == service["metadata"]["name"]
    assert fits_node(plan)
    assert graph_problems((r.type, r.name, r.inputs) for r in g.rows if r.custom) == []


def test_elastic_tpu_slice_scales_all_or_nothing(catalog: Catalog, build: Build) -> None:
    """A flex-start multi-host slice pool, as xpk builds one (``gke.FLEX_START_MIN_VERSION``): no
    queued provisioning, 0 or the slice's 4 hosts in its one zone (never only total_*: ci-infra#545),
    location policy ANY, no reservation, no auto-repair, COMPACT with the slice's topology, 15 pods a node."""
    plan = kube_plan(tpu_slice(catalog), Platform.GKE_TPU, cluster="c", flex_start=True)
    g = build(lambda: GkeEnvironment("flex-slice", gke_args(plan, "proj")))
    (pool,) = pools(g).values()
    assert pool["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"}
    assert pool["initialNodeCount"] == 0 and "queuedProvisioning" not in pool
    assert pool["nodeLocations"] == ["us-central1-a"]
    assert pool["nodeConfig"]["flexStart"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["management"]["autoRepair"] is False
    assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"} and pool["maxPodsPerNode"] == 15
    assert not any("COMPACT placement" in w for w in plan.warnings)  # a slice keeps its placement
    assert any("1.33.0-gke.1712000 or later" in w for w in plan.warnings)  # attached: the TPU version


def test_steady_v5p_slice_is_a_fixed_pool(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "train-tpu-v5p-slice")
    plan = kube_plan(spec, Platform.GKE_TPU, cluster="tpu-prod")
    g = build(lambda: GkeEnvironment("v5p", gke_args(plan, "proj", cluster_location="us-east5")))
    (pool,) = pools(g).values()
    assert pool["nodeCount"] == 16 and "autoscaling" not in pool and "initialNodeCount" not in pool
    assert pool["nodeConfig"]["machineType"] == "ct5p-hightpu-4t"
    assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4x4"}


def test_single_host_tpu_pool_sends_no_topology(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "train-tpu-v5e")  # v5litepod-8: one host, 8 chips
    plan = kube_plan(spec, Platform.GKE_TPU, cluster="c")
    g = build(lambda: GkeEnvironment("one", gke_args(plan, "proj")))
    for pool in pools(g).values():
        assert pool["nodeConfig"]["machineType"] == "ct5lp-hightpu-8t"
        assert "placementPolicy" not in pool and "maxPodsPerNode" not in pool


def test_flex_start_pool_gives_the_exported_job_nodes_and_scales_from_zero(catalog: Catalog, build: Build) -> None:
    """Flex-start without queued provisioning: a queued pool's nodes come only through a
    ProvisioningRequest, which the exported Job does not make; a flex-start pool's autoscaler serves
    the Job's pending pods, so the Job's pods must select and tolerate this very pool."""
    config = {
        "fullserver:profile": "scale-training",
        "fullserver:platform": "gcp-gpu",
        "fullserver:region": "us-central1",
        "fullserver:accelerator": "H100-80GB",
        "fullserver:acceleratorCount": 8,
        "fullserver:nodes": 2,
        "fullserver:framework": "pytorch",
        "fullserver:owner": "foundation-models",
    }
    spec = plan_workload("h100", "c", workload_from_config(config, "c"), load_profiles(), catalog).spec
    plan = kube_plan(spec, Platform.GKE_GPU, cluster="c", flex_start=True, max_run_hours=24)
    g = build(lambda: GkeEnvironment("flex", gke_args(plan, "proj")))
    (pool,) = pools(g).values()
    assert "queuedProvisioning" not in pool
    assert pool["nodeConfig"]["flexStart"] is True and pool["nodeConfig"]["maxRunDuration"] == "86400s"
    (job,) = [m for m in workload(plan, spec, "img", ["true"]) if m["kind"] == "Job"]
    pod = job["spec"]["template"]
    assert "annotations" not in pod["metadata"]  # no ProvisioningRequest to consume
    node_labels = {**pool["nodeConfig"]["labels"], "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}
    assert pod["spec"]["nodeSelector"].items() <= node_labels.items()
    tolerated = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert {(t["key"], {"NO_SCHEDULE": "NoSchedule"}[t["effect"]]) for t in pool["nodeConfig"]["taints"]} <= tolerated
    assert any("not all at once" in w for w in plan.warnings)  # 2 nodes: no queued, atomic provisioning
    assert any("1.32.2-gke.1652000 or later" in w for w in plan.warnings)  # attached: its version
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["management"]["autoRepair"] is False
    assert pool["autoscaling"]["minNodeCount"] == 0 and pool["autoscaling"]["maxNodeCount"] == 2
    assert spec.machine_type == pool["nodeConfig"]["machineType"] == "a3-highgpu-8g"
    assert pool["nodeConfig"]["guestAccelerators"][0] == {
        "type": "nvidia-h100-80gb",
        "count": 8,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
    }
    assert pool["nodeConfig"]["diskType"] == "hyperdisk-balanced"  # A3 attaches Hyperdisk only
    # No group placement with flex-start on A3 High (Cluster Toolkit: only A3 Ultra, A4 and H4D, via a
    # workload policy): the non-flex plan would place the two nodes compactly; this one says it does not.
    assert spec.network.compact_placement and "placementPolicy" not in pool and not plan.compact_placement
    assert any(w.startswith("flex-start GPU pool without COMPACT placement") for w in plan.warnings)
    assert kube_plan(spec, Platform.GKE_GPU, cluster="c").compact_placement
    assert any("GPUDirect-TCPX" in w and "no GPU NICs" in w for w in plan.warnings)


def test_a_long_stack_name_gives_valid_gke_names(plans: Plans) -> None:
    long = "Team_ML.v2-" + "x" * 80
    spec = spec_of(plans, "serve-gcp-realtime", environment=long)
    plan: KubePlan = kube_plan(spec, Platform.GKE_GPU)
    assert len(plan.cluster_name) <= 39 and plan.cluster_name[0].isalpha()
    assert all(len(p.name) <= 40 and p.name == p.name.lower() for p in plan.pools)


@pytest.mark.parametrize("platform", [Platform.GKE_TPU, Platform.EKS_GPU])
def test_a_gpu_spec_is_refused_for_other_pool_platforms(plans: Plans, platform: Platform) -> None:
    from fullserver.errors import InputError

    with pytest.raises(InputError, match="sized as"):
        kube_plan(spec_of(plans, "serve-gcp-realtime"), platform)


def test_deploy_workload_applies_the_manifests_with_pulumi_kubernetes(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "serve-gcp-realtime")
    plan = kube_plan(spec, Platform.GKE_GPU)
    manifests = workload(plan, spec)
    g = build(lambda: GkeEnvironment("dw", gke_args(plan, "proj", workload=manifests, deploy_workload=True)))
    (provider,) = [r for r in g.rows if r.type == "pulumi:providers:kubernetes"]
    config = json.loads(provider.inputs["kubeconfig"])
    assert config["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert config["current-context"] == "serve-gcp-realtime"
    (group,) = [r for r in g.rows if r.type == "kubernetes:yaml/v2:ConfigGroup"]
    assert group.inputs["objs"] == manifests


def test_the_workload_is_not_applied_unless_asked(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "serve-gcp-realtime")
    plan = kube_plan(spec, Platform.GKE_GPU, cluster="c")
    g = build(lambda: GkeEnvironment("nodw", gke_args(plan, "proj", workload=workload(plan, spec))))
    assert not [r for r in g.rows if r.type.startswith(("kubernetes:", "pulumi:providers:kubernetes"))]


def test_created_cluster_is_protected_and_autoscaled_counts_are_left_alone(
    plans: Plans, build: Build, resource_options: Any
) -> None:
    plan = kube_plan(spec_of(plans, "serve-gcp-realtime"), Platform.GKE_GPU)  # persistent, protected
    build(lambda: GkeEnvironment("prot", gke_args(plan, "proj")))
    assert resource_options["prot-cluster"].protect is True
    assert resource_options["prot-accelerators"].ignore_changes == ["initialNodeCount"]


def test_spot_tpu_slice_gets_an_on_demand_twin(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "batch-tpu-v5e"), Platform.GKE_TPU, cluster="batch")
    g = build(lambda: GkeEnvironment("batch", gke_args(plan, "proj")))
    found = pools(g)
    assert sorted(found) == ["batch-tpu-v5e-ondemand", "batch-tpu-v5e-spot"]
    assert [found[n]["nodeConfig"]["spot"] for n in sorted(found)] == [False, True]
    assert {p["nodeConfig"]["machineType"] for p in found.values()} == {"ct5lp-hightpu-4t"}
    assert all("placementPolicy" not in p for p in found.values())  # one host: no topology


def test_an_attached_cluster_without_workload_identity_gets_the_compute_metadata_server(
    plans: Plans, build: Build, mocks: Any
) -> None:
    """GKE_METADATA "can only be enabled if workload identity is enabled at the cluster level"
    (provider docs, cloud-foundation-fabric#2236), and an attached cluster is only read."""
    spec = spec_of(plans, "serve-gcp-realtime")
    with_wi = kube_plan(spec, Platform.GKE_GPU, cluster="ml-prod")
    without = kube_plan(spec, Platform.GKE_GPU, cluster="legacy")
    mocks.gke_without_workload_identity.add("legacy")
    try:
        g_with = build(lambda: GkeEnvironment("a", gke_args(with_wi, "proj", cluster_location="us-central1")))
        g_without = build(lambda: GkeEnvironment("b", gke_args(without, "proj", cluster_location="us-central1")))
    finally:
        mocks.gke_without_workload_identity.clear()
    (pool,) = pools(g_with).values()
    assert pool["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    (pool,) = pools(g_without).values()
    assert pool["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GCE_METADATA"}
    assert g_without.of_type("container/cluster:Cluster") == []  # read, never changed


def test_a_created_cluster_enables_the_pd_csi_driver_only_for_pods_with_data_volumes(
    plans: Plans, build: Build, catalog: Catalog
) -> None:
    plan = kube_plan(spec_of(plans, "finetune-gcp-g2"), Platform.GKE_GPU, deploy_workload=True)
    assert plan.data_volume is not None and plan.warnings == []  # created: nothing an attached cluster must run
    g = build(lambda: GkeEnvironment("vol", gke_args(plan, "proj")))
    cluster = g.one("container/cluster:Cluster").inputs
    assert cluster["addonsConfig"] == {"gcePersistentDiskCsiDriverConfig": {"enabled": True}}
    slice_plan = kube_plan(tpu_slice(catalog), Platform.GKE_TPU)  # a multi-host slice takes no data disk
    assert slice_plan.data_volume is None
    g = build(lambda: GkeEnvironment("novol", gke_args(slice_plan, "proj", workload=[])))
    assert "addonsConfig" not in g.one("container/cluster:Cluster").inputs
    assert all("fullserver-pod-data-gib" not in p["nodeConfig"]["labels"] for p in pools(g).values())


@pytest.mark.parametrize(("zone", "node_count"), [("us-central1-a", 2), (None, 1)])
def test_a_fixed_pool_s_node_count_is_per_zone(plans: Plans, build: Build, zone: str | None, node_count: int) -> None:
    """Two steady g2 nodes: pinned to the plan's zone, node_count 2 there; without a zone, node_count 1 in
    each of the region's zones (GKE: "the number of nodes to create in each location"), 3 built and planned."""
    spec = spec_of(plans, "finetune-gcp-g2")
    steady = spec.model_copy(
        update={
            "nodes": 2,
            "zone": zone,
            "pricing": PricingModel.ON_DEMAND,
            "spot": False,
            "lifecycle": spec.lifecycle.model_copy(update={"mode": "persistent"}),
        }
    )
    plan = kube_plan(steady, Platform.GKE_GPU, cluster="c")
    g = build(lambda: GkeEnvironment("fixed", gke_args(plan, "proj")))
    (pool,) = pools(g).values()
    assert pool["nodeCount"] == node_count and "autoscaling" not in pool
    assert pool.get("nodeLocations") == ([zone] if zone else None)
    assert plan.pools[0].max_nodes == (2 if zone else 3)


def test_deploy_workload_applies_the_compute_class_before_the_job(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "finetune-gcp-g2")
    plan = kube_plan(spec, Platform.GKE_GPU)
    manifests = workload(plan, spec, image="trainer:1", command=["python", "train.py"])
    g = build(lambda: GkeEnvironment("ft", gke_args(plan, "proj", workload=manifests, deploy_workload=True)))
    (group,) = [r for r in g.rows if r.type == "kubernetes:yaml/v2:ConfigGroup"]
    validate(group.inputs["objs"][1])  # as applied: against the schema from Google's reference (tests/crds.py)
    kinds = [m["kind"] for m in group.inputs["objs"]]
    assert kinds == ["StorageClass", "ComputeClass", "Job"]
    assert group.inputs["objs"][1]["metadata"]["name"] == "fullserver-finetune-gcp-g2"


@pytest.mark.parametrize(
    ("accelerator", "machine_type", "label", "topology", "spot_usd_hour", "on_demand_usd_hour"),
    [
        # catalog tpu_prices, us-central1, per chip-hour x 16 chips (v5p-32: 2 TensorCores per chip)
        ("v5litepod-16", "ct5lp-hightpu-4t", "tpu-v5-lite-podslice", "4x4", 16 * 0.29771, 16 * 1.20),
        ("v5p-32", "ct5p-hightpu-4t", "tpu-v5p-slice", "2x2x4", 16 * 0.78049, 16 * 4.20),
    ],
)
def test_a_multi_host_tpu_slice_on_spot_is_a_spot_pool_with_an_on_demand_twin(
    catalog: Catalog,
    build: Build,
    accelerator: str,
    machine_type: str,
    label: str,
    topology: str,
    spot_usd_hour: float,
    on_demand_usd_hour: float,
) -> None:
    """Issue 37: GKE pools use no queued resources; a Spot multi-host slice pool is
    ``node_config.spot`` with the slice's COMPACT placement and TPU topology (pulumi-gcp 10.2
    ``NodePoolNodeConfigArgs.spot``, ``NodePoolPlacementPolicyArgs.tpu_topology``; GKE "About TPUs
    in GKE": Spot VMs supported), and its on-demand twin the ComputeClass's second priority."""
    config = {
        "fullserver:profile": "batch-inference",
        "fullserver:platform": "gke-tpu",
        "fullserver:region": "us-central1",
        "fullserver:zone": "us-central1-a",
        "fullserver:accelerator": accelerator,
        "fullserver:framework": "jax",
        "fullserver:owner": "batch-scoring",
    }
    planned = plan_workload("spot-slice", "s", workload_from_config(config, "s"), load_profiles(), catalog)
    plan = planned.spec.kube
    assert plan is not None and planned.spec.spot is True
    g = build(lambda: GkeEnvironment("spot-slice", gke_args(plan, "proj", workload=[])))
    found = pools(g)
    spot, fallback = found["spot-slice-spot"], found["spot-slice-ondemand"]
    assert spot["nodeConfig"]["spot"] is True and fallback["nodeConfig"]["spot"] is False
    for pool in (spot, fallback):
        assert pool["nodeConfig"]["machineType"] == machine_type
        assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": topology}
        assert pool["nodeLocations"] == ["us-central1-a"]
        # all or nothing: the autoscaler creates the whole 4-host slice or none of it
        assert pool["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"}
        assert "reservationAffinity" not in pool["nodeConfig"]  # spot consumes no reservation
        assert pool["nodeConfig"]["labels"]["cloud.google.com/compute-class"] == "fullserver-spot-slice"
    manifests = workload(plan, planned.spec, image="scorer:1", command=["python", "score.py"])
    (compute_class,) = [m for m in manifests if m["kind"] == "ComputeClass"]
    assert compute_class["spec"]["priorities"] == [
        {"nodepools": ["spot-slice-spot"]},
        {"nodepools": ["spot-slice-ondemand"]},
    ]
    pod = next(m for m in manifests if m["kind"] in ("Job", "JobSet"))
    assert label in json.dumps(pod)
    # the plan's spot capacity: the spot pool, then the on-demand pool, then what a preemption does
    grow_spot, grow_fallback, preempted = planned.spec.capacity.steps  # type: ignore[union-attr]
    assert grow_spot.usd_hour_low == pytest.approx(spot_usd_hour) and "whole slice" in grow_spot.how
    assert grow_fallback.usd_hour_low == pytest.approx(on_demand_usd_hour)
    assert preempted.usd_hour_low is None and "GKE recreates the whole slice" in preempted.how


def test_every_pool_starts_once_its_nodes_account_holds_its_roles(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    """The nodes write logs and metrics and pull images as their own account from their first boot:
    each pool (the system pool too) waits for that account's role grants."""
    plan = kube_plan(spec_of(plans, "finetune-gcp-g2"), Platform.GKE_GPU)
    g = build(lambda: GkeEnvironment("ft", gke_args(plan, "proj")))
    grants = {r.name for r in g.of_type("projects/iAMMember:IAMMember") if r.name.startswith("ft-")}
    assert len(grants) >= 2
    for pool in ("ft-spot", "ft-on-demand", "ft-system"):
        waits: Any = resource_options[pool].depends_on or []
        assert grants <= {d._name for d in waits}, pool


def test_a_created_cluster_s_default_pool_runs_as_the_nodes_account(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    """The temporary default pool (``remove_default_node_pool``) would otherwise run as the Compute
    Engine default account, often an Editor, and fail where it is deleted or disabled
    (terraform-provider-google#4435); ignored afterwards, so clusters made without it are not
    replaced and GKE's report of the first remaining pool there is no drift."""
    plan = kube_plan(spec_of(plans, "finetune-gcp-g2"), Platform.GKE_GPU)
    g = build(lambda: GkeEnvironment("dp", gke_args(plan, "proj")))
    account = g.one("serviceaccount/account:Account").inputs["accountId"]
    cluster = g.one("container/cluster:Cluster").inputs
    assert cluster["nodeConfig"] == {
        "serviceAccount": f"{account}@mock-project.iam.gserviceaccount.com",
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    assert cluster["removeDefaultNodePool"] is True
    options = resource_options["dp-cluster"]
    assert options.ignore_changes == ["nodeConfig"]
    grants = {r.name for r in g.of_type("projects/iAMMember:IAMMember") if r.name.startswith("dp-")}
    waits: Any = options.depends_on or []
    assert len(grants) == 2 and grants <= {d._name for d in waits}  # its nodes log as the account
