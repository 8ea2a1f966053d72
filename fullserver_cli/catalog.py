"""``fullserver catalog``: every shape with its main figures, prices and dated sources (``--json``:
every figure with its unit, source and age); ``catalog refresh``
rebuilds the data files from the providers' own published prices."""

from __future__ import annotations

import datetime as dt
import os
from typing import Annotated, Optional

import typer
from rich.text import Text

from fullserver import platforms
from fullserver.catalog import Catalog, load_catalog
from fullserver.catalog.staleness import source_age_days, source_ages
from fullserver.errors import FullserverError
from fullserver.platforms import rules_for
from fullserver_cli import render
from fullserver_cli.output import console, emit_json, fail

_NAMES = platforms.catalog_names()
_CATALOG_NAMES = f"{', '.join(_NAMES[:-1])} or {_NAMES[-1]}"
"""What ``--provider`` takes, in words (``platforms.catalog_names``): aws, gcp or tpu."""

catalog_app = typer.Typer(help="Catalog shapes, figures, prices and their sources.", rich_markup_mode=None)


@catalog_app.callback(invoke_without_command=True)
def catalog(
    ctx: typer.Context,
    provider: Annotated[Optional[str], typer.Option(help=_CATALOG_NAMES)] = None,
    accelerator: Annotated[Optional[str], typer.Option(help="model or alias, e.g. H100")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List catalog shapes with their figures, prices and dated sources (--json: every figure with unit, source and age); `refresh` rebuilds them."""
    if ctx.invoked_subcommand is not None:
        return
    today = dt.date.today()
    try:
        cat = load_catalog()
        offers = cat.offers
        if provider:
            wanted = {p for p in platforms.named(provider) if rules_for(p).supply.from_catalog}
            if not wanted:
                raise FullserverError("--provider", f"unknown provider '{provider}'", f"use {_CATALOG_NAMES}")
            offers = [o for o in offers if o.platform in wanted]
        if accelerator:
            name = _accelerator_filter(cat, accelerator)
            offers = [o for o in offers if o.accelerator == name]
    except FullserverError as exc:
        raise fail(exc) from None
    if as_json:
        ages = source_ages(cat, today)
        emit_json(
            {
                "shapes": [
                    {
                        "name": o.name,
                        "platform": o.platform.value,
                        "accelerator": o.accelerator,
                        "accelerators": o.total_accelerators,
                        "accelerator_memory_gib": o.host.accelerator_memory_gib,
                        "hosts": o.hosts,
                        "figures": {
                            k: {"value": f.value, "unit": f.unit, "source": f.source, "age_days": ages.get(f.source)}
                            for k, f in o.figures.items()
                        },
                        "prices": {
                            r: {
                                "on_demand_usd_hour": p.on_demand,
                                "spot_usd_hour": p.spot,
                                "source": p.source,
                                "spot_source": p.spot_from,
                                "age_days": source_age_days(cat, p.source, today),
                            }
                            for r, p in o.prices.items()
                        },
                    }
                    for o in offers
                ],
                "sources": {k: {**s.model_dump(mode="json"), "age_days": ages[k]} for k, s in cat.sources.items()},
            }
        )
        return
    con = console()
    con.print(render.catalog_table(offers))
    for n, key in enumerate(render.catalog_sources(offers), 1):
        src = cat.sources.get(key)
        line = Text.assemble(f"{n} ", (key, "bold"))
        if src:
            line.append(f": {src.title}, as of {src.as_of} ({src.as_of_kind}) <{src.url}>")
        con.print(line, overflow="fold")


def _accelerator_filter(cat: Catalog, name: str) -> str:
    try:
        return str(cat.accelerator(name, where="--accelerator").name)
    except FullserverError:
        # A family name such as "H100" may not be an alias: match by prefix.
        hits = sorted(a for a in cat.accelerators if a.lower().startswith(name.lower()))
        if len(hits) == 1:
            return hits[0]
        raise


@catalog_app.command("refresh")
def refresh(
    provider: Annotated[
        Optional[list[str]],
        typer.Option(
            "--provider",
            help="aws, aws-savings-plans (public files), aws-spot / aws-types (EC2 API, AWS credentials), gcp, "
            "tpu, gcp-zones (Compute Engine API, a project and a token) (repeatable; default aws, gcp, tpu)",
        ),
    ] = None,
    region: Annotated[
        Optional[list[str]], typer.Option("--region", help="also price this region (with providers of one cloud only)")
    ] = None,
    gcp_api_key_env: Annotated[
        str, typer.Option(help="environment variable holding the Cloud Billing API key (gcp, tpu)")
    ] = "FULLSERVER_GCP_API_KEY",
    gcp_project: Annotated[Optional[str], typer.Option(help="project whose machine types are read (gcp-zones)")] = None,
    gcp_token_env: Annotated[
        str, typer.Option(help="environment variable holding an OAuth access token (gcp-zones)")
    ] = "FULLSERVER_GCP_ACCESS_TOKEN",
    prune: Annotated[bool, typer.Option("--prune", help="remove rows the provider no longer prices")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="show what would change; write nothing (the providers are still read)")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Rebuild the data files from the providers' published prices and print what changed.

    AWS: the public Price List bulk offer files (no credentials); aws-savings-plans: the public
    Savings Plans files, a No Upfront Compute Savings Plan discount per shape. aws-spot and
    aws-types: the EC2 API's current spot prices and the shapes' own figures (AWS credentials; pip
    install 'fullserver[refresh]'). GCP and TPU: the Cloud Billing Catalog API (an API key, read from
    the environment so it never lands in shell history). gcp-zones: where each GCP machine series is
    sold, from the Compute Engine API (--gcp-project, and a token such as gcloud auth
    print-access-token in the environment).
    """
    from fullserver.catalog.refresh import DEFAULT_PROVIDERS, PROVIDER_FILES
    from fullserver.catalog.refresh import refresh as run_refresh

    providers = provider or list(DEFAULT_PROVIDERS)
    try:
        unknown = [p for p in providers if p not in PROVIDER_FILES]
        if unknown:
            raise FullserverError("--provider", f"unknown provider '{unknown[0]}'", f"use {', '.join(PROVIDER_FILES)}")
        if region and len({PROVIDER_FILES[p] for p in providers}) != 1:
            raise FullserverError("--region", "region names differ between clouds", "give providers of one cloud only")
        reports = run_refresh(
            providers,
            today=dt.date.today(),
            gcp_api_key=os.environ.get(gcp_api_key_env) or None,
            gcp_project=gcp_project,
            gcp_access_token=os.environ.get(gcp_token_env) or None,
            regions=region or (),
            prune=prune,
            write=not dry_run,
        )
    except FullserverError as exc:
        raise fail(exc) from None
    if as_json:
        emit_json([r.to_dict() for r in reports])
        return
    con = console()
    for report in reports:
        for line in report.lines():
            con.print(line, markup=False, overflow="fold")
        if dry_run:
            con.print(report.diff(), markup=False, overflow="fold")
