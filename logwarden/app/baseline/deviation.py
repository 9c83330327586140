"""A deviation from the learned baseline, and the signal it becomes.

Owns: `Deviation` (what differs, what was expected, how much support the baseline has, the
lines, and a stable `Ref` an analyst can accept or mute), the rule ids (`lw-baseline-*`), and
the level rule: `low` alone, `medium` when independent deviations of one request or event agree
(families) or a deviating value carries attack syntax. Knows nothing of how profiles are learned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from logwarden.app.events import Signal

RULES = {
    "web-endpoint": "Request to an endpoint this site has not served before",
    "web-param": "Request parameters unlike this endpoint's usual ones",
    "web-value": "Request parameter value unlike its usual values",
    "template": "Log message of a kind this source has never written",
    "entity": "First-seen activity for this host",
}
RULE_PREFIX = "lw-baseline-"  # every baseline signal's rule id starts so (the digest and postprocess tell them apart)
REFERENCE = "ref: "  # how a deviation's ref is written in its signal's description (the UI and CLI read it back)


@dataclass(slots=True)
class Deviation:
    kind: str  # a RULES key
    family: str  # endpoint | structure | value | template | entity: deviations of different families agree
    category: str
    techniques: list[str]
    key: str  # what the record groups on (client + endpoint, template, entity)
    ref: str  # a written `Ref`: accepted or muted as a whole
    text: str  # what was seen and what was expected, with the baseline's support
    lines: list[int]
    attack_syntax: bool = False
    level: str = "low"
    extra: dict = field(default_factory=dict)

    @property
    def rule_id(self) -> str:
        return f"{RULE_PREFIX}{self.kind}"


@dataclass(frozen=True, slots=True)
class Ref:
    """What a deviation names, stable across runs: `kind|scope|…` — `web|SITE|ENDPOINT|FEATURE|NAME`,
    `template|SCOPE|TEMPLATE`, `entity|HOST|KIND|COMBO`. Written with each part quoted, so a ref
    has no spaces, parentheses or bars of its own; a written ref that is a prefix of another mutes it."""

    kind: str
    scope: str
    parts: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "|".join(quote(str(part), safe="/:.-_~@*") for part in (self.kind, self.scope, *self.parts))

    @classmethod
    def parse(cls, text: str) -> Ref:
        pieces = [unquote(part) for part in text.split("|")]
        return cls(pieces[0], pieces[1] if len(pieces) > 1 else "", tuple(pieces[2:]))


def settle_levels(deviations: Sequence[Deviation]) -> None:
    """One request's (or event's) deviations: medium when two families agree or a value carries
    attack syntax, else low — the same level on each, so their record has one floor."""
    families = {d.family for d in deviations}
    level = "medium" if len(families) >= 2 or any(d.attack_syntax for d in deviations) else "low"
    for deviation in deviations:
        deviation.level = level


def to_signal(deviation: Deviation, source: str) -> Signal:
    return Signal(rule_id=deviation.rule_id, title=RULES[deviation.kind], level=deviation.level,
                  category=deviation.category, techniques=list(deviation.techniques), source=source,
                  line_numbers=list(deviation.lines), key=deviation.key,
                  description=f"{deviation.text} ({REFERENCE}{deviation.ref})",
                  falsepositives=["A new page, parameter, client or job the baseline has not seen yet: accept it "
                                  "(`logwarden baseline accept REF`) and it joins the baseline."])


def refs_in(text: str) -> list[str]:
    """The deviation refs a record's text carries (what the analyst can accept or mute)."""
    refs, start = [], 0
    while (at := text.find(REFERENCE, start)) >= 0:
        end = text.find(")", at)
        refs.append(text[at + len(REFERENCE): end if end > 0 else None])
        start = at + 1
    return refs
