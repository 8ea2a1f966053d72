"""Nothing secret is written into what a node boots from (issue 20).

EC2 user data and Compute Engine / Cloud TPU metadata are readable by anything on the node that
reaches the metadata service (and by whoever may describe the instance): the model server's secrets
go in by *name* only, and each node fetches them at start from SSM Parameter Store or Secret Manager
(``components.startup.model_server_script``). Here every AWS, GCP and TPU example stack is built
through the whole program with sentinel secret values in its config, and what its nodes boot from
is searched for them and for anything shaped like a key.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from components.graph import Graph, graph_for_config
from tests.components.test_graph import CLOUD_STACKS
from tests.components.test_program_config import _declared_defaults
from tests.core.test_stack_config import stack_config

GCP_CREDENTIALS = '{"type": "service_account", "private_key": "SENTINEL-GCP-CREDENTIALS"}'


def _private_key() -> str:
    """A fresh ed25519 key: the program installs its public half on the nodes (verify on up)."""
    key = Ed25519PrivateKey.generate()
    return key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption()).decode()


PRIVATE_KEY = _private_key()
SECRET_CONFIG = {"gcp:credentials": GCP_CREDENTIALS, "fullserver:sshPrivateKey": PRIVATE_KEY}
KEY_BODY = "".join(PRIVATE_KEY.splitlines()[1:-1])
KEY_SHAPES = [
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),  # an AWS access key id
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),  # a Hugging Face token
    re.compile(r"SENTINEL"),
]


def boot_texts(g: Graph) -> dict[str, str]:
    """What each node boots from, by resource: decoded user data, every metadata value."""
    out: dict[str, str] = {}
    for row in g.rows:
        inputs: dict[str, Any] = row.inputs
        if "userData" in inputs:
            out[f"{row.name} userData"] = base64.b64decode(inputs["userData"]).decode()
        for key, value in (inputs.get("metadata") or {}).items():
            out[f"{row.name} metadata.{key}"] = str(value)
        if "metadataStartupScript" in inputs:
            out[f"{row.name} metadataStartupScript"] = str(inputs["metadataStartupScript"])
        node = (
            inputs.get("tpu", {}).get("nodeSpecs", [{}])[0].get("node", {})
            if isinstance(inputs.get("tpu"), dict)
            else {}
        )
        for key, value in (node.get("metadata") or {}).items():
            out[f"{row.name} tpu metadata.{key}"] = str(value)
    return out


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_no_secret_reaches_user_data_or_metadata(stack: str) -> None:
    config = {**_declared_defaults(), **stack_config(stack), **SECRET_CONFIG}
    texts = boot_texts(graph_for_config(stack, config, full=True))
    # a queued TPU slice takes no node metadata at all (components.tpu.environment)
    assert texts or stack == "train-tpu-v5p-slice", f"{stack}: no node boot configuration found"
    for where, text in texts.items():
        for shape in KEY_SHAPES:
            assert not shape.search(text), f"{stack}: {where} holds {shape.pattern}"
        assert KEY_BODY[:40] not in "".join(text.split()), f"{stack}: {where} holds the private key"


def test_a_served_models_secrets_are_fetched_at_boot_by_name() -> None:
    """The serving stacks' API keys: named in the boot script, fetched from the cloud's store."""
    for stack, fetch in [
        ("serve-aws-realtime", "aws ssm get-parameter --region us-east-1 --name /serving-team/realtime/api-key"),
        ("serve-gcp-realtime", "gcloud secrets versions access latest --secret=serving-realtime-api-key"),
    ]:
        config = {**_declared_defaults(), **stack_config(stack)}
        scripts = [t for t in boot_texts(graph_for_config(stack, config, full=True)).values() if "VLLM_API_KEY" in t]
        assert scripts and all(fetch in s for s in scripts), stack
