"""Adding a cloud touches at most 6 files outside its own (issue 36), measured.

For each registered cloud (``fullserver.clouds``) this lists the tracked files that mention it and
are not its own, and holds the list to ``MAX_OUTSIDE``: what a new cloud like it must touch.

**A cloud's own files**: its core module (``fullserver/clouds/<key>.py``), the modules its
``Cloud.own_modules`` name (its refresh fetchers, its quota and network rules), its policy reader
(``policy/clouds/<key>.py``); every platform's own files (``test_platform_footprint``: a platform
on the cloud names its provider) and a platform's quota and network rules
(``fullserver/platforms/quota/<p>.py``, ``network/<p>.py``); tests, docs, data, examples.

**A mention** of a cloud, in Python: a string that is its key (``"aws"``) or starts with it and a
colon (a resource type ``"aws:ec2/..."``, a config key ``"aws:region"``), a string naming or an
import of one of its own modules or its provider SDK (``pulumi_aws``); in any other tracked file:
its SDK (``pulumi-aws``) or a ``<key>:`` token, on a line that is not a comment. A name bound to
a cloud's constant elsewhere (``resources.AWS_INSTANCE``) is counted where it is bound.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

import pytest

from fullserver.clouds import Cloud, all_clouds
from fullserver.platforms import all_rules, module_of
from tests.project.repo import ROOT
from tests.project.test_platform_footprint import MAX_OUTSIDE, SHARED_OWN, tracked
from tests.project.test_platform_footprint import is_own as platform_own


def own_modules(cloud: Cloud) -> list[str]:
    """Its core module, the modules it names as its own, its policy reader and its provider SDK."""
    found = [f"fullserver.clouds.{cloud.key}", *cloud.own_modules, cloud.sdk_module]
    return found + ([cloud.policy_reader] if cloud.policy_reader else [])


def _platform_rules_files() -> tuple[str, ...]:
    names = {module_of(r.platform).rsplit(".", 1)[-1] for r in all_rules()}
    return tuple(f"fullserver/platforms/{kind}/{n}.py" for kind in ("quota", "network") for n in sorted(names))


def is_own(path: str, cloud: Cloud) -> bool:
    mine = tuple(m.replace(".", "/") + ".py" for m in own_modules(cloud))
    return path.endswith(".md") or path.startswith((*SHARED_OWN, *mine)) or path in _platform_rules_files()


def _names_module(name: str, modules: list[str]) -> bool:
    return any(name == m or name.startswith(f"{m}.") for m in modules)


def python_mentions(source: str, cloud: Cloud) -> list[int]:
    """The lines of ``source`` that mention the cloud (see the module's docstring)."""
    modules = own_modules(cloud)
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.STRING or tok.string.lower().startswith(("f", "rf", "fr")):
            continue
        value = ast.literal_eval(tok.string)
        if isinstance(value, str) and (
            value == cloud.key or value.startswith(f"{cloud.key}:") or _names_module(value, modules)
        ):
            lines.add(tok.start[0])
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            named = (node.module, *(f"{node.module}.{a.name}" for a in node.names))
            if any(_names_module(n, modules) for n in named):
                lines.add(node.lineno)
        elif isinstance(node, ast.Import) and any(_names_module(a.name, modules) for a in node.names):
            lines.add(node.lineno)
    return sorted(lines)


def text_mentions(text: str, cloud: Cloud) -> list[int]:
    """The lines of a non-Python file that name the cloud's SDK or a ``<key>:`` token."""
    sdk = re.escape(cloud.sdk_module).replace("_", "[_-]")
    pattern = re.compile(rf"(?<![\w.-])({sdk}(?![\w-])|{re.escape(cloud.key)}:[\w/])")
    return [
        i for i, line in enumerate(text.splitlines(), 1) if not line.lstrip().startswith("#") and pattern.search(line)
    ]


def outside(cloud: Cloud) -> dict[str, list[int]]:
    """Tracked files that mention the cloud and are no cloud's or platform's own, with the lines."""
    platforms, clouds = list(all_rules()), all_clouds()
    found: dict[str, list[int]] = {}
    for path in tracked():
        if any(is_own(path, c) for c in clouds) or any(platform_own(path, r) for r in platforms):
            continue
        text = (ROOT / path).read_text(errors="replace")
        lines = python_mentions(text, cloud) if path.endswith(".py") else text_mentions(text, cloud)
        if lines:
            found[path] = lines
    return found


@pytest.mark.parametrize("cloud", all_clouds(), ids=lambda c: c.key)
def test_a_cloud_touches_at_most_six_files_outside_its_own(cloud: Cloud) -> None:
    found = outside(cloud)
    listed = "\n".join(f"  {path}: lines {', '.join(map(str, lines))}" for path, lines in found.items())
    assert len(found) <= MAX_OUTSIDE, (
        f"{cloud.key} is named in {len(found)} files outside its own (at most {MAX_OUTSIDE}); move what "
        f"they decide into its fullserver/clouds/{cloud.key}.py or its policy reader:\n{listed}"
    )


def test_mentions_are_found_in_each_form() -> None:
    aws = next(c for c in all_clouds() if c.key == "aws")
    source = """
from fullserver.clouds import aws
import pulumi_aws
x = "aws"
y = "aws:ec2/instance:Instance"
z = "policy.clouds.aws"
from fullserver.catalog.refresh import savings_plans
nothing = ("awsx", "gcp:project", f"{x}:region", "the aws way")  # "aws"
"""
    assert python_mentions(source, aws) == [2, 3, 4, 5, 6, 7]
    text = "pulumi-aws~=7.0\npulumi_aws\naws:region: us-east-1\n# pulumi-aws\npulumi-awsx\naws: word\n"
    assert text_mentions(text, aws) == [1, 2, 3]


def test_own_files_are_the_clouds_modules_and_the_shared_kinds() -> None:
    gcp = next(c for c in all_clouds() if c.key == "gcp")
    assert is_own("fullserver/clouds/gcp.py", gcp)
    assert is_own("fullserver/catalog/refresh/compute.py", gcp)
    assert is_own("policy/clouds/gcp.py", gcp)
    assert is_own("fullserver/platforms/quota/gke.py", gcp)
    assert not is_own("fullserver/clouds/aws.py", gcp)
    assert not is_own("fullserver/platforms/quota/__init__.py", gcp)
    assert not is_own("policy/budget.py", gcp)
