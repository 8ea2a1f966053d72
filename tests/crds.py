"""Schemas of the custom resources the manifests carry, written from their publishers' references
(``tests/data/crds/``, each with its source and the date it was read), and one validator per kind."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

CRDS = Path(__file__).parent / "data" / "crds"


@cache
def validator(kind: str) -> jsonschema.Draft202012Validator:
    """The schema of ``kind`` (``computeclass.schema.json`` for ``ComputeClass``), itself checked."""
    schema = json.loads((CRDS / f"{kind.lower()}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def validate(obj: dict[str, Any]) -> None:
    """Raises ``jsonschema.ValidationError`` where ``obj`` breaks its kind's schema."""
    validator(obj["kind"]).validate(obj)
