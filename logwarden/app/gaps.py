"""`logwarden gaps PATH…`: where a log lost records, or was made to (Chainsaw's `analyse gaps`,
extended to text logs).

Owns: four kinds of finding, each with its times and where it is:
- `record_ids`: a hole in the EventRecordID sequence of one Windows channel on one computer (the ids
  are consecutive per channel; a hole is records deleted, a log that wrapped, or a filtered export);
- `cleared`: a log cleared on purpose (Security 1102, System 104, both written by the Eventlog service);
- `audit_serials`: a hole in the serial numbers of `msg=audit(ts:serial)` per host (the kernel numbers
  every audit event; a hole is events dropped — backlog, rate limit — or lines removed); a serial
  that goes down is a restart, not a hole;
- `quiet`: a silence in a text log (syslog, journald, auditd, any timestamped lines) much longer than
  the file's own typical time between lines.
Files are read through logwarden's ingest and parsers; nothing is stored. A curated or filtered
sample naturally has holes: a finding is where to look, not proof of deletion.
Knows nothing of the CLI or of detection.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from logwarden.app.events import Event
from logwarden.app.logons import file_events, iso_time, log_files, utc_time
from logwarden.app.parse import bounded_json
from logwarden.app.parse.windows import event_number

KINDS = ("record_ids", "cleared", "audit_serials", "quiet")
MIN_QUIET = timedelta(minutes=30)  # `--min-quiet`: no silence shorter than this is a finding
QUIET_FACTOR = 50.0  # `--factor`: a silence this many times the file's median time between lines
RESTART_DROP = 1000  # a serial this far below the highest seen is a new numbering, not a late record
MIN_LINES_FOR_QUIET = 20  # fewer timed lines tell nothing of what is typical
_CLEARED = {1102: "the Security log was cleared", 104: "an event log was cleared"}
_CLEARED_LOG = re.compile(r"^The (.+?) log file was cleared")
_ACCOUNT_NAME = re.compile(r"Account Name:\s*(\S+)")
_TEXT_FORMATS = frozenset(("syslog", "rfc5424", "auditd", "json", "generic", "access", "apache_error"))


@dataclass(slots=True)
class Gap:
    kind: str  # one of KINDS
    source: str  # the file
    scope: str  # channel@computer, the audit host, or the file
    start: datetime | None  # the last record before the gap (for `cleared`: when it was cleared)
    end: datetime | None  # the first record after it
    missing: int = 0  # records (ids, serials) missing; 0 for quiet periods and clears
    before: int | None = None  # the id, serial or line number before the gap
    after: int | None = None  # … and after it
    detail: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "source": self.source, "scope": self.scope, "start": iso_time(self.start),
                "end": iso_time(self.end), "seconds": self.seconds, "missing": self.missing, "before": self.before,
                "after": self.after, "detail": self.detail}

    @property
    def seconds(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return round((self.end - self.start).total_seconds(), 3)


@dataclass(slots=True)
class GapReport:
    gaps: list[Gap] = field(default_factory=list)
    files: int = 0
    events: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class GapOptions:
    min_quiet: timedelta = MIN_QUIET
    factor: float = QUIET_FACTOR
    kinds: tuple[str, ...] = KINDS


def find_gaps(paths: Sequence[str | Path], options: GapOptions = GapOptions()) -> GapReport:
    """Every gap in the files under `paths`, file by file, in time order within each file.
    A path that does not exist raises `InputError` (from `iter_files`) before anything is read."""
    report = GapReport()
    for path in log_files(paths, report.errors):
        report.files += 1
        report.gaps += file_gaps(str(path), _counted(file_events(path, report.errors), report), options)
    return report


def _counted(events: Iterable[Event], report: GapReport) -> Iterable[Event]:
    for event in events:
        report.events += 1
        yield event


def file_gaps(source: str, events: Iterable[Event], options: GapOptions = GapOptions()) -> list[Gap]:
    """The gaps of one file's events."""
    ids: dict[str, list[tuple[int, datetime | None]]] = defaultdict(list)
    serials: dict[str, list[tuple[int, datetime | None]]] = defaultdict(list)
    times: list[tuple[datetime, int]] = []
    gaps: list[Gap] = []
    for event in events:
        ts = utc_time(event.ts)
        if event.format == "windows":
            _windows_event(event, ts, source, ids, gaps)
        elif event.format in _TEXT_FORMATS and ts is not None:
            times.append((ts, event.line_no))
        if event.format == "auditd":
            serial = _audit_serial(event)
            if serial is not None:
                serials[event.host or "-"].append((serial, ts))
    if "record_ids" in options.kinds:
        for scope, seen in ids.items():
            gaps += _id_holes("record_ids", source, scope, seen, "EventRecordID")
    if "audit_serials" in options.kinds:
        for scope, seen in serials.items():
            gaps += _serial_holes(source, scope, seen)
    if "quiet" in options.kinds:
        gaps += quiet_periods(source, times, options)
    if "cleared" not in options.kinds:
        gaps = [g for g in gaps if g.kind != "cleared"]
    return sorted(gaps, key=lambda g: (g.start or datetime.min.replace(tzinfo=timezone.utc), g.kind))


def _windows_event(event: Event, ts: datetime | None, source: str,
                   ids: dict[str, list[tuple[int, datetime | None]]], gaps: list[Gap]) -> None:
    obj = _json(event.raw)
    channel = str(event.fields.get("Channel") or "-")
    scope = f"{channel}@{event.host or '-'}"
    record_id = _record_id(obj) if obj is not None else None
    if record_id is not None:
        ids[scope].append((record_id, ts))
    event_id = event.fields.get("EventID")
    provider = str(event.fields.get("Provider") or "").lower()
    if event_id in _CLEARED and (provider.endswith("eventlog") or (event_id == 1102 and not provider)):
        message = str(event.fields.get("Message") or "")
        cleared = (_cleared_channel(obj) or _message_part(_CLEARED_LOG, message) or "a channel") \
            if event_id == 104 else "Security"
        who = event.fields.get("SubjectUserName") or _message_part(_ACCOUNT_NAME, message)
        detail = f"{_CLEARED[event_id]} ({cleared})" + (f" by {who}" if who else "")
        gaps.append(Gap("cleared", source, scope, ts, None, before=record_id, after=record_id, detail=detail))


def _record_id(obj: dict) -> int | None:
    """EventRecordID in the shapes the windows parser reads: evtx_dump, Winlogbeat, flat exports."""
    event = obj.get("Event")
    system = event.get("System") if isinstance(event, dict) else None
    winlog = obj.get("winlog")
    for value in ((system or {}).get("EventRecordID") if isinstance(system, dict) else None,
                  winlog.get("record_id") if isinstance(winlog, dict) else None,
                  obj.get("record_number"), obj.get("EventRecordID"), obj.get("RecordNumber")):
        number = event_number(value)
        if number is not None:
            return number
    return None


def _cleared_channel(obj: dict | None) -> str | None:
    """104 names the channel that was cleared in its UserData (the event itself is in System)."""
    try:
        return str(obj["Event"]["UserData"]["LogFileCleared"]["Channel"])  # type: ignore[index]
    except (KeyError, TypeError):
        return None


def _message_part(pattern: re.Pattern[str], message: str) -> str | None:
    """Exports that keep only the rendered text (Security-Datasets, Get-WinEvent) say it in the message."""
    match = pattern.search(message)
    return match.group(1) if match else None


def _audit_serial(event: Event) -> int | None:
    audit_id = str(event.fields.get("audit_id") or "")
    _, _, serial = audit_id.rpartition(":")
    return int(serial) if serial.isdigit() else None


def _id_holes(kind: str, source: str, scope: str, seen: list[tuple[int, datetime | None]], name: str) -> list[Gap]:
    """Holes between consecutive distinct ids, in id order (EVTX chunks need not be in order)."""
    ordered = sorted(dict(reversed(seen)).items())  # the first time of each id
    return [Gap(kind, source, scope, before_ts, after_ts, missing=after - before - 1, before=before, after=after,
                detail=f"{after - before - 1:,} {name}s missing: {_span(before, after)}")
            for (before, before_ts), (after, after_ts) in zip(ordered, ordered[1:]) if after > before + 1]


def _serial_holes(source: str, scope: str, seen: list[tuple[int, datetime | None]]) -> list[Gap]:
    """Audit serials, in runs: several records of one event share a serial and records reach the log
    a little out of order (CPUs, collectors), so each run's distinct serials are sorted before holes
    are looked for. A serial far below the run's highest is auditd or the kernel numbering again (a
    reboot): a finding of its own, and a new run."""
    gaps: list[Gap] = []
    run: list[tuple[int, datetime | None]] = []
    highest = None
    for serial, ts in seen:
        if highest is not None and serial < highest[0] - RESTART_DROP:
            gaps.append(Gap("audit_serials", source, scope, highest[1], ts, before=highest[0], after=serial,
                            detail=f"audit serials start again ({highest[0]} → {serial}): a restart or a reboot"))
            gaps += _id_holes("audit_serials", source, scope, run, "audit serial")
            run, highest = [], None
        run.append((serial, ts))
        if highest is None or serial > highest[0]:
            highest = (serial, ts)
    return gaps + _id_holes("audit_serials", source, scope, run, "audit serial")


def quiet_periods(source: str, times: list[tuple[datetime, int]], options: GapOptions = GapOptions()) -> list[Gap]:
    """Silences in the time a file covers, longer than both `min_quiet` and `factor` times the file's
    median step forward between lines. A line earlier than one before it (interleaved writers, a
    merged file) is inside the time already covered: time moves on only from the latest stamp seen."""
    steps: list[tuple[float, tuple[datetime, int], tuple[datetime, int]]] = []
    latest: tuple[datetime, int] | None = None
    for stamp in times:
        if latest is not None and stamp[0] > latest[0]:
            steps.append(((stamp[0] - latest[0]).total_seconds(), latest, stamp))
        if latest is None or stamp[0] > latest[0]:
            latest = stamp
    if len(times) < MIN_LINES_FOR_QUIET or not steps:
        return []
    typical = statistics.median(step for step, _, _ in steps)
    threshold = max(options.min_quiet.total_seconds(), options.factor * typical)
    return [Gap("quiet", source, source, before[0], after[0], before=before[1], after=after[1],
                detail=f"no line for {_duration(step)} after line {before[1]} (typically {_duration(typical)} "
                       f"between lines)")
            for step, before, after in steps if step >= threshold]


def _span(before: int, after: int) -> str:
    """The missing numbers: "4180302" or "4180302-4180309"."""
    return str(before + 1) if after == before + 2 else f"{before + 1}-{after - 1}"


def _json(text: str) -> dict | None:
    try:
        value = bounded_json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    days, hours = divmod(hours, 24)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return " ".join(parts[:2])
