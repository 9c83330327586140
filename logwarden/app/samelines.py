"""Records of one window that tell of the same lines become one record naming every rule.

Two packs (logwarden's and SigmaHQ's), or two rules of one pack, often fire on the same lines: a
`useradd` of a UID-0 account is "user created" to one and "privileged user created" to the other.
One thing happened, so the analyst gets one alert: a record whose evidence lines are another
record's of its window, or part of them, is folded into that one (issue 45):
- the host (its id, lines, evidence, trace) is the record with the most lines, ties by id: the same
  records always give the same merged record, and a model's review (which explains the rules'
  records under their ids) keeps the ids the rules-only run stored;
- the level is the highest; the category and its recommendation are the riskiest member's (ties:
  the one of fewest lines, the most precise, then the host's order);
- detections, techniques and indicators are the union; the anomalies are joined, the riskiest first;
- the model's fields (its checked texts' notes, verdict, raw output) are the first member's that has them.
Only records a rule or the baseline backs are folded: a finding of the model alone stays its own
record (postprocess: a finding of another category leaves the rules' record as it is). A burst's
record (a counting correlation's, which later windows grow under its id) is never folded into
another; it may hold others.
Knows nothing of files, the model or the store.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from logwarden.schemas import risk_rank
from logwarden.schemas.record import LIST_MAX, STORED_TEXT_MAX, Indicators, RiskRecord, risk_score

MODEL_FIELDS = ("model", "adapter", "raw_model_output", "engine_stats", "llm_error", "verdict", "ungrounded", "rejected")


def merge_same_lines(records: Sequence[RiskRecord], *, bursts: Collection[str] = ()) -> list[RiskRecord]:
    """`records` (of one window) with every record whose lines lie within another's folded into it;
    the order of the hosts is kept."""
    hosts: list[tuple[RiskRecord, set[int], list[RiskRecord]]] = []
    for record in sorted(records, key=_host_order):
        lines = set(record.evidence.line_numbers)
        alone = record.id in bursts or not lines or record.decided_by == "llm"
        home = None if alone else next((h for h in hosts if h[0].decided_by != "llm" and lines <= h[1]
                                        and h[0].source == record.source), None)
        if home is None:
            hosts.append((record, lines, [record]))
        else:
            home[2].append(record)
    merged = {host.id: _merged(members) for host, _, members in hosts}
    return [merged[r.id] for r in records if r.id in merged]


def _host_order(record: RiskRecord) -> tuple:
    return -len(set(record.evidence.line_numbers)), record.id


def _merged(members: list[RiskRecord]) -> RiskRecord:
    """One record of `members` (the host first)."""
    host = members[0]
    if len(members) == 1:
        return host
    # the riskiest; on a tie the one of fewest lines, the most precise (a web attack rule's one line
    # within a scanner's window-wide record names what happened on it), then the host's order
    lead = min(members, key=lambda r: (-risk_rank(r.risk_level), len(set(r.evidence.line_numbers))))
    level = max((r.risk_level for r in members), key=risk_rank)
    by_risk = sorted(members, key=lambda r: -risk_rank(r.risk_level))  # stable: the host first on a tie
    told = next((r for r in members if r.decided_by != "rules"), host)
    indicators = {name: list(dict.fromkeys(v for r in members for v in getattr(r.indicators, name)))[:LIST_MAX]
                  for name in Indicators.model_fields}
    return host.model_copy(update=dict(
        risk_level=level, risk_score=risk_score(level), category=lead.category, recommendation=lead.recommendation,
        anomaly="; ".join(dict.fromkeys(r.anomaly for r in by_risk if r.anomaly))[:STORED_TEXT_MAX],
        techniques=list({t.id: t for r in by_risk for t in r.techniques}.values())[:LIST_MAX],
        indicators=Indicators(**indicators), detections=sorted({d for r in members for d in r.detections}),
        decided_by=_decided_by(members),
        evidence=host.evidence.model_copy(update=dict(
            refs=list(dict.fromkeys(ref for r in members for ref in r.evidence.refs))[:LIST_MAX])),
        **{name: getattr(told, name) for name in MODEL_FIELDS}))


def _decided_by(members: Sequence[RiskRecord]) -> str:
    said = {r.decided_by for r in members}
    return said.pop() if len(said) == 1 else "rules+llm"
