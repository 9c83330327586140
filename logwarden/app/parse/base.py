"""What every parser is: `parse(LogLine) -> Event | None`, constructed with a reference time.

Owns the `Parser` protocol and the one helper that builds an `Event` from a `LogLine`, which is
also where every parsed time is checked (`usable_time`): a time the store, the windows and the
exports cannot hold (year 9999 at -14:00, 1969) leaves the event undated with the value in
`fields["timestamp_invalid"]`, so a forged date can neither stop a run nor reorder its windows.
Knows nothing about any particular format.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from logwarden.app.events import Event, LogLine
from logwarden.app.parse.timestamps import usable_time


class Parser(Protocol):
    """One log format. `parse` returns None when the line is not in this format."""

    name: str

    def __init__(self, *, reference_time: datetime | None = None) -> None: ...

    def parse(self, line: LogLine) -> Event | None: ...


def new_event(line: LogLine, fmt: str, *, ts: datetime | None = None, host: str | None = None,
              program: str | None = None, message: str = "",
              fields: dict[str, Any] | None = None) -> Event:
    fields = {} if fields is None else fields
    if ts is not None and not usable_time(ts):
        fields["timestamp_invalid"], ts = ts.isoformat(), None
    if line.truncated:  # longer than the ingest limit: only its head was kept (see `raw`'s marker)
        fields["truncated"] = True
    # positional: a dataclass's __init__ with eleven keywords costs twice as much, once per line
    return Event(line.source, line.line_no, line.offset, line.text, fmt, ts, host, program, message, fields,
                 line.inode, line.end)
