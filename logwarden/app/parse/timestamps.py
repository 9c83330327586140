"""Timestamps as logs write them: year-less syslog dates, Apache dates, ISO 8601, epochs, the
dotted and dash-joined dates of machine logs (`2005.06.03`, `2005-06-03-15.42.50.675872`).

Owns: turning those strings into `datetime`s (aware when the log states a zone, naive local time
otherwise), inferring the missing year of RFC 3164 dates, the timestamp heuristic used for
lines no parser recognises, and `usable_time`: the range of times a log line may carry
(`EARLIEST_YEAR` … now + `_FUTURE_SLACK`), which every parsed time is checked against. Impossible dates
(Feb 30) give None, never an exception to callers; a year-less Feb 29 gets the latest leap year
not after the reference time (the log cannot be from a year without one).
Knows nothing about Events or which format a line is.
"""

from __future__ import annotations

import math
import re
import time
from datetime import date, datetime, timedelta, timezone

MONTHS = {name: i for i, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
MONTHS.update({name.upper(): i for name, i in list(MONTHS.items())})

# A year-less date may lie this far after the reference time (clock skew, mtime set early).
_FUTURE_SLACK = timedelta(days=1)
# Going back further than this from one line to the next means the year rolled over (Dec → Jan).
_ROLLOVER_JUMP = timedelta(days=180)
_tz_cache: dict[str, timezone] = {}
# The times a log line may carry. A log dated before the Unix epoch or in the next century is
# damaged or forged (a remote syslog sender chooses its timestamp): the line is kept, undated.
EARLIEST_YEAR, LATEST_YEAR = 1970, 2100
_EARLIEST = datetime(EARLIEST_YEAR, 1, 1, tzinfo=timezone.utc)
_END = datetime(LATEST_YEAR + 1, 1, 1, tzinfo=timezone.utc)
_EARLIEST_NAIVE, _END_NAIVE = _EARLIEST.replace(tzinfo=None), _END.replace(tzinfo=None)


def make_datetime(year: int, month: int, day: int, hour: int, minute: int, second: int,
                  micro: int = 0, tz: timezone | None = None) -> datetime | None:
    """`datetime(...)`, or None when the fields are impossible (Feb 30, hour 25)."""
    try:
        return datetime(year, month, day, hour, minute, second, micro, tz)
    except ValueError:
        return None


def usable_time(ts: datetime) -> bool:
    """Can `ts` be a log line's time: from `EARLIEST_YEAR` to a day from now (aware times in UTC, so
    year 9999 at -14:00, which has no UTC time, cannot). A log cannot have written what has not
    happened yet: a later stated time is a wrong clock or a forgery (a remote sender chooses its
    timestamp, and a time in 2099 would sort an event out of every time filter), so the line is kept,
    undated (issue 45: no event later than now + 1 day)."""
    latest_naive, latest_aware = _latest()
    if ts.tzinfo is None:
        return _EARLIEST_NAIVE <= ts < _END_NAIVE and ts <= latest_naive
    return _EARLIEST <= ts < _END and ts <= latest_aware  # an aware comparison never converts: no overflow


_latest_cache: tuple[float, datetime, datetime] = (-math.inf, _END_NAIVE, _END)
_LATEST_REFRESH_S = 30.0  # now + a day, computed again this often (every parsed time asks)


def _latest() -> tuple[datetime, datetime]:
    """The latest usable time, naive local and aware."""
    global _latest_cache
    if time.monotonic() - _latest_cache[0] > _LATEST_REFRESH_S:
        now = datetime.now(timezone.utc)
        _latest_cache = (time.monotonic(), (now.astimezone() + _FUTURE_SLACK).replace(tzinfo=None),
                         now + _FUTURE_SLACK)
    return _latest_cache[1], _latest_cache[2]


def micros(fraction: str | None) -> int:
    """'123' → 123000 µs; more than 6 digits are cut (Windows writes 7)."""
    if not fraction:
        return 0
    return int(fraction[:6].ljust(6, "0"))


def offset_tz(text: str) -> timezone | None:
    """'+0100', '-07:00', 'Z' → a fixed-offset timezone (cached, there are few)."""
    tz = _tz_cache.get(text)
    if tz is None:
        tz = _parse_offset(text)
        if tz is not None:
            _tz_cache[text] = tz
    return tz


def _parse_offset(text: str) -> timezone | None:
    if text in ("Z", "z", "UTC", "GMT"):
        return timezone.utc
    digits = text[1:].replace(":", "")
    if text[:1] not in "+-" or len(digits) != 4 or not digits.isdigit():
        return None
    minutes = int(digits[:2]) * 60 + int(digits[2:])
    if minutes >= 24 * 60:
        return None
    return timezone(timedelta(minutes=-minutes if text[0] == "-" else minutes))


def parse_iso(text: str) -> datetime | None:
    """ISO 8601 / RFC 3339 (also with a space, 'Z', 7 fraction digits, comma decimals)."""
    match = _ISO.match(text)
    if match is None:
        return None
    y, mo, d, h, mi, s, frac, zone = match.groups()
    tz = offset_tz(zone) if zone else None
    return make_datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micros(frac), tz)


_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?"
                  r"\s?(Z|[+-]\d\d:?\d\d)?")


def from_epoch(value: float) -> datetime | None:
    """Seconds (or ms / µs, when too large for seconds: journald writes µs) since 1970 → UTC."""
    if not math.isfinite(value):  # NaN, or JSON's 1e400 (inf: dividing it down would never end)
        return None
    while value > 1e11:
        value /= 1000.0
    try:
        return datetime.fromtimestamp(value, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None


def parse_any(value: object) -> datetime | None:
    """A timestamp field from JSON: ISO string, epoch number, or '/Date(ms)/' (.NET JSON)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return from_epoch(float(value))
    if not isinstance(value, str):
        return None
    if value.startswith("/Date("):
        digits = re.match(r"/Date\((-?\d+)", value)
        return from_epoch(int(digits[1]) / 1000.0) if digits else None
    if value.replace(".", "", 1).isdigit():
        return from_epoch(float(value))
    return parse_iso(value)


class YearGuesser:
    """Supplies the year that RFC 3164 dates leave out.

    A line is assumed to be no later than the reference time (the file's mtime, or now): a date
    after it belongs to the previous year. When consecutive lines jump back by more than half a
    year, the log crossed New Year after the reference point, and the year goes up by one — never
    to a time more than a day after now (a log is not written in the future).
    """

    def __init__(self, reference_time: datetime | None = None):
        now = datetime.now()
        ref = reference_time or now
        self.ref_date = (ref + _FUTURE_SLACK).date()
        self.ref_year = ref.year
        self.latest = now + _FUTURE_SLACK
        self._years: dict[tuple[int, int], int] = {}
        self.previous: datetime | None = None

    def year_for(self, month: int, day: int) -> int:
        year = self._years.get((month, day))
        if year is None:
            year = self._years[(month, day)] = self._guess(month, day)
        return year

    def _guess(self, month: int, day: int) -> int:
        # Feb 29 exists one year in four: look back (at most 8 years, the Gregorian gap) for one.
        for year in range(self.ref_year, self.ref_year - 9, -1):
            try:
                candidate = date(year, month, day)
            except ValueError:  # Feb 29 outside a leap year, or impossible (Feb 30): try earlier
                continue
            if candidate <= self.ref_date:
                return year
        return self.ref_year  # impossible in every year: the caller gets None from make_datetime

    def settle(self, ts: datetime) -> datetime:
        """Apply the New Year rule against the previous line and remember `ts`."""
        previous = self.previous
        if previous is not None and previous - ts > _ROLLOVER_JUMP:
            bumped = make_datetime(ts.year + 1, ts.month, ts.day, ts.hour, ts.minute,
                                   ts.second, ts.microsecond, ts.tzinfo)
            if bumped is not None and bumped <= self.latest:
                ts = bumped
        self.previous = ts
        return ts

    def build(self, month: int, day: int, hour: int, minute: int, second: int,
              micro: int = 0) -> datetime | None:
        """The full naive local datetime of a year-less date, or None if it is impossible."""
        ts = make_datetime(self.year_for(month, day), month, day, hour, minute, second, micro)
        return None if ts is None else self.settle(ts)


# --- the heuristic for lines no parser knows -------------------------------------------------

_APACHE = re.compile(r"(\d{1,2})/([A-Z][a-z]{2})/(\d{4}):(\d\d):(\d\d):(\d\d)(?: ([+-]\d{4}))?")
_CTIME = re.compile(r"(?:[A-Z][a-z]{2} )?([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d)"
                    r"(?:\.(\d+))?(?: (\d{4}))?")
_SLASHED = re.compile(r"(\d{2,4})[/.](\d\d)[/.](\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_COMPACT = re.compile(r"(\d{2})(\d{2})(\d{2}) (\d{2})(\d{2})(\d{2})\b")  # HDFS: 081109 203615
# DB2 / IBM machine logs (Blue Gene RAS): 2005-06-03-15.42.50.675872
_DASHED = re.compile(r"(?<!\d)(\d{4})-(\d\d)-(\d\d)-(\d\d)\.(\d\d)\.(\d\d)(?:\.(\d{1,6}))?(?!\d)")
# A date alone as a column: 2005.06.03 (a dotted date with a time is `_SLASHED`'s)
_DOTTED = re.compile(r"(?:^|(?<=\s))(\d{4})\.(\d\d)\.(\d\d)(?=\s|$)")
# Epoch seconds (2001–2033: ten digits starting with 1) where logs put them: a column of its own
# (squid's first, an HPC or RAS log's second or fifth) or audit(…). Inside a word or a longer
# number (an id, a path) it is not a time.
_EPOCH = re.compile(r"(?:^\[?|(?<=\s)|audit\()(1[0-9]{9})(?:\.(\d{1,6}))?(?=[\s\]:),]|$)")
_HEAD = 80  # timestamps sit near the start; do not scan whole long lines


def find_timestamp(text: str, years: YearGuesser) -> datetime | None:
    """Best-effort timestamp of a free-form line (first match in its first characters)."""
    head = text[:_HEAD]
    for finder in (_iso_in, _dashed_in, _apache_in, _ctime_in, _slashed_in, _compact_in, _epoch_in, _dotted_in):
        ts = finder(head, years)
        if ts is not None:
            return ts
    return None


def _iso_in(head: str, years: YearGuesser) -> datetime | None:
    match = _ISO.search(head)
    return parse_iso(match[0]) if match else None


def _apache_in(head: str, years: YearGuesser) -> datetime | None:
    match = _APACHE.search(head)
    if match is None or match[2] not in MONTHS:
        return None
    d, mon, y, h, mi, s, zone = match.groups()
    tz = offset_tz(zone) if zone else None
    return make_datetime(int(y), MONTHS[mon], int(d), int(h), int(mi), int(s), 0, tz)


def _ctime_in(head: str, years: YearGuesser) -> datetime | None:
    match = _CTIME.search(head)
    if match is None or match[1] not in MONTHS:
        return None
    mon, d, h, mi, s, frac, y = match.groups()
    month, day = MONTHS[mon], int(d)
    if y:
        return make_datetime(int(y), month, day, int(h), int(mi), int(s), micros(frac))
    return years.build(month, day, int(h), int(mi), int(s), micros(frac))


def _slashed_in(head: str, years: YearGuesser) -> datetime | None:
    match = _SLASHED.search(head)
    if match is None:
        return None
    y, mo, d, h, mi, s, frac = match.groups()
    year = int(y) + 2000 if len(y) == 2 else int(y)
    return make_datetime(year, int(mo), int(d), int(h), int(mi), int(s), micros(frac))


def _compact_in(head: str, years: YearGuesser) -> datetime | None:
    match = _COMPACT.match(head)
    if match is None:
        return None
    y, mo, d, h, mi, s = (int(g) for g in match.groups())
    return make_datetime(2000 + y, mo, d, h, mi, s)


def _epoch_in(head: str, years: YearGuesser) -> datetime | None:
    match = _EPOCH.search(head)
    if match is None:
        return None
    return from_epoch(float(match[1] + "." + (match[2] or "0")))


def _dashed_in(head: str, years: YearGuesser) -> datetime | None:
    match = _DASHED.search(head)
    if match is None:
        return None
    y, mo, d, h, mi, s, frac = match.groups()
    return make_datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micros(frac))


def _dotted_in(head: str, years: YearGuesser) -> datetime | None:
    match = _DOTTED.search(head)
    if match is None:
        return None
    y, mo, d = (int(g) for g in match.groups())
    return make_datetime(y, mo, d, 0, 0, 0)
