"""Linux audit logs (`/var/log/audit/audit.log`, raw and ENRICHED formats, and the records of
Microsoft's auoms collector that Azure Log Analytics keeps in its Syslog table).

Owns: the `type=… msg=audit(epoch:serial): key=value …` grammar (auoms writes `type=… audit(…):`),
the inner `msg='…'` of USER_* records, and decoding hex-encoded EXECVE arguments (also those the
kernel logs in pieces, `a1[0]=… a1[1]=…`) into one `cmdline`. Does not join the records of one
event (SYSCALL + EXECVE + PATH share `audit_id`; that is for detectors). auoms joins them itself:
an `AUOMS_EXECVE` is one execve with its program (`exe`), `cwd`, user and `cmdline`; it becomes an
`EXECVE` whose a0, a1, … are the command line's words (its own a0…a3 are the syscall's registers).
"""

from __future__ import annotations

import re
from datetime import datetime

from logwarden.app.events import Event, LogLine
from logwarden.app.parse.base import new_event
from logwarden.app.parse.timestamps import from_epoch

_HEADER = re.compile(r"(?:node=(\S+) )?type=(\S+) (?:msg=)?audit\((\d+(?:\.\d+)?):(\d+)\): ?(.*)")
# `a1[0]=`: the kernel writes an argument longer than 7,500 bytes in pieces (after `a1_len=`)
_PAIR = re.compile(r"""([\w-]+(?:\[\d+\])?)=("[^"]*"|'[^']*'|\S+)""")
# auoms quotes a command line without escaping the quotes inside it: it ends at the quote that is
# followed by the next key (or the end)
_AUOMS_CMDLINE = re.compile(r'(?:^| )cmdline="(.*?)"(?= [\w-]+=|$)')
AUOMS_EXECVE = "AUOMS_EXECVE"
_HEX = re.compile(r"(?:[0-9A-F]{2})+")
_ARG = re.compile(r"a(\d+)")
_ARG_PIECE = re.compile(r"a(\d+)\[(\d+)\]")
_ENCODED_KEYS = frozenset(("proctitle", "cmd", "acct", "data", "comm", "exe", "name", "cwd"))
_NUMERIC = frozenset(("pid", "ppid", "uid", "auid", "euid", "gid", "ses", "argc", "exit",
                      "syscall", "success_count"))


class AuditdParser:
    """One audit record per line; every `key=value` becomes a field (quotes removed)."""

    name = "auditd"

    def __init__(self, *, reference_time: datetime | None = None):
        self.reference_time = reference_time

    def parse(self, line: LogLine) -> Event | None:
        return audit_event(line, line.text)


def audit_event(line: LogLine, text: str, *, host: str | None = None) -> Event | None:
    """The audit record `text` (the whole line, or a column of a collector's row) as an event."""
    match = _HEADER.match(text)
    if match is None:
        return None
    node, record_type, stamp, serial, body = match.groups()
    # ENRICHED format appends translated values after a GS (0x1d) separator
    fields: dict = {"type": record_type, "audit_id": f"{stamp}:{serial}"}
    body = body.replace("\x1d", " ")
    if record_type == AUOMS_EXECVE:
        _auoms_execve(fields, body)
    else:
        fields.update(_pairs(body, execve=record_type == "EXECVE"))
    _normalise(fields, record_type)
    node = node or fields.get("node")
    return new_event(line, "auditd", ts=from_epoch(float(stamp)), host=node if isinstance(node, str) else host,
                     program="auditd", message=body, fields=fields)


def _pairs(body: str, *, execve: bool = False) -> dict:
    fields: dict = {}
    for key, value in _PAIR.findall(body):
        if key == "msg" and value[:1] == "'":  # USER_* records nest their own pairs
            fields.update(_pairs(value[1:-1], execve=execve))
        elif key not in fields:  # ENRICHED repeats some keys (UID="root"): keep the raw one
            if execve and "[" in key:  # a piece of a long argument: joined (and decoded) by _joined_pieces
                fields[key] = value
            else:
                fields[key] = value[1:-1] if value[:1] in "\"'" else _decoded(key, value, execve)
    return fields


def _auoms_execve(fields: dict, body: str) -> None:
    """One auoms execve as an EXECVE record: argv from its command line, not its registers."""
    match = _AUOMS_CMDLINE.search(body)
    if match:
        body = body[:match.start()] + body[match.end():]
    fields.update((k, v) for k, v in _pairs(body).items() if not _ARG.fullmatch(k))
    cmdline = match[1] if match else str(fields.get("cmdline", ""))
    fields.update({f"a{i}": word for i, word in enumerate(cmdline.split())})
    fields.update(type="EXECVE", auoms_type=AUOMS_EXECVE, cmdline=cmdline)


def _decoded(key: str, value: str, execve: bool) -> str:
    """Audit writes a value with spaces or odd bytes as unquoted hex (argv, proctitle, sudo cmd);
    arguments inside the hex are NUL-separated. SYSCALL's a0…a3 are registers, not text."""
    if (key in _ENCODED_KEYS or (execve and _ARG.fullmatch(key))) and len(value) >= 2 and _HEX.fullmatch(value):
        return bytes.fromhex(value).decode("utf-8", "replace").replace("\x00", " ").strip()
    return value


def _normalise(fields: dict, record_type: str) -> None:
    for key in _NUMERIC & fields.keys():
        value = fields[key]
        if value.lstrip("-").isdigit():
            fields[key] = int(value)
    addr = fields.get("addr")
    if isinstance(addr, str) and _looks_like_ip(addr):
        fields["src_ip"] = addr
    acct = fields.get("acct")
    if isinstance(acct, str) and acct not in ("?", "(unknown)"):
        fields["user"] = acct
    if record_type == "EXECVE":
        _joined_pieces(fields)
        fields["cmdline"] = _cmdline(fields)


def _looks_like_ip(text: str) -> bool:
    return bool(text) and (text[0].isdigit() or ":" in text) and text != "?"


def _joined_pieces(fields: dict) -> None:
    """`a1_len=N a1[0]=… a1[1]=…` → `a1`: each piece hex-encoded or quoted, bytes joined before
    decoding (a character may be cut between two pieces). A piece that is missing (auditd dropped
    or cut the record) leaves the argument with what arrived."""
    pieces: dict[int, list[tuple[int, bytes]]] = {}
    for key in [k for k in fields if "[" in k]:
        match = _ARG_PIECE.fullmatch(key)
        if match is None:
            continue
        value = str(fields.pop(key))
        if value[:1] in "\"'":
            data = value[1:-1].encode("utf-8", "surrogateescape")
        elif len(value) % 2 == 0 and _HEX.fullmatch(value):
            data = bytes.fromhex(value)
        else:
            data = value.encode("utf-8", "surrogateescape")
        pieces.setdefault(int(match[1]), []).append((int(match[2]), data))
    for arg, parts in pieces.items():
        whole = b"".join(data for _, data in sorted(parts))
        fields.setdefault(f"a{arg}", whole.decode("utf-8", "replace").replace("\x00", " ").strip())


def _cmdline(fields: dict) -> str:
    """The arguments a0, a1, … (already decoded) in order, as one command line."""
    args = sorted((int(m[1]), v) for k, v in fields.items() if (m := _ARG.fullmatch(k)))
    return " ".join(str(v) for _, v in args)
