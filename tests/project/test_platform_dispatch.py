"""No platform is chosen by hand outside the platforms' own code (issue 23).

What a platform does is its own module's (``fullserver/platforms/<p>.py``, ``PlatformRules``) and
its own packages': the component package and the policy reader its ``PlatformRules`` names
(``components``, ``policy_reader``). The core package of a platform family (``PlatformRules.core``:
``fullserver/kube/`` for the node pools, ``fullserver/baremetal/`` for rented servers) is shared by
its members, so it is scanned too: it asks the member (``PoolRules``, ``platforms.pool_member``)
rather than naming it. Anywhere else, a comparison that names a platform is a branch a new platform
would have to find and extend, so this scan refuses:

* ``==``, ``!=``, ``in``, ``not in``, ``is``, ``is not`` with a platform named by a string: its
  value (``aws-gpu``), short name (``tpu``), provider key (``aws``, ``dedicated``) or module name
  (``gke``, ``bare_metal``), alone or in a tuple, list or set;
* the same comparisons with a ``Platform`` member (``is Platform.TPU_VM``).

Ask the platform instead (``rules_for(platform).<capability>``, ``platforms.named``, the
component registry's entry). The scan reads every tracked Python file of the shipped packages.
"""

from __future__ import annotations

import ast

from fullserver.platform import Platform
from fullserver.platforms import all_rules, module_of
from tests.project.repo import ROOT, tracked

SCANNED = ("fullserver/", "fullserver_cli/", "components/", "policy/", "stackops/", "__main__.py")


def _path(module: str) -> str:
    """A module path as a file or folder prefix under the repository: ``policy.aws_nodes`` ->
    ``policy/aws_nodes.py``, a package -> its folder."""
    rel = module.replace(".", "/")
    return f"{rel}/" if (ROOT / rel).is_dir() else f"{rel}.py"


def own_code() -> set[str]:
    """File and folder prefixes where platforms may be named: the registry package and every
    platform's own module and packages, as its ``PlatformRules`` names them (not its family's
    shared core, ``PlatformRules.core``)."""
    own = {"fullserver/platforms/"}
    for rules in all_rules():
        own |= {_path(m) for m in (module_of(rules.platform), rules.components, rules.policy_reader) if m}
    return own


def platform_words() -> set[str]:
    """Every string that names a platform."""
    words: set[str] = set()
    for rules in all_rules():
        words |= {rules.platform.value, rules.short, rules.provider, module_of(rules.platform).rsplit(".", 1)[-1]}
    return words


_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)


def _names_platform(node: ast.expr, words: set[str]) -> str | None:
    """What in ``node`` names a platform (a string, a ``Platform`` member, or one inside a
    tuple, list or set), as written."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words:
        return repr(node.value)
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Platform"
        and node.attr in Platform.__members__
    ):
        return f"Platform.{node.attr}"
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return next((found for e in node.elts if (found := _names_platform(e, words))), None)
    return None


def dispatch_in(source: str, words: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each comparison in ``source`` that names a platform."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for op, left, right in zip(node.ops, [node.left, *node.comparators[:-1]], node.comparators, strict=True):
            if not isinstance(op, _OPS):
                continue
            named = _names_platform(right, words) or _names_platform(left, words)
            if named:
                found.append((node.lineno, f"{ast.unparse(left)} {_op(op)} {ast.unparse(right)}"))
    return found


def _op(op: ast.cmpop) -> str:
    return {ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}[
        type(op)
    ]


def scanned_files() -> list[str]:
    own = tuple(own_code())
    return [f for f in tracked("*.py") if f.startswith(SCANNED) and not f.startswith(own)]


def test_no_comparison_outside_the_platforms_names_a_platform() -> None:
    words = platform_words()
    found = [
        f"{f}:{line}: {what}" for f in scanned_files() for line, what in dispatch_in((ROOT / f).read_text(), words)
    ]
    assert not found, (
        "platform chosen by hand outside its own code; ask its PlatformRules (or the component "
        "registry's entry) instead:\n" + "\n".join(found)
    )


def test_the_scan_finds_each_form_of_dispatch() -> None:
    planted = """
if provider == "aws": pass
if spec.platform is Platform.TPU_VM: pass
if kind in ("gcp", "tpu"): pass
if "eks-gpu" != name: pass
if x == "aws-ish" or y is Platform: pass
"""
    found = dispatch_in(planted, platform_words())
    assert [line for line, _ in found] == [2, 3, 4, 5]
    assert found[1][1] == "spec.platform is Platform.TPU_VM"


def test_the_own_code_is_each_platforms_modules() -> None:
    own = own_code()
    assert {"components/aws/", "components/eks/", "policy/aws_nodes.py", "fullserver/platforms/"} <= own
    assert not any(p.startswith(("fullserver_cli/", "components/program", "fullserver/sizing")) for p in own)


def test_a_familys_shared_core_is_scanned() -> None:
    """The node pools' core and the rented servers' are scanned like any shared code."""
    scanned = scanned_files()
    assert "fullserver/kube/pool.py" in scanned and "fullserver/kube/serve.py" in scanned
    assert "fullserver/baremetal/audit.py" in scanned
