"""Dedicated bare metal over SSH: pinned-key transport, probe, audit, reversible configuration.

Layers, with one-way dependencies (paramiko is imported only in ``ssh``; Pulumi never here):
see the design notes.

Design notes: docs/design/bare-metal.md.
"""
