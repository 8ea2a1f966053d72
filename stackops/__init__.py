"""Stack operations on Pulumi's Automation API: ephemeral CI stacks and the janitor.

Kept outside ``fullserver/`` on purpose: the core imports no Pulumi, so ``fullserver plan`` stays
fast and runs without the CLI. This package depends on the core (to validate and plan the config
it deploys), never the other way round; ``fullserver.cli`` imports it lazily, inside commands.
"""

from __future__ import annotations

EXIT_LEFTOVER = 5
"""Exit code when a stack (and perhaps its cloud resources) was left behind: CI must notice."""
