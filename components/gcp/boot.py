"""What a Google Cloud node boots (GPU VMs and TPU VMs): its image, its login metadata, and the
stable names of its disks.

Image names move with CUDA and framework releases, so the default is *a pointer that follows the
latest release* (an image family), and every stack can pin its own with ``fullserver:image``.
Check current names with ``gcloud compute images list --project deeplearning-platform-release
--no-standard-images``. The boot script itself is every cloud's (``components.startup``).
"""

from __future__ import annotations

from components.startup import LOGIN_USER
from fullserver.images import default_image
from fullserver.platform import Platform
from fullserver.platforms import gcp

# Stable device names Compute Engine gives its disks in the guest (``fullserver.platforms.gcp``):
# local SSDs, and the disk attached with device name "data".
GCP_LOCAL_SSD = gcp.LOCAL_SSD_DEVICES
GCP_DATA = gcp.DATA_DEVICE

DLVM_PROJECT = "deeplearning-platform-release"


def default_family(framework: str) -> str:
    """The Deep Learning VM image family a node of this framework boots by default ("common"
    carries driver + CUDA for frameworks without their own family: JAX is pip-installed on it).
    The names and their end-of-patch dates are the core's data (``fullserver.images``)."""
    found = default_image(Platform.GCP_GPU, (framework,))
    if found is None:
        raise ValueError("no default Compute Engine image in fullserver/catalog/data/images.yaml")
    return found.name


def gcp_image(image: str | None, framework: str) -> str:
    """A full image path as given, a DLVM family by name, or the framework's default family."""
    if image and ("/" in image):
        return image
    family = image or default_family(framework)
    return f"projects/{DLVM_PROJECT}/global/images/family/{family}"


def gcp_secret_command(secret: str) -> list[str]:
    """Read a Secret Manager secret's latest version (gcloud ships on the Deep Learning VM images;
    the project is the instance's own)."""
    return ["gcloud", "secrets", "versions", "access", "latest", f"--secret={secret}"]


def gcp_ssh_keys(keys: list[str], user: str = LOGIN_USER) -> str:
    """Compute Engine / Cloud TPU ``ssh-keys`` metadata: one ``user:key`` line per key."""
    return "\n".join(f"{user}:{key}" for key in keys)


def gcp_login_metadata(keys: list[str], *, guest_attributes: bool = True) -> dict[str, str]:
    """How people log in to a GCP node: OS Login (IAM decides) without keys; with keys, the
    ``ssh-keys`` metadata, which Compute Engine ignores while OS Login is on, so OS Login is off on
    that node. Project-wide keys stay blocked either way: only the keys named here, or IAM.

    ``guest_attributes``: ``enable-guest-attributes: TRUE`` (Compute Engine "Set and query guest
    attributes"), so the guest environment publishes the VM's SSH host keys under ``hostkeys/``
    at first boot, where a person reads them to pin them (docs/deploying.md "Pinning the nodes'
    host keys"); set at creation, since the keys are published at boot. TPU VMs pass ``False``:
    their workers publish guest attributes without it (``gcloud compute tpus tpu-vm ssh`` reads
    every worker's hostname and ``ssh-ed25519`` host key from them on any TPU)."""
    login = {"enable-oslogin": "TRUE" if not keys else "FALSE", "block-project-ssh-keys": "TRUE"}
    if keys:
        login["ssh-keys"] = gcp_ssh_keys(keys)
    if guest_attributes:
        login["enable-guest-attributes"] = "TRUE"
    return login
