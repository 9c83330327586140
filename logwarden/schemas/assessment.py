"""`LLMAssessment`: the only shape the model may write — a verdict on each baseline deviation it was
shown, then up to three findings that point at their evidence.

A verdict is the decisive output a small model can give (analyze_v4): for each deviation's line
(`L17`), in the order the digest lists them, one of `benign` (ordinary variety), `suspicious` or
`attack`, the attack stage and the category, all enumerated, no free text. A finding names the digest's template ids (`T3`) and/or line numbers (`L17`) it is about, then
says what is abnormal (异常), the category, the ATT&CK techniques and the risk level. The window's
recommendation (建议) follows. The trace (溯源: lines, host, accounts, addresses, time span) is not
the model's to write: post-processing assembles it from the window and the finding's evidence.
No findings = nothing abnormal. The recommendation is optional: the rules' text stands without it.

`answer_schema(refs, deviations)` is the per-request JSON schema: its evidence items are an enum of
exactly the ids that one prompt's digest shows, so a grammar-constrained model cannot point elsewhere,
and its verdicts are exactly one per deviation line shown, in order (each line a constant).
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

# 2: findings with evidence ids replace the single anomaly/trace/recommendation answer (verdicts,
# added with analyze_v4, are optional in the shape: an answer without them still reads).
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

Verdict = Literal["benign", "suspicious", "attack"]
VERDICTS: tuple[str, ...] = get_args(Verdict)
# Where in an attack a deviation sits (ATT&CK's tactics, folded to what a log line can show).
Stage = Literal["none", "reconnaissance", "initial_access", "execution", "persistence", "privilege_escalation",
                "credential_access", "discovery", "lateral_movement", "exfiltration", "impact"]
STAGES: tuple[str, ...] = get_args(Stage)

TECHNIQUE_PATTERN = r"^T[0-9]{4}([.][0-9]{3})?$"
TechniqueId = Annotated[str, Field(pattern=TECHNIQUE_PATTERN)]  # the pattern bounds the length
# "T3" = the digest's third template, "L17" = line 17 of the source (the pattern bounds the length).
EVIDENCE_PATTERN = r"^[TL][0-9]{1,9}$"
EvidenceRef = Annotated[str, Field(pattern=EVIDENCE_PATTERN)]

FINDINGS_MAX = 3
VERDICTS_MAX = 24  # deviations one prompt may show (a digest part carries the notes of its own lines)
EVIDENCE_MAX = 8
ANOMALY_MAX = 160
RECOMMENDATION_MAX = 200
TEXT_MAX = ANOMALY_MAX  # what a dataset target's anomaly may hold


def risk_rank(level: str) -> int:
    """0 for info … 4 for critical."""
    return RISK_LEVELS.index(level)


class Finding(BaseModel):
    """One incident: the evidence it is about, what is abnormal, its category, techniques and risk."""

    model_config = ConfigDict(extra="forbid")

    evidence: list[EvidenceRef] = Field(min_length=1, max_length=EVIDENCE_MAX,
                                        description="The digest's template ids (T3) and line ids (L17) it is about.")
    anomaly: str = Field(min_length=1, max_length=ANOMALY_MAX, description="What is abnormal (异常), with counts.")
    category: FindingCategory
    techniques: list[TechniqueId] = Field(max_length=3, description="MITRE ATT&CK technique ids.")
    risk_level: RiskLevel


class DeviationVerdict(BaseModel):
    """The model's judgement of one baseline deviation: enumerated, nothing to write."""

    model_config = ConfigDict(extra="forbid")

    line: EvidenceRef = Field(description="The deviation's line id (L17).")
    verdict: Verdict
    stage: Stage
    category: Category


class LLMAssessment(BaseModel):
    """One prompt's answer: a verdict per deviation shown, its findings (none = nothing abnormal),
    then, optionally, what to do (建议)."""

    model_config = ConfigDict(extra="forbid")

    verdicts: list[DeviationVerdict] = Field(default_factory=list, max_length=VERDICTS_MAX)
    findings: list[Finding] = Field(max_length=FINDINGS_MAX)
    recommendation: str = Field(default="", max_length=RECOMMENDATION_MAX,
                                description="What the analyst should do (建议).")


def assessment_json_schema() -> dict[str, Any]:
    """The JSON schema of an answer to a prompt that shows no deviation (evidence ids by pattern): the
    fallback grammar, servers without per-request schemas. Verdicts are asked only by a per-prompt
    schema that names the deviations' lines (`answer_schema`); offered here, a model trained on
    findings-first answers starts writing empty verdict lists instead of its findings."""
    schema = copy.deepcopy(_base_schema())
    del schema["properties"]["verdicts"]
    return schema


@lru_cache(maxsize=1)
def _base_schema() -> dict[str, Any]:
    return LLMAssessment.model_json_schema()


def answer_schema(refs: Sequence[str], deviations: Sequence[str] = (),
                  categories: Sequence[str] | None = None) -> dict[str, Any]:
    """The schema for one prompt: evidence may only name `refs` (the ids its digest shows), in that
    order; `deviations` (the line ids of the deviations it shows, in order) get exactly one verdict
    each, in that order, and are then required. A prompt without deviations has no verdicts.
    `categories`: the ones its lines can be (None: all); a verdict may always say `benign`."""
    if not refs:
        raise ValueError("a prompt's digest shows at least one line; refs must not be empty")
    schema = assessment_json_schema()
    schema["$defs"]["Finding"]["properties"]["evidence"]["items"] = {"type": "string", "enum": list(refs)}
    if categories is not None:
        for name in ("Finding", "DeviationVerdict"):
            field = schema["$defs"][name]["properties"]["category"]
            field["enum"] = [c for c in field["enum"] if c in categories or c == "benign"]
    shown = list(dict.fromkeys(deviations))[:VERDICTS_MAX]
    if not shown:
        return schema
    verdict = schema["$defs"]["DeviationVerdict"]
    verdicts = {"type": "array", "minItems": len(shown), "maxItems": len(shown), "items": False,
                "prefixItems": [{**verdict, "properties": {**verdict["properties"], "line": {"const": ref}}}
                                for ref in shown]}
    schema["properties"] = {"verdicts": verdicts, **schema["properties"]}  # first: the grammar keeps this order
    schema["required"] = ["verdicts", *schema.get("required", [])]
    return schema


def schema_deviations(schema: dict[str, Any]) -> list[str]:
    """The deviation line ids a per-prompt schema asks verdicts for, in order."""
    items = schema.get("properties", {}).get("verdicts", {}).get("prefixItems", [])
    return [item["properties"]["line"]["const"] for item in items]


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
