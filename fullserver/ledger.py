"""The resource-type ledger: every resource type the components can build answers three questions
before it ships — what name its provider accepts, what bills it, and which quota counts it.

Guards kept as hand-written lists per surface missed whatever was added next (Helm releases with
no name rule, node pools with no quota, system disks with no price), so the answers live in one
data file (``catalog/data/resources.yaml``) and a test evaluates every graph the components build
and refuses a type the ledger does not account for, in one line naming the three questions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fullserver.catalog.network import DATA_DIR, RESOURCES_FILE
from fullserver.errors import InputError
from fullserver.platforms import name_rules
from fullserver.platforms.quota import QuotaTable
from fullserver.sources import Source, check_cited
from fullserver.yamlio import parse, read_yaml

QUESTIONS = "its name rule (the provider's limit and alphabet), the cost line that bills it (or free) and the quota that counts it (or none)"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Exempt(_Strict):
    """A question answered "not applicable": why, and the source that says so."""

    why: str = Field(alias="none")
    source: str


class Free(_Strict):
    why: str = Field(alias="free")
    source: str


class Billed(_Strict):
    line: str
    """The cost line's item (``CostLine.item``) that bills the type."""


class Counted(_Strict):
    counts: tuple[str, ...]
    """Quota keys (``quotas.yaml`` ``quotas``) or whole sections (``gcp_gpus``) the plan names for it."""


class Entry(_Strict):
    name: Literal["rule"] | Exempt
    price: Billed | Free
    quota: Counted | Exempt


class Ledger(_Strict):
    sources: dict[str, Source]
    types: dict[str, Entry]

    def unaccounted(self, types: Iterable[str]) -> list[str]:
        """One line per type the ledger does not answer for (what a new resource must add)."""
        return [f"{t}: not in {RESOURCES_FILE}; add {QUESTIONS}" for t in sorted(set(types)) if t not in self.types]

    def without_rule(self) -> list[str]:
        """Types whose ledger entry says ``rule`` while no platform declares one (and the reverse)."""
        lines = []
        for t, entry in sorted(self.types.items()):
            declared = bool(name_rules(t))
            if (entry.name == "rule") != declared:
                said = "says 'rule'" if entry.name == "rule" else "says no name"
                lines.append(
                    f"{t}: {RESOURCES_FILE} {said} but the platforms declare {'a' if declared else 'no'} name rule"
                )
        return lines

    def billed_by(self, type_token: str) -> str | None:
        """The cost line that bills ``type_token``, or ``None``: free."""
        price = self.types[type_token].price
        return price.line if isinstance(price, Billed) else None


@functools.lru_cache(maxsize=2)
def load_ledger(path: Path = DATA_DIR / RESOURCES_FILE) -> Ledger:
    """The ledger, checked whole: every exemption cites a source the file lists."""
    ledger = parse(Ledger, read_yaml(path), str(path))
    for t, entry in ledger.types.items():
        for question, answer in (("name", entry.name), ("price", entry.price), ("quota", entry.quota)):
            if isinstance(answer, Exempt | Free):
                check_cited(f"{path}: types.{t}.{question}", answer.source, ledger.sources)
    if not ledger.types:
        raise InputError(str(path), "lists no resource types", "add the types the components build")
    return ledger


def quota_keys(table: QuotaTable, ref: str) -> set[str]:
    """The quota keys a ledger reference names: one key of ``quotas``, or every key a section of
    the table (``aws_vcpu_groups``, ``gcp_gpus``, ``tpu_generations`` ...) refers to."""
    if ref in table.quotas:
        return {ref}
    section = getattr(table, ref, None) if ref in QuotaTable.model_fields else None
    if not isinstance(section, dict):
        raise InputError(
            f"{RESOURCES_FILE}: quota '{ref}'", "is neither a quota key nor a section of quotas.yaml", "name one"
        )
    found: set[str] = set()
    for value in section.values():
        texts = [value] if isinstance(value, str) else _strings(value.model_dump())
        found |= {t for t in texts if t in table.quotas}
    return found


def _strings(data: object) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []
