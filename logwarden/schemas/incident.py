"""`Incident`: records grouped into one attack story, as stored, reviewed and exported; and
`IncidentStory`: what the model must emit about an incident.

The story's JSON schema (`story_json_schema`) admits, as cited record ids, only the ids of the
incident at hand (an `enum`), so a small model cannot cite a record that does not exist; code checks
again anyway (app/incidents/story.py). Knows nothing of how incidents are grouped or stored.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from logwarden.schemas.assessment import Category, RiskLevel
from logwarden.schemas.record import STORED_TEXT_MAX, CloseReason, Status

STORY_VERSION = "incident_v1"
KILL_CHAIN = ("reconnaissance", "initial_access", "execution", "persistence", "privilege_escalation",
              "defense_evasion", "credential_access", "discovery", "lateral_movement", "collection",
              "command_and_control", "exfiltration", "impact")
STEPS_MAX = 3
STEP_MAX = 120
TITLE_MAX = 100
SUMMARY_MAX = 400
CITED_MAX = 6
STAGES_MAX = 5


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IncidentStory(_Strict):
    """The model's answer: a title, a summary, the kill-chain stages seen, next steps, the ids cited."""

    title: str = Field(max_length=TITLE_MAX)
    summary: str = Field(max_length=SUMMARY_MAX)
    stages: list[str] = Field(default_factory=list, max_length=STAGES_MAX)
    next_steps: list[str] = Field(default_factory=list, max_length=STEPS_MAX)
    cited: list[str] = Field(default_factory=list, max_length=CITED_MAX)


class Incident(_Strict):
    id: str
    title: str = Field(max_length=STORED_TEXT_MAX)
    summary: str = Field(default="", max_length=STORED_TEXT_MAX)
    stages: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    cited: list[str] = Field(default_factory=list)  # record ids the story cites (all members of the incident)
    story_by: str = "rules"  # rules: the deterministic title; llm: the model's grounded story
    story_key: str = ""  # the member set the story was written for: a changed incident gets a new story
    model: str | None = None
    ungrounded: list[str] = Field(default_factory=list)  # entities the model named that its records lack (removed)
    invented: int = 0  # ids the model cited that are not members: the story was rejected, none is stored
    rejected: dict[str, str] = Field(default_factory=dict)  # story field → why the gate turned the model's down
    risk_level: RiskLevel
    category: Category
    first_ts: datetime | None = None
    last_ts: datetime | None = None
    hosts: list[str] = Field(default_factory=list)
    tactics: list[str] = Field(default_factory=list)
    techniques: list[str] = Field(default_factory=list)
    entities: dict[str, list[str]] = Field(default_factory=dict)
    pivots: list[str] = Field(default_factory=list)  # kind=value that linked the members
    record_ids: list[str] = Field(default_factory=list)
    status: Status = "open"
    close_reason: CloseReason | None = None
    owner: str | None = None
    analyst_note: str | None = None
    reviewer: str | None = None
    reviewed_at: datetime | None = None


def incident_id(earliest_record_id: str) -> str:
    """Stable: the same earliest member gives the same id on every run."""
    return "inc-" + hashlib.sha256(earliest_record_id.encode()).hexdigest()[:16]


def story_key(record_ids: list[str]) -> str:
    return hashlib.sha256("\x1f".join(sorted(record_ids)).encode()).hexdigest()[:24]


def story_json_schema(record_ids: list[str]) -> dict[str, Any]:
    """`IncidentStory`'s schema with `cited` restricted to these ids and stages to the kill chain."""
    schema = IncidentStory.model_json_schema()
    props = schema["properties"]
    props["cited"]["items"] = {"type": "string", "enum": list(record_ids)}
    props["stages"]["items"] = {"type": "string", "enum": list(KILL_CHAIN)}
    props["next_steps"]["items"] = {"type": "string", "maxLength": STEP_MAX}
    props["cited"]["minItems"] = 1
    # each id once at most: a small model otherwise loops on the enum until the token bound cuts the answer
    props["cited"]["maxItems"] = min(CITED_MAX, len(record_ids))
    schema["required"] = ["title", "summary", "stages", "next_steps", "cited"]
    return schema
