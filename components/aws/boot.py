"""What an AWS node boots: the Deep Learning AMI, its user data, and the stable names of its disks.

Image names move with CUDA and framework releases, so the default is *a pointer that follows the
latest release* (an SSM parameter), and every stack can pin its own with ``fullserver:image``.
Check current names with ``aws ssm get-parameters-by-path --path /aws/service/deeplearning/ami/x86_64``.
The boot script itself is every cloud's (``components.startup``).
"""

from __future__ import annotations

import base64

from fullserver.images import default_image
from fullserver.platform import Platform
from fullserver.platforms import aws

# Stable device names AWS gives its disks in the guest (``fullserver.platforms.aws``): local NVMe
# (instance store) and the data disk (the non-root EBS volume).
AWS_INSTANCE_STORE = aws.INSTANCE_STORE_DEVICES
AWS_EBS = aws.EBS_DEVICES


def default_parameter(accelerator_kind: str) -> str:
    """The SSM parameter of the DLAMI a node of this accelerator kind boots by default: the Base OSS
    Nvidia Driver GPU AMI (driver, CUDA, EFA and NCCL/OFI for every framework, pip-installed on it)
    or, for Neuron devices, the Neuron multi-framework DLAMI. The names and their end-of-patch
    dates are the core's data (``fullserver.images``), so the plan warns about what nodes boot."""
    found = default_image(Platform.AWS_GPU, (accelerator_kind,))
    if found is None:
        raise ValueError("no default AWS image in fullserver/catalog/data/images.yaml")
    return found.name


def aws_image_id(image: str | None, accelerator_kind: str) -> str:
    """An AMI id as given, or the DLAMI the SSM parameter points at when the instance launches.

    ``resolve:ssm:`` is resolved by EC2 at launch (launch templates accept it as ``ImageId``), so a
    replaced instance gets the current DLAMI without a Pulumi diff.
    """
    if image:
        return image if image.startswith(("ami-", "resolve:ssm:")) else f"resolve:ssm:{image}"
    return "resolve:ssm:" + default_parameter(accelerator_kind)


def aws_secret_command(region: str, parameter: str) -> list[str]:
    """Read an SSM SecureString parameter (the AWS CLI ships on the Deep Learning AMIs).

    A parameter is referenced by its fully qualified name: a name in a hierarchy starts with ``/``
    (SSM PutParameter, "Name"), so ``hf/token`` can only mean ``/hf/token``; a name outside any
    hierarchy (``hf-token``) is referenced as it is.
    """
    name = parameter if parameter.startswith("/") or "/" not in parameter else f"/{parameter}"
    query = ["--query", "Parameter.Value", "--output", "text"]
    return ["aws", "ssm", "get-parameter", "--region", region, "--name", name, "--with-decryption", *query]


def user_data_base64(script: str) -> str:
    """Launch templates take user data base64-encoded (EC2 API)."""
    return base64.b64encode(script.encode()).decode()
