"""Stack operations on Pulumi's Automation API: ephemeral CI stacks and the janitor.

Kept outside ``fullserver/`` on purpose: the core imports no Pulumi, so ``fullserver plan`` stays
fast and runs without the CLI. This package depends on the core (to validate and plan the config
it deploys), never the other way round; the command line imports it lazily, inside commands.

Exit codes come from the one table in ``fullserver.errors`` (``EXIT_PULUMI``,
``EXIT_LEFT_BEHIND``...): a CI script reads the same number for the same outcome from every command.

Nothing here prints: what a person should hear while an operation runs is a typed event
(``events``) handed to the ``notify`` callable the caller passes; the command line prints them
(``fullserver_cli.stackops_view``), a Python caller may collect them. ``tests/test_layering.py``
fails on any print here.

Modules, one concept each: ``limits`` (what a person may ask for: TTL spellings, bounds on every
duration and count), ``naming`` (stack names and the tags the janitor finds them by),
``stackconfig`` (the config copied from a base stack, planned offline), ``workspace`` (the
Automation API workspace and the Pulumi CLI), ``events`` (what an operation tells a person, as
data), ``teardown`` (destroy and remove, retried), ``signals`` (SIGINT/SIGTERM become a
teardown), ``outputs`` (what the command gets, secrets only by name), ``leftover`` (what a failed
cleanup left, and how to clean it up), ``ephemeral`` (the run) and ``janitor`` (the backstop).
"""

from __future__ import annotations
