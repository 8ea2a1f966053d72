"""The pack as the Pulumi CLI meets it: its files, the ``PolicyPack`` arguments, and the analyzer.

``PolicyPack(...)`` starts a gRPC server and blocks forever, so ``policy/__main__.py`` is never
imported: its source is checked to do nothing but pass ``pack_args()`` on, and those arguments are
checked against ``PolicyPack``'s signature. The analyzer servicer ``PolicyPack`` would serve is
built directly and sent real protobuf requests, so the policies also run the wire path: props from
a ``Struct`` (numbers become floats), the unknown-value proxy, config and enforcement levels.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy.policy import _PolicyAnalyzerServicer
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from policy import guardrails as g
from policy.resources import AWS_LAUNCH_TEMPLATE, AWS_SECURITY_GROUP
from tests.policy.conftest import CapturedStack

PACK = Path(__file__).resolve().parents[2] / "policy"
EXPECTED = {
    "no-open-admin-ports": EnforcementLevel.MANDATORY,
    "imdsv2-required": EnforcementLevel.MANDATORY,
    "encrypted-disks": EnforcementLevel.MANDATORY,
    "public-ip-by-profile": EnforcementLevel.MANDATORY,
    "no-api-key-in-clear": EnforcementLevel.MANDATORY,
    "autostop-grants-scoped": EnforcementLevel.MANDATORY,
    "ephemeral-expiry": EnforcementLevel.MANDATORY,
    "balance-minimums": EnforcementLevel.ADVISORY,
    "production-on-demand-or-reserved": EnforcementLevel.MANDATORY,
    "monthly-budget": EnforcementLevel.MANDATORY,
}
STACK_POLICIES = {"autostop-grants-scoped", "balance-minimums", "monthly-budget", "no-api-key-in-clear"}


def test_main_only_starts_the_pack() -> None:
    tree = ast.parse((PACK / "__main__.py").read_text())
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    assert all(isinstance(n, ast.ImportFrom) for n in body[:-1])
    call = body[-1]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert ast.unparse(call.value) == "PolicyPack(**pack_args())"


def test_pack_args_fit_policy_pack() -> None:
    args = g.pack_args()
    inspect.signature(PolicyPack).bind(**args)  # raises on an unknown or missing argument
    assert re.fullmatch(r"[a-zA-Z0-9-_.]{1,100}", args["name"])
    assert args["enforcement_level"] is EnforcementLevel.MANDATORY
    policies = args["policies"]
    assert {p.name: p.enforcement_level for p in policies} == EXPECTED
    assert len({p.name for p in policies}) == len(policies)
    assert {p.name for p in policies if isinstance(p, StackValidationPolicy)} == STACK_POLICIES
    assert all(isinstance(p, ResourceValidationPolicy) for p in policies if p.name not in STACK_POLICIES)
    assert all(p.description and p.severity is not None for p in policies)


def test_analyzer_info_carries_every_policy_and_config_schema() -> None:
    """What ``pulumi policy publish`` and the CLI read from the pack (GetAnalyzerInfo)."""
    info = _servicer().GetAnalyzerInfo(None, None)
    assert info.name == g.PACK_NAME
    policies = {p.name: p for p in info.policies}
    assert set(policies) == set(EXPECTED)
    budget = json_format.MessageToDict(policies["monthly-budget"].configSchema.properties)
    assert budget["maxMonthlyUsd"]["type"] == "number"
    assert budget["hoursPerMonth"]["default"] == 730


def test_pack_files() -> None:
    meta = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert meta["runtime"]["name"] == "python" and meta["description"]
    reqs = [
        line.strip()
        for line in (PACK / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert any(r.startswith("pulumi-policy") for r in reqs)
    assert "-e .." in reqs  # fullserver itself, so policies load its profiles and catalog


def _servicer(config: dict[str, dict[str, Any]] | None = None) -> Any:
    servicer: Any = _PolicyAnalyzerServicer(g.PACK_NAME, "0.1.0", g.POLICIES, EnforcementLevel.MANDATORY)
    if config:
        request = proto.ConfigureAnalyzerRequest()
        for name, props in config.items():
            entry = request.policyConfig[name]
            entry.enforcementLevel = proto.MANDATORY
            entry.properties.update(props)
        servicer.Configure(request, None)
    return servicer


def _struct(props: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(props)
    return s


def _analyze(servicer: Any, typ: str, props: dict[str, Any], name: str = "r") -> Any:
    return servicer.Analyze(
        proto.AnalyzeRequest(type=typ, properties=_struct(props), urn=f"urn:x::{name}", name=name), None
    )


def test_resource_policy_through_the_analyzer(captured: dict[str, CapturedStack]) -> None:
    sg = dict(captured["exp-aws-spot"].one(AWS_SECURITY_GROUP).inputs)
    assert _analyze(_servicer(), AWS_SECURITY_GROUP, sg).diagnostics == []
    sg["ingress"] = [{**sg["ingress"][0], "cidrBlocks": ["0.0.0.0/0"]}]
    diags = _analyze(_servicer(), AWS_SECURITY_GROUP, sg).diagnostics
    assert [d.policyName for d in diags] == ["no-open-admin-ports"]
    assert diags[0].enforcementLevel == proto.MANDATORY and "22 (SSH)" in diags[0].message


def test_unknown_value_during_preview_is_reported_not_raised(captured: dict[str, CapturedStack]) -> None:
    lt = dict(captured["train-p5-cluster"].one(AWS_LAUNCH_TEMPLATE).inputs)
    lt["metadataOptions"] = {**lt["metadataOptions"], "httpTokens": UNKNOWN_STRING_VALUE}
    diags = _analyze(_servicer(), AWS_LAUNCH_TEMPLATE, lt).diagnostics
    assert [d.policyName for d in diags] == ["imdsv2-required"]
    assert "during preview" in diags[0].message and diags[0].enforcementLevel == proto.ADVISORY


def _stack_request(stack: CapturedStack) -> Any:
    request = proto.AnalyzeStackRequest()
    handles = {r.outputs["id"]: r.urn for r in stack.resources}
    for r in stack.resources:
        res = request.resources.add(type=r.type, name=r.name, urn=r.urn, properties=_struct(r.outputs))
        for key, value in r.inputs.items():
            urns = sorted({handles[v] for v in _strings(value) if v in handles})
            if urns:
                res.propertyDependencies[key].urns.extend(urns)
    return request


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return set()


def test_stack_policies_through_the_analyzer(captured: dict[str, CapturedStack]) -> None:
    stack = captured["train-p5-cluster"]
    ok = _servicer({"monthly-budget": {"maxMonthlyUsd": 1_000_000}}).AnalyzeStack(_stack_request(stack), None)
    assert ok.diagnostics == [] and ok.not_applicable == []
    unset = _servicer().AnalyzeStack(_stack_request(stack), None)
    assert [n.policy_name for n in unset.not_applicable] == ["monthly-budget"]
    tight = _servicer({"monthly-budget": {"maxMonthlyUsd": 1000}}).AnalyzeStack(_stack_request(stack), None)
    assert [d.policyName for d in tight.diagnostics] == ["monthly-budget"]
    assert "policy-time estimate" in tight.diagnostics[0].message
