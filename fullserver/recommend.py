"""Recommend a profile and platform from what a team knows about its workload.

The rules are a table, not a decision tree: each rule says which answers it applies to, which
profile or platform it favours (or disfavours) by how much, and why, in the words of practice.
Every (profile, platform) pair the profiles allow is scored by the rules that match; the
ranking shows each pair's reasons and what the same job costs there: every platform is priced
for the same accelerator capacity (``fullserver.comparable``), labelled with its pricing model.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from fullserver import platforms
from fullserver.catalog import Catalog
from fullserver.comparable import (
    DEDICATED,
    ON_DEMAND,
    Capacity,
    as_on_demand,
    capacity,
    of_spec,
    slice_covering,
)
from fullserver.cost import estimate
from fullserver.errors import FullserverError, InputError
from fullserver.kube import SIZED_AS
from fullserver.plan import default_region
from fullserver.platform import AcceleratorKind, Platform
from fullserver.platforms import rules_for
from fullserver.profiles import Profile, Purpose
from fullserver.sizing import spec_for, suggest
from fullserver.workload import Dedicated, DedicatedHost, Workload, check_region_name

Maturity = Literal["exploring", "adapting", "stable", "production"]
GPU_PLATFORMS = tuple(p for p in Platform if rules_for(p).hourly_gpus)

MAX_GPUS_PER_NODE = 16
"""HGX/DGX-2-class servers carry 16 GPUs, the most any node holds."""

MAX_TOP = 100
"""The most choices ``recommend`` shows: far above the (profile, platform) pairs there are."""


class Needs(BaseModel):
    """The questionnaire; every answer has a default so a team can start with one or two."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    framework: Literal["pytorch", "jax", "tensorflow", "other"] = "pytorch"
    purpose: Purpose = Purpose.TRAINING
    maturity: Maturity | None = None
    """``None``: not said. Training then starts at experimentation; inference is planned by traffic."""
    scale: Literal["single", "multi-node"] = "single"
    portability: bool = False
    kubernetes: bool = False
    """The team already runs Kubernetes (GKE or EKS): node pools on its clusters are a choice."""
    cloud: str = "any"
    """A provider some cloud platform registers (``platforms.clouds``), or ``any``."""
    traffic: Literal["realtime-variable", "steady-batch"] | None = None
    """Inference only (``check_needs``); ``None``: not said, which plans for real-time traffic."""
    demand: Literal["variable", "steady"] = "variable"
    region: str | None = None
    gpu: str | None = None
    gpu_count: int | None = Field(default=None, gt=0, le=MAX_GPUS_PER_NODE)
    tpu: str | None = None
    dedicated_monthly_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @field_validator("cloud")
    @classmethod
    def _known_cloud(cls, cloud: str) -> str:
        """The registry's clouds, refused in the words pydantic uses for a fixed choice."""
        known = [*platforms.clouds(), "any"]
        if cloud not in known:
            quoted = [f"'{k}'" for k in known]
            expected = f"{', '.join(quoted[:-1])} or {quoted[-1]}"
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return cloud

    @field_validator("region")
    @classmethod
    def _region_name(cls, region: str | None) -> str | None:
        return None if region is None else check_region_name(region)


@dataclass(frozen=True)
class Rule:
    """When every ``when`` answer matches, favour ``target`` (a profile or platform) by ``weight``.

    ``when`` holds every condition the ``reason`` states, so a reason is shown only where it is
    true of the answers: "at scale" needs ``scale: multi-node``, "on Google Cloud" a cloud that
    allows it. A ``never_first`` rule ranks its target after every choice no such rule matches,
    whatever the scores; the higher its level, the later (1: the team lacks what the choice needs,
    such as a Kubernetes cluster; 2: the choice breaks a requirement, such as portability).
    """

    when: dict[str, tuple[object, ...]]
    target: str
    weight: int
    reason: str
    never_first: int = 0

    def matches(self, needs: Needs) -> bool:
        return all(getattr(needs, key) in values for key, values in self.when.items())


GPU = tuple(p.value for p in GPU_PLATFORMS)
TRAINING = (Purpose.TRAINING,)
INFERENCE = (Purpose.INFERENCE,)
SETTLED = ("stable", "production")
CHANGING = ("exploring", "adapting")
REALTIME = ("realtime-variable", None)
"""Inference traffic when said or not: real-time with variable load is what serving plans for."""


def _rules(targets: tuple[str, ...], when: dict[str, tuple[object, ...]], weight: int, reason: str) -> list[Rule]:
    return [Rule(when, t, weight, reason) for t in targets]


KUBERNETES = tuple(p.value for p in SIZED_AS)
"""The node-pool platforms (``fullserver.kube``): sized as VMs, run on a Kubernetes cluster."""

RULES: list[Rule] = [
    # A team already on Kubernetes -> node pools; one that is not is never handed a cluster first.
    *_rules(
        KUBERNETES,
        {"kubernetes": (True,)},
        3,
        "the team already runs Kubernetes: accelerator node pools join its clusters, tooling and access",
    ),
    *[
        Rule(
            {"kubernetes": (False,)},
            t,
            -3,
            "a node pool needs a Kubernetes cluster to run and operate, and the team runs none",
            never_first=1,
        )
        for t in KUBERNETES
    ],
    # Workload maturity -> training profile.
    Rule(
        {"purpose": TRAINING, "maturity": ("exploring",)},
        "experimentation",
        4,
        "changing, exploratory work wants short-lived, cheap, flexible capacity",
    ),
    Rule(
        {"purpose": TRAINING, "maturity": (None,)},
        "experimentation",
        4,
        "no maturity given: training starts with short-lived, cheap experiments",
    ),
    Rule(
        {"purpose": TRAINING, "maturity": ("adapting",)},
        "fine-tuning",
        4,
        "adapting a validated model: longer single-node runs with real checkpoints",
    ),
    Rule(
        {"maturity": SETTLED, "purpose": TRAINING, "scale": ("multi-node",)},
        "scale-training",
        4,
        "stable, repeatable training at scale justifies committed capacity and a fast fabric",
    ),
    Rule(
        {"maturity": ("stable",), "scale": ("single",), "purpose": TRAINING},
        "fine-tuning",
        2,
        "stable single-node training",
    ),
    # Traffic shape -> inference profile: serving is planned by traffic, whatever the maturity.
    Rule(
        {"purpose": INFERENCE, "traffic": REALTIME},
        "realtime-inference",
        4,
        "real-time serving with variable traffic: on-demand replicas behind a managed group",
    ),
    Rule(
        {"purpose": INFERENCE, "traffic": ("steady-batch",)},
        "batch-inference",
        4,
        "steady, high-volume batches: throughput per dollar, preemption tolerated",
    ),
    Rule(
        {"demand": ("steady",), "maturity": SETTLED},
        "dedicated-steady",
        4,
        "steady, predictable demand can justify dedicated servers paid monthly",
    ),
    Rule({"portability": (True,)}, "dedicated-steady", 1, "a dedicated server is portable across providers"),
    Rule(
        {"demand": ("variable",)}, "dedicated-steady", -4, "variable demand leaves dedicated capacity idle but paid for"
    ),
    Rule(
        {"maturity": CHANGING, "purpose": TRAINING},
        "scale-training",
        -3,
        "committed multi-node capacity is premature for changing work",
    ),
    # Framework, maturity, traffic and cloud -> platform.
    *_rules(
        GPU, {"framework": ("pytorch",)}, 2, "PyTorch-first work favours GPUs (CUDA kernels and libraries come first)"
    ),
    *_rules(GPU, {"maturity": CHANGING}, 1, "changing work favours flexible GPUs"),
    *_rules(
        GPU,
        {"purpose": INFERENCE, "traffic": REALTIME},
        2,
        "real-time, variable-batch inference favours GPUs",
    ),
    # Each platform's own leanings, then the team's cloud -> platform (``PlatformRules.leanings``,
    # ``cloud_affinity``). A choice's reasons are sorted by weight, ties in this order.
    *(
        rule
        for r in platforms.all_rules()
        for rule in (
            *(Rule(dict(lean.when), r.platform.value, lean.weight, lean.why, lean.never_first) for lean in r.leanings),
            *(
                Rule({"cloud": (cloud,)}, r.platform.value, weight, why)
                for cloud, (weight, why) in r.cloud_affinity.items()
            ),
        )
    ),
]


@dataclass(frozen=True)
class Note:
    """When every ``when`` answer matches, the ranking says ``text`` beside it (formatted with the
    answers): answers that contradict each other, or that no rule can rank by, are ranked as the
    text says, never silently."""

    when: dict[str, tuple[object, ...]]
    text: str

    def matches(self, needs: Needs) -> bool:
        return all(getattr(needs, key) in values for key, values in self.when.items())


NOTES: list[Note] = [
    Note(
        {"portability": (True,), "cloud": tuple(platforms.clouds())},
        "--portable keeps the option to move between providers, and --cloud {cloud} names one: the ranking"
        " favours {cloud}'s platforms for the cloud and puts no TPU first for portability (drop --cloud to"
        " compare providers, or --portable if the team stays on {cloud})",
    ),
    Note(
        {"demand": ("steady",), "maturity": CHANGING},
        "--demand steady with --maturity {maturity}: steady demand favours dedicated servers only for stable"
        " or production work, so it changes nothing in this ranking",
    ),
    Note(
        {"purpose": INFERENCE, "demand": ("steady",), "traffic": REALTIME},
        "--demand steady, and inference is ranked for real-time traffic with a variable load (--traffic unset"
        " or realtime-variable): say --traffic steady-batch if the load is steady batches",
    ),
    Note(
        {"purpose": TRAINING, "maturity": ("production",), "scale": ("single",), "demand": ("variable",)},
        "no training profile is for production work on a single node, so no profile is favoured: say"
        " --maturity stable (fine-tuning) or --scale multi-node (scale-training)",
    ),
]
"""What the ranking says of answers it cannot honour together (``Recommendation.notes``)."""


class Priced(BaseModel):
    """What one choice costs, and what that price is of: ``capacity`` (accelerator memory) held,
    its ratio to the question's ``reference`` job, and the ``pricing`` model of ``usd_month``.
    ``on_demand_usd_month`` prices the same shape on demand, the one model every cloud shape has:
    ties are broken on it, per unit of the reference capacity."""

    model_config = ConfigDict(frozen=True)

    offer: str | None
    region: str
    usd_month: float | None
    note: str
    pricing: str | None = None
    capacity: str | None = None
    reference: str | None = None
    capacity_ratio: float | None = None
    on_demand_usd_month: float | None = None


class Choice(BaseModel):
    model_config = ConfigDict(frozen=True)

    profile: str
    platform: Platform
    score: int
    reasons: list[str]
    cost: Priced


class Recommendation(BaseModel):
    """The ranking, and what it says of the answers (``NOTES``): ``fullserver recommend`` shows both."""

    model_config = ConfigDict(frozen=True)

    choices: list[Choice]
    notes: list[str]


def notes_for(needs: Needs) -> list[str]:
    """The notes whose answers all match, in ``NOTES`` order."""
    answers = needs.model_dump()
    return [n.text.format_map(answers) for n in NOTES if n.matches(needs)]


def _region(needs: Needs, platform: Platform, catalog: Catalog) -> str:
    """The asked region where the platform has it, else its nearest peer on that platform's cloud."""
    return default_region(platform, needs.region or platforms.default_region(needs.cloud), catalog)


def _reference_gpus(needs: Needs, profile: Profile) -> tuple[str, int, int]:
    """(GPU model, GPUs per node, nodes): the GPUs asked for (else one L4, or 8 H100s per node at
    scale) on the nodes the profile runs."""
    multi = needs.scale == "multi-node"
    return (
        needs.gpu or ("H100-80GB" if multi else "L4"),
        needs.gpu_count or (8 if multi else 1),
        2 if multi and profile.topology.nodes == "multi" else 1,
    )


def reference_job(needs: Needs, profile: Profile, catalog: Catalog) -> Capacity:
    """The job every platform of a profile is priced to hold (``_reference_gpus``); a GPU platform
    runs exactly it and a TPU is sized to it."""
    accelerator, per_node, nodes = _reference_gpus(needs, profile)
    return capacity(accelerator, per_node * nodes, catalog)


def _workload(needs: Needs, profile: Profile, platform: Platform, catalog: Catalog) -> Workload:
    data: dict[str, object] = {
        "profile": profile.name,
        "platform": platform,
        "region": _region(needs, platform, catalog),
        "framework": needs.framework,
    }
    rules = rules_for(platform)
    if rules.supply.named_by_type:
        generation = "TPU-v5p" if needs.scale == "multi-node" else "TPU-v5e"
        fits = slice_covering(reference_job(needs, profile, catalog), generation, catalog)
        data["accelerator"] = needs.tpu or (fits.name if fits else None)
        offer = catalog.offer(str(data["accelerator"]))
        if offer and data["region"] not in offer.prices and offer.prices:
            data["region"] = sorted(offer.prices)[0]  # TPU generations live in few regions
    else:
        data["accelerator"], data["accelerator_count"], data["nodes"] = _reference_gpus(needs, profile)
    if not rules.supply.from_catalog:
        data["dedicated"] = _dedicated(
            needs, profile, platform, str(data["accelerator"]), int(str(data["accelerator_count"])), catalog
        )
    return Workload.model_validate(data)


def _dedicated(
    needs: Needs, profile: Profile, platform: Platform, accelerator: str, count: int, catalog: Catalog
) -> Dedicated:
    """A server exactly at the profile's minimums: what the monthly price must buy."""
    acc = catalog.accelerator(accelerator)
    bal = profile.balance_for(platform)
    cores = math.ceil(bal.cpu_per_accelerator.value * count)
    ram = max(bal.ram_floor_gib.value, bal.ram_per_accelerator_memory.value * count * acc.memory_gib)
    nvme = (bal.nvme_gib_per_accelerator.value * count) if bal.nvme_gib_per_accelerator else 0
    net = (bal.network_gbps_per_accelerator.value * count) if bal.network_gbps_per_accelerator else 1
    host = DedicatedHost(
        accelerator=acc.name,
        accelerator_count=count,
        vcpus=cores * 2,
        physical_cores=cores,
        memory_gib=math.ceil(ram),
        local_nvme_gib=nvme,
        network_gbps=net,
    )
    return Dedicated(monthly_usd=needs.dedicated_monthly_usd or 1.0, host=host)


def _price(needs: Needs, profile: Profile, platform: Platform, catalog: Catalog) -> Priced:
    reference = reference_job(needs, profile, catalog)
    declared = not rules_for(platform).supply.from_catalog
    if declared and needs.dedicated_monthly_usd is None:
        return Priced(
            offer=None,
            region="-",
            usd_month=None,
            note="give --dedicated-monthly-usd to price a dedicated server",
            reference=reference.describe(),
        )
    try:
        work = _workload(needs, profile, platform, catalog)
        spec = spec_for(profile, work, platform, catalog, "recommend")
        if declared:
            note = "a server meeting the profile's minimums at the given monthly price"
        else:
            shape = spec.tpu.accelerator_type if spec.tpu else f"{spec.accelerator_count} x {spec.accelerator}"
            note = f"{shape} x {spec.nodes} node(s)"
        cost = estimate(spec, profile, work, catalog)
        on_demand = cost.usd_month if cost.basis == ON_DEMAND and cost.complete else None
        if cost.basis not in (ON_DEMAND, DEDICATED):
            od_cost = estimate(*as_on_demand(spec, profile), work, catalog)
            on_demand = od_cost.usd_month if od_cost.complete else None  # a lower bound breaks no tie
        if not cost.complete:
            note += f"; a lower bound: {', '.join(cost.unpriced)} not priced"
    except FullserverError as exc:
        return Priced(
            offer=None, region=needs.region or "-", usd_month=None, note=exc.what, reference=reference.describe()
        )
    held = of_spec(spec)
    return Priced(
        offer=spec.offer,
        region=spec.region,
        usd_month=cost.usd_month,
        note=note,
        pricing=cost.basis,
        capacity=held.describe() if held else None,
        reference=reference.describe(),
        capacity_ratio=held.ratio_to(reference) if held else None,
        on_demand_usd_month=on_demand,
    )


def _tie_price(choice: Choice) -> tuple[bool, float]:
    """What breaks a tie: the on-demand price per month of the reference capacity. One pricing
    model and equal capacity, so a smaller shape or a spot price never wins by being cheaper."""
    od, ratio = choice.cost.on_demand_usd_month, choice.cost.capacity_ratio
    if od is None or not ratio:
        return True, 0.0
    return False, od / ratio


def _close(value: str, names: dict[str, str]) -> str:
    """The names close to ``value`` (matched against names and aliases, case-insensitively)."""
    hits = difflib.get_close_matches(value.lower(), sorted(names), n=3, cutoff=0.5)
    return ", ".join(dict.fromkeys(names[h] for h in hits))


def check_region(region: str | None, catalog: Catalog) -> None:
    """A region some cloud platform prices, or one whose nearest peer it prices: the regions
    ``plan`` accepts, refused in its words. Why: an unknown region ranked unpriced rows and
    exited 0 where ``plan`` refuses it with "did you mean"."""
    if region is None:
        return
    clouds = [rules_for(p) for p in Platform if rules_for(p).supply.from_catalog]
    known = {r for rules in clouds for r in (*catalog.regions(rules.platform), *rules.region_peers)}
    if region not in known:
        raise InputError("--region", f"no cloud prices in region '{region}'", suggest(region, known))


def check_needs(needs: Needs, catalog: Catalog, top: int) -> None:
    """What the questionnaire's model cannot check alone: the GPU and TPU named exist in the
    catalog, and ``top`` is a number of choices. An unknown model used to rank every choice
    with a note instead of failing, so ``--gpu H9000`` exited 0."""
    if not 1 <= top <= MAX_TOP:
        raise InputError("--top", f"{top} is not a number of choices to show", f"give 1 to {MAX_TOP}")
    if needs.traffic is not None and needs.purpose is not Purpose.INFERENCE:
        raise InputError(
            "--traffic",
            f"describes inference traffic, not {needs.purpose.value}",
            "drop it, or ask --purpose inference",
        )
    check_region(needs.region, catalog)
    if needs.gpu is not None:
        gpus = {
            alias: acc.name
            for acc in catalog.accelerators.values()
            if acc.kind is not AcceleratorKind.TPU
            for alias in (acc.name.lower(), *(a.lower() for a in acc.aliases))
        }
        if needs.gpu.lower() not in gpus:
            close = _close(needs.gpu, gpus)
            known = f"known GPUs: {', '.join(sorted(set(gpus.values())))}"
            tpu = needs.gpu.lower() in catalog.aliases
            raise InputError(
                "--gpu",
                f"'{needs.gpu}' is a TPU, not a GPU" if tpu else f"unknown GPU model '{needs.gpu}'",
                "price it with --tpu and a TPU type such as v5litepod-8"
                if tpu
                else (f"did you mean {close}? {known}" if close else known),
            )
        model = gpus[needs.gpu.lower()]
        counts = sorted({o.host.accelerator_count for o in catalog.offers if o.accelerator == model})
        if needs.gpu_count is not None and needs.gpu_count not in counts:
            raise InputError(
                "--gpu-count",
                f"no shape offers {needs.gpu_count} x {model} per node",
                f"{model} shapes have {', '.join(map(str, counts))} per node",
            )
    _check_tpu(needs, catalog)


def _check_tpu(needs: Needs, catalog: Catalog) -> None:
    """``--tpu`` names a type, asks for no GPU beside it and a cloud that sells TPUs: it was
    silently dropped beside ``--gpu`` or ``--cloud aws``."""
    if needs.tpu is not None and needs.gpu is not None:
        raise InputError("--tpu", "and --gpu both name the accelerator to price", "give one of them")
    sellers = sorted({rules_for(o.platform).provider for o in catalog.offers if o.name in catalog.slice_types})
    if needs.tpu is not None and needs.cloud != "any" and needs.cloud not in sellers:
        raise InputError("--tpu", f"TPUs are sold on {', '.join(sellers)}, not {needs.cloud}", "drop --tpu or --cloud")
    if needs.tpu is not None:
        types = {o.name.lower(): o.name for o in catalog.offers if o.name in catalog.slice_types}
        if needs.tpu.lower() not in types:
            key = catalog.aliases.get(needs.tpu.lower())
            generation = catalog.accelerators[key] if key else None
            if generation is not None and generation.kind is AcceleratorKind.TPU:
                of_it = sorted(o.name for o in catalog.offers if o.accelerator == generation.name)
                raise InputError(
                    "--tpu", f"'{needs.tpu}' is a TPU generation, not a type", f"name one of: {', '.join(of_it)}"
                )
            close = _close(needs.tpu, types)
            known = f"known TPU types: {', '.join(sorted(types.values()))}"
            raise InputError(
                "--tpu", f"unknown TPU type '{needs.tpu}'", f"did you mean {close}? {known}" if close else known
            )


def recommend(needs: Needs, profiles: dict[str, Profile], catalog: Catalog, top: int = 5) -> list[Choice]:
    """Rank (profile, platform) pairs by the rules that favour them; among equals, the cheapest
    per unit of the same capacity on the same pricing model (``_tie_price``).

    Only profiles for the question's purpose are ranked, and of those only the ones some rule
    favours (when any is): a platform's merits cannot make a profile for the wrong maturity
    stage the right one. A choice a ``never_first`` rule matches ranks after every other.
    Bad answers (``check_needs``) are refused in one line before anything is ranked.
    """
    check_needs(needs, catalog, top)
    scored: list[tuple[int, Profile, Platform, list[Rule]]] = []
    for profile in profiles.values():
        if profile.purpose is not needs.purpose:
            continue  # inference questions get inference profiles, training ones training profiles
        profile_score = sum(r.weight for r in RULES if r.target == profile.name and r.matches(needs))
        for platform in profile.platforms:
            matched = [r for r in RULES if r.target in (profile.name, platform.value) and r.matches(needs)]
            scored.append((profile_score, profile, platform, matched))
    if any(ps > 0 for ps, *_ in scored):
        scored = [s for s in scored if s[0] > 0]
    ranked = [
        (
            max((r.never_first for r in matched), default=0),
            Choice(
                profile=profile.name,
                platform=platform,
                score=sum(r.weight for r in matched),
                reasons=list(
                    dict.fromkeys(
                        f"{'+' if r.weight > 0 else '-'} {r.reason}" for r in sorted(matched, key=lambda r: -r.weight)
                    )
                ),
                cost=_price(needs, profile, platform, catalog),
            ),
        )
        for _, profile, platform, matched in scored
    ]
    ranked.sort(key=lambda t: (t[0], -t[1].score, *_tie_price(t[1]), t[1].profile, t[1].platform.value))
    return [choice for _, choice in ranked[:top]]


def recommendation(needs: Needs, profiles: dict[str, Profile], catalog: Catalog, top: int = 5) -> Recommendation:
    """``recommend``'s ranking with the notes on the answers it was ranked from."""
    return Recommendation(choices=recommend(needs, profiles, catalog, top), notes=notes_for(needs))
