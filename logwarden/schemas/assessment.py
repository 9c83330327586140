"""`LLMAssessment`: the only shape the model may write.

Field order is generation order: the model states the anomaly (异常), traces it (溯源), recommends
(建议), and only then commits to a category, techniques and a risk level. Every string and list is
bounded so that a small model cannot loop until the token budget (the grammar enforces the bounds).
Patterns are written with `[0-9]` and `[.]` because some servers' schema→grammar converters
mishandle `\\d` and `\\.`.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1"

RiskLevel = Literal["info", "low", "medium", "high", "critical"]
RISK_LEVELS: tuple[str, ...] = get_args(RiskLevel)

Category = Literal[
    "benign",
    "brute_force",
    "reconnaissance",
    "web_attack",
    "privilege_escalation",
    "malware_execution",
    "account_persistence",
    "data_exfiltration",
    "system_failure",
    "policy_violation",
]
CATEGORIES: tuple[str, ...] = get_args(Category)

TECHNIQUE_PATTERN = r"^T[0-9]{4}([.][0-9]{3})?$"
TechniqueId = Annotated[str, Field(pattern=TECHNIQUE_PATTERN)]  # the pattern bounds the length

TEXT_MAX = 300


def risk_rank(level: str) -> int:
    """0 for info … 4 for critical."""
    return RISK_LEVELS.index(level)


class LLMAssessment(BaseModel):
    """One window's assessment as written by the model: 异常 → 溯源 → 建议, then the verdict."""

    model_config = ConfigDict(extra="forbid")

    anomaly: str = Field(min_length=1, max_length=TEXT_MAX, description="What is abnormal (异常).")
    trace: str = Field(min_length=1, max_length=TEXT_MAX, description="Where it came from: who, from where, how (溯源).")
    recommendation: str = Field(min_length=1, max_length=TEXT_MAX, description="What the analyst should do (建议).")
    category: Category
    techniques: list[TechniqueId] = Field(max_length=3, description="MITRE ATT&CK technique ids.")
    risk_level: RiskLevel


def assessment_json_schema() -> dict:
    """The JSON schema used for constrained decoding and for server-side `response_format`."""
    return LLMAssessment.model_json_schema()


def assessment_json_schema_text() -> str:
    return json.dumps(assessment_json_schema(), sort_keys=True)
