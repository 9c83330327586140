"""Which year year-less dates (RFC 3164 syslog: "Mar 12 10:00:01") belong to, for a run of files.

A file's modification time says when it was last written, not when its lines were: a checkout, a
copy or an archive gives the lines of one intrusion two different years. Lines that state their
year (an access log's [12/Mar/2024:…], Windows events, CloudTrail) are better witnesses: the year
comes from dated lines of the same host in the run when there are any, else of the files in the
same folder, else of any file of the run, else from the file's modification time — or from
`--year`. Each choice says which.

A line states its year when parsing it with two reference times ten years apart gives the same
time: no format list to keep, and every parser (the generic heuristic too) is asked the same way.
Owns: sampling a file's first lines for that, and the choice. Knows nothing of the pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import PurePath

from logwarden.app.events import LogLine
from logwarden.app.parse import parse_stream

_PROBE_A = datetime(2001, 7, 1)
_PROBE_B = datetime(2011, 7, 1)
# Year-less lines are taken to lie within half a year of the dated lines they are compared with
# (the reference is "no later than"): a March line next to March 2024 lines is March 2024.
_HALF_YEAR = timedelta(days=182)


@dataclass(slots=True)
class FileDates:
    """What a file's first lines say about dates: the (host, time) of lines that state their
    year, and the hosts of lines that do not."""

    dated: list[tuple[str | None, datetime]] = field(default_factory=list)
    yearless: bool = False
    yearless_hosts: set[str] = field(default_factory=set)


def sample_dates(lines: list[LogLine], path: str | None = None) -> FileDates:
    found = FileDates()
    if not lines:
        return found
    _, first = parse_stream(lines, path=path, reference_time=_PROBE_A)
    _, second = parse_stream(lines, path=path, reference_time=_PROBE_B)
    for a, b in zip(first, second):
        if a.ts is None:
            continue
        if a.ts == b.ts:
            found.dated.append((a.host, a.ts))
        else:
            found.yearless = True
            if a.host:
                found.yearless_hosts.add(a.host)
    return found


@dataclass(slots=True)
class YearChoice:
    reference_time: datetime | None  # for `YearGuesser`: year-less lines are no later than this
    reason: str | None  # None: the file has no year-less lines (nothing was chosen)


class RunDates:
    """The dated lines of a run's files, and the reference time each file's year-less lines get."""

    def __init__(self, samples: dict[str, FileDates], *, year: int | None = None):
        self.samples = samples
        self.year = year

    def choose(self, name: str, mtime: datetime | None) -> YearChoice:
        sample = self.samples.get(name)
        if self.year is not None:
            return YearChoice(datetime(self.year, 12, 31, 23, 59, 59), f"year {self.year} (--year)")
        if sample is None or not sample.yearless:
            return YearChoice(mtime, None)
        others = [(other, host, ts) for other, s in self.samples.items() if other != name for host, ts in s.dated]
        same_host = [ts for _, host, ts in others if host and host in sample.yearless_hosts]
        if same_host:
            hosts = ", ".join(sorted(sample.yearless_hosts & {h for _, h, _ in others if h}))
            return self._near(same_host, f"dated lines of host {hosts} in this run")
        folder = str(PurePath(name).parent)
        same_folder = [ts for other, _, ts in others if str(PurePath(other).parent) == folder]
        if same_folder:  # a host's /var/log: its access log dates its syslog better than another host's files
            return self._near(same_folder, "dated lines of the files beside it")
        if others:
            return self._near([ts for _, _, ts in others], "dated lines of this run")
        when = f" ({mtime:%Y-%m-%d})" if mtime else ""
        return YearChoice(mtime, f"the file's modification time{when}: no line of this run states its year; "
                                 "--year sets it")

    @staticmethod
    def _near(times: Iterable[datetime], witness: str) -> YearChoice:
        latest = max(ts.replace(tzinfo=None) for ts in times)
        return YearChoice(latest + _HALF_YEAR, f"year of {witness} (latest {latest:%Y-%m-%d})")
