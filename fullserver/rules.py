"""Rules shared by every layer (core, components, policy pack, stack operations, command line).

Each rule is written once here and called, never restated: the hours in a month the estimates
spread a price over, the label and tag keys an environment carries (and how a label value is
made one GCP accepts), what a disk costs a month, how a stack file is named, and which address
ranges are too wide for SSH (``check_ssh_ranges``, kept in ``fullserver.netcheck`` and offered
here). What differs by platform lives in ``fullserver.platforms``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fullserver.netcheck import check_ssh_ranges

if TYPE_CHECKING:  # the catalog imports profiles, which import these rules
    from fullserver.catalog.model import StoragePrice

__all__ = [
    "HOURS_PER_MONTH",
    "LABEL_ENVIRONMENT",
    "LABEL_EXPIRES",
    "LABEL_LIFECYCLE",
    "LABEL_OWNER",
    "LABEL_PROFILE",
    "LABEL_TTL",
    "MAX_HOURS_PER_MONTH",
    "STACK_FILE_GLOB",
    "TAG_BASE_STACK",
    "TAG_EPHEMERAL",
    "TAG_EXPIRES_AT",
    "TAG_PROFILE",
    "check_ssh_ranges",
    "disk_usd_month",
    "environment_labels",
    "gcp_label_text",
    "gcp_labels",
    "stack_file",
    "stack_name_problem",
    "stack_of_file",
]

# --- time ------------------------------------------------------------------------------------

HOURS_PER_MONTH = 730.0
"""A month of wall-clock hours as AWS and Google Cloud pricing pages use it (8,760 h / 12): every
monthly figure (cost estimate, policy budget, profile default) spreads hours over this."""

MAX_HOURS_PER_MONTH = 744
"""The longest month (31 x 24 h): the most productive hours a month can hold."""

# --- labels (GCP) and tags (AWS) on every resource, and tags on ephemeral stacks -----------------

LABEL_PROFILE = "fullserver-profile"
LABEL_ENVIRONMENT = "fullserver-environment"
LABEL_OWNER = "fullserver-owner"
LABEL_LIFECYCLE = "fullserver-lifecycle"
LABEL_TTL = "fullserver-ttl-hours"
LABEL_EXPIRES = "fullserver-expires-at"
"""Set by hand (or a team's own tooling) instead of a TTL: the policy pack accepts either."""

TAG_EPHEMERAL = "fullserver:ephemeral"
TAG_EXPIRES_AT = "fullserver:expires-at"
TAG_BASE_STACK = "fullserver:base-stack"
TAG_PROFILE = "fullserver:profile"
"""Stack tags ``fullserver ephemeral`` writes and the janitor and policy pack read; the policy pack
falls back to ``TAG_PROFILE`` for a resource without a profile label."""


def environment_labels(
    *, profile: str, environment: str, owner: str, lifecycle: str, ttl_hours: float | None
) -> dict[str, str]:
    """What every resource of an environment is labelled with: who it is for and when it may go.
    Policies and the janitor read these keys, so they are written here and nowhere else."""
    labels = {
        LABEL_PROFILE: profile,
        LABEL_ENVIRONMENT: environment,
        LABEL_OWNER: owner,
        LABEL_LIFECYCLE: lifecycle,
    }
    if ttl_hours is not None:
        labels[LABEL_TTL] = f"{ttl_hours:g}"
    return labels


GCP_LABEL_MAX = 63
"""GCP label keys and values: lowercase letters, digits, ``_`` and ``-``, at most 63 characters,
keys starting with a letter (Compute Engine "Labels" requirements). AWS tags are free text."""

_GCP_LABEL_BAD = re.compile(r"[^a-z0-9_-]")


def gcp_label_text(text: str) -> str:
    """``text`` in the GCP label alphabet: lowercased, other characters as ``-``, cut to 63."""
    return _GCP_LABEL_BAD.sub("-", text.lower())[:GCP_LABEL_MAX]


def gcp_labels(labels: dict[str, str]) -> dict[str, str]:
    """Labels valid on every GCP resource; keys that cannot start with a letter get a prefix."""
    out: dict[str, str] = {}
    for key, value in sorted(labels.items()):
        k = gcp_label_text(key)
        if not k[:1].isalpha():
            k = ("l-" + k)[:GCP_LABEL_MAX]
        out[k] = gcp_label_text(value)
    return out


# --- money -----------------------------------------------------------------------------------


def disk_usd_month(price: StoragePrice, gib: float, iops: float = 0, mbps: float = 0, disks: float = 1) -> float:
    """What ``disks`` disks of one kind cost a month: their GiB, plus the IOPS and throughput
    provisioned above each disk's free baseline (gp3: 3,000 IOPS and 125 MiB/s free; Hyperdisk
    Balanced: 3,000 and 140). ``gib``, ``iops`` and ``mbps`` are the totals over the disks."""
    return (
        gib * price.usd_gib_month
        + max(0.0, iops - price.free_iops * disks) * price.usd_iops_month
        + max(0.0, mbps - price.free_mbps * disks) * price.usd_mbps_month
    )


# --- stack files -------------------------------------------------------------------------------

STACK_FILE_PREFIX = "Pulumi."
STACK_FILE_SUFFIX = ".yaml"
STACK_FILE_GLOB = f"{STACK_FILE_PREFIX}*{STACK_FILE_SUFFIX}"
"""Pulumi's own stack config files: ``stacks/Pulumi.<stack>.yaml`` (``stackConfigDir: stacks``)."""

_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
"""Pulumi's stack-name rule (tokens.ParseStackName): 1-100 letters, digits, '-', '_', '.'."""


def stack_file(stack: str) -> str:
    """The file name that configures ``stack``: ``Pulumi.<stack>.yaml``."""
    return f"{STACK_FILE_PREFIX}{stack}{STACK_FILE_SUFFIX}"


def stack_of_file(file_name: str) -> str | None:
    """The stack a ``Pulumi.<stack>.yaml`` file name configures (not checked against Pulumi's
    rule, see ``stack_name_problem``); ``None`` when the name is not a stack file's."""
    if not (file_name.startswith(STACK_FILE_PREFIX) and file_name.endswith(STACK_FILE_SUFFIX)):
        return None
    return file_name[len(STACK_FILE_PREFIX) : -len(STACK_FILE_SUFFIX)]


def stack_name_problem(stack: str) -> str | None:
    """Why Pulumi would refuse ``stack`` as a stack name, or ``None``."""
    if _STACK_NAME.fullmatch(stack):
        return None
    return f"'{stack}' is not a stack name Pulumi accepts"
