"""What every model of stack keys shares: the camelCase base (Pulumi config keys are camelCase),
finite numbers, and the length bounds of cloud names, images and paths. ``fullserver.workload``
(every key) and ``fullserver.serving_keys`` (``fullserver:serving``) build on it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt
from pydantic.alias_generators import to_camel

# Profiles, regions, zones, accelerator names, reservations: cloud names are at most 63 characters.
MAX_NAME = 63
# Image references: an SSM parameter path or a full GCP image URL.
MAX_IMAGE = 1_024
MAX_PATH = 4_096

Count = Annotated[StrictInt, Field(ge=1)]


def finite(most: float, *, positive: bool = False) -> Any:
    """A number (not ``true``, not text, not inf/nan) in ``[0, most]`` or ``(0, most]``."""
    if positive:
        return Field(strict=True, gt=0, le=most, allow_inf_nan=False)
    return Field(strict=True, ge=0, le=most, allow_inf_nan=False)


class Camel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)
