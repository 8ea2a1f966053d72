"""The ``fullserver`` command line: the floor above everything it drives.

It reads input, calls the Pulumi-free core (``fullserver``), the components' offline graph
(``components.graph``), stack operations (``stackops``) and the bare-metal layer, and is the only
place that prints. Nothing below imports it (``tests/test_layering.py`` keeps it so).
"""
