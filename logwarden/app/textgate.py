"""The gate every model text passes before it may replace what the rules wrote: a record's text only improves.

A small model's free text is often worse than the rule's own description: a lone `,`, `none`, `50` or
`T1110`; the prompt's or the schema's own instructions copied back; a digest template with its
`<*>` placeholders; a phrase looped until the length bound; names the log does not show; ATT&CK ids
that do not exist (issue 38 quotes all of them). `check` applies one set of checks to any model text
(a finding's anomaly, an answer's recommendation, an incident's title, summary and next steps):

- grounding first (`grounding.ground`): a clause naming an entity the digest lacks is removed;
- sentences that echo the instructions (`ECHO_WORDS` words in a row of a prompt or of a schema's field
  descriptions, or a shape word left unfilled), advise destroying evidence ("remove the line from the
  log"), say there is nothing to see or do ("No action needed.": said of a flagged record, it is less
  than the rule said; allowed where it explains a benign verdict) or repeat an earlier sentence are dropped;
- what is left is rejected when it is empty or punctuation, a bare number/id/word (fewer than
  `MIN_WORDS` words), JSON written as prose, a copy of the digest (its placeholders, or a digest row verbatim: the model
  added nothing to what the rules already say), a loop of the same few words, or names an evidence
  id the prompt did not show or a technique id the shipped ATT&CK table lacks.

A rejected text comes back as `Checked(text="", reason=...)`: the caller keeps the rules' text and
notes the reason (one of `REASONS`) on what it stores. Knows nothing of records, incidents or the store.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from logwarden.app import attack
from logwarden.app.grounding import Grounded, ground
from logwarden.app.mine import MASKING_RULES
from logwarden.prompts import ANALYZE_VERSIONS, INCIDENT_PROMPT_VERSION, USER_LEAD, system_prompt

# Why a model text was rejected (the value stored in a record's or incident's `rejected`).
REASONS = {
    "empty": "empty or punctuation only",
    "bare": "a bare number, id or word, not a statement",
    "instructions": "a copy of the prompt's or the schema's instructions",
    "digest": "a copy of the digest it was shown (a template or a row), nothing added",
    "json": "JSON or schema keys written as the text",
    "repeat": "the same words looped, or the text of another field",
    "ungrounded": "names only facts or evidence ids the digest does not show",
    "technique": "names an ATT&CK technique id that does not exist",
    "tamper": "advises destroying or hiding evidence (deleting or rebuilding logs, stopping auditing)",
    "dismissal": "says nothing is wrong or nothing needs doing, of lines a rule or baseline flagged",
}
MIN_WORDS = 3  # "SQL injection" says less than the rule that fired; "none", "T1110", "50" say nothing
ECHO_WORDS = 4  # this many words in a row from the instructions: an echo, not an answer
LOOP_WORDS = 8  # a text this long whose distinct words are under LOOP_SHARE of its words is a loop
LOOP_SHARE = 0.4

_WORDS = re.compile(r"[a-z0-9&]+")
_SENTENCE = re.compile(r"(?<=[.;!?])\s+")
_STATEMENT_WORD = re.compile(r"[^\W\d_]{2,}")  # a word with letters: not a number, not an id like T1110 or L17
_ID = re.compile(r"(?<![\w.])([TL]\d{1,9}(?:\.\d{3})?)(?![\w])")
_JSON_TEXT = re.compile(r'^\s*[{\[]\s*"?[\w &]+"?\s*:')  # {"count": 5, "category": …}
# a copy that starts mid-row (", 26 clients' values of …") or ends with "…" where the digest cut it is still a copy,
# and so is one in braces or quotes (the 1.5B wrote a request's parameter, `{B1=Pasar+por+caja%2F}`, as an anomaly)
_CUT_MARKS = " .,;:…{}[]()\"'`"
_TECHNIQUE = re.compile(r"^T\d{4}(?:\.\d{3})?$")
_PLACEHOLDER = re.compile(r"<\*>|<(?:" + "|".join(dict.fromkeys(name for name, _ in MASKING_RULES)) + r")>")
# advice to destroy or hide evidence: the 0.5B's "remove the line from the log", "Remove the log digest
# from the source", "rebuild the log with the new baseline" (held-out GPU run, issue 38)
_TAMPER = re.compile(
    r"(?i)\b(?:delete|remove|clear|erase|wipe|truncate|purge|shred|rebuild|rewrite|edit|empty)\b[^.;]{0,40}?"
    r"\b(?:logs?|digest|journal|(?:bash |shell |command )?history|audit\w*|evidence|traces?)\b"
    r"|\b(?:disable|stop|turn off|kill|pause)\b[^.;]{0,20}?\b(?:logging|auditing|auditd|rsyslogd?|syslog|sysmon|"
    r"journald|event ?log\w*|cloudtrail|the audit\w*)\b")
# a sentence that says there is nothing to see or do: on a flagged record it says less than the rule (the
# 1.5B's "No action needed." 111 times, the 0.5B's "No recommendation needed.", "no unusual values")
_DISMISSAL = re.compile(
    r"(?i)^\W*(?:(?:no|nothing)\b[^.;]{0,40}?\b(?:needed|required|necessary|unusual|abnormal|suspicious|"
    r"anomal\w*|wrong|to do|to report|found|detected|available|concern\w*)\b"
    r"|(?:the |this |these )?(?:lines?|requests?|activity|events?|entr(?:y|ies)|logs?)\b[^.;]{0,30}?"
    r"\b(?:is|are|looks?|seems?|appears?)\s+(?:normal|ordinary|benign|legitimate|harmless|fine)\b)")
# words of the prompts' frames a small model echoes instead of writing about the lines
_FRAME = re.compile(r"\b(?:WHAT|HOST|ADDRESS|ACCOUNT|ACTION|STAGE|RECORD ID)\b"
                    r"|(?i:between the markers|kill-chain|untrusted|follow(?: the)? instructions)")


@dataclass(frozen=True, slots=True)
class Checked:
    """A model text after the gate: what may replace the rules' text ("" = nothing) and, when nothing,
    why (`REASONS`); `grounded` is the grounding check's result (entities named, those removed)."""

    text: str
    reason: str | None = None
    grounded: Grounded = field(default_factory=lambda: Grounded(text=""))

    @property
    def passed(self) -> bool:
        return self.reason is None


def check(text: str, digest: str, *, ids: Collection[str] = (), min_words: int = MIN_WORDS,
          dismissal_ok: bool = False) -> Checked:
    """`text` as it may be stored, or the reason it may not. `digest`: what the model was shown;
    `ids`: the evidence ids (T3, L17) that prompt showed (an id outside them is not the digest's);
    `min_words`: fewer words with letters is bare (a next step "Block 203.0.113.80." needs one);
    `dismissal_ok`: the text explains a benign verdict, where "nothing unusual" is the point."""
    stripped = text.strip()
    if not re.search(r"\w", stripped):
        return Checked("", "empty")
    if _JSON_TEXT.match(stripped):  # before grounding: its keys and values are not a sentence's facts
        return Checked("", "json")
    grounded = ground(stripped, digest)
    if not grounded.text:
        return Checked("", "ungrounded" if grounded.ungrounded else "empty", grounded)
    kept, reason = _sentences(grounded.text, dismissal_ok)
    if not kept:
        return Checked("", reason, grounded)
    reason = _whole_text_reason(kept, digest, ids, min_words)
    return Checked("" if reason else kept, reason, grounded)


def rejected_note(rejected: dict[str, str]) -> str:
    """A stored `rejected` map as one line for a reader: which fields kept the rules' text, and why."""
    return "The model's text was rejected, the rules' kept — " + "; ".join(
        f"{name}: {REASONS.get(why, why)}" for name, why in rejected.items())


def rejected_techniques(ids: Iterable[str]) -> list[str]:
    """The technique ids the shipped ATT&CK table does not know (a model's T2000)."""
    return [t for t in dict.fromkeys(ids) if attack.lookup(t) is None]


def _sentences(text: str, dismissal_ok: bool = False) -> tuple[str, str | None]:
    """The text without its sentences that echo the instructions, advise destroying evidence, say
    there is nothing to see (unless `dismissal_ok`) or repeat an earlier one; when none is left, the
    reason (the first sentence's that was dropped)."""
    kept: list[str] = []
    dropped: list[str] = []
    for sentence in _SENTENCE.split(text):
        why = _dropped_because(sentence, dismissal_ok)
        if why:
            dropped.append(why)
        elif sentence and sentence not in kept:
            kept.append(sentence)
    return " ".join(kept), (None if kept else dropped[0] if dropped else "repeat")


def _dropped_because(sentence: str, dismissal_ok: bool) -> str | None:
    if echoes_instructions(sentence):
        return "instructions"
    if _TAMPER.search(sentence):
        return "tamper"
    if not dismissal_ok and _DISMISSAL.search(sentence):
        return "dismissal"
    return None


def echoes_instructions(sentence: str) -> bool:
    """A shape word left unfilled, a phrase of a prompt's frame, or ECHO_WORDS words in a row of the
    prompts or of the schemas' descriptions: the model repeated what it was told."""
    return bool(_FRAME.search(sentence)) or bool(_ngrams(sentence) & _instruction_ngrams())


def _whole_text_reason(text: str, digest: str, ids: Collection[str], min_words: int) -> str | None:
    words = _WORDS.findall(text.lower())
    if len(_STATEMENT_WORD.findall(text)) < min_words:
        return "bare"
    if _PLACEHOLDER.search(text) or _squashed(text).strip(_CUT_MARKS) in _squashed(digest):
        return "digest"
    if len(words) >= LOOP_WORDS and len(set(words)) < LOOP_SHARE * len(words):
        return "repeat"
    for ref in _ID.findall(text):
        if ref in ids:
            continue
        if not _TECHNIQUE.match(ref):
            return "ungrounded"
        if attack.lookup(ref) is None:
            return "technique"
    return None


def _squashed(text: str) -> str:
    """Lower case, one space between words: a copy stays a copy whatever its spacing."""
    return " ".join(text.lower().split())


def _ngrams(text: str) -> set[tuple[str, ...]]:
    words = _WORDS.findall(text.lower())
    return {tuple(words[i:i + ECHO_WORDS]) for i in range(len(words) - ECHO_WORDS + 1)}


@lru_cache(maxsize=1)
def _instruction_ngrams() -> frozenset[tuple[str, ...]]:
    """Every ECHO_WORDS-gram of what the model is told: the analysis prompts (this one and the one
    before it: an adapter taught on it copies its sentences), the incident prompt, the user prompt's
    lead, and the descriptions in the answer schemas (a model copies those back too)."""
    texts = [system_prompt(v) for v in ANALYZE_VERSIONS] + [system_prompt(INCIDENT_PROMPT_VERSION), USER_LEAD,
                                                            *_schema_texts()]
    return frozenset(gram for text in texts for line in text.splitlines() for gram in _ngrams(line))


def _schema_texts() -> list[str]:
    from logwarden.schemas import LLMAssessment
    from logwarden.schemas.incident import IncidentStory

    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            found.extend(v for k, v in node.items() if k == "description" and isinstance(v, str))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(LLMAssessment.model_json_schema())
    walk(IncidentStory.model_json_schema())
    return found
