"""Training targets: the answer a model should give for one prompt (digest part), written from facts.

Owns: turning what the dataset knows — the incidents of a window, each with its exact lines and
its truth (category, risk, techniques, a sentence of facts) — into the `LLMAssessment` for one
digest part: a finding per incident that the part shows, its evidence the part's template ids
whose every line is the incident's (compact) and then its shown lines, its risk never below the
rules of its category on those lines, its text only what the digest shows (every target passes
`grounding.ground`, so the model never learns to name what it was not given). A part that shows
no incident line answers "no findings". Knows nothing of generators, files or training.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from logwarden.app import attack
from logwarden.app.digest import DigestPart
from logwarden.app.events import Signal
from logwarden.app.grounding import ground
from logwarden.app.postprocess import DEFAULT_RECOMMENDATION
from logwarden.schemas import LLMAssessment, risk_rank
from logwarden.schemas.assessment import (
    ANOMALY_MAX,
    EVIDENCE_MAX,
    FINDINGS_MAX,
    RECOMMENDATION_MAX,
    DeviationVerdict,
    Finding,
)

NOTHING = "No action needed."
EXCERPT_CHARS = 90  # of a cited line, quoted into a written-from-facts anomaly (answer tokens are CPU time)
# A technique to name when the truth has none (ATT&CK-mapped sources always carry one).
CATEGORY_TECHNIQUE = {"brute_force": "T1110", "reconnaissance": "T1595", "web_attack": "T1190",
                      "privilege_escalation": "T1548", "malware_execution": "T1059", "account_persistence": "T1136",
                      "data_exfiltration": "T1048", "system_failure": None, "policy_violation": "T1078"}
CATEGORY_PHRASE = {"brute_force": "Repeated failed authentication", "reconnaissance": "Reconnaissance activity",
                   "web_attack": "Attack payload in a web request", "privilege_escalation": "Privilege or credential abuse",
                   "malware_execution": "Suspicious execution", "account_persistence": "Persistence change",
                   "data_exfiltration": "Possible data exfiltration", "system_failure": "System failure",
                   "policy_violation": "Security policy violation"}


@dataclass(slots=True)
class Truth:
    """One incident the dataset knows: its lines (source line numbers) and its verdict."""

    lines: set[int]
    category: str
    risk: str
    techniques: list[str] = field(default_factory=list)
    what: str | None = None  # a sentence of facts from the generator; None: written from the cited lines
    advice: list[str] = field(default_factory=list)
    phrase: str | None = None  # how to name it when `what` is absent (e.g. "SQL injection in a request parameter")


def evidence_ids(lines: set[int], part: DigestPart) -> list[str]:
    """The part's ids for these lines: templates all of whose lines are in `lines` (biggest first), then the
    shown lines the chosen templates do not cover; at most `EVIDENCE_MAX`."""
    templates = [ref for ref in part.refs if ref.startswith("T") and set(part.lines_of[ref]) <= lines]
    templates.sort(key=lambda ref: -len(part.lines_of[ref]))
    covered = {n for ref in templates for n in part.lines_of[ref]}
    singles = [f"L{n}" for n in part.shown_lines if n in lines and n not in covered]
    return (templates + singles)[:EVIDENCE_MAX]


def _line_text(part: DigestPart, ref: str) -> str:
    """What the digest shows for an id: the line's text (after `L17 (T3): `) or the template."""
    marker = f" {ref} " if ref.startswith("T") else f" {ref}"
    rows = part.text.splitlines()
    if ref.startswith("L") and "lines:" in rows:  # the line itself, not a deviation note about it
        rows = rows[rows.index("lines:") + 1:]
    for row in rows:
        if row.startswith(marker):
            return row.split(": ", 1)[1] if ref.startswith("L") else row.split("x ", 1)[-1]
    return ""


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a space: a half path or address would not be in the digest."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut if len(cut) > limit // 2 else text[:limit]


def _anomaly(truth: Truth, refs: Sequence[str], part: DigestPart) -> str:
    """The generator's sentence where the digest backs every fact in it, else the phrase and what the first id shows."""
    if truth.what:
        said = ground(truth.what + ".", part.text)  # not capitalised: it may start with an account name
        if said.text and len(said.text) <= ANOMALY_MAX:  # the clauses the digest backs
            return said.text
    phrase = truth.phrase or _technique_name(truth) or CATEGORY_PHRASE[truth.category]
    excerpt = _clip(_line_text(part, refs[0]), EXCERPT_CHARS) if refs else ""
    text = _clip(f"{phrase}: {excerpt}" if excerpt else phrase, ANOMALY_MAX)
    return ground(text, part.text).text or phrase


def _technique_name(truth: Truth) -> str | None:
    return next((attack.display_name(t) for t in truth.techniques if attack.display_name(t)), None)


def _techniques(truth: Truth) -> list[str]:
    known = [t for t in truth.techniques if attack.is_known(t)]
    default = CATEGORY_TECHNIQUE[truth.category]
    return (known or ([default] if default else []))[:3]


def _risk(truth: Truth, lines: set[int], signals: Sequence[Signal]) -> str:
    """The truth's risk, raised to the rules of its category that fired on its lines (they set the floor)."""
    floors = [s.level for s in signals if s.category == truth.category and lines & set(s.line_numbers)]
    return max([truth.risk, *floors], key=risk_rank)


def finding(truth: Truth, part: DigestPart, signals: Sequence[Signal]) -> Finding | None:
    refs = evidence_ids(truth.lines, part)
    if not refs:
        return None  # this part shows none of the incident's lines
    cited = {n for ref in refs for n in part.lines_of[ref]}
    return Finding(evidence=refs, anomaly=_anomaly(truth, refs, part), category=truth.category,
                   techniques=_techniques(truth), risk_level=_risk(truth, cited, signals))


# The attack stage a verdict names for a truth of each category (system failures are no attack).
STAGE_OF = {"brute_force": "credential_access", "reconnaissance": "reconnaissance", "web_attack": "initial_access",
            "privilege_escalation": "privilege_escalation", "malware_execution": "execution",
            "account_persistence": "persistence", "data_exfiltration": "exfiltration", "system_failure": "none",
            "policy_violation": "impact"}


def verdicts(truths: Sequence[Truth], part: DigestPart) -> list[DeviationVerdict]:
    """One verdict per deviation the part shows: an attack of the truth whose lines hold it, else benign
    (a system failure is `suspicious`: abnormal, no attack)."""
    out = []
    for ref in part.deviations:
        lines = set(part.lines_of.get(ref, ()))
        truth = next((t for t in truths if t.lines & lines), None)
        if truth is None:
            out.append(DeviationVerdict(line=ref, verdict="benign", stage="none", category="benign"))
        else:
            out.append(DeviationVerdict(line=ref, verdict="suspicious" if truth.category == "system_failure" else "attack",
                                        stage=STAGE_OF.get(truth.category, "none"), category=truth.category))
    return out


def answer(truths: Sequence[Truth], part: DigestPart, signals: Sequence[Signal], rng: random.Random) -> LLMAssessment:
    """The part's answer: a verdict per deviation shown, its incidents' findings, riskiest first, and
    the riskiest one's advice (grounded)."""
    judged = verdicts(truths, part)
    pairs = [(t, f) for t in truths if (f := finding(t, part, signals)) is not None]
    pairs.sort(key=lambda tf: -risk_rank(tf[1].risk_level))
    pairs = pairs[:FINDINGS_MAX]
    if not pairs:
        return LLMAssessment(verdicts=judged, findings=[], recommendation=NOTHING)
    top = pairs[0][0]
    advice = ground(rng.choice(top.advice), part.text).text if top.advice else ""
    if not advice or len(advice) > RECOMMENDATION_MAX:
        advice = DEFAULT_RECOMMENDATION[top.category]
    return LLMAssessment(verdicts=judged, findings=[f for _, f in pairs],
                         recommendation=_clip(advice, RECOMMENDATION_MAX))
