"""Adding a platform touches at most 6 files outside its own (issue 23's target), measured.

For each registered platform this lists the tracked files that mention it and are not its own,
and holds the list to ``MAX_OUTSIDE``. The list is what a new platform like it must touch: the
registrations, and any branch that still names it.

**A platform's own files**:

* its core module: the ``fullserver/platforms/`` module that registers it
  (``platforms.module_of``), and the modules beside it named after it (``gke_reserved.py``);
* the core package its ``PlatformRules.core`` names (``fullserver/kube/`` for the node pools,
  ``fullserver/baremetal/`` for rented servers);
* its component package and its policy reader, as its ``PlatformRules.components`` and
  ``policy_reader`` name them;
* catalog data (``fullserver/catalog/data/``), profiles (``profiles/``), example stacks
  (``stacks/``, ``examples/``, its ``fullserver new`` template ``templates/<platform>/``), tests
  and benchmarks (``tests/``, ``bench/``: they name platforms to exercise them, which a new
  platform need not touch) and docs (``docs/``, every ``*.md``).

A file that is another platform's own is not counted either: it names this platform because that
platform builds on it (EKS on EC2's facts, TPU on Compute Engine's), which was written when that
platform was added, not this one.

**A mention** of a platform:

* in Python: a string literal that is exactly its value (``"aws-gpu"``) or its short name
  (``"gke-gpu"``), a ``Platform`` member (``Platform.TPU_VM``), an import of one of its own
  modules (core module, component package, policy reader), a string naming one
  (``"components.aws"``), or a class field named as its component entry's ``args_key`` (its
  ``EnvironmentArgs`` field: ``bare_metal``). A short name or field name that is also another
  word of the vocabulary is not counted: ``aws`` and ``gcp`` are the clouds' provider keys (what
  a platform on a cloud fullserver does not know yet touches is in
  ``docs/adding-a-platform.md``), ``tpu`` the accelerator kind (the spec's, recommend's and the
  provider's ``tpu`` fields, the TPU price refresh); those platforms' ``EnvironmentArgs`` fields
  are counted through the args import beside them.
  Comparisons with any of them are refused apart, wherever they are
  (``test_platform_dispatch.py``);
* in any other tracked file: its value or one of its own modules' paths, as a word, on a line
  that is not a comment (Python's comments are not read either).

The shared core a family of platforms was wired into once (``fullserver.kube`` in sizing, cost,
the plan view: the first node-pool platform's cost, listed in ``docs/adding-a-platform.md``) is
not a mention of each member: a further member touches none of it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache

import pytest

from fullserver.platform import AcceleratorKind, Platform
from fullserver.platforms import PlatformRules, all_rules, module_of
from tests.project import repo
from tests.project.repo import ROOT

MAX_OUTSIDE = 6
"""Issue 23: at most 6 files outside a platform's own."""
SHARED_OWN = ("tests/", "bench/", "docs/", "stacks/", "examples/", "profiles/", "fullserver/catalog/data/")


def _prefix(module: str) -> str:
    rel = module.replace(".", "/")
    return f"{rel}/" if (ROOT / rel).is_dir() else f"{rel}.py"


def own_modules(rules: PlatformRules) -> list[str]:
    """Its core module, component package and policy reader (module paths)."""
    return [m for m in (module_of(rules.platform), rules.components, rules.policy_reader) if m]


def own_prefixes(rules: PlatformRules) -> tuple[str, ...]:
    core_module = module_of(rules.platform).replace(".", "/")
    found = [f"{core_module}.py", f"{core_module}_", f"templates/{rules.platform.value}/"]
    found += [_prefix(m) for m in (rules.components, rules.policy_reader, rules.core) if m]
    return (*SHARED_OWN, *found)


def is_own(path: str, rules: PlatformRules) -> bool:
    return path.endswith(".md") or path.startswith(own_prefixes(rules))


@cache
def tracked() -> tuple[str, ...]:
    return tuple(repo.tracked())


def _names_module(name: str, modules: list[str]) -> bool:
    return any(name == m or name.startswith((f"{m}.", f"{m}:")) for m in modules)


def args_key(platform: Platform) -> str:
    """The ``EnvironmentArgs`` field that carries the platform's args (its registry entry's)."""
    from components import registry  # the component registry imports Pulumi: only this question needs it

    return registry.entry(platform).args_key


def python_mentions(source: str, rules: PlatformRules) -> list[int]:
    """The lines of ``source`` that mention the platform (see the module's docstring)."""
    other_words = {rules.provider, *AcceleratorKind}
    words = {rules.platform.value} | ({rules.short} if rules.short not in other_words else set())
    modules = own_modules(rules)
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.STRING or tok.string.startswith(("f", "F", "rf", "fr", "Rf", "fR")):
            continue
        value = ast.literal_eval(tok.string)
        if isinstance(value, str) and (value in words or _names_module(value, modules)):
            lines.add(tok.start[0])
    tree = ast.parse(source)
    lines |= {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt | ast.expr) and _names_own(node, rules, modules)
    }
    key = args_key(rules.platform)
    key = "" if key in other_words else key  # tpu: also the spec's and recommend's TPU fields
    classes = (c for c in ast.walk(tree) if isinstance(c, ast.ClassDef))
    fields = (f for c in classes for f in c.body if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name))
    lines |= {f.lineno for f in fields if isinstance(f.target, ast.Name) and f.target.id == key}
    return sorted(lines)


def _names_own(node: ast.AST, rules: PlatformRules, modules: list[str]) -> bool:
    """``node`` imports one of the platform's own modules or is its ``Platform`` member."""
    if isinstance(node, ast.ImportFrom) and node.module:
        return any(_names_module(n, modules) for n in (node.module, *(f"{node.module}.{a.name}" for a in node.names)))
    if isinstance(node, ast.Import):
        return any(_names_module(a.name, modules) for a in node.names)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Platform":
        return node.attr == rules.platform.name
    return False


def text_mentions(text: str, rules: PlatformRules) -> list[int]:
    """The lines of a non-Python file that name the platform or one of its own modules."""
    names = [rules.platform.value, *own_modules(rules)]
    pattern = re.compile("|".join(rf"(?<![\w.-]){re.escape(n)}(?![\w-])" for n in names))
    return [
        i for i, line in enumerate(text.splitlines(), 1) if not line.lstrip().startswith("#") and pattern.search(line)
    ]


def mentions(path: str, rules: PlatformRules) -> list[int]:
    text = (ROOT / path).read_text(errors="replace")
    return python_mentions(text, rules) if path.endswith(".py") else text_mentions(text, rules)


def outside(rules: PlatformRules) -> dict[str, list[int]]:
    """Tracked files that mention the platform and are no platform's own, with the lines."""
    every = list(all_rules())
    found: dict[str, list[int]] = {}
    for path in tracked():
        if any(is_own(path, r) for r in every):
            continue
        lines = mentions(path, rules)
        if lines:
            found[path] = lines
    return found


@pytest.mark.parametrize("platform", list(Platform), ids=str)
def test_a_platform_touches_at_most_six_files_outside_its_own(platform: Platform) -> None:
    rules = next(r for r in all_rules() if r.platform is platform)
    found = outside(rules)
    listed = "\n".join(f"  {path}: lines {', '.join(map(str, lines))}" for path, lines in found.items())
    assert len(found) <= MAX_OUTSIDE, (
        f"{platform.value} is named in {len(found)} files outside its own (at most {MAX_OUTSIDE}); move what "
        f"they decide into its PlatformRules or its own packages:\n{listed}"
    )


def test_mentions_are_found_in_each_form() -> None:
    rules = next(r for r in all_rules() if r.platform is Platform.TPU_VM)
    source = """
from fullserver.platforms import tpu
import components.tpu.args
x = "tpu-vm"
y = Platform.TPU_VM
z = "components.tpu:TpuVmEnvironment"
nothing = ("tpu-vms", Platform.GCP_GPU, "gcp", "tpu", f"{x}-tpu")  # tpu-vm
"""
    assert python_mentions(source, rules) == [2, 3, 4, 5, 6]
    assert text_mentions("a: tpu-vm\nb: tpu-vms\nc: components.tpu\n  # tpu-vm\n", rules) == [1, 3]
    gke = next(r for r in all_rules() if r.platform is Platform.GKE_GPU)
    assert python_mentions('k = "gke-gpu"\n', gke) == [1]
    bare = next(r for r in all_rules() if r.platform is Platform.BARE_METAL)
    assert python_mentions("class Args:\n    bare_metal: dict\n    other: int\nbare_metal = 1\n", bare) == [2]


def test_own_files_are_the_platforms_modules_and_the_shared_kinds() -> None:
    rules = next(r for r in all_rules() if r.platform is Platform.EKS_GPU)
    assert is_own("components/eks/args.py", rules)
    assert is_own("policy/kube_nodes.py", rules)
    assert is_own("fullserver/kube/pool.py", rules)
    assert is_own("fullserver/platforms/eks.py", rules)
    assert not is_own("fullserver/platforms/__init__.py", rules)
    assert not is_own("components/environment.py", rules)
    assert not is_own("fullserver/cost.py", rules)
