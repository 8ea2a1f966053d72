"""Which fullserver environment and profile a resource belongs to.

fullserver's components label (GCP) or tag (AWS) every resource they create with the environment's
identity, under the keys the core defines (``fullserver.rules``: ``fullserver-profile``,
``fullserver-environment``, ``fullserver-lifecycle``, ``fullserver-ttl-hours``). The profile named
there is loaded from ``fullserver.profiles.load_profiles()``, so a policy judges an environment by
the same profile that sized it (a queued TPU slice carries them on its node spec). Resources that
cannot carry labels fall back to the stack tag ``fullserver:profile`` that ``fullserver ephemeral`` sets.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from fullserver.profiles import Profile, load_profiles
from fullserver.rules import LABEL_PROFILE, TAG_PROFILE
from policy.resources import as_list, plain, prop


def labels_of(props: Mapping[str, Any]) -> dict[str, str]:
    """The fullserver labels of a resource: GCP ``labels``, AWS ``tags`` (a map, or an Auto Scaling
    group's list of ``{key, value}``) and, under those, a launch template's ``tagSpecifications``
    and a queued TPU slice's node ``labels``."""
    out: dict[str, str] = {}
    nested = [prop(s, "tags") for s in as_list(prop(props, "tagSpecifications"))]
    nested += [prop(s, "node", "labels") for s in as_list(prop(props, "tpu", "nodeSpecs"))]
    for tags in nested:
        if isinstance(tags, Mapping):
            out.update({str(k): str(plain(v)) for k, v in tags.items()})
    for key in ("tags", "labels"):
        value = plain(props.get(key))
        if isinstance(value, Mapping):
            out.update({str(k): str(plain(v)) for k, v in value.items()})
        else:
            for item in as_list(value):  # GCP network tags are plain strings: not labels
                if isinstance(item, Mapping) and "key" in item:
                    out[str(plain(item["key"]))] = str(plain(item.get("value", "")))
    return out


@functools.cache
def profiles() -> dict[str, Profile]:
    """fullserver's profiles, loaded once per policy-pack process."""
    return load_profiles()


def profile_name(labels: Mapping[str, str], stack_tags: Mapping[str, str]) -> str | None:
    """The profile a resource names: its own label first, else the stack's tag (for resources without labels)."""
    return labels.get(LABEL_PROFILE) or stack_tags.get(TAG_PROFILE) or None


def profile_for(labels: Mapping[str, str], stack_tags: Mapping[str, str]) -> Profile | None:
    """The profile a resource is judged by, ``None`` when it names none or one fullserver does not ship."""
    name = profile_name(labels, stack_tags)
    return profiles().get(name) if name else None
