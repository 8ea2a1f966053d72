"""Every table the CLI prints, and the one rule that fits it to the terminal.

A table is declared once, with its columns and, when it has many, how they stack when the screen
is narrow (``narrow``: groups of columns that share one column, one cell line each). At print
time the rule picks the first layout whose longest words all fit side by side: see the design notes.

Design notes: docs/design/cli.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich import box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

Cell = str | Text
"""A cell: rich markup (a ``str``) or styled ``Text``; several lines are separated by ``\\n``."""

_UNBOUNDED = 1_000_000
_GAP = 2
"""Spaces between a column and the rule after it, and that rule and the next column (one each)."""


@dataclass
class FitTable:
    """A table that fits the console it is printed on (the rule in the module's docstring)."""

    headers: tuple[str, ...]
    title: Cell | None = None
    caption: Cell | None = None
    narrow: tuple[tuple[str, ...], ...] | None = None
    """Groups of header names, in order, covering every column once: the layout for a narrow screen."""
    lines: bool = False
    """A rule between rows (for rows of several lines each)."""
    show_header: bool = True
    rows: list[tuple[Cell, ...]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.narrow is not None:
            grouped = [h for group in self.narrow for h in group]
            if sorted(grouped) != sorted(self.headers):
                raise ValueError(f"narrow layout {self.narrow} does not cover the columns {self.headers} once each")

    def add_row(self, *cells: Cell) -> None:
        if len(cells) != len(self.headers):
            raise ValueError(f"{len(cells)} cells for {len(self.headers)} columns {self.headers}")
        self.rows.append(cells)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The wide layout where its longest words fit, else the narrow one; the last resort folds
        the longest words. Each cell is parsed as markup once, here, not at every measurement and
        again by rich's table: rich text prints as the markup it came from, byte for byte."""
        width = options.max_width
        measuring = options.update_width(_UNBOUNDED)
        headers = tuple(_text(console, h) for h in self.headers)
        rows = [tuple(_text(console, c) for c in row) for row in self.rows]
        lows, highs = _measure(console, measuring, headers, rows)
        available = width - _overhead(len(headers))
        if sum(lows) > available and self.narrow is not None:  # the narrow layout is built only now
            index = {h: i for i, h in enumerate(self.headers)}
            headers = tuple(Text("\n".join(group)) for group in self.narrow)
            rows = [tuple(_stack([row[index[h]] for h in group]) for group in self.narrow) for row in rows]
            lows, highs = _measure(console, measuring, headers, rows)
            available = width - _overhead(len(headers))
        widths = _spread(highs, _fold_longest(lows, available), available)
        yield self._table(headers, rows, widths, [w >= h for w, h in zip(widths, highs, strict=True)])

    def _table(
        self, headers: Sequence[Text], rows: Sequence[Sequence[Text]], widths: Sequence[int], fits: Sequence[bool]
    ) -> Table:
        t = Table(
            title=self.title,
            title_justify="left",
            caption=self.caption,
            caption_justify="left",
            show_header=self.show_header,
            show_edge=False,
            show_lines=self.lines,
            box=box.SIMPLE_HEAD if self.show_header else None,
            padding=0,
        )
        # The space either side of the rule between two columns (``_overhead``) is the left-hand
        # column's own: its width, left-justified. A column whose longest line fits then renders its
        # cells as they are: no Padding, no wrapping and nothing to crop or fold (``ignore``: rich
        # neither pads nor truncates each line, and the table pads it). A column that wraps keeps
        # the space in a Padding, so it wraps at its own width.
        last = len(widths) - 1
        gaps = [0 if i == last else _GAP for i in range(len(widths))]

        def cell(i: int, text: Text) -> RenderableType:
            return Padding(text, (0, gaps[i], 0, 0)) if gaps[i] and not fits[i] else text

        for i, (w, fit) in enumerate(zip(widths, fits, strict=True)):
            t.add_column(
                cell(i, headers[i]), width=max(w, 1) + gaps[i], overflow="ignore" if fit else "fold", no_wrap=fit
            )
        for row in rows:
            t.add_row(*(cell(i, c) for i, c in enumerate(row)))
        return t


def table(
    *headers: str,
    title: Cell | None = None,
    caption: Cell | None = None,
    narrow: Sequence[Sequence[str]] | None = None,
    lines: bool = False,
) -> FitTable:
    """A table with these column headers (see the module docstring for ``narrow``)."""
    groups = tuple(tuple(g) for g in narrow) if narrow is not None else None
    return FitTable(headers=headers, title=title, caption=caption, narrow=groups, lines=lines)


def grid(rows: Sequence[tuple[Cell, Cell]]) -> FitTable:
    """Name and value pairs without a header (a stack's facts): the value wraps at spaces."""
    t = FitTable(headers=("name", "value"), show_header=False)
    for name, value in rows:
        t.add_row(Text(str(name), style="bold") if isinstance(name, str) else name, value)
    return t


def _text(console: Console, cell: Cell) -> Text:
    """A cell as rich text: markup parsed as the console parses a ``str`` it prints, its tabs
    expanded as rich prints them (rich measures a tab as nothing: a column measured with one fits
    on paper and loses the cell's end)."""
    text = console.render_str(cell) if isinstance(cell, str) else cell
    if "\t" in text.plain:
        text = text.copy()
        text.expand_tabs()
    return text


def _stack(cells: Sequence[Text]) -> Text:
    """Cells of one row stacked into one cell, a line each; empty ones leave no blank line. A
    group's one non-empty cell is that cell (a one-column group: the shape, the price)."""
    kept = [t for t in cells if t.plain]
    return kept[0] if len(kept) == 1 else Text("\n").join(kept)


def _overhead(columns: int) -> int:
    """Columns of the screen a table spends on itself: a space each side of the rule between two
    columns, and the rule (``show_edge=False``)."""
    return (_GAP + 1) * (columns - 1)


def _measure(
    console: Console, options: ConsoleOptions, headers: Sequence[Text], rows: Sequence[Sequence[Text]]
) -> tuple[list[int], list[int]]:
    """Per column: its longest word and its longest line, header included. Rich measures a text by
    its plain characters alone, so each distinct one is measured once: a column of many stacks
    repeats a few profiles, platforms, regions and statuses."""
    lows, highs = [], []
    for i, header in enumerate(headers):
        distinct = {header.plain: header, **{row[i].plain: row[i] for row in rows}}
        sizes = [Measurement.get(console, options, c) for c in distinct.values()]
        lows.append(max(m.minimum for m in sizes))
        highs.append(max(m.maximum for m in sizes))
    return lows, highs


def _fold_longest(lows: Sequence[int], available: int) -> list[int]:
    """Minimums that add up to ``available``, taken from the longest words first: only the
    words too long for any layout fold (the last resort); short columns keep theirs."""
    widths = list(lows)
    while sum(widths) > available and max(widths) > 1:
        widths[widths.index(max(widths))] -= 1
    return widths


def _spread(highs: Sequence[int], lows: Sequence[int], available: int) -> list[int]:
    """Widths adding up to ``available`` at most: every column its longest word, and each the
    same share of the rest it could use (up to its longest line), so a column of long sentences
    keeps its room beside short ones."""
    wants = [h - low for h, low in zip(highs, lows, strict=True)]
    spare = available - sum(lows)
    if spare >= sum(wants):
        return list(highs)
    if spare <= 0:
        return list(lows)
    widths = [low + spare * want // sum(wants) for low, want in zip(lows, wants, strict=True)]
    hungriest = sorted(range(len(widths)), key=lambda i: highs[i] - widths[i], reverse=True)
    for i in hungriest[: available - sum(widths)]:  # what rounding down left over
        widths[i] += 1
    return widths
