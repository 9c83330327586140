"""Plain data passed between the stages of the pipeline (no I/O here).

LogLine (ingest) → Event (parse) → Window (mine) + Signal (detect) → RiskRecord (postprocess).
ErrorRow is how a stage reports something it could not read without stopping the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(slots=True)
class LogLine:
    """One line as read: where it came from and its text (undecodable bytes replaced, never dropped)."""

    source: str  # path as given by the user (resolved), or "<stdin>"
    inode: int  # 0 for stdin
    offset: int  # byte offset of the line's first byte in the (decompressed) stream
    line_no: int  # 1-based
    text: str  # without the trailing newline
    truncated: bool = False  # the line was longer than the limit and was cut
    end: int = 0  # where the next line starts (offset after this one's newline); 0 when unknown
    nul_bytes: int = 0  # NUL bytes dropped from the line (padding, a pre-allocated or crashed file)


@dataclass(slots=True)
class Event:
    """A parsed line. `fields` holds format-specific keys (e.g. status, path, src_ip, EventID)."""

    source: str
    line_no: int
    offset: int
    raw: str
    format: str  # parser that produced it: syslog, rfc5424, access, apache_error, json, windows, cloudtrail, auditd, generic
    ts: datetime | None = None  # timezone-aware when the log says so, else naive local time
    host: str | None = None
    program: str | None = None
    message: str = ""  # the free-text part that template mining sees
    fields: dict[str, Any] = field(default_factory=dict)
    inode: int = 0
    end: int = 0  # the line's `LogLine.end`: a position a reader may resume from; 0 when unknown


@dataclass(slots=True)
class ErrorRow:
    """Something that could not be read; stored, shown, counted; the run goes on."""

    source: str
    offset: int | None
    stage: str  # ingest | parse | engine | store | ...
    message: str
    line_no: int | None = None


@dataclass(slots=True)
class Signal:
    """A deterministic detector's finding. Sets the floor of the record's risk and its default category."""

    rule_id: str
    title: str
    level: str  # info|low|medium|high|critical
    category: str  # one of schemas.CATEGORIES
    techniques: list[str]  # ATT&CK ids
    source: str
    line_numbers: list[int]  # evidence, 1-based, in the signal's source
    key: str = ""  # what the rule aggregated on (e.g. the source IP), for titles and dedup
    description: str = ""
    references: list[str] = field(default_factory=list)  # the rule's links, for the record's detail view
    falsepositives: list[str] = field(default_factory=list)  # what else the rule's author knows fires it
    # A counting correlation's burst: the first line of the firing it began with (0: not a burst), and
    # whether this signal only goes on with a burst an earlier scan (window, batch, run) reported.
    burst_line: int = 0
    continues: bool = False
