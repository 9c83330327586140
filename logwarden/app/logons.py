"""`logwarden logons PATH…`: who signed in from where, and who failed to (Hayabusa's `logon-summary`).

Owns: which parsed events are sign-ins and whether they succeeded (sshd `Accepted`/`Failed`,
Windows 4624/4625, Kerberos pre-authentication 4771, NTLM validation 4776, explicit credentials 4648,
CloudTrail `ConsoleLogin`, Entra ID sign-in logs, Microsoft 365 UserLoggedIn/UserLoginFailed), and
the summary per account and source address: counts and the first and last time of each outcome. Files are read through logwarden's own ingest and parsers; nothing is
stored. Knows nothing of the CLI or of detection.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from logwarden.app.events import ErrorRow, Event
from logwarden.app.ingest import Skipped, TailRead, iter_files
from logwarden.app.parse import parse_stream
from logwarden.app.parse.messages import program_key

NO_SOURCE = "-"  # a sign-in that names no address (a console logon, a local 4625)
# Windows writes "-", "::1" or "127.0.0.1" where a logon came from nowhere else
_NO_ADDRESS = frozenset(("", "-", "::1", "127.0.0.1", "::ffff:127.0.0.1"))
_NO_ACCOUNT = frozenset(("", "-"))
_ENTRA_CATEGORIES = frozenset(("SignInLogs", "NonInteractiveUserSignInLogs", "ServicePrincipalSignInLogs",
                               "ManagedIdentitySignInLogs"))
_LOGON_TYPES = {"0": "system", "2": "interactive", "3": "network", "4": "batch", "5": "service", "7": "unlock",
                "8": "network cleartext", "9": "new credentials", "10": "remote interactive", "11": "cached interactive",
                "12": "cached remote interactive", "13": "cached unlock"}
_M365_OUTCOMES = {"UserLoggedIn": True, "UserLoginFailed": False}
# 4624/4625 logon types: 0 and 5 are the system and services logging on themselves (Hayabusa
# leaves them out of its summary too); they would bury the people
_SERVICE_LOGON_TYPES = frozenset(("0", "5"))
_SYSTEM_ACCOUNTS = frozenset(("system", "local service", "network service", "anonymous logon", "dwm-1", "dwm-2",
                              "umfd-0", "umfd-1", "umfd-2"))


@dataclass(frozen=True, slots=True)
class Logon:
    """One sign-in attempt as a log states it."""

    account: str
    source: str  # the client address, or NO_SOURCE
    success: bool
    ts: datetime | None
    via: str  # sshd, windows-4624, …, cloudtrail
    host: str | None  # the machine signed in to
    count: int = 1  # rsyslog's "message repeated N times: [ Failed password … ]" stands for N
    logon_type: str | None = None  # Windows 4624/4625: "3 network", "10 remote interactive", …


@dataclass(slots=True)
class LogonRow:
    """One account and source address: how often it succeeded and failed, and when."""

    account: str
    source: str
    successes: int = 0
    failures: int = 0
    first_success: datetime | None = None
    last_success: datetime | None = None
    first_failure: datetime | None = None
    last_failure: datetime | None = None
    via: set[str] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    logon_types: set[str] = field(default_factory=set)

    def add(self, logon: Logon) -> None:
        self.via.add(logon.via)
        if logon.host:
            self.hosts.add(logon.host)
        if logon.logon_type:
            self.logon_types.add(logon.logon_type)
        ts = utc_time(logon.ts)
        if logon.success:
            self.successes += logon.count
            self.first_success, self.last_success = _earlier(self.first_success, ts), _later(self.last_success, ts)
        else:
            self.failures += logon.count
            self.first_failure, self.last_failure = _earlier(self.first_failure, ts), _later(self.last_failure, ts)

    def as_dict(self) -> dict:
        return {"account": self.account, "source": self.source, "successes": self.successes,
                "failures": self.failures, "first_success": iso_time(self.first_success),
                "last_success": iso_time(self.last_success), "first_failure": iso_time(self.first_failure),
                "last_failure": iso_time(self.last_failure), "via": sorted(self.via), "hosts": sorted(self.hosts),
                "logon_types": sorted(self.logon_types)}


@dataclass(slots=True)
class LogonSummary:
    rows: list[LogonRow]
    files: int = 0
    events: int = 0
    logons: int = 0
    errors: list[str] = field(default_factory=list)  # files or parts that could not be read


def summarise(paths: Sequence[str | Path], *, include_service: bool = False) -> LogonSummary:
    """The logon summary of every file under `paths`: rows with failures first, then by count.
    A path that does not exist raises `InputError` (from `iter_files`) before anything is read."""
    rows: dict[tuple[str, str], LogonRow] = {}
    summary = LogonSummary(rows=[])
    for events in _file_events(paths, summary):
        for event in events:
            summary.events += 1
            logon = logon_of(event, include_service=include_service)
            if logon is None:
                continue
            summary.logons += 1
            key = (logon.account, logon.source)
            rows.setdefault(key, LogonRow(*key)).add(logon)
    summary.rows = sorted(rows.values(), key=lambda r: (-r.failures, -r.successes, r.account, r.source))
    return summary


def _file_events(paths: Sequence[str | Path], summary: LogonSummary) -> Iterator[Iterable[Event]]:
    for path in log_files(paths, summary.errors):
        summary.files += 1
        yield file_events(path, summary.errors)


def log_files(paths: Sequence[str | Path], errors: list[str]) -> Iterator[Path]:
    """The files under `paths` that can be read (`iter_files`: skipped ones left out, unreadable ones
    noted in `errors`)."""
    for item in iter_files(paths):
        if isinstance(item, ErrorRow):
            errors.append(item.message)
        elif not isinstance(item, Skipped):
            yield item


def file_events(path: Path, errors: list[str]) -> Iterator[Event]:
    """The events of one file, as analyze parses them; what cannot be read goes to `errors`."""
    def lines():
        for item in TailRead(path, final_partial=True):
            if isinstance(item, ErrorRow):
                errors.append(item.message)
            else:
                yield item

    _, events = parse_stream(lines(), path=str(path), reference_time=_mtime(path))
    return events


def logon_of(event: Event, *, include_service: bool = False) -> Logon | None:
    """The sign-in an event states, or None when it is not one."""
    if event.format == "windows":
        return _windows_logon(event.fields, event, include_service)
    if event.format == "cloudtrail":
        return _console_login(event.fields, event)
    if event.format == "json":
        return _cloud_sign_in(event.fields, event)
    if program_key(event.program) == "sshd" and event.fields.get("outcome") in ("accepted", "failed"):
        return _sshd_logon(event)
    return None


def _sshd_logon(event: Event) -> Logon | None:
    fields = event.fields
    account = str(fields.get("user") or "")
    if account in _NO_ACCOUNT:
        return None
    repeat = fields.get("repeat")
    return Logon(account, str(fields.get("src_ip") or NO_SOURCE), fields["outcome"] == "accepted", event.ts, "sshd",
                 event.host, repeat if isinstance(repeat, int) and repeat > 1 else 1)


def _windows_logon(fields: dict, event: Event, include_service: bool) -> Logon | None:
    event_id = fields.get("EventID")
    if event_id in (4624, 4625):
        if not include_service and str(fields.get("LogonType")) in _SERVICE_LOGON_TYPES:
            return None
        success = event_id == 4624
        source = fields.get("IpAddress")
    elif event_id == 4648:  # a logon with explicit credentials (runas, a scripted login): an attempt that worked
        success, source = True, fields.get("IpAddress")
    elif event_id == 4771:  # Kerberos pre-authentication failed (the DC's view of a wrong password)
        success, source = False, _without_ipv6_prefix(fields.get("IpAddress"))
    elif event_id == 4776:  # NTLM credential validation: Status 0x0 is a success
        success, source = str(fields.get("Status", "")).lower() in ("0x0", "0"), fields.get("Workstation")
    else:
        return None
    account = _windows_account(fields, event_id)
    if account is None or (not include_service and _is_machine(account)):
        return None
    address = str(source or "").strip()
    return Logon(account, NO_SOURCE if address in _NO_ADDRESS else address, success, event.ts,
                 f"windows-{event_id}", event.host, logon_type=_logon_type(fields.get("LogonType")))


def _logon_type(value) -> str | None:
    """"10 remote interactive": the number Windows writes and what it means (Hayabusa's Logon Type column)."""
    number = str(value).strip() if value not in (None, "", "-") else ""
    return f"{number} {_LOGON_TYPES[number]}" if number in _LOGON_TYPES else (number or None)


def _windows_account(fields: dict, event_id: int) -> str | None:
    name = str(fields.get("TargetUserName") or "").strip()
    if name in _NO_ACCOUNT:
        return None
    domain = str(fields.get("TargetDomainName") or "").strip()
    return f"{domain}\\{name}" if domain not in _NO_ACCOUNT and event_id != 4771 else name


def _is_machine(account: str) -> bool:
    """A computer account (NAME$) or a built-in service identity: not a person's sign-in."""
    name = account.rsplit("\\", 1)[-1]
    return name.endswith("$") or name.lower() in _SYSTEM_ACCOUNTS


def _without_ipv6_prefix(value) -> str:
    text = str(value or "")
    return text[7:] if text.startswith("::ffff:") else text


def _console_login(fields: dict, event: Event) -> Logon | None:
    if fields.get("eventName") != "ConsoleLogin":
        return None
    response = fields.get("responseElements")
    outcome = response.get("ConsoleLogin") if isinstance(response, dict) else None
    if outcome not in ("Success", "Failure"):
        outcome = "Failure" if fields.get("errorMessage") or fields.get("errorCode") else None
    account = str(fields.get("user") or "")
    if outcome is None or account in _NO_ACCOUNT:
        return None
    return Logon(account, str(fields.get("src_ip") or NO_SOURCE), outcome == "Success", event.ts, "cloudtrail",
                 str(fields.get("recipientAccountId") or "") or None)


def _cloud_sign_in(fields: dict, event: Event) -> Logon | None:
    """Entra ID (Azure AD) sign-in logs (`category` SignInLogs; `resultType` "0" is a success) and the
    Microsoft 365 unified audit log's UserLoggedIn / UserLoginFailed (its times are UTC, written bare)."""
    if fields.get("category") in _ENTRA_CATEGORIES and "resultType" in fields:
        success, via, ts = str(fields["resultType"]) == "0", "entra", event.ts
    elif fields.get("Operation") in _M365_OUTCOMES:
        success, via = _M365_OUTCOMES[fields["Operation"]], "m365"
        ts = event.ts.replace(tzinfo=timezone.utc) if event.ts and event.ts.tzinfo is None else event.ts
    else:
        return None
    account = str(fields.get("user") or "")
    if account in _NO_ACCOUNT:
        return None
    return Logon(account, str(fields.get("src_ip") or NO_SOURCE), success, ts, via, None)


def utc_time(ts: datetime | None) -> datetime | None:
    """Aware UTC: a naive time (a syslog stamp) is the local time it was read as."""
    if ts is None:
        return None
    return (ts if ts.tzinfo is not None else ts.astimezone()).astimezone(timezone.utc)


def _earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else min(a, b)


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def iso_time(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat().replace("+00:00", "Z")


def _mtime(path: Path) -> datetime | None:
    """Year-less syslog stamps are dated from the file's modification time, as in analyze."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime)
    except OSError:
        return None
