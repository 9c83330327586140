"""`LLMAssessment`: the only shape the model may write — up to three findings that point at their evidence.

A finding names the digest's template ids (`T3`) and/or line numbers (`L17`) it is about, then
says what is abnormal (异常), the category, the ATT&CK techniques and the risk level. The window's
recommendation (建议) follows. The trace (溯源: lines, host, accounts, addresses, time span) is not
the model's to write: post-processing assembles it from the window and the finding's evidence.
No findings = nothing abnormal.

`answer_schema(refs)` is the per-request JSON schema: its evidence items are an enum of exactly
the ids that one prompt's digest shows, so a grammar-constrained model cannot point elsewhere.
Every string and list is bounded so that a small model cannot loop until the token budget (the
grammar enforces the bounds). Patterns are written with `[0-9]` and `[.]` because some servers'
schema→grammar converters mishandle `\\d` and `\\.`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

# 2: findings with evidence ids replace the single anomaly/trace/recommendation answer.
SCHEMA_VERSION = "2"

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
# A finding is about something abnormal: "nothing abnormal" is an empty list of findings.
FindingCategory = Literal[
    "brute_force", "reconnaissance", "web_attack", "privilege_escalation", "malware_execution",
    "account_persistence", "data_exfiltration", "system_failure", "policy_violation",
]

TECHNIQUE_PATTERN = r"^T[0-9]{4}([.][0-9]{3})?$"
TechniqueId = Annotated[str, Field(pattern=TECHNIQUE_PATTERN)]  # the pattern bounds the length
# "T3" = the digest's third template, "L17" = line 17 of the source (the pattern bounds the length).
EVIDENCE_PATTERN = r"^[TL][0-9]{1,9}$"
EvidenceRef = Annotated[str, Field(pattern=EVIDENCE_PATTERN)]

FINDINGS_MAX = 3
EVIDENCE_MAX = 8
ANOMALY_MAX = 160
RECOMMENDATION_MAX = 200
TEXT_MAX = ANOMALY_MAX  # what a dataset target's anomaly may hold


def risk_rank(level: str) -> int:
    """0 for info … 4 for critical."""
    return RISK_LEVELS.index(level)


class Finding(BaseModel):
    """One incident: the evidence it is about, what is abnormal, and the verdict."""

    model_config = ConfigDict(extra="forbid")

    evidence: list[EvidenceRef] = Field(min_length=1, max_length=EVIDENCE_MAX,
                                        description="The digest's template ids (T3) and line ids (L17) it is about.")
    anomaly: str = Field(min_length=1, max_length=ANOMALY_MAX, description="What is abnormal (异常), with counts.")
    category: FindingCategory
    techniques: list[TechniqueId] = Field(max_length=3, description="MITRE ATT&CK technique ids.")
    risk_level: RiskLevel


class LLMAssessment(BaseModel):
    """One prompt's answer: its findings (none = nothing abnormal), then what to do (建议)."""

    model_config = ConfigDict(extra="forbid")

    findings: list[Finding] = Field(max_length=FINDINGS_MAX)
    recommendation: str = Field(min_length=1, max_length=RECOMMENDATION_MAX,
                                description="What the analyst should do (建议).")


def assessment_json_schema() -> dict[str, Any]:
    """The JSON schema of any answer (evidence ids by pattern): validation, servers without per-request schemas."""
    return copy.deepcopy(_base_schema())


@lru_cache(maxsize=1)
def _base_schema() -> dict[str, Any]:
    return LLMAssessment.model_json_schema()


def answer_schema(refs: Sequence[str]) -> dict[str, Any]:
    """The schema for one prompt: evidence may only name `refs` (the ids its digest shows), in that order."""
    if not refs:
        raise ValueError("a prompt's digest shows at least one line; refs must not be empty")
    schema = assessment_json_schema()
    schema["$defs"]["Finding"]["properties"]["evidence"]["items"] = {"type": "string", "enum": list(refs)}
    return schema


def schema_refs(schema: dict[str, Any]) -> list[str] | None:
    """The evidence ids a per-prompt schema admits (None for the generic schema)."""
    items = schema.get("$defs", {}).get("Finding", {}).get("properties", {}).get("evidence", {}).get("items", {})
    return list(items["enum"]) if "enum" in items else None


def assessment_json_schema_text() -> str:
    return json.dumps(assessment_json_schema(), sort_keys=True)


def ref_kind(ref: str) -> tuple[str, int]:
    """("T", 3) for "T3", ("L", 17) for "L17"."""
    if not re.fullmatch(EVIDENCE_PATTERN, ref):
        raise ValueError(f"not an evidence id: {ref!r}")
    return ref[0], int(ref[1:])
