"""RFC 5424 syslog framing and delivery over UDP (RFC 5426) or TCP (RFC 6587).

URLs: `syslog://host:514` (UDP), `syslog+tcp://host:514` (TCP, octet-counting framing, which
survives newlines in messages), `syslog+tcp://host:514?framing=newline` (LF-terminated, for
receivers without octet counting). Optional `?facility=local4`.

Neither transport confirms delivery: UDP is fire and forget, and plain TCP syslog (RFC 6587) has no
acknowledgement, so what went out is `sent`, not confirmed. Over TCP a receiver that closed or reset
the connection is seen (before each message, and after our end of the stream, when a receiver that
read everything closes too) and is a ForwardError with the count written; those are `uncertain`.
RELP would confirm, but no maintained Python RELP library exists (pyrelp wraps librelp and was last
released in 2014); TLS (RFC 5425) protects the stream and confirms nothing either.

Owns: the syslog header, framing and sockets. Does not know records (callers pass text lines,
typically CEF) except that a CEF line's severity sets the syslog severity.
"""

from __future__ import annotations

import os
import select
import socket
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import parse_qs, urlsplit

from logwarden.app.export.errors import ForwardError
from logwarden.app.export.tally import Marker, Tally, no_marks
from logwarden.errors import ConfigError

FACILITIES = {"kern": 0, "user": 1, "daemon": 3, "auth": 4, "syslog": 5, "authpriv": 10, "security": 13,
              **{f"local{n}": 16 + n for n in range(8)}}
NOTICE = 5
UDP_MAX = 65_507  # largest UDP payload over IPv4
BOM = "\ufeff"
DEFAULT_PORT = 514
TIMEOUT_S = 10.0  # the connection, each write, and the wait for the receiver's close


@dataclass(frozen=True, slots=True)
class SyslogTarget:
    host: str
    port: int
    transport: str  # udp | tcp
    framing: str  # octet | newline (tcp only)
    facility: int


def parse_syslog_url(url: str) -> SyslogTarget:
    parts = urlsplit(url)
    transports = {"syslog": "udp", "syslog+udp": "udp", "syslog+tcp": "tcp"}
    if parts.scheme not in transports or not parts.hostname:
        raise ConfigError(f"Bad syslog URL {url!r}; use syslog://host:514 (UDP) or syslog+tcp://host:514 (TCP).")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    framing = query.get("framing", "octet")
    facility = query.get("facility", "local0")
    if framing not in ("octet", "newline") or facility not in FACILITIES:
        raise ConfigError(f"Bad syslog URL options in {url!r}: framing is octet|newline, "
                          f"facility one of {', '.join(FACILITIES)}.")
    return SyslogTarget(parts.hostname, parts.port or DEFAULT_PORT, transports[parts.scheme], framing,
                        FACILITIES[facility])


def cef_syslog_severity(line: str) -> int:
    """CEF severity 0-10 → syslog severity (10 → 2 critical … 0-3 → 5 notice); NOTICE if not CEF."""
    fields = _cef_header_fields(line)
    if fields is None or not fields[6].isdigit():
        return NOTICE
    cef = int(fields[6])
    return 2 if cef >= 9 else 3 if cef >= 7 else 4 if cef >= 4 else NOTICE


def format_5424(msg: str, *, facility: int, severity: int, app_name: str = "logwarden",
                hostname: str | None = None, msgid: str = "-", now: datetime | None = None,
                bom: bool = False) -> bytes:
    """`<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD MSG`, MSG in UTF-8.

    No BOM by default: receivers recognise CEF by "CEF:" at the very start of MSG, and rsyslog
    keeps a BOM inside the message; RFC 5424 allows such MSG-ANY. `bom=True` marks non-ASCII
    UTF-8 text with the BOM for receivers that want it."""
    timestamp = (now or datetime.now(timezone.utc)).isoformat(timespec="microseconds").replace("+00:00", "Z")
    header = " ".join((f"<{facility * 8 + severity}>1", timestamp, _header_token(hostname or socket.getfqdn(), 255),
                       _header_token(app_name, 48), str(os.getpid()), _header_token(msgid, 32), "-"))
    body = BOM + msg if bom and not msg.isascii() else msg
    return (header + " " + body).encode("utf-8")


def frame(message: bytes, target: SyslogTarget) -> bytes:
    if target.transport == "udp":
        return message
    if target.framing == "octet":
        return str(len(message)).encode() + b" " + message
    return message.replace(b"\n", b" ") + b"\n"


def forward_syslog(lines: Iterable[str], url: str, *, ids: Sequence[str] | None = None, mark: Marker = no_marks,
                   app_name: str = "logwarden", hostname: str | None = None, timeout: float = TIMEOUT_S,
                   bom: bool = False) -> Tally:
    """Send each line as one RFC 5424 message (event ids `ids`, default their positions); `mark(ids,
    state)` hears what went out. Returns the tally (everything `sent`: nothing is confirmed)."""
    target = parse_syslog_url(url)
    texts = list(lines)
    event_ids = list(ids) if ids is not None else [str(i) for i in range(len(texts))]
    tally = Tally(len(texts))
    messages = (frame(_fit(format_5424(line, facility=target.facility, severity=cef_syslog_severity(line),
                                       app_name=app_name, hostname=hostname, bom=bom), target), target)
                for line in texts)
    written = 0
    try:
        if target.transport == "udp":
            written = _send_udp(messages, target)
        else:
            written = _send_tcp(messages, target, timeout)
    except _Written as exc:
        written = exc.count
        _settle(event_ids[:written], "uncertain", mark, tally)
        raise ForwardError(f"The syslog receiver at {target.host}:{target.port} (tcp) {exc.problem} after "
                           f"{written} of {len(texts)} messages were written; how many it read is unknown. "
                           f"{tally.describe()}. Re-run with --resend uncertain to send them again "
                           "(CEF carries the record id as externalId, to deduplicate).", tally) from None
    except OSError as exc:
        raise ForwardError(f"Cannot send syslog to {target.host}:{target.port} over {target.transport}: {exc}. "
                           "Check that the receiver is running and the port is open. "
                           f"{tally.describe()}.", tally) from exc
    _settle(event_ids[:written], "sent", mark, tally)
    return tally


class _Written(Exception):
    """The TCP receiver closed or reset the connection after `count` messages were written."""

    def __init__(self, count: int, problem: str) -> None:
        super().__init__(problem)
        self.count, self.problem = count, problem


def _settle(ids: list[str], state: str, mark: Marker, tally: Tally) -> None:
    if ids:
        mark(ids, state)
        tally.add(state, len(ids))


def _send_udp(messages: Iterator[bytes], target: SyslogTarget) -> int:
    sent = 0
    family, address = _resolve(target, socket.SOCK_DGRAM)
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        for message in messages:
            sock.sendto(message, address)
            sent += 1
    return sent


def _send_tcp(messages: Iterator[bytes], target: SyslogTarget, timeout: float) -> int:
    """Write every message, then end our side and wait (up to `timeout`) for the receiver to end its
    side: a receiver closes after reading all, and one that closed before reading all resets."""
    sent = 0
    with socket.create_connection((target.host, target.port), timeout=timeout) as sock:
        try:
            for message in messages:
                _check_peer(sock)
                sock.sendall(message)
                sent += 1
            _check_peer(sock)
            sock.shutdown(socket.SHUT_WR)
        except (OSError, _Closed) as exc:  # after the connection: some messages may be in the receiver
            raise _Written(sent, _problem(exc)) from None
        _await_close(sock, sent)
    return sent


class _Closed(Exception):
    """The receiver ended its side of the stream (it reads no more)."""


def _check_peer(sock: socket.socket) -> None:
    """A syslog receiver sends nothing: anything readable is its end of the stream or a reset."""
    readable, _, _ = select.select([sock], [], [], 0)
    if readable and sock.recv(1, socket.MSG_PEEK) == b"":
        raise _Closed()


def _await_close(sock: socket.socket, sent: int) -> None:
    try:
        while sock.recv(4096):
            pass  # a syslog receiver has nothing to say; whatever it is, it is not an acknowledgement
    except TimeoutError:
        return  # it keeps the connection open: sent, not confirmed
    except OSError as exc:
        raise _Written(sent, _problem(exc)) from None


def _problem(exc: Exception) -> str:
    if isinstance(exc, _Closed):
        return "closed the connection"
    if isinstance(exc, TimeoutError):
        return "stopped reading (a write timed out)"
    if not isinstance(exc, ConnectionError):
        return f"failed ({type(exc).__name__}: {exc})"
    return f"reset the connection ({type(exc).__name__})"


def _resolve(target: SyslogTarget, kind: int) -> tuple[int, tuple]:
    family, _, _, _, address = socket.getaddrinfo(target.host, target.port, type=kind)[0]
    return family, address


def _fit(message: bytes, target: SyslogTarget) -> bytes:
    """A UDP datagram cannot exceed UDP_MAX: cut at a UTF-8 character boundary."""
    if target.transport != "udp" or len(message) <= UDP_MAX:
        return message
    return message[:UDP_MAX].decode("utf-8", errors="ignore").encode("utf-8")


def _header_token(value: str, limit: int) -> str:
    """Header fields are PRINTUSASCII (33..126) without spaces; "-" is the nil value."""
    token = "".join(ch for ch in value if 33 <= ord(ch) <= 126)[:limit]
    return token or "-"


def _cef_header_fields(line: str) -> list[str] | None:
    """Split the first seven header fields on unescaped pipes; None when not CEF."""
    if not line.startswith("CEF:"):
        return None
    fields, current, escaped = [], [], False
    for ch in line:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "|" and len(fields) < 7:
            fields.append("".join(current))
            current = []
        else:
            current.append(ch)
    fields.append("".join(current))
    return fields if len(fields) >= 8 else None
