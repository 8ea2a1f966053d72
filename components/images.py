"""Default machine images: Deep Learning AMIs (AWS) and Deep Learning VM images (GCP).

Image names move with CUDA and framework releases, so the defaults are *pointers that follow the
latest release* (an SSM parameter, an image family), and every stack can pin its own with
``fullserver:image``. Check current names with ``aws ssm get-parameters-by-path --path
/aws/service/deeplearning/ami/x86_64`` and ``gcloud compute images list --project
deeplearning-platform-release --no-standard-images``.
"""

from __future__ import annotations

# AWS DLAMI SSM parameters: /aws/service/deeplearning/ami/<arch>/<ami_type>/latest/ami-id, where
# ami_type is the DLAMI name without "deep", "learning", "ami" (AWS doc "Finding the ID of a
# DLAMI"). The Base OSS Nvidia Driver GPU AMI carries the driver, CUDA, EFA and NCCL/OFI for every
# framework (which is pip-installed on it); Neuron devices need the Neuron multi-framework DLAMI.
AWS_DLAMI_SSM = {
    "gpu": "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
    "trainium": "/aws/service/neuron/dlami/multi-framework/ubuntu-22.04/latest/image_id",
    "inferentia": "/aws/service/neuron/dlami/multi-framework/ubuntu-22.04/latest/image_id",
}

DLVM_PROJECT = "deeplearning-platform-release"
# Deep Learning VM image families per framework; "common" carries driver + CUDA for frameworks
# without their own family (JAX is pip-installed on it).
DLVM_FAMILIES = {
    "pytorch": "pytorch-2-7-cu128-ubuntu-2204-nvidia-570",
    "tensorflow": "tf-2-17-cu123-ubuntu-2204-py310",
    "jax": "common-cu128-ubuntu-2204-nvidia-570",
    "other": "common-cu128-ubuntu-2204-nvidia-570",
}


def aws_image_id(image: str | None, accelerator_kind: str) -> str:
    """An AMI id as given, or the DLAMI the SSM parameter points at when the instance launches.

    ``resolve:ssm:`` is resolved by EC2 at launch (launch templates accept it as ``ImageId``), so a
    replaced instance gets the current DLAMI without a Pulumi diff.
    """
    if image:
        return image if image.startswith(("ami-", "resolve:ssm:")) else f"resolve:ssm:{image}"
    return "resolve:ssm:" + AWS_DLAMI_SSM.get(accelerator_kind, AWS_DLAMI_SSM["gpu"])


def gcp_image(image: str | None, framework: str) -> str:
    """A full image path as given, a DLVM family by name, or the framework's default family."""
    if image and ("/" in image):
        return image
    family = image or DLVM_FAMILIES.get(framework, DLVM_FAMILIES["other"])
    return f"projects/{DLVM_PROJECT}/global/images/family/{family}"
