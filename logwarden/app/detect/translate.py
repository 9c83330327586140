"""pySigma's parsed rules → logwarden's rule IR: plain, picklable tuples that `compile.py` turns
into matchers.

pySigma parses the YAML, applies every modifier (contains/startswith/endswith/all, re with its
flags, cidr, base64/base64offset, utf16le/utf16be/wide, windash, exists, gt/gte/lt/lte, fieldref,
cased, expand) and resolves the condition (`and`/`or`/`not`, `1 of`/`all of`, `them`) into a tree
whose leaves are (field, typed value). This module walks that tree once and writes it down as
data, so that a compiled pack can be cached and reloaded without pySigma. Anything the engine
cannot evaluate raises `Unsupported` with the reason; the caller reports the rule as not loaded.

Condition IR:   ("and", [c, ...]) | ("or", [c, ...]) | ("not", c) | ("field", name, value) |
                ("keyword", value)
Value IR:       ("str", kind, text, cased)   kind: eq | prefix | suffix | contains
                ("str", "glob", regex, cased, longest literal part)
                ("re", pattern, flags) | ("num", n) | ("bool", b) | ("null",) | ("exists", b) |
                ("cmp", op, n) | ("cidr", network) | ("fieldref", other, mode) | ("any", [value, ...])

Knows nothing about events, packs on disk or signals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sigma.conditions import (
    ConditionAND,
    ConditionFieldEqualsValueExpression,
    ConditionNOT,
    ConditionOR,
    ConditionValueExpression,
)
from sigma.correlations import (
    CorrelationConditionAND,
    CorrelationConditionNOT,
    CorrelationConditionOR,
    SigmaCorrelationCondition,
    SigmaCorrelationRule,
    SigmaExtendedCorrelationCondition,
    SigmaRuleReference,
)
from sigma.exceptions import SigmaError
from sigma.modifiers import SigmaWideModifier, modifier_mapping
from sigma.rule import SigmaRule
from sigma.types import (
    Placeholder,
    SigmaBool,
    SigmaCasedString,
    SigmaCIDRExpression,
    SigmaCompareExpression,
    SigmaExists,
    SigmaExpansion,
    SigmaFieldReference,
    SigmaNull,
    SigmaNumber,
    SigmaRegularExpression,
    SigmaRegularExpressionFlag,
    SigmaString,
    SigmaTimestampPart,
    SpecialChars,
)

IR_VERSION = 3  # bump when the IR changes: cached packs are keyed by it
# The Sigma specification names UTF-16LE `utf16le` as well as `wide`; pySigma 1.x knows only `wide`.
modifier_mapping.setdefault("utf16le", SigmaWideModifier)
_FLAGS = {SigmaRegularExpressionFlag.IGNORECASE: "i", SigmaRegularExpressionFlag.MULTILINE: "m",
          SigmaRegularExpressionFlag.DOTALL: "s"}
_COMPARE = {"LT": "<", "LTE": "<=", "GT": ">", "GTE": ">=", "NEQ": "!="}
_CORRELATION_OPS = {"LT": "<", "LTE": "<=", "GT": ">", "GTE": ">=", "EQ": "==", "NEQ": "!="}
SUPPORTED_CORRELATIONS = ("event_count", "value_count", "value_sum", "value_avg", "temporal", "temporal_ordered")

Placeholders = Mapping[str, Sequence[str]]


class Unsupported(Exception):
    """A rule uses something the engine does not evaluate; the message says what."""


@dataclass(slots=True)
class RuleIR:
    """One rule as data: metadata, logsource, and either a detection condition or a correlation."""

    key: str  # unique in its pack: the uuid, else the name
    rule_id: str  # what signals show: the name (logwarden's `lw-…`), else the uuid
    title: str
    source: str  # file (and zip member) it came from
    name: str | None = None
    uuid: str | None = None
    level: str | None = None  # Sigma level: informational|low|medium|high|critical
    status: str | None = None
    description: str = ""
    author: str = ""
    tags: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    falsepositives: list[str] = field(default_factory=list)
    logsource: tuple[str | None, str | None, str | None] = (None, None, None)  # product, category, service
    condition: tuple | None = None
    correlation: dict | None = None
    output: bool = True  # False: only feeds a correlation (Sigma `generate: false`)
    custom: dict = field(default_factory=dict)  # the rule's `logwarden:` attributes
    error: str | None = None  # set: the rule is not loaded, and this is why

    @property
    def is_correlation(self) -> bool:
        return self.correlation is not None


def translate_collection(rules: Sequence[Any], source_of: Callable[[Any], str],
                         placeholders: Placeholders) -> list[RuleIR]:
    """Every rule of a pySigma collection, translated or carrying its error."""
    return [translate_rule(rule, source_of(rule), placeholders) for rule in rules]


def translate_rule(rule: Any, source: str, placeholders: Placeholders) -> RuleIR:
    ir = _metadata(rule, source)
    try:
        if rule.errors:
            raise Unsupported("; ".join(str(e) for e in rule.errors))
        if isinstance(rule, SigmaCorrelationRule):
            ir.correlation = _correlation(rule)
        elif isinstance(rule, SigmaRule):
            ir.condition = _detection(rule, placeholders)
        else:
            raise Unsupported(f"{type(rule).__name__} is not a detection or correlation rule")
    except (Unsupported, SigmaError) as exc:
        ir.error = str(exc) or type(exc).__name__
    return ir


def _metadata(rule: Any, source: str) -> RuleIR:
    uuid = str(rule.id) if rule.id else None
    name = rule.name or None
    ls = getattr(rule, "logsource", None)
    logsource = tuple((getattr(ls, part) or None) and str(getattr(ls, part)).lower()
                      for part in ("product", "category", "service")) if ls else (None, None, None)
    custom = rule.custom_attributes.get("logwarden") if rule.custom_attributes else None
    title = str(rule.title) if rule.title else None
    fallback = f"{source.rsplit('/', 1)[-1]}#untitled"  # a file that is no rule at all still has a name
    return RuleIR(key=uuid or name or f"{source}#{title}", rule_id=name or uuid or title or fallback,
                  title=title or name or uuid or "untitled", source=source, name=name, uuid=uuid,
                  level=str(rule.level) if rule.level else None, status=str(rule.status) if rule.status else None,
                  description=(rule.description or "").strip(), author=rule.author or "",
                  tags=[str(t) for t in rule.tags], references=list(rule.references or []),
                  falsepositives=[str(f) for f in rule.falsepositives or []], logsource=logsource,
                  output=bool(rule._output), custom=dict(custom) if isinstance(custom, dict) else {})


# --- detections -------------------------------------------------------------------------------


def _detection(rule: SigmaRule, placeholders: Placeholders) -> tuple:
    conditions = [_node(c.parsed, placeholders) for c in rule.detection.parsed_condition]
    conditions = [c for c in conditions if c is not None]
    if not conditions:
        raise Unsupported("the condition selects nothing")
    return conditions[0] if len(conditions) == 1 else ("or", conditions)


def _node(node: Any, placeholders: Placeholders) -> tuple | None:
    if isinstance(node, (ConditionAND, ConditionOR)):
        op = "and" if isinstance(node, ConditionAND) else "or"
        args = [a for a in (_node(arg, placeholders) for arg in node.args) if a is not None]
        return (op, args) if len(args) != 1 else args[0]
    if isinstance(node, ConditionNOT):
        inner = _node(node.args[0], placeholders)
        return None if inner is None else ("not", inner)
    if isinstance(node, ConditionFieldEqualsValueExpression):
        return ("field", node.field, _value(node.value, placeholders))
    if isinstance(node, ConditionValueExpression):
        return ("keyword", _keyword(node.value, placeholders))
    if node is None:
        return None
    raise Unsupported(f"condition element {type(node).__name__}")


def _value(value: Any, placeholders: Placeholders) -> tuple:
    if isinstance(value, SigmaExpansion):
        return ("any", [_value(v, placeholders) for v in value.values])
    if isinstance(value, SigmaString):  # SigmaCasedString too
        return _string(value, placeholders)
    if isinstance(value, SigmaRegularExpression):
        return _regex(value, placeholders)
    if isinstance(value, SigmaTimestampPart):
        raise Unsupported("timestamp-part modifiers (minute, hour, day, week, month, year) are not supported")
    if isinstance(value, SigmaBool):
        return ("bool", bool(value.boolean))
    if isinstance(value, SigmaNumber):
        return ("num", value.number)
    if isinstance(value, SigmaNull):
        return ("null",)
    if isinstance(value, SigmaExists):
        return ("exists", bool(value.exists))
    if isinstance(value, SigmaCompareExpression):
        return ("cmp", _COMPARE[value.op.name], value.number.number)
    if isinstance(value, SigmaCIDRExpression):
        return ("cidr", str(value.network))
    if isinstance(value, SigmaFieldReference):
        mode = "prefix" if value.starts_with else "suffix" if value.ends_with else "eq"
        return ("fieldref", value.field, mode)
    raise Unsupported(f"value type {type(value).__name__}")


def _string(value: SigmaString, placeholders: Placeholders) -> tuple:
    if value.contains_placeholder():
        expanded = _expand(value, placeholders)
        return expanded[0] if len(expanded) == 1 else ("any", expanded)
    cased = isinstance(value, SigmaCasedString)
    parts = value.s
    plain = [p for p in parts if isinstance(p, str)]
    shape = tuple("s" if isinstance(p, str) else "*" if p is SpecialChars.WILDCARD_MULTI else "?" for p in parts)
    kind = {(): "eq", ("s",): "eq", ("s", "*"): "prefix", ("*", "s"): "suffix", ("*", "s", "*"): "contains"}.get(shape)
    if kind is not None:
        return ("str", kind, "".join(plain), cased)
    longest = max(plain, key=len, default="")  # the prefilter screens on it
    return ("str", "glob", glob_regex(parts), cased, longest)


def glob_regex(parts: Sequence[Any]) -> str:
    """Sigma wildcards → a regex for a full match (`*` any run, `?` one character)."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(re.escape(part))
        elif part is SpecialChars.WILDCARD_MULTI:
            out.append(".*")
        else:
            out.append(".")
    return "".join(out)


def _expand(value: SigmaString, placeholders: Placeholders) -> list[tuple]:
    def values_of(placeholder: Placeholder):
        if placeholder.name not in placeholders:
            raise Unsupported(f"placeholder %{placeholder.name}% is not defined; add it to the placeholder file "
                              "(LOGWARDEN_SIGMA_PLACEHOLDERS) to load this rule")
        return [SigmaString(str(v)) for v in placeholders[placeholder.name]]

    expanded = value.replace_placeholders(values_of)
    if not expanded:
        raise Unsupported("a placeholder expands to no values")
    cased = isinstance(value, SigmaCasedString)
    return [_string(SigmaCasedString.from_sigma_string(s) if cased else s, placeholders) for s in expanded]


def _regex(value: SigmaRegularExpression, placeholders: Placeholders) -> tuple:
    flags = "".join(sorted(_FLAGS[f] for f in value.flags))
    if value.regexp.contains_placeholder():
        options = [("re", str(r.regexp), flags) for r in value.replace_placeholders(
            lambda p: _placeholder_strings(p, placeholders))]
        return options[0] if len(options) == 1 else ("any", options)
    return ("re", str(value.regexp), flags)


def _placeholder_strings(placeholder: Placeholder, placeholders: Placeholders):
    if placeholder.name not in placeholders:
        raise Unsupported(f"placeholder %{placeholder.name}% is not defined (LOGWARDEN_SIGMA_PLACEHOLDERS)")
    return [str(v) for v in placeholders[placeholder.name]]


def _keyword(value: Any, placeholders: Placeholders) -> tuple:
    """A field-less value searches the whole event: a string matches anywhere in it."""
    if isinstance(value, SigmaNumber):
        return ("str", "contains", str(value.number), False)
    if isinstance(value, SigmaString) and not value.contains_placeholder():
        parts = list(value.s)
        if not parts or parts[0] is not SpecialChars.WILDCARD_MULTI:
            parts.insert(0, SpecialChars.WILDCARD_MULTI)
        if parts[-1] is not SpecialChars.WILDCARD_MULTI:
            parts.append(SpecialChars.WILDCARD_MULTI)
        wrapped = SigmaCasedString("") if isinstance(value, SigmaCasedString) else SigmaString("")
        wrapped.s = parts
        return _string(wrapped, placeholders)
    return _value(value, placeholders)


# --- correlations -----------------------------------------------------------------------------


def _correlation(rule: SigmaCorrelationRule) -> dict:
    kind = rule.type.name.lower()
    if kind not in SUPPORTED_CORRELATIONS:
        raise Unsupported(f"correlation type {kind} is not supported (supported: {', '.join(SUPPORTED_CORRELATIONS)})")
    references = {r.reference: rule_key(r.rule) for r in rule.referenced_rules}
    if not references:
        raise Unsupported("the correlation references no rules")
    aliases = {a.alias: {ref.reference: fieldname for ref, fieldname in a.mapping.items()} for a in rule.aliases}
    out = {"type": kind, "rules": list(references.values()), "references": references,
           "group_by": list(rule.group_by or []), "timespan_s": rule.timespan.seconds, "aliases": aliases,
           "generate": bool(rule.generate)}
    condition = rule.condition
    if isinstance(condition, SigmaExtendedCorrelationCondition):
        if kind == "temporal_ordered":
            raise Unsupported("an extended (boolean) condition on temporal_ordered is not supported")
        out["expression"] = _correlation_expression(condition.parsed, references)
    elif isinstance(condition, SigmaCorrelationCondition):
        if isinstance(condition.fieldref, list):
            raise Unsupported("a correlation condition over several fields is not supported")
        out.update(op=_CORRELATION_OPS[condition.op.name], count=condition.count, field=condition.fieldref)
    return out


def rule_key(rule: Any) -> str:
    """A rule's key in its pack: the uuid, else the name."""
    return str(rule.id) if rule.id else str(rule.name)


def _correlation_expression(node: Any, references: dict[str, str]) -> tuple:
    if isinstance(node, SigmaRuleReference):
        return ("rule", references.get(node.reference, node.reference))
    if isinstance(node, CorrelationConditionNOT):
        return ("not", _correlation_expression(node.args[0], references))
    if isinstance(node, (CorrelationConditionAND, CorrelationConditionOR)):
        op = "and" if isinstance(node, CorrelationConditionAND) else "or"
        return (op, [_correlation_expression(a, references) for a in node.args])
    raise Unsupported(f"correlation condition element {type(node).__name__}")
