"""fullserver's guardrail policy pack: the policies live in ``policy.guardrails``.

``policy/__main__.py`` is what ``pulumi preview --policy-pack policy/`` runs; it only starts the
pack (``PolicyPack`` serves gRPC and never returns), so nothing imports it.
"""
