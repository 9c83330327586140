r"""ArcSight Common Event Format (CEF:0) lines from risk records.

Escaping follows the CEF spec: in the header `\` and `|` are backslash-escaped; in extension
values `\` and `=` are, and CR/LF become the two-character sequences `\r` and `\n`. Header
fields may not hold line breaks at all, so they are folded to spaces. Other control characters
(NUL, ESC, C1) and bidi controls, which the spec does not name, are written as visible text
(`\x1b`, `<U+202E>`: `safetext.visible`), so no CEF line carries a raw one. Extension keys are the
spec's standard keys; the rest go to the labelled custom strings cs1..cs6.

Owns: CEF rendering. Does not send (see syslog.py).
"""

from __future__ import annotations

import re

from logwarden.app.export.common import (
    CEF_SEVERITY,
    PRODUCT,
    VENDOR,
    VERSION,
    epoch_ms,
    event_time,
    ipv4s,
    ipv6s,
    rule_id,
    title,
)
from logwarden.app.safetext import visible
from logwarden.schemas import RiskRecord

_LINE_BREAK = re.compile(r"(\r|\n)")
_BREAKS = {"\r": "\\r", "\n": "\\n"}
EXT_VALUE_MAX = 4000  # keeps a record on one syslog message (receivers commonly cap at 8 KiB)


def escape_header(value: str) -> str:
    folded = " ".join(visible(value, tabs=True, newlines=True).splitlines())
    return folded.replace("\\", "\\\\").replace("|", "\\|")


def escape_extension(value: str) -> str:
    parts = _LINE_BREAK.split(value)  # breaks stay CEF's own \r and \n; the text between them is made visible
    return "".join(_BREAKS.get(part) or visible(part, tabs=True).replace("\\", "\\\\").replace("=", "\\=")
                   for part in parts)


def to_cef(record: RiskRecord) -> str:
    # Device Vendor | Device Product | Device Version | Signature ID | Name | Severity
    header = [VENDOR, PRODUCT, VERSION, rule_id(record), title(record), str(CEF_SEVERITY[record.risk_level])]
    extension = " ".join(f"{key}={escape_extension(value[:EXT_VALUE_MAX])}"
                         for key, value in _extension(record) if value != "")
    return "CEF:0|" + "|".join(escape_header(h) for h in header) + "|" + extension


def _extension(record: RiskRecord) -> list[tuple[str, str]]:
    ind = record.indicators
    v4, v6 = ipv4s(ind.ips), ipv6s(ind.ips)
    pairs = [
        ("rt", str(epoch_ms(event_time(record)))),
        ("start", str(epoch_ms(record.first_ts)) if record.first_ts else ""),
        ("end", str(epoch_ms(record.last_ts)) if record.last_ts else ""),
        ("src", v4[0] if v4 else ""),
        ("c6a2", v6[0] if v6 else ""), ("c6a2Label", "Source IPv6 Address" if v6 else ""),
        ("suser", ind.users[0] if ind.users else ""),
        ("dhost", (record.hosts or ind.hosts or [""])[0]),
        ("fname", record.source),
        ("msg", record.anomaly),
        ("cat", record.category),
        ("externalId", record.id),
        ("cnt", str(record.line_count)),
        ("cn1", str(record.risk_score)), ("cn1Label", "riskScore"),
    ]
    return pairs + _custom_strings(record)


def _custom_strings(record: RiskRecord) -> list[tuple[str, str]]:
    labelled = [
        ("mitreTechniques", ",".join(t.id for t in record.techniques)),
        ("trace", record.trace),
        ("recommendation", record.recommendation),
        ("status", record.status),
        ("lineSpan", f"{record.line_start}-{record.line_end}"),
        ("sourceIps", ",".join(record.indicators.ips)),
    ]
    pairs: list[tuple[str, str]] = []
    for n, (label, value) in enumerate(labelled, start=1):
        if value:
            pairs += [(f"cs{n}", value), (f"cs{n}Label", label)]
    return pairs
