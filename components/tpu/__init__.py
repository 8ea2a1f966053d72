"""Cloud TPU environments (``TpuVmEnvironment``: a TPU VM or a queued slice) and their registry
entry. A TPU lives in Google Cloud: its provider, project, network and identity are GCP's
(``components.gcp``).

Importing this package loads no provider SDK: ``pulumi_gcp`` comes with the component module
(``components.tpu.environment``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components import gcp
from components.entry import PlatformEntry
from components.tpu.args import tpu_args
from fullserver.platform import Platform

if TYPE_CHECKING:
    import pulumi

    from fullserver.spec import EnvironmentSpec


def exports(spec: EnvironmentSpec, inner: pulumi.ComponentResource) -> dict[str, Any]:
    """A queued slice's ``cleanup``: what deletes it by hand if a destroy cannot."""
    if spec.tpu is not None and spec.tpu.queued:
        return {"cleanup": getattr(inner, "cleanup", "")}
    return {}


def _args(spec: EnvironmentSpec, catalog: Any, project: Any) -> Any:
    return tpu_args(spec, project)


ENTRY = PlatformEntry(
    platform=Platform.TPU_VM,
    component="components.tpu.environment:TpuVmEnvironment",
    args_key="tpu",
    args=_args,
    provider=gcp.provider,
    project=gcp.project,
    secret_command=gcp.secret_command,
    identity_exports={"serviceAccount": "service_account"},
    exports=exports,
)
