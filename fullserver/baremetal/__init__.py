"""Dedicated bare metal over SSH: pinned-key transport, probe, audit, reversible configuration.

Layers, with one-way dependencies (paramiko is imported only in ``ssh``; Pulumi never here):

* ``inventory`` — targets, pinned host keys, inventory files (pure);
* ``transport`` — the ``Runner`` protocol every probe and step talks to, and ``Result`` (pure);
* ``ssh`` — the paramiko implementation of ``Runner`` (bounded waits, retries, keepalive);
* ``probe`` — one compound read-only script → ``HostFacts`` (parsers are pure);
* ``audit`` — ``HostFacts`` + profile → the core ``BalanceReport``; fleets fan out per host;
* ``steps`` — configuration steps: check → apply → verify, describe, undo, journaled on the host.
"""
