"""What reaches the terminal: every value that came from a log, a record, a rule pack, a file name
or the model is shown, never obeyed.

A log line can carry ESC/OSC/CSI sequences (set the window title, clear the screen and the
scrollback, hide text), C1 controls and bidi overrides (U+202E turns `gpj.exe` around): printed
raw they act on the analyst's terminal. `shown` makes them visible instead (`\\x1b`, `<U+202E>`,
`app.safetext.visible`); `shown_block` keeps line breaks and tabs for multi-line text;
`log_filter` applies it to every log message; `json_text` is `--json`'s exact output, with the
characters JSON may leave raw (C1, DEL, bidi, line separators) escaped as `\\uXXXX`.

Rich reads a plain string as markup (`[link=…]DC01[/link]` becomes a clickable link), replaces
`:emoji:` codes and colours what looks like a number or a URL; a `Text` it shows as it is. So every
table row and every printed line that holds something from outside goes through `cell` (one value)
or `add_row` (a whole row): text, never markup, controls visible.

Owns the terminal side only; the character rules live in `app.safetext`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from rich.table import Table
from rich.text import Text

from logwarden.app.safetext import json_safe, visible


def shown(value: Any) -> str:
    """One value on one line: controls, newlines and bidi controls visible as escapes."""
    return visible(str(value))


def shown_block(value: Any) -> str:
    """Multi-line text (a snippet, the model's streamed answer): newlines and tabs kept."""
    return visible(str(value), tabs=True, newlines=True)


def cell(value: Any, style: str = "") -> Text:
    """A value as rich `Text`: shown (controls visible), never read as markup or emoji codes.
    A `Text` is returned as it is: it is what `cell` made (a styled level, say)."""
    if isinstance(value, Text):
        return value
    return Text(shown(value), style=style)


def add_row(table: Table, *values: Any, **options: Any) -> None:
    """`table.add_row` with every value through `cell`: the only way the CLI fills a table."""
    table.add_row(*(cell(value) for value in values), **options)


def json_text(data: Any, *, indent: int | None = 2) -> str:
    """`data` as JSON, exact, with every character a terminal could obey escaped."""
    return json_safe(json.dumps(data, indent=indent, default=str, ensure_ascii=False))


class _Visible(logging.Filter):
    """Log records are formatted, then shown: a file name or a log line in a warning cannot act."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: the handler reports it as it always did
            return True
        shown_message = visible(message, tabs=True, newlines=True)
        if shown_message != message or record.args:
            record.msg, record.args = shown_message, None
        return True


def log_filter() -> logging.Filter:
    return _Visible()


def byte_size(n: float) -> str:
    """A byte count as a person reads it: `812 B`, `2.2 MiB` (the run summary and the progress ETA)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)
