"""Google Cloud: what fullserver asks Google Cloud, one place for every platform on it (Compute
Engine, Cloud TPU, GKE).

Price refresh sources (the Cloud Billing Catalog API's SKUs, Compute Engine's machine types per
zone), the quota reader (Compute Engine ``regions.get`` / ``projects.get`` with usage, Cloud
Quotas ``quotaInfos`` for Cloud TPU, limits only), the gcloud CLI's install hint, the offline
graph's answers for pulumi-gcp and its table rows, and the compute types the policies watch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from fullserver.cloud_errors import scrub
from fullserver.clouds import graph_text, mock
from fullserver.clouds.base import Cloud, MockSession, PriceRefresh, RefreshSource
from fullserver.errors import InputError
from fullserver.platforms import QUEUED_TPU_TYPE, rules_for
from fullserver.platforms.quota import QuotaNeed
from fullserver.quotacheck import NoCredentials, QuotaStatus

if TYPE_CHECKING:
    from fullserver.catalog import Offer
    from fullserver.catalog.refresh.ask import Ask
    from fullserver.catalog.refresh.rows import Fetched

KEY = "gcp"
_PROJECT_ID = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
"""A project ID: 6-30 lowercase letters, digits or hyphens, starting with a letter, not ending with
a hyphen (https://cloud.google.com/resource-manager/docs/creating-managing-projects)."""
MOCK_PROJECT = "mock-project"
"""The project the offline graph's resources are in (``gcp:project`` when the stack sets none)."""


def check_gcp_project(value: object, where: str) -> None:
    """``gcp:project``, when set, is a project ID by form: every GCP resource and quota is read in
    it, and ``'My Project!'`` (a display name) planned, then failed at ``up``."""
    if value is None or (isinstance(value, str) and _PROJECT_ID.fullmatch(value)):
        return
    raise InputError(
        where,
        f"field 'gcp:project' is {str(value)[:60]!r}, not a project ID (6-30 lowercase letters, digits or "
        "hyphens, starting with a letter)",
        "set the project's ID, as gcloud projects list shows it, not its display name",
    )


# --- price refresh (``fullserver catalog refresh --provider``) ------------------------------------


def _zones(ask: Ask) -> Fetched:
    from fullserver.catalog.refresh import compute
    from fullserver.catalog.refresh.http import urllib_opener

    if not ask.gcp_project or not ask.gcp_access_token:
        raise InputError(
            "--gcp-project" if not ask.gcp_project else "--gcp-token-env",
            "the Compute Engine API needs a project and an OAuth access token",
            "pass --gcp-project and export the token (gcloud auth print-access-token) in the variable "
            "--gcp-token-env names",
        )
    api = ask.given_opener or urllib_opener(headers=compute.bearer_headers(ask.gcp_access_token))
    return compute.fetch_zones(ask.data, api, ask.gcp_project, ask.today, ask.where)


def _billing_skus(ask: Ask) -> list[dict[str, Any]]:
    """The Cloud Billing Catalog's SKUs, listed once per refresh for every Google Cloud file."""
    from fullserver.catalog.refresh import gcp

    if not ask.gcp_api_key:
        raise InputError(
            "--gcp-api-key",
            "the Cloud Billing Catalog API needs an API key",
            "create one in the Google Cloud console (APIs & Services > Credentials) with the Cloud Billing API enabled",
        )
    if "skus" not in ask.skus:
        ask.skus["skus"] = gcp.list_skus(ask.opener, ask.gcp_api_key)
    return ask.skus["skus"]


def _machines_and_gpus(ask: Ask) -> Fetched:
    from fullserver.catalog.refresh import gcp

    return gcp.fetch_gcp(ask.data, _billing_skus(ask), ask.today, ask.extra)


def _tpus(ask: Ask) -> Fetched:
    from fullserver.catalog.refresh import gcp

    return gcp.fetch_tpu(ask.data, _billing_skus(ask), ask.today, ask.extra)


def _offer_refresh(offer: Offer, spot: bool) -> str:
    from fullserver.catalog.refresh import gcp as gcp_skus  # the SKU mapping is the refresh's own table

    if rules_for(offer.platform).supply.named_by_type:  # Cloud TPU slices: the TPU SKUs
        return "tpu" if offer.family in gcp_skus.TPU_SKU_TOKENS else ""
    count = offer.host.accelerator_count
    covered = gcp_skus.refreshes_shape(offer.machine_type or offer.name, offer.family, offer.accelerator, count)
    return "gcp" if covered or offer.family == "n1" else ""


def _disks() -> frozenset[str]:
    from fullserver.catalog.refresh import gcp as gcp_skus

    return frozenset(gcp_skus.DISK_SKU_PREFIXES)


def _machine(machine: str) -> str:
    from fullserver.catalog.refresh import gcp as gcp_skus

    return "gcp" if gcp_skus.refreshes_shape(machine, machine.split("-")[0], None, 0) else ""


PRICE_REFRESH = PriceRefresh(_offer_refresh, "gcp", _disks, egress="gcp", machines=_machine)
"""The Cloud Billing GPU/machine, TPU and disk SKUs, and egress; commitment prices are not mapped."""

# --- quota reader (``fullserver quota``) ----------------------------------------------------

GetJson = Callable[[str], dict[str, Any]]
"""An authorised GET returning the JSON body (google-auth's session, or recorded responses)."""

COMPUTE = "https://compute.googleapis.com/compute/v1/projects/{project}"
CLOUD_QUOTAS = (
    "https://cloudquotas.googleapis.com/v1/projects/{project}/locations/global/services/{service}/quotaInfos/{quota}"
)


class GcpReader:
    """Compute Engine quotas from ``regions.get`` (``projects.get`` for global ones), with usage;
    Cloud TPU limits from Cloud Quotas ``quotaInfos`` (it reports no usage)."""

    def __init__(self, get_json: GetJson, project: str) -> None:
        self.get_json = get_json
        self.project = project
        self._compute: dict[str, dict[str, tuple[float, float]]] = {}

    def _compute_quotas(self, scope: str) -> dict[str, tuple[float, float]]:
        if scope not in self._compute:
            base = COMPUTE.format(project=self.project)
            body = self.get_json(base if scope == "global" else f"{base}/regions/{scope}")
            self._compute[scope] = {
                q["metric"]: (float(q["limit"]), float(q.get("usage", 0))) for q in body.get("quotas", [])
            }
        return self._compute[scope]

    def _tpu_limit(self, need: QuotaNeed) -> float | None:
        url = CLOUD_QUOTAS.format(project=self.project, service=need.service, quota=need.code)
        dimension = "zone" if need.code.endswith("PerZoneForTPUAPI") else "region"
        fallback = None
        for info in self.get_json(url).get("dimensionsInfos", []):
            value = info.get("details", {}).get("value")
            dims = info.get("dimensions", {})
            if value is None:
                continue
            if dims.get(dimension) == need.scope:
                return float(value)
            if not dims:
                fallback = float(value)  # the default for every zone or region without its own
        return fallback

    def read(self, need: QuotaNeed) -> QuotaStatus:
        if need.service == "tpu.googleapis.com":
            limit = self._tpu_limit(need)
            return QuotaStatus(need, limit, None, "Cloud Quotas reports no usage" if limit is not None else "no value")
        found = self._compute_quotas(need.scope).get(need.code)
        if found is None:
            return QuotaStatus(need, None, None, "not in the project's quota list")
        return QuotaStatus(need, found[0], found[1])

    def request(self, status: QuotaStatus) -> str:
        n = status.need
        return (
            f"https://console.cloud.google.com/iam-admin/quotas?project={self.project} "
            f"(service {n.service}, {n.code} in {n.scope}: ask for {status.desired})"
        )


def gcp_reader(project: str | None) -> GcpReader:
    """A reader on Application Default Credentials over plain HTTPS (google-auth's session)."""
    if not project:
        raise NoCredentials("Google Cloud", "the stack sets no gcp:project", "set gcp:project in the stack file")
    try:
        import google.auth
        from google.auth.transport.requests import AuthorizedSession
    except ImportError:
        raise NoCredentials(
            "Google Cloud", "google-auth is not installed", "pip install 'fullserver[refresh]'"
        ) from None
    try:
        credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    except google.auth.exceptions.DefaultCredentialsError as exc:  # none: ephemeral goes on without
        raise NoCredentials(
            "Google Cloud",
            f"no Application Default Credentials to read Compute Engine and Cloud Quotas with ({scrub(str(exc))})",
            "run gcloud auth application-default login, or set GOOGLE_APPLICATION_CREDENTIALS",
        ) from None
    session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]  # google-auth is untyped

    def get_json(url: str) -> dict[str, Any]:
        response = session.get(url, timeout=30)
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    return GcpReader(get_json, project)


# --- the offline graph ------------------------------------------------------------------------


def _mock_outputs(typ: str, name: str, inputs: dict[str, Any], out: dict[str, Any], m: MockSession) -> None:
    """What pulumi-gcp computes for a resource: its selfLink and project, and the few outputs the
    components read."""
    kind = typ.split(":")[-1].lower()
    out["selfLink"] = f"https://www.googleapis.com/compute/v1/projects/{MOCK_PROJECT}/{kind}s/{out['name']}"
    out["project"] = inputs.get("project", MOCK_PROJECT)
    if typ == "gcp:serviceaccount/account:Account":
        out["email"] = f"{inputs['accountId']}@{MOCK_PROJECT}.iam.gserviceaccount.com"
    elif typ == "gcp:tpu/v2Vm:V2Vm":
        out["state"] = "READY"  # a node made and up (Cloud TPU ``Node.State``)
        public = bool((inputs.get("networkConfig") or {}).get("enableExternalIps"))
        out["networkEndpoints"] = [
            {
                "ipAddress": m.next_ip("10.64.0"),
                "accessConfigs": [{"externalIp": m.next_ip("34.1.0")}] if public else [],
            }
        ]
    elif typ == "gcp:compute/instance:Instance":
        nics = []
        for nic in inputs.get("networkInterfaces", []):
            acs = [{**ac, "natIp": m.next_ip("34.2.0")} for ac in nic.get("accessConfigs", [])]
            nics.append({**nic, "networkIp": m.next_ip("10.64.0"), "accessConfigs": acs})
        out["networkInterfaces"] = nics
        out["currentStatus"] = "RUNNING"  # a VM made and up
    elif typ == "gcp:container/cluster:Cluster":
        _cluster_outputs(inputs, out)
    elif typ == "gcp:compute/instanceTemplate:InstanceTemplate":
        out["selfLinkUnique"] = out["selfLink"] + "?uniqueId=1"
    elif typ.endswith(("InstanceGroupManager:RegionInstanceGroupManager", "instanceGroupManager:InstanceGroupManager")):
        out["instanceGroup"] = out["selfLink"].replace("instancegroupmanagers", "instanceGroups")
    elif typ == "gcp:projects/iAMCustomRole:IAMCustomRole":
        # the role's name is its full path, what role bindings take (pulumi-gcp IAMCustomRole.name)
        out["name"] = f"projects/{out['project']}/roles/{inputs['roleId']}"
    elif typ == "gcp:compute/globalAddress:GlobalAddress":
        # reserved at `up`: the offline graph names it, so rules sharing it can be seen to
        out["address"] = f"<{name} address, known after pulumi up>"


def _cluster_outputs(inputs: dict[str, Any], out: dict[str, Any]) -> None:
    """What GKE fills in: the IP endpoint, the CA and the DNS endpoint ("uid.<region>.gke.goog",
    Container API ``DNSEndpointConfig.endpoint``), so the kubeconfig shows which one it uses."""
    location = inputs.get("location", "")
    out["endpoint"] = "192.0.2.11"
    out["masterAuth"] = {"clusterCaCertificate": mock.CA}
    endpoints = dict(inputs.get("controlPlaneEndpointsConfig") or {})
    dns = dict(endpoints.get("dnsEndpointConfig") or {})
    endpoints["dnsEndpointConfig"] = {**dns, "endpoint": f"gke-0123456789abcdef.{location}.gke.goog"}
    out["controlPlaneEndpointsConfig"] = endpoints


def _existing_cluster(args: Mapping[str, Any], m: MockSession) -> dict[str, Any]:
    name = args.get("name")
    project = args.get("project") or MOCK_PROJECT
    pools = [] if name in m.gke_without_workload_identity else [{"workloadPool": f"{project}.svc.id.goog"}]
    return {
        "name": name,
        "endpoint": "192.0.2.10",
        "masterAuths": [{"clusterCaCertificate": mock.CA}],
        "workloadIdentityConfigs": pools,
    }


_INVOKES: dict[str, Callable[[Mapping[str, Any], MockSession], dict[str, Any]]] = {
    "gcp:container/getCluster:getCluster": _existing_cluster,
    "gcp:secretmanager/getSecretVersionAccess:getSecretVersionAccess": lambda a, m: {
        "secret": a.get("secret"),
        "secretData": mock.SECRET_VALUE,  # never a real key
    },
    "gcp:organizations/getProject:getProject": lambda a, m: {
        "number": mock.ACCOUNT_NUMBER,
        "projectId": a.get("projectId") or MOCK_PROJECT,
    },
    "gcp:organizations/getClientConfig:getClientConfig": lambda a, m: {
        "project": MOCK_PROJECT,
        "region": "us-central1",
        "zone": "us-central1-a",
        "accessToken": "mock",
    },
}


def _mock_invoke(token: str, args: Mapping[str, Any], provider: object, m: MockSession) -> dict[str, Any] | None:
    answer = _INVOKES.get(token)
    return None if answer is None else answer(args, m)


# --- the plan's graph table -------------------------------------------------------------------


def _instance(i: dict[str, Any]) -> list[str]:
    s = i.get("scheduling", {})
    nic = (i.get("networkInterfaces") or [{}])[0]
    parts = [
        i.get("machineType", ""),
        f"{len(i.get('scratchDisks', []))} local SSD",
        f"{s.get('provisioningModel')} onHostMaintenance={s.get('onHostMaintenance')}",
        f"nic={nic.get('nicType')} external={'yes' if nic.get('accessConfigs') else 'no'}",
        f"boot={i.get('bootDisk', {}).get('initializeParams', {}).get('image', '').rsplit('/', 1)[-1]}",
    ]
    more: list[dict[str, Any]] = (i.get("networkInterfaces") or [])[1:]
    if more:
        kinds = sorted({str(n.get("nicType")) for n in more})
        parts.append(f"+{len(more)} NICs ({'/'.join(kinds)}) on {len({n.get('network') for n in more})} networks")
    if i.get("guestAccelerators"):
        parts.append(graph_text.fmt(i["guestAccelerators"]))
    if i.get("networkPerformanceConfig"):
        parts.append("TIER_1")
    if i.get("resourcePolicies"):
        parts.append("compact placement")
    return parts


def _tpu_vm(i: dict[str, Any]) -> list[str]:
    return [
        i.get("acceleratorType", ""),
        f"runtime={i.get('runtimeVersion')}",
        f"scheduling={graph_text.fmt(i.get('schedulingConfig', {}))}",
        f"external={graph_text.fmt(i.get('networkConfig', {}).get('enableExternalIps'))}",
        f"data disks={len(i.get('dataDisks', []))}",
    ]


def _firewall(i: dict[str, Any]) -> list[str]:
    fmt = graph_text.fmt
    return [
        f"from={fmt(i.get('sourceRanges') or i.get('sourceTags'))} allow={fmt(i.get('allows'))}",
        f"to={fmt(i['targetTags'])}" if i.get("targetTags") else "to=every node of its network",
    ]


def _url_map(i: dict[str, Any]) -> list[str]:
    """A URL map forwards to its backend, or answers every request with a redirect (HTTP to HTTPS)."""
    redirect = i.get("defaultUrlRedirect") or {}
    if redirect.get("httpsRedirect"):
        return [f"redirect to HTTPS ({redirect.get('redirectResponseCode', '')})"]
    return graph_text.any_inputs(i)


def _certificate(i: dict[str, Any]) -> list[str]:
    """A Google-managed certificate's names (the ones DNS must point at the load balancer)."""
    domains = (i.get("managed") or {}).get("domains") or []
    return [f"managed for {', '.join(domains)}" if domains else "", *graph_text.any_inputs(i)]


# --- the policy pack's resource types -----------------------------------------------------------

FIREWALL = "gcp:compute/firewall:Firewall"
INSTANCE = "gcp:compute/instance:Instance"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
REGION_TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
DISK = "gcp:compute/disk:Disk"
REGION_DISK = "gcp:compute/regionDisk:RegionDisk"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
REGION_MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"
AUTOSCALER = "gcp:compute/autoscaler:Autoscaler"
REGION_AUTOSCALER = "gcp:compute/regionAutoscaler:RegionAutoscaler"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
TPU_QUEUED = QUEUED_TPU_TYPE  # a dynamic resource: pulumi-gcp 10.2's queued node takes no service account
TEMPLATES = (TEMPLATE, REGION_TEMPLATE)
DISKS = (DISK, REGION_DISK)


CLOUD = Cloud(
    key=KEY,
    title="Google Cloud",
    sdk_module="pulumi_gcp",
    own_modules=(
        "fullserver.catalog.refresh.gcp",
        "fullserver.catalog.refresh.compute",
        "fullserver.platforms.quota.gcp",
        "fullserver.platforms.network.gcp",
    ),
    refresh_sources={
        "gcp": RefreshSource("gcp.yaml", _machines_and_gpus, default=True),
        "gcp-zones": RefreshSource("gcp.yaml", _zones),
        "tpu": RefreshSource("tpu.yaml", _tpus, default=True),
    },
    price_refresh=PRICE_REFRESH,
    quota_reader=lambda table, project: gcp_reader(project),
    cli_install={"gcloud": "install the Google Cloud CLI (gcloud) and run `gcloud auth login`"},
    graph_summaries={
        "gcp:compute/uRLMap:URLMap": _url_map,
        "gcp:certificatemanager/certificate:Certificate": _certificate,
        INSTANCE: _instance,
        TPU_VM: _tpu_vm,
        DISK: graph_text.disk,
        FIREWALL: _firewall,
    },
    policy_reader="policy.clouds.gcp",
    bucket_scheme="gs",
    mock_outputs=_mock_outputs,
    mock_invoke=_mock_invoke,
    mock_config={"gcp:project": MOCK_PROJECT},
    check_config=lambda config, where: check_gcp_project(config.get("gcp:project"), where),
    compute_types=(INSTANCE, *TEMPLATES, TPU_VM, TPU_QUEUED),
)
