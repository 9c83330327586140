"""The window digest: what the model reads instead of the raw lines.

Owns: turning a mined `Window` (+ the `Signal`s that fired in it) into a compact, deterministic
text — time span, templates × counts, top entities with counts, the rules that fired, and a few
verbatim exemplar lines with their line numbers — trimmed to a token budget. Knows nothing of
the model, the prompt wording or the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from logwarden.app.mine import SourceMiner, Window
from logwarden.app.models import Signal

EXEMPLAR_CHARS = 240
TEMPLATE_CHARS = 200
MAX_TEMPLATES = 25
MAX_EXEMPLARS = 8
TOP_VALUES = 5
# Entity fields worth a "top values" line, in display order (docs/FIELDS.md names).
ENTITY_FIELDS = ("src_ip", "user", "path", "status", "user_agent", "EventID", "eventName", "Image",
                 "CommandLine", "exe")


@dataclass(slots=True)
class TemplateCount:
    cluster_id: int
    template: str
    count: int
    first_line: int


@dataclass(slots=True)
class Digest:
    source: str
    format: str
    host: str | None
    line_start: int
    line_end: int
    line_count: int
    first_ts: str | None
    last_ts: str | None
    templates: list[TemplateCount]
    top: dict[str, list[tuple[str, int]]]
    signals: list[str]
    exemplars: list[tuple[int, str]] = field(default_factory=list)

    def render(self, *, max_templates: int | None = None, max_exemplars: int | None = None) -> str:
        templates = self.templates[:max_templates] if max_templates is not None else self.templates
        exemplars = self.exemplars[:max_exemplars] if max_exemplars is not None else self.exemplars
        lines = [
            f"source: {self.source} ({self.format})" + (f" host: {self.host}" if self.host else ""),
            f"lines {self.line_start}-{self.line_end} ({self.line_count} lines)"
            + (f" time {self.first_ts} .. {self.last_ts}" if self.first_ts else ""),
            f"templates ({len(self.templates)}, count x template):",
            *(f" {t.count}x {t.template}" for t in templates),
        ]
        if len(templates) < len(self.templates):
            rest = sum(t.count for t in self.templates[len(templates):])
            lines.append(f" … {len(self.templates) - len(templates)} more templates, {rest} lines")
        lines += [f"top {name}: " + ", ".join(f"{v} x{n}" for v, n in values) for name, values in self.top.items()]
        lines.append("rules fired: " + ("; ".join(self.signals) if self.signals else "none"))
        lines.append("exemplar lines:")
        lines += [f" L{no}: {text}" for no, text in exemplars]
        return "\n".join(lines)

    def fit(self, budget_tokens: int, count_tokens: Callable[[str], int]) -> str:
        """Render within a token budget, dropping exemplars first, then the rarest templates."""
        max_t, max_e = len(self.templates), len(self.exemplars)
        text = self.render()
        while count_tokens(text) > budget_tokens and (max_t > 3 or max_e > 1):
            if max_e > 1:
                max_e -= 1
            else:
                max_t -= 1
            text = self.render(max_templates=max_t, max_exemplars=max_e)
        return text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _templates(window: Window, miner: SourceMiner) -> list[TemplateCount]:
    counts = Counter(window.cluster_ids)
    first_line: dict[int, int] = {}
    for event, cid in zip(window.events, window.cluster_ids):
        first_line.setdefault(cid, event.line_no)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], first_line[item[0]]))
    return [TemplateCount(cid, _clip(miner.template(cid), TEMPLATE_CHARS), n, first_line[cid])
            for cid, n in ranked[:MAX_TEMPLATES]]


def _top_entities(window: Window) -> dict[str, list[tuple[str, int]]]:
    counters: dict[str, Counter] = {name: Counter() for name in ENTITY_FIELDS}
    for event in window.events:
        for name in ENTITY_FIELDS:
            value = event.fields.get(name)
            if value not in (None, "", "-"):
                counters[name][_clip(str(value), 120)] += 1
    return {name: c.most_common(TOP_VALUES) for name, c in counters.items() if c}


def _exemplars(window: Window, signals: Sequence[Signal], templates: Sequence[TemplateCount]) -> list[tuple[int, str]]:
    """Evidence first (the first and last line of each signal), then each rare template's first line."""
    by_line = {e.line_no: e.raw for e in window.events}
    chosen: list[int] = []
    for signal in signals:
        for no in (signal.line_numbers[:1] + signal.line_numbers[-1:]):
            if no in by_line and no not in chosen:
                chosen.append(no)
    for t in sorted(templates, key=lambda t: (t.count, t.first_line)):
        if t.first_line not in chosen:
            chosen.append(t.first_line)
    return [(no, _clip(by_line[no], EXEMPLAR_CHARS)) for no in chosen[:MAX_EXEMPLARS]]


def describe_signal(signal: Signal) -> str:
    techniques = ",".join(signal.techniques)
    key = f" key={signal.key}" if signal.key else ""
    return f"{signal.rule_id} [{signal.level}, {signal.category}, {techniques}]{key}: {_clip(signal.title, 120)}"


def build_digest(window: Window, miner: SourceMiner, signals: Sequence[Signal]) -> Digest:
    templates = _templates(window, miner)
    return Digest(
        source=window.source,
        format=window.format,
        host=window.host(),
        line_start=window.line_start,
        line_end=window.line_end,
        line_count=len(window.events),
        first_ts=window.first_ts.isoformat() if window.first_ts else None,
        last_ts=window.last_ts.isoformat() if window.last_ts else None,
        templates=templates,
        top=_top_entities(window),
        signals=[describe_signal(s) for s in signals],
        exemplars=_exemplars(window, signals, templates),
    )
