"""Pulumi components that build the environment spec the core decided (they never choose sizes).

Design notes: docs/design/components.md.
"""
