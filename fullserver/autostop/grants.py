"""Whether a Google Cloud autostop grant reaches only its own environment: the stop role holds the
permissions of one stop way and no more, and is bound on the stack's own VMs, or on the project
with an IAM Condition naming the stack's own group, or (Cloud TPU, which has neither per-node IAM
nor Conditions on its resources) holding only Cloud TPU permissions. The policy pack judges every
grant by these (``policy/autostop_grants.py``); AWS's rule is its platform's
(``aws_autostop.group_stop_problems``)."""

from __future__ import annotations

from collections.abc import Collection

from fullserver.platforms import gcp_autostop, tpu_autostop


def stop_ways() -> list[frozenset[str]]:
    """The permission sets of every Google Cloud stop way, as the platforms declare them."""
    return [frozenset(p) for m in (gcp_autostop, tpu_autostop) for p in m.STOP_PERMISSIONS.values()]


def role_problem(permissions: Collection[str]) -> str | None:
    """Why a stop role holds too much (None: it holds one way's permissions, or fewer)."""
    have = frozenset(permissions)
    ways = stop_ways()
    if any(have <= way for way in ways):
        return None
    known = frozenset().union(*ways)
    beyond = sorted(have - known) or sorted(have)
    return (
        f"holds {', '.join(beyond)}, beyond what one stop way needs: keep only one way's permissions "
        f"({'; '.join(', '.join(sorted(w)) for w in ways)})"
    )


def binding_problem(
    permissions: Collection[str],
    *,
    instance: str | None,
    vms: Collection[str],
    condition: str | None,
    groups: Collection[str],
) -> str | None:
    """Why a binding of a stop role reaches beyond the stack (None: it does not). ``instance`` is
    the VM a per-VM binding is on (None: a project binding), ``condition`` its IAM Condition's
    expression, ``vms`` and ``groups`` the stack's own VM and managed instance group names."""
    if instance is not None:
        return None if instance in vms else f"is on VM {instance!r}, not one of this stack's ({', '.join(sorted(vms))})"
    # the name as the expression quotes it: "own-group" must not pass a condition naming "own-group-2"
    if condition and any(f'{gcp_autostop.GROUP_RESOURCE}{g}"' in condition for g in groups):
        return None
    if all(p.startswith("tpu.") for p in permissions):
        return None  # Cloud TPU: no per-node IAM, no Conditions on its resources (tpu_autostop)
    named = f" ({', '.join(sorted(groups))})" if groups else ""
    return (
        "is on the whole project: bind it on the stack's VMs, or give it an IAM Condition whose expression "
        f"names {gcp_autostop.GROUP_RESOURCE}<this stack's group>{named}"
    )
