"""The window digest: what the model reads instead of the raw lines.

Owns: turning a mined `Window` (+ the `Signal`s that fired in it) into compact, deterministic
prompt texts — time span, templates × counts with their ids (`T1` …), top entities, the rules
that fired with their titles, and lines with their numbers (`L17` …): text logs verbatim,
structured events (Windows/Sysmon, CloudTrail, auditd, k8s, M365 … JSON) by their salient fields
first, web requests without the parts every line repeats.

Rare lines are where attacks hide among benign traffic, so every one of them must be shown:
every line of a template seen at most `RARE_COUNT` times in the window, and every line whose
salient value (request path, command line, image …) has a shape seen at most `RARE_COUNT`
times. A window with more of them than one prompt's budget holds is split into several
`DigestPart`s that share the header and show different lines. Each part knows the evidence ids
it shows (the per-prompt grammar admits only those) and the lines each id stands for. A window
of one or a few lines gets a lean digest: the lines and the rules, no templates or top values
(one line: no span line either — a triage prompt is what the model prefills while a user waits).
Knows nothing of the model, the prompt wording or the store.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote_plus

from logwarden.app.baseline.deviation import REFERENCE
from logwarden.app.baseline.deviation import RULE_PREFIX as BASELINE_RULES
from logwarden.app.events import Event, Signal
from logwarden.app.mine import Window
from logwarden.engine.api import CountTokens, Request
from logwarden.prompts import system_prompt, user_prompt
from logwarden.schemas.assessment import CATEGORIES, answer_schema

RARE_COUNT = 3  # a template or value shape seen at most this often in its window is rare
LEAN_MAX_LINES = 3  # windows this small get the lean digest
LINE_CHARS = 320
VALUE_CHARS = 160
TEMPLATE_CHARS = 160
MAX_TEMPLATES = 25
MAX_SIGNALS = 12  # rules listed with their titles
MAX_SIGNAL_LINES = 12  # rule evidence lines a window must show
DEVIATION_CHARS = 260
DEVIATIONS_LABEL = "unlike this source's learned baseline:"
EXEMPLARS = 3  # deviations shown of one record's (a client's sweep of unknown pages is one record)
RISK_ORDER = ("info", "low", "medium", "high", "critical")
TOP_VALUES = 5
HEADER_SHARE = 0.55  # of a part's token budget, at most, for the header (templates, top values, rules)
PART_SLACK = 12  # tokens kept free for the "part i/n" line and joins
# Entity fields worth a "top values" line, in display order (docs/FIELDS.md names).
ENTITY_FIELDS = ("src_ip", "user", "path", "status", "user_agent", "EventID", "eventName", "Image", "ParentImage",
                 "CommandLine", "LogonType", "ServiceName", "QueryName", "exe")
# Fields whose value shapes mark a line as rare (an odd request, command line, binary or query).
VALUE_FIELDS = ("path", "CommandLine", "ParentCommandLine", "Image", "TargetFilename", "ScriptBlockText",
                "ServiceFileName", "ImagePath", "QueryName", "TargetObject", "user_agent", "exe")
# Structured events: these fields first, in this order, then the rest minus noise.
SALIENT_FIELDS = (
    "EventID", "eventName", "eventSource", "Operation", "OperationName", "operationName", "ActivityDisplayName",
    "verb", "objectRef.resource", "objectRef.namespace", "objectRef.name", "type", "Image", "CommandLine",
    "ParentImage", "ParentCommandLine", "TargetFilename", "ScriptBlockText", "ServiceName", "ServiceFileName",
    "ImagePath", "TargetUserName", "TargetDomainName", "SubjectUserName", "MemberName", "LogonType", "IpAddress",
    "WorkstationName", "Status", "FailureReason", "QueryName", "DestinationIp", "DestinationPort", "TargetObject",
    "Details", "user", "userIdentity_arn", "src_ip", "sourceIPAddress", "user_agent", "errorCode", "errorMessage",
    "requestParameters", "UserId", "user.username", "ClientIP", "ResultStatus", "Result", "InitiatingUserOrApp",
    "targetDisplayName", "SyslogMessage", "EventData", "exe", "comm", "acct", "addr", "res", "key",
)
_NOISE_KEY = re.compile(r"(?i)guid|time|date|stamp|version|tenant|correlation|record|^_|resourceid|^(level|task|"
                        r"opcode|keywords|sourcesystem|id|eventid|eventtype|processid|threadid|logonid|mg|type)$")
_LAST_FIELDS = ("Message", "message")  # Windows' rendered message repeats the fields: only what room is left
_JSON_FORMATS = frozenset({"windows", "cloudtrail", "json"})
_SHAPE_LETTERS = re.compile(r"[^\W\d_]+")
_SHAPE_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")


@dataclass(slots=True)
class TemplateCount:
    ref: str  # "T1": the template's evidence id in this window's digest (T1 = the most frequent)
    cluster_id: int
    template: str
    count: int
    first_line: int


@dataclass(slots=True)
class RuleHit:
    """One rule's signals in the window: its title once, the keys it fired for with their line counts."""

    rule_id: str
    level: str
    category: str
    techniques: list[str]
    title: str
    keys: list[tuple[str, int]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # the first and last evidence line seen

    def describe(self, max_keys: int = 5) -> str:
        count = sum(n for _, n in self.keys)
        span = f" ×{count} on L{self.lines[0]}–L{self.lines[-1]}" if self.lines else ""
        head = f"{_clip(self.title, 100)} [{self.level}, {self.category}, {','.join(self.techniques)}]{span}"
        keys = [k for k, _ in self.keys[:max_keys] if k] if max_keys else []
        more = f" +{len(self.keys) - max_keys} more" if len(self.keys) > max_keys else ""
        return head + (" — " + ", ".join(keys) + more if keys else "")


@dataclass(slots=True)
class DeviationNote:
    """A baseline deviation as the model reads it: its first line and what was expected there."""

    line: int
    text: str

    def describe(self) -> str:
        return f" L{self.line}: {_clip(self.text, DEVIATION_CHARS)}"


@dataclass(frozen=True, slots=True)
class HeaderShape:
    """How much of the header a prompt holds (the digest shrinks it step by step to fit)."""

    templates: int = MAX_TEMPLATES
    top_values: int = TOP_VALUES
    rules: int = MAX_SIGNALS
    top: bool = True


_SHRINK = (HeaderShape(), HeaderShape(16), HeaderShape(12, 3), HeaderShape(8, 3, 8), HeaderShape(6, 2, 6),
           HeaderShape(4, 1, 5), HeaderShape(3, 1, 4, top=False), HeaderShape(3, 1, 2, top=False))


@dataclass(slots=True)
class DigestPart:
    """One prompt's worth of a window's digest."""

    text: str
    refs: list[str]  # evidence ids the text shows: its templates (T…), then its lines (L…)
    lines_of: dict[str, list[int]]  # evidence id → the line numbers it stands for
    shown_lines: list[int]  # lines shown with an L id
    index: int = 1
    total: int = 1
    deviations: list[str] = field(default_factory=list)  # the line ids of the deviations it shows, as listed
    categories: list[str] | None = None  # the categories its lines can be (None: any)
    examples: str = ""  # reviewed examples like it, with their verdicts (app/examples.py), after the digest

    def schema(self) -> dict:
        """The answer's JSON schema: evidence only among `refs`, one verdict per deviation shown, a
        category its lines can be."""
        return answer_schema(self.refs, self.deviations, self.categories)

    @property
    def prompt(self) -> str:
        """The user turn: this part fenced as untrusted data (its examples, if any, after it)."""
        return user_prompt(self.text, self.examples)

    def request(self) -> Request:
        """What the engine is asked: the fixed system prefix, this part, and a grammar that admits
        only the evidence ids this part shows and a verdict on each deviation it shows (the
        pipeline's and triage's one request builder)."""
        return Request(system=system_prompt(), user=self.prompt, schema=self.schema())


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
    distinct: dict[str, int]  # entity field → number of distinct values
    rules: list[RuleHit]
    line_texts: dict[int, str]  # line number → how the line is shown
    template_of_line: dict[int, str]  # line number → its template's ref
    template_lines: dict[str, list[int]]  # template ref → its line numbers in the window
    required: list[int]  # lines some part must show: rule evidence, then rare lines
    favoured: list[int] = field(default_factory=list)  # shown where room is left: one line per other template
    rare: list[int] = field(default_factory=list)  # the rare lines (the coverage metric's denominator)
    lean: bool = False
    deviations: list[DeviationNote] = field(default_factory=list)  # from the baseline, with what is usual
    focus: bool = False  # a review of deviations: later parts name the rules' rows, part 1 shows them
    together: dict[int, list[int]] = field(default_factory=dict)  # a deviation's first line → its other lines
    categories: list[str] | None = None  # what the model may call its lines (`categories_for`; None: any)

    # ---- rendering ---------------------------------------------------------------------------

    def _intro(self) -> list[str]:
        source = f"source: {self.source} ({self.format})" + (f" host: {self.host}" if self.host else "")
        if self.line_count == 1:  # its L id says which line; a time span of one instant says nothing
            return [source]
        return [source, f"lines {self.line_start}-{self.line_end} ({self.line_count} lines)" + self._span()]

    def _rules_line(self, shape: HeaderShape) -> str:
        shown = self.rules[:shape.rules]
        more = f"; … {len(self.rules) - len(shown)} more rules" if len(shown) < len(self.rules) else ""
        keys = 0 if self.lean else 5  # a few lines are all shown: the keys would repeat them
        return "rules fired: " + ("; ".join(r.describe(keys) for r in shown) + more if shown else "none")

    def _notes_of(self, shown: Sequence[int]) -> list[str]:
        """What the learned baseline did not expect on these lines, each with what it did: a part
        carries the notes of its own lines, so every deviating line is read with its baseline."""
        lines = set(shown)
        notes = [d.describe() for d in self.deviations if d.line in lines]
        return [DEVIATIONS_LABEL, *notes] if notes else []

    def header(self, shape: HeaderShape = HeaderShape()) -> str:
        """Part 1's header: the window's templates, top values and rules."""
        templates = self._listed(shape)
        lines = self._intro()
        if not self.lean:
            frequent = [t for t in self.templates if t.count > RARE_COUNT]
            rare = len(self.templates) - len(frequent)
            lines.append(f"templates ({len(self.templates)}, id count x template"
                         + (f"; {rare} rare ones are shown as lines)" if rare else ")") + ":")
            lines += [self._template_line(t) for t in templates]
            if len(templates) < len(frequent):
                rest = sum(t.count for t in frequent[len(templates):])
                lines.append(f" … {len(frequent) - len(templates)} more templates, {rest} lines")
            if shape.top:
                lines += self._top_lines(shape.top_values)
        lines.append(self._rules_line(shape))
        return "\n".join(lines)

    def _slim_header(self, shape: HeaderShape, templates: Sequence[TemplateCount], index: int, total: int) -> str:
        """Later parts: the window, only the templates of their lines, the rules."""
        lines = [*self._intro(), f"part {index}/{total} of this window (part 1 lists all templates and top values)"]
        if templates:
            lines.append("templates of these lines:")
            lines += [self._template_line(t) for t in templates]
        if self.focus and self.rules:  # the deviations are judged here; part 1 shows the rules' rows
            lines.append(f"rules fired: {len(self.rules)} on other lines (part 1 lists them)")
        else:
            lines.append(self._rules_line(shape))
        return "\n".join(lines)

    def _listed(self, shape: HeaderShape) -> list[TemplateCount]:
        """The templates the header lists: the frequent ones (a rare template's lines are all shown)."""
        return [] if self.lean else [t for t in self.templates if t.count > RARE_COUNT][:shape.templates]

    @staticmethod
    def _template_line(t: TemplateCount) -> str:
        return f" {t.ref} {t.count}x {t.template}"

    def _span(self) -> str:
        if not self.first_ts:
            return ""
        return f" time {self.first_ts}" + (f" .. {self.last_ts}" if self.last_ts != self.first_ts else "")

    def _top_lines(self, per_field: int) -> list[str]:
        out = []
        for name, values in self.top.items():
            repeated = [(v, n) for v, n in values[:per_field] if n > 1]
            if repeated:
                out.append(f"top {name} ({self.distinct[name]} distinct): " + ", ".join(f"{v} x{n}" for v, n in repeated))
            elif self.distinct[name] > 1:
                out.append(f"{name}: {self.distinct[name]} distinct values")
            else:
                out.append(f"{name}: {values[0][0]}")
        return out

    def _line(self, no: int, listed: set[str]) -> str:
        ref = self.template_of_line.get(no)
        tag = f" ({ref})" if ref in listed else ""
        return f" L{no}{tag}: {self.line_texts[no]}"

    def _part(self, shape: HeaderShape, lines: Sequence[int], index: int, total: int) -> DigestPart:
        shown = sorted(lines)
        if index == 1:
            templates = self._listed(shape)
            header = self.header(shape)
            marker = [f"part 1/{total} of this window (later parts show other lines)"] if total > 1 else []
        else:
            used = {self.template_of_line.get(no) for no in shown}
            templates = [t for t in self._listed(shape) if t.ref in used]
            header, marker = self._slim_header(shape, templates, index, total), []
        listed = {t.ref for t in templates}
        text = "\n".join([header, *self._notes_of(shown), *marker, "lines:",
                          *(self._line(no, listed) for no in shown)])
        refs = [t.ref for t in templates] + [f"L{no}" for no in shown]
        lines_of = {t.ref: self.template_lines[t.ref] for t in templates} | {f"L{no}": [no] for no in shown}
        on = set(shown)
        deviations = list(dict.fromkeys(f"L{d.line}" for d in self.deviations if d.line in on))
        return DigestPart(text=text, refs=refs, lines_of=lines_of, shown_lines=shown, index=index, total=total,
                          deviations=deviations, categories=self.categories)

    def render(self) -> str:
        """The whole digest in one text, unbudgeted (the LLM policy's words test, metrics)."""
        return self._part(HeaderShape(), list(dict.fromkeys([*self.required, *self.favoured])), 1, 1).text

    # ---- fitting into prompts ----------------------------------------------------------------

    def parts(self, budget_tokens: int, count_tokens: CountTokens, *, max_parts: int | None = None) -> list[DigestPart]:
        """Prompts of at most ~`budget_tokens` each (a part holds one line at least); together they show
        every required line, unless `max_parts` stops them first."""
        shape = self._shape(int(budget_tokens * HEADER_SHARE), count_tokens)
        listed = {t.ref for t in self._listed(shape)}
        notes: dict[int, int] = {}  # line → the tokens of its deviation notes (they travel with the line)
        for d in self.deviations:
            notes[d.line] = notes.get(d.line, 0) + count_tokens(d.describe()) + 1
        line_cost = {no: count_tokens(self._line(no, listed)) + 1 + notes.get(no, 0)
                     for no in dict.fromkeys([*self.required, *self.favoured])}
        template_cost = {t.ref: count_tokens(self._template_line(t)) + 1 for t in self._listed(shape)}
        label = count_tokens(DEVIATIONS_LABEL) + 1 if notes else 0
        rooms = (budget_tokens - PART_SLACK - label - count_tokens(self.header(shape)),
                 budget_tokens - PART_SLACK - label - count_tokens(self._slim_header(shape, [], 2, 2)))
        packer = _Packer(line_cost, template_cost, self.template_of_line, listed, rooms, self.together)
        groups = packer.pack(self.required, self.favoured, max_parts)
        return [self._part(shape, group, i, len(groups)) for i, group in enumerate(groups, 1)]

    def _shape(self, budget: int, count_tokens: CountTokens) -> HeaderShape:
        """The fullest header that fits `budget` (rare templates' lines are shown anyway)."""
        for shape in _SHRINK:
            if count_tokens(self.header(shape)) <= budget:
                return shape
        return _SHRINK[-1]


@dataclass(slots=True)
class _Packer:
    """Lines into parts: required lines in order, as many per part as its room holds (one at least),
    favoured lines where room is left. A later part also pays for the templates its lines name."""

    line_cost: dict[int, int]
    template_cost: dict[str, int]
    template_of_line: dict[int, str]
    listed: set[str]
    rooms: tuple[int, int]  # part 1's room for lines, a later part's
    together: dict[int, list[int]] = field(default_factory=dict)  # a line → the lines that go in its part

    def pack(self, required: Sequence[int], favoured: Sequence[int], max_parts: int | None) -> list[list[int]]:
        todo = list(required)
        extra = [no for no in favoured if no not in set(required)]
        groups: list[list[int]] = []
        while True:
            groups.append(self._fill(todo, extra, first=not groups))
            if not todo or (max_parts is not None and len(groups) >= max_parts):
                return groups

    def _fill(self, todo: list[int], extra: list[int], *, first: bool) -> list[int]:
        group: list[int] = []
        used, templates = 0, set()
        room = self.rooms[0] if first else self.rooms[1]
        for queue in (todo, extra):
            while queue:
                atom = [queue[0], *(n for n in self.together.get(queue[0], ()) if n in queue)]
                refs = {self.template_of_line.get(n) for n in atom}
                cost = sum(self.line_cost[n] for n in atom)
                if not first:
                    cost += sum(self.template_cost[r] for r in refs if r in self.listed and r not in templates)
                if group and used + cost > room:
                    break
                used += cost
                templates |= refs
                group += atom
                queue[:] = [n for n in queue if n not in atom]
            if todo:
                break  # full of required lines: favoured ones wait for a part with room
        return group


# ---- building ------------------------------------------------------------------------------------

def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _templates(window: Window, templates: Mapping[int, str]) -> list[TemplateCount]:
    counts = Counter(window.cluster_ids)
    first_line: dict[int, int] = {}
    for event, cid in zip(window.events, window.cluster_ids):
        first_line.setdefault(cid, event.line_no)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], first_line[item[0]]))
    return [TemplateCount(f"T{i}", cid, _clip(templates.get(cid, "<evicted template>"), TEMPLATE_CHARS), n, first_line[cid])
            for i, (cid, n) in enumerate(ranked[:MAX_TEMPLATES], 1)]


def _entities(window: Window) -> tuple[dict[str, list[tuple[str, int]]], dict[str, int]]:
    counters: dict[str, Counter] = {name: Counter() for name in ENTITY_FIELDS}
    for event in window.events:
        for name in ENTITY_FIELDS:
            value = event.fields.get(name)
            if value not in (None, "", "-"):
                counters[name][_clip(str(value), 80)] += 1
    return ({name: c.most_common(TOP_VALUES) for name, c in counters.items() if c},
            {name: len(c) for name, c in counters.items() if c})


def value_shape(value: object) -> str:
    """What a value looks like, not what it says: decoded, letters → a, digits → 0, spaces collapsed.
    Routine values share a few shapes; injected quotes, brackets, dots and operators make new ones."""
    text = unquote_plus(str(value)) if isinstance(value, str) else json.dumps(value, default=str)
    return _SPACES.sub(" ", _SHAPE_DIGITS.sub("0", _SHAPE_LETTERS.sub("a", text)))[:120]


def rare_value_lines(window: Window) -> list[int]:
    """Lines with a salient value whose shape is seen at most `RARE_COUNT` times in the window."""
    shapes: dict[str, Counter] = {name: Counter() for name in VALUE_FIELDS}
    keyed: list[tuple[int, str, str]] = []
    for event in window.events:
        for name in VALUE_FIELDS:
            value = event.fields.get(name)
            if value not in (None, "", "-"):
                shape = value_shape(value)
                shapes[name][shape] += 1
                keyed.append((event.line_no, name, shape))
    return sorted({no for no, name, shape in keyed if shapes[name][shape] <= RARE_COUNT})


def _compact_value(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return _clip(_SPACES.sub(" ", text).strip(), VALUE_CHARS)


def salient_text(event: Event) -> str:
    """A structured event as `key=value` pairs, the fields an analyst reads first leading."""
    fields = event.fields
    keys = [k for k in SALIENT_FIELDS if k in fields]
    keys += [k for k in fields if k not in keys and k not in _LAST_FIELDS and not _NOISE_KEY.search(k)]
    keys += [k for k in _LAST_FIELDS if k in fields and k not in keys]
    pairs, seen = [], set()
    for key in keys:
        value = fields[key]
        if value in (None, "", "-", [], {}):
            continue
        text = _compact_value(value)
        if text in seen:  # src_ip/user repeat IpAddress/TargetUserName
            continue
        seen.add(text)
        pairs.append(f"{key}={text}")
    return _clip(" ".join(pairs) or event.raw, LINE_CHARS)


def _access_text(event: Event, common_agent: str | None) -> str:
    """A web request without what every line of the window repeats: time, ident, referrer, the usual user agent."""
    f = event.fields
    parts = [str(f[k]) for k in ("src_ip", "method", "path") if f.get(k) not in (None, "", "-")]
    parts += [f"{k}={f[k]}" for k in ("status", "bytes", "user", "vhost") if f.get(k) not in (None, "", "-")]
    agent = f.get("user_agent")
    if agent and agent != common_agent:
        parts.append(f'ua="{agent}"')
    return _clip(" ".join(parts), LINE_CHARS) if "path" in f else _clip(event.raw, LINE_CHARS)


def line_text(event: Event, window_format: str, common_agent: str | None = None) -> str:
    """How one line is shown to the model: verbatim text, salient fields, or a web request's essentials."""
    raw = event.raw.lstrip()
    if raw.startswith("{") and (event.format in _JSON_FORMATS or event.format == "access"):
        return salient_text(event) if event.format != "access" else _access_text(event, common_agent)
    if event.format == "access" and window_format != "http_request":
        return _access_text(event, common_agent)
    return _clip(event.raw.strip(), LINE_CHARS)


def rule_hits(signals: Sequence[Signal]) -> list[RuleHit]:
    """Signals grouped by rule, riskiest rule first: one title, then every key it fired for."""
    hits: dict[str, RuleHit] = {}
    for s in signals:
        hit = hits.setdefault(s.rule_id, RuleHit(s.rule_id, s.level, s.category, list(s.techniques), s.title))
        hit.keys.append((s.key, len(s.line_numbers)))
        if s.line_numbers:
            hit.lines = [min(s.line_numbers + hit.lines[:1]), max(s.line_numbers + hit.lines[-1:])]
    return sorted(hits.values(), key=lambda h: -RISK_ORDER.index(h.level) if h.level in RISK_ORDER else 0)


def deviation_notes(signals: Sequence[Signal]) -> list[DeviationNote]:
    """The baseline's signals, one note per deviation (its text without the analyst's ref); of one
    record's deviations (same category and key) the first `EXEMPLARS` and how many more."""
    notes: list[DeviationNote] = []
    for group in _deviation_groups(signals).values():
        notes += [DeviationNote(s.line_numbers[0], s.description.split(f" ({REFERENCE}", 1)[0])
                  for s in group[:EXEMPLARS]]
        if len(group) > EXEMPLARS:
            notes[-1].text += f" (+{len(group) - EXEMPLARS} more like it)"
    return notes


def _deviation_groups(signals: Sequence[Signal]) -> dict[tuple[str, str], list[Signal]]:
    """The baseline's signals by the record they make (category, key), in line order."""
    groups: dict[tuple[str, str], list[Signal]] = {}
    for s in sorted(signals, key=lambda s: s.line_numbers[:1]):
        if s.rule_id.startswith(BASELINE_RULES) and s.line_numbers:
            groups.setdefault((s.category, s.key), []).append(s)
    return groups


def _deviation_atoms(window: Window, signals: Sequence[Signal]) -> dict[int, list[int]]:
    """The lines of the baseline's deviations in this window, by deviation: its first line → its
    other lines (a raw request's line and body, shown in one part). Of one record's deviations, the
    first `EXEMPLARS`."""
    present = {e.line_no for e in window.events}
    atoms: dict[int, list[int]] = {}
    for group in _deviation_groups(signals).values():
        for s in group[:EXEMPLARS]:
            lines = [n for n in s.line_numbers[:4] if n in present]
            if lines:
                atoms.setdefault(lines[0], [])
                atoms[lines[0]] += [n for n in lines[1:] if n not in atoms[lines[0]]]
    return atoms


def _signal_lines(window: Window, signals: Sequence[Signal]) -> list[int]:
    """The first evidence line of each signal in this window (at most `MAX_SIGNAL_LINES`): the
    model sees what fired; the rest of a rule's lines are in its template."""
    present = {e.line_no for e in window.events}
    chosen: list[int] = []
    for signal in signals:
        first = next((n for n in signal.line_numbers if n in present), None)
        if first is not None and first not in chosen:
            chosen.append(first)
    return chosen[:MAX_SIGNAL_LINES]


# Formats whose lines are never an HTTP request: a web attack is not what they can show. A syslog
# window may still carry a web server's access lines (forwarded to syslog): a request line in it lets
# web_attack back in. An sshd line the 0.5B called `web_attack` (issue 45) is what this forbids; a
# line of no known format (`generic`: a kernel's, an application's) is a web attack only by its content.
NOT_WEB_FORMATS = frozenset(("syslog", "rfc5424", "windows", "cloudtrail", "auditd", "generic"))
HTTP_REQUEST = re.compile(r"\b(?:GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH|CONNECT|TRACE) /")


def categories_for(window: Window) -> list[str] | None:
    """The categories a model may give this window's lines (None: any): no `web_attack` where the
    format cannot hold a web request and no line looks like one."""
    if window.format not in NOT_WEB_FORMATS or any(HTTP_REQUEST.search(e.raw) for e in window.events):
        return None
    return [c for c in CATEGORIES if c != "web_attack"]


def build_digest(window: Window, template_text: Mapping[int, str], signals: Sequence[Signal], *,
                 focus: bool = False) -> Digest:
    """The window's digest. `template_text` maps the window's cluster ids to their text
    (`SourceMiner.templates`). `focus` (a review of what needs judgement): the lines shown are the
    baseline deviations' own; what the rules explained is only their summary row, rare lines are
    not shown for their rarity."""
    templates = _templates(window, template_text)
    lean = len(window.events) <= LEAN_MAX_LINES
    ref_of = {t.cluster_id: t.ref for t in templates}
    template_of_line = {e.line_no: ref_of[c] for e, c in zip(window.events, window.cluster_ids) if c in ref_of}
    template_lines: dict[str, list[int]] = {t.ref: [] for t in templates}
    for no, ref in template_of_line.items():
        template_lines[ref].append(no)
    counts = Counter(window.cluster_ids)
    by_cluster_rarity = sorted(zip(window.events, window.cluster_ids), key=lambda ec: (counts[ec[1]], ec[0].line_no))
    rare_templates = [e.line_no for e, c in by_cluster_rarity if counts[c] <= RARE_COUNT]
    rare = list(dict.fromkeys([*rare_templates, *rare_value_lines(window)]))
    first_of_others = [t.first_line for t in sorted(templates, key=lambda t: (t.count, t.first_line))
                       if t.count > RARE_COUNT]
    required = list(dict.fromkeys([*_signal_lines(window, signals), *rare]))
    if lean:
        required = list(dict.fromkeys([*required, *(e.line_no for e in window.events)]))
    together: dict[int, list[int]] = {}
    if focus:
        together = _deviation_atoms(window, signals)
        required = sorted({n for head, rest in together.items() for n in (head, *rest)})
        first_of_others, rare = [], []
    agents = Counter(e.fields.get("user_agent") for e in window.events if e.fields.get("user_agent"))
    # the header's top values show a repeated user agent; lines then leave it out
    common_agent = agents.most_common(1)[0][0] if agents and not lean and agents.most_common(1)[0][1] > 1 else None
    wanted = set(required) | set(first_of_others)
    top, distinct = _entities(window)
    return Digest(
        source=window.source, format=window.format, host=window.host(),
        line_start=window.line_start, line_end=window.line_end, line_count=len(window.events),
        first_ts=window.first_ts.isoformat() if window.first_ts else None,
        last_ts=window.last_ts.isoformat() if window.last_ts else None,
        templates=templates, top=top, distinct=distinct,
        rules=rule_hits([s for s in signals if not s.rule_id.startswith(BASELINE_RULES)]),
        deviations=deviation_notes(signals),
        line_texts={e.line_no: line_text(e, window.format, common_agent) for e in window.events if e.line_no in wanted},
        template_of_line=template_of_line, template_lines=template_lines,
        required=required, favoured=first_of_others, rare=rare, lean=lean, focus=focus,
        together=together, categories=categories_for(window),
    )
