"""The resource-type ledger, held over every graph the components can build: each type has a name
rule (or says why it takes no name), a cost line that bills it (or says why it is free) and a
quota that counts it (or says why none), and the plan of every graph holds to those answers.

A type missing from ``catalog/data/resources.yaml`` fails here in one line naming it and the three
questions, so adding a resource to a component means answering them.
"""

from __future__ import annotations

import pulumi_aws as aws
import pytest

from components.graph import evaluate
from fullserver.ledger import Billed, Counted, load_ledger, quota_keys
from fullserver.quotas import load_quota_table
from tests.components.matrix import PLATFORMS, Variant, matrix, resource_types

pytestmark = pytest.mark.xdist_group("ledger")
"""One worker runs this module: the matrix (about a minute of graphs) is built once, not once per worker."""


@pytest.fixture(scope="module")
def variants() -> tuple[Variant, ...]:
    return matrix()


def test_the_matrix_reaches_every_platform_and_every_axis(variants: tuple[Variant, ...]) -> None:
    platforms = {v.plan.spec.platform.value for v in variants}
    assert set(PLATFORMS) | {"bare-metal"} <= platforms
    labels = " ".join(v.label for v in variants)
    for axis in (
        "profile=",
        "reserved=",
        "way-in",
        "deployWorkload=True",
        "attached-cluster",
        "created-cluster",
        "plain-http",
        "private-endpoint",
        "irsa",
        "2x8xH100",
    ):
        assert axis in labels, axis
    # serving over HTTPS (the examples' default) and over plain HTTP, on the VMs and the node pools
    https = {t for v in variants for t in resource_types(v.graph)}
    assert {"gcp:compute/targetHttpsProxy:TargetHttpsProxy", "kubernetes:gateway.networking.k8s.io/v1:Gateway"} <= https
    assert len(variants) >= 120


def test_every_resource_type_in_every_graph_is_in_the_ledger(variants: tuple[Variant, ...]) -> None:
    seen = {t for v in variants for t in resource_types(v.graph)}
    assert load_ledger().unaccounted(seen) == []


def test_a_type_the_ledger_does_not_know_fails_in_one_line_naming_the_three_questions() -> None:
    def program() -> None:
        aws.sns.Topic("work")

    graph = evaluate(program, "ledger-demo")
    (line,) = load_ledger().unaccounted(resource_types(graph))
    assert line.startswith("aws:sns/topic:Topic: not in resources.yaml; add its name rule")
    assert "the cost line that bills it (or free)" in line and "the quota that counts it (or none)" in line


def test_a_type_said_to_have_a_name_rule_has_one_and_every_rule_is_in_the_ledger() -> None:
    assert load_ledger().without_rule() == []


def test_every_billed_type_has_its_cost_line_in_the_plan(variants: tuple[Variant, ...]) -> None:
    ledger = load_ledger()
    missing = []
    for v in variants:
        # a line the catalog cannot price yet is named in ``unpriced`` (the total says it is a lower bound)
        items = {line.item for line in v.plan.cost.lines} | {u.split(" (")[0] for u in v.plan.cost.unpriced}
        for t in sorted(resource_types(v.graph)):
            entry = ledger.types.get(t)
            if entry is not None and isinstance(entry.price, Billed) and entry.price.line not in items:
                missing.append(f"{v.label}: {t} is billed by '{entry.price.line}', which the plan lacks")
    assert missing == []


def test_every_counted_type_has_its_quota_in_the_plan(variants: tuple[Variant, ...]) -> None:
    ledger, table = load_ledger(), load_quota_table()
    missing = []
    for v in variants:
        codes = {(q.service, q.code) for q in v.plan.quotas}
        for t in sorted(resource_types(v.graph)):
            entry = ledger.types.get(t)
            if entry is None or not isinstance(entry.quota, Counted):
                continue
            wanted = {
                (table.quotas[k].service, table.quotas[k].code)
                for r in entry.quota.counts
                for k in quota_keys(table, r)
            }
            if not wanted & codes:
                missing.append(
                    f"{v.label}: {t} counts against {list(entry.quota.counts)}, which the plan names none of"
                )
    assert missing == []


def test_every_quota_the_ledger_names_is_in_the_quota_table() -> None:
    table = load_quota_table()
    for t, entry in load_ledger().types.items():
        if isinstance(entry.quota, Counted):
            for ref in entry.quota.counts:
                assert quota_keys(table, ref), (t, ref)
