"""What the offline graph answers for every cloud, readable by the components and the graph alike.

A leaf: it imports nothing, so a component package can name a mock value without importing the
graph (which imports the component registry, which imports the packages).
"""

SECRET_VALUE = "<read from the cloud secret at pulumi up>"
"""What the offline graph reads for a serving secret (a Secret Manager secret, an SSM parameter)."""
CA = "bW9jay1jYQ=="
"""A cluster's CA certificate in the offline graph (base64 of ``mock-ca``)."""
ACCOUNT_NUMBER = "123456789012"
"""The account (AWS's documentation example account) or project number the mocks' ids name."""
