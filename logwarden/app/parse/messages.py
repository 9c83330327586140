"""Fields inside free-text messages: who and from where, for the daemons whose lines say it in prose.

sshd, PAM, sudo, su, the shadow-utils (useradd, usermod, gpasswd, groupadd, passwd), crontab,
sftp-server, FTP daemons (vsftpd, proFTPD, Pure-FTPd, ftpd), the kernel (netfilter/iptables
`SRC= DPT=` lines, module signature and segfault messages) and application login failures write
the client address and the account in the message text. Sigma has no capture groups, so the
parsers put them on the Event (docs/FIELDS.md, "Fields from messages"): `src_ip`, `user`, `port`,
and per daemon `auth_method`, `run_as`, `command`, `group`, `file`, `bytes_read`, `module`,
`process`, `dst_ip`, `dst_port`, `proto`. A line that stands for several events ("PAM 5 more
authentication failures") gets `repeat`, like rsyslog's "message repeated 5 times".

`message_fields(program, message)` returns the fields found (never overwriting what the parser
already set is the caller's rule). Knows nothing about detection.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

_IP = r"[0-9A-Fa-f:.]*[0-9A-Fa-f]"  # IPv4 or IPv6, as sshd prints them
# sshd logs an invalid user name verbatim, spaces included, so a name can hold " from 10.0.0.5
# port 22 ssh2". What sshd writes after the name is fixed, so every pattern is anchored at the end
# of the line (the user group is greedy): the address is the LAST " from ADDR port N" and a forged
# one inside the name stays part of the name.
_AUTH_TAIL = rf" from (?P<src_ip>{_IP})(?: port (?P<port>\d+))?(?: ssh2(?:: [\w-]+ SHA256:\S+.*)?)?(?: \[preauth\])?\s*$"
_CLOSE_TAIL = rf" (?P<src_ip>{_IP}) port (?P<port>\d+)(?:: [^:]*)?(?: \[preauth\])?\s*$"
_SSHD = [
    re.compile(rf"^(?P<outcome>Failed|Accepted) (?P<auth_method>\S+) for (?:invalid user |illegal user )?"
               rf"(?P<user>.*){_AUTH_TAIL}"),
    re.compile(rf"^(?:Invalid|Illegal) user (?P<user>.*){_AUTH_TAIL}"),
    re.compile(rf"^(?:Connection closed|Disconnected) (?:by|from) (?:(?:authenticating|invalid) )?user (?P<user>.*)"
               rf"{_CLOSE_TAIL}"),
    re.compile(rf"^(?:error: )?maximum authentication attempts exceeded for (?:invalid user )?(?P<user>.*)"
               rf"{_AUTH_TAIL}"),
    re.compile(rf"^Disconnecting (?:authenticating|invalid) user (?P<user>.*){_CLOSE_TAIL}"),
    re.compile(rf"^(?:Did not receive identification string from|Bad protocol version identification .* from|"
               rf"banner exchange: Connection from|Unable to negotiate with|Connection closed by|Connection reset by|"
               rf"Received disconnect from|Disconnected from|Connection from|Timeout before authentication for) "
               rf"(?P<src_ip>{_IP})(?: port (?P<port>\d+))?"),
]
_PAM_FAILURE = re.compile(r"(?:PAM (?P<repeat>\d+) more )?authentication failures?;(?P<pairs>.*)$")
_PAIR = re.compile(r"\b(logname|uid|euid|tty|ruser|rhost|user)=(\S*)")
_SUDO = re.compile(r"^\s*(?P<user>\S+) : (?:(?P<tries>\d+) incorrect password attempts? ; )?(?:user NOT in sudoers ; )?"
                   r"(?:.*?\bUSER=(?P<run_as>\S+) ; )?(?:.*?\bCOMMAND=(?P<command>.*))?")
_SU = [re.compile(r"FAILED SU \(to (?P<run_as>\S+)\) (?P<user>\S+)"),
       re.compile(r"FAILED su for (?P<run_as>\S+) by (?P<user>\S+)"),
       re.compile(r"^(?:\(to (?P<run_as>\S+)\) (?P<user>\S+) on|Successful su for (?P<run_as2>\S+) by (?P<user2>\S+))")]
_USERADD = re.compile(r"new user: name=(?P<user>[^,\s]+)")
_GROUP_MEMBER = [re.compile(r"add '(?P<user>[^']+)' to (?:shadow )?group '(?P<group>[^']+)'"),
                 re.compile(r"user (?P<user>\S+) added by \S+ to group (?P<group>\S+)")]
_GROUPADD = re.compile(r"new group: name=(?P<group>[^,\s]+)")
_PASSWORD = re.compile(r"password changed for (?P<user>\S+)")
_CRONTAB = re.compile(r"^\((?P<user>[^)\s]+)\) (?:REPLACE|BEGIN EDIT|END EDIT|LIST|DELETE)")
_SFTP_CLOSE = re.compile(r'^close "(?P<file>[^"]+)" bytes read (?P<bytes_read>\d+)(?: written (?P<bytes_written>\d+))?')
# vsftpd writes `[user] FAIL LOGIN: Client "ADDR"` (a reason may follow): the user comes first and
# may hold a forged `FAIL LOGIN: Client "…"`, so the address is the one at the end of the line
_FTP = [re.compile(r'FAIL LOGIN: Client "(?:::ffff:)?(?P<src_ip>[0-9A-Fa-f:.]+)"(?:, "[^"]*")?\s*$'),
        re.compile(r'OK LOGIN: Client "(?:::ffff:)?(?P<src_ip>[0-9A-Fa-f:.]+)"(?:, "[^"]*")?\s*$'),
        re.compile(r"\((?:\S*?\[)?(?P<src_ip>[0-9A-Fa-f:.]+)\]?\) - USER (?P<user>\S+)"),
        re.compile(r"\(\?@(?P<src_ip>[^)\s]+)\) \[(?:WARNING|INFO|NOTICE)\] .*?user \[(?P<user>[^\]]*)\]"),
        re.compile(r"(?i)\bconnect(?:ion)? from (?:::ffff:)?(?P<src_ip>[0-9A-Fa-f:.]*[0-9A-Fa-f])")]
_NETFILTER = re.compile(r"\bSRC=(?P<src_ip>[0-9A-Fa-f:.]+) DST=(?P<dst_ip>[0-9A-Fa-f:.]+)\b.*?"
                        r"(?:\bPROTO=(?P<proto>\w+))?(?:.*?\bSPT=(?P<src_port>\d+))?(?:.*?\bDPT=(?P<dst_port>\d+))?")
_MODULE = re.compile(r"(?P<module>[\w-]+): module verification failed")
_SEGFAULT = re.compile(r"(?P<process>[\w.-]+)\[\d+\]: segfault at")
_OOM = re.compile(r"Out of memory: Kill(?:ed)? process \d+ \((?P<process>[^)]*)\)")
# application logs: "login failed for user=bob from 1.2.3.4", "authentication failure ... ip=…"
_APP_FAILURE = re.compile(r"(?i)authentication fail|login fail|failed login|invalid credentials|bad credentials|"
                          r"login attempt failed")
_APP_ADDRESS = re.compile(r"(?i)\b(?:from|ip|src|client|remote_addr|address)[=: \"']+"
                          r"(?P<src_ip>\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f]*:[0-9a-f:]+)")
_APP_USER = re.compile(r"(?i)\buser(?:name)?[=: ]+['\"]?(?P<user>[^'\"\s,;]+)")
_INTEGERS = frozenset(("port", "repeat", "bytes_read", "bytes_written", "dst_port", "src_port", "tries"))
_FTP_PROGRAMS = frozenset(("vsftpd", "proftpd", "pure-ftpd", "ftpd", "in.ftpd", "wu-ftpd"))


def _clean(found: dict[str, str | None]) -> dict:
    out: dict = {}
    for key, value in found.items():
        if value in (None, "", "?"):
            continue
        out[key] = int(value) if key in _INTEGERS and value.isdigit() else value
    return out


def _first(patterns: list[re.Pattern[str]], message: str) -> dict:
    for pattern in patterns:
        match = pattern.search(message)
        if match is not None:
            return _clean(match.groupdict())
    return {}


def _sshd(message: str) -> dict:
    fields = _first(_SSHD, message)
    if "outcome" in fields:
        fields["outcome"] = fields["outcome"].lower()
    return fields | _pam(message)


def _pam(message: str) -> dict:
    """`authentication failure; logname= uid=0 … rhost=H user=U` (any PAM-using program)."""
    if "authentication failure" not in message:  # the literal every match holds: `in` is far cheaper than the search
        return {}
    match = _PAM_FAILURE.search(message)
    if match is None:
        return {}
    pairs = _unambiguous_pairs(match.group("pairs"))
    fields = _clean({"user": pairs.get("user") or pairs.get("logname"), "src_ip": pairs.get("rhost"),
                     "logname": pairs.get("logname"), "ruser": pairs.get("ruser"), "repeat": match.group("repeat")})
    return fields


def _unambiguous_pairs(text: str) -> dict[str, str]:
    """PAM's `key=value` pairs, without a key the line states twice. `ruser` and `user` can be
    what a client typed (vsftpd, login), so " rhost=10.0.0.5" inside one is a forged address:
    which copy PAM wrote cannot be told, so neither is believed."""
    pairs: dict[str, str] = {}
    twice: set[str] = set()
    for key, value in _PAIR.findall(text):
        if key in pairs:
            twice.add(key)
        pairs[key] = value
    for key in twice:
        del pairs[key]
    return pairs


def _local_pam(message: str) -> dict:
    """PAM in sudo/su: the person is logname (ruser); PAM's user= is the account they asked for."""
    pam = _pam(message)
    person = pam.get("logname") or pam.get("ruser")
    if person:
        target = pam.get("user")
        pam["user"] = person
        if target:
            pam["run_as"] = target
    return pam


def _sudo(message: str) -> dict:
    pam = _local_pam(message)
    if pam:
        return pam
    match = _SUDO.match(message)
    if match is None or " : " not in message:
        return {}
    return _clean(match.groupdict())


def _su(message: str) -> dict:
    for pattern in _SU:
        match = pattern.search(message)
        if match is not None:
            found = match.groupdict()
            return _clean({"user": found.get("user") or found.get("user2"),
                           "run_as": found.get("run_as") or found.get("run_as2")})
    return _local_pam(message)


def _account(message: str) -> dict:
    for pattern in (_USERADD, *_GROUP_MEMBER, _GROUPADD, _PASSWORD):
        match = pattern.search(message)
        if match is not None:
            return _clean(match.groupdict())
    return _pam(message)


def _kernel(message: str) -> dict:
    for pattern in (_NETFILTER, _MODULE, _SEGFAULT, _OOM):
        match = pattern.search(message)
        if match is not None:
            return _clean(match.groupdict())
    return {}


def _ftp(message: str) -> dict:
    return _first(_FTP, message)


def _single(pattern: re.Pattern[str]) -> Callable[[str], dict]:
    def extract(message: str) -> dict:
        match = pattern.search(message)
        return _clean(match.groupdict()) if match else {}
    return extract


_BY_PROGRAM: dict[str, Callable[[str], dict]] = {
    "sshd": _sshd, "sudo": _sudo, "su": _su, "useradd": _account, "adduser": _account, "usermod": _account,
    "gpasswd": _account, "groupadd": _account, "addgroup": _account, "passwd": _account, "chpasswd": _account,
    "chage": _account, "login": _pam, "kernel": _kernel, "crontab": _single(_CRONTAB),
    "sftp-server": _single(_SFTP_CLOSE), "internal-sftp": _single(_SFTP_CLOSE),
    **{name: _ftp for name in _FTP_PROGRAMS},
}


@lru_cache(maxsize=1024)  # a host runs few programs; four string splits per line added up
def program_key(program: str | None) -> str:
    """`sshd(pam_unix)` → sshd, `/usr/sbin/CRON` → cron (how daemons are looked up here)."""
    return (program or "").rsplit("/", 1)[-1].split("(", 1)[0].split("[", 1)[0].lower()


def message_fields(program: str | None, message: str) -> dict:
    """Fields a syslog/free-text message states, by the program that wrote it (or its shape)."""
    if not message:
        return {}
    extract = _BY_PROGRAM.get(program_key(program))
    found = extract(message) if extract is not None else {}
    if not found:
        found = _anonymous(message)
    return found


def _anonymous(message: str) -> dict:
    """Lines without a known program (generic files, app logs): FTP, netfilter, app login failures."""
    if "FAIL LOGIN" in message or "Login failed" in message or "Authentication failed for user" in message:
        found = _ftp(message)
        if found:
            return found
    if "SRC=" in message and "DST=" in message:
        return _kernel(message)
    return app_failure_fields(message)  # {} when the line is not a failed login


def _app_failure(message: str) -> bool:
    """`_APP_FAILURE.search(message)`, with a cheap test first: each of its phrases holds "fail" or
    "credentials", which an ASCII message shows with `in` (the case-blind search costs ~10x more,
    and most messages are not failures). Other text goes to the regex: its case folding is Unicode's."""
    if message.isascii():
        lowered = message.lower()
        if "fail" not in lowered and "credentials" not in lowered:
            return False
    return _APP_FAILURE.search(message) is not None


def app_failure_fields(message: str) -> dict:
    """An application's failed login: the client address and the account, if the line names them."""
    if not _app_failure(message):
        return {}
    user = _APP_USER.search(message)
    return _clean({"src_ip": _app_address(message), "user": user.group("user") if user else None})


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _app_address(message: str) -> str | None:
    """The client address an app's failure line names. A typed user name can hold "from 10.0.0.5"
    (`user 'a from 10.0.0.5' from 1.2.3.4`): when the line names several addresses, those inside a
    quoted value do not count, and if that still leaves more than one, none is believed."""
    found = [(m.start(), m.group("src_ip")) for m in _APP_ADDRESS.finditer(message)]
    if len({address for _, address in found}) > 1:
        quoted = [m.span() for m in _QUOTED.finditer(message)]
        found = [(at, address) for at, address in found if not any(start <= at < end for start, end in quoted)]
    distinct = {address for _, address in found}
    return distinct.pop() if len(distinct) == 1 else None


def structured_data_fields(structured: str | None) -> dict:
    """RFC 5424 structured data `[id k="v" …]` → its parameters as fields (src/ip/client → src_ip)."""
    if not structured or structured == "-":
        return {}
    params = {k: v.replace('\\"', '"') for k, v in re.findall(r'(\w[\w.-]*)="((?:[^"\\]|\\.)*)"', structured)}
    fields = {f"sd.{k}": v for k, v in params.items()}
    address = next((params[k] for k in ("src", "ip", "client", "src_ip", "remote_addr") if params.get(k)), None)
    user = next((params[k] for k in ("user", "username", "usr") if params.get(k)), None)
    return fields | _clean({"src_ip": address, "user": user})


def add_message_fields(fields: dict, program: str | None, message: str) -> dict:
    """`fields` plus what the message states, without overwriting a field the parser already set."""
    found = _remembered_fields(program, message) if len(message) <= _REMEMBER_CHARS else \
        message_fields(program, message).items()
    for key, value in found:
        fields.setdefault(key, value)
    return fields


_REMEMBER_CHARS = 512  # longer messages are rarely repeated, and must not pin memory


@lru_cache(maxsize=8192)
def _remembered_fields(program: str | None, message: str) -> tuple[tuple[str, object], ...]:
    """`message_fields` of a short message, remembered: daemons repeat their lines (cron, systemd, PAM)."""
    return tuple(message_fields(program, message).items())
