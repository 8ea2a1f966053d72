"""A small, hand-made catalog and profile set, so sizing and cost can be specified exactly."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from fullserver.catalog import Catalog, load_catalog
from fullserver.profiles import Profile, load_profiles

SOURCE = {"title": "test fixture", "url": "https://example.invalid/fixture", "as_of": "2026-01-01"}


def shape(name: str, acc: str | None, count: int, vcpus: int, mem: float, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "platform": extra.pop("platform", "aws-gpu"),
        "family": name.split(".")[0],
        "vcpus": vcpus,
        "memory_gib": mem,
        "network_gbps": extra.pop("net", 25),
        "source": "fx",
    }
    if acc:
        out |= {"accelerator": acc, "accelerator_count": count}
    return out | extra


def write_catalog(directory: Path, data: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "fixture.yaml").write_text(yaml.safe_dump({"sources": {"fx": SOURCE}, **data}))
    load_catalog.cache_clear()
    return directory


MINI: dict[str, Any] = {
    "accelerators": [
        {"name": "G24", "kind": "gpu", "vendor": "test", "memory_gib": 24, "aliases": ["g24-alias"], "source": "fx"},
        {"name": "TPUX", "kind": "tpu", "vendor": "test", "memory_gib": 16, "source": "fx"},
    ],
    "shapes": [
        # Four 1-GPU shapes: small is short on RAM, mid and wide tie on price, big is dearer.
        shape("small.x", "G24", 1, 4, 16, local_nvme_disks=1, local_nvme_disk_gb=250),
        shape("mid.x", "G24", 1, 8, 64, local_nvme_disks=1, local_nvme_disk_gb=250),
        shape("wide.x", "G24", 1, 16, 64),
        shape("big.x", "G24", 1, 32, 128, local_nvme_disks=2, local_nvme_disk_gb=1000),
        shape("quad.x", "G24", 4, 48, 256, net=100, efa_interfaces=4, interconnect="efa"),
        shape("quadne.x", "G24", 4, 48, 256, net=100),
    ],
    "shape_prices": [
        {"shape": "small.x", "region": "r-1", "on_demand_usd_hour": 1.0, "spot_usd_hour": 0.4, "source": "fx"},
        {"shape": "mid.x", "region": "r-1", "on_demand_usd_hour": 2.0, "spot_usd_hour": 0.8, "source": "fx"},
        {"shape": "wide.x", "region": "r-1", "on_demand_usd_hour": 2.0, "source": "fx"},
        {"shape": "big.x", "region": "r-1", "on_demand_usd_hour": 4.0, "spot_usd_hour": 1.5, "source": "fx"},
        {"shape": "big.x", "region": "r-2", "on_demand_usd_hour": 5.0, "source": "fx"},
        {"shape": "quad.x", "region": "r-1", "on_demand_usd_hour": 10.0, "source": "fx"},
        {"shape": "quadne.x", "region": "r-1", "on_demand_usd_hour": 8.0, "source": "fx"},
    ],
    "tpu_types": [
        {
            "name": "tx-4",
            "generation": "tx",
            "accelerator": "TPUX",
            "chips": 4,
            "hosts": 1,
            "topology": "2x2",
            "host_vcpus": 100,
            "host_memory_gib": 200,
            "runtime_versions": ["tx-base", "tx-jax"],
            "zones": ["r-1-a"],
            "source": "fx",
        },
        {
            "name": "tx-16",
            "generation": "tx",
            "accelerator": "TPUX",
            "chips": 16,
            "hosts": 4,
            "topology": "4x4",
            "host_vcpus": 100,
            "host_memory_gib": 200,
            "runtime_versions": ["tx-base"],
            "zones": ["r-1-a"],
            "source": "fx",
        },
    ],
    "tpu_prices": [
        {"generation": "tx", "region": "r-1", "on_demand_usd_chip_hour": 1.5, "spot_usd_chip_hour": 0.5, "source": "fx"}
    ],
    "storage_prices": [
        {
            "provider": "aws",
            "kind": "gp3",
            "region": "r-1",
            "usd_gib_month": 0.08,
            "usd_iops_month": 0.005,
            "usd_mbps_month": 0.04,
            "free_iops": 3000,
            "free_mbps": 125,
            "source": "fx",
        },
        {"provider": "gcp", "kind": "pd-balanced", "region": "r-1", "usd_gib_month": 0.1, "source": "fx"},
    ],
    "egress_prices": [{"provider": "aws", "region": "r-1", "usd_per_gb": 0.09, "source": "fx"}],
    "commitment_discounts": [
        {"provider": "aws", "applies_to": "quad", "term_years": 1, "discount": 0.4, "source": "fx"}
    ],
}

PROFILE = textwrap.dedent(
    """\
    description: test profile
    stage: fine-tuning
    purpose: training
    platforms: [aws-gpu, tpu-vm]
    pricing: on-demand
    lifecycle: {mode: persistent}
    balance:
      cpu_per_accelerator: {value: 8, reason: eight threads feed one accelerator}
      ram_per_accelerator_memory: {value: 2.0, reason: twice the accelerator memory in host RAM}
      ram_floor_gib: {value: 32, reason: a floor for the operating system}
    """
)


@pytest.fixture
def mini_catalog(tmp_path: Path) -> Catalog:
    return load_catalog(write_catalog(tmp_path / "catalog", MINI))


def write_profiles(directory: Path, profiles: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in profiles.items():
        (directory / f"{name}.yaml").write_text(text)
    return directory


@pytest.fixture
def base_profile(tmp_path: Path) -> Profile:
    return load_profiles(write_profiles(tmp_path / "profiles", {"base": PROFILE}))["base"]
