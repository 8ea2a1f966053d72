"""The policy pack's entry point: ``PolicyPack(...)`` starts the analyzer server and blocks forever,
so this file does nothing else; the policies and their arguments live in ``policy.guardrails``."""

from pulumi_policy import PolicyPack

from policy.guardrails import pack_args

PolicyPack(**pack_args())
