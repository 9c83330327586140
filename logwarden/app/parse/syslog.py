"""Syslog as files hold it: RFC 3164 (auth.log, secure, messages), the ISO-timestamped variant
rsyslog writes with RSYSLOG_FileFormat, and RFC 5424.

Owns the header grammar (PRI, timestamp, host, `program[pid]:` tag) and unwrapping rsyslog's
"message repeated N times: [ … ]" (the inner message becomes `message`, N the field `repeat`, so
five failed logins folded into one line still count five). What sshd/PAM/sudo/… messages state
(address, account, …) is added by `messages.py`. Year-less dates get their year from
`timestamps.YearGuesser`; an impossible one (Feb 30) leaves `ts` None and keeps the stamp in
`fields["timestamp_invalid"]`, so the line is still read as syslog and its detectors still run.
A line whose message is a rendered `<Event>` XML (Sysmon for Linux writes its events so) is that
event: a `windows` event of the Linux-Sysmon channel, so Sigma's linux Sysmon categories see it.
"""

from __future__ import annotations

import re
from datetime import datetime

from logwarden.app.events import Event, LogLine
from logwarden.app.parse.base import new_event
from logwarden.app.parse.messages import add_message_fields, structured_data_fields
from logwarden.app.parse.timestamps import MONTHS, YearGuesser, micros, parse_iso
from logwarden.app.parse.windows import xml_event

# host: no brackets and not ending in ':' (else it is a tag: "sshd[1]: …" has no host)
# tag:  program, optionally "(module)" as in "sshd(pam_unix)", optionally "[pid]", then ':'
_HOST_TAG_MSG = (r" +(?:([^\s\[\]]*[^\s\[\]:]) +)?"
                 r"(?:([^\s\[\]:]+(?:\([^)\s]*\))?)(?:\[(\d+)\])?: ?)?(.*)")
_BSD = re.compile(r"(?:<(\d{1,3})>)?(([A-Z][A-Za-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d)"
                  r"(?:\.(\d{1,6}))?)" + _HOST_TAG_MSG)  # the second group is the whole stamp
_ISO_HEAD = re.compile(r"(?:<(\d{1,3})>)?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?"
                       r"(?:Z|[+-]\d\d:?\d\d)?)" + _HOST_TAG_MSG)  # +0000: journalctl -o short-iso
_REPEATED = re.compile(r"message repeated (\d+) times: \[ ?(.*?)\]?$")
_SD_ELEMENT = r'\[(?:[^\]"\\]|\\.|"(?:[^"\\]|\\.)*")*\]'
_RFC5424 = re.compile(r"<(\d{1,3})>(\d{1,2}) (\S+) (\S+) (\S+) (\S+) (\S+) "
                      rf"(-|(?:{_SD_ELEMENT})+)(?: (.*))?")


def _fields(program: str | None, pid: str | None) -> dict:
    fields: dict = {}
    if program:
        fields["program"] = program
    if pid:
        fields["pid"] = int(pid)
    return fields


def _unfold(message: str, fields: dict) -> str:
    """rsyslog's repeat-reduction line → the repeated message, its count in `fields["repeat"]`."""
    if not message.startswith("message repeated "):
        return message
    match = _REPEATED.match(message)
    if match is None:
        return message
    fields["repeat"] = int(match.group(1))
    return match.group(2)


class SyslogParser:
    """RFC 3164 lines and RSYSLOG_FileFormat lines (same layout, ISO 8601 timestamp)."""

    name = "syslog"

    def __init__(self, *, reference_time: datetime | None = None):
        self.years = YearGuesser(reference_time)
        self._stamp: str | None = None  # the last year-less stamp dated, and its time
        self._time: datetime | None = None

    def parse(self, line: LogLine) -> Event | None:
        first = line.text[:1]
        if first.isdigit() or first == "<":  # ISO timestamp, possibly after a <PRI>
            event = self._parse_iso(line)
            if event is not None:
                return event
        return self._parse_bsd(line)

    def _parse_bsd(self, line: LogLine) -> Event | None:
        match = _BSD.match(line.text)
        if match is None:
            return None
        _pri, stamp, mon, day, hh, mm, ss, frac, host, program, pid, message = match.groups()
        month = MONTHS.get(mon)
        if month is None:
            return None
        # Busy logs write many lines a second: date a stamp once. Exact: the year guesser dates the
        # same stamp twice in a row the same (the New Year rule moves nothing against itself).
        if stamp != self._stamp:
            self._stamp = stamp
            self._time = self.years.build(month, int(day), int(hh), int(mm), int(ss), micros(frac))
        ts = self._time
        if message.startswith("<Event"):  # Sysmon for Linux: its event as XML, the syslog line a wrapper
            event = xml_event(line, message)
            if event is not None:
                return event
        fields = _fields(program, pid)
        if ts is None:  # Feb 30, 25:00: a damaged or forged stamp; the rest of the line is still syslog
            fields["timestamp_invalid"] = f"{mon} {day} {hh}:{mm}:{ss}"
        message = _unfold(message, fields)
        return new_event(line, "syslog", ts=ts, host=host, program=program, message=message,
                         fields=add_message_fields(fields, program, message))

    def _parse_iso(self, line: LogLine) -> Event | None:
        match = _ISO_HEAD.match(line.text)
        if match is None:
            return None
        _pri, stamp, host, program, pid, message = match.groups()
        ts = parse_iso(stamp)
        if ts is None:
            return None
        if message.startswith("<Event"):
            event = xml_event(line, message)
            if event is not None:
                return event
        fields = _fields(program, pid)
        message = _unfold(message, fields)
        return new_event(line, "syslog", ts=ts, host=host, program=program, message=message,
                         fields=add_message_fields(fields, program, message))


def _nil(value: str) -> str | None:
    return None if value == "-" else value


class Rfc5424Parser:
    """`<PRI>VERSION TIMESTAMP HOST APP-NAME PROCID MSGID [SD] MSG`."""

    name = "rfc5424"

    def __init__(self, *, reference_time: datetime | None = None):
        self.reference_time = reference_time

    def parse(self, line: LogLine) -> Event | None:
        match = _RFC5424.match(line.text)
        if match is None:
            return None
        _pri, _version, stamp, host, app, procid, msgid, sd, message = match.groups()
        ts = None if stamp == "-" else parse_iso(stamp)
        if ts is None and stamp != "-":
            return None
        program = _nil(app)
        fields = _fields(program, procid if procid.isdigit() else None)
        fields.update(app_name=program, msgid=_nil(msgid), structured_data=_nil(sd))
        message = (message or "").removeprefix("\ufeff")
        if message.startswith("<Event"):
            event = xml_event(line, message)
            if event is not None:
                return event
        fields = {k: v for k, v in fields.items() if v is not None} | structured_data_fields(_nil(sd))
        return new_event(line, "rfc5424", ts=ts, host=_nil(host), program=program,
                         message=message, fields=add_message_fields(fields, program, message))
