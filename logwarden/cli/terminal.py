"""What reaches the terminal: every value that came from a log, a record, a rule pack, a file name
or the model is shown, never obeyed.

A log line can carry ESC/OSC/CSI sequences (set the window title, clear the screen and the
scrollback, hide text), C1 controls and bidi overrides (U+202E turns `gpj.exe` around): printed
raw they act on the analyst's terminal. `shown` makes them visible instead (`\\x1b`, `<U+202E>`,
`app.safetext.visible`); `shown_block` keeps line breaks and tabs for multi-line text;
`log_filter` applies it to every log message; `json_text` is `--json`'s exact output, with the
characters JSON may leave raw (C1, DEL, bidi, line separators) escaped as `\\uXXXX`.

Owns the terminal side only; the character rules live in `app.safetext`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from logwarden.app.safetext import json_safe, visible


def shown(value: Any) -> str:
    """One value on one line: controls, newlines and bidi controls visible as escapes."""
    return visible(str(value))


def shown_block(value: Any) -> str:
    """Multi-line text (a snippet, the model's streamed answer): newlines and tabs kept."""
    return visible(str(value), tabs=True, newlines=True)


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
