"""The ORM mapping of the store's tables (SQLAlchemy 2.0 typed `Mapped[]` classes).

Owns: the current shape of every table and the `UTCDateTime` column type. It does not create
tables (that is `migrations.py`, whose frozen steps must produce exactly this shape — a test
compares them) and knows nothing of pydantic records (that is `convert.py`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def to_utc(value: datetime) -> datetime:
    """Aware → UTC; naive means local time (see `models.Event.ts`), so it is localised first."""
    aware = value if value.tzinfo is not None else value.astimezone()
    return aware.astimezone(timezone.utc)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC without an offset (so SQL ordering and range filters are correct across mixed
    inputs) and hands back timezone-aware UTC datetimes."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else to_utc(value).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else value.replace(tzinfo=timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON(), list[Any]: JSON()}


class SchemaMigration(Base):
    __tablename__ = "schema_migrations"
    version: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(200))
    applied_at: Mapped[datetime]


class StoreMarker(Base):
    """What says the database is logwarden's (`application` = `logwarden`): a store is never
    migrated into another application's database, nor read as one."""

    __tablename__ = "logwarden_store"
    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Source(Base):
    """How far one generation of a file has been read, and the fingerprint of what was read."""

    __tablename__ = "sources"
    path: Mapped[str] = mapped_column(Text, primary_key=True)
    inode: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    generation: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False, default=0)
    offset: Mapped[int] = mapped_column(BigInteger, default=0)
    line_no: Mapped[int] = mapped_column(BigInteger, default=0)
    format: Mapped[str | None] = mapped_column(String(40))
    miner_state: Mapped[str | None] = mapped_column(Text)
    fingerprint: Mapped[str | None] = mapped_column(String(64))
    fingerprint_len: Mapped[int] = mapped_column(default=0)
    fingerprint_prefix: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime]
    head: Mapped[bytes | None] = mapped_column(LargeBinary)  # the fingerprinted bytes: tells a truncation from new content
    tail_offset: Mapped[int | None] = mapped_column(BigInteger)  # where the last line read starts
    tail_hash: Mapped[int | None] = mapped_column(BigInteger)  # and its hash (app/sources.line_hash)
    detector_state: Mapped[str | None] = mapped_column(Text)  # JSON: correlation state at this position (app/positions)


class SourceLines(Base):
    """The hashes of a run of consecutive lines read from one generation of a file (app/sources.py)."""

    __tablename__ = "source_lines"
    path: Mapped[str] = mapped_column(Text, primary_key=True)
    inode: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    generation: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    first_line: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    hashes: Mapped[bytes] = mapped_column(LargeBinary)  # 4 bytes a line, little-endian CRC-32


class WatchedFolder(Base):
    """A folder a watcher has followed: files appearing in it later are new, read from line 1."""

    __tablename__ = "watched_folders"
    path: Mapped[str] = mapped_column(Text, primary_key=True)
    first_watched_at: Mapped[datetime]


class RuleTitle(Base):
    """The title of each rule a run loaded (by the id records name in `detections`): SigmaHQ's ids are
    UUIDs, which a person cannot read; records read from the store carry their rules' titles."""

    __tablename__ = "rule_titles"
    rule_id: Mapped[str] = mapped_column(Text, primary_key=True)
    title: Mapped[str] = mapped_column(Text)


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(index=True)
    finished_at: Mapped[datetime | None]
    command: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]]
    metrics: Mapped[dict[str, Any] | None]
    status: Mapped[str] = mapped_column(String(20))
    host: Mapped[str | None] = mapped_column(String(200))
    pid: Mapped[int | None]


class Record(Base):
    __tablename__ = "records"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    source: Mapped[str] = mapped_column(Text, index=True)
    inode: Mapped[int] = mapped_column(BigInteger)
    host: Mapped[str | None] = mapped_column(Text)
    line_start: Mapped[int]
    line_end: Mapped[int]
    first_ts: Mapped[datetime | None]
    last_ts: Mapped[datetime | None] = mapped_column(index=True)
    line_count: Mapped[int]
    risk_level: Mapped[str] = mapped_column(String(10))
    risk_rank: Mapped[int] = mapped_column(index=True)
    risk_score: Mapped[int]
    category: Mapped[str] = mapped_column(String(40), index=True)
    technique_ids: Mapped[str] = mapped_column(Text, default="")
    techniques: Mapped[list[Any]]
    indicators: Mapped[dict[str, Any]]
    anomaly: Mapped[str] = mapped_column(Text)
    trace: Mapped[str] = mapped_column(Text)
    recommendation: Mapped[str] = mapped_column(Text)
    evidence: Mapped[dict[str, Any]]
    detections: Mapped[list[Any]]
    decided_by: Mapped[str] = mapped_column(String(20))
    model: Mapped[str | None] = mapped_column(Text)
    adapter: Mapped[str | None] = mapped_column(Text)
    prompt_version: Mapped[str] = mapped_column(String(40))
    schema_version: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20), index=True)
    close_reason: Mapped[str | None] = mapped_column(String(20))
    analyst_note: Mapped[str | None] = mapped_column(Text)
    reviewer: Mapped[str | None] = mapped_column(String(200))
    reviewed_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    run_id: Mapped[str | None] = mapped_column(String(40), index=True)
    raw_model_output: Mapped[str | None] = mapped_column(Text)
    engine_stats: Mapped[dict[str, Any] | None]
    llm_error: Mapped[str | None] = mapped_column(Text)
    ungrounded: Mapped[list[Any]] = mapped_column(default=list)
    rejected: Mapped[dict[str, Any]] = mapped_column(default=dict)
    verdict: Mapped[dict[str, Any]] = mapped_column(default=dict)

    __table_args__ = (Index("ix_records_risk_rank_last_ts", "risk_rank", "last_ts"),)


class EvidenceLine(Base):
    __tablename__ = "evidence"
    id: Mapped[int] = mapped_column(primary_key=True)
    record_id: Mapped[str] = mapped_column(ForeignKey("records.id", ondelete="CASCADE"), index=True)
    line_no: Mapped[int]
    text: Mapped[str] = mapped_column(Text)


class WindowResult(Base):
    __tablename__ = "windows"
    id: Mapped[int] = mapped_column(primary_key=True)
    source: Mapped[str] = mapped_column(Text)
    inode: Mapped[int] = mapped_column(BigInteger)
    generation: Mapped[int] = mapped_column(default=0)
    line_start: Mapped[int]
    line_end: Mapped[int]
    line_count: Mapped[int]
    verdict: Mapped[str] = mapped_column(String(40))
    record_ids: Mapped[list[Any]]
    run_id: Mapped[str | None] = mapped_column(String(40), index=True)
    created_at: Mapped[datetime]

    # Unique span: re-analysing the same lines replaces the window instead of counting it twice.
    __table_args__ = (Index("ux_windows_span", "source", "inode", "generation", "line_start", "line_end",
                            unique=True),)


class ErrorEntry(Base):
    __tablename__ = "errors"
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[str | None] = mapped_column(String(40), index=True)
    source: Mapped[str] = mapped_column(Text)
    offset: Mapped[int | None] = mapped_column(BigInteger)
    line_no: Mapped[int | None]
    stage: Mapped[str] = mapped_column(String(40))
    message: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class Review(Base):
    """The trail of a record's reviews: each change, from `old_status` to `status`; `incident_id`
    names the incident whose review it came from (None: the record's own)."""

    __tablename__ = "reviews"
    id: Mapped[int] = mapped_column(primary_key=True)
    record_id: Mapped[str] = mapped_column(ForeignKey("records.id", ondelete="CASCADE"), index=True)
    old_status: Mapped[str | None] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20))
    close_reason: Mapped[str | None] = mapped_column(String(20))
    incident_id: Mapped[str | None] = mapped_column(String(40))
    note: Mapped[str | None] = mapped_column(Text)
    reviewer: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime]


class BaselineProfile(Base):
    """One row of a learned baseline: kind (web, web-site, template, template-scope, entity, host),
    scope (a site, a format/program, a host) and key (an endpoint, a message kind, a combination)."""

    __tablename__ = "baseline_profiles"
    kind: Mapped[str] = mapped_column(String(20), primary_key=True)
    scope: Mapped[str] = mapped_column(Text, primary_key=True)
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    data: Mapped[Any] = mapped_column(JSON)  # the profile's own JSON: an object or a list
    clients: Mapped[int]
    updated_at: Mapped[datetime]


class BaselineMute(Base):
    """A deviation ref (or a ref prefix) an analyst muted: never reported again."""

    __tablename__ = "baseline_mutes"
    ref: Mapped[str] = mapped_column(Text, primary_key=True)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]


class ModelReview(Base):
    """One prompt for the model (app/review.py's ReviewItem as JSON): pending, done or failed."""

    __tablename__ = "model_reviews"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    status: Mapped[str] = mapped_column(String(10), index=True)
    priority: Mapped[int]
    run_id: Mapped[str | None] = mapped_column(String(40), index=True)
    item: Mapped[Any] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ModelReviewRecord(Base):
    """Which records a review may change (those are "awaiting review" while it is pending)."""

    __tablename__ = "model_review_records"
    review_id: Mapped[str] = mapped_column(ForeignKey("model_reviews.id", ondelete="CASCADE"), primary_key=True)
    record_id: Mapped[str] = mapped_column(String(64), primary_key=True, index=True)


class IncidentRow(Base):
    """Records grouped into one attack story (app/incidents): the story, its roll-ups and its review."""

    __tablename__ = "incidents"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    summary: Mapped[str] = mapped_column(Text)
    stages: Mapped[list[Any]]
    next_steps: Mapped[list[Any]]
    cited: Mapped[list[Any]]
    story_by: Mapped[str] = mapped_column(String(20))
    story_key: Mapped[str] = mapped_column(String(64))
    model: Mapped[str | None] = mapped_column(Text)
    ungrounded: Mapped[list[Any]]
    invented: Mapped[int]
    rejected: Mapped[dict[str, Any]] = mapped_column(default=dict)
    risk_level: Mapped[str] = mapped_column(String(10))
    risk_rank: Mapped[int] = mapped_column(index=True)
    category: Mapped[str] = mapped_column(String(40))
    first_ts: Mapped[datetime | None]
    last_ts: Mapped[datetime | None] = mapped_column(index=True)
    hosts: Mapped[list[Any]]
    tactics: Mapped[list[Any]]
    techniques: Mapped[list[Any]]
    entities: Mapped[dict[str, Any]]
    pivots: Mapped[list[Any]]
    record_count: Mapped[int]
    status: Mapped[str] = mapped_column(String(20), index=True)
    close_reason: Mapped[str | None] = mapped_column(String(20))
    owner: Mapped[str | None] = mapped_column(String(200))
    analyst_note: Mapped[str | None] = mapped_column(Text)
    reviewer: Mapped[str | None] = mapped_column(String(200))
    reviewed_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class IncidentMember(Base):
    """Which incident a record belongs to (one at most)."""

    __tablename__ = "incident_records"
    record_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    incident_id: Mapped[str] = mapped_column(ForeignKey("incidents.id", ondelete="CASCADE"), index=True)


class IncidentReview(Base):
    """The audit trail of an incident's reviews (from `old_status` to status, reason, owner, note)."""

    __tablename__ = "incident_reviews"
    id: Mapped[int] = mapped_column(primary_key=True)
    incident_id: Mapped[str] = mapped_column(String(40), index=True)
    old_status: Mapped[str | None] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20))
    close_reason: Mapped[str | None] = mapped_column(String(20))
    owner: Mapped[str | None] = mapped_column(String(200))
    note: Mapped[str | None] = mapped_column(Text)
    reviewer: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime]


class Delivery(Base):
    """The delivery cursor: what a forwarding destination took of a record or an incident, and how sure."""

    __tablename__ = "deliveries"
    destination: Mapped[str] = mapped_column(Text, primary_key=True)
    kind: Mapped[str] = mapped_column(String(20), primary_key=True)
    item_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[str] = mapped_column(String(12))
    updated_at: Mapped[datetime]


class TriageAnswer(Base):
    """The model's answer to a triage snippet (`logwarden triage`, the UI's triage page), kept so that it
    can be judged later: the snippet, its sha256 (a triage record's source is `triage:` + its first 12
    hex digits), the answer as the model wrote it and the verdict the command drew from it."""

    __tablename__ = "triage_answers"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    snippet: Mapped[str] = mapped_column(Text)
    snippet_sha256: Mapped[str] = mapped_column(String(64), index=True)
    answer: Mapped[str] = mapped_column(Text)
    verdict: Mapped[str] = mapped_column(String(40))
    model: Mapped[str | None] = mapped_column(Text)
    record_ids: Mapped[list[Any]]
    created_at: Mapped[datetime]


class ModelFeedback(Base):
    """An analyst's accept or reject of one model judgement (schemas/feedback.py): a record's, a story's
    or a triage answer's. `judged` is the text judged as it was then and `judged_sha256` its digest, so
    the judgement stays tied to that text when the model rewrites it later; `context` the lines it judged
    where the store keeps them nowhere else (a triage snippet)."""

    __tablename__ = "model_feedback"
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))
    target_id: Mapped[str] = mapped_column(String(64))
    judged_sha256: Mapped[str] = mapped_column(String(64))
    judged: Mapped[str] = mapped_column(Text)
    context: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str | None] = mapped_column(Text)
    verdict: Mapped[str] = mapped_column(String(10))
    reason: Mapped[str] = mapped_column(String(30))
    note: Mapped[str | None] = mapped_column(Text)
    reviewer: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_model_feedback_target", "kind", "target_id"),)
