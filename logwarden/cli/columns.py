"""Tables that fit the terminal they are printed on: the essential columns always, the rest while
there is room.

At 80 columns rich shared the width out by itself and squeezed the level and the status of
`records list` to nothing while the host kept 26 characters. Here each table says which columns
are essential (the level, the time, the host, the rule or title, the id: what an analyst triages
by) and in which order the others go when the width runs out; an essential column is never
dropped, only shortened to its floor with an ellipsis. `fit_table` returns the table and the
names of the columns left out, for the caller to say so (`left_out_note`).

Knows nothing of records or incidents: columns, widths and cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

from logwarden.cli.terminal import cell

GAP = 2  # between two columns: a SIMPLE_HEAD table without edges and with its padding collapsed


@dataclass(frozen=True, slots=True)
class Column:
    """One column: at most `most` characters wide, never shortened below `least`. `drop` is None for
    an essential column, else its rank in the order the columns go when the width runs out (1 first)."""

    name: str
    most: int = 40
    least: int = 0  # 0: the header's length
    drop: int | None = None
    justify: JustifyMethod = "left"

    def floor(self) -> int:
        return max(self.least, len(self.name)) if self.least else len(self.name)


def fit_table(columns: Sequence[Column], rows: Sequence[Sequence[Text | str]], width: int) -> tuple[Table, list[str]]:
    """A table of `rows` (one cell per column) at most `width` characters wide, and the names of the
    columns it left out (in the order they were dropped). A column that may go is kept only while
    the essential ones still get their whole width beside it."""
    natural = [min(max([len(c.name), *(_length(row[i]) for row in rows)]), c.most) for i, c in enumerate(columns)]
    kept = list(range(len(columns)))
    dropped: list[str] = []
    by_rank = sorted((c.drop, i) for i, c in enumerate(columns) if c.drop is not None)
    while by_rank and _need(columns, natural, kept) > width:
        _, index = by_rank.pop(0)
        kept.remove(index)
        dropped.append(columns[index].name)
    widths = _widths(columns, natural, kept, width)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, header_style="bold")
    for index in kept:
        table.add_column(columns[index].name, no_wrap=True, overflow="ellipsis", min_width=widths[index],
                         max_width=widths[index], justify=columns[index].justify)
    for row in rows:
        table.add_row(*(cell(row[index]) for index in kept))
    return table, dropped


def left_out_note(dropped: Sequence[str], width: int) -> str:
    """What a narrow terminal did not show, and where to see it."""
    return f"left out at {width} columns: {', '.join(dropped)} (a wider terminal, --json or a pipe shows them)"


def _need(columns: Sequence[Column], natural: Sequence[int], kept: Sequence[int]) -> int:
    return sum(natural[i] if columns[i].drop is None else columns[i].floor() for i in kept) + GAP * (len(kept) - 1)


def _widths(columns: Sequence[Column], natural: Sequence[int], kept: Sequence[int], width: int) -> dict[int, int]:
    """Each kept column as wide as its widest cell (up to `most`). When that is too wide, the other
    columns are shortened first, from the last one back, each to its floor; then the essential ones
    share what is still too much in proportion to what each can give."""
    widths = {i: max(natural[i], columns[i].floor()) for i in kept}
    over = sum(widths.values()) + GAP * (len(kept) - 1) - width
    for i in reversed([i for i in kept if columns[i].drop is not None]):
        cut = max(min(over, widths[i] - columns[i].floor()), 0)
        widths[i] -= cut
        over -= cut
    slack = {i: widths[i] - columns[i].floor() for i in kept if columns[i].drop is None}
    total = sum(slack.values())
    if over > 0 and total:
        for i, give in slack.items():
            widths[i] -= min(give, -(-over * give // total))  # rounded up: the table never ends wider
    return widths


def _length(value: Text | str) -> int:
    return cell(value).cell_len
