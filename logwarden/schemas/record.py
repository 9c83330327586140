"""`RiskRecord`: what is stored, reviewed and exported, plus its parts.

A record's id is deterministic (source, inode, line span, prompt and schema version), so analysing
the same lines twice upserts the same row instead of adding a duplicate. Records of schema
version 1 (one model answer per window, model-written trace) stay readable: the fields added
since have defaults.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from logwarden.schemas.assessment import SCHEMA_VERSION, Category, RiskLevel

LIST_MAX = 50
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
HOST_SEPARATOR = ", "  # a record on several hosts names them all in `host`
STORED_TEXT_MAX = 4000

DecidedBy = Literal["rules", "llm", "rules+llm"]
# The review workflow SOC tools share (Elastic Security's alert workflow, Splunk ES's finding
# statuses): a record or incident is open until someone acknowledges it, in progress while it is
# worked, and closed with a reason (Kibana's closing reasons, bar "other").
Status = Literal["open", "acknowledged", "in_progress", "closed"]
STATUSES: tuple[str, ...] = ("open", "acknowledged", "in_progress", "closed")
OPEN_STATUSES: tuple[str, ...] = ("open", "acknowledged", "in_progress")  # still someone's work
CloseReason = Literal["true_positive", "benign_positive", "false_positive", "duplicate"]
CLOSE_REASONS: tuple[str, ...] = ("true_positive", "benign_positive", "false_positive", "duplicate")

RISK_SCORES = {"info": 10, "low": 30, "medium": 55, "high": 80, "critical": 95}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Technique(_Strict):
    id: str = Field(pattern=r"^T[0-9]{4}([.][0-9]{3})?$")
    name: str = Field(default="", max_length=200)
    tactic: str = Field(default="", max_length=100)


class Indicators(_Strict):
    """Deterministically extracted (regex), never written by the model."""

    ips: list[str] = Field(default_factory=list, max_length=LIST_MAX)
    users: list[str] = Field(default_factory=list, max_length=LIST_MAX)
    hosts: list[str] = Field(default_factory=list, max_length=LIST_MAX)
    urls: list[str] = Field(default_factory=list, max_length=LIST_MAX)
    domains: list[str] = Field(default_factory=list, max_length=LIST_MAX)
    hashes: list[str] = Field(default_factory=list, max_length=LIST_MAX)
    processes: list[str] = Field(default_factory=list, max_length=LIST_MAX)


class ExemplarLine(_Strict):
    """One evidence line as stored: its text (cut for storage, saying how much was cut), the sha256
    of the whole line as it was analysed (so a reader can tell whether the file still holds it),
    and its parsed key fields (EventID, Image, CommandLine, a request's path and parameters…)."""

    line_no: int = Field(ge=1)
    text: str = Field(max_length=STORED_TEXT_MAX)
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    fields: dict[str, str] = Field(default_factory=dict, max_length=LIST_MAX)


class Evidence(_Strict):
    line_numbers: list[int] = Field(default_factory=list)
    exemplars: list[ExemplarLine] = Field(default_factory=list, max_length=LIST_MAX)
    template_ids: list[int] = Field(default_factory=list)
    refs: list[str] = Field(default_factory=list, max_length=LIST_MAX)  # the digest ids (T3, L17) a model finding named


class RiskRecord(_Strict):
    id: str
    source: str
    inode: int = 0
    host: str | None = None
    line_start: int = Field(ge=1)
    line_end: int = Field(ge=1)
    first_ts: datetime | None = None
    last_ts: datetime | None = None
    line_count: int = Field(ge=0)
    risk_level: RiskLevel
    risk_score: int = Field(ge=0, le=100)
    category: Category
    techniques: list[Technique] = Field(default_factory=list, max_length=LIST_MAX)
    indicators: Indicators = Field(default_factory=Indicators)
    anomaly: str = Field(max_length=STORED_TEXT_MAX)
    trace: str = Field(max_length=STORED_TEXT_MAX)
    recommendation: str = Field(max_length=STORED_TEXT_MAX)
    evidence: Evidence = Field(default_factory=Evidence)
    detections: list[str] = Field(default_factory=list)
    decided_by: DecidedBy
    model: str | None = None
    adapter: str | None = None
    prompt_version: str
    schema_version: str = SCHEMA_VERSION
    status: Status = "open"
    close_reason: CloseReason | None = None  # set exactly when `status` is closed
    analyst_note: str | None = None
    reviewer: str | None = None  # who changed the review last, and when
    reviewed_at: datetime | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    run_id: str | None = None
    raw_model_output: str | None = None
    engine_stats: dict[str, Any] | None = None
    llm_error: str | None = None
    # Entities the model's text named that its digest does not contain: their clauses were removed.
    ungrounded: list[str] = Field(default_factory=list, max_length=LIST_MAX)
    # The model's texts that failed the gate (app/textgate.py): field (anomaly, recommendation,
    # techniques) → why (a `textgate.REASONS` key); those fields hold the rules' text instead.
    rejected: dict[str, str] = Field(default_factory=dict, max_length=LIST_MAX)
    # The model's enumerated verdict on a baseline deviation (verdict, stage, category; analyze_v4):
    # benign kept it at info, attack raised it; empty when the model gave none.
    verdict: dict[str, str] = Field(default_factory=dict, max_length=4)
    # The titles of the rules in `detections` (id → title), as the store knows them when it reads the
    # record (not a column of its own: the store keeps one title per rule).
    rule_titles: dict[str, str] = Field(default_factory=dict)

    def rule_names(self) -> list[str]:
        """`detections` as a person reads them: a rule whose id is a UUID (SigmaHQ's) by its title, a
        named rule (`lw-ssh-bruteforce`) by its name."""
        return [self.rule_titles.get(rule_id, rule_id) if _UUID.match(rule_id) else rule_id
                for rule_id in self.detections]

    @property
    def hosts(self) -> list[str]:
        """The hosts of the record's evidence lines (`host` lists several as "a, b")."""
        return [h for h in (self.host or "").split(HOST_SEPARATOR) if h]


def record_id(*, source: str, inode: int, line_start: int, line_end: int, prompt_version: str,
              schema_version: str = SCHEMA_VERSION, discriminator: str = "") -> str:
    """Deterministic id: the same lines analysed with the same prompt/schema give the same id.

    `discriminator` separates several records of one window (e.g. one per category).
    """
    key = "\x1f".join(map(str, (source, inode, line_start, line_end, prompt_version, schema_version,
                                 discriminator)))
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def review_error(status: str | None, reason: str | None) -> str | None:
    """Why a (status, close reason) pair is not a review state, or None: closed needs a reason, the
    other states take none. `status` None (keep the current one) takes no reason either."""
    if status is not None and status not in STATUSES:
        return f"unknown review status {status!r}; use one of: {', '.join(STATUSES)}"
    if reason is not None and reason not in CLOSE_REASONS:
        return f"unknown close reason {reason!r}; use one of: {', '.join(CLOSE_REASONS)}"
    if status == "closed" and reason is None:
        return f"closing needs a reason: one of {', '.join(CLOSE_REASONS)}"
    if status != "closed" and reason is not None:
        return "a close reason goes with status closed only"
    return None


def risk_score(level: str) -> int:
    return RISK_SCORES[level]
