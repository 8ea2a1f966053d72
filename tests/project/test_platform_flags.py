"""No call site outside the platforms branches on a capability flag one platform sets (issue 36).

``declared_hardware``, ``slices``, ``configured_over_ssh`` and ``image_is_runtime`` were flags
that sizing, cost, the plan, recommend and the CLI branched on; they are now questions a
platform answers (``PlatformRules.supply``, ``PlatformRules.boot_image``). This scan refuses
reading them again, or the ``Supply``'s private answers, anywhere but ``fullserver/platforms/``.
"""

from __future__ import annotations

import ast

from tests.project.repo import ROOT, tracked
from tests.project.test_platform_dispatch import SCANNED

FLAGS = frozenset({"declared_hardware", "slices", "configured_over_ssh", "image_is_runtime", "_by_type", "_declared"})


def flag_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) for each attribute read of a converted flag in ``source``."""
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in FLAGS
    ]


def test_no_call_site_outside_the_platforms_reads_a_converted_flag() -> None:
    files = [f for f in tracked("*.py") if f.startswith(SCANNED) and not f.startswith("fullserver/platforms/")]
    found = [f"{f}:{line}: {what}" for f in files for line, what in flag_reads((ROOT / f).read_text())]
    assert not found, "ask the platform (rules.supply, rules.boot_image) instead:\n" + "\n".join(found)


def test_the_scan_finds_a_flag_read_and_passes_a_question() -> None:
    source = "if rules_for(p).slices:\n    x = 1\ny = rules.declared_hardware\nz = rules.supply.units(3)\n"
    assert flag_reads(source) == [(1, "rules_for(p).slices"), (3, "rules.declared_hardware")]
    assert flag_reads("supply = rules.supply\nn = supply.nodes(4, 1)\n") == []
