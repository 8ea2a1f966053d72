"""Physical names every provider accepts, for every stack name Pulumi accepts (``fullserver.naming``)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fullserver import naming
from fullserver.platforms import name_rules

TG = "aws:lb/targetGroup:TargetGroup"
ALB = "aws:lb/loadBalancer:LoadBalancer"
ROLE = "aws:iam/role:Role"
NET = "gcp:compute/network:Network"
SA = "gcp:serviceaccount/account:Account"
MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"
RFC1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
ELB = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?")

# Pulumi's stack-name rule: 1-100 of letters, digits, '-', '_', '.'.
stack_names = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", min_size=1, max_size=100
)


@pytest.mark.parametrize(
    ("type_token", "logical"),
    [(TG, "serve-aws-tg"), (ALB, "serve-aws-realtime-alb"), (ROLE, "train-p5-cluster-role"), (NET, "exp-gcp-net")],
)
def test_a_name_that_fits_is_kept_so_existing_stacks_keep_their_resources(type_token: str, logical: str) -> None:
    assert naming.fit(type_token, logical) == logical


def test_a_target_group_of_a_long_stack_fits_elbs_32_characters_with_its_autoname() -> None:
    """pulumi-aws refuses a target group autoname over 32 characters rather than shortening it."""
    fitted = naming.fit(TG, "serve-realtime-production-east-tg")
    physical = naming.autoname(fitted)
    assert len(physical) <= 32 and ELB.fullmatch(physical) and fitted.endswith("-tg")


@pytest.mark.parametrize("stack", ["Team_ML.Serve.v2", "serve_llama.70b", "internal-api", "x" * 100])
def test_a_load_balancer_name_is_elbs_alphabet_and_never_internal(stack: str) -> None:
    physical = naming.autoname(naming.fit(ALB, f"{stack}-alb"))
    assert len(physical) <= 32 and ELB.fullmatch(physical) and not physical.startswith("internal-")


def test_compute_engine_names_are_lowercase_rfc1035_labels_of_63() -> None:
    for stack in ["Team_ML.Serve.v2", "a" * 46, "9lives", "_x_"]:
        physical = naming.autoname(naming.fit(NET, f"{stack}-autoscaler"))
        assert len(physical) <= 63 and RFC1035.fullmatch(physical), physical


def test_service_account_ids_of_stacks_sharing_a_long_prefix_differ() -> None:
    """fs-{stack} cut to 30 made ...-staging-east and ...-staging-west ask for one id (409)."""
    east = naming.fit_name(SA, "fs-mlplatform-serve-realtime-staging-east", "accountId")
    west = naming.fit_name(SA, "fs-mlplatform-serve-realtime-staging-west", "accountId")
    assert east != west and all(6 <= len(n) <= 30 and RFC1035.fullmatch(n) for n in (east, west))
    assert len(naming.fit_name(SA, "fs-a", "accountId")) >= 6  # at least 6 characters


def test_names_that_differ_only_in_case_or_punctuation_stay_distinct() -> None:
    names = {naming.fit(NET, f"{s}-net") for s in ("team-ml", "Team-ML", "team_ml", "team.ml")}
    assert len(names) == 4


@settings(max_examples=300, deadline=None)
@given(stack=stack_names)
def test_every_rule_takes_every_stack_name_fitted_and_says_the_same_on_every_run(stack: str) -> None:
    for type_token in ("aws:lb/targetGroup:TargetGroup", ALB, ROLE, NET, SA, MIG, "gcp:tpu/v2Vm:V2Vm"):
        for rule in name_rules(type_token):
            text = f"fs-{stack}" if rule.field == "accountId" else f"{stack}-x"
            if rule.autoname and rule.field == "name":
                name = naming.fit(type_token, text)
                assert rule.problem(naming.autoname(name, rule)) is None, (rule, name)
                assert naming.fit(type_token, text) == name
            else:
                name = naming.fit_name(type_token, text, rule.field)
                assert rule.problem(name) is None, (rule, name)


def test_the_graph_check_names_the_resource_and_the_limit() -> None:
    rows = [
        (TG, "serve-realtime-production-east-tg", {}),
        (SA, "s-sa", {"accountId": "fs-Team"}),
        ("aws:ec2/vpc:Vpc", "whatever_name.is.fine", {}),
    ]
    problems = naming.graph_problems(rows)
    assert problems == [
        "serve-realtime-production-east-tg (aws:lb/targetGroup:TargetGroup): target group name "
        "'serve-realtime-production-east-tg-0a1b2c3' is 41 characters; ELBv2 CreateTargetGroup takes 1-32",
        "s-sa (gcp:serviceaccount/account:Account): service account id 'fs-Team' does not match "
        "[a-z]([a-z0-9-]*[a-z0-9])? (IAM service accounts)",
    ]


def test_a_name_the_provider_lowercases_itself_is_kept_where_lowercase_fits() -> None:
    """pulumi-gcp lowercases a network's autoname (lowercaseAutoName), not a firewall's: a stack
    named "Team" built its network as team-net-xxxxxxx, which keeps its logical name (and URN)."""
    assert naming.fit(NET, "Team-net") == "Team-net"
    assert naming.autoname("Team-net", name_rules(NET)[0]) == "team-net" + naming.AUTONAME_SUFFIX
    firewall = naming.fit("gcp:compute/firewall:Firewall", "Team-ssh")
    assert firewall != "Team-ssh" and RFC1035.fullmatch(naming.autoname(firewall))


# --- Kubernetes objects and Helm releases (fullserver.platforms.kubernetes) -------------------------

RELEASE = "kubernetes:helm.sh/v3:Release"
SERVICE = "kubernetes:core/v1:Service"
JOB = "kubernetes:batch/v1:Job"
SECRET = "kubernetes:core/v1:Secret"
HELM = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
"""helm/helm pkg/chartutil/validate_name.go, as capacity.md section 10 quotes it (53 characters)."""


def test_pulumi_kubernetes_autonames_with_eight_hex_characters_and_the_bridges_with_seven() -> None:
    release = name_rules(RELEASE)[0]
    secret = name_rules(SECRET)[0]
    assert naming.autoname("plugin", release) == "plugin-0a1b2c3d"
    assert naming.autoname("s", secret) == "s-0a1b2c3d"
    assert naming.autoname("tg", name_rules(TG)[0]) == "tg" + naming.AUTONAME_SUFFIX == "tg-0a1b2c3"
    # 44 characters and its 9-character autoname make Helm's 53; a 45th breaks it, where 7 hex would not.
    assert naming.graph_problems([(RELEASE, "r" * 44, {})]) == []
    (problem,) = naming.graph_problems([(RELEASE, "r" * 45, {})])
    assert problem.endswith(
        f"Helm release name '{'r' * 45}-0a1b2c3d' is 54 characters; Helm (chartutil.ValidateReleaseName) takes 1-53"
    )


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("nvidia-device-plugin", True),
        ("a.b-c.d9", True),
        ("9lives", True),
        ("a" * 53, True),
        ("a" * 54, False),
        ("Team-ml", False),
        ("team_ml", False),
        ("a..b", False),
        ("a-.b", False),
        ("a.-b", False),
        ("-a", False),
        ("a.", False),
    ],
)
def test_the_helm_rule_is_helms_own_regular_expression_and_53_characters(name: str, valid: bool) -> None:
    helm_takes = bool(HELM.fullmatch(name)) and len(name) <= 53
    assert helm_takes is valid
    assert (name_rules(RELEASE)[0].problem(name) is None) is valid


def test_a_service_name_is_an_rfc_1035_label_and_a_job_name_a_subdomain_of_63() -> None:
    service = name_rules(SERVICE)[0]
    job, subdomain = name_rules(JOB)
    assert service.field == job.field == "metadata.name" and subdomain.field == "spec.template.spec.subdomain"
    assert service.problem("9lives") is not None and job.problem("9lives") is None
    assert service.problem("a.b") is not None and job.problem("a.b") is None and subdomain.problem("a.b") is not None
    assert job.problem("j" * 63) is None and job.problem("j" * 64) is not None
    assert name_rules(SECRET)[0].problem("s" * 253) is None and name_rules(SECRET)[0].problem("s" * 254) is not None


@settings(max_examples=200, deadline=None)
@given(stack=stack_names)
def test_every_stack_name_fits_every_kubernetes_rule_stably(stack: str) -> None:
    for type_token in (RELEASE, SERVICE, JOB, SECRET, "kubernetes:storage.k8s.io/v1:StorageClass"):
        for rule in name_rules(type_token):
            if rule.autoname and rule.field == "name":
                name = naming.fit(type_token, stack)
                assert rule.problem(naming.autoname(name, rule)) is None, (rule, name)
            name = naming.fit_name(type_token, stack, rule.field)
            assert rule.problem(name) is None and naming.fit_name(type_token, stack, rule.field) == name


def test_room_kept_after_a_name_is_room_for_what_the_api_derives_from_it() -> None:
    """An Indexed Job's pods are named <job>-<index> as hostnames (DNS labels of 63)."""
    assert naming.fit_name(JOB, "train", "metadata.name", room=3) == "train"
    fitted = naming.fit_name(JOB, "A" * 100, "metadata.name", room=3)
    assert len(fitted) == 60 and name_rules(JOB)[0].problem(f"{fitted}-15") is None


def test_the_graph_check_reads_the_objects_a_config_group_creates_and_metadata_names() -> None:
    rows: list[tuple[str, str, dict[str, Any]]] = [
        (SECRET, "s", {"metadata": {"name": "team_ml.serve-serving"}}),
        (SECRET, "ok", {"metadata": {"name": "team-ml.serve-serving"}}),
        (
            "kubernetes:yaml/v2:ConfigGroup",
            "Team-workload",
            {
                "objs": [
                    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "9-serve"}},
                    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "9-serve"}},
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {"name": "t"},
                        "spec": {"template": {"spec": {"subdomain": "t.x"}}},
                    },
                ]
            },
        ),
    ]
    assert naming.graph_problems(rows) == [
        "s (kubernetes:core/v1:Secret): Secret name 'team_ml.serve-serving' does not match "
        r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)* (Kubernetes object names)",
        "Team-workload/9-serve (kubernetes:core/v1:Service): Service name '9-serve' does not match "
        "[a-z]([a-z0-9-]*[a-z0-9])? (Kubernetes object names)",
        "Team-workload/t (kubernetes:batch/v1:Job): pod subdomain 't.x' does not match "
        "[a-z0-9]([a-z0-9-]*[a-z0-9])? (Kubernetes object names)",
    ]


def test_the_gke_gateway_fits_its_names_as_naming_does_without_importing_it() -> None:
    from fullserver.platforms import gke_gateway

    long = "Team_ML.v2-" + "x" * 80
    for token in (gke_gateway.GLOBAL_ADDRESS, gke_gateway.CERTIFICATE, gke_gateway.CERTIFICATE_MAP_ENTRY):
        assert gke_gateway.fit_name(token, long) == naming.fit_name(token, long) != long
        assert gke_gateway.fit_name(token, "prod-gateway") == "prod-gateway"
