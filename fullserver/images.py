"""The boot images cloud nodes start from when a stack names none, and whether their publisher
still patches them.

The defaults are pointers that follow the latest release (an SSM parameter, an image family),
but a pointer follows one OS or framework version: once its publisher stops patching that
version, every new node boots an unpatched image. So each default carries its publisher's
end-of-patch date (``catalog/data/images.yaml``), and the plan warns before the date comes and
after it has passed. Where the publisher gives no date, the plan says so instead of guessing.
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from fullserver.catalog import Catalog
from fullserver.catalog.network import DATA_DIR, IMAGES_FILE
from fullserver.errors import InputError
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.sources import Source, check_cited
from fullserver.yamlio import parse, read_yaml

WARN_DAYS = 90
"""Warn this many days before an end of patch: time to move a stack to the next image."""


class BootImage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    platform: Platform
    selector: str
    """What picks it on its platform: the accelerator kind (AWS) or the framework (Compute Engine)."""
    name: str
    """What the component boots: an SSM parameter path (AWS), an image family (Compute Engine)."""
    what: str
    basis: str
    """The OS or framework version whose end of patch ends the image's."""
    end_of_patch: dt.date | None
    source: str


class ImageTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sources: dict[str, Source]
    images: list[BootImage]


@functools.lru_cache(maxsize=4)
def load_images(path: Path = DATA_DIR / IMAGES_FILE) -> ImageTable:
    """The image table, checked whole: every image names a known source, one default per selector."""
    table = parse(ImageTable, read_yaml(path), str(path))
    seen: set[tuple[Platform, str]] = set()
    for i, image in enumerate(table.images):
        where = f"{path}: images[{i}]"
        check_cited(where, image.source, table.sources)
        if (image.platform, image.selector) in seen:
            raise InputError(where, f"a second default for {image.platform.value} {image.selector}", "keep one")
        seen.add((image.platform, image.selector))
    return table


def default_image(platform: Platform, selectors: tuple[str, ...], table: ImageTable | None = None) -> BootImage | None:
    """The image a node of ``platform`` boots when the stack names none: the first of
    ``selectors`` (framework, accelerator kind) the platform keys its defaults by, else its
    ``other`` or ``gpu`` default; ``None`` where it has none."""
    images = (table or load_images()).images
    mine = {i.selector: i for i in images if i.platform is platform}
    return next((mine[s] for s in (*selectors, "other", "gpu") if s in mine), None)


def _named(platform: Platform, image: str, table: ImageTable) -> BootImage | None:
    """The table's entry for an image a stack names itself (a family or parameter the table holds)."""
    bare = image.removeprefix("resolve:ssm:").rsplit("/family/", 1)[-1]
    return next((i for i in table.images if i.platform is platform and bare == i.name), None)


def support_warning(
    platform: Platform, selectors: tuple[str, ...], image: str | None, today: dt.date, table: ImageTable | None = None
) -> str | None:
    """What the plan says about the boot image's patches: past or near its end of patch, or no
    date published. ``None`` for an image the stack names that the table does not hold (its
    owner's to track) and for a platform without defaults (TPU runtimes, bare metal)."""
    table = table or load_images()
    found = _named(platform, image, table) if image else default_image(platform, selectors, table)
    if found is None:
        return None
    url = table.sources[found.source].url
    pin = "pin fullserver:image to a supported image"
    if found.end_of_patch is None:
        return f"boot image {found.name}: its publisher gives no end-of-patch date for {found.basis} ({url}); check it, or {pin}"
    days = (found.end_of_patch - today).days
    if days < 0:
        return f"boot image {found.name} is past its end of patch ({found.basis}, {found.end_of_patch}, {url}); {pin}"
    if days <= WARN_DAYS:
        return (
            f"boot image {found.name} stops being patched in {days} days ({found.basis}, {found.end_of_patch},"
            f" {url}); {pin} before then"
        )
    return None


def plan_image_warnings(plan: StackPlan, catalog: Catalog, today: dt.date) -> list[str]:
    """The plan's warning about its boot image, if any (the plan command adds it, as it adds stale prices)."""
    spec = plan.spec
    known = catalog.accelerators.get(spec.accelerator or "")
    kind = known.kind.value if known is not None else "gpu"
    found = support_warning(spec.platform, (spec.framework, kind), spec.image, today)
    return [found] if found else []
