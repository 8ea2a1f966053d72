"""Applying fetched rows to one data file's text: the diff, then the edits.

For each row the provider priced: if the file has it, changed figures are replaced and the row's
``source`` becomes the refresh's source; if not, the row is appended. A figure the file has but the
new source does not give stays only when it can keep its own source: the spot price (as
``spot_source``, e.g. AWS spot prices from another source while the Price List gives on-demand).
Any other such figure leaves the row untouched and is reported ("kept"). Rows in the refresh's
scope that the provider no longer prices are reported as gone and removed only with ``prune``.
Spot-only, figures-only and list sources: docs/design/catalog.md.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import yaml

from fullserver.catalog.refresh import yamledit
from fullserver.catalog.refresh.rows import SECTIONS, Fetched, FigureChange, RefreshReport, Row, RowKey, label

COUNTS_DEFAULT_ZERO = ("accelerator_count", "local_nvme_disks", "efa_interfaces")
"""Shape counts a data file may leave out when they are 0 (the model's default)."""

TOLERANCE = 1e-9
"""Figures closer than this are the same figure (the files round to at most 10 decimals)."""


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) else None


def apply_rows(text: str, data: dict[str, Any], fetched: Fetched, report: RefreshReport, prune: bool = False) -> str:
    """The file text with ``fetched`` applied; ``report`` is filled in with what changed.

    ``data`` is the parsed file (``read_yaml``) and ``text`` its text: the two list the rows in the
    same order, so the i-th item of a section's node is the i-th row of the data.
    """
    root = yamledit.compose(text, report.path)
    top = yamledit.pairs(root)
    edits = yamledit.TextEdits(text)
    key = fetched.source_key
    seen: set[RowKey] = set()
    new_sections: dict[str, list[Row]] = {}
    deletions: list[tuple[yaml.SequenceNode, int]] = []

    by_section: dict[str, list[Row]] = {}
    for row in fetched.rows:
        by_section.setdefault(row.section, []).append(row)

    sections = {s for s, _ in fetched.scope} | set(by_section)
    for name in sorted(sections):
        section = SECTIONS[name]
        items: list[dict[str, Any]] = list(data.get(name) or [])
        node = top.get(name, (None, None))[1]
        seq = node if isinstance(node, yaml.SequenceNode) else None
        index: dict[RowKey, int] = {}
        for i, item in enumerate(items):
            if isinstance(item, dict):
                index[(name, tuple(str(item.get(f)) for f in section.ident))] = i
        appended: list[Row] = []
        for row in by_section.get(name, []):
            seen.add(row.key)
            found = index.get(row.key)
            if found is None and fetched.figures_only:
                continue  # a shape the file lacks is reported as not in the catalog, never added
            if found is None and fetched.spot_only:
                report.kept.append(f"{label(row.key)}: not in the file and {key} gives no on-demand price; not added")
                continue
            if found is None:
                appended.append(row)
                continue
            assert seq is not None
            item_node = seq.value[found]
            assert isinstance(item_node, yaml.MappingNode)
            if fetched.figures_only:
                _update_figures(edits, item_node, items[found], row, key, report)
            elif fetched.spot_only:
                _update_spot(edits, item_node, items[found], row, key, report)
            else:
                _update(edits, item_node, items[found], row, key, report)
        for row in appended:  # after the updates: an edit of the last row goes before a new row
            if seq is None:
                new_sections.setdefault(name, []).append(row)
            else:
                yamledit.append_item(edits, seq, _fields(row, key))
            report.added.append(label(row.key))
            report.changes.extend(FigureChange(label(row.key), f, None, float(v)) for f, v in row.values.items())
        for row_key, i in index.items():
            if row_key in fetched.scope and row_key not in seen:
                report.gone.append(label(row_key))
                if prune and seq is not None:
                    deletions.append((seq, i))

    for seq, i in deletions:
        yamledit.delete_item(edits, seq, i)
    report.pruned = prune and bool(deletions)
    for name, rows in new_sections.items():
        yamledit.append_section(
            edits,
            name,
            [_fields(r, key) for r in rows],
            comment=f"Added by `fullserver catalog refresh` from {key} (see sources).",
        )
    _write_source(edits, top, fetched)
    return edits.apply()


def _fields(row: Row, source_key: str) -> list[tuple[str, yamledit.Scalar]]:
    section = SECTIONS[row.section]
    out: list[tuple[str, yamledit.Scalar]] = list(zip(section.ident, row.ident, strict=True))
    out += [(f, row.values[f]) for f in section.values if f in row.values]
    out += [(f, list(v)) for f, v in row.lists.items()]
    out.append(("source", source_key))
    return out


def _write_figure(
    edits: yamledit.TextEdits,
    node: yaml.MappingNode,
    item: dict[str, Any],
    field: str,
    value: yamledit.Scalar,
    after: str | None,
    name: str,
) -> FigureChange | None:
    """Set one figure of a row: added after ``after`` where the row lacks it, replaced where it
    differs. The change, or None when the figure is confirmed as it was."""
    new = float(value)  # type: ignore[arg-type]  # figures are numbers
    old = _num(item.get(field))
    if old is None:
        yamledit.add_key(edits, node, field, value, after=after)
    elif abs(old - new) > TOLERANCE:
        yamledit.set_value(edits, node, field, value)
    else:
        return None
    return FigureChange(name, field, old, new)


def _update(
    edits: yamledit.TextEdits,
    node: yaml.MappingNode,
    item: dict[str, Any],
    row: Row,
    source_key: str,
    report: RefreshReport,
) -> None:
    """Edit one existing row (or leave it and say why)."""
    section = SECTIONS[row.section]
    name = label(row.key)
    old_source = str(item.get("source", ""))
    moved = 0
    for f in section.replace_lists:
        if f in row.lists and item.get(f) != row.lists[f]:
            old, new = set(item.get(f) or []), set(row.lists[f])
            yamledit.set_value(edits, node, f, list(row.lists[f]))
            delta = [f"+{z}" for z in sorted(new - old)] + [f"-{z}" for z in sorted(old - new)]
            report.moved.append(f"{name}: {f} {' '.join(delta) or 'put in order'}")
            moved += 1
    differ = [f for f, v in row.lists.items() if f not in section.replace_lists and item.get(f) != list(v)]
    if differ:
        shown = "; ".join(f"{f} {item.get(f)} in the file, {row.lists[f]} from {source_key}" for f in differ)
        report.kept.append(f"{name}: {shown}; the row keeps its figures and source {old_source}")
        return
    missing = [f for f in section.values if f in item and f not in row.values and f != section.spot]
    if missing:
        report.kept.append(
            f"{name}: {', '.join(missing)} not given by {source_key}; the row keeps its figures and source {old_source}"
        )
        return
    changes: list[FigureChange] = []
    previous: str | None = None  # the figure a new one is written after, in the section's order
    for f in (*section.ident, *section.values):
        if f not in row.values:
            previous = f if f in item else previous
            continue
        change = _write_figure(edits, node, item, f, row.values[f], previous, name)
        changes += [change] if change else []
        previous = f
    spot = section.spot
    if spot and spot in item and spot not in row.values:
        # The spot figure stays, with the source it came from.
        carried = str(item.get("spot_source") or old_source)
        if carried != source_key and "spot_source" not in item:
            yamledit.add_key(edits, node, "spot_source", carried)
    elif spot and spot in row.values and "spot_source" in item:
        yamledit.remove_key(edits, node, "spot_source")
    if section.list_source != "source":
        if item.get(section.list_source) != source_key:
            yamledit.set_value(edits, node, section.list_source, source_key)
    elif old_source != source_key:
        yamledit.set_value(edits, node, "source", source_key)
    if changes:
        report.changes.extend(changes)
        comment = _trailing_comment(edits.text, node)
        if comment:
            report.kept.append(f"{name}: the comment on its line may describe the old figure: {comment}")
    elif not moved:
        report.unchanged += 1


def _update_spot(
    edits: yamledit.TextEdits,
    node: yaml.MappingNode,
    item: dict[str, Any],
    row: Row,
    source_key: str,
    report: RefreshReport,
) -> None:
    """Write a row's spot price from a spot-only source: the figure and its ``spot_source``."""
    spot = SECTIONS[row.section].spot
    assert spot is not None and set(row.values) == {spot}, row
    change = _write_figure(edits, node, item, spot, row.values[spot], SECTIONS[row.section].values[0], label(row.key))
    if item.get("spot_source") != source_key:
        yamledit.set_value(edits, node, "spot_source", source_key)
    if change:
        report.changes.append(change)
    else:
        report.unchanged += 1


def _update_figures(
    edits: yamledit.TextEdits,
    node: yaml.MappingNode,
    item: dict[str, Any],
    row: Row,
    source_key: str,
    report: RefreshReport,
) -> None:
    """Write a shape's own figures and name the source of each in ``figure_sources``. A per-disk
    split replaces a local NVMe figure known only in total (``local_nvme_total_gb``)."""
    name = label(row.key)
    changes: list[FigureChange] = []
    previous = "family"  # new figures go after the last figure the row has, in the section's order
    for f in SECTIONS[row.section].values:
        if f not in row.values:
            previous = f if f in item else previous
            continue
        new = float(row.values[f])
        value: yamledit.Scalar = int(new) if new == int(new) else row.values[f]  # the files write 16, not 16.0
        if f not in item and new == 0 and f in COUNTS_DEFAULT_ZERO:
            continue  # a count the file leaves at its default of 0, confirmed: nothing to write
        change = _write_figure(edits, node, item, f, value, previous, name)
        changes += [change] if change else []
        previous = f if f in item else previous
    if "local_nvme_disks" in row.values and "local_nvme_total_gb" in item:
        yamledit.remove_key(edits, node, "local_nvme_total_gb")
        changes.append(FigureChange(name, "local_nvme_total_gb", _num(item["local_nvme_total_gb"]), None))
    given = [f for f in SECTIONS[row.section].values if f in row.values and (f in item or row.values[f] != 0)]
    if item.get("source") != source_key:
        current = dict(item.get("figure_sources") or {})
        wanted = {f: source_key for f in given}
        stale = [f for f in current if f == "local_nvme_total_gb" and "local_nvme_disks" in row.values]
        holder = yamledit.pairs(node).get("figure_sources")
        if holder is None or not isinstance(holder[1], yaml.MappingNode):
            yamledit.add_mapping_entry(edits, node, "figure_sources", list(wanted.items()), folded=set())
        else:
            for f, src in wanted.items():
                if current.get(f) != src:
                    yamledit.set_value(edits, holder[1], f, src)
            for f in stale:
                if len(holder[1].value) > 1 and holder[1].value[0][0].value != f:
                    yamledit.remove_key(edits, holder[1], f)  # (a first key stays: harmless, named field)
    if changes:
        report.changes.extend(changes)
    else:
        report.unchanged += 1


def _trailing_comment(text: str, node: yaml.MappingNode) -> str:
    """A comment on the line where the row ends (``# 0.12 per GiB``), or ''."""
    end = yamledit.value_end(node, text)
    line = text[end : yamledit.line_end(text, end)]
    return line[line.index("#") :].strip() if "#" in line else ""


def _write_source(edits: yamledit.TextEdits, top: dict[str, tuple[yaml.Node, yaml.Node]], fetched: Fetched) -> None:
    src = fetched.source
    fields: list[tuple[str, yamledit.Scalar]] = [
        ("title", src.title),
        ("url", src.url),
        ("as_of", src.as_of),
        ("as_of_kind", src.as_of_kind),
    ]
    if src.note:
        fields.append(("note", src.note))
    node = top.get("sources", (None, None))[1]
    if not isinstance(node, yaml.MappingNode):
        raise ValueError("the data file has no block 'sources:' mapping")
    entry = yamledit.pairs(node).get(fetched.source_key)
    if entry is None:
        yamledit.add_mapping_entry(edits, node, fetched.source_key, fields, folded={"note"})
        return
    mapping = entry[1]
    if not isinstance(mapping, yaml.MappingNode):
        raise ValueError(f"source '{fetched.source_key}' is not a mapping")
    for name, value in fields:
        yamledit.set_value(edits, mapping, name, value, folded=name == "note")
    if not src.note and "note" in yamledit.pairs(mapping):
        yamledit.remove_key(edits, mapping, "note")
