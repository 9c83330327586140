"""The fallback parser: any line at all becomes an Event with the text as its message.

Owns only the promise that nothing is dropped; the timestamp comes from the heuristic in
`timestamps.find_timestamp`, fields a free-text line states from `messages.py` (FTP, netfilter,
application login failures). Knows nothing about any format.
"""

from __future__ import annotations

from datetime import datetime

from logwarden.app.events import Event, LogLine
from logwarden.app.parse.base import new_event
from logwarden.app.parse.messages import message_fields
from logwarden.app.parse.timestamps import YearGuesser, find_timestamp


class GenericParser:
    name = "generic"

    def __init__(self, *, reference_time: datetime | None = None):
        self.years = YearGuesser(reference_time)

    def parse(self, line: LogLine) -> Event:
        return new_event(line, "generic", ts=find_timestamp(line.text, self.years),
                         message=line.text, fields=message_fields(None, line.text))
