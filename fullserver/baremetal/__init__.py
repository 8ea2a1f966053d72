"""Dedicated bare metal over SSH: pinned-key transport, probe, audit, reversible configuration.

Layers, with one-way dependencies (paramiko is imported only in ``ssh``; Pulumi never here):

* ``inventory`` — targets, pinned host keys, inventory files (pure);
* ``transport`` — the ``Runner`` protocol every probe and step talks to, and ``Result`` (pure);
* ``ssh`` — the paramiko implementation of ``Runner`` (bounded waits, retries, keepalive);
* ``probe`` — one compound read-only script → ``HostFacts`` (parsers are pure);
* ``audit`` — ``HostFacts`` + profile → the core ``BalanceReport``; fleets fan out per host;
* ``config`` — what to configure (``HostConfig``), where it lands (``HostLayout``), validators;
* ``shell`` — quoting and the ``Command`` a step runs (pure);
* ``facts`` — what the steps read on a host: one script and a pure parser each;
* ``operations`` — the steps, pure: facts and the desired state in, exact commands out;
* ``journal`` — the on-host journal of applied steps and their undo records (typed, versioned);
* ``lock`` — the host lock: one converge or revert at a time per host;
* ``engine`` — plan / converge / revert: facts → decision → commands → verify → journal, locked.
"""
