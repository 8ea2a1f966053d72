"""fullserver: balanced full-server ML environments from workload-maturity profiles.

The package is the Pulumi-free core: profiles, catalog, sizing, balance, cost and recommend; the
command line is the sibling ``fullserver_cli`` package.
Pulumi components live in the sibling ``components`` package and execute what this core decides.
"""

__version__ = "0.1.0"
