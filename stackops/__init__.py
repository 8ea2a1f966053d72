"""Stack operations on Pulumi's Automation API: ephemeral CI stacks and the janitor.

Kept outside ``fullserver/`` on purpose: the core imports no Pulumi, so ``fullserver plan`` stays
fast and runs without the CLI. This package depends on the core (to validate and plan the config
it deploys), never the other way round; the command line imports it lazily, inside commands.

Design notes: docs/design/stackops.md.
"""

from __future__ import annotations
