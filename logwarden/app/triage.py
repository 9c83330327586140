"""Single-snippet triage: one line or a few pasted lines → a streamed assessment → stored records.

Owns: turning a snippet into one window (same parse → mine → detect → digest → prompt path as
batch analysis, so rules set the floor here too — `prepare_lines` is that path for any list of
lines, also used by the training-set generator), streaming the model's answer (a snippet whose
rare lines need several prompts streams them one after another), fitting the answer to the lines
(`fit.py`: a category its lines cannot be is set aside, a technique of another tactic left out),
building the records, and saying why the verdict is what it is (`Assessment.why`: rules only, the
model unsure, or nothing found).
`assess` is the one way a snippet is assessed with a run's rules and budgets: `logwarden triage`,
the UI's triage page and `app/explain.py` all call it. Knows nothing of terminals or pages.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logwarden.app.config import declared
from logwarden.app.detect import Detector, RuleSet, load_sources, shipped_ruleset
from logwarden.app.digest import Digest, DigestPart, build_digest
from logwarden.app.events import LogLine, Signal
from logwarden.app.examples import ExamplePrompter, ExampleSource
from logwarden.app.fit import Fitted, fit
from logwarden.app.mine import SourceMiner, Window, windows
from logwarden.app.parse import parse_stream
from logwarden.app.postprocess import LLM_ONLY_MIN_RISK, LLMResult, Provenance, build_records, result_of
from logwarden.engine.api import CountTokens, Engine, Generation, Request, TextStream, approx_tokens
from logwarden.schemas.record import RiskRecord

if TYPE_CHECKING:
    from logwarden.app.run_options import RunOptions

MAX_SNIPPET_LINES = 2000
SNIPPET_SOURCE = "pasted lines"  # how the digest names a snippet without a file name
PART_SEPARATOR = "\n"


class PartsStream(TextStream):
    """The pieces of every part's answer in order (a newline between parts); after exhaustion
    `generations` holds one `Generation` per part (None where a part's stream broke off)."""

    def __init__(self, streams: Sequence[TextStream]):
        self.streams = list(streams)
        self.generations: list[Generation | None] = []
        super().__init__(self._chain())

    def _chain(self) -> Generator[str, None, Generation | None]:
        for i, stream in enumerate(self.streams):
            if i:
                yield PART_SEPARATOR
            yield from stream
            self.generations.append(stream.generation)
        return self.generations[-1] if self.generations else None


@dataclass(slots=True)
class Triage:
    """A prepared snippet: call `stream()` (or skip it for rules-only), then `records(...)`."""

    window: Window
    signals: list[Signal]
    digest: Digest
    parts: list[DigestPart]
    format: str

    @property
    def prompts(self) -> list[str]:
        return [part.prompt for part in self.parts]

    @property
    def prompt(self) -> str:
        """The first (for a short snippet: the only) prompt."""
        return self.prompts[0]

    def requests(self) -> list[Request]:
        return [part.request() for part in self.parts]

    def stream(self, engine: Engine, *, max_new_tokens: int = declared("max_new_tokens")) -> PartsStream:
        return PartsStream([engine.stream(request, max_new_tokens=max_new_tokens) for request in self.requests()])

    def answers(self, stream: PartsStream | None) -> list[Fitted] | None:
        """Each part's answer fitted to the categories its lines can be (None: rules only)."""
        if stream is None:
            return None
        generations = stream.generations
        return [fit(_result(g, part), part.categories)
                for g, part in zip([*generations, *[None] * len(self.parts)], self.parts)]

    def results(self, stream: PartsStream | None) -> list[LLMResult] | None:
        answers = self.answers(stream)
        return None if answers is None else [a.result for a in answers]

    def records(self, stream: PartsStream | None, engine: Engine | None) -> list[RiskRecord]:
        """Records of the snippet; a rules-only record when the model failed. May be empty (benign)."""
        return build_records(self.window, self.signals, self.results(stream), Provenance.of(engine))


@dataclass(slots=True)
class Assessment:
    """A snippet being assessed: read `stream` (None: rules only) to its end, then take `records()`."""

    triage: Triage
    stream: PartsStream | None
    engine: Engine | None

    def records(self) -> list[RiskRecord]:
        return self.triage.records(self.stream, self.engine)

    def answer(self) -> str | None:
        """The model's answer as it wrote it (the parts' texts, a newline between them), the one a
        triage answer keeps for feedback; None without a model or when no part answered."""
        if self.stream is None:
            return None
        texts = [g.text for g in self.stream.generations if g is not None]
        return PART_SEPARATOR.join(texts) if texts else None

    def unsure(self) -> list[str]:
        """What of the model's answer did not fit the lines and was set aside or left out."""
        notes = [note for answer in self.triage.answers(self.stream) or [] for note in answer.unsure]
        return list(dict.fromkeys(notes))  # a small model repeats one finding; its note is said once

    def why(self, records: Sequence[RiskRecord]) -> str:
        """Why the verdict is what it is: who decided, and what the model's answer was worth."""
        answers = self.triage.answers(self.stream)
        if answers is None:
            return ("rules only: " + ("a rule fired" if records else "no rule fired")
                    + "; no model was asked")
        rules = "a rule fired" if self.triage.signals else "no rule fired"
        errors = [a.result.error for a in answers if a.result.error]
        if errors:
            return f"{rules}; model unsure: its answer could not be used ({errors[0]})"
        kept = sum(len(a.result.assessment.findings) for a in answers if a.result.assessment)
        set_aside = sum(a.set_aside for a in answers)
        if set_aside and not kept:
            return f"{rules}; model unsure: " + "; ".join(self.unsure())
        if not records:
            return (f"{rules}; the model's findings were below {LLM_ONLY_MIN_RISK}: no record" if kept
                    else f"{rules}; the model found nothing abnormal")
        return f"{rules}; the model judged it"


def assess(text: str, options: RunOptions, engine: Engine | None = None,
           examples: ExampleSource | None = None) -> Assessment:
    """Start assessing a snippet with the run's rules, prompt budget and answer length; with an
    `engine` the model's answer streams as `stream` is read, without one the rules decide alone.
    The prompts carry the reviewed examples most like the snippet (`examples`: the store's, else the
    shipped seed library) unless `options.retrieval` is off."""
    count_tokens = engine.count_tokens if engine is not None else approx_tokens
    triage = prepare(text, budget_tokens=options.prompt_token_budget, count_tokens=count_tokens,
                     rules=load_sources(options.rules))
    if engine is not None and options.retrieval.enabled:
        prompter = ExamplePrompter(examples or ExampleSource.seeded(), options.retrieval, count_tokens,
                                   options.prompt_token_budget)
        triage.parts = prompter.parts(triage.parts)
    stream = triage.stream(engine, max_new_tokens=options.max_new_tokens) if engine is not None else None
    return Assessment(triage, stream, engine)


def prepare(text: str, *, budget_tokens: int = declared("prompt_token_budget"), count_tokens: CountTokens = approx_tokens,
            rules: RuleSet | None = None) -> Triage:
    """A pasted snippet (at most `MAX_SNIPPET_LINES` lines) → one prepared window."""
    lines = text.splitlines()[:MAX_SNIPPET_LINES] or [""]
    source = "triage:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]
    log_lines = [LogLine(source=source, inode=0, offset=0, line_no=i, text=t) for i, t in enumerate(lines, 1)]
    return prepare_lines(log_lines, source=source, budget_tokens=budget_tokens, count_tokens=count_tokens, rules=rules,
                         shown_source=SNIPPET_SOURCE)


def prepare_lines(log_lines: Sequence[LogLine], *, source: str, path: str | None = None, budget_tokens: int = declared("prompt_token_budget"),
                  count_tokens: CountTokens = approx_tokens,
                  max_parts: int | None = None, rules: RuleSet | None = None, shown_source: str | None = None) -> Triage:
    """Lines of one source → one window (no time-gap cut) through the pipeline's own stages.
    `path` is a file name that hints the format (e.g. `.json`), as `parse_stream` takes it;
    `rules` default to logwarden's shipped pack (a command passes the run's, `ruleset_for`)."""
    decision, events = parse_stream(log_lines, path=path)
    miner = SourceMiner()
    window = next(windows(events, miner, source=source, inode=0, fmt=decision.name,
                          max_lines=MAX_SNIPPET_LINES, max_gap_s=float("inf")))
    signals = Detector(rules if rules is not None else shipped_ruleset()).scan(window.events)
    digest = build_digest(window, miner.templates(window.cluster_ids), signals)
    if shown_source is not None:  # records keep the hashed source; the model reads a name, not a hash
        digest = dataclasses.replace(digest, source=shown_source)
    parts = digest.parts(budget_tokens, count_tokens, max_parts=max_parts)
    return Triage(window, signals, digest, parts, decision.name)


def _result(generation: Generation | None, part: DigestPart) -> LLMResult:
    if generation is None:
        return LLMResult(assessment=None, error="the stream ended before the model finished",
                         digest=part.text, lines_of=part.lines_of)
    return result_of(generation, digest=part.text, lines_of=part.lines_of)
