"""What every parser is: `parse(LogLine) -> Event | None`, constructed with a reference time.

Owns the `Parser` protocol and the one helper that builds an `Event` from a `LogLine`.
Knows nothing about any particular format.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from logwarden.app.events import Event, LogLine


class Parser(Protocol):
    """One log format. `parse` returns None when the line is not in this format."""

    name: str

    def __init__(self, *, reference_time: datetime | None = None) -> None: ...

    def parse(self, line: LogLine) -> Event | None: ...


def new_event(line: LogLine, fmt: str, *, ts: datetime | None = None, host: str | None = None,
              program: str | None = None, message: str = "",
              fields: dict[str, Any] | None = None) -> Event:
    fields = {} if fields is None else fields
    if line.truncated:  # longer than the ingest limit: only its head was kept (see `raw`'s marker)
        fields["truncated"] = True
    # positional: a dataclass's __init__ with eleven keywords costs twice as much, once per line
    return Event(line.source, line.line_no, line.offset, line.text, fmt, ts, host, program, message, fields,
                 line.inode, line.end)
