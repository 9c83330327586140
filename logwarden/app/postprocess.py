"""Post-processing: the model's findings + the detectors' signals → validated `RiskRecord`s.

Owns the merge policy (the LLM never lowers what the rules know):
- signals of a window are grouped by (category, key) — e.g. brute force from each source
  address is its own record; each group becomes one record whose risk floor is its highest rule
  level and whose category is the rules' category;
- a model finding names its evidence (template and line ids of the digest it was shown); those
  ids become the exact lines it covers. A finding of a group's category whose lines overlap the
  group's explains that group (its text) and may raise its level, never lower it;
- a finding no group explains is its own record covering exactly its lines (one window can hold
  several incidents), when it is at `LLM_ONLY_MIN_RISK` or above (a small model's "medium" on a
  cron line is noise, a "low" is not worth a record);
- every model text passes the gate (`textgate.check`) before it replaces the rules' text: a clause
  naming an entity the digest lacks is removed (the entity kept in `RiskRecord.ungrounded`), and a
  text that is empty, bare, a copy of the instructions or the digest, a loop, or names ids that do
  not exist is rejected: the rules' text stays and `RiskRecord.rejected` says which field and why;
- the trace (溯源: lines, host, accounts, addresses, time span, evidence) is written from the
  record's own evidence lines, never by the model (a window mixes hosts: its most frequent one is
  not every record's); indicators are extracted deterministically;
- techniques are kept only when they are in the shipped ATT&CK table (an invented one is noted in
  `rejected` too);
- records of the window whose lines lie within another's are folded into it, one record naming
  every rule (`samelines.merge_same_lines`: two packs on one `useradd` line are one alert);
- a group of baseline deviations alone (no rule) takes the model's enumerated verdicts on its lines
  (analyze_v4): the verdict is said in its anomaly and kept on it (`verdict`), its level is the
  baseline's whatever the verdict (measured: a dismissal was mostly wrong, and raising on an attack
  verdict or a finding added false positives and no detection — EVAL.md); a finding's checked
  text may describe it. The baseline's category stays either way.
A window split into several prompts has one `LLMResult` per prompt; their findings are pooled.
Knows nothing of files, the engine internals or the store.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from logwarden.app import attack
from logwarden.app.baseline.deviation import RULE_PREFIX as BASELINE_RULES
from logwarden.app.corroborate import corroborated_level
from logwarden.app.events import Event, Signal
from logwarden.app.grounding import Grounded
from logwarden.app.indicators import extract_indicators
from logwarden.app.keyfields import event_key_fields
from logwarden.app.mine import Window
from logwarden.app.safetext import clean_value
from logwarden.app.samelines import merge_same_lines
from logwarden.app.textgate import REASONS, Checked, check, rejected_techniques
from logwarden.engine.api import Engine
from logwarden.prompts import PROMPT_VERSION
from logwarden.schemas import LLMAssessment, risk_rank
from logwarden.schemas.assessment import DeviationVerdict, Finding
from logwarden.schemas.record import (
    HOST_SEPARATOR,
    LIST_MAX,
    STORED_TEXT_MAX,
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
MAX_HOSTS = 5  # a record's host names at most this many (the rest are in its indicators)
WITHHELD = "The model flagged these lines; its description was withheld: {why}."

DEFAULT_RECOMMENDATION = {
    "brute_force": "Block or rate-limit the source addresses, check for a successful login from them, enforce key-only auth / MFA.",
    "reconnaissance": "Block the scanning sources at the edge and review what they reached (successful responses, valid users hit).",
    "web_attack": "Check whether the requests succeeded (status, response size, app logs), patch the targeted endpoint, block the source, consider a WAF rule.",
    "privilege_escalation": "Confirm the privilege change was authorised; if not, revert it, lock the account and review its recent commands.",
    "malware_execution": "Isolate the host, collect the process tree and the binary/script, and hunt for the same command line elsewhere.",
    "account_persistence": "Verify the new account/service/key with its owner; remove it if unauthorised and review who created it.",
    "data_exfiltration": "Identify what data left, to where and by whom; revoke the credentials used and preserve the logs.",
    "system_failure": "Check the host's health (memory, disk, kernel) and the affected service; open an incident if it recurs.",
    "policy_violation": "Confirm with the account owner; restore logging/settings and review what happened while they were off.",
    "benign": "No action needed.",
}
# A category gathers several ATT&CK tactics (detect/taxonomy.py: credential theft is filed under
# privilege_escalation, as the labels do); where the record's techniques name a tactic whose advice the
# category's would get wrong ("confirm the privilege change" for an LSASS dump), that tactic's own is given
# — for the categories listed with it (a brute force, credential access too, keeps its own advice).
TACTIC_RECOMMENDATION = {
    "Credential Access": (
        "Treat the credentials the host held as stolen: reset the affected accounts' passwords and keys (krbtgt twice "
        "after a DCSync or forged ticket), isolate the host, and look for the accounts' use elsewhere.",
        frozenset({"privilege_escalation", "malware_execution", "policy_violation", "data_exfiltration"})),
    "Initial Access": (
        "Confirm the sign-in or access with the account's owner; if it was not them, reset its credentials, end its "
        "sessions and review what it did.",
        frozenset({"policy_violation"})),
}


def default_recommendation(category: str, technique_ids: Sequence[str] = ()) -> str:
    """The rules' advice for a record of `category`: the first of its techniques' tactics that has its
    own advice for that category (`TACTIC_RECOMMENDATION`), else the category's."""
    for technique_id in technique_ids:
        for tactic in attack.tactics(technique_id):
            advice, categories = TACTIC_RECOMMENDATION.get(tactic, ("", frozenset()))
            if category in categories:
                return advice
    return DEFAULT_RECOMMENDATION[category]


NOTHING_FOUND = "nothing abnormal in what it was shown"
JUDGED_NORMAL = ("The model judged this deviation normal; its level is kept (on labelled data the small models' "
                 "\"normal\" was mostly an attack, EVAL.md). Accept it (`logwarden baseline accept`) to make it part "
                 "of the baseline, or confirm the record.")
CUT_VALUE = 16  # a name this long may be a prefix of the line's value: the digest shows long values cut
_BACKSLASHES = re.compile(r"\\+")
_COUNT = re.compile(r"\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?%?")  # "14", "1,200", "3.5%": counts a line need not show


class AssessmentError(ValueError):
    """The model's output is not a valid `LLMAssessment`."""


@dataclass(slots=True)
class LLMResult:
    """What the engine returned for one prompt, with what the answer is checked against: the digest
    text the model was shown and the lines each evidence id of that prompt stands for."""

    assessment: LLMAssessment | None
    raw_output: str | None = None
    error: str | None = None
    stats: dict | None = None
    digest: str = ""
    lines_of: dict[str, list[int]] = field(default_factory=dict)


@dataclass(slots=True)
class Provenance:
    model: str | None
    adapter: str | None
    prompt_version: str
    run_id: str | None = None

    @classmethod
    def of(cls, engine: Engine | None, run_id: str | None = None) -> Provenance:
        """What made a run's records: the engine's model and adapter (none for rules-only) and the prompt version."""
        return cls(model=engine.model_name if engine else None, adapter=engine.adapter_name if engine else None,
                   prompt_version=PROMPT_VERSION, run_id=run_id)


@dataclass(slots=True)
class _Group:
    category: str
    key: str
    signals: list[Signal] = field(default_factory=list)
    lines: set[int] = field(default_factory=set)  # its signals' lines, kept as they join (grouping asks often)

    def add(self, signal: Signal) -> None:
        self.signals.append(signal)
        self.lines.update(signal.line_numbers)

    @property
    def floor(self) -> str:
        return max((s.level for s in self.signals), key=risk_rank)

    @property
    def line_numbers(self) -> list[int]:
        return sorted(self.lines)

    @property
    def burst(self) -> Signal | None:
        """The counting correlation's burst that names the group's record (None: none): one an
        earlier window reported (its record exists and grows) before one that fired here, then the
        earliest begun, then by rule, so a burst's record keeps its id whichever of the group's rules
        a window's first line fed (a host-wide spray firing later than the address's brute force it
        overlaps made a second record)."""
        bursts = [s for s in self.signals if s.burst_line]
        return min(bursts, key=lambda s: (not s.continues, s.burst_line, s.rule_id), default=None)

    @property
    def burst_line(self) -> int:
        """Where the naming burst began (0: none): its record's id is the burst's, whichever windows it spans."""
        burst = self.burst
        return burst.burst_line if burst else 0

    @property
    def continues(self) -> bool:
        """Its naming burst was reported by an earlier window: its record grows that one."""
        burst = self.burst
        return burst is not None and burst.continues

    @property
    def id_key(self) -> str:
        """The key its record's id is made with: the naming burst's, else the group's."""
        burst = self.burst
        return burst.key if burst else self.key

    @property
    def deviations_only(self) -> bool:
        """Only the learned baseline spoke: the model may dismiss these, never a rule's."""
        return all(s.rule_id.startswith(BASELINE_RULES) for s in self.signals)


@dataclass(slots=True)
class _Claim:
    """A model finding pinned to lines, its text already checked against its prompt's digest."""

    finding: Finding
    refs: list[str]
    lines: list[int]
    anomaly: str
    recommendation: str
    ungrounded: list[str]
    result: LLMResult
    rejected: dict[str, str] = field(default_factory=dict)  # field → why the model's text for it was rejected

    @property
    def rank(self) -> int:
        return risk_rank(self.finding.risk_level)


@dataclass(slots=True)
class Outcome:
    """A window's records, and how faithful the model's texts were (for the run's metrics)."""

    records: list[RiskRecord]
    entities: int = 0  # entities the model's texts named
    ungrounded: int = 0  # of those, absent from the digest (removed)
    findings: int = 0
    rejected: Counter = field(default_factory=Counter)  # reason → model texts (and technique ids) rejected
    bursts: set[str] = field(default_factory=set)  # ids of the records of counting correlations' bursts
    continues: set[str] = field(default_factory=set)  # of those, the ones that grow a burst an earlier window reported


def parse_assessment(text: str) -> LLMAssessment:
    """Validate the model's text; tolerate a ```json fence (unconstrained backends add one)."""
    cleaned = text.strip()
    if cleaned.startswith("```"):
        cleaned = cleaned.strip("`").removeprefix("json").strip()
    try:
        return LLMAssessment.model_validate(clean_value(json.loads(cleaned)))  # a \ud800 escape is text too
    except (json.JSONDecodeError, ValidationError) as exc:
        raise AssessmentError(f"model output is not a valid LLMAssessment: {exc}") from None


def complete_findings(text: str) -> LLMAssessment | None:
    """The verdicts and findings a grammar-bound answer wrote whole before its token budget ran out
    (the answer is a prefix of valid JSON: `{"verdicts": [{…}, {…}], "findings": [{…}, {…` ), or
    None when it finished neither one verdict nor one finding. A cut recommendation is left out."""
    head = text.lstrip()
    verdicts: list = []
    if head.startswith(_VERDICTS):
        verdicts, at, closed = _whole_items(head, len(_VERDICTS))
        rest = head[at:].lstrip()
        if not closed or not rest.startswith(_FINDINGS_NEXT):
            return _first_valid(verdicts, [])
        head, start = rest, len(_FINDINGS_NEXT)
    elif head.startswith(_FINDINGS):
        start = len(_FINDINGS)
    else:
        return None
    findings, _, _ = _whole_items(head, start)
    return _first_valid(verdicts, findings)


_VERDICTS, _FINDINGS, _FINDINGS_NEXT = '{"verdicts": [', '{"findings": [', ', "findings": ['


def _whole_items(text: str, at: int) -> tuple[list, int, bool]:
    """The JSON values of an array whose "[" ends before `at`, as far as they are whole; where they
    end; whether the array was closed."""
    decoder, items = json.JSONDecoder(), []
    while True:
        at = len(text) - len(text[at:].lstrip(", \n"))
        if text.startswith("]", at):
            return items, at + 1, True
        try:
            item, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return items, at, False
        items.append(item)


def _first_valid(verdicts: list, findings: list) -> LLMAssessment | None:
    """The longest valid answer of these items (a last one cut inside may fail validation)."""
    while verdicts or findings:
        try:
            return LLMAssessment.model_validate(clean_value({"verdicts": verdicts, "findings": findings}))
        except ValidationError:
            findings, verdicts = (findings[:-1], verdicts) if findings else ([], verdicts[:-1])
    return None


def result_of(generation, *, digest: str = "", lines_of: dict[str, list[int]] | None = None) -> LLMResult:
    """An engine `Generation` → `LLMResult`: validated assessment, or the reason there is none."""
    stats = generation.stats.as_dict()
    context = dict(digest=digest, lines_of=lines_of or {})
    if not generation.error and not generation.finished and (kept := complete_findings(generation.text)):
        stats["cut_at_budget"] = True  # the findings written whole are kept; the rest of the answer is not
        return LLMResult(assessment=kept, raw_output=generation.text, stats=stats, **context)
    if generation.error or not generation.finished:
        return LLMResult(assessment=None, raw_output=generation.text, stats=stats, **context,
                         error=generation.error or "model output did not finish within the token budget")
    try:
        return LLMResult(assessment=parse_assessment(generation.text), raw_output=generation.text, stats=stats, **context)
    except AssessmentError as exc:
        return LLMResult(assessment=None, raw_output=generation.text, error=str(exc), stats=stats, **context)


# ---- signals → incidents --------------------------------------------------------------------------

def group_signals(signals: Sequence[Signal]) -> list[_Group]:
    """One group per incident, riskiest first (ties: first evidence line).

    An incident is signals of one category and key (source address, account, host) that either
    come from the same rule or whose evidence spans overlap: brute force + password spray from
    one address is one incident, an OOM kill and a later disk error on one host are two. A signal
    whose every line is already in a group of its category joins it whatever its key: a per-host
    spray rule counting the accounts one address tried is that address's brute force again, not a
    second alert (the widest signal of a first line is placed first, so it is the one that holds).
    """
    groups: list[_Group] = []
    for signal in sorted(signals, key=lambda s: (min(s.line_numbers, default=0), -len(s.line_numbers))):
        lines = set(signal.line_numbers)
        home = next((g for g in groups if g.category == signal.category
                     and ((g.key == signal.key and (any(s.rule_id == signal.rule_id for s in g.signals)
                                                    or _overlaps(g, lines)))
                          or (lines and lines <= g.lines))), None)
        if home is None:
            home = _Group(signal.category, signal.key)
            groups.append(home)
        home.add(signal)
    return sorted(groups, key=lambda g: (-risk_rank(g.floor), min(g.lines, default=0)))


def _overlaps(group: _Group, lines: set[int]) -> bool:
    return bool(group.lines and lines) and min(lines) <= max(group.lines) and max(lines) >= min(group.lines)


# ---- findings → claims ----------------------------------------------------------------------------

def claims_of(results: Sequence[LLMResult], window: Window) -> list[_Claim]:
    """Every finding of every prompt, pinned to the window's lines its evidence ids stand for (ids the
    prompt did not show are ignored: an unconstrained backend may invent them), its texts grounded."""
    folded = {e.line_no: _folded(e.raw) for e in window.events} if any(r.assessment for r in results) else {}
    claims = []
    for result in results:
        if result.assessment is None:
            continue
        advice = _advice(result)
        for finding in result.assessment.findings:
            refs = [r for r in dict.fromkeys(finding.evidence) if r in result.lines_of]
            said = check(finding.anomaly, result.digest, ids=result.lines_of)
            lines = pinned_lines(sorted({n for r in refs for n in result.lines_of[r] if n in folded}), folded,
                                 said.grounded)
            if not lines:
                continue
            claims.append(_Claim(finding, refs, lines, said.text, advice.text,
                                 list(dict.fromkeys(said.grounded.ungrounded + advice.grounded.ungrounded)), result,
                                 _rejected(said, advice, finding)))
    return claims


def _advice(result: LLMResult) -> Checked:
    """The answer's recommendation through the gate; the anomaly of one of its findings said again is a repeat."""
    if not result.assessment.recommendation.strip():
        return Checked("")  # optional (analyze_v4): left out is not rejected, the rules' text stands
    advice = check(result.assessment.recommendation, result.digest, ids=result.lines_of)
    if advice.passed and any(advice.text == f.anomaly.strip() for f in result.assessment.findings):
        return Checked("", "repeat", advice.grounded)
    return advice


def _rejected(said: Checked, advice: Checked, finding: Finding) -> dict[str, str]:
    """field → reason, for each model text of this finding the gate turned down."""
    notes = {"anomaly": said.reason, "recommendation": advice.reason,
             "techniques": "technique" if rejected_techniques(finding.techniques) else None}
    return {name: why for name, why in notes.items() if why}


def pinned_lines(lines: Sequence[int], folded: dict[int, str], said: Grounded) -> list[int]:
    """The cited lines that show what the finding says. A template id stands for all its lines, most of
    them routine when the template is broad; so a finding that names things the window's lines hold
    (addresses, accounts, paths, processes — grounded ones, not counts, not words of the digest's own
    vocabulary such as technique names) is about the cited lines holding one of them, and a finding whose
    evidence shows none of what it names is pinned to nothing (dropped; the rules' records stand).
    "Holding": as a word; a long value (`CUT_VALUE` characters and more) may be a prefix, the digest cuts them.
    `folded`: the window's lines by number, `_folded`."""
    names = [e for e in said.entities if e not in said.ungrounded and not _COUNT.fullmatch(e)]
    patterns = [re.compile(rf"(?<!\w){re.escape(_folded(name))}" + ("" if len(name) >= CUT_VALUE else r"(?!\w)"))
                for name in names]
    patterns = [p for p in patterns if any(map(p.search, folded.values()))]
    if not patterns:
        return list(lines)
    return [n for n in lines if any(p.search(folded[n]) for p in patterns)]


def _folded(text: str) -> str:
    """Lower case, any run of `\\` as one `/`: C:/Users is C:\\Users, also inside a JSON string."""
    return _BACKSLASHES.sub("/", text.lower())


def _faithfulness(results: Sequence[LLMResult]) -> tuple[int, int, Counter]:
    """(entities named, entities ungrounded, reason → texts rejected) over every text the model wrote
    for this window; each technique id the ATT&CK table lacks counts as one rejected text."""
    named = missing = 0
    rejected: Counter = Counter()
    for result in results:
        if result.assessment is None:
            continue
        checked = [check(f.anomaly, result.digest, ids=result.lines_of) for f in result.assessment.findings]
        checked.append(_advice(result))
        for one in checked:
            named += len(one.grounded.entities)
            missing += len(one.grounded.ungrounded)
            rejected[one.reason] += not one.passed
        rejected["technique"] += sum(len(rejected_techniques(f.techniques)) for f in result.assessment.findings)
    return named, missing, +rejected


def _explaining(group: _Group, claims: Sequence[_Claim]) -> list[_Claim]:
    """Claims whose lines overlap the group's, riskiest first: of the group's category, or of any
    category for a group of deviations. The record keeps the group's category either way: on the
    realdata held-out side the base model's categories for web deviations were wrong twice as often
    as the baseline's (EVAL.md, security-v3)."""
    return sorted((c for c in claims if (c.finding.category == group.category or group.deviations_only)
                   and not group.lines.isdisjoint(c.lines)), key=lambda c: -c.rank)


_SEVERITY = {"benign": 0, "suspicious": 1, "attack": 2}


@dataclass(slots=True)
class _Judged:
    """The model's verdict on a group of deviations: the most severe of its lines' verdicts."""

    verdict: DeviationVerdict
    result: LLMResult

    @property
    def as_dict(self) -> dict[str, str]:
        return {"verdict": self.verdict.verdict, "stage": self.verdict.stage, "category": self.verdict.category}


def _judged(group: _Group, results: Sequence[LLMResult]) -> _Judged | None:
    """The verdict on a group of deviations alone: of every verdict an answer gave on one of its lines,
    the most severe (one `attack` outweighs any number of `benign`). None for a rules' group or when
    no answer judged its lines."""
    if not group.deviations_only:
        return None
    found = [_Judged(v, r) for r in results if r.assessment is not None for v in r.assessment.verdicts
             if group.lines.intersection(r.lines_of.get(v.line, ()))]
    return max(found, key=lambda j: _SEVERITY[j.verdict.verdict], default=None)


# ---- records --------------------------------------------------------------------------------------

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


def _evidence(window: Window, events: Sequence[Event], refs: Sequence[str] = ()) -> Evidence:
    cluster_of = window.cluster_of_line()
    shown = list(events[: MAX_EXEMPLARS - 1]) + ([events[-1]] if len(events) >= MAX_EXEMPLARS else [])
    return Evidence(
        line_numbers=[e.line_no for e in events][:MAX_EVIDENCE_LINES],
        exemplars=[exemplar(e) for e in shown],
        template_ids=sorted({cluster_of[e.line_no] for e in events}),
        refs=list(refs),
    )


def exemplar(event: Event) -> ExemplarLine:
    """An evidence line as stored: its text cut to `EXEMPLAR_CHARS` (saying how much was cut), the
    sha256 of the whole line as analysed, and its parsed key fields."""
    return ExemplarLine(line_no=event.line_no, text=cut_text(event.raw, EXEMPLAR_CHARS),
                        sha256=hashlib.sha256(event.raw.encode("utf-8", "replace")).hexdigest(),
                        fields=dict(event_key_fields(event)))


_TRUNCATED = re.compile(r"… \[truncated (\d+) bytes\]$")


def cut_text(text: str, limit: int) -> str:
    """`text`, or its head with a `… [truncated N bytes]` note: N counts every byte left out, the
    ones ingest already dropped from an overlong line (its own note is then replaced) included."""
    if len(text) <= limit:
        return text
    dropped = 0
    if found := _TRUNCATED.search(text):
        dropped, text = int(found[1]), text[:found.start()]
    note_room = 40
    head = text[: max(limit - note_room, 0)]
    dropped += len(text.encode("utf-8", "replace")) - len(head.encode("utf-8", "replace"))
    return f"{head}… [truncated {dropped} bytes]"


def hosts_of(events: Sequence[Event]) -> list[str]:
    """The hosts of these lines, most frequent first (ties: first seen)."""
    counts = Counter(e.host for e in events if e.host)
    return [host for host, _ in counts.most_common(MAX_HOSTS)]


def trace_text(window: Window, events: Sequence[Event], indicators: Indicators, refs: Sequence[str] = ()) -> str:
    """溯源 from the facts: how many lines where, on which host, when, from which addresses, which
    accounts and processes, and the digest ids the model pointed at."""
    host = HOST_SEPARATOR.join(hosts_of(events))
    first = next((e.ts for e in events if e.ts), None)
    last = next((e.ts for e in reversed(events) if e.ts), None)
    span = "time not in the log" if not (first and last) else \
        first.isoformat() if first == last else f"{first.isoformat()} .. {last.isoformat()}"
    parts = [f"{len(events)} line(s) of {window.source}" + (f" on {host}" if host else "")
             + f", lines {events[0].line_no}-{events[-1].line_no}, {span}"]
    for label, values in (("from", indicators.ips), ("accounts", indicators.users), ("processes", indicators.processes)):
        if values:
            parts.append(f"{label} " + ", ".join(values[:5]) + (f" (+{len(values) - 5})" if len(values) > 5 else ""))
    if refs:
        parts.append("evidence " + ", ".join(refs))
    return "; ".join(parts)[:STORED_TEXT_MAX]


def _rules_anomaly(group: _Group) -> str:
    return "; ".join(s.title + (f" ({s.description})" if s.description else "") for s in group.signals)[:STORED_TEXT_MAX]


def _record(window: Window, *, category: str, key: str, level: str, events: Sequence[Event], anomaly: str,
            recommendation: str, techniques: list[Technique], detections: list[str], decided_by: str,
            prov: Provenance, llm: LLMResult | None, refs: Sequence[str] = (),
            ungrounded: Sequence[str] = (), rejected: dict[str, str] | None = None,
            verdict: dict[str, str] | None = None, burst: int = 0) -> RiskRecord:
    indicators = extract_indicators(events)
    generation = f":g{window.generation}" if window.generation else ""  # lines 1.. again after copytruncate
    # A burst's record is named by where the burst began, not by the window: the windows (and runs)
    # it goes on in grow that one record (`merge_records`).
    span = (burst, burst) if burst else (window.line_start, window.line_end)
    return RiskRecord(
        id=record_id(source=window.source, inode=window.inode, line_start=span[0], line_end=span[1],
                     prompt_version=prov.prompt_version,
                     discriminator=f"{category}:{key}:{'burst' if burst else events[0].line_no}{generation}"),
        source=window.source, inode=window.inode, host=HOST_SEPARATOR.join(hosts_of(events)) or None,
        line_start=events[0].line_no, line_end=events[-1].line_no,
        first_ts=next((e.ts for e in events if e.ts), None),
        last_ts=next((e.ts for e in reversed(events) if e.ts), None),
        line_count=len(events), risk_level=level, risk_score=risk_score(level), category=category,
        techniques=techniques, indicators=indicators, anomaly=anomaly,
        trace=trace_text(window, events, indicators, refs), recommendation=recommendation,
        evidence=_evidence(window, events, refs), detections=detections,
        decided_by=decided_by, model=prov.model if llm else None, adapter=prov.adapter if llm else None,
        prompt_version=prov.prompt_version, run_id=prov.run_id,
        raw_model_output=llm.raw_output if llm else None, engine_stats=llm.stats if llm else None,
        llm_error=llm.error if llm else None, ungrounded=list(ungrounded), rejected=dict(rejected or {}),
        verdict=dict(verdict or {}),
    )


def _group_record(window: Window, group: _Group, claim: _Claim | None, prov: Provenance,
                  failure: LLMResult | None, judged: _Judged | None = None) -> RiskRecord:
    events = _events_at(window, group.line_numbers)
    rule_techniques = [t for s in group.signals for t in s.techniques]
    common = dict(key=group.id_key, events=events, detections=sorted({s.rule_id for s in group.signals}), prov=prov,
                  category=group.category, burst=group.burst_line)
    if claim is None and judged is not None:
        return _judged_record(window, group, judged, _techniques(rule_techniques), common)
    if claim is None:
        return _record(window, level=group.floor, anomaly=_rules_anomaly(group),
                       recommendation=default_recommendation(group.category, rule_techniques),
                       techniques=_techniques(rule_techniques), decided_by="rules", llm=failure, **common)
    # a rule's group may be raised by a finding; a deviation alone keeps the baseline's level (on the
    # held-out side the 1.5B's findings raised 2 benign deviations and no attack that was not found)
    level = group.floor if group.deviations_only else max(group.floor, claim.finding.risk_level, key=risk_rank)
    return _record(window, level=level,
                   anomaly=claim.anomaly or _rules_anomaly(group),
                   recommendation=claim.recommendation or default_recommendation(group.category, rule_techniques),
                   techniques=_techniques(rule_techniques + list(claim.finding.techniques)), decided_by="rules+llm",
                   llm=claim.result, refs=claim.refs, ungrounded=claim.ungrounded, rejected=claim.rejected,
                   verdict=judged.as_dict if judged else None, **common)


def _judged_record(window: Window, group: _Group, judged: _Judged, techniques: list[Technique],
                   common: dict) -> RiskRecord:
    """A group of deviations with the model's verdict said and kept, at the baseline's level: on
    realdata's held-out side its benign verdicts were mostly attacks, and an attack verdict raising a
    deviation to medium added 2-3 false positives and no detection (the units were found at low)."""
    verdict, result = judged.verdict, judged.result
    said = check(result.assessment.recommendation, result.digest, ids=result.lines_of,
                 dismissal_ok=verdict.verdict == "benign") \
        if result.assessment.recommendation.strip() else Checked("")
    if verdict.verdict == "benign":
        judgement, recommendation = f"judged normal by the model: {said.text or NOTHING_FOUND}", JUDGED_NORMAL
    else:
        stage = "" if verdict.stage == "none" else f", {verdict.stage.replace('_', ' ')}"
        judgement = f"judged {verdict.verdict} by the model{stage}"
        recommendation = said.text or default_recommendation(group.category, [t.id for t in techniques])
    return _record(window, level=group.floor, anomaly=f"{_rules_anomaly(group)} — {judgement}"[:STORED_TEXT_MAX],
                   recommendation=recommendation, techniques=techniques, decided_by="rules+llm", llm=result,
                   rejected={"recommendation": said.reason} if said.reason else None, verdict=judged.as_dict, **common)


def _claim_record(window: Window, claim: _Claim, prov: Provenance, signals: Sequence[Signal]) -> RiskRecord:
    """A finding no rule saw: a record covering exactly the lines it names, at the level what backs
    it allows (`corroborate`: the model alone cannot go above medium)."""
    category, events = claim.finding.category, _events_at(window, claim.lines)
    level, capped = corroborated_level(category, claim.finding.risk_level, events,
                                       {n for s in signals for n in s.line_numbers})
    anomaly = claim.anomaly or WITHHELD.format(why=REASONS[claim.rejected.get("anomaly", "empty")])
    return _record(window, category=category, key="llm", level=level,
                   events=events, anomaly=f"{anomaly} {capped}"[:STORED_TEXT_MAX] if capped else anomaly,
                   recommendation=claim.recommendation or default_recommendation(category, claim.finding.techniques),
                   techniques=_techniques(claim.finding.techniques), detections=[], decided_by="llm", prov=prov,
                   llm=claim.result, refs=claim.refs, ungrounded=claim.ungrounded, rejected=claim.rejected)


def _distinct(claims: Sequence[_Claim]) -> list[_Claim]:
    """One claim per (category, lines): the riskiest (several prompts of a window may repeat one)."""
    best: dict[tuple[str, tuple[int, ...]], _Claim] = {}
    for claim in claims:
        key = (claim.finding.category, tuple(claim.lines))
        if key not in best or claim.rank > best[key].rank:
            best[key] = claim
    return list(best.values())


def assess_window(window: Window, signals: Sequence[Signal], llm: LLMResult | Sequence[LLMResult] | None,
                  prov: Provenance) -> Outcome:
    """The records of one window (none = analysed and benign), and the faithfulness counts."""
    results = [llm] if isinstance(llm, LLMResult) else list(llm or [])
    groups = group_signals(signals)
    claims = claims_of(results, window)
    failure = next((LLMResult(assessment=None, error=r.error) for r in results if r.error), None)
    records, used, bursts, continues = [], set(), set(), set()
    for group in groups:
        explaining = _explaining(group, claims)
        used |= {id(c) for c in explaining}
        records.append(_group_record(window, group, explaining[0] if explaining else None, prov, failure,
                                     _judged(group, results)))
        if group.burst_line:
            bursts.add(records[-1].id)
        if group.continues:
            continues.add(records[-1].id)
    for claim in _distinct([c for c in claims if id(c) not in used]):
        if claim.rank >= risk_rank(LLM_ONLY_MIN_RISK):
            records.append(_claim_record(window, claim, prov, signals))
    named, missing, rejected = _faithfulness(results)
    return Outcome(records=merge_same_lines(_unique_ids(records), bursts=bursts), entities=named,
                   ungrounded=missing, findings=len(claims), rejected=rejected, bursts=bursts, continues=continues)


def _unique_ids(records: list[RiskRecord]) -> list[RiskRecord]:
    """Two model findings of one category starting on the same line would share an id: keep the riskier."""
    best: dict[str, RiskRecord] = {}
    for record in records:
        if record.id not in best or record.risk_score > best[record.id].risk_score:
            best[record.id] = record
    return list(best.values())


def merge_records(earlier: RiskRecord, later: RiskRecord) -> RiskRecord:
    """One burst's record as it grows: `earlier` (stored) with what a later window of the burst
    added (`later`, the same id). Its span, counts and evidence cover both; the level is the higher;
    the texts are the later's (its rules' description counts the whole burst), the trace the earlier's."""
    ev_a, ev_b = earlier.evidence, later.evidence
    exemplars = list(ev_a.exemplars[: MAX_EXEMPLARS - 1]) + list(ev_b.exemplars[-1:])
    level = max(earlier.risk_level, later.risk_level, key=risk_rank)
    llm = later if later.decided_by != "rules" else earlier
    techniques = list({t.id: t for t in [*earlier.techniques, *later.techniques]}.values())[:LIST_MAX]
    indicators = {name: list(dict.fromkeys(getattr(earlier.indicators, name) + getattr(later.indicators, name)))[:LIST_MAX]
                  for name in Indicators.model_fields}
    return later.model_copy(update=dict(
        host=earlier.host or later.host, line_start=min(earlier.line_start, later.line_start),
        line_end=max(earlier.line_end, later.line_end), first_ts=earlier.first_ts or later.first_ts,
        last_ts=later.last_ts or earlier.last_ts, line_count=earlier.line_count + later.line_count,
        risk_level=level, risk_score=risk_score(level), techniques=techniques,
        indicators=Indicators(**indicators), trace=earlier.trace,
        evidence=Evidence(line_numbers=(ev_a.line_numbers + ev_b.line_numbers)[:MAX_EVIDENCE_LINES],
                          exemplars=exemplars, template_ids=sorted(set(ev_a.template_ids) | set(ev_b.template_ids)),
                          refs=list(dict.fromkeys(ev_a.refs + ev_b.refs))[:LIST_MAX]),
        detections=sorted(set(earlier.detections) | set(later.detections)),
        decided_by=llm.decided_by, model=llm.model, adapter=llm.adapter, raw_model_output=llm.raw_model_output,
        engine_stats=llm.engine_stats, llm_error=llm.llm_error, verdict=llm.verdict or later.verdict))


def reviewed_burst(stored: RiskRecord, reviewed: RiskRecord) -> RiskRecord:
    """A burst's record the model reviewed one window of: the stored record's span, counts and
    evidence (every window the burst went on in), with the review's level (never lower), texts,
    verdict and model fields."""
    level = max(stored.risk_level, reviewed.risk_level, key=risk_rank)
    return reviewed.model_copy(update=dict(
        host=stored.host, line_start=stored.line_start, line_end=stored.line_end, first_ts=stored.first_ts,
        last_ts=stored.last_ts, line_count=stored.line_count, risk_level=level, risk_score=risk_score(level),
        indicators=stored.indicators, trace=stored.trace,
        evidence=stored.evidence.model_copy(update=dict(refs=reviewed.evidence.refs)),
        detections=sorted(set(stored.detections) | set(reviewed.detections))))


def build_records(window: Window, signals: Sequence[Signal], llm: LLMResult | Sequence[LLMResult] | None,
                  prov: Provenance) -> list[RiskRecord]:
    """The records of one window (empty = analysed and benign)."""
    return assess_window(window, signals, llm, prov).records
