"""The backtest (`logwarden backtest`): the model replayed over records an analyst has closed, with the
reviewed examples in its prompts and without them, in one run, scored against the analysts' verdicts.

A record is replayed as `triage` assesses a snippet: its evidence lines (as stored, with their line
numbers) through the run's rules, the digest and the same request builder, the answer fitted as the
review fits it (`fit.py`). Retrieval is leave-one-out: a record never retrieves itself nor an example
of exactly its evidence (same lines and rules).

The analyst's verdict: closed as true_positive = positive; false_positive or benign_positive =
negative (nothing for the SOC to act on); duplicate and unclosed records are not replayed.
The model's verdict (`model_verdict`), read from what its answer does to the record in the review:
a deviation verdict of suspicious or attack, or a finding at `low` or above (which confirms or
raises the record) = positive; benign verdicts and no such finding (the review would keep the rules'
record unconfirmed, a deviation's record at info as benign) = negative; no valid answer = no verdict
(counted, not scored).

Owns: choosing the cases (`--limit`: a stratified, seeded sample), the prompts of both arms, the
model's verdicts and the scores. Knows nothing of terminals (progress is a callback) or of the
store beyond reading records.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from logwarden.app.detect import RuleSet
from logwarden.app.digest import DigestPart
from logwarden.app.events import LogLine
from logwarden.app.examples import ExamplePrompter, example_of_record
from logwarden.app.fit import fit
from logwarden.app.postprocess import LLMResult, result_of
from logwarden.app.triage import prepare_lines
from logwarden.engine.api import Engine
from logwarden.schemas import risk_rank
from logwarden.schemas.assessment import LLMAssessment
from logwarden.schemas.record import RiskRecord

POSITIVE = "true_positive"
NEGATIVE = ("false_positive", "benign_positive")
SHOWN_SOURCE = "reviewed record"  # the digest names no file: a file's name may say what it holds
MIN_FINDING_RISK = "low"
RAISED = "medium"

Progress = Callable[[int, int, float], None]  # (prompts answered, prompts in all, seconds they took)


def analyst_verdict(record: RiskRecord) -> bool | None:
    """True: a real attack; False: nothing to act on; None: not closed, or a duplicate."""
    if record.status != "closed":
        return None
    if record.close_reason == POSITIVE:
        return True
    return False if record.close_reason in NEGATIVE else None


def model_verdict(answers: Sequence[LLMAssessment | None]) -> bool | None:
    """What the model's answers (one per prompt of the record) say of it; None when none was valid."""
    valid = [a for a in answers if a is not None]
    if not valid:
        return None
    return any(any(v.verdict != "benign" for v in a.verdicts)
               or any(risk_rank(f.risk_level) >= risk_rank(MIN_FINDING_RISK) for f in a.findings) for a in valid)


def model_level(answers: Sequence[LLMAssessment | None]) -> str | None:
    """The highest risk of the model's findings on the record (None: none)."""
    levels = [f.risk_level for a in answers if a is not None for f in a.findings]
    return max(levels, key=risk_rank) if levels else None


def sample(records: Sequence[RiskRecord], limit: int | None, seed: int = 7) -> list[RiskRecord]:
    """The reviewed records to replay: all, or `limit` of them, half true positives and half not
    where there are enough of each, and within each half the categories taken in turn, each in a
    seeded order (the same sample on every run)."""
    cases = [r for r in records if analyst_verdict(r) is not None and r.evidence.exemplars]
    if limit is None or limit >= len(cases):
        return cases
    halves: dict[bool, dict[str, list[RiskRecord]]] = {True: {}, False: {}}
    for record in sorted(cases, key=lambda r: hashlib.sha256(f"{seed}:{r.id}".encode()).hexdigest()):
        halves[bool(analyst_verdict(record))].setdefault(record.category, []).append(record)
    turns = {truth: _in_turn(strata) for truth, strata in halves.items()}
    chosen: list[RiskRecord] = []
    while len(chosen) < limit:
        for truth in (True, False):
            if turns[truth] and len(chosen) < limit:
                chosen.append(turns[truth].pop(0))
    return chosen


def _in_turn(strata: dict[str, list[RiskRecord]]) -> list[RiskRecord]:
    """The strata's records one of each in turn (category order), until all are taken."""
    queues = [list(strata[name]) for name in sorted(strata)]
    out: list[RiskRecord] = []
    while any(queues):
        out += [queue.pop(0) for queue in queues if queue]
    return out


@dataclass(slots=True)
class ArmScores:
    """One arm's agreement with the analysts."""

    cases: int = 0
    no_verdict: int = 0
    agree: int = 0
    positives: int = 0  # analyst: true_positive (with a model verdict)
    confirmed: int = 0  # of those, the model said positive
    negatives: int = 0  # analyst: false or benign positive (with a model verdict)
    false_positives: int = 0  # of those, the model said positive
    # analyst positives the rules and baselines left below medium (the eval's usual bar for a detected
    # attack) that the model's findings put at medium or above: recall the model adds; `raised_negatives`
    # the same for the analysts' negatives: alarms it adds
    added: int = 0
    raised_negatives: int = 0
    examples_shown: int = 0  # prompts that carried at least one example

    def count(self, truth: bool, said: bool | None, stored_level: str, level: str | None) -> None:
        self.cases += 1
        if said is None:
            self.no_verdict += 1
            return
        self.agree += said == truth
        raised = level is not None and risk_rank(level) >= risk_rank(RAISED) > risk_rank(stored_level)
        if truth:
            self.positives += 1
            self.confirmed += said
            self.added += raised
        else:
            self.negatives += 1
            self.false_positives += said
            self.raised_negatives += raised

    def as_dict(self) -> dict:
        scored = self.cases - self.no_verdict
        return asdict(self) | {
            "agreement": _share(self.agree, scored), "recall": _share(self.confirmed, self.positives),
            "fp_rate": _share(self.false_positives, self.negatives)}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


@dataclass(slots=True)
class Backtest:
    records: int
    arms: dict[str, ArmScores]
    seconds: float
    library: int  # examples the retrieval arm could draw on
    per_record: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"records": self.records, "library": self.library, "seconds": round(self.seconds, 1),
                "arms": {name: arm.as_dict() for name, arm in self.arms.items()}, "cases": self.per_record}


def replay_parts(record: RiskRecord, *, budget: int, count_tokens, rules: RuleSet | None) -> list[DigestPart]:
    """The record's evidence lines as one window through triage's stages: its prompts."""
    lines = [LogLine(source=record.source, inode=0, offset=0, line_no=e.line_no, text=e.text)
             for e in sorted(record.evidence.exemplars, key=lambda e: e.line_no)]
    return prepare_lines(lines, source=record.source, path=record.source, budget_tokens=budget,
                         count_tokens=count_tokens, rules=rules, shown_source=SHOWN_SOURCE).parts


def run_backtest(records: Sequence[RiskRecord], engine: Engine, prompter: ExamplePrompter, *,
                 rules: RuleSet | None = None, max_new_tokens: int, max_batch: int,
                 progress: Progress = lambda _done, _all, _seconds: None) -> Backtest:
    """Replay `records` (closed ones) with examples (arm `retrieval`) and without (`no_retrieval`)."""
    started = time.perf_counter()
    prompts: list[tuple[int, str, DigestPart]] = []  # (record index, arm, part)
    for i, record in enumerate(records):
        parts = replay_parts(record, budget=prompter.prompt_budget, count_tokens=engine.count_tokens, rules=rules)
        own = example_of_record(record)
        exclude = {record.id, *([own.key] if own else [])}
        prompts += [(i, "no_retrieval", p) for p in parts]
        prompts += [(i, "retrieval", prompter.part(p, exclude=exclude)) for p in parts]
    answers: dict[tuple[int, str], list[LLMAssessment | None]] = {}
    shown = {"retrieval": 0, "no_retrieval": 0}
    asked = time.perf_counter()
    for start in range(0, len(prompts), max(1, max_batch)):
        batch = prompts[start:start + max(1, max_batch)]
        generations = engine.generate([p.request() for _, _, p in batch], max_new_tokens=max_new_tokens)
        for (i, arm, part), generation in zip(batch, generations):
            result: LLMResult = fit(result_of(generation, digest=part.text, lines_of=part.lines_of), part.categories).result
            answers.setdefault((i, arm), []).append(result.assessment)
            shown[arm] += bool(part.examples)
        progress(start + len(batch), len(prompts), time.perf_counter() - asked)
    arms = {"retrieval": ArmScores(examples_shown=shown["retrieval"]), "no_retrieval": ArmScores()}
    per_record = []
    for i, record in enumerate(records):
        truth = bool(analyst_verdict(record))
        said = {arm: model_verdict(answers.get((i, arm), [])) for arm in arms}
        levels = {arm: model_level(answers.get((i, arm), [])) for arm in arms}
        for arm, scores in arms.items():
            scores.count(truth, said[arm], record.risk_level, levels[arm])
        per_record.append({"id": record.id, "category": record.category, "analyst": record.close_reason,
                           "stored_level": record.risk_level, "said": said, "level": levels})
    return Backtest(records=len(records), arms=arms, seconds=time.perf_counter() - started,
                    library=len(prompter.source), per_record=per_record)
