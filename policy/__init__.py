"""fullserver's guardrail policy pack: ``policy.guardrails`` assembles it, one module per policy.

``policy/__main__.py`` is what ``pulumi preview --policy-pack policy/`` runs; it only starts the
pack (``PolicyPack`` serves gRPC and never returns), so nothing imports it.
"""
