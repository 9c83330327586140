"""Post-processing: the model's JSON + the detectors' signals → validated `RiskRecord`s.

Owns the merge policy (the LLM never lowers what the rules know):
- signals of a window are grouped by (category, key) — e.g. brute force from each source
  address is its own record; each group becomes one record whose risk floor is its highest rule
  level and whose category is the rules' category;
- a valid model assessment explains the groups it matches (of its category, those whose key its
  anomaly names, else the riskiest of its category; no such group: the riskiest group) and may
  raise their level, never lower it; its techniques are kept only when they are
  in the shipped ATT&CK table;
- a window no rule fired on becomes a record only when the model calls it non-benign at
  `LLM_ONLY_MIN_RISK` or above (a small model's "medium" on a cron line is noise);
- indicators are extracted deterministically from the evidence lines, never taken from the model.
Knows nothing of files, the engine internals or the store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from logwarden.app import attack
from logwarden.app.indicators import extract_indicators
from logwarden.app.mine import Window
from logwarden.app.models import Event, Signal
from logwarden.schemas import LLMAssessment, risk_rank
from logwarden.schemas.record import (
    Evidence,
    ExemplarLine,
    Indicators,
    RiskRecord,
    Technique,
    record_id,
    risk_score,
)

LLM_ONLY_MIN_RISK = "medium"
MAX_EVIDENCE_LINES = 500
MAX_EXEMPLARS = 10
EXEMPLAR_CHARS = 1000

DEFAULT_RECOMMENDATION = {
    "brute_force": "Block or rate-limit the source addresses, check for a successful login from them, enforce key-only auth / MFA.",
    "reconnaissance": "Block the scanning sources at the edge and review what they reached (status 200 responses, valid users hit).",
    "web_attack": "Check whether the requests succeeded (status, response size, app logs), patch the targeted endpoint, block the source, consider a WAF rule.",
    "privilege_escalation": "Confirm the privilege change was authorised; if not, revert it, lock the account and review its recent commands.",
    "malware_execution": "Isolate the host, collect the process tree and the binary/script, and hunt for the same command line elsewhere.",
    "account_persistence": "Verify the new account/service/key with its owner; remove it if unauthorised and review who created it.",
    "data_exfiltration": "Identify what data left, to where and by whom; revoke the credentials used and preserve the logs.",
    "system_failure": "Check the host's health (memory, disk, kernel) and the affected service; open an incident if it recurs.",
    "policy_violation": "Confirm with the account owner; restore logging/settings and review what happened while they were off.",
    "benign": "No action needed.",
}


class AssessmentError(ValueError):
    """The model's output is not a valid `LLMAssessment`."""


@dataclass(slots=True)
class LLMResult:
    """What the engine returned for one window, as the pipeline passes it in."""

    assessment: LLMAssessment | None
    raw_output: str | None = None
    error: str | None = None
    stats: dict | None = None


@dataclass(slots=True)
class Provenance:
    model: str | None
    adapter: str | None
    prompt_version: str
    run_id: str | None = None


@dataclass(slots=True)
class _Group:
    category: str
    key: str
    signals: list[Signal] = field(default_factory=list)

    @property
    def floor(self) -> str:
        return max((s.level for s in self.signals), key=risk_rank)

    @property
    def line_numbers(self) -> list[int]:
        return sorted({n for s in self.signals for n in s.line_numbers})


def parse_assessment(text: str) -> LLMAssessment:
    """Validate the model's text; tolerate a ```json fence (unconstrained backends add one)."""
    cleaned = text.strip()
    if cleaned.startswith("```"):
        cleaned = cleaned.strip("`").removeprefix("json").strip()
    try:
        return LLMAssessment.model_validate(json.loads(cleaned))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise AssessmentError(f"model output is not a valid LLMAssessment: {exc}") from None


def result_of(generation) -> LLMResult:
    """An engine `Generation` → `LLMResult`: validated assessment, or the reason there is none."""
    stats = generation.stats.as_dict()
    if generation.error or not generation.finished:
        return LLMResult(assessment=None, raw_output=generation.text, stats=stats,
                         error=generation.error or "model output did not finish within the token budget")
    try:
        return LLMResult(assessment=parse_assessment(generation.text), raw_output=generation.text, stats=stats)
    except AssessmentError as exc:
        return LLMResult(assessment=None, raw_output=generation.text, error=str(exc), stats=stats)


def group_signals(signals: Sequence[Signal]) -> list[_Group]:
    """One group per incident, riskiest first (ties: first evidence line).

    An incident is signals of one category and key (source address, account, host) that either
    come from the same rule or whose evidence spans overlap: brute force + password spray from
    one address is one incident, an OOM kill and a later disk error on one host are two.
    """
    groups: list[_Group] = []
    for signal in sorted(signals, key=lambda s: min(s.line_numbers, default=0)):
        home = next((g for g in groups if g.category == signal.category and g.key == signal.key
                     and (any(s.rule_id == signal.rule_id for s in g.signals) or _overlaps(g, signal))), None)
        if home is None:
            home = _Group(signal.category, signal.key)
            groups.append(home)
        home.signals.append(signal)
    return sorted(groups, key=lambda g: (-risk_rank(g.floor), g.line_numbers[:1]))


def _overlaps(group: _Group, signal: Signal) -> bool:
    lines = group.line_numbers
    return bool(lines and signal.line_numbers) and \
        min(signal.line_numbers) <= lines[-1] and max(signal.line_numbers) >= lines[0]


def _explained_groups(groups: Sequence[_Group], assessment: LLMAssessment) -> list[_Group]:
    """The incidents the answer is about: those of its category whose key (address, account, bucket) its anomaly names —
    a window can hold several, e.g. a root console login and the root user stopping the trail; none named → the
    riskiest of its category; no group of its category → the riskiest group. Only the anomaly counts: the trace
    lists the window's busiest addresses and accounts, whatever the incident."""
    same = [g for g in groups if g.category == assessment.category]
    if not same:
        return [groups[0]]
    text = assessment.anomaly.lower()
    named = [g for g in same if g.key and re.search(rf"(?<![\w.]){re.escape(g.key.lower())}(?!\w|\.\w)", text)]
    return named or same[:1]


def _techniques(ids: Sequence[str]) -> list[Technique]:
    seen: dict[str, Technique] = {}
    for tid in ids:
        if tid not in seen and (found := attack.lookup(tid)) is not None:
            seen[tid] = found
    return list(seen.values())


def _events_at(window: Window, lines: Sequence[int]) -> list[Event]:
    """The window's events at these lines (a threshold rule's earliest lines may lie in an earlier
    window; then the group's evidence here is what this window holds of it)."""
    wanted = set(lines)
    return [e for e in window.events if e.line_no in wanted] or list(window.events)


def _evidence(window: Window, events: Sequence[Event]) -> Evidence:
    cluster_of = {e.line_no: cid for e, cid in zip(window.events, window.cluster_ids)}
    shown = list(events[: MAX_EXEMPLARS - 1]) + ([events[-1]] if len(events) >= MAX_EXEMPLARS else [])
    return Evidence(
        line_numbers=[e.line_no for e in events][:MAX_EVIDENCE_LINES],
        exemplars=[ExemplarLine(line_no=e.line_no, text=e.raw[:EXEMPLAR_CHARS]) for e in shown],
        template_ids=sorted({cluster_of[e.line_no] for e in events}),
    )


def _rules_text(group: _Group, window: Window, events: Sequence[Event], indicators: Indicators) -> tuple[str, str, str]:
    """Anomaly/trace/recommendation written from the facts when no model text is available."""
    anomaly = "; ".join(f"{s.title}" + (f" ({s.description})" if s.description else "") for s in group.signals)
    who = []
    if indicators.ips:
        who.append("from " + ", ".join(indicators.ips[:5]))
    if indicators.users:
        who.append("accounts " + ", ".join(indicators.users[:5]))
    host = window.host()
    first = next((e.ts for e in events if e.ts), None)
    last = next((e.ts for e in reversed(events) if e.ts), None)
    span = f"{first.isoformat()} .. {last.isoformat()}" if first and last else "time unknown"
    trace = (f"{len(events)} line(s) in {window.source}" + (f" on {host}" if host else "")
             + f", lines {events[0].line_no}-{events[-1].line_no}, {span}" + ("; " + "; ".join(who) if who else ""))
    return anomaly[:4000], trace[:4000], DEFAULT_RECOMMENDATION[group.category]


def _record(window: Window, *, category: str, key: str, level: str, events: Sequence[Event], texts: tuple[str, str, str],
            indicators: Indicators, techniques: list[Technique], detections: list[str], decided_by: str,
            prov: Provenance, llm: LLMResult | None) -> RiskRecord:
    anomaly, trace, recommendation = texts
    return RiskRecord(
        id=record_id(source=window.source, inode=window.inode, line_start=window.line_start,
                     line_end=window.line_end, prompt_version=prov.prompt_version,
                     discriminator=f"{category}:{key}:{events[0].line_no}"
                     + (f":g{window.generation}" if window.generation else "")),  # lines 1.. again after copytruncate
        source=window.source, inode=window.inode, host=window.host(),
        line_start=events[0].line_no, line_end=events[-1].line_no,
        first_ts=next((e.ts for e in events if e.ts), None),
        last_ts=next((e.ts for e in reversed(events) if e.ts), None),
        line_count=len(events), risk_level=level, risk_score=risk_score(level), category=category,
        techniques=techniques, indicators=indicators, anomaly=anomaly, trace=trace,
        recommendation=recommendation, evidence=_evidence(window, events), detections=detections,
        decided_by=decided_by, model=prov.model if llm else None, adapter=prov.adapter if llm else None,
        prompt_version=prov.prompt_version, run_id=prov.run_id,
        raw_model_output=llm.raw_output if llm else None, engine_stats=llm.stats if llm else None,
        llm_error=llm.error if llm else None,
    )


def _group_record(window: Window, group: _Group, assessment: LLMAssessment | None, prov: Provenance,
                  llm: LLMResult | None) -> RiskRecord:
    events = _events_at(window, group.line_numbers)
    rule_techniques = [t for s in group.signals for t in s.techniques]
    if assessment is None:
        level, texts, tech_ids, decided = group.floor, None, rule_techniques, "rules"
    else:
        level = max(group.floor, assessment.risk_level, key=risk_rank)
        texts = (assessment.anomaly, assessment.trace, assessment.recommendation)
        tech_ids, decided = rule_techniques + list(assessment.techniques), "rules+llm"
    indicators = extract_indicators(events)
    return _record(window, category=group.category, key=group.key, level=level, events=events,
                   texts=texts or _rules_text(group, window, events, indicators), indicators=indicators,
                   techniques=_techniques(tech_ids), detections=sorted({s.rule_id for s in group.signals}),
                   decided_by=decided, prov=prov, llm=llm)


def _llm_only_record(window: Window, assessment: LLMAssessment, prov: Provenance, llm: LLMResult) -> RiskRecord:
    return _record(window, category=assessment.category, key="llm", level=assessment.risk_level, events=window.events,
                   texts=(assessment.anomaly, assessment.trace, assessment.recommendation),
                   indicators=extract_indicators(window.events),
                   techniques=_techniques(assessment.techniques), detections=[], decided_by="llm",
                   prov=prov, llm=llm)


def build_records(window: Window, signals: Sequence[Signal], llm: LLMResult | None,
                  prov: Provenance) -> list[RiskRecord]:
    """The records of one window (empty = analysed and benign)."""
    groups = group_signals(signals)
    assessment = llm.assessment if llm else None
    if not groups:
        if assessment and assessment.category != "benign" and risk_rank(assessment.risk_level) >= risk_rank(LLM_ONLY_MIN_RISK):
            return [_llm_only_record(window, assessment, prov, llm)]
        return []
    explained = _explained_groups(groups, assessment) if assessment else []
    return [_group_record(window, g, assessment, prov, llm) if any(g is e for e in explained)
            else _group_record(window, g, None, prov, _failure_only(llm))
            for g in groups]


def _failure_only(llm: LLMResult | None) -> LLMResult | None:
    """Groups the model did not explain keep the error (if any), not another group's text."""
    return LLMResult(assessment=None, error=llm.error) if llm and llm.error else None
