"""Where a platform's resources' cloud project is read (``PlatformRules.project``): shared by the
platforms of a cloud that has projects; each cloud's module names its key and variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class CloudProject:
    """The cloud project a platform's resources are created in: the stack's config ``key``, else
    the first of ``env`` set, in the order its Pulumi provider reads them (so ``fullserver`` and
    ``pulumi up`` agree on it, and a stack that names none is refused before ``up`` is)."""

    key: str
    env: tuple[str, ...]
    cloud: str
    """The cloud in words, for messages."""

    def of(self, config: Mapping[str, object], environ: Mapping[str, str]) -> tuple[str, str] | None:
        """(the project, where it was read: the key or a variable), or ``None``: nowhere."""
        if config.get(self.key):
            return str(config[self.key]), self.key
        return next(((environ[v], v) for v in self.env if environ.get(v)), None)
