"""Which year year-less dates (RFC 3164 syslog: "Mar 12 10:00:01") belong to, for each file alone.

A file's year comes from the file itself, never from other files of the run (a 2005 syslog next
to a 2026 access log is still from 2005): in order, `--year`; the file's own lines that state
their year (a line whose message repeats its stamp with the year, as ftpd's "at Fri Jun 17
07:07:00 2005"; ISO or Apache lines in the same file); the first line of the next newer file of
its rotation (auth.log.1 ends before auth.log begins); the file's modification time. No reference
lies after now: a stamp that would land more than a day after it belongs to the year before
(`timestamps.YearGuesser`). Each choice says which.

A line states its year when parsing it with two reference times ten years apart gives the same
time: no format list to keep, and every parser (the generic heuristic too) is asked the same way.
Owns: sampling a file's first lines for that, and the choice. Knows nothing of the pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePath

from logwarden.app.events import Event, LogLine
from logwarden.app.ingest import FINGERPRINT_BYTES, read_head, sniff_binary
from logwarden.app.ingest.files import rotation_sort_key
from logwarden.app.parse import parse_stream
from logwarden.app.parse.timestamps import MONTHS, YearGuesser

_PROBE_A = datetime(2001, 7, 1)
_PROBE_B = datetime(2011, 7, 1)
# Year-less lines are taken to lie within half a year of the dated lines they are compared with
# (the reference is "no later than"): a March line next to March 2024 lines is March 2024.
_HALF_YEAR = timedelta(days=182)
# A message that repeats its own stamp with the year: "… at Fri Jun 17 07:07:00 2005" (ftpd, cron mail)
# How far a file whose first 4 KiB state no year is read for a line that does
LONG_HEAD_BYTES = 64 * 1024
_STAMP_WITH_YEAR = re.compile(r"\b([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (?:[A-Z]{3,5} )?((?:19|20)\d\d)\b")


@dataclass(slots=True)
class FileDates:
    """What a file's first lines say about dates: the times of lines that state their year, and
    the first year-less stamp (as read against a probe year: its month, day and time count)."""

    dated: list[datetime] = field(default_factory=list)
    yearless: bool = False
    first_yearless: datetime | None = None
    mtime: datetime | None = None


def sample_dates(lines: list[LogLine], path: str | None = None, mtime: datetime | None = None) -> FileDates:
    found = FileDates(mtime=mtime)
    if not lines:
        return found
    _, first = parse_stream(lines, path=path, reference_time=_PROBE_A)
    _, second = parse_stream(lines, path=path, reference_time=_PROBE_B)
    for a, b in zip(first, second):
        if a.ts is None:
            continue
        if a.ts == b.ts:
            found.dated.append(a.ts)
            continue
        found.yearless = True
        found.first_yearless = found.first_yearless or a.ts
        stated = _year_in_message(a)
        if stated is not None:
            found.dated.append(stated)
    return found


def date_files(files: Sequence[Path], *, year: int | None = None) -> RunDates:
    """The date samples of a run's files (under `--year` only which have year-less lines)."""
    sample = file_dates if year is None else (lambda path: sample_dates(_head_lines(path), str(path)))
    return RunDates({str(path): sample(path) for path in files}, year=year)


def file_dates(path: Path) -> FileDates:
    """What the file's first lines say of its year; a longer head where its first 4 KiB state none."""
    sample = sample_dates(_head_lines(path), str(path), _mtime(path))
    if sample.yearless and not sample.dated:
        sample = sample_dates(_head_lines(path, LONG_HEAD_BYTES), str(path), sample.mtime)
    return sample


def _head_lines(path: Path, size: int = FINGERPRINT_BYTES) -> list[LogLine]:
    """The complete lines of the file's first bytes (decompressed); none for a binary file (EVTX)."""
    head = read_head(path, size) or b""
    if sniff_binary(head):
        return []
    texts = head.decode("utf-8", "replace").split("\n")[:-1]  # the last piece may be cut
    return [LogLine(source=str(path), inode=0, offset=0, line_no=n, text=t.rstrip("\r"))
            for n, t in enumerate(texts, 1)]


def _mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime)
    except OSError:
        return None


def _year_in_message(event: Event) -> datetime | None:
    """The stamp's time in the year its message states, where the message repeats the stamp."""
    assert event.ts is not None
    for match in _STAMP_WITH_YEAR.finditer(event.message):
        mon, day, hh, mm, ss, year = match.groups()
        if MONTHS.get(mon) == event.ts.month and int(day) == event.ts.day:
            try:
                return event.ts.replace(year=int(year), hour=int(hh), minute=int(mm), second=int(ss))
            except ValueError:  # Feb 29 in a year without one: not this line's year
                continue
    return None


@dataclass(slots=True)
class YearChoice:
    reference_time: datetime | None  # for `YearGuesser`: year-less lines are no later than this
    reason: str | None  # None: the file has no year-less lines (nothing was chosen)


class RunDates:
    """The date samples of a run's files, and the reference time each file's year-less lines get
    from its own sample (or its rotation's newer file)."""

    def __init__(self, samples: dict[str, FileDates], *, year: int | None = None):
        self.samples = samples
        self.year = year

    def choose(self, name: str) -> YearChoice:
        sample = self.samples.get(name)
        if self.year is not None:
            said = sample is None or sample.yearless
            return YearChoice(datetime(self.year, 12, 31, 23, 59, 59), f"year {self.year} (--year)" if said else None)
        mtime = sample.mtime if sample else _mtime(Path(name))
        now = datetime.now()
        if sample is None or not sample.yearless:
            return YearChoice(_no_later(mtime, now), None)
        if sample.dated:
            return self._near(sample.dated, now)
        return self._from_time(name, mtime, now, set())

    def _from_time(self, name: str, mtime: datetime | None, now: datetime, seen: set[str]) -> YearChoice:
        """The file's modification time (no later than now), or the start of its newer rotation if earlier."""
        reference = _no_later(mtime, now) or now
        later = f" (after now, {now:%Y-%m-%d})" if mtime and mtime > now else ""
        reason = (f"the file's modification time ({mtime:%Y-%m-%d}){later}" if mtime else f"now ({now:%Y-%m-%d})") + \
            ": none of its lines states its year; --year sets it"
        start = self._start_of_newer(name, now, seen | {name})
        if start is not None and start[1] < reference:
            newer, began = start
            return YearChoice(began, f"the first line of {PurePath(newer).name}, its rotation's newer file "
                                     f"({began:%Y-%m-%d}); --year sets it")
        return YearChoice(reference, reason)

    def _start_of_newer(self, name: str, now: datetime, seen: set[str]) -> tuple[str, datetime] | None:
        """(name, time of its first year-less line) of the file logrotate wrote after `name`, if in the run."""
        newer = _newer_rotation(name, self.samples)
        if newer is None or newer in seen:
            return None
        sample = self.samples[newer]
        if sample.first_yearless is None:
            return None
        choice = self._near(sample.dated, now) if sample.dated else self._from_time(newer, sample.mtime, now, seen)
        first = sample.first_yearless
        began = YearGuesser(choice.reference_time).build(first.month, first.day, first.hour, first.minute, first.second)
        return (newer, began) if began is not None else None

    @staticmethod
    def _near(times: Iterable[datetime], now: datetime) -> YearChoice:
        latest = max(ts.replace(tzinfo=None) for ts in times)
        return YearChoice(min(latest + _HALF_YEAR, now), f"the year its own lines state (latest {latest:%Y-%m-%d})")


def _no_later(when: datetime | None, now: datetime) -> datetime | None:
    return None if when is None else min(when, now)


def _newer_rotation(name: str, samples: dict[str, FileDates]) -> str | None:
    """auth.log.2.gz → auth.log.1 → auth.log: the sampled file of the same folder one rotation newer."""
    path = PurePath(name)
    base, order, _ = rotation_sort_key(path.name)
    if order == 0:
        return None
    for other in samples:
        other_path = PurePath(other)
        other_base, other_order, _ = rotation_sort_key(other_path.name)
        if other_path.parent == path.parent and other_base == base and other_order == order + 1:
            return other
    return None
