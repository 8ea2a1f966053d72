"""The ``nodes`` / ``nodeGroups`` output rows: one shape for the components that write them, the
package schema that declares them, and ``fullserver verify`` that reads them."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from fullserver.nodes import NodeAccess, NodeAccessOutput, NodeGroupAccess, NodeGroupAccessOutput
from fullserver.platforms import aws, gcp


@pytest.mark.parametrize(("model", "row"), [(NodeAccess, NodeAccessOutput), (NodeGroupAccess, NodeGroupAccessOutput)])
def test_the_schema_type_has_exactly_the_models_output_keys(model: type[BaseModel], row: type) -> None:
    aliases = {f.alias or name for name, f in model.model_fields.items()}
    assert set(typing.get_type_hints(row)) == aliases


def test_a_node_round_trips_through_its_output_row() -> None:
    node = NodeAccess(
        name="i-0abc",
        private_ip="10.0.1.4",
        user="ubuntu",
        keys=True,
        via="ssm",
        proxy_command=aws.ssm_proxy("i-0abc", "us-east-1"),
    )
    row = node.exported()
    assert row["proxyCommand"][:3] == ["aws", "ssm", "start-session"] and row["privateIp"] == "10.0.1.4"
    assert NodeAccess.model_validate(row) == node


def test_behind_a_proxy_the_host_key_is_pinned_under_the_name_and_directly_under_the_public_address() -> None:
    proxied = NodeAccess(
        name="train-0",
        private_ip="10.128.0.2",
        public_ip="34.1.1.1",
        user="ubuntu",
        keys=True,
        via="iap",
        proxy_command=gcp.iap_proxy("train-0", "us-central1-a", "p"),
    )
    assert proxied.address == "train-0"
    assert proxied.model_copy(update={"via": "ssh", "proxy_command": []}).address == "34.1.1.1"
