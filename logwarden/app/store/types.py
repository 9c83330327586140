"""Plain data that goes in and out of the store besides `RiskRecord` (no I/O here).

`WindowRow` is what the pipeline writes for every analysed window (benign ones too), so that
"every line is accounted for" can be checked; `RecordFilter` is the one filter shape shared by
record queries and dashboard aggregates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(slots=True)
class SourceState:
    """How far one generation of a file has been consumed: the next byte to read, the last line
    number read, and the fingerprint of what was read (`ingest.identity`). `path` and `inode`
    are the file's when it was first seen; a rotated or compressed file keeps them."""

    path: str
    inode: int
    offset: int
    line_no: int
    format: str | None = None
    miner_state: str | None = None
    updated_at: datetime | None = None
    generation: int = 0
    fingerprint: str | None = None
    fingerprint_len: int = 0
    fingerprint_prefix: str | None = None
    head: bytes | None = None  # the bytes the fingerprint covers (stores from before schema 9: None)
    tail_offset: int | None = None  # where the last line read starts (stores from before schema 11: None)
    tail_hash: int | None = None  # and its hash (app/sources.line_hash)
    detector_state: str | None = None  # JSON: the detector's state at this position (stores before schema 14: None)


@dataclass(slots=True)
class WindowRow:
    """One analysed window. `verdict` is the category (or "benign"); `record_ids` the records it produced."""

    source: str
    inode: int
    line_start: int
    line_end: int
    line_count: int
    verdict: str
    record_ids: list[str] = field(default_factory=list)
    run_id: str | None = None
    generation: int = 0


@dataclass(slots=True)
class RecordFilter:
    """All optional; empty means "everything". Times filter on the record's `last_ts`."""

    since: datetime | None = None
    until: datetime | None = None
    min_risk: str | None = None  # a RISK_LEVELS value; keeps this level and above
    categories: Sequence[str] = ()
    sources: Sequence[str] = ()
    statuses: Sequence[str] = ()
    technique: str | None = None  # "T1110" also matches its sub-techniques "T1110.001"…
    text: str | None = None  # substring of anomaly, trace, recommendation or indicators
    run_id: str | None = None
    pending: bool = False  # only records a pending model review may still change ("awaiting review")
    host: str | None = None  # substring of the record's host(s), any case


@dataclass(slots=True)
class RunInfo:
    id: str
    started_at: datetime
    finished_at: datetime | None
    command: str
    config: dict[str, Any]
    metrics: dict[str, Any] | None
    status: str
    host: str | None = None
    pid: int | None = None


@dataclass(slots=True)
class ErrorInfo:
    id: int
    run_id: str | None
    source: str
    offset: int | None
    line_no: int | None
    stage: str
    message: str
    created_at: datetime


@dataclass(slots=True)
class ReviewInfo:
    id: int
    record_id: str
    old_status: str | None
    status: str
    close_reason: str | None
    note: str | None
    reviewer: str | None
    incident_id: str | None  # the incident whose review this came from; None: the record's own
    created_at: datetime


@dataclass(slots=True)
class FeedbackInfo:
    """One accept or reject of a model judgement (app/store/feedback.py): `kind` record, story or triage;
    `target_id` the record's, the incident's or the triage answer's id; `judged` the text judged as it was
    then (canonical JSON for records and stories, the model's answer for triage) and `judged_sha256` its
    digest; `context` the lines judged where the store has them (a record's evidence lines, a snippet)."""

    id: int
    kind: str
    target_id: str
    judged_sha256: str
    judged: str
    context: str | None
    model: str | None
    verdict: str  # accept | reject
    reason: str  # a schemas.feedback.FEEDBACK_REASONS value
    note: str | None
    reviewer: str | None
    created_at: datetime
